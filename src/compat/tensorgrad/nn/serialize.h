// Forwarding header: <tensorgrad/nn/serialize.h> became <tensorgrad/io/checkpoint.h> and
// <tensorgrad/io/safetensors.h> (docs/architecture.md, "Floors"). Kept for one release so that
// existing includes compile; include the new paths.
#pragma once
#include "tensorgrad/io/checkpoint.h"
#include "tensorgrad/io/safetensors.h"
