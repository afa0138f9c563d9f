// examples/models.h: the models of the training examples, defined once for the examples and for
// bench/bench_train_steps.cpp, which times one step of each against libtorch:
// - Cnn, the Fashion-MNIST CNN of examples/08_train_fashion_mnist.cpp (--model cnn);
// - CharTransformer (with CausalSelfAttention and Block), the GPT-shaped character model of
//   examples/10_train_char_transformer.cpp.
#pragma once
#include <tensorgrad.h>

#include <cstdint>

/// --model cnn: (N, 1, 28, 28) -> conv 3x3 32 -> batchnorm -> relu -> maxpool 2 (14x14) -> conv 3x3 64
/// -> batchnorm -> relu -> maxpool 2 (7x7) -> linear 3136-128 -> relu -> dropout 0.25 -> linear 128-10.
/// The same layers and names as its PyTorch twin, so a PyTorch checkpoint of it loads.
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
  tg::Tensor forward(const tg::Tensor& x) override {
    tg::Tensor h = pool(tg::relu(bn1(conv1(x))));   // (N, 32, 14, 14)
    h = pool(tg::relu(bn2(conv2(h))));                // (N, 64, 7, 7)
    return fc2(dropout(tg::relu(fc1(flatten(h)))));
  }
};

/// Causal multi-head self-attention: one Linear makes the queries, keys and values of every head,
/// scaled_dot_product_attention(is_causal) lets position t see positions <= t only, a Linear mixes the heads.
class CausalSelfAttention : public tg::nn::Module {
 public:
  CausalSelfAttention(int64_t embed, int64_t heads) : qkv(embed, 3 * embed), proj(embed, embed), heads_(heads) {
    register_module("qkv", qkv);
    register_module("proj", proj);
  }
  tg::Tensor forward(const tg::Tensor& x) override {   // x (B, L, D)
    const int64_t B = x.size(0), L = x.size(1), D = x.size(2), hd = D / heads_;
    // (B L, 3 D) -> (B, L, 3, heads, hd) -> (3, B, heads, L, hd)
    tg::Tensor all = qkv(x.reshape({B * L, D})).reshape({B, L, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
    tg::Tensor y = tg::scaled_dot_product_attention(all.select(0, 0), all.select(0, 1), all.select(0, 2),
                                                      /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true);
    return proj(y.transpose(1, 2).reshape({B * L, D})).reshape({B, L, D});   // heads side by side again
  }
  tg::nn::Linear qkv, proj;

 private:
  int64_t heads_;
};

/// x + attention(norm(x)), then x + mlp(norm(x)): the pre-norm residual block of GPT-2.
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
  tg::Tensor forward(const tg::Tensor& x) override {
    const int64_t B = x.size(0), L = x.size(1), D = x.size(2);
    tg::Tensor h = x + attn(ln1(x));
    tg::Tensor m = out(tg::gelu(fc(ln2(h).reshape({B * L, D}))));
    return h + m.reshape({B, L, D});
  }
  tg::nn::LayerNorm ln1, ln2;
  CausalSelfAttention attn;
  tg::nn::Linear fc, out;
};

/// Characters (B, L) int64 -> logits (B, L, vocab).
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
  tg::Tensor forward(const tg::Tensor& idx) override {
    const int64_t B = idx.size(0), L = idx.size(1);
    tg::Tensor x = tok(idx) + pos(tg::arange(L, tg::TensorOptions(tg::kInt64).device(idx.device())));
    x = ln_f(blocks(x));
    return head(x.reshape({B * L, x.size(2)})).reshape({B, L, -1});
  }
  tg::nn::Embedding tok, pos;
  tg::nn::Sequential blocks;
  tg::nn::LayerNorm ln_f;
  tg::nn::Linear head;
};

