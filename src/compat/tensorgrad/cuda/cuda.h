// Forwarding header: <tensorgrad/cuda/cuda.h> moved to <tensorgrad/core/accelerator.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/accelerator.h"
