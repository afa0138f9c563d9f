// tensorgrad.h: the one header users include. Everything public is reachable from here; nothing
// here includes a CUDA header, so plain C++ consumers build against a CUDA-enabled library.
// engine/prim.h (graph-free tensor math) is public for writing custom ops with tg::record.
#pragma once

#include "cuda/cuda.h"
#include "data/dataset.h"
#include "data/idx.h"
#include "data/loader.h"
#include "engine/autograd_tools.h"
#include "engine/backend.h"
#include "engine/debug.h"
#include "engine/error.h"
#include "engine/grad_mode.h"
#include "engine/prim.h"
#include "engine/variable.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/serialize.h"
#include "ops/creation.h"
#include "ops/ops.h"
#include "optim/adam.h"
#include "optim/optimizer.h"
#include "optim/scheduler.h"
