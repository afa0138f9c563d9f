// Forwarding header: <tensorgrad/engine/pool_window.h> moved to <tensorgrad/kernels/pool.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/kernels/pool.h"
