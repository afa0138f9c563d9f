// bench/torch_side.cpp: the libtorch workloads declared in bench/torch_side.h, written as a libtorch
// user would (torch::nn, torch::optim, the autograd API), each the same computation as its tensorgrad
// twin in the bench_*.cpp files. The only file in bench/ that includes <torch/torch.h>. Without libtorch
// (TG_BENCH_WITH_TORCH undefined) it compiles to stubs: available() is false, every Work is empty.
#include "torch_side.h"

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <cmath>
#include <limits>
#include <stdexcept>

#ifdef TG_BENCH_WITH_TORCH
#include <ATen/autocast_mode.h>
#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

namespace bench {
namespace torch_side {

bool available() { return true; }

std::string version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

#ifdef TG_BENCH_HAVE_OPENBLAS
extern "C" void openblas_set_num_threads(int);
#endif

namespace {
int g_threads = 1;

/// libtorch's matrix products go to the OpenBLAS it shares with tensorgrad in this process, and
/// tensorgrad keeps OpenBLAS single-threaded (core/parallel.h): before each libtorch repetition the
/// thread count a libtorch user would have (OPENBLAS_NUM_THREADS = --threads) is set back.
void restore_blas_threads() {
#ifdef TG_BENCH_HAVE_OPENBLAS
  openblas_set_num_threads(g_threads);
#endif
}
}  // namespace

void set_threads(int n) {
  static bool interop_set = false;
  if (!interop_set) {
    at::set_num_interop_threads(1);
    interop_set = true;
  }
  at::set_num_threads(n);
  g_threads = n;
}

void set_flush_denormal(bool on) { at::globalContext().setFlushDenormal(on); }

namespace {

torch::Tensor chain(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b, int len) {
  torch::Tensor y = x;
  for (int i = 0; i < len / 2; ++i) y = (y + a) * b;
  return y;
}

void reset_grads(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params) p.mutable_grad().reset();
}

}  // namespace

Work op_chain(int64_t numel, int len, ChainMode mode) {
  auto opts = torch::TensorOptions().dtype(torch::kFloat32).requires_grad(true);
  torch::Tensor x = torch::randn({numel}, opts), a = torch::full({numel}, 1e-3, opts),
                b = torch::full({numel}, 0.999, opts);
  switch (mode) {
    case ChainMode::NoGrad:
      return [=] {
        torch::NoGradGuard g;
        chain(x, a, b, len);
      };
    case ChainMode::Record:
      return [=] { chain(x, a, b, len); };
    case ChainMode::Backward:
      return [=] { chain(x, a, b, len).sum().backward(); };
  }
  return {};
}

namespace {
struct MlpState {
  torch::nn::Sequential net{torch::nn::Linear(784, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10)};
  std::vector<torch::Tensor> params = net->parameters();
  torch::optim::SGD optimizer{params, torch::optim::SGDOptions(0.01)};
  torch::nn::CrossEntropyLoss criterion;
  torch::Tensor x, y;
};
}  // namespace

namespace {
/// CPU autocast in bfloat16 while alive, as Python's `with torch.autocast("cpu")` (libtorch 1.13 has no
/// C++ guard): on, nesting counted, the cast cache cleared when the outermost region ends.
struct CpuAutocast {
  bool on;
  explicit CpuAutocast(bool enable) : on(enable) {
    if (!on) return;
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~CpuAutocast() {
    if (!on) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_cpu_enabled(false);
  }
};
}  // namespace

Work mlp_step(int64_t batch, bool autocast) {
  auto s = std::make_shared<MlpState>();
  s->x = torch::randn({batch, 784});
  s->y = torch::randint(0, 10, {batch}, torch::kLong);
  return [s, autocast] {
    restore_blas_threads();
    reset_grads(s->params);
    torch::Tensor loss;
    {
      CpuAutocast region(autocast);
      loss = s->criterion(s->net->forward(s->x), s->y);
    }
    loss.backward();
    s->optimizer.step();
  };
}

Work mlp_hvp(int64_t batch, int64_t in) {
  auto net = std::make_shared<torch::nn::Sequential>(torch::nn::Linear(in, 128), torch::nn::Tanh(),
                                                     torch::nn::Linear(128, 128), torch::nn::Tanh(),
                                                     torch::nn::Linear(128, 1));
  std::vector<torch::Tensor> params = (*net)->parameters(), v;
  for (const auto& p : params) v.push_back(torch::randn(p.sizes()));
  torch::Tensor x = torch::randn({batch, in}), y = torch::randn({batch, 1});
  return [=] {
    restore_blas_threads();
    torch::Tensor loss = torch::mse_loss((*net)->forward(x), y);
    std::vector<torch::Tensor> g = torch::autograd::grad({loss}, params, {}, true, true);
    torch::Tensor dot = torch::zeros({});
    for (size_t i = 0; i < g.size(); ++i) dot = dot + (g[i] * v[i]).sum();
    torch::autograd::grad({dot}, params);
  };
}

Work pinn_step(int64_t points, int64_t width) {
  struct State {
    torch::nn::Sequential u;
    std::unique_ptr<torch::optim::Adam> adam;
    std::vector<torch::Tensor> params;
    torch::Tensor x, rhs, boundary;
  };
  auto s = std::make_shared<State>();
  s->u = torch::nn::Sequential(torch::nn::Linear(1, width), torch::nn::Tanh(), torch::nn::Linear(width, width),
                               torch::nn::Tanh(), torch::nn::Linear(width, 1));
  s->params = s->u->parameters();
  s->adam = std::make_unique<torch::optim::Adam>(s->params, torch::optim::AdamOptions(1e-3));
  s->x = ((torch::arange(points, torch::kFloat) + 0.5) / static_cast<double>(points)).unsqueeze(1).requires_grad_(true);
  const double pi = 3.14159265358979323846;
  s->rhs = torch::sin(s->x.detach() * pi) * (-pi * pi);
  s->boundary = torch::tensor({0.0f, 1.0f}).unsqueeze(1);
  return [s] {
    restore_blas_threads();
    reset_grads(s->params);
    torch::Tensor ux = s->u->forward(s->x);
    torch::Tensor du = torch::autograd::grad({ux.sum()}, {s->x}, {}, true, true)[0];
    torch::Tensor d2u = torch::autograd::grad({du.sum()}, {s->x}, {}, true, true)[0];
    torch::Tensor loss = torch::mse_loss(d2u, s->rhs) + s->u->forward(s->boundary).pow(2).mean() * 10.0;
    loss.backward();
    s->adam->step();
  };
}

Work matmul(int64_t n) {
  torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
  return [=] {
    restore_blas_threads();
    torch::matmul(a, b);
  };
}

Work elementwise(Elementwise op, int64_t numel) {
  torch::Tensor a = torch::randn({numel}), b = torch::randn({numel});
  switch (op) {
    case Elementwise::Add:
      return [=] { torch::add(a, b); };
    case Elementwise::Relu:
      return [=] { torch::relu(a); };
    case Elementwise::Exp:
      return [=] { torch::exp(a); };
    case Elementwise::Cumsum:
      return [=] { torch::cumsum(a, 0); };
    case Elementwise::Multinomial: {
      torch::Tensor p = (a.abs() + 0.1).view({256, -1});
      return [=] { torch::multinomial(p, 1, true); };
    }
    case Elementwise::ReluForwardBackward: {
      torch::Tensor x = a.clone().requires_grad_(true), g = torch::ones({numel});
      return [=] {
        torch::relu(x).backward(g);
        x.mutable_grad().reset();
      };
    }
  }
  return {};
}

Work softmax_cross_entropy(int64_t n, int64_t c) {
  torch::Tensor logits = torch::randn({n, c}).requires_grad_(true);
  torch::Tensor target = torch::randint(0, c, {n}, torch::kLong);
  return [=] {
    torch::nn::functional::cross_entropy(logits, target).backward();
    logits.mutable_grad().reset();
  };
}

Work conv2d(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k) {
  torch::Tensor x = torch::randn({n, c, h, w}).requires_grad_(true);
  torch::Tensor wt = torch::randn({o, c, k, k}).requires_grad_(true);
  torch::Tensor b = torch::randn({o}).requires_grad_(true);
  torch::Tensor gy = torch::randn({n, o, h + 2 * (k / 2) - k + 1, w + 2 * (k / 2) - k + 1});
  return [=] {
    torch::conv2d(x, wt, b, 1, k / 2).backward(gy);
    x.mutable_grad().reset();
    wt.mutable_grad().reset();
    b.mutable_grad().reset();
  };
}

Work layer_norm(int64_t rows, int64_t d) {
  torch::Tensor x = torch::randn({rows, d}).requires_grad_(true);
  torch::Tensor wt = torch::randn({d}).requires_grad_(true);
  torch::Tensor b = torch::randn({d}).requires_grad_(true);
  torch::Tensor gy = torch::randn({rows, d});
  return [=] {
    torch::layer_norm(x, {d}, wt, b, 1e-5).backward(gy);
    x.mutable_grad().reset();
    wt.mutable_grad().reset();
    b.mutable_grad().reset();
  };
}

Work attention(int64_t batch, int64_t heads, int64_t len, int64_t dim, bool causal, bool autocast) {
  torch::Tensor q = torch::randn({batch, heads, len, dim}).requires_grad_(true);
  torch::Tensor k = torch::randn({batch, heads, len, dim}).requires_grad_(true);
  torch::Tensor v = torch::randn({batch, heads, len, dim}).requires_grad_(true);
  torch::Tensor gy = torch::randn({batch, heads, len, dim}).to(autocast ? torch::kBFloat16 : torch::kFloat32);
  const torch::Tensor future = torch::ones({len, len}, torch::kBool).triu(1);   // masked: key after query
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  return [=] {
    torch::Tensor out;
    {
      CpuAutocast region(autocast);
      torch::Tensor s = torch::matmul(q * scale, k.transpose(-2, -1));
      if (causal) s = s.masked_fill(future, -std::numeric_limits<double>::infinity());
      out = torch::matmul(torch::softmax(s, -1), v);
    }
    out.backward(gy);
    q.mutable_grad().reset();
    k.mutable_grad().reset();
    v.mutable_grad().reset();
  };
}

Work embedding(int64_t vocab, int64_t dim, int64_t tokens) {
  torch::Tensor w = torch::randn({vocab, dim}).requires_grad_(true);
  const torch::Tensor ids = torch::randint(0, vocab, {tokens}, torch::kLong);
  torch::Tensor gy = torch::randn({tokens, dim});
  return [=] {
    torch::embedding(w, ids).backward(gy);
    w.mutable_grad().reset();
  };
}

struct FashionTrainer::Impl {
  torch::Tensor train_x, train_y, test_x, test_y;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::SGD> optimizer;
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::relu(fc1(x))); }
};

FashionTrainer::FashionTrainer(const float* train_x, const int64_t* train_y, int64_t n_train, const float* test_x,
                               const int64_t* test_y, int64_t n_test, const Init& init, double lr,
                               double momentum)
    : impl_(std::make_unique<Impl>()) {
  auto f32 = [](const float* p, std::vector<int64_t> shape) {
    return torch::from_blob(const_cast<float*>(p), shape, torch::kFloat32).clone();
  };
  auto i64 = [](const int64_t* p, int64_t n) {
    return torch::from_blob(const_cast<int64_t*>(p), {n}, torch::kLong).clone();
  };
  Impl& m = *impl_;
  m.train_x = f32(train_x, {n_train, init.in});
  m.train_y = i64(train_y, n_train);
  m.test_x = f32(test_x, {n_test, init.in});
  m.test_y = i64(test_y, n_test);
  m.fc1 = torch::nn::Linear(init.in, init.hidden);
  m.fc2 = torch::nn::Linear(init.hidden, init.out);
  {
    torch::NoGradGuard no_grad;
    m.fc1->weight.copy_(f32(init.w1, {init.hidden, init.in}));
    m.fc1->bias.copy_(f32(init.b1, {init.hidden}));
    m.fc2->weight.copy_(f32(init.w2, {init.out, init.hidden}));
    m.fc2->bias.copy_(f32(init.b2, {init.out}));
  }
  m.params = {m.fc1->weight, m.fc1->bias, m.fc2->weight, m.fc2->bias};
  m.optimizer = std::make_unique<torch::optim::SGD>(m.params, torch::optim::SGDOptions(lr).momentum(momentum));
}

FashionTrainer::~FashionTrainer() = default;

double FashionTrainer::train_epoch(const std::vector<int64_t>& order, int64_t batch_size, double lr) {
  Impl& m = *impl_;
  restore_blas_threads();
  for (auto& group : m.optimizer->param_groups()) static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
  const int64_t n = static_cast<int64_t>(order.size());
  torch::Tensor idx = torch::from_blob(const_cast<int64_t*>(order.data()), {n}, torch::kLong);
  double loss_sum = 0;
  int64_t steps = 0;
  for (int64_t start = 0; start < n; start += batch_size) {
    torch::Tensor rows = idx.narrow(0, start, std::min(batch_size, n - start));
    torch::Tensor xb = m.train_x.index_select(0, rows), yb = m.train_y.index_select(0, rows);
    reset_grads(m.params);
    torch::Tensor loss = torch::nn::functional::cross_entropy(m.forward(xb), yb);
    loss.backward();
    m.optimizer->step();
    loss_sum += loss.item<double>();
    ++steps;
  }
  return steps ? loss_sum / steps : NAN;
}

double FashionTrainer::test_accuracy() {
  Impl& m = *impl_;
  restore_blas_threads();
  torch::NoGradGuard no_grad;
  const int64_t n = m.test_x.size(0);
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += 1000) {
    const int64_t len = std::min<int64_t>(1000, n - start);
    torch::Tensor pred = m.forward(m.test_x.narrow(0, start, len)).argmax(1);
    correct += pred.eq(m.test_y.narrow(0, start, len)).sum().item<int64_t>();
  }
  return n ? static_cast<double>(correct) / static_cast<double>(n) : NAN;
}

namespace {
/// Wraps libtorch's CPU allocator and counts the bytes of its live blocks. Each block's context is its
/// data pointer (a side table holds the wrapped DataPtr), so raw_allocate works too: libtorch's bfloat16
/// matrix products (oneDNN) allocate their scratch through it.
struct CountingAllocator final : c10::Allocator {
  c10::Allocator* base = nullptr;
  mutable std::atomic<int64_t> live{0};
  mutable std::mutex mutex;
  mutable std::unordered_map<void*, std::pair<c10::DataPtr, int64_t>> blocks;
  static CountingAllocator* instance;   // the one in use (release is a plain function pointer)
  static void release(void* data) {
    CountingAllocator* a = instance;
    c10::DataPtr inner;   // freed through the wrapped allocator when it goes out of scope
    int64_t n = 0;
    {
      std::lock_guard<std::mutex> lock(a->mutex);
      auto it = a->blocks.find(data);
      if (it == a->blocks.end()) return;
      inner = std::move(it->second.first);
      n = it->second.second;
      a->blocks.erase(it);
    }
    a->live -= n;
  }
  c10::DataPtr allocate(size_t n) const override {
    c10::DataPtr inner = base->allocate(n);
    void* data = inner.get();
    if (data == nullptr) return inner;   // empty: nothing to count
    const c10::Device device = inner.device();
    {
      std::lock_guard<std::mutex> lock(mutex);
      blocks.emplace(data, std::make_pair(std::move(inner), static_cast<int64_t>(n)));
    }
    live += static_cast<int64_t>(n);
    return c10::DataPtr(data, data, &release, device);
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
};
CountingAllocator* CountingAllocator::instance = nullptr;
}  // namespace

namespace {
/// examples/08's --model cnn in libtorch.
struct CnnImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 32, 3).padding(1)};
  torch::nn::BatchNorm2d bn1{32};
  torch::nn::Conv2d conv2{torch::nn::Conv2dOptions(32, 64, 3).padding(1)};
  torch::nn::BatchNorm2d bn2{64};
  torch::nn::MaxPool2d pool{torch::nn::MaxPool2dOptions(2)};
  torch::nn::Linear fc1{64 * 7 * 7, 128}, fc2{128, 10};
  torch::nn::Dropout dropout{0.25};
  CnnImpl() {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("fc1", fc1);
    register_module("dropout", dropout);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = pool(torch::relu(bn1(conv1(x))));
    h = pool(torch::relu(bn2(conv2(h))));
    return fc2(dropout(torch::relu(fc1(h.flatten(1)))));
  }
};

/// examples/10's pre-norm block, attention composed as attention() above.
struct BlockImpl : torch::nn::Module {
  int64_t heads;
  torch::nn::LayerNorm ln1, ln2;
  torch::nn::Linear qkv, proj, fc, out;
  BlockImpl(int64_t embed, int64_t h)
      : heads(h), ln1(torch::nn::LayerNormOptions({embed})), ln2(torch::nn::LayerNormOptions({embed})),
        qkv(embed, 3 * embed), proj(embed, embed), fc(embed, 4 * embed), out(4 * embed, embed) {
    register_module("ln1", ln1);
    register_module("qkv", qkv);
    register_module("proj", proj);
    register_module("ln2", ln2);
    register_module("fc", fc);
    register_module("out", out);
  }
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& future) {
    const int64_t B = x.size(0), L = x.size(1), D = x.size(2), hd = D / heads;
    torch::Tensor all = qkv(ln1(x)).reshape({B, L, 3, heads, hd}).permute({2, 0, 3, 1, 4});
    torch::Tensor q = all.select(0, 0), k = all.select(0, 1), v = all.select(0, 2);
    torch::Tensor s = torch::matmul(q * (1.0 / std::sqrt(static_cast<double>(hd))), k.transpose(-2, -1));
    s = s.masked_fill(future, -std::numeric_limits<double>::infinity());
    torch::Tensor y = torch::matmul(torch::softmax(s, -1), v).transpose(1, 2).reshape({B, L, D});
    torch::Tensor h = x + proj(y);
    return h + out(torch::gelu(fc(ln2(h))));
  }
};
TORCH_MODULE(Block);

struct CharTransformerImpl : torch::nn::Module {
  torch::nn::Embedding tok, pos;
  std::vector<Block> blocks;
  torch::nn::LayerNorm ln_f;
  torch::nn::Linear head;
  torch::Tensor future;
  explicit CharTransformerImpl(const CharModel& m)
      : tok(m.vocab, m.embed), pos(m.context, m.embed), ln_f(torch::nn::LayerNormOptions({m.embed})),
        head(m.embed, m.vocab) {
    register_module("tok", tok);
    register_module("pos", pos);
    for (int64_t i = 0; i < m.layers; ++i) blocks.push_back(register_module("block" + std::to_string(i), Block(m.embed, m.heads)));
    register_module("ln_f", ln_f);
    register_module("head", head);
    future = torch::ones({m.context, m.context}, torch::kBool).triu(1);
  }
  torch::Tensor forward(const torch::Tensor& idx) {
    torch::Tensor x = tok(idx) + pos(torch::arange(idx.size(1), torch::kLong));
    for (auto& b : blocks) x = b->forward(x, future);
    return head(ln_f(x));
  }
};
}  // namespace

Work cnn_step(int64_t batch) {
  struct State {
    std::shared_ptr<CnnImpl> model = std::make_shared<CnnImpl>();
    std::vector<torch::Tensor> params = model->parameters();
    torch::optim::SGD optimizer{params, torch::optim::SGDOptions(0.05).momentum(0.9)};
    torch::Tensor x, y;
  };
  auto s = std::make_shared<State>();
  s->x = torch::randn({batch, 1, 28, 28});
  s->y = torch::randint(0, 10, {batch}, torch::kLong);
  return [s] {
    restore_blas_threads();
    reset_grads(s->params);
    torch::nn::functional::cross_entropy(s->model->forward(s->x), s->y).backward();
    s->optimizer.step();
  };
}

Work char_transformer_step(const CharModel& m) {
  struct State {
    std::shared_ptr<CharTransformerImpl> model;
    std::vector<torch::Tensor> params;
    std::unique_ptr<torch::optim::AdamW> optimizer;
    torch::Tensor x, y;
  };
  auto s = std::make_shared<State>();
  s->model = std::make_shared<CharTransformerImpl>(m);
  s->params = s->model->parameters();
  s->optimizer = std::make_unique<torch::optim::AdamW>(
      s->params, torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).weight_decay(0.1));
  s->x = torch::randint(0, m.vocab, {m.batch, m.context}, torch::kLong);
  s->y = torch::randint(0, m.vocab, {m.batch, m.context}, torch::kLong);
  return [s] {
    restore_blas_threads();
    reset_grads(s->params);
    torch::Tensor logits = s->model->forward(s->x);
    torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(2)}), s->y.reshape({-1})).backward();
    torch::nn::utils::clip_grad_norm_(s->params, 1.0);
    s->optimizer->step();
  };
}

namespace {
struct WordLmImpl : torch::nn::Module {
  torch::nn::Dropout drop;
  torch::nn::Embedding encoder;
  torch::nn::LSTM rnn;
  torch::nn::Linear decoder;
  explicit WordLmImpl(const WordLmModel& m)
      : drop(m.dropout),
        encoder(m.vocab, m.embed),
        rnn(torch::nn::LSTMOptions(m.embed, m.hidden).num_layers(m.layers).dropout(m.dropout)),
        decoder(m.hidden, m.vocab) {
    register_module("drop", drop);
    register_module("encoder", encoder);
    register_module("rnn", rnn);
    register_module("decoder", decoder);
  }
};

struct DcganGeneratorImpl : torch::nn::Module {
  torch::nn::ConvTranspose2d up1, up2, up3;
  torch::nn::BatchNorm2d bn1, bn2;
  explicit DcganGeneratorImpl(const DcganModel& m)
      : up1(torch::nn::ConvTranspose2dOptions(m.nz, 4 * m.ngf, 7).bias(false)),
        up2(torch::nn::ConvTranspose2dOptions(4 * m.ngf, 2 * m.ngf, 4).stride(2).padding(1).bias(false)),
        up3(torch::nn::ConvTranspose2dOptions(2 * m.ngf, 1, 4).stride(2).padding(1).bias(false)),
        bn1(4 * m.ngf),
        bn2(2 * m.ngf) {
    register_module("up1", up1);
    register_module("bn1", bn1);
    register_module("up2", up2);
    register_module("bn2", bn2);
    register_module("up3", up3);
  }
  torch::Tensor forward(const torch::Tensor& z) {
    torch::Tensor h = torch::relu(bn1(up1(z)));
    h = torch::relu(bn2(up2(h)));
    return torch::tanh(up3(h));
  }
};

struct DcganDiscriminatorImpl : torch::nn::Module {
  torch::nn::Conv2d conv1, conv2, conv3;
  torch::nn::BatchNorm2d bn2;
  explicit DcganDiscriminatorImpl(const DcganModel& m)
      : conv1(torch::nn::Conv2dOptions(1, m.ndf, 4).stride(2).padding(1).bias(false)),
        conv2(torch::nn::Conv2dOptions(m.ndf, 2 * m.ndf, 4).stride(2).padding(1).bias(false)),
        conv3(torch::nn::Conv2dOptions(2 * m.ndf, 1, 7).bias(false)),
        bn2(2 * m.ndf) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("conv3", conv3);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::leaky_relu(conv1(x), 0.2);
    h = torch::leaky_relu(bn2(conv2(h)), 0.2);
    return conv3(h).reshape({-1});
  }
};
}  // namespace

Work word_lm_step(const WordLmModel& m) {
  struct State {
    std::shared_ptr<WordLmImpl> model;
    std::vector<torch::Tensor> params;
    std::unique_ptr<torch::optim::SGD> optimizer;
    torch::Tensor x, y, h, c;
  };
  auto s = std::make_shared<State>();
  s->model = std::make_shared<WordLmImpl>(m);
  s->params = s->model->parameters();
  s->optimizer = std::make_unique<torch::optim::SGD>(s->params, torch::optim::SGDOptions(20));
  s->x = torch::randint(0, m.vocab, {m.bptt, m.batch}, torch::kLong);
  s->y = torch::randint(0, m.vocab, {m.bptt * m.batch}, torch::kLong);
  s->h = torch::zeros({m.layers, m.batch, m.hidden});
  s->c = torch::zeros({m.layers, m.batch, m.hidden});
  return [s] {
    restore_blas_threads();
    reset_grads(s->params);
    auto out = s->model->rnn(s->model->drop(s->model->encoder(s->x)), std::make_tuple(s->h.detach(), s->c.detach()));
    torch::Tensor output = std::get<0>(out);
    torch::Tensor logits = s->model->decoder(s->model->drop(output).reshape({-1, output.size(2)}));
    torch::nn::functional::cross_entropy(logits, s->y).backward();
    torch::nn::utils::clip_grad_norm_(s->params, 0.25);
    s->optimizer->step();
    s->h = std::get<0>(std::get<1>(out));
    s->c = std::get<1>(std::get<1>(out));
  };
}

Work dcgan_generator_step(const DcganModel& m) {
  struct State {
    std::shared_ptr<DcganGeneratorImpl> g;
    std::shared_ptr<DcganDiscriminatorImpl> d;
    std::vector<torch::Tensor> g_params, d_params;
    std::unique_ptr<torch::optim::Adam> optimizer;
    torch::Tensor noise, ones;
  };
  auto s = std::make_shared<State>();
  s->g = std::make_shared<DcganGeneratorImpl>(m);
  s->d = std::make_shared<DcganDiscriminatorImpl>(m);
  s->g_params = s->g->parameters();
  s->d_params = s->d->parameters();
  s->optimizer = std::make_unique<torch::optim::Adam>(s->g_params, torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}));
  s->noise = torch::randn({m.batch, m.nz, 1, 1});
  s->ones = torch::ones({m.batch});
  return [s] {
    restore_blas_threads();
    reset_grads(s->g_params);
    reset_grads(s->d_params);
    torch::nn::functional::binary_cross_entropy_with_logits(s->d->forward(s->g->forward(s->noise)), s->ones).backward();
    s->optimizer->step();
  };
}

double activation_bytes_per_sample(const std::vector<int64_t>& widths, int64_t batch, bool autocast) {
  torch::manual_seed(0);
  torch::nn::Sequential net;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    net->push_back(torch::nn::Linear(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) net->push_back(torch::nn::ReLU());
  }
  torch::Tensor x = torch::randn({batch, widths[0]});
  static CountingAllocator counting;   // SetCPUAllocator keeps a pointer: it must outlive every tensor
  CountingAllocator::instance = &counting;
  if (counting.base == nullptr) counting.base = c10::GetCPUAllocator();
  c10::SetCPUAllocator(&counting, /*priority=*/1);
  double per_sample = NAN;
  {
    CpuAutocast region(autocast);
    if (autocast) net->forward(x);   // fills the cast cache; its graph is dropped at once
    const int64_t before = counting.live.load();
    torch::Tensor y = net->forward(x);
    per_sample = static_cast<double>(counting.live.load() - before - static_cast<int64_t>(y.nbytes())) /
                 static_cast<double>(batch);
  }
  c10::SetCPUAllocator(counting.base, /*priority=*/1);
  return per_sample;
}

}  // namespace torch_side
}  // namespace bench

#else  // !TG_BENCH_WITH_TORCH: stubs

namespace bench {
namespace torch_side {

bool available() { return false; }
std::string version() { return "not built"; }
void set_threads(int) {}
void set_flush_denormal(bool) {}
Work op_chain(int64_t, int, ChainMode) { return {}; }
Work mlp_step(int64_t, bool) { return {}; }
Work matmul(int64_t) { return {}; }
Work mlp_hvp(int64_t, int64_t) { return {}; }
Work pinn_step(int64_t, int64_t) { return {}; }
Work elementwise(Elementwise, int64_t) { return {}; }
Work softmax_cross_entropy(int64_t, int64_t) { return {}; }
Work conv2d(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t) { return {}; }
Work layer_norm(int64_t, int64_t) { return {}; }
Work attention(int64_t, int64_t, int64_t, int64_t, bool, bool) { return {}; }
Work embedding(int64_t, int64_t, int64_t) { return {}; }
Work cnn_step(int64_t) { return {}; }
Work char_transformer_step(const CharModel&) { return {}; }
Work word_lm_step(const WordLmModel&) { return {}; }
Work dcgan_generator_step(const DcganModel&) { return {}; }
double activation_bytes_per_sample(const std::vector<int64_t>&, int64_t, bool) { return NAN; }

struct FashionTrainer::Impl {};
FashionTrainer::FashionTrainer(const float*, const int64_t*, int64_t, const float*, const int64_t*, int64_t,
                               const Init&, double, double) {
  throw std::runtime_error("bench: built without libtorch");
}
FashionTrainer::~FashionTrainer() = default;
double FashionTrainer::train_epoch(const std::vector<int64_t>&, int64_t, double) { return NAN; }
double FashionTrainer::test_accuracy() { return NAN; }

}  // namespace torch_side
}  // namespace bench

#endif
