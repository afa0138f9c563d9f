// Forwarding header: <tensorgrad/engine/hooks.h> moved to <tensorgrad/autograd/hooks.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/autograd/hooks.h"
