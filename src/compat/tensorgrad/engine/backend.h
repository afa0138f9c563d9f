// Forwarding header: <tensorgrad/engine/backend.h> moved to <tensorgrad/backend/backend.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/backend/backend.h"
