// tensorgrad.h: the one header users include. Everything public is reachable from here; nothing
// here includes a CUDA header, so plain C++ consumers build against a CUDA-enabled library.
// engine/prim.h (graph-free tensor math) is public for writing custom ops with tg::record.
#pragma once

#include "tensorgrad/cuda/cuda.h"
#include "tensorgrad/data/dataset.h"
#include "tensorgrad/data/idx.h"
#include "tensorgrad/data/loader.h"
#include "tensorgrad/engine/autograd_tools.h"
#include "tensorgrad/engine/backend.h"
#include "tensorgrad/engine/cpu_capability.h"
#include "tensorgrad/engine/debug.h"
#include "tensorgrad/engine/error.h"
#include "tensorgrad/engine/grad_mode.h"
#include "tensorgrad/engine/info.h"
#include "tensorgrad/engine/prim.h"
#include "tensorgrad/engine/variable.h"
#include "tensorgrad/nn/init.h"
#include "tensorgrad/nn/layers.h"
#include "tensorgrad/nn/module.h"
#include "tensorgrad/nn/serialize.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/optim/adam.h"
#include "tensorgrad/optim/optimizer.h"
#include "tensorgrad/optim/scheduler.h"
