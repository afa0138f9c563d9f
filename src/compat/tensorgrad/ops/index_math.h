// Forwarding header: <tensorgrad/ops/index_math.h> moved to <tensorgrad/kernels/index.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/kernels/index.h"
