// Forwarding header: <tensorgrad/engine/device.h> moved to <tensorgrad/core/device.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/core/device.h"
