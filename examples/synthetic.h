// examples/synthetic.h: the generated 10-class image problem of --synthetic, shared by
// 08_train_fashion_mnist.cpp and 11_train_ddp.cpp (no dataset needed, e.g. on a bare GPU machine or in CTest).
#pragma once
#include <tensorgrad.h>

/// The --synthetic problem: `n` images (n, 1, 28, 28) in [0, 1] of 10 classes. Each class lights its
/// own fixed random 16% of the pixels at 0.3, and every pixel gets normal noise of sd 0.5, clamped: one
/// pixel says little, the whole image a lot, so the MLP learns it (about 99% test accuracy after 2
/// epochs of 2,000 images on the CPU, 10% being chance). The patterns come from `seed`; the train and
/// test sets share them and differ in labels and noise (`split_seed`). Generated on the CPU from tg's
/// Philox stream, so the images are the same on every machine and thread count. With `blocks` (the
/// CNN) each pattern lights 4x4 blocks of a 7x7 grid instead of single pixels: max pooling over pixel
/// noise would drown single lit pixels, while image classes are made of shapes.
inline tg::data::TensorDataset synthetic_set(int64_t n, uint64_t seed, uint64_t split_seed, bool blocks = false) {
  tg::NoGradGuard no_grad;
  tg::manual_seed(seed);
  const tg::Tensor patterns =
      blocks ? tg::reshape(tg::expand(tg::reshape(tg::randn({10, 49}) > 1.0, {10, 7, 1, 7, 1}), {10, 7, 4, 7, 4}), {10, 784})
             : tg::randn({10, 784}) > 1.0;   // 0/1: about 16% of the pixels (or blocks) lit
  tg::manual_seed(split_seed);
  const tg::Tensor labels = tg::randint(0, 10, {n});
  const tg::Tensor images =
      tg::clamp(tg::index_select(patterns, 0, labels) * 0.3 + tg::randn({n, 784}) * 0.5, 0.0, 1.0);
  return tg::data::TensorDataset(images.reshape({n, 1, 28, 28}), labels);
}
