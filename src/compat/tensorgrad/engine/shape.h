// Forwarding header: <tensorgrad/engine/shape.h> moved to <tensorgrad/core/shape.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/shape.h"
