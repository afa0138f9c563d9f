// Forwarding header: <tensorgrad/engine/autograd_tools.h> moved to <tensorgrad/autograd/tools.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/autograd/tools.h"
