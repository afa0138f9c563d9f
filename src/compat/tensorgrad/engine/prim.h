// Forwarding header: <tensorgrad/engine/prim.h> moved to <tensorgrad/prim/prim.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/prim/prim.h"
