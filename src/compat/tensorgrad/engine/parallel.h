// Forwarding header: <tensorgrad/engine/parallel.h> moved to <tensorgrad/core/parallel.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/parallel.h"
