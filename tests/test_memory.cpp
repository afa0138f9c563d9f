// tests/test_memory.cpp: memory: gradient checkpointing (tg::checkpoint, checkpoint_sequential:
// gradients bit-identical to the plain run, dropout, nesting, retain_graph, in-place errors; its peak
// memory is in tests/test_checkpoint_memory.cpp), what each op saves for backward (counted through
// saved-tensor hooks, against PyTorch's numbers), saved-tensor hooks and SaveOnCpuGuard, tg::memory /
// tg::cuda memory introspection and the OutOfMemoryError report. Cases named "cuda ..." need a GPU
// (or the CUDA emulator) and skip without.
#include <any>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "testing.h"

namespace {

/// `blocks` times Linear(width, width) -> ReLU [-> Dropout(p)], parameters drawn from `seed`.
std::unique_ptr<tg::nn::Sequential> mlp(int blocks, int64_t width, tg::DType dtype, double p, uint64_t seed) {
  tg::manual_seed(seed);
  auto seq = std::make_unique<tg::nn::Sequential>();
  for (int i = 0; i < blocks; ++i) {
    seq->add<tg::nn::Linear>(width, width);
    seq->add<tg::nn::ReLU>();
    if (p > 0) seq->add<tg::nn::Dropout>(p);
  }
  seq->to(dtype);
  return seq;
}

/// Children [begin, end) of seq applied to x in order.
tg::Tensor run_range(tg::nn::Sequential& seq, std::size_t begin, std::size_t end, const tg::Tensor& x) {
  const auto children = seq.children();
  tg::Tensor h = x;
  for (std::size_t i = begin; i < end; ++i) h = (*children[i].second)(h);
  return h;
}

/// Every parameter's gradient and the input's, as exact doubles (float32 and float64 convert exactly).
std::vector<std::vector<double>> grads_of(tg::nn::Module& m, const tg::Tensor& x) {
  std::vector<std::vector<double>> out;
  for (auto& p : m.parameters()) out.push_back(p.grad().defined() ? p.grad().to_vector<double>() : std::vector<double>{});
  if (x.requires_grad()) out.push_back(x.grad().to_vector<double>());
  return out;
}

void zero_all(tg::nn::Module& m, tg::Tensor& x) {
  m.zero_grad();
  x.zero_grad();
}

/// forward(x) then mse against target, backward; the random stream seeded first (dropout masks).
void step(const std::function<tg::Tensor(const tg::Tensor&)>& forward, const tg::Tensor& x,
          const tg::Tensor& target, bool twice = false) {
  tg::manual_seed(1234);
  tg::Tensor loss = tg::mse_loss(forward(x), target);
  loss.backward(tg::Tensor(), /*retain_graph=*/twice);
  if (twice) loss.backward();
}

/// The gradients of plain, tg::checkpoint over the whole model, and checkpoint_sequential runs must
/// be equal bit for bit.
void check_bit_identical(tg::DType dtype, double p, tg::Device device, bool x_requires_grad) {
  auto model = mlp(6, 33, dtype, p, 7);
  model->to(device);
  tg::manual_seed(99);
  tg::Tensor x = tg::randn({17, 33}, tg::TensorOptions().dtype(dtype).device(device));
  if (x_requires_grad) x.set_requires_grad(true);
  tg::Tensor target = tg::randn({17, 33}, tg::TensorOptions().dtype(dtype).device(device));
  tg::nn::Sequential& seq = *model;

  step([&](const tg::Tensor& in) { return seq(in); }, x, target);
  const auto plain = grads_of(seq, x);
  const tg::RngState after_plain = tg::get_rng_state();
  REQUIRE(plain.size() == seq.parameters().size() + (x_requires_grad ? 1 : 0));

  zero_all(seq, x);
  step([&](const tg::Tensor& in) {
    return tg::checkpoint([&](const std::vector<tg::Tensor>& v) { return seq(v[0]); }, {in});
  }, x, target);
  CHECK(grads_of(seq, x) == plain);
  const tg::RngState after = tg::get_rng_state();   // the recomputation left the stream where it was
  CHECK(after.seed == after_plain.seed);
  CHECK(after.offset == after_plain.offset);

  for (int segments : {1, 2, 3, 4}) {
    CAPTURE(segments);
    zero_all(seq, x);
    step([&](const tg::Tensor& in) { return tg::checkpoint_sequential(seq, segments, in); }, x, target);
    CHECK(grads_of(seq, x) == plain);
  }
}

}  // namespace

TEST_CASE("checkpoint: gradients are bit-identical to the plain run, float64 and float32, with dropout") {
  for (tg::DType dtype : {tg::kFloat64, tg::kFloat32}) {
    for (double p : {0.0, 0.3}) {
      for (bool x_grad : {true, false}) {
        CAPTURE(tg::dtype_name(dtype));
        CAPTURE(p);
        CAPTURE(x_grad);
        check_bit_identical(dtype, p, tg::Device::cpu(), x_grad);
      }
    }
  }
}

TEST_CASE("checkpoint: under bfloat16 autocast the recomputation runs in the forward's precisions") {
  // The backward runs outside the autocast region: the checkpoint restores the forward's autocast
  // state for the recomputation, so the gradients equal the plain autocast run's bit for bit.
  auto model = mlp(4, 16, tg::kFloat32, 0.0, 3);
  tg::manual_seed(5);
  tg::Tensor x = tg::randn({8, 16});
  tg::Tensor target = tg::randn({8, 16});
  tg::nn::Sequential& seq = *model;
  auto run = [&](bool checkpointed) {
    seq.zero_grad();
    tg::Tensor loss;
    {
      tg::amp::AutocastGuard autocast(tg::Device::cpu(), tg::kBFloat16);
      tg::Tensor y = checkpointed ? tg::checkpoint_sequential(seq, 2, x) : seq(x);
      CHECK(y.dtype() == tg::kBFloat16);
      loss = tg::mse_loss(y, target);
    }
    loss.backward();
    return grads_of(seq, x);
  };
  const auto plain = run(false);
  CHECK(run(true) == plain);
}

TEST_CASE("cuda memory: checkpoint gradients are bit-identical to the plain run on the GPU") {
  TG_NEED_CUDA();
  check_bit_identical(tg::kFloat32, 0.3, tg::Device::cuda(), true);
  check_bit_identical(tg::kFloat64, 0.0, tg::Device::cuda(), false);
}

TEST_CASE("checkpoint: dropout inside draws the same mask on recomputation, and the masks differ across calls") {
  tg::manual_seed(5);
  tg::Tensor x = tg::randn({64, 40}, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
  auto f = [](const std::vector<tg::Tensor>& v) { return tg::dropout(v[0] * 2.0, 0.5, true); };
  tg::manual_seed(11);
  tg::Tensor y = tg::checkpoint(f, {x});
  y.sum().backward();
  // d(sum(dropout(2x)))/dx = 2 * mask, so the gradient is nonzero exactly where y kept a value.
  const auto g = x.grad().to_vector<double>(), yv = y.to_vector<double>(), xv = x.to_vector<double>();
  int kept = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    CHECK(g[i] == (yv[i] != 0 ? 4.0 : 0.0));   // 2 * 1/(1-p)
    if (yv[i] != 0) CHECK(yv[i] == 4.0 * xv[i]);
    kept += yv[i] != 0;
  }
  CHECK(kept > 1000);
  CHECK(kept < 1560);
}

TEST_CASE("checkpoint: nested checkpoints give the plain gradients") {
  auto model = mlp(6, 20, tg::kFloat64, 0.2, 3);
  tg::nn::Sequential& seq = *model;
  tg::manual_seed(4);
  tg::Tensor x = tg::randn({9, 20}, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
  tg::Tensor target = tg::randn({9, 20}, tg::TensorOptions().dtype(tg::kFloat64));
  const std::size_t n = seq.size();   // 18 children
  step([&](const tg::Tensor& in) { return seq(in); }, x, target);
  const auto plain = grads_of(seq, x);
  zero_all(seq, x);
  step([&](const tg::Tensor& in) {
    return tg::checkpoint([&](const std::vector<tg::Tensor>& outer) {
      tg::Tensor h = tg::checkpoint([&](const std::vector<tg::Tensor>& v) { return run_range(seq, 0, 6, v[0]); },
                                      {outer[0]});
      h = run_range(seq, 6, 9, h);
      h = tg::checkpoint([&](const std::vector<tg::Tensor>& v) {
        tg::Tensor k = tg::checkpoint([&](const std::vector<tg::Tensor>& w) { return run_range(seq, 9, 12, w[0]); },
                                        {v[0]});
        return run_range(seq, 12, 15, k);
      }, {h});
      return run_range(seq, 15, n, h);
    }, {in});
  }, x, target);
  CHECK(grads_of(seq, x) == plain);
}

TEST_CASE("checkpoint: retain_graph recomputes on each backward and accumulates like the plain run") {
  auto model = mlp(4, 16, tg::kFloat64, 0.25, 8);
  tg::nn::Sequential& seq = *model;
  tg::manual_seed(9);
  tg::Tensor x = tg::randn({5, 16}, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
  tg::Tensor target = tg::randn({5, 16}, tg::TensorOptions().dtype(tg::kFloat64));
  step([&](const tg::Tensor& in) { return seq(in); }, x, target, /*twice=*/true);
  const auto plain = grads_of(seq, x);
  zero_all(seq, x);
  step([&](const tg::Tensor& in) { return tg::checkpoint_sequential(seq, 2, in); }, x, target, /*twice=*/true);
  CHECK(grads_of(seq, x) == plain);
  // Without retain_graph the second backward raises PyTorch's error, as for any graph.
  tg::Tensor loss = tg::checkpoint_sequential(seq, 2, x).sum();
  loss.backward();
  TG_CHECK_THROWS(loss.backward(), tg::AutogradError, "Trying to backward through the graph a second time");
}

TEST_CASE("checkpoint: gradients reach Tensors the function reads from outside its inputs") {
  tg::Tensor a = testing::randn64({6, 5}, 21);
  tg::Tensor z = testing::randn64({6, 5}, 22);
  auto run = [&](bool ckpt) {
    a.zero_grad();
    z.zero_grad();
    tg::Tensor h = a * 1.5 + 0.25;   // a non-leaf recorded before the checkpoint
    auto f = [&h](const std::vector<tg::Tensor>& v) { return tg::tanh(v[0] * h + h); };
    tg::Tensor y = ckpt ? tg::checkpoint(f, {z}) : f({z});
    (y * y).sum().backward();
    return std::vector<std::vector<double>>{a.grad().to_vector<double>(), z.grad().to_vector<double>()};
  };
  const auto plain = run(false);
  CHECK(run(true) == plain);
}

TEST_CASE("checkpoint: inputs that need no grad, undefined results, no_grad and bad arguments") {
  tg::Tensor x = testing::randn64({3, 4}, 1, /*requires_grad=*/false);
  // Nothing requires grad: the result is returned as it is.
  tg::Tensor y = tg::checkpoint([](const std::vector<tg::Tensor>& v) { return v[0] * 2.0; }, {x});
  CHECK_FALSE(y.requires_grad());
  // Under no_grad, fn(inputs).
  tg::Tensor w = testing::randn64({3, 4}, 2);
  {
    tg::NoGradGuard no_grad;
    CHECK_FALSE(tg::checkpoint([&](const std::vector<tg::Tensor>& v) { return v[0] * w; }, {x}).requires_grad());
  }
  // The identity returns its input.
  tg::Tensor same = tg::checkpoint([](const std::vector<tg::Tensor>& v) { return v[0]; }, {w});
  CHECK(same.impl() == w.impl());
  TG_CHECK_THROWS(tg::checkpoint(tg::CheckpointFunction(), {x}), tg::Error, "checkpoint: the function is empty");
  TG_CHECK_THROWS(tg::checkpoint([](const std::vector<tg::Tensor>&) { return tg::Tensor(); }, {w}), tg::Error,
                  "returned an undefined Tensor");
  auto model = mlp(2, 4, tg::kFloat32, 0, 1);
  TG_CHECK_THROWS(tg::checkpoint_sequential(*model, 0, x), tg::Error, "segments must be between 1 and the number of modules (4), got 0");
  TG_CHECK_THROWS(tg::checkpoint_sequential(*model, 5, x), tg::Error, "got 5");
}

TEST_CASE("checkpoint: an input or a parameter modified in place before backward raises a clear AutogradError") {
  tg::Tensor a = testing::randn64({4, 3}, 31);
  tg::Tensor w = testing::randn64({4, 3}, 32);
  auto f = [&w](const std::vector<tg::Tensor>& v) { return tg::sigmoid(v[0] * w); };
  {
    tg::Tensor h = a * 2.0;   // a non-leaf input
    tg::Tensor y = tg::checkpoint(f, {h});
    h.add_(1.0);                // recorded in place: h's values are no longer what the forward read
    TG_CHECK_THROWS(y.sum().backward(), tg::AutogradError,
                    "checkpoint: input 0 of the checkpointed function was modified by an inplace operation");
  }
  {
    tg::Tensor y = tg::checkpoint(f, {a});
    {
      tg::NoGradGuard no_grad;
      w.mul_(0.5);              // an optimizer step before backward
    }
    TG_CHECK_THROWS(y.sum().backward(), tg::AutogradError, "checkpoint: a leaf the checkpointed function reads");
  }
}

TEST_CASE("checkpoint: recomputation that reads another tensor or gives another shape is refused") {
  tg::Tensor a = testing::randn64({4}, 41);
  tg::Tensor b = testing::randn64({4}, 42);
  int calls = 0;
  tg::Tensor y = tg::checkpoint([&](const std::vector<tg::Tensor>& v) { return ++calls == 1 ? v[0] * a : v[0] * b; },
                                  {testing::randn64({4}, 43)});
  TG_CHECK_THROWS(y.sum().backward(), tg::AutogradError, "the recomputation read a tensor that requires grad");
  calls = 0;
  tg::Tensor z = tg::checkpoint([&](const std::vector<tg::Tensor>& v) {
    return ++calls == 1 ? v[0] * a : (v[0] * a).sum();
  }, {testing::randn64({4}, 44)});
  TG_CHECK_THROWS(z.sum().backward(), tg::AutogradError, "checkpoint: the recomputed output");
}

// ------------------------------------------------------------------------------------------------
// What ops save for backward, counted through saved-tensor hooks.

namespace {

/// Records every tensor saved for backward while alive: storages by address with their bytes.
struct SavedCounter {
  std::vector<std::pair<const void*, std::size_t>> saved;   // one per saved tensor
  tg::autograd::SavedTensorHooksGuard guard{
      [this](const tg::RawTensor& t) {
        saved.emplace_back(t.storage().get(), t.storage()->nbytes());
        return std::any(t);
      },
      [](const std::any& p) { return std::any_cast<tg::RawTensor>(p); }};
  /// Bytes of the distinct storages saved, leaving out those of `skip` (parameters, inputs).
  std::size_t distinct_bytes(const std::vector<tg::Tensor>& skip = {}) const {
    std::set<const void*> skipped, seen;
    for (const auto& v : skip) skipped.insert(v.data().storage().get());
    std::size_t bytes = 0;
    for (const auto& [s, n] : saved)
      if (!skipped.count(s) && seen.insert(s).second) bytes += n;
    return bytes;
  }
};

std::unique_ptr<tg::nn::Sequential> relu_mlp(const std::vector<int64_t>& widths) {
  tg::manual_seed(0);
  auto seq = std::make_unique<tg::nn::Sequential>();
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    seq->add<tg::nn::Linear>(widths[i], widths[i + 1]);
    if (i + 2 < widths.size()) seq->add<tg::nn::ReLU>();
  }
  return seq;
}

/// Activation bytes per sample a model's graph saves: distinct storages, parameters and input left out.
double activation_bytes_per_sample(tg::nn::Sequential& model, int64_t batch, int64_t in) {
  tg::Tensor x = tg::randn({batch, in});
  SavedCounter counter;
  tg::Tensor y = model(x);
  std::vector<tg::Tensor> skip = model.parameters();
  skip.push_back(x);
  return static_cast<double>(counter.distinct_bytes(skip)) / static_cast<double>(batch);
}

}  // namespace

TEST_CASE("saved bytes: a Linear->ReLU MLP keeps each activation once, as PyTorch does") {
  // Reference: PyTorch 1.13 (python3-torch), the same measurement through
  // torch.autograd.graph.saved_tensors_hooks: the distinct untyped storages packed while running the
  // model on a (64, in) batch, less the parameters' and the input's, divided by 64:
  //   nn.Sequential(Linear(784,1024), ReLU, Linear(1024,1024), ReLU, Linear(1024,10)) -> 8192.0 B/sample
  //   16 x Linear(256,256) with ReLU between                                         -> 15360.0 B/sample
  //   Linear(784,128), ReLU, Linear(128,10)                                          -> 512.0 B/sample
  auto a = relu_mlp({784, 1024, 1024, 10});
  CHECK(activation_bytes_per_sample(*a, 64, 784) == 8192.0);
  auto b = relu_mlp(std::vector<int64_t>(17, 256));
  CHECK(activation_bytes_per_sample(*b, 64, 256) == 15360.0);
  auto c = relu_mlp({784, 128, 10});
  CHECK(activation_bytes_per_sample(*c, 64, 784) == 512.0);
}

TEST_CASE("saved bytes: ReLU saves its output, shared with the next Linear's saved input") {
  tg::Tensor x = tg::randn({8, 5});
  tg::nn::Linear l1(5, 7), l2(7, 3);
  SavedCounter counter;
  tg::Tensor h = l1(x);
  const std::size_t after_l1 = counter.saved.size();
  tg::Tensor r = tg::relu(h);
  REQUIRE(counter.saved.size() == after_l1 + 1);
  CHECK(counter.saved.back().first == r.data().storage().get());   // relu's output, not its input
  tg::Tensor out = l2(r);
  bool shares = false;   // l2 saved its input: the very storage relu saved
  for (std::size_t i = after_l1 + 1; i < counter.saved.size(); ++i) shares = shares || counter.saved[i].first == r.data().storage().get();
  CHECK(shares);
  // Everything saved from relu on, less l2's weight: the one activation r.
  std::vector<tg::Tensor> skip = l1.parameters();
  skip.push_back(x);
  skip.push_back(l2.weight);
  CHECK(counter.distinct_bytes(skip) == static_cast<std::size_t>(r.numel()) * sizeof(float));
}

TEST_CASE("saved bytes: what each op keeps for backward") {
  // Each op's rule reads the smallest set: the expected bytes follow from its backward formula.
  const int64_t N = 16, C = 10;
  const std::size_t f = sizeof(float);
  tg::manual_seed(3);
  tg::Tensor x = tg::randn({N, C}, tg::TensorOptions().requires_grad(true));
  tg::Tensor w = tg::randn({N, C}, tg::TensorOptions().requires_grad(true));
  tg::Tensor t = tg::randint(0, C, {N});
  auto bytes_of = [&](const std::function<tg::Tensor()>& op) {
    SavedCounter counter;
    tg::Tensor y = op();
    return counter.distinct_bytes();
  };
  const std::size_t nc = static_cast<std::size_t>(N * C) * f;
  CHECK(bytes_of([&] { return tg::relu(x); }) == nc);         // y
  CHECK(bytes_of([&] { return tg::sigmoid(x); }) == nc);      // y
  CHECK(bytes_of([&] { return tg::tanh(x); }) == nc);         // y
  CHECK(bytes_of([&] { return tg::exp(x); }) == nc);          // y
  CHECK(bytes_of([&] { return tg::log(x); }) == nc);          // x
  CHECK(bytes_of([&] { return tg::neg(x); }) == 0);           // nothing
  CHECK(bytes_of([&] { return x + w; }) == 0);
  CHECK(bytes_of([&] { return x * w; }) == 2 * nc);           // both operands
  tg::Tensor k = tg::randn({N, C});   // a constant: mul keeps it for x's gradient, and not x
  CHECK(bytes_of([&] { return x * k; }) == nc);
  CHECK(bytes_of([&] { return x.sum(); }) == 0);
  CHECK(bytes_of([&] { return x.mean(1); }) == 0);
  CHECK(bytes_of([&] { return tg::softmax(x, 1); }) == nc);   // y
  CHECK(bytes_of([&] { return tg::dropout(x, 0.5, true); }) == 0);   // the mask is drawn again in backward
  // cross_entropy: logits, int64 targets, the per-row log-sum-exp and the 0-d count of the mean
  CHECK(bytes_of([&] { return tg::cross_entropy(x, t); }) == nc + static_cast<std::size_t>(N) * (8 + f) + f);
  CHECK(bytes_of([&] { return tg::matmul(x, w.t()); }) == 2 * nc);
  tg::Tensor xc = tg::randn({N, C});   // no grad: linear keeps only its input (for dW)
  tg::nn::Linear lin(C, 4);
  CHECK(bytes_of([&] { return lin(xc); }) == nc);
  {
    tg::NoGradGuard no_grad;
    CHECK(bytes_of([&] { return tg::relu(x) * w; }) == 0);   // nothing is saved without grad
  }
}

TEST_CASE("dropout: backward draws the forward's mask again") {
  tg::manual_seed(17);
  tg::Tensor x = tg::randn({300}, tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true));
  tg::Tensor y = tg::dropout(x, 0.4, true);
  tg::randn({1000});   // the stream moves on before backward
  y.backward(tg::ones({300}, tg::TensorOptions().dtype(tg::kFloat64)));
  const auto g = x.grad().to_vector<double>(), yv = y.to_vector<double>();
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == (yv[i] != 0 ? 1.0 / 0.6 : 0.0));
}

// ------------------------------------------------------------------------------------------------
// Saved-tensor hooks

TEST_CASE("saved-tensor hooks: pack and unpack run once per saved tensor and the gradients are unchanged") {
  auto model = mlp(3, 12, tg::kFloat32, 0.2, 5);
  tg::nn::Sequential& seq = *model;
  tg::manual_seed(6);
  tg::Tensor x = tg::randn({7, 12}, tg::TensorOptions().requires_grad(true));
  tg::Tensor target = tg::randn({7, 12});
  step([&](const tg::Tensor& in) { return seq(in); }, x, target);
  const auto plain = grads_of(seq, x);
  zero_all(seq, x);
  int packs = 0, unpacks = 0;
  {
    // Packing to float64 and back is exact for float32 values; the graph holds only the copies.
    tg::autograd::SavedTensorHooksGuard hooks(
        [&](const tg::RawTensor& t) { ++packs; return std::any(std::make_pair(t.to(tg::kFloat64), t.dtype())); },
        [&](const std::any& p) {
          ++unpacks;
          const auto& [t, dtype] = std::any_cast<const std::pair<tg::RawTensor, tg::DType>&>(p);
          return t.to(dtype);
        });
    step([&](const tg::Tensor& in) { return seq(in); }, x, target);
  }
  CHECK(grads_of(seq, x) == plain);
  CHECK(packs > 0);
  CHECK(unpacks == packs);   // each saved tensor read once by its rule
}

TEST_CASE("saved-tensor hooks: guards nest, checkpoint turns them off inside, errors") {
  int outer = 0, inner = 0;
  auto identity = [](const std::any& p) { return std::any_cast<tg::RawTensor>(p); };
  tg::Tensor a = testing::randn64({5}, 1);
  {
    tg::autograd::SavedTensorHooksGuard g1([&](const tg::RawTensor& t) { ++outer; return std::any(t); }, identity);
    tg::Tensor y = tg::exp(a);
    CHECK(outer == 1);
    {
      tg::autograd::SavedTensorHooksGuard g2([&](const tg::RawTensor& t) { ++inner; return std::any(t); }, identity);
      y = tg::exp(y);
    }
    CHECK(inner == 1);
    CHECK(outer == 1);
    y = tg::exp(y);
    CHECK(outer == 2);
    // checkpoint packs only its input, not what the function saves.
    y = tg::checkpoint([](const std::vector<tg::Tensor>& v) { return tg::exp(tg::exp(v[0])); }, {y});
    CHECK(outer == 3);
    y.sum().backward();
  }
  CHECK(a.grad().defined());
  tg::Tensor after = tg::exp(a);   // no guard: nothing packed
  CHECK(outer == 3);
  TG_CHECK_THROWS(tg::autograd::SavedTensorHooksGuard(nullptr, identity), tg::Error, "must both be set");
  {
    tg::autograd::SavedTensorHooksGuard bad([](const tg::RawTensor& t) { return std::any(t); },
                                            [](const std::any& p) { return std::any_cast<tg::RawTensor>(p).reshape({-1, 1}); });
    tg::Tensor y = tg::exp(a);
    TG_CHECK_THROWS(y.sum().backward(), tg::AutogradError, "unpack must give back the tensor pack was given");
  }
  {
    // An in-place write to a packed tensor is still caught while its storage lives.
    tg::autograd::SavedTensorHooksGuard copy([](const tg::RawTensor& t) { return std::any(t.clone()); }, identity);
    tg::Tensor h = a * 1.0;
    tg::Tensor y = tg::exp(h);   // saves y
    y.mul_(2.0);
    TG_CHECK_THROWS(y.sum().backward(), tg::AutogradError, "modified by an inplace operation");
  }
}

TEST_CASE("SaveOnCpuGuard: CPU tensors stay, gradients identical") {
  auto model = mlp(3, 9, tg::kFloat64, 0.3, 2);
  tg::nn::Sequential& seq = *model;
  tg::Tensor x = testing::randn64({4, 9}, 3);
  tg::Tensor target = testing::randn64({4, 9}, 4, false);
  step([&](const tg::Tensor& in) { return seq(in); }, x, target);
  const auto plain = grads_of(seq, x);
  zero_all(seq, x);
  {
    tg::autograd::SaveOnCpuGuard on_cpu;
    step([&](const tg::Tensor& in) { return seq(in); }, x, target);
  }
  CHECK(grads_of(seq, x) == plain);
}

TEST_CASE("cuda memory: SaveOnCpuGuard moves saved activations off the GPU with identical gradients") {
  TG_NEED_CUDA();
  auto model = mlp(4, 64, tg::kFloat32, 0.2, 2);
  tg::nn::Sequential& seq = *model;
  seq.to(tg::Device::cuda());
  tg::manual_seed(3);
  tg::Tensor x = tg::randn({256, 64}).cuda();
  tg::Tensor target = tg::randn({256, 64}).cuda();
  auto run = [&](bool offload) {
    zero_all(seq, x);
    std::unique_ptr<tg::autograd::SaveOnCpuGuard> guard;
    if (offload) guard = std::make_unique<tg::autograd::SaveOnCpuGuard>();
    tg::manual_seed(1234);
    tg::cuda::synchronize();
    const std::size_t before = tg::cuda::memory_allocated();
    tg::Tensor loss = tg::mse_loss(seq(x), target);
    tg::cuda::synchronize();
    const std::size_t held = tg::cuda::memory_allocated() - before;   // what the graph keeps on the GPU
    guard.reset();
    loss.backward();
    return std::make_pair(grads_of(seq, x), held);
  };
  const auto plain = run(false);
  const auto off = run(true);
  CHECK(off.first == plain.first);
  MESSAGE("GPU bytes held by the graph: " << plain.second << " plain, " << off.second << " with SaveOnCpuGuard");
  CHECK(off.second < plain.second / 2);
}

// ------------------------------------------------------------------------------------------------
// Introspection and out-of-memory reports

TEST_CASE("memory: the CPU statistics follow allocations, peaks reset, the cache empties") {
  tg::memory::empty_cache();
  const std::size_t base = tg::memory::memory_allocated();
  CHECK(tg::memory::memory_reserved() == base);   // nothing cached after empty_cache
  tg::memory::reset_peak_memory_stats();
  CHECK(tg::memory::max_memory_allocated() == base);
  CHECK(tg::memory::max_memory_reserved() == base);
  const tg::memory::MemoryStats s0 = tg::memory::memory_stats();
  {
    tg::Tensor a = tg::empty({1 << 20});   // 4 MiB, a size the allocator rounds to itself
    CHECK(tg::memory::memory_allocated() == base + (std::size_t(4) << 20));
    CHECK(tg::memory::max_memory_allocated() == base + (std::size_t(4) << 20));
    const tg::memory::MemoryStats s1 = tg::memory::memory_stats();
    CHECK(s1.blocks == s0.blocks + 1);
    CHECK(s1.allocations_total == s0.allocations_total + 1);
    CHECK(s1.allocated_total == s0.allocated_total + (std::size_t(4) << 20));
  }
  CHECK(tg::memory::memory_allocated() == base);
  CHECK(tg::memory::max_memory_allocated() == base + (std::size_t(4) << 20));
  CHECK(tg::memory::memory_reserved() == base + (std::size_t(4) << 20));   // the block is cached
  tg::memory::reset_peak_memory_stats();
  CHECK(tg::memory::max_memory_allocated() == base);
  tg::memory::empty_cache();
  CHECK(tg::memory::memory_reserved() == base);
  CHECK(tg::memory::memory_stats().released_total >= s0.released_total + (std::size_t(4) << 20));
}

TEST_CASE("memory: memory_summary is a table like PyTorch's") {
  tg::Tensor keep = tg::empty({3 << 18});   // 3 MiB live
  const std::string s = tg::memory::memory_summary();
  CHECK(s.find("tensorgrad CPU memory summary") != std::string::npos);
  CHECK(s.find("| Metric                |  Cur Usage | Peak Usage |  Tot Alloc |  Tot Freed |") != std::string::npos);
  CHECK(s.find("| Allocated memory      |") != std::string::npos);
  CHECK(s.find("| Reserved memory       |") != std::string::npos);
  CHECK(s.find(tg::memory::format_bytes(tg::memory::memory_allocated())) != std::string::npos);
  CHECK(tg::memory::format_bytes(512) == "512 B");
  CHECK(tg::memory::format_bytes(786431) == "786431 B");   // torch's _format_size: switches at 768 of a unit
  CHECK(tg::memory::format_bytes(786432) == "768 KiB");
  CHECK(tg::memory::format_bytes(std::size_t(3) << 30) == "3072 MiB");
}

TEST_CASE("memory: CUDA introspection without a usable GPU raises DeviceError") {
  if (tg::cuda::is_available()) {
    const auto [free, total] = tg::cuda::mem_get_info();
    CHECK(total > 0);
    CHECK(free <= total);
    CHECK(tg::cuda::memory_summary().find("tensorgrad CUDA, device ID 0 memory summary") != std::string::npos);
    return;
  }
  TG_CHECK_THROWS(tg::cuda::mem_get_info(), tg::DeviceError, "cuda:0");
  TG_CHECK_THROWS(tg::cuda::memory_summary(), tg::DeviceError, "cuda:0");
  CHECK(tg::cuda::memory_stats().allocated == 0);   // like memory_allocated: zero without a GPU
  CHECK(tg::cuda::max_memory_reserved() == 0);
}

TEST_CASE("cuda memory: mem_get_info, memory_stats and memory_summary of a device in use") {
  TG_NEED_CUDA();
  tg::Tensor a = tg::randn({1 << 20}).cuda();
  tg::cuda::synchronize();
  const auto [free, total] = tg::cuda::mem_get_info();
  CHECK(total > 0);
  CHECK(free <= total);
  const tg::memory::MemoryStats s = tg::cuda::memory_stats();
  CHECK(s.allocated == tg::cuda::memory_allocated());
  CHECK(s.allocated >= std::size_t(4) << 20);
  CHECK(s.reserved == tg::cuda::memory_reserved());
  CHECK(tg::cuda::max_memory_reserved() >= s.reserved);
  const std::string table = tg::cuda::memory_summary();
  CHECK(table.find("tensorgrad CUDA, device ID 0 memory summary") != std::string::npos);
  CHECK(table.find(tg::memory::format_bytes(s.allocated)) != std::string::npos);
  TG_CHECK_THROWS(tg::cuda::mem_get_info(63), tg::DeviceError, "cuda:63");
}

TEST_CASE("memory: a CPU out-of-memory frees the cache, retries once, and reports what is held") {
  { tg::Tensor cached = tg::empty({1 << 20}); }   // 4 MiB into the cache
  REQUIRE(tg::memory::memory_reserved() > tg::memory::memory_allocated());
  const tg::memory::MemoryStats before = tg::memory::memory_stats();
  std::string message;
  try {
    tg::Tensor huge = tg::empty({int64_t(1) << 38});   // 1 TiB
  } catch (const tg::OutOfMemoryError& e) {
    message = e.what();
  }
  REQUIRE_FALSE(message.empty());
  const tg::memory::MemoryStats after = tg::memory::memory_stats();
  CHECK(after.alloc_retries == before.alloc_retries + 1);
  CHECK(after.ooms == before.ooms + 1);
  CHECK(after.reserved == after.allocated);   // the cache was given back before the retry
  CHECK(message.find("CPU out of memory: tried to allocate 1099511627776 bytes (1024 GiB") != std::string::npos);
  CHECK(message.find("after freeing the allocator's cache and retrying") != std::string::npos);
  CHECK(message.find("cpu: allocated ") != std::string::npos);
  CHECK(message.find("peak allocated ") != std::string::npos);
  CHECK(message.find("tg::checkpoint") != std::string::npos);
}

TEST_CASE("memory: an out-of-memory report lists the largest live tensors with their shape and creating op") {
  tg::Tensor w = tg::randn({512, 256});   // 512 KiB, made outside any op
  w.set_requires_grad(true);
  tg::Tensor x = tg::randn({128, 512});
  tg::Tensor h = tg::matmul(x, w);                    // [128, 256], 128 KiB
  tg::Tensor big = tg::relu(tg::randn({1024, 1024}));  // 4 MiB
  tg::Tensor view = big.reshape({1024 * 1024});        // shares relu's storage: not a second entry
  tg::sum(h).backward();                                // w.grad: [512, 256] from matmul's backward
  tg::Tensor small = tg::exp(tg::randn({16}));        // below the reported size: not listed
  std::string message;
  try {
    tg::Tensor huge = tg::empty({int64_t(1) << 38});
  } catch (const tg::OutOfMemoryError& e) {
    message = e.what();
  }
  REQUIRE_FALSE(message.empty());
  CAPTURE(message);
  const std::size_t list = message.find("largest live tensors");
  REQUIRE(list != std::string::npos);
  const std::size_t relu = message.find("4096 KiB float32 [1024, 1024] on cpu from relu");
  const std::size_t grad = message.find("524288 B float32 [512, 256] on cpu from matmul (backward)");
  const std::size_t leaf = message.find("524288 B float32 [512, 256] on cpu from no op");
  const std::size_t out = message.find("131072 B float32 [128, 256] on cpu from matmul");
  CHECK(relu != std::string::npos);
  CHECK(grad != std::string::npos);
  CHECK(leaf != std::string::npos);
  CHECK(list < relu);
  CHECK(relu < std::min(grad, leaf));   // largest first
  // Five entries at most: x (256 KiB) is the fourth; h (128 KiB) is fifth or pushed out by larger
  // tensors of other test cases still alive, never listed before the larger ones.
  if (out != std::string::npos) CHECK(out > std::max(grad, leaf));
  CHECK(message.find("[1048576]") == std::string::npos);   // the view is not a storage of its own
  CHECK(message.find("[16]") == std::string::npos);
  CHECK(message.find("from exp") == std::string::npos);
}
