// examples/models.h: the models of the training examples, defined once for the examples and for
// bench/bench_train_steps.cpp, which times one step of each against libtorch:
// - Cnn, the Fashion-MNIST CNN of examples/08_train_fashion_mnist.cpp (--model cnn);
// - CharTransformer (with CausalSelfAttention and Block), the GPT-shaped character model of
//   examples/10_train_char_transformer.cpp;
// - WordLSTM, the word-level language model of examples/18_word_language_model.cpp;
// - DcganGenerator and DcganDiscriminator, the GAN of examples/19_dcgan_fashion_mnist.cpp.
#pragma once
#include <tensorgrad.h>

#include <cstdint>
#include <tuple>

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


/// pytorch/examples' word_language_model (its RNNModel with an LSTM, untied weights): words (L, N) int64,
/// time first -> Embedding -> dropout -> LSTM of `layers` layers (dropout between them) -> dropout ->
/// Linear -> logits (L N, vocab). The embedding and the decoder's weight are drawn from U(-0.1, 0.1)
/// and the decoder's bias is zero, as there.
class WordLSTM : public tg::nn::Module {
 public:
  using State = std::tuple<tg::Tensor, tg::Tensor>;   ///< (h, c), each (layers, N, hidden)
  WordLSTM(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers, double dropout)
      : drop(dropout),
        encoder(vocab, embed),
        rnn(tg::nn::LSTMOptions(embed, hidden).num_layers(layers).dropout(dropout)),
        decoder(hidden, vocab) {
    register_module("drop", drop);
    register_module("encoder", encoder);
    register_module("rnn", rnn);
    register_module("decoder", decoder);
    tg::nn::init::uniform_(encoder.weight, -0.1, 0.1);
    tg::nn::init::uniform_(decoder.weight, -0.1, 0.1);
    tg::nn::init::zeros_(decoder.bias);
  }
  /// words (L, N) and the state the previous chunk left (undefined tensors: zeros) -> (logits (L N,
  /// vocab), the state after the last word). Named run, not forward: Module's forward takes one tensor.
  std::tuple<tg::Tensor, State> run(const tg::Tensor& words, const State& state) {
    auto [output, next] = rnn(drop(encoder(words)), state);   // output (L, N, hidden)
    tg::Tensor logits = decoder(drop(output).reshape({-1, output.size(2)}));
    return {logits, next};
  }
  tg::nn::Dropout drop;
  tg::nn::Embedding encoder;
  tg::nn::LSTM rnn;
  tg::nn::Linear decoder;
};

/// pytorch/examples' DCGAN weight init: convolutions from N(0, 0.02), batch-norm scales from N(1, 0.02)
/// and their shifts zero.
inline void dcgan_init(tg::Tensor& conv_weight) { tg::nn::init::normal_(conv_weight, 0.0, 0.02); }
inline void dcgan_init(tg::nn::BatchNorm2d& bn) {
  tg::nn::init::normal_(bn.weight, 1.0, 0.02);
  tg::nn::init::zeros_(bn.bias);
}

/// DCGAN's generator at 28x28 (pytorch/examples' dcgan is 64x64, with one more layer): noise (N, nz, 1,
/// 1) -> ConvTranspose2d 7x7 to (4 ngf, 7, 7) -> BatchNorm2d -> ReLU -> ConvTranspose2d 4x4 stride 2 to
/// (2 ngf, 14, 14) -> BatchNorm2d -> ReLU -> ConvTranspose2d 4x4 stride 2 to (1, 28, 28) -> tanh, so
/// images in [-1, 1]. No biases: each batch norm's shift replaces one.
struct DcganGenerator : tg::nn::Module {
  tg::nn::ConvTranspose2d up1, up2, up3;
  tg::nn::BatchNorm2d bn1, bn2;
  DcganGenerator(int64_t nz, int64_t ngf)
      : up1(nz, 4 * ngf, 7, tg::nn::ConvTranspose2dOptions().bias(false)),
        up2(4 * ngf, 2 * ngf, 4, tg::nn::ConvTranspose2dOptions().stride(2).padding(1).bias(false)),
        up3(2 * ngf, 1, 4, tg::nn::ConvTranspose2dOptions().stride(2).padding(1).bias(false)),
        bn1(4 * ngf),
        bn2(2 * ngf) {
    register_module("up1", up1);
    register_module("bn1", bn1);
    register_module("up2", up2);
    register_module("bn2", bn2);
    register_module("up3", up3);
    for (tg::Tensor* w : {&up1.weight, &up2.weight, &up3.weight}) dcgan_init(*w);
    dcgan_init(bn1);
    dcgan_init(bn2);
  }
  tg::Tensor forward(const tg::Tensor& z) override {
    tg::Tensor h = tg::relu(bn1(up1(z)));   // (N, 4 ngf, 7, 7)
    h = tg::relu(bn2(up2(h)));               // (N, 2 ngf, 14, 14)
    return tg::tanh(up3(h));                 // (N, 1, 28, 28)
  }
};

/// DCGAN's discriminator at 28x28: images (N, 1, 28, 28) in [-1, 1] -> Conv2d 4x4 stride 2 to (ndf, 14,
/// 14) -> LeakyReLU 0.2 -> Conv2d 4x4 stride 2 to (2 ndf, 7, 7) -> BatchNorm2d -> LeakyReLU 0.2 ->
/// Conv2d 7x7 to one logit per image (N). pytorch/examples ends in a sigmoid and BCELoss; the logit
/// with BCEWithLogitsLoss is the same loss, computed without overflow.
struct DcganDiscriminator : tg::nn::Module {
  tg::nn::Conv2d conv1, conv2, conv3;
  tg::nn::BatchNorm2d bn2;
  explicit DcganDiscriminator(int64_t ndf)
      : conv1(1, ndf, 4, tg::nn::Conv2dOptions().stride(2).padding(1).bias(false)),
        conv2(ndf, 2 * ndf, 4, tg::nn::Conv2dOptions().stride(2).padding(1).bias(false)),
        conv3(2 * ndf, 1, 7, tg::nn::Conv2dOptions().bias(false)),
        bn2(2 * ndf) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("conv3", conv3);
    for (tg::Tensor* w : {&conv1.weight, &conv2.weight, &conv3.weight}) dcgan_init(*w);
    dcgan_init(bn2);
  }
  tg::Tensor forward(const tg::Tensor& x) override {
    tg::Tensor h = tg::leaky_relu(conv1(x), 0.2);   // (N, ndf, 14, 14)
    h = tg::leaky_relu(bn2(conv2(h)), 0.2);          // (N, 2 ndf, 7, 7)
    return conv3(h).reshape({-1});                   // (N)
  }
};
