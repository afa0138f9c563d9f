/// \file
/// tensorgrad.h: the one header users include. Everything public is reachable from here; nothing
/// here includes a CUDA header, so plain C++ consumers build against a CUDA-enabled library.
/// prim/prim.h (graph-free tensor math) is public for writing custom ops with tg::record.
#pragma once

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/optim/grad_scaler.h"
#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/data/dataloader.h"
#include "tensorgrad/data/dataset.h"
#include "tensorgrad/data/dataset_utils.h"
#include "tensorgrad/data/datasets.h"
#include "tensorgrad/data/idx.h"
#include "tensorgrad/data/loader.h"
#include "tensorgrad/data/sampler.h"
#include "tensorgrad/data/samplers.h"
#include "tensorgrad/data/transforms.h"
#include "tensorgrad/data/utils.h"
#include "tensorgrad/distributed/distributed.h"
#include "tensorgrad/distributed/tcp_store.h"
#include "tensorgrad/autograd/function.h"
#include "tensorgrad/autograd/functional.h"
#include "tensorgrad/autograd/tools.h"
#include "tensorgrad/backend/backend.h"
#include "tensorgrad/core/cpu_capability.h"
#include "tensorgrad/core/debug.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/core/indexing.h"
#include "tensorgrad/core/int_array_ref.h"
#include "tensorgrad/core/torch_check.h"
#include "tensorgrad/backend/info.h"
#include "tensorgrad/core/memory.h"
#include "tensorgrad/prim/cuda_graph.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/autograd/saved_hooks.h"
#include "tensorgrad/autograd/tensor.h"
#include "tensorgrad/nn/activation.h"
#include "tensorgrad/nn/attention.h"
#include "tensorgrad/nn/packed_sequence.h"
#include "tensorgrad/nn/rnn.h"
#include "tensorgrad/nn/checkpoint.h"
#include "tensorgrad/nn/container.h"
#include "tensorgrad/nn/data_parallel.h"
#include "tensorgrad/nn/functional.h"
#include "tensorgrad/nn/init.h"
#include "tensorgrad/nn/layers.h"
#include "tensorgrad/nn/module.h"
#include "tensorgrad/nn/parallel/distributed.h"
#include "tensorgrad/nn/pimpl.h"
#include "tensorgrad/nn/conv.h"
#include "tensorgrad/nn/loss.h"
#include "tensorgrad/nn/norm.h"
#include "tensorgrad/nn/padding.h"
#include "tensorgrad/nn/transformer.h"
#include "tensorgrad/io/checkpoint.h"
#include "tensorgrad/io/safetensors.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/optim/adam.h"
#include "tensorgrad/optim/optimizer.h"
#include "tensorgrad/optim/lbfgs.h"
#include "tensorgrad/optim/optimizers.h"
#include "tensorgrad/optim/scheduler.h"
#include "tensorgrad/optim/schedulers.h"
#include "tensorgrad/nn/prune.h"
#include "tensorgrad/quantization/dynamic.h"
#include "tensorgrad/quantization/observer.h"
#include "tensorgrad/quantization/qat.h"
#include "tensorgrad/quantization/quantize.h"

/// \namespace tg
/// Everything tensorgrad offers: Tensor and its ops (ops/ops.h), factories (ops/creation.h),
/// devices and dtypes, errors, checkpoints (tg::save, tg::load). Names follow PyTorch's (`torch::`).
/// \namespace tg::amp
/// Mixed-precision training, PyTorch's torch.amp: AutocastGuard (which ops run in float16/bfloat16)
/// and GradScaler (loss scaling).
/// \namespace tg::autograd
/// Graph tools: gradcheck, to_dot, DetectAnomalyGuard, BackwardTraceGuard (PyTorch's torch.autograd),
/// and libtorch's custom Function<T> with its AutogradContext (autograd/function.h).
/// \namespace tg::cuda
/// The CUDA runtime as users see it: device queries, the current device, memory statistics
/// (PyTorch's torch.cuda). Every function also works in a build without CUDA.
/// \namespace tg::data
/// Datasets (TensorDataset, MNIST, FashionMNIST), the IDX file reader and the DataLoader; beside them
/// libtorch's data API (datasets::, transforms::, samplers::, make_data_loader: data/dataloader.h),
/// with PyTorch's Subset, ConcatDataset, random_split (data/utils.h) and WeightedRandomSampler; the same
/// utilities for the DataLoader's own Dataset (data/dataset_utils.h, data/sampler.h), TransformDataset,
/// and torchvision's image transforms (data/transforms.h).
/// \namespace tg::distributed
/// Several processes training together (PyTorch's torch.distributed): init_process_group, the
/// collectives, ProcessGroup and its Gloo backend, TCPStore.
/// \namespace tg::nn::parallel
/// Parallel execution of modules (PyTorch's torch.nn.parallel): DistributedDataParallel, and the
/// steps of DataParallel (replicate, scatter, parallel_apply, gather).
/// \namespace tg::debug
/// Live-object counters for leak tests.
/// \namespace tg::fn
/// The scalar math of the elementwise ops, shared by the CPU loops and the CUDA kernels. Each unary
/// functor has `forward(x, args)` and `backward(x, y, dy, args)`; each binary one has `apply(a, b)`.
/// \namespace tg::memory
/// The CPU allocator's statistics with torch.cuda's names (memory_allocated, memory_summary, ...) and
/// the record and table the CUDA ones share.
/// \namespace tg::nn
/// Modules (Module, Linear, Sequential, ...) and losses (PyTorch's torch.nn).
/// \namespace tg::nn::init
/// In-place parameter initialisers (PyTorch's torch.nn.init).
/// \namespace tg::optim
/// Optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, LBFGS) with per-group options, learning-rate schedulers and clip_grad_norm (PyTorch's torch.optim).
/// \namespace tg::parallel
/// The CPU thread pool that runs tensorgrad's parallel loops.
/// \namespace tg::philox
/// Philox4x32-10, the counter-based random generator behind every random op.
/// \namespace tg::prim
/// Graph-free math on RawTensors: validated, allocating, no autograd. The building blocks of ops and of
/// backward rules written with tg::record.
