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
//   tokens of a 1024-token vocabulary.
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

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_train_steps",
      "One training step of examples/08 (--model cnn, batch 64, SGD), examples/10 (character transformer, "
      "batch 32 x 64, AdamW) and the transformer at GPT-2's block shape, tensorgrad vs libtorch: ms per step.");
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
  table.print();
  print_footer();
  return 0;
}
