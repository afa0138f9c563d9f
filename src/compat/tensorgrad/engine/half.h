// Forwarding header: <tensorgrad/engine/half.h> moved to <tensorgrad/core/half.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/half.h"
