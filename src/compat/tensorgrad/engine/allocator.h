// Forwarding header: <tensorgrad/engine/allocator.h> moved to <tensorgrad/core/allocator.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/allocator.h"
