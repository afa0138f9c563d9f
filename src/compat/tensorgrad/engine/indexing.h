// Forwarding header: <tensorgrad/engine/indexing.h> moved to <tensorgrad/core/indexing.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/indexing.h"
