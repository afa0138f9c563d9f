// tests/test_checkpoint_memory.cpp: the peak memory of gradient checkpointing (checkpoint_sequential,
// nested tg::checkpoint) against the bound the segment arithmetic predicts, for several depths,
// widths, segment counts and layer kinds, measured with tg::memory's CPU statistics; and the
// parameters' gradients, which a checkpointed segment's backward puts into .grad as they come (Note
// [Partial backward]), with their hooks seeing the summed gradient once, as in the plain run.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "testing.h"

namespace {

enum class Block { Linear, Relu, Tanh, Gelu, LayerNormRelu, ReluDropout };

const char* block_name(Block b) {
  switch (b) {
    case Block::Linear: return "Linear";
    case Block::Relu: return "Linear-ReLU";
    case Block::Tanh: return "Linear-Tanh";
    case Block::Gelu: return "Linear-GELU";
    case Block::LayerNormRelu: return "Linear-LayerNorm-ReLU";
    case Block::ReluDropout: return "Linear-ReLU-Dropout";
  }
  return "?";
}

/// The children one block adds to the Sequential.
int64_t children_per_block(Block b) {
  switch (b) {
    case Block::Linear: return 1;
    case Block::LayerNormRelu:
    case Block::ReluDropout: return 3;
    default: return 2;
  }
}

/// The activations of the batch's size (batch x width) one block keeps for backward, beyond its
/// input (which the block before keeps, or the segment's input), as counted by the saved-bytes cases
/// of tests/test_memory.cpp: Linear saves its input, ReLU and Tanh their output (the next Linear's
/// input, so one tensor), GELU its input (the Linear's output: a second tensor), LayerNorm its input
/// plus a mean and an inverse deviation per row (2 / width of an activation), Dropout nothing (it
/// draws its mask again in backward) but its output, the next Linear's input, differs from ReLU's.
double kept_per_block(Block b, int64_t width) {
  switch (b) {
    case Block::Gelu:
    case Block::ReluDropout: return 2;
    case Block::LayerNormRelu: return 2 + 2.0 / static_cast<double>(width);
    default: return 1;
  }
}

std::unique_ptr<tg::nn::Sequential> model_of(Block b, int blocks, int64_t width) {
  tg::manual_seed(12);
  auto seq = std::make_unique<tg::nn::Sequential>();
  for (int i = 0; i < blocks; ++i) {
    seq->add<tg::nn::Linear>(width, width);
    if (b == Block::Relu || b == Block::ReluDropout) seq->add<tg::nn::ReLU>();
    if (b == Block::Tanh) seq->add<tg::nn::Tanh>();
    if (b == Block::Gelu) seq->add<tg::nn::GELU>();
    if (b == Block::LayerNormRelu) {
      seq->add<tg::nn::LayerNorm>(std::vector<int64_t>{width});
      seq->add<tg::nn::ReLU>();
    }
    if (b == Block::ReluDropout) seq->add<tg::nn::Dropout>(0.25);
  }
  return seq;
}

struct Peak {
  double kept;   // bytes held when the forward returned, above the baseline
  double peak;   // the highest allocation during forward and backward, above the baseline
};

/// Forward and backward of mean(run(x)), measured from a baseline that holds the model, x and the
/// parameters' gradients (a first backward made them; the measured one adds into them in place).
template <class Run>
Peak measure(tg::nn::Module& model, const tg::Tensor& x, Run&& run) {
  tg::manual_seed(1);
  tg::Tensor y = run(x);
  y.mean().backward();
  y = tg::Tensor();
  const std::size_t base = tg::memory::memory_allocated();
  tg::memory::reset_peak_memory_stats();
  tg::manual_seed(1);
  tg::Tensor out = run(x);
  const std::size_t kept = tg::memory::memory_allocated() - base;
  out.mean().backward();
  out = tg::Tensor();
  CHECK(tg::memory::memory_allocated() == base);   // everything the step made is freed again
  for (const auto& p : model.parameters()) CHECK(p.grad().defined());
  return {static_cast<double>(kept), static_cast<double>(tg::memory::max_memory_allocated() - base)};
}

struct Layout {
  Block block;
  int blocks;
  int64_t width, batch;
  int segments;
  bool nested;   // the whole checkpoint_sequential inside one more tg::checkpoint
};

// Note [Checkpoint memory arithmetic]
// One activation is A = batch * width * 4 bytes; a block keeps m activations for backward
// (kept_per_block). The plain run keeps L blocks' worth, m L A, when its forward returns, and its
// peak adds T, what one layer's backward holds at once besides that: the incoming gradient, the
// gradient it computes for its input, and a weight gradient (width^2 * 4 bytes) before it is added
// into .grad (a Dropout's redrawn mask too). checkpoint_sequential with S segments keeps the S - 1
// segments' outputs (the only activations of a checkpointed segment that outlive its forward) and the
// last, unchecked segment's n_last blocks: (S - 1 + m n_last) A. Its backward first runs the last
// segment with the same per-layer temporaries T; then each checkpointed segment k in turn holds the
// k - 1 earlier outputs, its recomputed m n_k A (n_k <= n_last, since the last segment takes the
// rest) and T, less than the last segment did, as long as each segment's activations are freed as
// its backward runs and its parameters' gradients go into .grad one at a time. So
//   checkpoint peak <= (S - 1 + m n_last) A + T,   plain peak = m L A + T,
// with T measured as the plain run's peak above what its forward keeps (both runs call the same
// kernels). A recomputed segment that kept its n_k weight gradients until its backward ended would
// exceed this by up to n_k width^2 * 4 bytes. Nested in one more checkpoint the forward keeps only
// the output, and the recomputation is the same checkpoint_sequential run, so the same bound holds.
void check_layout(const Layout& l) {
  const std::string kind = block_name(l.block);
  CAPTURE(kind);
  CAPTURE(l.blocks);
  CAPTURE(l.width);
  CAPTURE(l.batch);
  CAPTURE(l.segments);
  CAPTURE(l.nested);
  auto model = model_of(l.block, l.blocks, l.width);
  tg::nn::Sequential& seq = *model;
  tg::manual_seed(13);
  const tg::Tensor x = tg::randn({l.batch, l.width});
  const double A = static_cast<double>(l.batch * l.width * 4);
  const double m = kept_per_block(l.block, l.width);
  const int64_t k = children_per_block(l.block);
  const int64_t count = static_cast<int64_t>(seq.size());
  const int64_t per_segment = count / l.segments;
  REQUIRE(per_segment % k == 0);   // segments made of whole blocks, so that n_last counts blocks
  const double n_last = static_cast<double>(count - (l.segments - 1) * per_segment) / static_cast<double>(k);

  const Peak plain = measure(seq, x, [&](const tg::Tensor& in) { return seq(in); });
  const Peak ckpt = measure(seq, x, [&](const tg::Tensor& in) {
    if (!l.nested) return tg::checkpoint_sequential(seq, l.segments, in);
    auto inner = [&](const std::vector<tg::Tensor>& v) { return tg::checkpoint_sequential(seq, l.segments, v[0]); };
    return tg::checkpoint(inner, {in});
  });
  const double T = plain.peak - plain.kept;
  const double slack = A / 16;   // allocator rounding and the biases' gradients (width * 4 bytes each)
  MESSAGE(kind << " x" << l.blocks << " width " << l.width << " batch " << l.batch << " segments " << l.segments
               << std::string(l.nested ? " nested" : "") << ": plain peak " << plain.peak / A << " A, checkpoint peak "
               << ckpt.peak / A << " A (ratio " << ckpt.peak / plain.peak << "), T " << T / A << " A");
  // the inputs of the arithmetic: what the plain forward keeps, and what the checkpointed one keeps
  CHECK(plain.kept >= m * l.blocks * A - slack);
  CHECK(plain.kept <= m * l.blocks * A + slack);
  const double ckpt_kept = l.nested ? A : (l.segments - 1 + m * n_last) * A;
  CHECK(ckpt.kept <= ckpt_kept + slack);
  CHECK(T <= 4 * A + static_cast<double>(l.width * l.width * 4));   // one layer's temporaries, not more
  // the bound
  CHECK(ckpt.peak <= (l.segments - 1 + m * n_last) * A + T + slack);
}

}  // namespace

TEST_CASE("checkpoint memory: 32 x Linear(512)-ReLU at batch 256 in 4 segments peaks at the predicted 15/36 of plain") {
  // A = 512 KiB, a weight gradient 1 MiB = 2 A. Plain: 32 A kept + T = 4 A (gradient in, gradient
  // out, weight gradient) = 36 A. checkpoint_sequential(4): 3 segment outputs + 8 blocks of the last
  // segment = 11 A, + T = 15 A: 0.417 of the plain run. Keeping a recomputed segment's 8 weight
  // gradients to its end added 16 A (0.61 of the plain run).
  check_layout({Block::Relu, 32, 512, 256, 4, false});
  auto model = model_of(Block::Relu, 32, 512);
  tg::manual_seed(13);
  const tg::Tensor x = tg::randn({256, 512});
  const Peak plain = measure(*model, x, [&](const tg::Tensor& in) { return (*model)(in); });
  const Peak ckpt = measure(*model, x, [&](const tg::Tensor& in) { return tg::checkpoint_sequential(*model, 4, in); });
  CHECK(ckpt.peak <= (15.0 / 36.0 + 0.01) * plain.peak);
}

TEST_CASE("checkpoint memory: checkpoint_sequential's peak follows the segment arithmetic for other layouts") {
  const std::vector<Layout> layouts = {
      {Block::Relu, 32, 128, 2048, 4, false},        // activations dominate: weight gradients 1/16 A
      {Block::Linear, 32, 512, 256, 4, false},       // no activation function: Linear keeps its input
      {Block::Tanh, 16, 256, 512, 4, false},
      {Block::Gelu, 16, 256, 512, 8, false},         // two activations per block, 2-block segments
      {Block::LayerNormRelu, 12, 256, 512, 3, false},
      {Block::ReluDropout, 12, 256, 512, 3, false},  // the mask drawn again in backward and recomputation
      {Block::Relu, 24, 512, 256, 6, false},
      {Block::Relu, 30, 256, 512, 7, false},         // uneven: 6 segments of 4 blocks, the last of 6
      {Block::Relu, 32, 512, 256, 4, true},          // nested: the outer recomputation runs the inner segments
      {Block::Tanh, 16, 512, 128, 2, true},
  };
  for (const Layout& l : layouts) check_layout(l);
}

TEST_CASE("checkpoint: gradients go into .grad as a segment's backward runs, hooks see the summed gradient once") {
  // w is read inside the checkpointed function and after it: the plain run and the checkpointed one
  // give the same gradient, the tensor hook runs once on the sum of both uses and the
  // post-accumulate hook once with .grad complete. v, without hooks, is read inside only; u only in
  // a nested checkpoint.
  tg::Tensor w = testing::randn64({5, 5}, 51);
  tg::Tensor v = testing::randn64({5, 5}, 52);
  tg::Tensor u = testing::randn64({5, 5}, 53);
  tg::Tensor x = testing::randn64({4, 5}, 54);
  std::vector<std::vector<double>> hook_seen, post_seen;
  auto h1 = w.register_hook([&](const tg::Tensor& g) {
    hook_seen.push_back(g.to_vector<double>());
    return tg::Tensor();
  });
  auto h2 = w.register_post_accumulate_grad_hook(
      [&](tg::Tensor& p) { post_seen.push_back(p.grad().to_vector<double>()); });
  auto f = [&](const std::vector<tg::Tensor>& in) {
    tg::Tensor h = tg::tanh(tg::matmul(in[0], w));
    h = tg::checkpoint([&](const std::vector<tg::Tensor>& i2) { return tg::sigmoid(tg::matmul(i2[0], u)); }, {h});
    return tg::matmul(h, v);
  };
  auto run = [&](bool ckpt) {
    for (tg::Tensor* t : {&w, &v, &u, &x}) t->zero_grad();
    hook_seen.clear();
    post_seen.clear();
    tg::Tensor y = ckpt ? tg::checkpoint(f, {x}) : f({x});
    (tg::matmul(y, w) * 0.5).pow(2.0).sum().backward();
    return std::vector<std::vector<double>>{w.grad().to_vector<double>(), v.grad().to_vector<double>(),
                                            u.grad().to_vector<double>(), x.grad().to_vector<double>()};
  };
  const auto plain = run(false);
  const auto plain_hook = hook_seen;
  REQUIRE(plain_hook.size() == 1);
  REQUIRE(post_seen.size() == 1);
  const auto ckpt = run(true);
  REQUIRE(ckpt.size() == plain.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    REQUIRE(ckpt[i].size() == plain[i].size());
    for (std::size_t j = 0; j < plain[i].size(); ++j) CHECK(ckpt[i][j] == doctest::Approx(plain[i][j]).epsilon(1e-12));
  }
  REQUIRE(hook_seen.size() == 1);   // once, with both uses summed
  REQUIRE(post_seen.size() == 1);
  for (std::size_t j = 0; j < plain_hook[0].size(); ++j) {
    CHECK(hook_seen[0][j] == doctest::Approx(plain_hook[0][j]).epsilon(1e-12));
    CHECK(post_seen[0][j] == doctest::Approx(plain[0][j]).epsilon(1e-12));
  }
  h1.remove();
  h2.remove();
}
