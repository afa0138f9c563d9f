// examples/10_train_char_transformer.cpp: a small character-level transformer written with tensorgrad's
// modules, trained from C++ and sampled as it learns. The model is GPT-shaped: token and position
// embeddings (nn::Embedding), pre-norm blocks of causal self-attention (tg::scaled_dot_product_attention
// with is_causal) and a GELU MLP, a final LayerNorm and a linear head over the characters. AdamW with
// gradient clipping and a cosine learning-rate schedule.
//
// The text: the fortune cookies of Debian's `fortunes` package, or any text file given with --data
// (examples/fortunes.h). 90% of it trains, the last 10% measures the validation loss. Every
// --sample-every steps the program prints both losses and a sample; --metrics writes them as CSV for
// tools/plot_metrics.sh.
#include <tensorgrad.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "device_flag.h"
#include "fortunes.h"   // read_fortunes
#include "models.h"     // CharTransformer

namespace {

struct Args {
  std::string data = "/usr/share/games/fortunes";
  int steps = 1500;
  int batch_size = 32;
  int context = 64;
  int layers = 2;
  int heads = 4;
  int embed = 128;
  double lr = 3e-3;
  int sample_every = 250;
  int sample_length = 240;
  int threads = 0;
  std::string device = "auto";
  std::string metrics;
  double max_loss = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  cli::Parser p("train_char_transformer",
                "Trains a character-level transformer (causal self-attention, AdamW, cosine schedule) on\n"
                "Debian's fortune cookies and prints samples as it learns.");
  p.add("--data", a.data, "PATH", "a text file, or a folder of fortune files (the fortunes package's)");
  p.add("--steps", a.steps, "N", "optimizer steps", cli::Range::positive);
  p.add("--batch-size", a.batch_size, "B", "sequences per step", cli::Range::positive);
  p.add("--context", a.context, "L", "characters per sequence (the attention window)", cli::Range::positive);
  p.add("--layers", a.layers, "N", "transformer blocks", cli::Range::positive);
  p.add("--heads", a.heads, "H", "attention heads per block (must divide --embed)", cli::Range::positive);
  p.add("--embed", a.embed, "D", "width of the embeddings and of every block", cli::Range::positive);
  p.add("--lr", a.lr, "LR", "peak learning rate of AdamW, annealed to 0 by a cosine", cli::Range::positive);
  p.add("--sample-every", a.sample_every, "N", "steps between evaluations and samples", cli::Range::positive);
  p.add("--sample-length", a.sample_length, "N", "characters per printed sample", cli::Range::non_negative);
  p.add("--threads", a.threads, "T", "CPU threads; 0 keeps the library's default", cli::Range::non_negative);
  add_device_flag(p, a.device);
  p.add("--metrics", a.metrics, "CSV", "write step, train_loss, val_loss, lr and seconds to this CSV file");
  p.add("--max-loss", a.max_loss, "X", "exit 1 when the final validation loss is above X (0: no bar)",
        cli::Range::non_negative);
  p.parse(argc, argv);
  if (a.embed % a.heads != 0)
    p.fail("--heads " + std::to_string(a.heads) + " must divide --embed " + std::to_string(a.embed));
  check_device_flag(p, a.device);
  return a;
}

/// The characters of the text as indices into its sorted alphabet.
struct Corpus {
  std::vector<char> alphabet;
  std::array<int64_t, 256> index{};
  std::vector<int64_t> train, val;

  explicit Corpus(const std::string& text) {
    std::array<bool, 256> seen{};
    for (unsigned char c : text) seen[c] = true;
    for (int c = 0; c < 256; ++c)
      if (seen[c]) {
        index[c] = static_cast<int64_t>(alphabet.size());
        alphabet.push_back(static_cast<char>(c));
      }
    const std::size_t cut = text.size() * 9 / 10;
    for (std::size_t i = 0; i < text.size(); ++i)
      (i < cut ? train : val).push_back(index[static_cast<unsigned char>(text[i])]);
  }
};

/// B random windows of L + 1 characters: inputs (B, L) and the next characters (B, L), on device.
std::pair<tg::Tensor, tg::Tensor> batch(const std::vector<int64_t>& data, int64_t B, int64_t L, std::mt19937_64& rng,
                                            tg::Device device) {
  std::uniform_int_distribution<std::size_t> start(0, data.size() - static_cast<std::size_t>(L) - 1);
  std::vector<int64_t> x, y;
  x.reserve(static_cast<std::size_t>(B * L));
  y.reserve(static_cast<std::size_t>(B * L));
  for (int64_t b = 0; b < B; ++b) {
    const std::size_t s = start(rng);
    x.insert(x.end(), data.begin() + static_cast<std::ptrdiff_t>(s), data.begin() + static_cast<std::ptrdiff_t>(s + L));
    y.insert(y.end(), data.begin() + static_cast<std::ptrdiff_t>(s + 1),
             data.begin() + static_cast<std::ptrdiff_t>(s + L + 1));
  }
  return {tg::from_vector(x, {B, L}).to(device), tg::from_vector(y, {B, L}).to(device)};
}

/// The mean next-character cross-entropy over (B, L) predictions.
tg::Tensor loss_of(CharTransformer& model, const tg::Tensor& x, const tg::Tensor& y) {
  tg::Tensor logits = model(x);
  return tg::cross_entropy(logits.reshape({-1, logits.size(2)}), y.reshape({-1}));
}

/// The validation loss over a fixed set of windows (the same ones at every evaluation).
double validation_loss(CharTransformer& model, const Corpus& corpus, const Args& a, tg::Device device) {
  tg::NoGradGuard no_grad;
  model.eval();
  std::mt19937_64 rng(1234);
  double total = 0;
  const int rounds = 4;
  for (int r = 0; r < rounds; ++r) {
    auto [x, y] = batch(corpus.val, a.batch_size, a.context, rng, device);
    total += loss_of(model, x, y).item();
  }
  model.train();
  return total / rounds;
}

/// n characters drawn one at a time from the model's softmax (temperature 0.8), after a newline.
std::string sample(CharTransformer& model, const Corpus& corpus, int n, int64_t context, std::mt19937_64& rng,
                   tg::Device device) {
  tg::NoGradGuard no_grad;
  model.eval();
  std::vector<int64_t> ids{corpus.index[static_cast<unsigned char>('\n')]};
  std::string out;
  for (int i = 0; i < n; ++i) {
    const std::size_t from = ids.size() > static_cast<std::size_t>(context) ? ids.size() - static_cast<std::size_t>(context) : 0;
    std::vector<int64_t> window(ids.begin() + static_cast<std::ptrdiff_t>(from), ids.end());
    const int64_t L = static_cast<int64_t>(window.size());
    tg::Tensor logits = model(tg::from_vector(window, {1, L}).to(device));
    tg::Tensor last = logits.select(1, L - 1).select(0, 0);   // (vocab)
    std::vector<float> p = tg::softmax(last / 0.8, 0).to(tg::Device::cpu()).to_vector<float>();
    std::discrete_distribution<int64_t> pick(p.begin(), p.end());
    ids.push_back(pick(rng));
    out += corpus.alphabet[static_cast<std::size_t>(ids.back())];
  }
  model.train();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  if (a.threads > 0) tg::set_num_threads(a.threads);
  const tg::Device device = device_from_flag(a.device);
  const Corpus corpus(read_fortunes(a.data, "train_char_transformer"));
  if (corpus.val.size() <= static_cast<std::size_t>(a.context) + 1) {
    std::fprintf(stderr, "train_char_transformer: %zu characters of text is too little for --context %d\n",
                 corpus.train.size() + corpus.val.size(), a.context);
    return 1;
  }
  std::printf("data: %zu training and %zu validation characters from %s, %zu distinct\n", corpus.train.size(),
              corpus.val.size(), a.data.c_str(), corpus.alphabet.size());

  tg::manual_seed(0);
  const int64_t vocab = static_cast<int64_t>(corpus.alphabet.size());
  CharTransformer model(vocab, a.context, a.embed, a.heads, a.layers);
  model.to(device);
  int64_t n_params = 0;
  for (const tg::Tensor& p : model.parameters()) n_params += p.numel();
  std::printf("model: %d blocks of width %d, %d heads, context %d: %lld parameters on %s\n", a.layers, a.embed,
              a.heads, a.context, static_cast<long long>(n_params), device.str().c_str());

  tg::optim::AdamW optimizer(model.parameters(), tg::optim::AdamOptions(a.lr).betas(0.9, 0.95).weight_decay(0.1));
  tg::optim::CosineAnnealingLR schedule(optimizer, a.steps);
  std::FILE* csv = nullptr;
  if (!a.metrics.empty()) {
    csv = std::fopen(a.metrics.c_str(), "w");
    if (csv == nullptr) {
      std::fprintf(stderr, "train_char_transformer: cannot write --metrics %s\n", a.metrics.c_str());
      return 1;
    }
    std::fprintf(csv, "step,train_loss,val_loss,lr,seconds\n");
  }

  std::mt19937_64 data_rng(0), sample_rng(1);
  const auto t0 = std::chrono::steady_clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const double first_val = validation_loss(model, corpus, a, device);
  std::printf("step %5d  val loss %.3f (uniform guess: %.3f)\n", 0, first_val, std::log(static_cast<double>(vocab)));
  if (csv != nullptr) std::fprintf(csv, "0,,%.5f,%.6g,0\n", first_val, optimizer.lr());
  double running = 0, last_val = first_val;
  int in_running = 0;
  for (int step = 1; step <= a.steps; ++step) {
    auto [x, y] = batch(corpus.train, a.batch_size, a.context, data_rng, device);
    optimizer.zero_grad();
    tg::Tensor loss = loss_of(model, x, y);
    loss.backward();
    tg::optim::clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
    schedule.step();
    running += loss.item();
    ++in_running;
    if (step % a.sample_every == 0 || step == a.steps) {
      last_val = validation_loss(model, corpus, a, device);
      const double train = running / in_running;
      std::printf("step %5d  train loss %.3f  val loss %.3f  lr %.2e  %.1f s\n", step, train, last_val,
                  optimizer.lr(), seconds());
      if (csv != nullptr) std::fprintf(csv, "%d,%.5f,%.5f,%.6g,%.3f\n", step, train, last_val, optimizer.lr(), seconds());
      if (a.sample_length > 0)
        std::printf("---- sample ----\n%s\n----------------\n",
                    sample(model, corpus, a.sample_length, a.context, sample_rng, device).c_str());
      std::fflush(stdout);
      running = 0;
      in_running = 0;
    }
  }
  if (csv != nullptr) std::fclose(csv);
  std::printf("validation loss fell from %.3f to %.3f in %d steps (%.1f s)\n", first_val, last_val, a.steps, seconds());
  if (a.max_loss > 0 && !(last_val <= a.max_loss)) {
    std::fprintf(stderr, "train_char_transformer: final validation loss %.3f is above --max-loss %g\n", last_val,
                 a.max_loss);
    return 1;
  }
  return 0;
}
