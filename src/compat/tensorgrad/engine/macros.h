// Forwarding header: <tensorgrad/engine/macros.h> moved to <tensorgrad/core/macros.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/macros.h"
