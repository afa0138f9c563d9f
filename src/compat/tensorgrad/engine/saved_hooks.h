// Forwarding header: <tensorgrad/engine/saved_hooks.h> moved to <tensorgrad/autograd/saved_hooks.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/autograd/saved_hooks.h"
