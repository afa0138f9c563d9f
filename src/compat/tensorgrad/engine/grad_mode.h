// Forwarding header: <tensorgrad/engine/grad_mode.h> moved to <tensorgrad/autograd/grad_mode.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/autograd/grad_mode.h"
