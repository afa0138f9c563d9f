// Forwarding header: <tensorgrad/ops/functors.h> moved to <tensorgrad/kernels/elementwise.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/kernels/elementwise.h"
