// Forwarding header: <tensorgrad/engine/debug.h> moved to <tensorgrad/core/debug.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/debug.h"
