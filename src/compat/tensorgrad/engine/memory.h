// Forwarding header: <tensorgrad/engine/memory.h> moved to <tensorgrad/core/memory.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/memory.h"
