// Forwarding header: <tensorgrad/amp/autocast.h> moved to <tensorgrad/ops/autocast.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/ops/autocast.h"
