// bench/bench_train_steps.cpp: one training step of each training example, tensorgrad vs libtorch in the
// same process, the same model built in both, the same batch and optimizer:
// - the CNN of examples/08_train_fashion_mnist.cpp (--model cnn): conv 3x3 32, batchnorm, relu, maxpool 2,
//   conv 3x3 64, batchnorm, relu, maxpool 2, linear 3136-128, relu, dropout 0.25, linear 128-10;
//   cross-entropy on a (64, 1, 28, 28) batch, SGD lr 0.05 momentum 0.9 (the example's defaults);
// - the character transformer of examples/10_train_char_transformer.cpp: token and position embeddings,
//   2 pre-norm blocks of width 128 (4 heads, causal attention, GELU MLP 128-512-128), a final LayerNorm and
//   a linear head; cross-entropy over a (32, 64) batch of characters from a 96-character alphabet,
//   clip_grad_norm 1.0, AdamW lr 3e-3 betas (0.9, 0.95) weight decay 0.1 (the example's defaults).
// A step is zero_grad, forward, loss, backward, (clip,) optimizer step, on random inputs. libtorch 1.13
// has no scaled_dot_product_attention: its attention is the math composition (matmul, masked_fill,
// softmax, matmul), as in bench_layers. The tensorgrad models are the examples' own (examples/models.h).
// - the same transformer at GPT-2's block shape (2 blocks of width 768, 12 heads, MLP 3072), batch 4 x 128
//   tokens of a 1024-token vocabulary;
// - the word-level LSTM language model of examples/18_word_language_model.cpp: embedding 256, a 2-layer
//   LSTM of width 256 (dropout 0.2), a linear head over a 10,000-word vocabulary; cross-entropy over a
//   chunk of 35 x 20 words, the LSTM's state carried (detached) from step to step, clip_grad_norm 0.25,
//   SGD lr 20 (the example's defaults, at PTB's vocabulary size);
// - the generator's step of examples/19_dcgan_fashion_mnist.cpp's DCGAN at batch 64: the ConvTranspose2d
//   generator (noise 100 -> 256 x 7 x 7 -> 128 x 14 x 14 -> 1 x 28 x 28), the discriminator on its fakes,
//   BCEWithLogits against "real", backward, Adam lr 2e-4 betas (0.5, 0.999) on the generator.
// No target: the rows show where a whole model stands. With --isolate each engine runs in a process of
// its own (Note [Engines in their own processes] in bench/common.h), as multi-threaded rows should.
// Flags: --help.
#include <memory>

#include "common.h"
#include "models.h"

namespace {

bench::Work tg_cnn_step(int64_t batch) {
  struct State {
    Cnn model;
    std::unique_ptr<tg::optim::SGD> optimizer;
    tg::nn::CrossEntropyLoss criterion;
    tg::Tensor x, y;
  };
  auto s = std::make_shared<State>();
  s->optimizer = std::make_unique<tg::optim::SGD>(s->model.parameters(), tg::optim::SGDOptions(0.05).momentum(0.9));
  s->x = tg::randn({batch, 1, 28, 28});
  s->y = tg::randint(0, 10, {batch});
  return [s] {
    s->optimizer->zero_grad();
    tg::Tensor loss = s->criterion(s->model(s->x), s->y);
    loss.backward();
    s->optimizer->step();
  };
}

bench::Work tg_char_step(const bench::torch_side::CharModel& m) {
  struct State {
    std::unique_ptr<CharTransformer> model;
    std::unique_ptr<tg::optim::AdamW> optimizer;
    tg::Tensor x, y;
  };
  auto s = std::make_shared<State>();
  s->model = std::make_unique<CharTransformer>(m.vocab, m.context, m.embed, m.heads, m.layers);
  s->optimizer = std::make_unique<tg::optim::AdamW>(s->model->parameters(),
                                                    tg::optim::AdamOptions(3e-3).betas(0.9, 0.95).weight_decay(0.1));
  s->x = tg::randint(0, m.vocab, {m.batch, m.context});
  s->y = tg::randint(0, m.vocab, {m.batch, m.context});
  return [s] {
    s->optimizer->zero_grad();
    tg::Tensor logits = (*s->model)(s->x);
    tg::Tensor loss = tg::cross_entropy(logits.reshape({-1, logits.size(2)}), s->y.reshape({-1}));
    loss.backward();
    tg::optim::clip_grad_norm(s->model->parameters(), 1.0);
    s->optimizer->step();
  };
}

bench::Work tg_word_lm_step(const bench::torch_side::WordLmModel& m) {
  struct State {
    std::unique_ptr<WordLSTM> model;
    std::unique_ptr<tg::optim::SGD> optimizer;
    tg::Tensor x, y;
    WordLSTM::State state;
  };
  auto s = std::make_shared<State>();
  s->model = std::make_unique<WordLSTM>(m.vocab, m.embed, m.hidden, m.layers, m.dropout);
  s->optimizer = std::make_unique<tg::optim::SGD>(s->model->parameters(), tg::optim::SGDOptions(20));
  s->x = tg::randint(0, m.vocab, {m.bptt, m.batch});
  s->y = tg::randint(0, m.vocab, {m.bptt * m.batch});
  s->state = {tg::zeros({m.layers, m.batch, m.hidden}), tg::zeros({m.layers, m.batch, m.hidden})};
  return [s] {
    s->optimizer->zero_grad();
    auto [logits, next] =
        s->model->run(s->x, {std::get<0>(s->state).detach(), std::get<1>(s->state).detach()});
    tg::cross_entropy(logits, s->y).backward();
    tg::optim::clip_grad_norm(s->model->parameters(), 0.25);
    s->optimizer->step();
    s->state = next;
  };
}

bench::Work tg_dcgan_generator_step(const bench::torch_side::DcganModel& m) {
  struct State {
    std::unique_ptr<DcganGenerator> g;
    std::unique_ptr<DcganDiscriminator> d;
    std::unique_ptr<tg::optim::Adam> optimizer;
    tg::nn::BCEWithLogitsLoss criterion;
    tg::Tensor noise, ones;
  };
  auto s = std::make_shared<State>();
  s->g = std::make_unique<DcganGenerator>(m.nz, m.ngf);
  s->d = std::make_unique<DcganDiscriminator>(m.ndf);
  s->optimizer = std::make_unique<tg::optim::Adam>(s->g->parameters(), tg::optim::AdamOptions(2e-4).betas(0.5, 0.999));
  s->noise = tg::randn({m.batch, m.nz, 1, 1});
  s->ones = tg::ones({m.batch});
  return [s] {
    s->optimizer->zero_grad();
    s->d->zero_grad();   // the discriminator gets gradients too; libtorch's side resets them as well
    s->criterion((*s->d)((*s->g)(s->noise)), s->ones).backward();
    s->optimizer->step();
  };
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_train_steps",
      "One training step of examples/08 (--model cnn, batch 64, SGD), examples/10 (character transformer, "
      "batch 32 x 64, AdamW), the transformer at GPT-2's block shape, examples/18 (LSTM language model, "
      "35 x 20 words, SGD) and examples/19 (DCGAN generator, batch 64, Adam), tensorgrad vs libtorch: ms per step.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("one training step of each training example; ms per step, median [min..max]", o);
  Table table({"example", "tensorgrad ms", "libtorch ms", "tg/torch"});

  const int64_t cnn_batch = o.smoke ? 2 : 64;
  const Plan plan = plan_for(o, 3, 5, 2.0);
  const auto sc = measure_engines("cnn", [&] { return tg_cnn_step(cnn_batch); },
                                  [&] { return torch_side::cnn_step(cnn_batch); }, plan, o);
  table.row({"08 cnn, batch " + std::to_string(cnn_batch) + ", SGD momentum", cell(sc[0], 1e3), cell(sc[1], 1e3),
             ratio_str(time_ratio(sc[0], sc[1]))});

  torch_side::CharModel m;   // the example's defaults
  // GPT-2's block shape (width 768, 12 heads, MLP 3072) at a CPU-sized context and batch; a 1024-token
  // vocabulary instead of GPT-2's 50,257 keeps the head from dominating the blocks.
  torch_side::CharModel g;
  g.vocab = 1024;
  g.context = 128;
  g.embed = 768;
  g.heads = 12;
  g.layers = 2;
  g.batch = 4;
  if (o.smoke) {
    for (torch_side::CharModel* c : {&m, &g}) {
      c->batch = 2;
      c->context = 8;
      c->embed = 16;
      c->heads = 2;
      c->layers = 1;
    }
  }
  const auto st = measure_engines("char", [&] { return tg_char_step(m); },
                                  [&] { return torch_side::char_transformer_step(m); }, plan, o);
  table.row({"10 char transformer, batch " + std::to_string(m.batch) + " x " + std::to_string(m.context) + ", AdamW",
             cell(st[0], 1e3), cell(st[1], 1e3), ratio_str(time_ratio(st[0], st[1]))});
  const auto sg = measure_engines("gpt2", [&] { return tg_char_step(g); },
                                  [&] { return torch_side::char_transformer_step(g); }, plan_for(o, 2, 5, 3.0), o);
  table.row({"GPT-2-shaped, " + std::to_string(g.layers) + " blocks x width " + std::to_string(g.embed) + ", " +
                 std::to_string(g.heads) + " heads, batch " + std::to_string(g.batch) + " x " +
                 std::to_string(g.context) + ", vocab " + std::to_string(g.vocab) + ", AdamW",
             cell(sg[0], 1e3), cell(sg[1], 1e3), ratio_str(time_ratio(sg[0], sg[1]))});

  torch_side::WordLmModel w;   // the example's defaults at a 10,000-word vocabulary
  torch_side::DcganModel dc;   // the example's defaults
  if (o.smoke) {
    w.vocab = 50;
    w.embed = w.hidden = 8;
    w.bptt = 4;
    w.batch = 2;
    dc.nz = 8;
    dc.ngf = dc.ndf = 4;
    dc.batch = 2;
  }
  const auto sw = measure_engines("word_lm", [&] { return tg_word_lm_step(w); },
                                  [&] { return torch_side::word_lm_step(w); }, plan, o);
  table.row({"18 LSTM LM step, " + std::to_string(w.layers) + " layers x " + std::to_string(w.hidden) + ", vocab " +
                 std::to_string(w.vocab) + ", bptt " + std::to_string(w.bptt) + " x batch " + std::to_string(w.batch) +
                 ", SGD",
             cell(sw[0], 1e3), cell(sw[1], 1e3), ratio_str(time_ratio(sw[0], sw[1]))});
  const auto sd = measure_engines("dcgan", [&] { return tg_dcgan_generator_step(dc); },
                                  [&] { return torch_side::dcgan_generator_step(dc); }, plan, o);
  table.row({"19 DCGAN generator step, batch " + std::to_string(dc.batch) + ", Adam", cell(sd[0], 1e3),
             cell(sd[1], 1e3), ratio_str(time_ratio(sd[0], sd[1]))});
  table.print();
  print_footer();
  return 0;
}
