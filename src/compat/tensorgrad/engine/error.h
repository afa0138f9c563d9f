// Forwarding header: <tensorgrad/engine/error.h> moved to <tensorgrad/core/error.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/error.h"
