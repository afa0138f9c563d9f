// examples/18_word_language_model.cpp: pytorch/examples' word-level language model (word_language_model,
// its LSTM), ported. The words of the text, split at white space with an "<eos>" after every line, make
// the vocabulary (the --vocab most frequent ones; the others become "<unk>"). The model (WordLSTM in
// examples/models.h): Embedding -> dropout -> a 2-layer LSTM, time first (batch_first false, as there)
// -> dropout -> Linear over the vocabulary.
//
// Training as there: the token stream is cut into --batch-size parallel columns, read in chunks of
// --bptt words (truncated backpropagation through time); the LSTM's state carries from one chunk to the
// next, detached so that backward stops at the chunk's start. Gradients are clipped to norm --clip, SGD
// at --lr (20), and the learning rate is divided by 4 after every epoch whose validation loss is no
// better than the best so far. Each epoch prints the validation perplexity; at the end the best epoch's
// weights are restored and measured on the test split.
//
// The text: Debian's fortune cookies or any text file given with --data (examples/fortunes.h); its
// lines are split 80/10/10 in order into training, validation and test text: 114K training words, 163
// chunks an epoch. At the defaults an epoch took 52 s on one CPU thread of a 2-vCPU EPYC, and the
// validation perplexity was 419 after the first epoch and 287 after the second (a uniform guess: 10,000).
#include <tensorgrad.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cli.h"
#include "device_flag.h"
#include "fortunes.h"   // read_fortunes
#include "models.h"     // WordLSTM

namespace {

struct Args {
  std::string data = "/usr/share/games/fortunes";
  int vocab = 10000;
  int emsize = 256;
  int nhid = 256;
  int nlayers = 2;
  double dropout = 0.2;
  double lr = 20;
  double clip = 0.25;
  int epochs = 6;
  int batch_size = 20;
  int bptt = 35;
  int max_batches = 0;
  int log_interval = 50;
  int threads = 0;
  std::string device = "auto";
  double min_loss_drop = 0;
};

Args parse(int argc, char** argv) {
  Args a;
  cli::Parser p("word_language_model",
                "Trains pytorch/examples' word-level language model (Embedding, 2-layer LSTM, Linear; truncated\n"
                "BPTT, clip_grad_norm, SGD with the learning rate divided by 4 when validation stalls) on\n"
                "Debian's fortune cookies and prints the validation perplexity after every epoch.");
  p.add("--data", a.data, "PATH", "a text file, or a folder of fortune files (the fortunes package's)");
  p.add("--vocab", a.vocab, "V", "words kept, the most frequent first (with <unk> and <eos>); 0: every word",
        cli::Range::non_negative);
  p.add("--emsize", a.emsize, "D", "size of the word embeddings", cli::Range::positive);
  p.add("--nhid", a.nhid, "H", "hidden units per LSTM layer", cli::Range::positive);
  p.add("--nlayers", a.nlayers, "N", "LSTM layers", cli::Range::positive);
  p.add("--dropout", a.dropout, "P", "dropout on the embeddings, between the LSTM layers and on its output, in [0, 1)",
        cli::Range::non_negative);
  p.add("--lr", a.lr, "LR", "initial learning rate of SGD", cli::Range::positive);
  p.add("--clip", a.clip, "C", "gradient norm clipping", cli::Range::positive);
  p.add("--epochs", a.epochs, "N", "passes over the training text", cli::Range::positive);
  p.add("--batch-size", a.batch_size, "B", "parallel columns of the training text", cli::Range::positive);
  p.add("--bptt", a.bptt, "L", "words per chunk (the truncated backpropagation's length)", cli::Range::positive);
  p.add("--max-batches", a.max_batches, "N", "chunks per epoch at most; 0: the whole training text",
        cli::Range::non_negative);
  p.add("--log-interval", a.log_interval, "N", "chunks between progress lines", cli::Range::positive);
  p.add("--threads", a.threads, "T", "CPU threads; 0 keeps the library's default", cli::Range::non_negative);
  add_device_flag(p, a.device);
  p.add("--min-loss-drop", a.min_loss_drop, "X",
        "exit 1 unless the last progress line's training loss is at least X below the first chunk's (0: no bar)",
        cli::Range::non_negative);
  p.parse(argc, argv);
  if (a.dropout >= 1) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", a.dropout);
    p.fail(std::string("--dropout expects a probability in [0, 1), got ") + got);
  }
  if (a.vocab == 1 || a.vocab == 2)
    p.fail("--vocab " + std::to_string(a.vocab) + " leaves no room for words beside <unk> and <eos> (0 or at least 3)");
  check_device_flag(p, a.device);
  return a;
}

/// pytorch/examples' Corpus: the words of each line and an "<eos>", as ids; ids count from the most
/// frequent word (ties in order of first appearance), <unk> standing for the words beyond `max_words`.
struct Corpus {
  std::vector<std::string> words;   // id -> word
  std::vector<int64_t> train, valid, test;

  Corpus(const std::string& text, int max_words) {
    std::vector<std::vector<std::string>> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ws(line);
      std::vector<std::string> tokens;
      for (std::string w; ws >> w;) tokens.push_back(w);
      if (tokens.empty()) continue;   // the blank lines between cookies
      tokens.push_back("<eos>");
      lines.push_back(std::move(tokens));
    }
    std::unordered_map<std::string, int64_t> count, first;
    for (const auto& l : lines)
      for (const std::string& w : l)
        if (count[w]++ == 0) first[w] = static_cast<int64_t>(first.size());
    std::vector<std::string> order;
    for (const auto& [w, c] : count) order.push_back(w);
    std::sort(order.begin(), order.end(), [&](const std::string& x, const std::string& y) {
      return count[x] != count[y] ? count[x] > count[y] : first[x] < first[y];
    });
    const bool cut = max_words > 0 && static_cast<std::size_t>(max_words) < order.size() + 1;
    if (cut) order.resize(static_cast<std::size_t>(max_words) - 1);   // room for <unk>
    std::unordered_map<std::string, int64_t> id;
    for (const std::string& w : order) {
      id[w] = static_cast<int64_t>(words.size());
      words.push_back(w);
    }
    int64_t unk = -1;
    if (cut) {
      unk = static_cast<int64_t>(words.size());
      words.push_back("<unk>");
    }
    for (std::size_t i = 0; i < lines.size(); ++i) {
      std::vector<int64_t>& split = i < lines.size() * 8 / 10 ? train : i < lines.size() * 9 / 10 ? valid : test;
      for (const std::string& w : lines[i]) {
        const auto it = id.find(w);
        split.push_back(it != id.end() ? it->second : unk);
      }
    }
  }
};

/// pytorch/examples' batchify: the ids cut into `columns` equal columns (the tail that does not fill a
/// row dropped), as a (rows, columns) int64 tensor on device: column j is one stretch of the text.
tg::Tensor batchify(const std::vector<int64_t>& ids, int64_t columns, tg::Device device) {
  const int64_t rows = static_cast<int64_t>(ids.size()) / columns;
  std::vector<int64_t> kept(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(rows * columns));
  return tg::from_vector(kept, {columns, rows}).t().contiguous().to(device);
}

/// Chunk i of the batchified text: inputs rows [i, i + len) and targets rows [i + 1, i + 1 + len),
/// flattened (len at most bptt, shorter at the end).
std::pair<tg::Tensor, tg::Tensor> get_batch(const tg::Tensor& source, int64_t i, int64_t bptt) {
  const int64_t len = std::min(bptt, source.size(0) - 1 - i);
  return {source.narrow(0, i, len), source.narrow(0, i + 1, len).reshape({-1})};
}

/// The state with its values, cut from the graph of the chunk that made it (pytorch/examples'
/// repackage_hidden): the next chunk's backward stops there. Before the first chunk the state is
/// undefined (zeros) and stays so.
WordLSTM::State detached(const WordLSTM::State& s) {
  if (!std::get<0>(s).defined()) return s;
  return {std::get<0>(s).detach(), std::get<1>(s).detach()};
}

/// The mean cross-entropy per word over a batchified split, in eval mode (no dropout), the state
/// carried across its chunks as in training.
double evaluate(WordLSTM& model, const tg::Tensor& source, int64_t bptt) {
  tg::NoGradGuard no_grad;
  model.eval();
  WordLSTM::State state;
  double total = 0;
  for (int64_t i = 0; i + 1 < source.size(0); i += bptt) {
    auto [x, y] = get_batch(source, i, bptt);
    auto [logits, next] = model.run(x, state);
    total += static_cast<double>(x.size(0)) * tg::cross_entropy(logits, y).item();
    state = next;
  }
  model.train();
  return total / static_cast<double>(source.size(0) - 1);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The whole program after the flags: returns the exit status.
int train_and_test(const Args& a) {
  if (a.threads > 0) tg::set_num_threads(a.threads);
  const tg::Device device = device_from_flag(a.device);
  const Corpus corpus(read_fortunes(a.data, "word_language_model"), a.vocab);
  const std::size_t eval_batch = 10;   // pytorch/examples' evaluation batch size
  if (corpus.train.size() < static_cast<std::size_t>(a.batch_size) * 2 ||
      corpus.valid.size() < eval_batch * 2 || corpus.test.size() < eval_batch * 2) {
    std::fprintf(stderr, "word_language_model: %zu words of text in %s is too little for --batch-size %d\n",
                 corpus.train.size() + corpus.valid.size() + corpus.test.size(), a.data.c_str(), a.batch_size);
    return 1;
  }
  std::printf("data: %zu training, %zu validation and %zu test words from %s; vocabulary %zu\n",
              corpus.train.size(), corpus.valid.size(), corpus.test.size(), a.data.c_str(), corpus.words.size());
  const tg::Tensor train = batchify(corpus.train, a.batch_size, device);
  const tg::Tensor valid = batchify(corpus.valid, static_cast<int64_t>(eval_batch), device);
  const tg::Tensor test = batchify(corpus.test, static_cast<int64_t>(eval_batch), device);

  tg::manual_seed(0);
  const int64_t ntokens = static_cast<int64_t>(corpus.words.size());
  WordLSTM model(ntokens, a.emsize, a.nhid, a.nlayers, a.dropout);
  model.to(device);
  int64_t n_params = 0;
  for (const tg::Tensor& p : model.parameters()) n_params += p.numel();
  std::printf("model: Embedding(%lld, %d) -> %s -> Linear(%d, %lld), dropout %g: %lld parameters on %s\n",
              static_cast<long long>(ntokens), a.emsize, model.rnn.name().c_str(), a.nhid,
              static_cast<long long>(ntokens), a.dropout, static_cast<long long>(n_params), device.str().c_str());

  // pytorch/examples updates p -= lr grad by hand: plain SGD, whose lr the epochs' loop divides
  tg::optim::SGD optimizer(model.parameters(), tg::optim::SGDOptions(a.lr));
  const int64_t chunks = (train.size(0) - 2) / a.bptt + 1;   // rows 0, bptt, ... below rows - 1
  const int64_t per_epoch = a.max_batches > 0 ? std::min<int64_t>(a.max_batches, chunks) : chunks;
  const auto t0 = std::chrono::steady_clock::now();
  double best_val = INFINITY, first_loss = NAN, last_interval_loss = NAN;
  std::vector<tg::Tensor> best;   // the parameters after the best epoch
  for (int epoch = 1; epoch <= a.epochs; ++epoch) {
    const auto epoch_start = std::chrono::steady_clock::now();
    model.train();
    WordLSTM::State state;
    double interval_loss = 0;
    int in_interval = 0;
    for (int64_t batch = 0; batch < per_epoch; ++batch) {
      auto [x, y] = get_batch(train, batch * a.bptt, a.bptt);
      state = detached(state);
      optimizer.zero_grad();
      auto [logits, next] = model.run(x, state);
      state = next;
      tg::Tensor loss = tg::cross_entropy(logits, y);
      loss.backward();
      tg::optim::clip_grad_norm(model.parameters(), a.clip);
      optimizer.step();
      const double l = loss.item();
      if (!std::isfinite(l)) {
        std::fprintf(stderr, "word_language_model: the training loss is %g at epoch %d, chunk %lld (try a lower --lr)\n",
                     l, epoch, static_cast<long long>(batch + 1));
        return 1;
      }
      if (std::isnan(first_loss)) first_loss = l;
      interval_loss += l;
      ++in_interval;
      if (in_interval == a.log_interval || batch + 1 == per_epoch) {
        last_interval_loss = interval_loss / in_interval;
        const double s = seconds_since(epoch_start);
        std::printf("| epoch %3d | %5lld/%5lld chunks | lr %.2f | ms/chunk %6.1f | loss %5.2f | ppl %8.2f\n", epoch,
                    static_cast<long long>(batch + 1), static_cast<long long>(per_epoch), optimizer.lr(),
                    1e3 * s / static_cast<double>(batch + 1), last_interval_loss, std::exp(last_interval_loss));
        std::fflush(stdout);
        interval_loss = 0;
        in_interval = 0;
      }
    }
    const double val = evaluate(model, valid, a.bptt);
    std::printf("| end of epoch %3d | time %6.1f s | valid loss %5.2f | valid ppl %8.2f\n", epoch,
                seconds_since(epoch_start), val, std::exp(val));
    std::fflush(stdout);
    if (val < best_val) {
      best_val = val;
      best.clear();
      for (const tg::Tensor& p : model.parameters()) best.push_back(p.detach().clone());
    } else {
      optimizer.set_lr(optimizer.lr() / 4.0);   // no better than the best epoch: anneal
    }
  }
  if (!best.empty()) {   // the best epoch's weights, as pytorch/examples reloads its saved model
    tg::NoGradGuard no_grad;
    std::vector<tg::Tensor> params = model.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) params[i].copy_(best[i]);
  }
  const double test_loss = evaluate(model, test, a.bptt);
  std::printf("| end of training | test loss %5.2f | test ppl %8.2f | %.1f s\n", test_loss, std::exp(test_loss),
              seconds_since(t0));
  std::printf("training loss fell from %.3f (first chunk) to %.3f (last progress line)\n", first_loss,
              last_interval_loss);
  if (a.min_loss_drop > 0 && !(first_loss - last_interval_loss >= a.min_loss_drop)) {
    std::fprintf(stderr, "word_language_model: the training loss fell by %.3f, less than --min-loss-drop %g\n",
                 first_loss - last_interval_loss, a.min_loss_drop);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  try {
    return train_and_test(a);
  } catch (const tg::Error& e) {   // e.g. a --device that this build or machine does not have
    std::fprintf(stderr, "word_language_model: %s\n", e.what());
    return 1;
  }
}
