// Forwarding header: <tensorgrad/engine/cpu_capability.h> moved to <tensorgrad/core/cpu_capability.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/cpu_capability.h"
