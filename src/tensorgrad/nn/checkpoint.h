/// \file
/// nn/checkpoint.h: gradient checkpointing (torch.utils.checkpoint, non-reentrant): tg::checkpoint
/// keeps only a function's inputs for backward and runs the function again, with grad, when backward
/// reaches it; tg::checkpoint_sequential does that for the segments of an nn::Sequential. The partial
/// backward through the recomputed graph is autograd/engine.cpp (Note [Partial backward]).
#pragma once
#include <functional>
#include <vector>

#include "tensorgrad/autograd/tensor.h"
#include "tensorgrad/nn/layers.h"

namespace tg {

/// What tg::checkpoint runs: the inputs in, one Tensor out.
using CheckpointFunction = std::function<Tensor(const std::vector<Tensor>& inputs)>;

/// fn(inputs), with PyTorch's non-reentrant checkpoint semantics (torch.utils.checkpoint with
/// use_reentrant=False): the activations fn computes are not kept for backward, only `inputs`; when
/// backward reaches the result, fn runs again with grad enabled and the gradient flows through that
/// recomputed graph to the inputs, to the parameters fn uses and to any other Tensor it reads.
/// Gradients are bit-identical to those of plain fn(inputs).
///
/// - fn must compute the same thing twice. Random ops (dropout) draw the same numbers: the random
///   stream is put back to where it was before the first run (tg::get_rng_state), then restored.
/// - fn runs with grad enabled on fresh leaves that stand for the inputs (the same storage); the first
///   run records its graph only to find what fn reads, and drops it before checkpoint returns. fn
///   must not write its inputs in place (a leaf that requires grad refuses it; others would change
///   the values the recomputation reads, which backward reports as an in-place modification).
/// - Checkpoints nest, and backward with retain_graph=true recomputes on each pass.
/// - Under NoGradGuard it is fn(inputs). A result that does not require grad is returned as it is.
/// - AutogradError in backward when an input, or a parameter fn read, was modified in place after
///   the forward, or when the recomputation differs (another output shape, dtype, or another set of
///   tensors it reads).
/// Not thread-safe with respect to other threads drawing random numbers during the recomputation.
Tensor checkpoint(CheckpointFunction fn, const std::vector<Tensor>& inputs);

/// The children of seq in `segments` consecutive groups, each but the last run under tg::checkpoint
/// (torch.utils.checkpoint.checkpoint_sequential): a model of n layers then keeps about
/// n / segments + segments activations for backward instead of n. The groups hold size() / segments
/// children each; the last one takes the rest. Error unless 1 <= segments <= seq.size().
Tensor checkpoint_sequential(nn::Sequential& seq, int segments, const Tensor& x);

}  // namespace tg
