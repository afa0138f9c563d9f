// Forwarding header: <tensorgrad/engine/philox.h> moved to <tensorgrad/kernels/philox.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/kernels/philox.h"
