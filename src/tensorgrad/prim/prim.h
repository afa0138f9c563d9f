/// \file
/// prim/prim.h: graph-free tensor math. Each function validates its operands (shapes, dtypes,
/// devices: the messages of docs/guarantees.md), allocates the output and calls the device's backend.
/// Differentiable ops (ops/) are built from these; backward closures call them too.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "tensorgrad/backend/backend.h"
#include "tensorgrad/core/raw_tensor.h"

namespace tg {

/// The position of the one random stream: draws take counters offset, offset + 1, ... of the Philox
/// stream keyed by seed (tg::get_rng_state; PyTorch returns the same pair packed in a ByteTensor).
struct RngState {
  uint64_t seed = 0;     ///< the key, set by manual_seed
  uint64_t offset = 0;   ///< the counter of the next draw
};

namespace prim {

// ---- creation
/// A contiguous tensor with unspecified contents (RawTensor::empty).
RawTensor empty(const Shape& shape, DType dtype = kFloat32, Device device = Device::cpu());
/// A contiguous tensor with every element set to value (converted to dtype).
RawTensor full(const Shape& shape, double value, DType dtype = kFloat32, Device device = Device::cpu());
/// Zeros with t's shape, dtype and device.
RawTensor zeros_like(const RawTensor& t);
/// The 0-d tensor a scalar operand becomes next to `like` (x * 2.5): of dtype scalar_dtype(value,
/// like.dtype()), on like's device.
RawTensor scalar_like(double value, const RawTensor& like);
/// The dtype of a C++ scalar next to a tensor of dtype `like`: like itself, except float32 for a
/// fractional or non-finite value next to an integer or bool tensor, and int64 for a value other than
/// 0 and 1 next to a bool tensor. See Note [Type promotion] in prim/promote.cpp.
DType scalar_dtype(double value, DType like);
/// PyTorch's torch.result_type of two tensors: see Note [Type promotion] in prim/promote.cpp.
DType result_type(const RawTensor& a, const RawTensor& b);
/// PyTorch's torch.can_cast: whether an in-place op may store a result of dtype `from` into a
/// tensor of dtype `to` (not floating into integer, not anything but bool into bool).
bool can_cast(DType from, DType to);
/// 0, 1, ..., n-1 as a 1-D tensor; ShapeError when n < 0.
RawTensor arange(int64_t n, DType dtype, Device device);
/// The (n, n) identity matrix; ShapeError when n < 0.
RawTensor eye(int64_t n, DType dtype, Device device);
/// Copies host memory holding numel(shape) elements of dtype onto device.
RawTensor from_host(const void* data, const Shape& shape, DType dtype, Device device);

// ---- random (Philox; see kernels/philox.h). One generator: manual_seed resets it.
/// Seeds the process-wide generator and resets its offset (tg::manual_seed calls it).
void manual_seed(uint64_t seed);
/// A fresh tensor of draws from kind's distribution with parameters a, b (philox::sample). Each call
/// reserves numel() counters of the one stream, so values depend neither on the device nor on the
/// thread count. drawn_at, when given, receives the stream position of the draw (for random_at).
RawTensor random(const philox::Distribution& dist, const Shape& shape, DType dtype, Device device,
              RngState* drawn_at = nullptr);
/// The draws random() made at stream position `at`, again; the generator is left alone.
RawTensor random_at(const philox::Distribution& dist, const Shape& shape, DType dtype, Device device, RngState at);
/// torch.multinomial's draws with replacement from each row of probs (R, C) or (C), C > 0, floating, by the
/// inverse CDF: out (R, S) int64, the category of each u (R, S) (float64 in [0, 1)), the first whose
/// running sum (in float64), divided by the row's total, is above u. Error (torch.multinomial's
/// words) for a NaN, an infinity or a negative probability, or a row whose sum is not positive. One
/// pass over each row's probabilities where the backend draws them (Backend::sample_categories), else
/// a composition of scans and comparisons.
RawTensor sample_categories(const RawTensor& probs, const RawTensor& u);
/// Error naming op, in torch.multinomial's words, unless every element of probs (floating) is finite
/// and non-negative and every row (along the last dim) has a positive sum. Reads the verdict back: on
/// CUDA a synchronization, the price of PyTorch's argument errors.
void check_distribution(const RawTensor& probs, const char* op);
/// The generator's position (tg::get_rng_state).
RngState get_rng_state();
/// Moves the generator to `state` (tg::set_rng_state).
void set_rng_state(RngState state);
/// The generator's position, then advances it by count counters at once: what a CUDA graph replay
/// draws (prim/cuda_graph.cpp).
RngState reserve_random(uint64_t count);

// ---- copies and fills (in place: bump the version counter of the written storage)
/// Sets every element of dst (any strides) to value.
void fill_(const RawTensor& dst, double value);
/// Copies src into dst, across devices too. ShapeError when src does not broadcast to dst's shape.
void copy_(const RawTensor& dst, const RawTensor& src);       // src broadcast to dst's shape; any dtypes
/// t.to(device): t itself when already there.
RawTensor to_device(const RawTensor& t, Device device);

// ---- elementwise
/// op(x) into a fresh contiguous tensor; x must be floating (DTypeError).
RawTensor unary(UnaryOp op, const RawTensor& x, UnaryArgs args = {});
/// dx = op'(x, y) * dy for y = op(x), with dy's shape. x or y may be undefined when the op's functor
/// does not read it (fn::Relu::uses_x, ...).
RawTensor unary_backward(UnaryOp op, const RawTensor& x, const RawTensor& y, const RawTensor& dy, UnaryArgs args = {});
/// x with each value rounded to lowp's precision (float16 or bfloat16), kept in x's dtype: x.to(lowp)
/// .to(x.dtype()) in one pass (fn::RoundToBFloat16, fn::RoundToFloat16). x floating.
RawTensor round_to_precision(const RawTensor& x, DType lowp);
/// round_to_precision in place.
void round_to_precision_(const RawTensor& x, DType lowp);
/// a op b with broadcasting, on one device (DeviceError), computed in result_type(a, b) (float32 for
/// the division of integers); comparisons give bool. name is the op in error messages.
RawTensor binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const char* name);   // broadcasts
/// self = self op other in place; other broadcasts to self's shape, not the other way (ShapeError);
/// the result type must cast to self's dtype (DTypeError otherwise, as an int64 tensor += 0.5).
void binary_(BinaryOp op, const RawTensor& self, const RawTensor& other, const char* name);   // self op= other
/// a + b, broadcast.
inline RawTensor add(const RawTensor& a, const RawTensor& b) { return binary(BinaryOp::Add, a, b, "add"); }
/// a - b, broadcast.
inline RawTensor sub(const RawTensor& a, const RawTensor& b) { return binary(BinaryOp::Sub, a, b, "sub"); }
/// a * b, broadcast.
inline RawTensor mul(const RawTensor& a, const RawTensor& b) { return binary(BinaryOp::Mul, a, b, "mul"); }
/// a / b, broadcast.
inline RawTensor div(const RawTensor& a, const RawTensor& b) { return binary(BinaryOp::Div, a, b, "div"); }
/// a * s.
RawTensor mul(const RawTensor& a, double s);
/// cond ? a : b elementwise, all three broadcast; cond is bool (DTypeError otherwise), the result
/// is of result_type(a, b).
RawTensor where(const RawTensor& cond, const RawTensor& a, const RawTensor& b);

// ---- reductions. dims empty = all dims. ArgMax/ArgMin take at most one dim and give int64.
/// Reduces x over dims (each at most once; negative dims count from the end), dropping them unless
/// keepdim. ArgMax/ArgMin over all dims give the flattened index. Max, Min and the arg reductions of
/// an empty tensor or over a size-0 dim throw IndexError; name is the op in messages.
RawTensor reduce(ReduceOp op, const RawTensor& x, const std::vector<int64_t>& dims, bool keepdim, const char* name);
/// The sum of all elements, 0-d.
inline RawTensor sum(const RawTensor& x) { return reduce(ReduceOp::Sum, x, {}, false, "sum"); }
/// The inclusive scan of x along dim (op Add: running sums, Mul: running products; from the end when
/// reverse), a fresh tensor of x's shape: float16 and bfloat16 are accumulated in float32 and rounded
/// once (their result keeps their dtype), integers and bool give int64 (PyTorch's cumsum dtypes); a
/// 0-d x is one element. name is the op in messages.
RawTensor scan(BinaryOp op, const RawTensor& x, int64_t dim, bool reverse, const char* name);
/// Sums x down to `shape`, which x's shape broadcasts from (the engine's undoing of broadcasting).
RawTensor sum_to(const RawTensor& x, const Shape& shape);

// ---- linear algebra: a (M, K) or (B, M, K), b (K, N) or (B, K, N) -> (M, N) or (B, M, N).
// Transposed views are passed to the BLAS as flags, not copied.
/// Whether the products below convert dtype operands to float32 on device and round the result back
/// (Note [Low precision through float32] in prim/blas.cpp): float16 and bfloat16 where the device's
/// Backend::gemm_takes says no (the CPU, except bfloat16 on a CPU with native bfloat16 products: Note
/// [bfloat16 GEMMs through oneDNN] in backend/cpu/blas.cpp).
bool products_through_float32(DType dtype, Device device);
/// The matrix product: a (M, K) or (B, M, K), b (K, N) or (B, K, N) -> (M, N), or (B, M, N) when either
/// is 3-D (a batch of 1 broadcasts). Floating, same dtype and device; ShapeError for other ranks,
/// mismatched K, or sizes above 2^31-1.
RawTensor matmul(const RawTensor& a, const RawTensor& b);
/// linear's forward: bias (N) + a (M, K) . b (K, N), 2-D (PyTorch's addmm(bias, a, b)); floating, one
/// dtype and device. One launch where the backend folds the bias into the GEMM (Backend::gemm_epilogue,
/// Note [Bias folded into the GEMM]); otherwise the bias is copied into every row of the result and the
/// product accumulated onto it (beta = 1). ShapeError as matmul, and for a bias that is not (N).
RawTensor addmm(const RawTensor& bias, const RawTensor& a, const RawTensor& b);
/// The product a (M, K) . b (K, N), 2-D, and the row sums of a (M): linear's weight gradient g^T x and
/// bias gradient (the column sums of g, with a = g^T) in one GEMM where the backend folds the sums
/// (Note [Bias folded into the GEMM]); otherwise matmul and a sum. Checks as matmul.
std::pair<RawTensor, RawTensor> matmul_row_sums(const RawTensor& a, const RawTensor& b);

// ---- softmax family and the fused loss
/// softmax (log = false) or log_softmax (log = true) of floating x along dim.
RawTensor softmax(const RawTensor& x, int64_t dim, bool log);
/// The gradient dx from y = softmax(x, dim, log) and dy = dL/dy.
RawTensor softmax_backward(const RawTensor& y, const RawTensor& dy, int64_t dim, bool log);
/// What cross_entropy computes: the per-row loss (N) and lse (N) always; with args.total the 0-d
/// total (the sum, or with args.mean the mean over the rows not ignored, NaN when there are none) and
/// with args.mean the 0-d count of those rows that the backward divides by.
struct CrossEntropyResult {
  RawTensor loss;    ///< (N) per row
  RawTensor lse;     ///< (N) log-sum-exp per row, for the backward
  RawTensor total;   ///< 0-d sum or mean; undefined unless args.total
  RawTensor count;   ///< 0-d rows not ignored; undefined unless args.mean
};
/// logits (N, C) float, target (N) int64. Targets outside [0, C) that are not args.ignore_index throw
/// IndexError (for CUDA tensors at the next sync); label_smoothing outside [0, 1] throws Error.
CrossEntropyResult cross_entropy(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args);
/// dloss (N) or 0-d (broadcast to every row) -> dlogits (N, C); with args.mean dloss is divided by
/// count (the forward's CrossEntropyResult::count) inside the kernel.
RawTensor cross_entropy_backward(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                              const RawTensor& lse, const RawTensor& dloss, const RawTensor& count);

// ---- indexing
/// The entries of x at index (0-D or 1-D int64, each in [0, size(dim))) along dim: x's shape with
/// size(dim) replaced by index.numel(). Out-of-range indices throw IndexError.
RawTensor index_select(const RawTensor& x, int64_t dim, const RawTensor& index);
/// dst.index_select(dim, index) += src in place (repeated indices add up); dst must be contiguous.
void index_add_(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src);
/// out[i][j][k] = x[index[i][j][k]][j][k] for dim 0 (likewise for other dims): index (int64) has
/// x's rank and sizes no larger than x's off dim; the result has index's shape.
RawTensor gather(const RawTensor& x, int64_t dim, const RawTensor& index);
/// The reverse of gather: dst[index[i][j][k]][j][k] += src[i][j][k] for dim 0, in place; src has
/// index's shape.
void scatter_add_(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src);
/// Concatenates xs (at least one; same rank and device; equal sizes off dim) along dim, in the
/// promoted dtype of all of them.
RawTensor cat(const std::vector<RawTensor>& xs, int64_t dim);

// ---- sorting (Note [Sort order] in prim/sort.cpp)
/// The values of a sort and the int64 positions they came from along the sorted dim.
struct Sorted {
  RawTensor values;    ///< x's dtype
  RawTensor indices;   ///< int64, values' shape
};
/// x sorted along dim, stable (torch.sort(x, dim, descending, stable=True)); x of any dtype; a 0-d x
/// is its own sort (index 0). Contiguous results of x's shape.
Sorted sort(const RawTensor& x, int64_t dim, bool descending);
/// The k largest (or smallest) entries along dim, in sorted order (torch.topk): the first k of a
/// stable sort, so ties go to the lower index. IndexError unless 0 <= k <= size(dim).
Sorted topk(const RawTensor& x, int64_t k, int64_t dim, bool largest);
/// The k-th smallest entry along dim, k in [1, size(dim)] (IndexError otherwise): entry k-1 of the
/// stable ascending sort (torch.kthvalue), dim removed unless keepdim.
Sorted kthvalue(const RawTensor& x, int64_t k, int64_t dim, bool keepdim);
// ---- convolution and pooling (prim/conv.cpp; geometry checked by the ops in ops/conv.cpp)
/// x (N, C, H, W), weight (O, C / groups, KH, KW), bias (O) or undefined -> (N, O, OH, OW), as args
/// describes. Floating, one dtype and device (float16/bfloat16 through float32).
RawTensor conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& args);
/// The gradients of conv2d from dy (N, O, OH, OW): dx, dweight, dbias (undefined when not asked for).
struct Conv2dGrads {
  RawTensor dx;        ///< x's shape
  RawTensor dweight;   ///< weight's shape
  RawTensor dbias;     ///< (O)
};
/// conv2d's backward: each gradient only when its want_* flag is set; x may be undefined unless
/// want_dweight, weight unless want_dx (the shapes come from args).
Conv2dGrads conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& args,
                            bool want_dx, bool want_dweight, bool want_dbias);
/// x (N, C, H, W) -> the window maxima (N, C, OH, OW) and their int64 positions h W + w in each plane.
std::pair<RawTensor, RawTensor> max_pool2d(const RawTensor& x, const Pool2dArgs& args);
/// dx of x_shape from dy (N, C, OH, OW) and the indices max_pool2d returned.
RawTensor max_pool2d_backward(const RawTensor& dy, const RawTensor& indices, const Shape& x_shape, const Pool2dArgs& args);
/// x (N, C, H, W) -> the window means (N, C, OH, OW) (adaptive windows with args.adaptive).
RawTensor avg_pool2d(const RawTensor& x, const Pool2dArgs& args);
/// dx of x_shape from dy (N, C, OH, OW).
RawTensor avg_pool2d_backward(const RawTensor& dy, const Shape& x_shape, const Pool2dArgs& args);

// ---- normalization rows (prim/norm.cpp; shapes checked by the ops in ops/norm.cpp)
/// The forward of layer_norm over rows.
struct LayerNorm {
  RawTensor y;      ///< x's shape and dtype
  RawTensor mean;   ///< (M): each row's mean (float32 for 16-bit x)
  RawTensor rstd;   ///< (M): 1 / sqrt(biased variance + eps) of each row (float32 for 16-bit x)
};
/// Normalizes each row of x (M, D) (Backend::layer_norm): y = (x - mean) rstd w + b, w and b (D) when
/// defined. Floating, one dtype and device for x, w and b (float16/bfloat16 through float32).
LayerNorm layer_norm(const RawTensor& x, const RawTensor& w, const RawTensor& b, double eps);
/// The gradients of layer_norm: dx (M, D), dw, db (D), each only when its want_* flag is set.
struct LayerNormGrads {
  RawTensor dx;   ///< x's shape
  RawTensor dw;   ///< (D)
  RawTensor db;   ///< (D)
};
/// layer_norm's backward from dy (M, D), with the forward's x, mean, rstd and w (undefined when there
/// was none).
LayerNormGrads layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean, const RawTensor& rstd,
                                   const RawTensor& w, bool want_dx, bool want_dw, bool want_db);

// ---- recurrent cells (prim/rnn.cpp; Note [Fused recurrent cells] in kernels/rnn.h)
/// The forward of the fused LSTM cell.
struct LstmCell {
  RawTensor hc;   ///< (2, N, H): h' and c', the inputs' dtype
  RawTensor ws;   ///< (N, H, 8): the gates' sums x + h, then i, f, g, o (float32 for 16-bit inputs)
};
/// The LSTM cell's pointwise step from the two products' gates xg, hg (N, 4H) and the cell state cx
/// (N, H): one floating dtype and device (float16/bfloat16 through float32).
LstmCell lstm_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& cx);
/// The gradients of the fused LSTM cell.
struct LstmCellGrads {
  RawTensor dgates;   ///< (N, 4H): the gradient of either product's gates
  RawTensor dcx;      ///< (N, H)
};
/// lstm_cell's backward from dhc (2, N, H), the gradients of h' and c', with the forward's cx and
/// workspace.
LstmCellGrads lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws);
/// The forward of the fused GRU cell.
struct GruCell {
  RawTensor hy;   ///< (N, H), the inputs' dtype
  RawTensor ws;   ///< (N, H, 8): the reset and update gates' sums, x_n, h_n, r, z, n, 0 (float32 for 16-bit inputs)
};
/// The GRU cell's pointwise step from the two products' gates xg, hg (N, 3H) and the state hx (N, H).
GruCell gru_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& hx);
/// The gradients of the fused GRU cell.
struct GruCellGrads {
  RawTensor dxg;   ///< (N, 3H): the input product's gates
  RawTensor dhg;   ///< (N, 3H): the state product's gates
  RawTensor dhx;   ///< (N, H)
};
/// gru_cell's backward from dhy (N, H), with the forward's hx and workspace.
GruCellGrads gru_cell_backward(const RawTensor& dhy, const RawTensor& hx, const RawTensor& ws);

/// One direction of one LSTM or GRU layer, its whole time loop (Note [Fused recurrent layer] in
/// prim/rnn.cpp): what the forward returns and the backward reads.
struct RecurrentLayer {
  RawTensor out;        ///< (R + 2B, H), LSTM (2, R + 2B, H): the states h (and c): h0, every row's, the final ones
  RawTensor ws;         ///< (R, H, 8): every row's cell workspace (LstmCell::ws, GruCell::ws)
  RawTensor joined;     ///< the states read where sequences join (backwards through a packed batch)
  RawTensor joined_c;   ///< the same for the LSTM's cell state
};
/// The time loop of one direction of an LSTM (lstm) or GRU layer over R rows in a packed sequence's
/// layout: step t is batch_sizes[t] consecutive rows (positive, non-increasing; B = batch_sizes[0]),
/// forwards or, reverse, from the last step. xp (R, gates H) holds every row's input product W_ih x +
/// b_ih; h0, c0 (B, H) the initial states (c0 LSTM only); w_hh (gates H, H) and b_hh (gates H,
/// undefined: none). One dtype (float32 or float64) and device. In out, the output rows start at row
/// B forwards and at row 0 in reverse; the final states are its last B rows.
RecurrentLayer recurrent_layer(bool lstm, const RawTensor& xp, const std::vector<int64_t>& batch_sizes,
                               const RawTensor& h0, const RawTensor& c0, const RawTensor& w_hh, const RawTensor& b_hh,
                               bool reverse);
/// The gradients of recurrent_layer.
struct RecurrentLayerGrads {
  RawTensor dxp;     ///< (R, gates H)
  RawTensor dh0;     ///< (B, H)
  RawTensor dc0;     ///< (B, H), LSTM only
  RawTensor dw_hh;   ///< (gates H, H), when asked for
  RawTensor db_hh;   ///< (gates H), when asked for
};
/// recurrent_layer's backward from dout (the gradient of RecurrentLayer::out) with the forward's
/// result and w_hh; dw_hh and db_hh only when want_weights.
RecurrentLayerGrads recurrent_layer_backward(bool lstm, const RawTensor& dout, const RecurrentLayer& forward,
                                             const RawTensor& w_hh, const std::vector<int64_t>& batch_sizes,
                                             bool reverse, bool want_weights);

// ---- CTC loss (prim/ctc_loss.cpp; Note [ctc_loss] in kernels/ctc.h)
/// The forward of the CTC loss.
struct CtcLoss {
  RawTensor nll;     ///< (N) float64: each entry's negative log-likelihood (inf without an alignment)
  RawTensor alpha;   ///< (N, T, 2S + 1) float64: the forward variables, for ctc_loss_backward
};
/// The CTC forward: log_probs (T, N, C) floating (float16/bfloat16 through float32), targets int64 or
/// int32 holding each entry's labels at its offset, lengths (3, N) int64 (input lengths, target
/// lengths, offsets), all on one device; the lengths already checked against args (ops/ctc_loss.cpp).
/// The labels are checked here (CPU) or by the kernel (CUDA, raised at the next sync).
CtcLoss ctc_loss(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths, const CtcArgs& args);
/// The CTC gradient rule (T, N, C) of log_probs' dtype (Note [ctc_loss gradient] in kernels/ctc.h) from
/// the forward's result, each entry's rows scaled as args says.
RawTensor ctc_loss_backward(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                            const CtcLoss& forward, const CtcArgs& args);

// ---- fused attention (prim/attention.cpp; shapes and mask strides built by ops/attention.cpp)
/// The forward of the fused attention: out and the log-sum-exp of each row of scores.
struct Attention {
  RawTensor out;   ///< (batch..., L, Ev), q's dtype; for 4-D and wider, the heads innermost in memory
  RawTensor lse;   ///< (B, L), attention_lse_dtype(q's dtype)
};
/// The batch dims of t (batch..., rows, width) folded into at most two steps, as AttentionArgs reads its
/// operands and mask: dims of size 1 dropped, a dim merged into the one before it where that one steps
/// over it exactly (broadcast dims of stride 0 included); stride_row is t's stride of its dim -2.
/// std::nullopt when more than two steps remain (or t has fewer than 2 dims).
std::optional<AttentionRows> attention_rows(const RawTensor& t);
/// The dtype of the saved log-sum-exp: float64 for float64 inputs, else float32.
DType attention_lse_dtype(DType dtype);
/// softmax(q k^T scale + mask) v for q (batch..., L, E), k (batch..., S, E), v (batch..., S, Ev) with
/// the same batch dims, B their product, as args describes (S > 0, E > 0), through Backend::attention;
/// one floating dtype and device. Operands are read in place where their strides allow (Note
/// [Attention operands in place] in prim/attention.cpp).
Attention attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& args);
/// The gradients of attention.
struct AttentionGrads {
  RawTensor dq;   ///< q's shape
  RawTensor dk;   ///< k's shape
  RawTensor dv;   ///< v's shape
};
/// attention's backward from dout (out's shape, any strides), with its out and lse: the probabilities
/// recomputed.
AttentionGrads attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& out,
                                  const RawTensor& lse, const RawTensor& dout, const AttentionArgs& args);

// ---- optimizer updates (prim/optim.cpp; kernels/optim.h)
/// Fused SGD updates of params in place (PyTorch's torch.optim.SGD formulas): every parameter's
/// tensors checked first (contiguous, of its shape, dtype and device; the velocity only with
/// momentum), then one Backend::sgd_step per (device, dtype) in the parameters' order; bumps the
/// version of each tensor it updates.
void sgd_step(const std::vector<SgdParam>& params, const SgdHyper& hyper);
/// Fused Adam/AdamW updates of params in place (torch.optim.Adam's formulas at each parameter's step;
/// hyper.decoupled: AdamW), checked, grouped and versioned as sgd_step.
void adam_step(const std::vector<AdamParam>& params, const AdamHyper& hyper);

// ---- checks shared with ops/
/// DeviceError naming op unless a and b are on one device.
void check_same_device(const char* op, const RawTensor& a, const RawTensor& b);
/// DTypeError naming op unless a and b share a dtype.
void check_same_dtype(const char* op, const RawTensor& a, const RawTensor& b);
/// DTypeError naming op unless t is of a floating dtype.
void check_floating(const char* op, const RawTensor& t);
/// True when t reaches one memory location through several of its elements (a dim of size > 1 with
/// stride 0, as expand() makes). See Note [Overlapping writes].
bool has_internal_overlap(const RawTensor& t);
/// Error naming op when has_internal_overlap(t): a write to t would store to one location several times.
void check_no_internal_overlap(const char* op, const RawTensor& t);
/// Error naming op when `out` (written) and `in` (read) share some memory but are not the same view:
/// an elementwise write would read elements it already overwrote. With same_view_ok = false the same
/// view is refused too (ops that write elements other than the one they read: index_add_, scatter_add_).
/// See Note [Overlapping writes].
void check_no_partial_overlap(const char* op, const RawTensor& out, const RawTensor& in, bool same_view_ok = true);

}  // namespace prim
}  // namespace tg
