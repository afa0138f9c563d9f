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
// softmax, matmul), as in bench_layers. The models are copied from the examples (whose definitions are
// private to them); keep them in step. No target: the rows show where a whole model stands. Flags: --help.
#include <memory>

#include "common.h"

namespace {

/// examples/08_train_fashion_mnist.cpp's Cnn.
struct Cnn : tg::nn::Module {
  tg::nn::Conv2d conv1{1, 32, 3, tg::nn::Conv2dOptions().padding(1)};
  tg::nn::BatchNorm2d bn1{32};
  tg::nn::Conv2d conv2{32, 64, 3, tg::nn::Conv2dOptions().padding(1)};
  tg::nn::BatchNorm2d bn2{64};
  tg::nn::MaxPool2d pool{2};
  tg::nn::Flatten flatten;
  tg::nn::Linear fc1{64 * 7 * 7, 128}, fc2{128, 10};
  tg::nn::Dropout dropout{0.25};
  Cnn() {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("pool", pool);
    register_module("flatten", flatten);
    register_module("fc1", fc1);
    register_module("dropout", dropout);
    register_module("fc2", fc2);
  }
  tg::Variable forward(const tg::Variable& x) override {
    tg::Variable h = pool(tg::relu(bn1(conv1(x))));
    h = pool(tg::relu(bn2(conv2(h))));
    return fc2(dropout(tg::relu(fc1(flatten(h)))));
  }
};

bench::Work tg_cnn_step(int64_t batch) {
  struct State {
    Cnn model;
    std::unique_ptr<tg::optim::SGD> optimizer;
    tg::nn::CrossEntropyLoss criterion;
    tg::Variable x, y;
  };
  auto s = std::make_shared<State>();
  s->optimizer = std::make_unique<tg::optim::SGD>(s->model.parameters(), tg::optim::SGDOptions(0.05).momentum(0.9));
  s->x = tg::randn({batch, 1, 28, 28});
  s->y = tg::randint(0, 10, {batch});
  return [s] {
    s->optimizer->zero_grad();
    tg::Variable loss = s->criterion(s->model(s->x), s->y);
    loss.backward();
    s->optimizer->step();
  };
}

/// examples/10_train_char_transformer.cpp's CausalSelfAttention, Block and CharTransformer.
class CausalSelfAttention : public tg::nn::Module {
 public:
  CausalSelfAttention(int64_t embed, int64_t heads) : qkv(embed, 3 * embed), proj(embed, embed), heads_(heads) {
    register_module("qkv", qkv);
    register_module("proj", proj);
  }
  tg::Variable forward(const tg::Variable& x) override {
    const int64_t B = x.size(0), L = x.size(1), D = x.size(2), hd = D / heads_;
    tg::Variable all = qkv(x.reshape({B * L, D})).reshape({B, L, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
    tg::Variable y = tg::scaled_dot_product_attention(all.select(0, 0), all.select(0, 1), all.select(0, 2), {}, 0.0,
                                                      /*is_causal=*/true);
    return proj(y.transpose(1, 2).reshape({B * L, D})).reshape({B, L, D});
  }
  tg::nn::Linear qkv, proj;

 private:
  int64_t heads_;
};

class Block : public tg::nn::Module {
 public:
  Block(int64_t embed, int64_t heads)
      : ln1({embed}), ln2({embed}), attn(embed, heads), fc(embed, 4 * embed), out(4 * embed, embed) {
    register_module("ln1", ln1);
    register_module("attn", attn);
    register_module("ln2", ln2);
    register_module("fc", fc);
    register_module("out", out);
  }
  tg::Variable forward(const tg::Variable& x) override {
    const int64_t B = x.size(0), L = x.size(1), D = x.size(2);
    tg::Variable h = x + attn(ln1(x));
    tg::Variable m = out(tg::gelu(fc(ln2(h).reshape({B * L, D}))));
    return h + m.reshape({B, L, D});
  }
  tg::nn::LayerNorm ln1, ln2;
  CausalSelfAttention attn;
  tg::nn::Linear fc, out;
};

class CharTransformer : public tg::nn::Module {
 public:
  CharTransformer(int64_t vocab, int64_t context, int64_t embed, int64_t heads, int64_t layers)
      : tok(vocab, embed), pos(context, embed), ln_f({embed}), head(embed, vocab) {
    register_module("tok", tok);
    register_module("pos", pos);
    for (int64_t i = 0; i < layers; ++i) blocks.add<Block>(embed, heads);
    register_module("blocks", blocks);
    register_module("ln_f", ln_f);
    register_module("head", head);
  }
  tg::Variable forward(const tg::Variable& idx) override {
    const int64_t B = idx.size(0), L = idx.size(1);
    tg::Variable x = tok(idx) + pos(tg::arange(L, tg::TensorOptions(tg::kInt64)));
    x = ln_f(blocks(x));
    return head(x.reshape({B * L, x.size(2)})).reshape({B, L, -1});
  }
  tg::nn::Embedding tok, pos;
  tg::nn::Sequential blocks;
  tg::nn::LayerNorm ln_f;
  tg::nn::Linear head;
};

bench::Work tg_char_step(const bench::torch_side::CharModel& m) {
  struct State {
    std::unique_ptr<CharTransformer> model;
    std::unique_ptr<tg::optim::AdamW> optimizer;
    tg::Variable x, y;
  };
  auto s = std::make_shared<State>();
  s->model = std::make_unique<CharTransformer>(m.vocab, m.context, m.embed, m.heads, m.layers);
  s->optimizer = std::make_unique<tg::optim::AdamW>(s->model->parameters(),
                                                    tg::optim::AdamOptions(3e-3).betas(0.9, 0.95).weight_decay(0.1));
  s->x = tg::randint(0, m.vocab, {m.batch, m.context});
  s->y = tg::randint(0, m.vocab, {m.batch, m.context});
  return [s] {
    s->optimizer->zero_grad();
    tg::Variable logits = (*s->model)(s->x);
    tg::Variable loss = tg::cross_entropy(logits.reshape({-1, logits.size(2)}), s->y.reshape({-1}));
    loss.backward();
    tg::optim::clip_grad_norm(s->model->parameters(), 1.0);
    s->optimizer->step();
  };
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_train_steps",
      "One training step of examples/08 (--model cnn, batch 64, SGD) and examples/10 (character transformer, "
      "batch 32 x 64, AdamW), tensorgrad vs libtorch: ms per step.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("one training step of each training example; ms per step, median [min..max]", o);
  Table table({"example", "tensorgrad ms", "libtorch ms", "tg/torch"});

  const int64_t cnn_batch = o.smoke ? 2 : 64;
  const auto sc = measure({tg_cnn_step(cnn_batch), torch_side::cnn_step(cnn_batch)}, plan_for(o, 3, 5, 2.0));
  const double rc = time_ratio(sc[0], sc[1]);
  table.row({"08 cnn, batch " + std::to_string(cnn_batch) + ", SGD momentum", cell(sc[0], 1e3), cell(sc[1], 1e3),
             ratio_str(rc)});

  torch_side::CharModel m;   // the example's defaults
  if (o.smoke) {
    m.batch = 2;
    m.context = 8;
    m.embed = 16;
    m.heads = 2;
    m.layers = 1;
  }
  const auto st = measure({tg_char_step(m), torch_side::char_transformer_step(m)}, plan_for(o, 3, 5, 2.0));
  const double rt = time_ratio(st[0], st[1]);
  table.row({"10 char transformer, batch " + std::to_string(m.batch) + " x " + std::to_string(m.context) + ", AdamW",
             cell(st[0], 1e3), cell(st[1], 1e3), ratio_str(rt)});
  table.print();
  print_footer();
  return 0;
}
