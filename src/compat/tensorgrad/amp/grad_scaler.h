// Forwarding header: <tensorgrad/amp/grad_scaler.h> moved to <tensorgrad/optim/grad_scaler.h> (docs/architecture.md,
// "Floors"). Kept for one release so that existing includes compile; include the new path.
#pragma once
#include "tensorgrad/optim/grad_scaler.h"
