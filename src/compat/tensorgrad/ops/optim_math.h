// Forwarding header: <tensorgrad/ops/optim_math.h> moved to <tensorgrad/kernels/optim.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/kernels/optim.h"
