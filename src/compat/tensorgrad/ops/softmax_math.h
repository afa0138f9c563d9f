// Forwarding header: <tensorgrad/ops/softmax_math.h> moved to <tensorgrad/kernels/softmax_loss.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/kernels/softmax_loss.h"
