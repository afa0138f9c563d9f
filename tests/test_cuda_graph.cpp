// tests/test_cuda_graph.cpp: CUDA graphs (tg::cuda::CUDAGraph, GraphCapture; Note [CUDA graphs] in
// backend/cuda/graph.cu). A captured training step replayed N times gives the bits of N eager steps
// (with new inputs copied in before each replay, with dropout drawing fresh masks, with eager work
// allocating in between), a replay is one launch, and what a capture cannot hold (a host
// synchronization, a step whose scalars would freeze) raises a tg::Error and leaves the device usable.
// On the CUDA emulator in CI (both stream modes); without a GPU only the DeviceError case runs.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "testing.h"

using tg::Device;
using tg::Tensor;

namespace {

const Device kGpu = Device::cuda(0);

/// A small MLP, optionally with dropout between its layers.
struct Mlp : tg::nn::Module {
  std::shared_ptr<tg::nn::Linear> fc1, fc2;
  double p;
  explicit Mlp(double dropout) : fc1(std::make_shared<tg::nn::Linear>(8, 16)), fc2(std::make_shared<tg::nn::Linear>(16, 4)), p(dropout) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) {
    Tensor h = tg::relu(fc1->forward(x));
    if (p > 0) h = tg::dropout(h, p, is_training());
    return fc2->forward(h);
  }
};

/// Two MLPs with the same parameters on the GPU.
std::pair<std::shared_ptr<Mlp>, std::shared_ptr<Mlp>> twin_mlps(double dropout) {
  tg::manual_seed(11);
  auto a = std::make_shared<Mlp>(dropout);
  tg::manual_seed(11);
  auto b = std::make_shared<Mlp>(dropout);
  a->to(kGpu);
  b->to(kGpu);
  return {a, b};
}

/// The batch of step k (CPU tensors, different every step).
std::pair<Tensor, Tensor> batch(int k) {
  tg::manual_seed(1000 + static_cast<uint64_t>(k));
  return {tg::randn({5, 8}), tg::randn({5, 4})};
}

/// The static input buffers of a captured MLP step: feed(k) copies step k's batch into them.
struct StaticBatch {
  Tensor x = tg::zeros({5, 8}).to(kGpu), y = tg::zeros({5, 4}).to(kGpu);
  void feed(int k) {
    auto [xk, yk] = batch(k);
    x.copy_(xk);
    y.copy_(yk);
  }
};

/// One training step of m on (x, y): zero_grad, the MSE loss, backward, opt.step(); the loss.
Tensor mlp_step(Mlp& m, tg::optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
  opt.zero_grad();
  Tensor loss = tg::mse_loss(m.forward(x), y);
  loss.backward();
  opt.step();
  return loss;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_same_bits(const Tensor& a, const Tensor& b) {
  const std::vector<float> va = a.to(Device::cpu()).to_vector<float>();
  const std::vector<float> vb = b.to(Device::cpu()).to_vector<float>();
  REQUIRE(va.size() == vb.size());
  for (std::size_t i = 0; i < va.size(); ++i) {
    CAPTURE(i);
    CHECK(same_bits(va[i], vb[i]));
  }
}

void check_same_parameters(Mlp& a, Mlp& b) {
  const std::vector<Tensor> pa = a.parameters(), pb = b.parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(i);
    check_same_bits(pa[i], pb[i]);
  }
}

}  // namespace

TEST_CASE("cuda graphs: without a usable GPU capture_begin raises DeviceError") {
  if (tg::cuda::is_available()) return;   // the GPU cases below cover it
  tg::cuda::CUDAGraph graph;
  CHECK_THROWS_AS(graph.capture_begin(), tg::DeviceError);
  CHECK_THROWS_AS(graph.replay(), tg::Error);   // nothing captured
  CHECK_FALSE(tg::cuda::is_current_stream_capturing());
}

TEST_CASE("cuda graphs: N replays of a captured SGD training step equal N eager steps bit for bit") {
  TG_NEED_CUDA();
  const auto twins = twin_mlps(0.0);
  const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second;
  tg::optim::SGD opt_eager(eager->parameters(), tg::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-3));
  tg::optim::SGD opt_captured(captured->parameters(), tg::optim::SGDOptions(0.05).momentum(0.9).weight_decay(1e-3));
  StaticBatch in;   // the static inputs
  const Tensor& x = in.x;
  const Tensor& y = in.y;
  constexpr int kSteps = 6;
  std::vector<float> eager_losses;
  auto eager_step = [&](int k) {
    auto [xk, yk] = batch(k);
    eager_losses.push_back(mlp_step(*eager, opt_eager, xk.to(kGpu), yk.to(kGpu)).item<float>());
  };
  Tensor loss;
  auto captured_step = [&] { loss = mlp_step(*captured, opt_captured, x, y); };
  // Step 0 eagerly on both (the warm-up creates the momentum buffers), then the capture.
  eager_step(0);
  in.feed(0);
  captured_step();
  CHECK(same_bits(loss.item<float>(), eager_losses[0]));
  tg::cuda::CUDAGraph graph;
  const uint64_t eager_launches_before = tg::cuda::detail::launch_count();
  {
    tg::cuda::GraphCapture capture(graph);
    CHECK(tg::cuda::is_current_stream_capturing());
    captured_step();
  }
  CHECK_FALSE(tg::cuda::is_current_stream_capturing());
  const uint64_t captured_launches = tg::cuda::detail::launch_count() - eager_launches_before;
  MESSAGE("captured step: " << graph.num_nodes() << " graph nodes from " << captured_launches << " launches");
  CHECK(graph.num_nodes() > 0);
  CHECK(graph.num_nodes() <= captured_launches);   // the device sync before the capture counts one copy
  for (int k = 1; k < kSteps; ++k) {
    CAPTURE(k);
    eager_step(k);   // eager work (and its allocations) between replays
    in.feed(k);
    const uint64_t before = tg::cuda::detail::launch_count();
    graph.replay();
    CHECK(tg::cuda::detail::launch_count() - before == 1);   // a replay is one launch
    CHECK(same_bits(loss.item<float>(), eager_losses[static_cast<std::size_t>(k)]));
  }
  check_same_parameters(*eager, *captured);
  for (const Tensor& p : captured->parameters()) CHECK(p.grad().defined());
  graph.reset();
  CHECK(graph.num_nodes() == 0);
  CHECK_THROWS_AS(graph.replay(), tg::Error);
}

namespace {

/// The gradient norm check_captured_clipping clips to: among its steps' norms.
constexpr double kClipMaxNorm = 1.0;

/// Eager steps that clip with clip_grad_norm (the double) against replays of one captured step that
/// clips with clip_grad_norm_tensor, each with an optimizer of type Opt built from options: the norms
/// and the parameters keep the same bits over steps where the clipping engages and steps where it
/// does not. `then` continues on the captured model after the replays.
template <class Opt, class Options>
void check_captured_clipping(const Options& options,
                             const std::function<void(tg::cuda::CUDAGraph&, Mlp&, Opt&, const Tensor&, const Tensor&)>& then) {
  const auto twins = twin_mlps(0.0);
  const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second;
  Opt opt_eager(eager->parameters(), options), opt_captured(captured->parameters(), options);
  constexpr int kSteps = 6;
  std::vector<double> eager_norms;
  auto eager_step = [&](int k) {
    auto [xk, yk] = batch(k);
    opt_eager.zero_grad();
    tg::mse_loss(eager->forward(xk.to(kGpu)), yk.to(kGpu)).backward();
    eager_norms.push_back(tg::optim::clip_grad_norm(eager->parameters(), kClipMaxNorm));
    opt_eager.step();
  };
  StaticBatch in;
  const Tensor& x = in.x;
  const Tensor& y = in.y;
  Tensor norm;
  auto captured_step = [&] {
    opt_captured.zero_grad();
    tg::mse_loss(captured->forward(x), y).backward();
    norm = tg::optim::clip_grad_norm_tensor(captured->parameters(), kClipMaxNorm);   // on the device: capture-safe
    opt_captured.step();
  };
  eager_step(0);
  in.feed(0);
  captured_step();   // the warm-up
  CHECK(same_bits(norm.item<float>(), static_cast<float>(eager_norms[0])));
  tg::cuda::CUDAGraph graph;
  {
    tg::cuda::GraphCapture capture(graph);
    captured_step();
  }
  int clipped = 0, unclipped = 0;
  for (int k = 1; k < kSteps; ++k) {
    CAPTURE(k);
    eager_step(k);
    in.feed(k);
    graph.replay();
    const double eager_norm = eager_norms[static_cast<std::size_t>(k)];
    (eager_norm > kClipMaxNorm ? clipped : unclipped) += 1;
    CHECK(same_bits(norm.item<float>(), static_cast<float>(eager_norm)));
  }
  MESSAGE("clipped on " << clipped << " replays, not on " << unclipped);
  CHECK(clipped > 0);
  CHECK(unclipped > 0);
  check_same_parameters(*eager, *captured);
  if (then) then(graph, *captured, opt_captured, x, y);
}

}  // namespace

TEST_CASE("cuda graphs: a captured step that clips its gradients on the device replays as the eager steps") {
  TG_NEED_CUDA();
  check_captured_clipping<tg::optim::Adam>(tg::optim::AdamOptions(1e-2).capturable(true), {});
  check_captured_clipping<tg::optim::SGD>(
      tg::optim::SGDOptions(0.05),
      [](tg::cuda::CUDAGraph& graph, Mlp& captured, tg::optim::SGD& opt_captured, const Tensor& x, const Tensor& y) {
        SUBCASE("clip_grad_norm returns a double: refused inside a capture before any work, naming the tensor form") {
          tg::cuda::CUDAGraph other;
          other.capture_begin();
          opt_captured.zero_grad();
          tg::mse_loss(captured.forward(x), y).backward();
          CHECK_THROWS_WITH_AS(tg::optim::clip_grad_norm(captured.parameters(), kClipMaxNorm),
                               doctest::Contains("clip_grad_norm_tensor"), tg::Error);
          CHECK_THROWS_WITH_AS(tg::nn::utils::clip_grad_norm_(captured.parameters(), kClipMaxNorm),
                               doctest::Contains("clip_grad_norm (nn::utils::clip_grad_norm_): inside a CUDA graph "
                                                 "capture"),
                               tg::Error);
          other.capture_end();   // the refusals queued nothing: the capture is fine
          CHECK(other.num_nodes() > 0);
        }
        SUBCASE("a captured SGD step keeps its lr: a change before a replay is refused, not ignored") {
          opt_captured.param_groups()[0].options().set_lr(0.01);
          CHECK_THROWS_WITH_AS(graph.replay(), doctest::Contains("keeps the lr it was captured with"), tg::Error);
          opt_captured.param_groups()[0].options().set_lr(0.05);
          graph.replay();
        }
      });
}

TEST_CASE("cuda graphs: dropout inside a capture draws fresh masks at each replay, those of the eager steps") {
  TG_NEED_CUDA();
  const auto twins = twin_mlps(0.5);
  const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second;
  eager->train();
  captured->train();
  tg::optim::SGD opt_eager(eager->parameters(), tg::optim::SGDOptions(0.1));
  tg::optim::SGD opt_captured(captured->parameters(), tg::optim::SGDOptions(0.1));
  auto [x_cpu, y_cpu] = batch(0);   // one batch for every step: only the masks change the loss
  const Tensor x = x_cpu.to(kGpu), y = y_cpu.to(kGpu);
  constexpr int kSteps = 5;
  tg::manual_seed(77);
  std::vector<float> eager_losses;
  for (int k = 0; k < kSteps; ++k) eager_losses.push_back(mlp_step(*eager, opt_eager, x, y).item<float>());
  CHECK(eager_losses[1] != eager_losses[2]);   // the masks do change from step to step
  tg::manual_seed(77);
  Tensor loss;
  auto step = [&] { loss = mlp_step(*captured, opt_captured, x, y); };
  step();   // warm-up: eager step 0
  CHECK(same_bits(loss.item<float>(), eager_losses[0]));
  const tg::RngState before_capture = tg::get_rng_state();
  tg::cuda::CUDAGraph graph;
  graph.capture_begin();
  step();
  graph.capture_end();
  CHECK(tg::get_rng_state().offset == before_capture.offset);   // the capture drew nothing yet
  for (int k = 1; k < kSteps; ++k) {
    CAPTURE(k);
    graph.replay();
    CHECK(same_bits(loss.item<float>(), eager_losses[static_cast<std::size_t>(k)]));
  }
  CHECK(tg::get_rng_state().offset > before_capture.offset);   // each replay advanced the generator
  check_same_parameters(*eager, *captured);
}

TEST_CASE("cuda graphs: a host synchronization inside a capture raises CudaError, never hangs, and the device stays usable") {
  TG_NEED_CUDA();
  const Tensor a = tg::ones({4}).to(kGpu);
  SUBCASE("item() inside capture_begin/capture_end: both raise") {
    tg::cuda::CUDAGraph graph;
    graph.capture_begin();
    const Tensor s = (a * 2).sum();
    CHECK_THROWS_WITH_AS(s.item<float>(), doctest::Contains("inside a CUDA graph capture"), tg::CudaError);
    CHECK_THROWS_WITH_AS(graph.capture_end(), doctest::Contains("item()"), tg::CudaError);
    CHECK_THROWS_AS(graph.replay(), tg::Error);
  }
  SUBCASE("to(cpu) inside a GraphCapture scope: the capture is abandoned and the error goes on") {
    tg::cuda::CUDAGraph graph;
    auto capture_with_copy = [&] {
      tg::cuda::GraphCapture capture(graph);
      const Tensor b = a + 1;
      b.to(Device::cpu());
    };
    CHECK_THROWS_AS(capture_with_copy(), tg::CudaError);
    CHECK(graph.num_nodes() == 0);
  }
  SUBCASE("tg::cuda::synchronize() and a copy from host memory") {
    tg::cuda::CUDAGraph graph;
    graph.capture_begin();
    CHECK_THROWS_AS(tg::cuda::synchronize(), tg::CudaError);
    CHECK_THROWS_AS(tg::ones({3}).to(kGpu), tg::CudaError);
    CHECK_THROWS_AS(graph.capture_end(), tg::CudaError);
  }
  CHECK_FALSE(tg::cuda::is_current_stream_capturing());
  CHECK((a * 3).sum().item<float>() == 12.0f);   // an ordinary stream again
}

TEST_CASE("cuda graphs: steps whose scalars would freeze in the graph are refused inside a capture") {
  TG_NEED_CUDA();
  const std::shared_ptr<Mlp> model = twin_mlps(0.0).first;
  const Tensor x = tg::randn({5, 8}).to(kGpu), y = tg::randn({5, 4}).to(kGpu);
  auto backward = [&] {
    model->zero_grad();
    tg::mse_loss(model->forward(x), y).backward();
  };
  SUBCASE("Adam without capturable: its step count and bias corrections") {
    tg::optim::Adam adam(model->parameters(), tg::optim::AdamOptions(1e-3));
    backward();
    adam.step();   // warm-up
    tg::cuda::CUDAGraph graph;
    graph.capture_begin();
    backward();
    CHECK_THROWS_WITH_AS(adam.step(), doctest::Contains("capturable(true)"), tg::Error);
    graph.capture_end();   // nothing illegal reached the stream: the capture itself is fine
    CHECK(graph.num_nodes() > 0);
  }
  SUBCASE("capturable Adam before its first step: the state would be created at every replay") {
    tg::optim::Adam adam(model->parameters(), tg::optim::AdamOptions(1e-3).capturable(true));
    tg::cuda::CUDAGraph graph;
    graph.capture_begin();
    backward();
    CHECK_THROWS_WITH_AS(adam.step(), doctest::Contains("warm-up"), tg::Error);
    graph.capture_end();
  }
  SUBCASE("RMSprop and the other optimizers with host-side scalars") {
    tg::optim::RMSprop rms(model->parameters(), tg::optim::RMSpropOptions(1e-3));
    backward();
    rms.step();
    tg::cuda::CUDAGraph graph;
    graph.capture_begin();
    backward();
    CHECK_THROWS_WITH_AS(rms.step(), doctest::Contains("inside a CUDA graph capture"), tg::Error);
    graph.capture_end();
  }
  SUBCASE("SGD with momentum before its first step: the buffer would be created at every replay") {
    tg::optim::SGD sgd(model->parameters(), tg::optim::SGDOptions(0.1).momentum(0.9));
    tg::cuda::CUDAGraph graph;
    graph.capture_begin();
    backward();
    CHECK_THROWS_WITH_AS(sgd.step(), doctest::Contains("warm-up"), tg::Error);
    graph.capture_end();
  }
  SUBCASE("misuse of the graph object") {
    tg::cuda::CUDAGraph graph;
    CHECK_THROWS_AS(graph.capture_end(), tg::Error);
    graph.capture_begin();
    CHECK_THROWS_AS(graph.capture_begin(), tg::Error);
    tg::cuda::CUDAGraph other;
    CHECK_THROWS_AS(other.capture_begin(), tg::CudaError);   // one capture per device
    CHECK_THROWS_AS(graph.replay(), tg::Error);
    graph.capture_end();
    CHECK_THROWS_AS(graph.capture_begin(), tg::Error);   // holds a capture: reset() first
    graph.reset();
    graph.capture_begin();
    graph.capture_end();
  }
}

TEST_CASE("cuda graphs: memory captured into a pool is kept from eager allocations until the graph is reset") {
  TG_NEED_CUDA();
  Tensor x = tg::full({1000}, 2.0f).to(kGpu);
  Tensor out;
  tg::cuda::CUDAGraph graph;
  {
    tg::cuda::GraphCapture capture(graph);
    const Tensor t = x * 3;   // a temporary of the graph, freed during the capture
    out = t + 1;              // the graph's output, alive after it
  }
  // Eager tensors of the same size, made and kept now, must not land on the graph's temporaries.
  std::vector<Tensor> eager;
  for (int i = 0; i < 4; ++i) eager.push_back(tg::full({1000}, static_cast<float>(i)).to(kGpu));
  x.fill_(5.0f);
  graph.replay();
  CHECK(out.sum().item<float>() == 16000.0f);   // (5 * 3 + 1) * 1000
  for (int i = 0; i < 4; ++i) CHECK(eager[static_cast<std::size_t>(i)].sum().item<float>() == 1000.0f * static_cast<float>(i));
  // A second graph in the same pool, replayed after the first, reads its output.
  tg::cuda::CUDAGraph second;
  Tensor doubled;
  {
    tg::cuda::GraphCapture capture(second, graph.pool());
    doubled = out * 2;
  }
  x.fill_(1.0f);
  graph.replay();
  second.replay();
  CHECK(doubled.sum().item<float>() == 8000.0f);   // (1 * 3 + 1) * 2 * 1000
  second.reset();
  graph.reset();
}

// Note [Captured Adam]: capturable AdamW, captured once, replayed with an ExponentialLR stepping between
// replays, gives the bits of the same eager steps (whose optimizer is not capturable), and a replay
// is the graph's launch plus the one launch that writes the step values.
TEST_CASE("cuda graphs: a captured capturable AdamW step follows its step count and a scheduler's lr, bit for bit") {
  TG_NEED_CUDA();
  const auto twins = twin_mlps(0.0);
  const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second;
  tg::optim::AdamW opt_eager(eager->parameters(), tg::optim::AdamWOptions(1e-2).weight_decay(0.1));
  tg::optim::AdamW opt_captured(captured->parameters(), tg::optim::AdamWOptions(1e-2).weight_decay(0.1).capturable(true));
  tg::optim::ExponentialLR sched_eager(opt_eager, 0.7), sched_captured(opt_captured, 0.7);
  constexpr int kSteps = 6;
  std::vector<float> eager_losses;
  for (int k = 0; k < kSteps; ++k) {
    auto [xk, yk] = batch(k);
    eager_losses.push_back(mlp_step(*eager, opt_eager, xk.to(kGpu), yk.to(kGpu)).item<float>());
    sched_eager.step();
  }
  StaticBatch in;
  Tensor loss;
  auto step = [&] { loss = mlp_step(*captured, opt_captured, in.x, in.y); };
  in.feed(0);
  step();   // warm-up: creates the state
  sched_captured.step();
  CHECK(same_bits(loss.item<float>(), eager_losses[0]));
  tg::cuda::CUDAGraph graph;
  {
    tg::cuda::GraphCapture capture(graph);
    step();
  }
  for (int k = 1; k < kSteps; ++k) {
    CAPTURE(k);
    in.feed(k);
    const uint64_t before = tg::cuda::detail::launch_count();
    graph.replay();
    CHECK(tg::cuda::detail::launch_count() - before == 2);   // the step values' launch, then the graph
    sched_captured.step();
    CHECK(same_bits(loss.item<float>(), eager_losses[static_cast<std::size_t>(k)]));
  }
  check_same_parameters(*eager, *captured);
  const auto state_eager = opt_eager.state(), state_captured = opt_captured.state();
  for (const auto& [name, t] : state_captured)
    if (name.rfind("step.", 0) == 0) CHECK(t.item() == static_cast<double>(kSteps));   // replays counted as steps
  CHECK(state_eager.size() == state_captured.size());
}

TEST_CASE("cuda graphs: replaying a graph whose captured optimizer was destroyed raises") {
  TG_NEED_CUDA();
  const std::shared_ptr<Mlp> model = twin_mlps(0.0).first;
  const Tensor x = tg::randn({5, 8}).to(kGpu), y = tg::randn({5, 4}).to(kGpu);
  tg::cuda::CUDAGraph graph;
  {
    auto adam = std::make_unique<tg::optim::Adam>(model->parameters(), tg::optim::AdamOptions(1e-3).capturable(true));
    model->zero_grad();
    tg::mse_loss(model->forward(x), y).backward();
    adam->step();
    tg::cuda::GraphCapture capture(graph);
    adam->step();
  }
  CHECK_THROWS_WITH_AS(graph.replay(), doctest::Contains("destroyed"), tg::Error);
}

namespace {

/// A small pre-norm transformer: input projection, one block (layer_norm, causal attention with its
/// projections, GELU MLP, residuals), final layer_norm and a head (the character transformer's shape).
struct TinyTransformer : tg::nn::Module {
  int64_t heads;
  std::shared_ptr<tg::nn::Linear> in, qkv, proj, fc1, fc2, head;
  std::shared_ptr<tg::nn::LayerNorm> ln1, ln2, lnf;
  TinyTransformer(int64_t width, int64_t h, int64_t classes)
      : heads(h),
        in(std::make_shared<tg::nn::Linear>(classes, width)),
        qkv(std::make_shared<tg::nn::Linear>(width, 3 * width)),
        proj(std::make_shared<tg::nn::Linear>(width, width)),
        fc1(std::make_shared<tg::nn::Linear>(width, 4 * width)),
        fc2(std::make_shared<tg::nn::Linear>(4 * width, width)),
        head(std::make_shared<tg::nn::Linear>(width, classes)),
        ln1(std::make_shared<tg::nn::LayerNorm>(std::vector<int64_t>{width})),
        ln2(std::make_shared<tg::nn::LayerNorm>(std::vector<int64_t>{width})),
        lnf(std::make_shared<tg::nn::LayerNorm>(std::vector<int64_t>{width})) {
    register_module("in", in);
    register_module("qkv", qkv);
    register_module("proj", proj);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
    register_module("head", head);
    register_module("ln1", ln1);
    register_module("ln2", ln2);
    register_module("lnf", lnf);
  }
  /// x (B, L, classes) -> logits (B * L, classes)
  Tensor forward(const Tensor& x) {
    const int64_t B = x.size(0), L = x.size(1);
    const Tensor h0 = in->forward(x);
    const int64_t D = h0.size(2);
    const Tensor all = qkv->forward(ln1->forward(h0)).reshape({B, L, 3, heads, D / heads}).permute({2, 0, 3, 1, 4});
    const Tensor y = tg::scaled_dot_product_attention(all.select(0, 0), all.select(0, 1), all.select(0, 2), {}, 0.0, true);
    const Tensor h1 = h0 + proj->forward(y.transpose(1, 2).reshape({B, L, D}));
    const Tensor h2 = h1 + fc2->forward(tg::gelu(fc1->forward(ln2->forward(h1))));
    return head->forward(lnf->forward(h2)).reshape({B * L, -1});
  }
};

bool on_emulator() { return tg::cuda::info().find("CUDA emulator") != std::string::npos; }

}  // namespace

// A transformer training step (AdamW capturable, cross-entropy over the next token) captured and
// replayed against the same eager steps, in float32 and under bfloat16 autocast. On the emulator the
// replays give the same bits; on a GPU, where a kernel's atomics may add in another order from run to
// run, the parameters agree within a tolerance of the computation's rounding.
TEST_CASE("cuda graphs: a captured transformer training step equals the eager steps, float32 and bfloat16 autocast") {
  TG_NEED_CUDA();
  const bool exact = on_emulator();
  for (bool autocast : {false, true}) {
    CAPTURE(autocast);
    constexpr int64_t kB = 2, kL = 8, kClasses = 12;
    tg::manual_seed(5);
    auto eager = std::make_shared<TinyTransformer>(16, 2, kClasses);
    tg::manual_seed(5);
    auto captured = std::make_shared<TinyTransformer>(16, 2, kClasses);
    eager->to(kGpu);
    captured->to(kGpu);
    tg::optim::AdamW opt_eager(eager->parameters(), tg::optim::AdamWOptions(3e-3));
    tg::optim::AdamW opt_captured(captured->parameters(), tg::optim::AdamWOptions(3e-3).capturable(true));
    auto data = [&](int k) {   // inputs and a class per position
      tg::manual_seed(500 + static_cast<uint64_t>(k));
      const Tensor x = tg::randn({kB, kL, kClasses});
      const Tensor y = tg::randint(0, kClasses, {kB * kL});
      return std::make_pair(x, y);
    };
    auto loss_of = [&](TinyTransformer& m, const Tensor& x, const Tensor& y) {
      std::optional<tg::amp::AutocastGuard> guard;
      if (autocast) guard.emplace(kGpu, tg::kBFloat16);
      return tg::cross_entropy(m.forward(x), y);
    };
    constexpr int kSteps = 4;
    std::vector<float> eager_losses;
    for (int k = 0; k < kSteps; ++k) {
      auto [x, y] = data(k);
      opt_eager.zero_grad();
      const Tensor loss = loss_of(*eager, x.to(kGpu), y.to(kGpu));
      loss.backward();
      opt_eager.step();
      eager_losses.push_back(loss.item<float>());
    }
    Tensor xs = tg::zeros({kB, kL, kClasses}).to(kGpu), ys = tg::zeros({kB * kL}, tg::kInt64).to(kGpu);
    Tensor loss;
    auto step = [&] {
      opt_captured.zero_grad();
      loss = loss_of(*captured, xs, ys);
      loss.backward();
      opt_captured.step();
    };
    auto feed = [&](int k) {
      auto [x, y] = data(k);
      xs.copy_(x);
      ys.copy_(y);
    };
    feed(0);
    step();
    tg::cuda::CUDAGraph graph;
    {
      tg::cuda::GraphCapture capture(graph);
      step();
    }
    for (int k = 1; k < kSteps; ++k) {
      feed(k);
      graph.replay();
      const float got = loss.item<float>(), want = eager_losses[static_cast<std::size_t>(k)];
      CAPTURE(k);
      if (exact) CHECK(same_bits(got, want));
      else CHECK(got == doctest::Approx(want).epsilon(autocast ? 1e-2 : 1e-4));
    }
    const std::vector<Tensor> pa = eager->parameters(), pb = captured->parameters();
    for (std::size_t i = 0; i < pa.size(); ++i) {
      CAPTURE(i);
      if (exact) {
        check_same_bits(pa[i], pb[i]);
      } else {
        const double diff = (pa[i] - pb[i]).abs().max().item<double>();
        CHECK(diff <= (autocast ? 1e-2 : 1e-4));
      }
    }
  }
}

// Note [Captured SGD] in optim/optimizer.cpp: a capturable SGD group reads its lr on the device, so a
// scheduler stepping between replays changes the replayed update exactly as it changes eager steps.
TEST_CASE("cuda graphs: a captured capturable SGD step follows a scheduler's lr between replays, bit for bit") {
  TG_NEED_CUDA();
  struct Config {
    const char* name;
    tg::optim::SGDOptions options;
    bool step_lr;   // StepLR(2, 0.5), else ExponentialLR(0.8)
  };
  const std::vector<Config> configs = {
      {"momentum, StepLR", tg::optim::SGDOptions(0.05).momentum(0.9).capturable(true), true},
      {"nesterov, weight_decay, ExponentialLR",
       tg::optim::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-3).capturable(true), false},
      {"dampening, weight_decay, StepLR",
       tg::optim::SGDOptions(0.05).momentum(0.8).dampening(0.3).weight_decay(1e-2).capturable(true), true},
      {"no momentum, ExponentialLR", tg::optim::SGDOptions(0.1).capturable(true), false},
  };
  for (const Config& config : configs) {
    CAPTURE(config.name);
    const auto twins = twin_mlps(0.0);
    const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second;
    tg::optim::SGD opt_eager(eager->parameters(), config.options);
    tg::optim::SGD opt_captured(captured->parameters(), config.options);
    auto scheduler = [&](tg::optim::SGD& opt) -> std::unique_ptr<tg::optim::LRScheduler> {
      if (config.step_lr) return std::make_unique<tg::optim::StepLR>(opt, 2, 0.5);
      return std::make_unique<tg::optim::ExponentialLR>(opt, 0.8);
    };
    const auto sched_eager = scheduler(opt_eager), sched_captured = scheduler(opt_captured);
    constexpr int kSteps = 6;
    std::vector<float> eager_losses;
    std::vector<double> eager_lrs;
    for (int k = 0; k < kSteps; ++k) {
      auto [xk, yk] = batch(k);
      eager_lrs.push_back(opt_eager.lr());
      eager_losses.push_back(mlp_step(*eager, opt_eager, xk.to(kGpu), yk.to(kGpu)).item<float>());
      sched_eager->step();
    }
    CHECK(eager_lrs.back() < eager_lrs.front());   // the schedule did change the lr
    StaticBatch in;
    Tensor loss;
    auto step = [&] { loss = mlp_step(*captured, opt_captured, in.x, in.y); };
    in.feed(0);
    step();   // warm-up: creates the momentum buffers
    sched_captured->step();
    tg::cuda::CUDAGraph graph;
    {
      tg::cuda::GraphCapture capture(graph);
      step();
    }
    for (int k = 1; k < kSteps; ++k) {
      CAPTURE(k);
      in.feed(k);
      CHECK(opt_captured.lr() == eager_lrs[static_cast<std::size_t>(k)]);
      const uint64_t before = tg::cuda::detail::launch_count();
      graph.replay();
      CHECK(tg::cuda::detail::launch_count() - before == 2);   // the lrs' launch, then the graph
      sched_captured->step();
      CHECK(same_bits(loss.item<float>(), eager_losses[static_cast<std::size_t>(k)]));
    }
    check_same_parameters(*eager, *captured);
    // Negative control: one more replay at a different lr than the eager twin's next step moves the
    // parameters elsewhere than that step does.
    in.feed(kSteps);
    opt_captured.set_lr(opt_captured.lr() * 3);
    graph.replay();
    auto [xk, yk] = batch(kSteps);
    mlp_step(*eager, opt_eager, xk.to(kGpu), yk.to(kGpu));
    const double diff = (eager->fc1->weight - captured->fc1->weight).abs().max().item<double>();
    CHECK(diff > 0);
  }
}

TEST_CASE("cuda graphs: error_if_nonfinite cannot be checked inside a capture and is refused before any work") {
  TG_NEED_CUDA();
  const std::shared_ptr<Mlp> model = twin_mlps(0.0).first;
  const Tensor x = tg::randn({5, 8}).to(kGpu), y = tg::randn({5, 4}).to(kGpu);
  model->zero_grad();
  tg::mse_loss(model->forward(x), y).backward();
  std::vector<Tensor> grads;
  for (const Tensor& p : model->parameters()) grads.push_back(p.grad());
  const float eager_norm = tg::optim::get_total_norm(grads, 2.0, true).item<float>();   // eagerly: checked
  tg::cuda::CUDAGraph graph;
  graph.capture_begin();
  CHECK_THROWS_WITH_AS(tg::optim::get_total_norm(grads, 2.0, true), doctest::Contains("error_if_nonfinite"), tg::Error);
  CHECK_THROWS_WITH_AS(tg::optim::clip_grad_norm_tensor(model->parameters(), 1.0, 2.0, true),
                       doctest::Contains("error_if_nonfinite"), tg::Error);
  const Tensor norm = tg::optim::get_total_norm(grads, 2.0, false);
  graph.capture_end();   // the refusals queued nothing: the capture is fine
  graph.replay();
  CHECK(same_bits(norm.item<float>(), eager_norm));
}

namespace {

/// The state() entries of an optimizer, copied to the CPU (step counts and buffers).
std::vector<std::pair<std::string, Tensor>> state_copy(const tg::optim::Optimizer& opt) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, t] : opt.state()) out.emplace_back(name, Tensor(t).to(Device::cpu()).clone());
  return out;
}

/// Two optimizers' states hold the same entries with the same bits (float32 buffers, int64 counts).
void check_same_state(const std::vector<std::pair<std::string, Tensor>>& a,
                      const std::vector<std::pair<std::string, Tensor>>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(a[i].first);
    REQUIRE(a[i].first == b[i].first);
    REQUIRE(a[i].second.dtype() == b[i].second.dtype());
    if (a[i].second.dtype() == tg::kInt64) CHECK(a[i].second.item<int64_t>() == b[i].second.item<int64_t>());
    else check_same_bits(a[i].second, b[i].second);
  }
}

/// The parameters of m copied to the CPU.
std::vector<Tensor> parameters_copy(Mlp& m) {
  std::vector<Tensor> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.detach().to(Device::cpu()).clone());
  return out;
}

// Note [GradScaler in CUDA graphs] in optim/grad_scaler.cpp: a whole mixed-precision iteration
// (autocast forward, scaled backward, unscale_, clip_grad_norm_tensor, step, update) captured once
// and replayed against the same eager iterations, with optimizers of type Opt built from options.
// One replay sees an inf in its input, so its step is skipped (parameters and the whole optimizer
// state, step counts included, keep their bits) and the scale backs off; the scale grows again after
// growth_interval clean steps, all decided on the device. max_norm lies among the gradients' norms,
// so the clipping engages on some steps and not on others, and the lr halves between two replays.
// For Adam, a control run whose skipped step advances the step counts (and nothing else) ends with
// other parameters: the comparison sees a step count that a skip failed to keep.
/// The max_norm of check_captured_scaler_iterations: among its steps' gradient norms.
constexpr double kScalerMaxNorm = 1.0;

template <class Opt, class Options>
void check_captured_scaler_iterations(tg::DType dtype, const Options& options, double max_norm) {
  constexpr bool kHasStepCounts = std::is_base_of<tg::optim::Adam, Opt>::value;
  const auto twins = twin_mlps(0.0);
  const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second, control = twin_mlps(0.0).first;
  Opt opt_eager(eager->parameters(), options), opt_captured(captured->parameters(), options);
  Opt opt_control(control->parameters(), options);
  const auto scaler_options = tg::amp::GradScalerOptions().init_scale(1024).growth_interval(2);
  tg::amp::GradScaler scaler_eager(scaler_options), scaler_captured(scaler_options), scaler_control(scaler_options);
  constexpr int kSteps = 8, kInfStep = 3, kLrStep = 5;
  const double lr = options.lr();
  auto data = [&](int k) {
    auto [xk, yk] = batch(k);
    if (k == kInfStep) xk = xk * std::numeric_limits<float>::infinity();
    return std::make_pair(xk, yk);
  };
  auto iteration = [&](Mlp& m, Opt& opt, tg::amp::GradScaler& scaler, const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    Tensor loss;
    {
      tg::amp::AutocastGuard guard(kGpu, dtype);
      loss = tg::mse_loss(m.forward(x), y);
    }
    scaler.scale(loss).backward();
    scaler.unscale_(opt);
    const Tensor norm = tg::optim::clip_grad_norm_tensor(m.parameters(), max_norm);
    const bool stepped = scaler.step(opt);
    scaler.update();
    return std::make_tuple(loss, norm, stepped);
  };
  auto lr_at = [&](int k) { return k < kLrStep ? lr : lr / 2; };
  std::vector<float> eager_losses, eager_norms;
  std::vector<double> eager_scales;
  std::vector<int64_t> eager_trackers;
  std::vector<bool> eager_stepped;
  for (int k = 0; k < kSteps; ++k) {
    auto [xk, yk] = data(k);
    opt_eager.set_lr(lr_at(k));
    const auto [loss, norm, stepped] = iteration(*eager, opt_eager, scaler_eager, xk.to(kGpu), yk.to(kGpu));
    eager_losses.push_back(loss.template item<float>());
    eager_norms.push_back(norm.template item<float>());
    eager_scales.push_back(scaler_eager.get_scale());
    eager_trackers.push_back(scaler_eager.get_growth_tracker());
    eager_stepped.push_back(stepped);
    opt_control.set_lr(lr_at(k));
    iteration(*control, opt_control, scaler_control, xk.to(kGpu), yk.to(kGpu));
    if (kHasStepCounts && k == kInfStep) {   // the control: a skip that advanced the step counts
      auto state = opt_control.state();
      for (auto& [name, t] : state)
        if (name.rfind("step.", 0) == 0) t = (Tensor(t) + 1).data();
      opt_control.set_state(state);
    }
  }
  // The schedule this test relies on: growth after two clean steps, then the skipped step's backoff
  // and the regrowth; clipping on some clean steps and not on others.
  CHECK(eager_scales[1] == 2048);
  CHECK_FALSE(eager_stepped[kInfStep]);
  CHECK(eager_scales[kInfStep] == eager_scales[kInfStep - 1] / 2);
  CHECK(eager_scales[kInfStep + 2] == eager_scales[kInfStep] * 2);
  int clipped = 0, unclipped = 0;
  for (int k = 0; k < kSteps; ++k) {
    if (k == kInfStep) continue;
    (eager_norms[static_cast<std::size_t>(k)] > max_norm ? clipped : unclipped) += 1;
  }
  MESSAGE("clipped on " << clipped << " steps, not on " << unclipped);
  CHECK(clipped > 0);
  CHECK(unclipped > 0);

  Tensor x = tg::zeros({5, 8}).to(kGpu), y = tg::zeros({5, 4}).to(kGpu), loss, norm;
  auto feed = [&](int k) {
    auto [xk, yk] = data(k);
    x.copy_(xk);
    y.copy_(yk);
  };
  feed(0);
  std::tie(loss, norm, std::ignore) = iteration(*captured, opt_captured, scaler_captured, x, y);   // warm-up: the state
  CHECK(scaler_captured.get_scale() == eager_scales[0]);
  tg::cuda::CUDAGraph graph;
  {
    tg::cuda::GraphCapture capture(graph);
    std::tie(loss, norm, std::ignore) = iteration(*captured, opt_captured, scaler_captured, x, y);
  }
  std::vector<Tensor> params_before_inf;
  std::vector<std::pair<std::string, Tensor>> state_before_inf;
  for (int k = 1; k < kSteps; ++k) {
    CAPTURE(k);
    feed(k);
    opt_captured.set_lr(lr_at(k));
    if (k == kInfStep) {
      params_before_inf = parameters_copy(*captured);
      state_before_inf = state_copy(opt_captured);
    }
    graph.replay();
    CHECK(same_bits(loss.item<float>(), eager_losses[static_cast<std::size_t>(k)]));
    if (k == kInfStep) CHECK_FALSE(std::isfinite(norm.item<float>()));
    else CHECK(same_bits(norm.item<float>(), eager_norms[static_cast<std::size_t>(k)]));
    // Read back only on some steps, so that replays in a row also carry the scale and the step
    // counts on the device.
    if (k == 2 || k >= kInfStep) {
      CHECK(scaler_captured.get_scale() == eager_scales[static_cast<std::size_t>(k)]);
      CHECK(scaler_captured.get_growth_tracker() == eager_trackers[static_cast<std::size_t>(k)]);
    }
    if (k == kInfStep) {   // the skipped step left every bit as it was, step counts included
      const std::vector<Tensor> now = parameters_copy(*captured);
      for (std::size_t i = 0; i < now.size(); ++i) check_same_bits(now[i], params_before_inf[i]);
      check_same_state(state_copy(opt_captured), state_before_inf);
    }
  }
  check_same_parameters(*eager, *captured);
  check_same_state(state_copy(opt_eager), state_copy(opt_captured));
  if (kHasStepCounts) {
    bool differs = false;
    const std::vector<Tensor> a = parameters_copy(*control), b = parameters_copy(*captured);
    for (std::size_t i = 0; i < a.size(); ++i) differs = differs || (a[i] - b[i]).abs().max().item<double>() > 0;
    CHECK(differs);
  }
  // An eager iteration after the replays continues from the device's scale and step counts, and a
  // replay after it from the host's.
  auto [xk, yk] = data(kSteps);
  iteration(*eager, opt_eager, scaler_eager, xk.to(kGpu), yk.to(kGpu));
  iteration(*captured, opt_captured, scaler_captured, xk.to(kGpu), yk.to(kGpu));
  CHECK(scaler_captured.get_scale() == scaler_eager.get_scale());
  check_same_parameters(*eager, *captured);
  check_same_state(state_copy(opt_eager), state_copy(opt_captured));
  auto [xn, yn] = data(kSteps + 1);
  const float eager_loss = std::get<0>(iteration(*eager, opt_eager, scaler_eager, xn.to(kGpu), yn.to(kGpu))).template item<float>();
  feed(kSteps + 1);
  graph.replay();
  CHECK(same_bits(loss.item<float>(), eager_loss));
  CHECK(scaler_captured.get_scale() == scaler_eager.get_scale());
  check_same_parameters(*eager, *captured);
  check_same_state(state_copy(opt_eager), state_copy(opt_captured));
}

}  // namespace

TEST_CASE("cuda graphs: a captured GradScaler iteration with SGD skips inf steps and moves its scale as eager steps do") {
  TG_NEED_CUDA();
  for (tg::DType dtype : {tg::kBFloat16, tg::kFloat16}) {
    CAPTURE(tg::dtype_name(dtype));
    check_captured_scaler_iterations<tg::optim::SGD>(dtype, tg::optim::SGDOptions(0.05).momentum(0.9).capturable(true),
                                                     kScalerMaxNorm);
  }
}

TEST_CASE("cuda graphs: a captured GradScaler iteration with Adam or AdamW keeps a skipped step's count, as eager steps do") {
  TG_NEED_CUDA();
  for (tg::DType dtype : {tg::kBFloat16, tg::kFloat16}) {
    CAPTURE(tg::dtype_name(dtype));
    check_captured_scaler_iterations<tg::optim::Adam>(dtype, tg::optim::AdamOptions(1e-2).capturable(true),
                                                      kScalerMaxNorm);
    check_captured_scaler_iterations<tg::optim::AdamW>(
        dtype, tg::optim::AdamWOptions(1e-2).weight_decay(0.1).amsgrad().capturable(true), kScalerMaxNorm);
  }
}

// Note [Captured Adam]: one capturable Adam captured in two graphs, a plain step (its counts
// advance on the host before each replay) and a GradScaler iteration (its counts advance on the
// device); replayed alternately, each continues from the counts the other left, as eager steps do.
TEST_CASE("cuda graphs: a plain and a GradScaler capture of one Adam alternate, each continuing the other's step counts") {
  TG_NEED_CUDA();
  const auto twins = twin_mlps(0.0);
  const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second;
  const auto options = tg::optim::AdamOptions(1e-2).capturable(true);
  tg::optim::Adam opt_eager(eager->parameters(), options), opt_captured(captured->parameters(), options);
  tg::amp::GradScaler scaler_eager, scaler_captured;
  auto plain = [](Mlp& m, tg::optim::Adam& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    tg::mse_loss(m.forward(x), y).backward();
    opt.step();
  };
  auto scaled = [](Mlp& m, tg::optim::Adam& opt, tg::amp::GradScaler& scaler, const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    scaler.scale(tg::mse_loss(m.forward(x), y)).backward();
    scaler.step(opt);
    scaler.update();
  };
  Tensor x = tg::zeros({5, 8}).to(kGpu), y = tg::zeros({5, 4}).to(kGpu);
  auto [x0, y0] = batch(0);
  x.copy_(x0);
  y.copy_(y0);
  plain(*eager, opt_eager, x0.to(kGpu), y0.to(kGpu));
  plain(*captured, opt_captured, x, y);   // warm-up: the state
  tg::cuda::CUDAGraph plain_graph, scaled_graph;
  {
    tg::cuda::GraphCapture capture(plain_graph);
    plain(*captured, opt_captured, x, y);
  }
  {
    tg::cuda::GraphCapture capture(scaled_graph);
    scaled(*captured, opt_captured, scaler_captured, x, y);
  }
  for (int k = 1; k < 7; ++k) {   // scaled, scaled, plain, scaled, plain, plain
    CAPTURE(k);
    auto [xk, yk] = batch(k);
    x.copy_(xk);
    y.copy_(yk);
    const bool use_scaler = k == 1 || k == 2 || k == 4;
    if (use_scaler) scaled(*eager, opt_eager, scaler_eager, xk.to(kGpu), yk.to(kGpu));
    else plain(*eager, opt_eager, xk.to(kGpu), yk.to(kGpu));
    (use_scaler ? scaled_graph : plain_graph).replay();
  }
  check_same_parameters(*eager, *captured);
  const auto state = state_copy(opt_captured);
  check_same_state(state_copy(opt_eager), state);
  for (const auto& [name, t] : state)
    if (name.rfind("step.", 0) == 0) CHECK(t.item<int64_t>() == 7);   // the warm-up and six replays
}

TEST_CASE("cuda graphs: GradScaler::step inside a capture refuses an optimizer with host-side state") {
  TG_NEED_CUDA();
  const std::shared_ptr<Mlp> model = twin_mlps(0.0).first;
  const Tensor x = tg::randn({5, 8}).to(kGpu), y = tg::randn({5, 4}).to(kGpu);
  auto check_refused = [&](tg::optim::Optimizer& opt, const char* message) {
    tg::amp::GradScaler scaler;
    auto iteration = [&] {
      opt.zero_grad();
      scaler.scale(tg::mse_loss(model->forward(x), y)).backward();
      return scaler.step(opt);
    };
    CHECK(iteration());   // eagerly fine (and the warm-up)
    scaler.update();
    tg::cuda::CUDAGraph graph;
    graph.capture_begin();
    CHECK_THROWS_WITH_AS(iteration(), doctest::Contains(message), tg::Error);
    graph.capture_end();   // nothing illegal reached the stream
  };
  SUBCASE("RMSprop computes its scalars on the host") {
    tg::optim::RMSprop rms(model->parameters(), tg::optim::RMSpropOptions(1e-3));
    check_refused(rms, "only SGD and Adam/AdamW with capturable(true)");
  }
  SUBCASE("Adam without capturable") {
    tg::optim::Adam adam(model->parameters(), tg::optim::AdamOptions(1e-3));
    check_refused(adam, "capturable(true)");
  }
}

TEST_CASE("cuda graphs: capturable and fixed-lr SGD groups in one capture, and GradScaler::update(new_scale)") {
  TG_NEED_CUDA();
  const auto twins = twin_mlps(0.0);
  const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second;
  auto groups = [](Mlp& m) {
    return std::vector<tg::optim::ParamGroup>{
        {m.fc1->parameters(), tg::optim::SGDOptions(0.05).momentum(0.9).capturable(true)},
        {m.fc2->parameters(), tg::optim::SGDOptions(0.02).momentum(0.9)}};
  };
  tg::optim::SGD opt_eager(groups(*eager), tg::optim::SGDOptions(0.1));
  tg::optim::SGD opt_captured(groups(*captured), tg::optim::SGDOptions(0.1));
  tg::amp::GradScaler scaler(tg::amp::GradScalerOptions().init_scale(256));
  Tensor x = tg::zeros({5, 8}).to(kGpu), y = tg::zeros({5, 4}).to(kGpu), scaled;
  auto step = [&](Mlp& m, tg::optim::SGD& opt, const Tensor& xs, const Tensor& ys) {
    opt.zero_grad();
    tg::mse_loss(m.forward(xs), ys).backward();
    opt.step();
  };
  auto [x0, y0] = batch(0);
  x.copy_(x0);
  y.copy_(y0);
  step(*eager, opt_eager, x0.to(kGpu), y0.to(kGpu));
  step(*captured, opt_captured, x, y);   // warm-up
  tg::cuda::CUDAGraph graph;
  {
    tg::cuda::GraphCapture capture(graph);
    step(*captured, opt_captured, x, y);
    scaled = scaler.scale(x.sum());   // the scaler's S is read on the device
    scaler.update(512.0);              // every replay sets S to 512
  }
  CHECK(scaler.get_scale() == 256);   // nothing replayed yet
  for (int k = 1; k < 4; ++k) {
    CAPTURE(k);
    auto [xk, yk] = batch(k);
    x.copy_(xk);
    y.copy_(yk);
    opt_eager.set_lr(0, 0.05 / (k + 1));   // the capturable group's lr changes, the other's stays
    opt_captured.set_lr(0, 0.05 / (k + 1));
    step(*eager, opt_eager, xk.to(kGpu), yk.to(kGpu));
    graph.replay();
  }
  check_same_parameters(*eager, *captured);
  // The last replay scaled with the 512 of the replay before it.
  CHECK(same_bits(scaled.item<float>(), x.sum().item<float>() * 512.0f));
  CHECK(scaler.get_scale() == 512);
  opt_captured.set_lr(1, 0.01);   // the fixed-lr group's change is refused, not ignored
  CHECK_THROWS_WITH_AS(graph.replay(), doctest::Contains("keeps the lr it was captured with"), tg::Error);
}

// What the refusal above advises for the optimizers it refuses (here Adam without capturable):
// capture the forward and the scaled backward, then unscale, step and update eagerly after each
// replay; the replays read the scale the eager update() left.
TEST_CASE("cuda graphs: a captured scaled backward with eager GradScaler steps follows the eager iterations") {
  TG_NEED_CUDA();
  const auto twins = twin_mlps(0.0);
  const std::shared_ptr<Mlp> eager = twins.first, captured = twins.second;
  tg::optim::Adam opt_eager(eager->parameters(), tg::optim::AdamOptions(1e-2));
  tg::optim::Adam opt_captured(captured->parameters(), tg::optim::AdamOptions(1e-2));
  const auto scaler_options = tg::amp::GradScalerOptions().init_scale(64).growth_interval(1);   // S grows each step
  tg::amp::GradScaler scaler_eager(scaler_options), scaler_captured(scaler_options);
  Tensor x = tg::zeros({5, 8}).to(kGpu), y = tg::zeros({5, 4}).to(kGpu), loss;
  auto forward_backward = [&](Mlp& m, tg::optim::Adam& opt, tg::amp::GradScaler& scaler, const Tensor& xs,
                              const Tensor& ys) {
    opt.zero_grad();
    loss = tg::mse_loss(m.forward(xs), ys);
    scaler.scale(loss).backward();
  };
  auto finish = [](tg::optim::Adam& opt, tg::amp::GradScaler& scaler) {
    scaler.step(opt);
    scaler.update();
  };
  std::vector<float> eager_losses;
  for (int k = 0; k < 4; ++k) {
    auto [xk, yk] = batch(k);
    forward_backward(*eager, opt_eager, scaler_eager, xk.to(kGpu), yk.to(kGpu));
    eager_losses.push_back(loss.item<float>());
    finish(opt_eager, scaler_eager);
  }
  CHECK(scaler_eager.get_scale() == 64 * 16);
  auto feed = [&](int k) {
    auto [xk, yk] = batch(k);
    x.copy_(xk);
    y.copy_(yk);
  };
  feed(0);
  forward_backward(*captured, opt_captured, scaler_captured, x, y);   // warm-up
  finish(opt_captured, scaler_captured);
  tg::cuda::CUDAGraph graph;
  {
    tg::cuda::GraphCapture capture(graph);
    forward_backward(*captured, opt_captured, scaler_captured, x, y);
  }
  for (int k = 1; k < 4; ++k) {
    CAPTURE(k);
    feed(k);
    graph.replay();
    CHECK(same_bits(loss.item<float>(), eager_losses[static_cast<std::size_t>(k)]));
    finish(opt_captured, scaler_captured);
  }
  CHECK(scaler_captured.get_scale() == scaler_eager.get_scale());
  check_same_parameters(*eager, *captured);
}
