// Forwarding header: <tensorgrad/nn/serialize.h> moved to <tensorgrad/io/serialize.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/io/serialize.h"
