// bench/torch_side.h: the libtorch half of every benchmark, behind an interface without torch headers,
// so that only bench/torch_side.cpp pays for parsing <torch/torch.h>. Each factory builds its inputs once
// and returns a Work that runs one repetition. Built without libtorch (TG_BENCH_WITH_TORCH undefined),
// available() is false and every factory returns an empty Work.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bench {
namespace torch_side {

using Work = std::function<void()>;

bool available();
std::string version();      // "1.13.0"
/// at::set_num_interop_threads(1) on the first call, then at::set_num_threads(n).
void set_threads(int n);
/// torch::set_flush_denormal (at::globalContext().setFlushDenormal).
void set_flush_denormal(bool on);

enum class ChainMode { NoGrad, Record, Backward };
/// y = x; len/2 times y = (y + a) * b, on (numel) float tensors requiring grad; Backward adds .sum().backward().
Work op_chain(int64_t numel, int len, ChainMode mode);

/// One SGD step (lr 0.01) of Linear 784-128, ReLU, Linear 128-10, CrossEntropyLoss on random (batch, 784).
/// Gradients are reset to undefined before the step (set_to_none, as tensorgrad's zero_grad does).
/// autocast: the forward and loss under CPU autocast in bfloat16 (at::autocast, what
/// `with torch.autocast("cpu")` sets), its cast cache cleared after the forward as on leaving the region.
Work mlp_step(int64_t batch, bool autocast = false);

/// torch::matmul of two random (n, n) float32 matrices into a fresh output.
Work matmul(int64_t n);

enum class Elementwise { Add, Relu, Exp, ReluForwardBackward, Cumsum, Multinomial };
/// Fresh output every call; ReluForwardBackward: y = relu(x), y.backward(ones), x.grad reset; Cumsum
/// along the one dim; Multinomial one draw with replacement from each of 256 rows of numel / 256
/// positive weights (|x| + 0.1).
Work elementwise(Elementwise op, int64_t numel);

/// cross_entropy(logits (n, c) requiring grad, random targets), mean, then backward; grad reset.
Work softmax_cross_entropy(int64_t n, int64_t c);

/// conv2d forward + backward: input (n, c, h, w) and weight (o, c, k, k) requiring grad, padding k / 2,
/// bias; backward of the output's sum with a fixed random gradient; gradients reset after each call.
Work conv2d(int64_t n, int64_t c, int64_t h, int64_t w, int64_t o, int64_t k);
/// layer_norm over the last dim of (rows, d) with weight and bias, forward + backward (a fixed random
/// output gradient); gradients reset after each call.
Work layer_norm(int64_t rows, int64_t d);
/// Attention forward + backward on q, k, v (batch, heads, len, dim) requiring grad, composed as
/// PyTorch's math path (libtorch 1.13 has no scaled_dot_product_attention): softmax(q k^T / sqrt(dim),
/// causal mask by masked_fill with -inf) v, backward with a fixed random output gradient; gradients
/// reset after each call. With autocast the forward runs under CPU bfloat16 autocast (as `with
/// torch.autocast("cpu")`) and the output gradient is bfloat16.
Work attention(int64_t batch, int64_t heads, int64_t len, int64_t dim, bool causal, bool autocast = false);
/// torch::embedding of (tokens) random ids into a (vocab, dim) weight requiring grad, forward +
/// backward (dense gradient) with a fixed random output gradient; the gradient reset after each call.
Work embedding(int64_t vocab, int64_t dim, int64_t tokens);

/// One SGD step (lr 0.05, momentum 0.9) of examples/08's --model cnn (conv 3x3 1-32 padding 1, BatchNorm2d,
/// ReLU, MaxPool2d 2, conv 3x3 32-64, BatchNorm2d, ReLU, MaxPool2d 2, Linear 3136-128, ReLU, Dropout 0.25,
/// Linear 128-10) in training mode, CrossEntropyLoss on a random (batch, 1, 28, 28) batch; gradients reset
/// to undefined before the step.
Work cnn_step(int64_t batch);

/// A Hessian-vector product of an MSE loss: MLP in-128-128-1 with tanh on random (batch, in) float32
/// inputs and targets; torch::autograd::grad of the loss with create_graph, then of the gradient's dot
/// product with fixed random vectors, with respect to every parameter.
Work mlp_hvp(int64_t batch, int64_t in);
/// One Adam step (lr 1e-3) of examples/16's physics-informed network in float32: MLP 1-width-width-1
/// with tanh on (points, 1) collocation points; u'' by two torch::autograd::grad calls with
/// create_graph, loss mse(u'', rhs) + 10 mean(u(boundary)^2); gradients reset before the step.
Work pinn_step(int64_t points, int64_t width);

/// The sizes of examples/10's character transformer (its defaults) and of its training batch.
struct CharModel {
  int64_t vocab = 96, context = 64, embed = 128, heads = 4, layers = 2, batch = 32;   ///< as named
};
/// One AdamW step (lr 3e-3, betas (0.9, 0.95), weight decay 0.1) of examples/10's character transformer:
/// token + position embeddings, pre-norm blocks (LayerNorm, causal attention composed as attention()
/// does, LayerNorm, Linear, GELU, Linear, residuals), a final LayerNorm and a linear head; cross-entropy
/// over random (batch, context) characters, clip_grad_norm_ 1.0; gradients reset before the step.
Work char_transformer_step(const CharModel& m);

/// The sizes of examples/18's word-level LSTM language model and of its training chunk.
struct WordLmModel {
  int64_t vocab = 10000, embed = 256, hidden = 256, layers = 2, bptt = 35, batch = 20;   ///< as named
  double dropout = 0.2;   ///< on the embeddings, between the LSTM layers and on its output
};
/// One step of examples/18's model (pytorch/examples' word_language_model): Embedding, dropout, LSTM
/// (time first), dropout, Linear; cross-entropy over a random (bptt, batch) chunk and its targets,
/// backward, clip_grad_norm_ 0.25, SGD lr 20. The LSTM's state carries from one call to the next,
/// detached (truncated backpropagation through time); gradients reset before the step.
Work word_lm_step(const WordLmModel& m);

/// The sizes of examples/19's DCGAN.
struct DcganModel {
  int64_t nz = 100, ngf = 64, ndf = 64, batch = 64;   ///< as named
};
/// The generator's step of examples/19's DCGAN: noise (batch, nz, 1, 1) -> generator (ConvTranspose2d
/// 7x7 to 4 ngf, BatchNorm2d, ReLU, ConvTranspose2d 4x4 stride 2 to 2 ngf, BatchNorm2d, ReLU,
/// ConvTranspose2d 4x4 stride 2 to 1 channel, tanh; no biases) -> discriminator (Conv2d 4x4 stride 2 to
/// ndf, LeakyReLU 0.2, Conv2d 4x4 stride 2 to 2 ndf, BatchNorm2d, LeakyReLU 0.2, Conv2d 7x7 to 1) ->
/// BCEWithLogits against ones, backward, Adam (lr 2e-4, betas (0.5, 0.999)) step on the generator. Both
/// in training mode; both networks' gradients reset before the step.
Work dcgan_generator_step(const DcganModel& m);

/// Bytes per sample that the graph of Linear(widths[0], widths[1]) -> ReLU -> ... -> Linear(.., widths.back())
/// keeps for backward on a random (batch, widths[0]) input: the bytes live in libtorch's CPU allocator after
/// the forward (wrapped with a counting allocator for the call), less the output's. NaN without libtorch.
/// autocast: both forwards under CPU bfloat16 autocast, the bytes counted for the second one, after a
/// first forward filled the cast cache (so the weights' bfloat16 copies do not count as activations).
double activation_bytes_per_sample(const std::vector<int64_t>& widths, int64_t batch, bool autocast = false);

/// The `make train` model (Linear in-hidden, ReLU, Linear hidden-out) with SGD + momentum, trained on data
/// copied once from tensorgrad's dataset, starting from tensorgrad's initial weights (copied too).
class FashionTrainer {
 public:
  struct Init {
    const float *w1, *b1, *w2, *b2;   // (hidden, in), (hidden), (out, hidden), (out)
    int64_t in, hidden, out;
  };
  FashionTrainer(const float* train_x, const int64_t* train_y, int64_t n_train, const float* test_x,
                 const int64_t* test_y, int64_t n_test, const Init& init, double lr, double momentum);
  ~FashionTrainer();
  FashionTrainer(const FashionTrainer&) = delete;
  FashionTrainer& operator=(const FashionTrainer&) = delete;
  /// One epoch over the samples in `order`, in batches of batch_size, at learning rate lr: mean loss.
  double train_epoch(const std::vector<int64_t>& order, int64_t batch_size, double lr);
  double test_accuracy();   // fraction of the test set classified correctly

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace torch_side
}  // namespace bench
