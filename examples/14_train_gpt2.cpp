// examples/14_train_gpt2.cpp: GPT-2 small (124M parameters: 12 pre-norm blocks of width 768 with 12
// heads, a 1024-token context, token embeddings tied to the output head; nanoGPT's shape) trained for a
// few steps on synthetic tokens, printing the loss, the median step time, tokens per second and the peak
// memory. It is the transformer benchmark of the GPU check (tools/gpu_check.sh --stages gpt2), where
// tools/gpu_torch_bench.py times PyTorch on the same shape; on the CPU a smaller --preset trains in
// seconds.
//
// The tokens: every sequence starts at a random token and follows a fixed random permutation of the
// vocabulary (token t is followed by perm[t]), so the next token is a function of the current one and
// the loss falls from log(vocab) within a few dozen steps at the small presets; --check makes a loss
// that did not fall an error (exit 1), --max-loss a final loss above a bar. The vocabulary is GPT-2's 50,257 padded to 50,304 (a multiple of 64, as nanoGPT and
// llm.c pad it) in the gpt2 preset.
//
// Precision: float32 by default (cuBLAS without TF32, the float32 PyTorch runs with TF32 off), or
// --amp: the forward and the loss under bfloat16 autocast, float32 parameters and optimizer state.
// Flags: `train_gpt2 --help` (parsed by examples/cli.h).
#include <tensorgrad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cli.h"
#include "device_flag.h"
#include "models.h"   // Block

namespace {

struct Args {
  std::string preset = "gpt2";
  int layers = 0, heads = 0, embed = 0, context = 0;
  std::int64_t vocab = 0;
  int batch_size = 8;
  int steps = 10;
  int warmup = 3;
  double lr = 6e-4;
  bool amp = false;
  bool check = false;
  double max_loss = 0;
  int threads = 0;
  std::string device = "auto";
};

Args parse(int argc, char** argv) {
  Args a;
  cli::Parser p("train_gpt2",
                "Trains GPT-2 small (or a smaller preset) on synthetic tokens and prints the loss, the median\n"
                "step time, tokens per second and the peak memory.");
  p.add("--preset", a.preset, "NAME",
        "gpt2 (12 blocks, width 768, 12 heads, context 1024, vocabulary 50304), mini (4, 256, 4, 256, 4096) "
        "or tiny (2, 64, 2, 32, 512)");
  p.add("--layers", a.layers, "N", "transformer blocks (0: the preset's)", cli::Range::non_negative);
  p.add("--heads", a.heads, "H", "attention heads (0: the preset's)", cli::Range::non_negative);
  p.add("--embed", a.embed, "D", "width (0: the preset's)", cli::Range::non_negative);
  p.add("--context", a.context, "L", "tokens per sequence (0: the preset's)", cli::Range::non_negative);
  p.add("--vocab", a.vocab, "V", "vocabulary size (0: the preset's)", cli::Range::non_negative);
  p.add("--batch-size", a.batch_size, "B", "sequences per step", cli::Range::positive);
  p.add("--steps", a.steps, "N", "optimizer steps", cli::Range::positive);
  p.add("--warmup", a.warmup, "N", "first steps left out of the timing", cli::Range::non_negative);
  p.add("--lr", a.lr, "LR", "AdamW's learning rate", cli::Range::positive);
  p.add("--amp", a.amp, "the forward and the loss under bfloat16 autocast");
  p.add("--check", a.check, "exit 1 unless the last step's loss is below the first step's");
  p.add("--max-loss", a.max_loss, "X", "exit 1 when the last step's loss is above X (0: no bar)",
        cli::Range::non_negative);
  p.add("--threads", a.threads, "T", "CPU threads; 0 keeps the library's default", cli::Range::non_negative);
  add_device_flag(p, a.device);
  p.parse(argc, argv);
  struct Preset { const char* name; int layers, heads, embed, context; std::int64_t vocab; };
  const Preset presets[] = {{"gpt2", 12, 12, 768, 1024, 50304}, {"mini", 4, 4, 256, 256, 4096}, {"tiny", 2, 2, 64, 32, 512}};
  const Preset* preset = nullptr;
  for (const Preset& s : presets)
    if (a.preset == s.name) preset = &s;
  if (preset == nullptr) p.fail("--preset " + a.preset + ": expected gpt2, mini or tiny");
  if (a.layers == 0) a.layers = preset->layers;
  if (a.heads == 0) a.heads = preset->heads;
  if (a.embed == 0) a.embed = preset->embed;
  if (a.context == 0) a.context = preset->context;
  if (a.vocab == 0) a.vocab = preset->vocab;
  if (a.embed % a.heads != 0)
    p.fail("--heads " + std::to_string(a.heads) + " must divide --embed " + std::to_string(a.embed));
  if (a.steps <= a.warmup) p.fail("--steps must be above --warmup (" + std::to_string(a.warmup) + ")");
  check_device_flag(p, a.device);
  return a;
}

/// Tokens (B, L) int64 -> logits (B, L, vocab): token and position embeddings, the blocks of models.h,
/// a final LayerNorm, and the token embedding's weight again as the output head (weight tying: the
/// head has no parameters of its own, as GPT-2's).
class Gpt2 : public tg::nn::Module {
 public:
  Gpt2(std::int64_t vocab, std::int64_t context, std::int64_t embed, std::int64_t heads, std::int64_t layers)
      : tok(vocab, embed), pos(context, embed), ln_f({embed}) {
    register_module("tok", tok);
    register_module("pos", pos);
    for (std::int64_t i = 0; i < layers; ++i) blocks.add<Block>(embed, heads);
    register_module("blocks", blocks);
    register_module("ln_f", ln_f);
    // GPT-2's initialization of what the head reads: N(0, 0.02) embeddings (PyTorch's default N(0, 1)
    // would make the tied head's first logits about sqrt(embed) times too large).
    tg::NoGradGuard no_grad;
    tg::nn::init::normal_(tok.weight, 0.0, 0.02);
    tg::nn::init::normal_(pos.weight, 0.0, 0.02);
  }
  tg::Tensor forward(const tg::Tensor& idx) override {
    const std::int64_t B = idx.size(0), L = idx.size(1);
    tg::Tensor x = tok(idx) + pos(tg::arange(L, tg::TensorOptions(tg::kInt64).device(idx.device())));
    x = ln_f(blocks(x));
    return tg::matmul(x.reshape({B * L, x.size(2)}), tok.weight.t()).reshape({B, L, -1});
  }
  tg::nn::Embedding tok, pos;
  tg::nn::Sequential blocks;
  tg::nn::LayerNorm ln_f;
};

/// A batch of the synthetic language: inputs (B, L) and targets (B, L), the inputs shifted by one.
std::pair<tg::Tensor, tg::Tensor> batch(const std::vector<std::int64_t>& next, int B, int L, std::mt19937_64& rng,
                                        tg::Device device) {
  std::uniform_int_distribution<std::int64_t> start(0, static_cast<std::int64_t>(next.size()) - 1);
  std::vector<std::int64_t> x(static_cast<std::size_t>(B) * L), y(x.size());
  for (int b = 0; b < B; ++b) {
    std::int64_t t = start(rng);
    for (int i = 0; i < L; ++i) {
      x[static_cast<std::size_t>(b) * L + i] = t;
      t = next[static_cast<std::size_t>(t)];
      y[static_cast<std::size_t>(b) * L + i] = t;
    }
  }
  return {tg::from_vector(x, {B, L}).to(device), tg::from_vector(y, {B, L}).to(device)};
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.threads > 0) tg::set_num_threads(a.threads);
  const tg::Device device = device_from_flag(a.device);
  tg::manual_seed(0);
  Gpt2 model(a.vocab, a.context, a.embed, a.heads, a.layers);
  model.to(device);
  std::int64_t n_params = 0;
  for (const tg::Tensor& p : model.parameters()) n_params += p.numel();
  std::printf("model: %s preset, %d blocks of width %d, %d heads, context %d, vocabulary %lld: %.1fM parameters "
              "on %s, %s\n",
              a.preset.c_str(), a.layers, a.embed, a.heads, a.context, static_cast<long long>(a.vocab),
              static_cast<double>(n_params) / 1e6, device.str().c_str(),
              a.amp ? "bfloat16 autocast" : "float32");
  tg::optim::AdamW optimizer(model.parameters(), tg::optim::AdamOptions(a.lr).betas(0.9, 0.95).weight_decay(0.1));

  std::vector<std::int64_t> next(static_cast<std::size_t>(a.vocab));
  std::iota(next.begin(), next.end(), 0);
  std::mt19937_64 rng(0);
  std::shuffle(next.begin(), next.end(), rng);

  if (device.is_cuda()) tg::cuda::reset_peak_memory_stats();
  else tg::memory::reset_peak_memory_stats();
  std::vector<double> times;
  double first_loss = 0, last_loss = 0;
  const double tokens = static_cast<double>(a.batch_size) * a.context;
  for (int step = 1; step <= a.steps; ++step) {
    auto [x, y] = batch(next, a.batch_size, a.context, rng, device);
    if (device.is_cuda()) tg::cuda::synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    optimizer.zero_grad();
    tg::Tensor loss;
    {
      tg::amp::AutocastGuard autocast(device, tg::kBFloat16, a.amp);
      tg::Tensor logits = model(x);
      loss = tg::cross_entropy(logits.reshape({-1, a.vocab}), y.reshape({-1}));
    }
    loss.backward();
    tg::optim::clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
    const double value = loss.item();   // waits for the step's kernels
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (step > a.warmup) times.push_back(ms);
    if (step == 1) first_loss = value;
    last_loss = value;
    std::printf("step %3d  loss %.4f  %.1f ms  %.0f tokens/s\n", step, value, ms, tokens / (ms / 1000));
    std::fflush(stdout);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  const double peak = static_cast<double>(device.is_cuda() ? tg::cuda::max_memory_allocated()
                                                           : tg::memory::max_memory_allocated());
  std::printf("median step %.2f ms over %zu steps: %.0f tokens/s; peak memory %.1f MiB (%s)\n", median,
              times.size(), tokens / (median / 1000), peak / (1024.0 * 1024.0),
              device.is_cuda() ? "CUDA caching allocator" : "CPU allocator");
  std::printf("loss %.4f -> %.4f (uniform guess: %.4f)\n", first_loss, last_loss,
              std::log(static_cast<double>(a.vocab)));
  if (a.check && !(last_loss < first_loss)) {
    std::fprintf(stderr, "train_gpt2: the loss did not fall (%.4f -> %.4f)\n", first_loss, last_loss);
    return 1;
  }
  if (a.max_loss > 0 && !(last_loss <= a.max_loss)) {
    std::fprintf(stderr, "train_gpt2: the last loss %.4f is above --max-loss %g\n", last_loss, a.max_loss);
    return 1;
  }
  return 0;
}
