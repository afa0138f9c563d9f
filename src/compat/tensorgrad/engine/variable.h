// Forwarding header: <tensorgrad/engine/variable.h> moved to <tensorgrad/autograd/tensor.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/autograd/tensor.h"
