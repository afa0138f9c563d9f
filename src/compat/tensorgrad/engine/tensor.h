// Forwarding header: <tensorgrad/engine/tensor.h> moved to <tensorgrad/core/raw_tensor.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/raw_tensor.h"
