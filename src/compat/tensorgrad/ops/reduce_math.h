// Forwarding header: <tensorgrad/ops/reduce_math.h> moved to <tensorgrad/kernels/reduce.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/kernels/reduce.h"
