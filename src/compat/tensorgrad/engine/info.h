// Forwarding header: <tensorgrad/engine/info.h> moved to <tensorgrad/backend/info.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/backend/info.h"
