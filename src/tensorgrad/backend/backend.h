// backend/backend.h: the per-device kernel interface. One implementation per device type: the CPU
// reference in backend/cpu/, the CUDA one in backend/cuda/. Backends trust their arguments: shapes, dtypes and
// devices are validated before the call, in prim/.
//
// Note [Kernel families]
// ~~~~~~~~~~~~~~~~~~~~~~
// The Backend methods fall into families, and each family is laid out the same way on both backends:
// its rules written once, as TG_HD functions in kernels/ (compiled by g++ and by nvcc), a CPU file in
// backend/cpu/ that loops over them and a CUDA file in backend/cuda/ that launches kernels over them,
// file for file; prim/ has the family's validation in the file of the same name:
//
//   family          shared body (kernels/)                              CPU loop           CUDA kernel
//   elementwise     elementwise.h (unary, binary, comparisons)          elementwise.cpp    elementwise.cu
//                                                                       unary.cpp          unary.cu
//   reduce          reduce.h (max/min NaN and tie rule; sum             reduce.cpp         reduce.cu
//                   accumulators: core/device.h's table)
//   softmax / loss  softmax_loss.h (shift of inf/NaN rows, (log-)       softmax_loss.cpp   softmax_loss.cu
//                   softmax and its gradient, cross-entropy loss and
//                   gradient, ignore_index, CrossEntropyArgs)
//   index           index.h (range check; the CPU checks on the host    index.cpp          index.cu
//                   in prim/checks.cpp)
//   optim           optim.h (SgdHyper / AdamHyper, the per-parameter    optim.cpp          optim.cu
//                   scalars, the update math)
//   norm            norm.h (the normalized value and the input          norm.cpp           norm.cu
//                   gradient; row sums in double)
//   conv / pooling  conv.h (Conv2dArgs, im2col's source element),       conv.cpp           conv.cu
//                   pool.h (Pool2dArgs, the windows)
//   random          philox.h                                            random.cpp         random.cu
//   blas            (the BLAS libraries)                                blas.cpp           blas.cpp
//   sort            (Note [Sort order] in prim/sort.cpp)                sort.cpp           sort.cu
//   attention       none: the CPU loops are the kernels' reference,     attention.cpp      attention.cu
//                   compared by the tests
//   rnn             rnn.h (the LSTM and GRU cells' pointwise step       rnn.cpp            rnn.cu
//                   and its gradient)
//   ctc             ctc.h (the CTC recursions' steps, lcab and the      ctc_loss.cpp       ctc_loss.cu
//                   gradient rule; CtcArgs)
//
// plus backend/cpu/runtime.cpp and backend/cuda/runtime.cu (the backend objects and their settings).
// The CPU class and its loop machinery (strided loops, the thread pool, the capability clones) are in
// backend/cpu/cpu_backend.h, the CUDA class in backend/cuda/context.cuh. The CPU's fast paths (backend/cpu/kernels.inc, compiled once per
// CPU capability: Note [CPU capabilities]) and the GPU's vector loads compute the same bodies in
// wider steps; a fast path that regroups a formula (a row sum kept in T, a block of exponentials in
// one pass) says so where it does, and tests/test_cpu_capability.cpp and tests/test_cuda.cpp compare
// each path with the reference within derived bounds. Adding a rule to a family (a new NaN case, a new
// loss option) is one edit to its kernels/ header, which both backends then run; a new option that must
// reach the kernels also adds a field to the family's argument struct (CrossEntropyArgs, SgdHyper,
// AdamHyper) and to the prim:: check that validates it.
#pragma once
#include <cstdint>

#include "tensorgrad/core/error.h"
#include "tensorgrad/core/raw_tensor.h"
#include "tensorgrad/kernels/conv.h"
#include "tensorgrad/kernels/ctc.h"
#include "tensorgrad/kernels/elementwise.h"
#include "tensorgrad/kernels/norm.h"
#include "tensorgrad/kernels/optim.h"
#include "tensorgrad/kernels/philox.h"
#include "tensorgrad/kernels/pool.h"
#include "tensorgrad/kernels/softmax_loss.h"

namespace tg {

/// One (batched) row-major matrix product: C[i] = op(A[i]) . op(B[i]) + beta * C[i] for i < batch.
/// op(A) is (M, K) and op(B) is (K, N); each matrix is row-major with leading dimension ld*
/// (its row length as stored), and consecutive batch entries are stride_* elements apart (0 repeats
/// one matrix). beta = 0 sets C, beta = 1 accumulates into it.
struct GemmArgs {
  bool trans_a = false;   ///< A is stored transposed: op(A) = A^T, A stored as (K, M).
  bool trans_b = false;   ///< B is stored transposed: op(B) = B^T, B stored as (N, K).
  int64_t batch = 1;   ///< The number of products.
  int64_t M = 0;   ///< Rows of op(A) and of C.
  int64_t N = 0;   ///< Columns of op(B) and of C.
  int64_t K = 0;   ///< Columns of op(A), rows of op(B).
  /// The first A matrix (elements of dtype).
  const void* a = nullptr;
  /// The first B matrix.
  const void* b = nullptr;
  /// The first C matrix (written).
  void* c = nullptr;
  int64_t lda = 0;   ///< A's leading dimension: elements between the starts of consecutive stored rows.
  int64_t ldb = 0;   ///< B's leading dimension.
  int64_t ldc = 0;   ///< C's leading dimension.
  int64_t stride_a = 0;   ///< Elements between consecutive A matrices of the batch (0 repeats one).
  int64_t stride_b = 0;   ///< Elements between consecutive B matrices (0 repeats one).
  int64_t stride_c = 0;   ///< Elements between consecutive C matrices.
  /// 0 sets C, 1 accumulates into it.
  double beta = 0;
  /// The element type of A, B and C (float32 or float64).
  DType dtype = kFloat32;
};

/// One operand of a GEMM as make_gemm takes it: the first matrix, whether it is stored transposed, its
/// leading dimension, and the elements between consecutive matrices of a batch (0 repeats one).
struct GemmOperand {
  /// The first matrix (elements of the GEMM's dtype).
  const void* ptr = nullptr;
  /// Stored transposed.
  bool trans = false;
  /// Leading dimension: elements between the starts of consecutive stored rows.
  int64_t ld = 0;
  /// Elements between consecutive matrices of a batch.
  int64_t batch_stride = 0;
};

/// The GemmArgs of C[i] (M, N) = op(A[i]) op(B[i]) + beta C[i] for i < batch, every matrix of dtype;
/// C's rows are ldc apart and its matrices stride_c. The one way the callers fill a GemmArgs.
inline GemmArgs make_gemm(DType dtype, int64_t batch, int64_t M, int64_t N, int64_t K, const GemmOperand& a,
                          const GemmOperand& b, void* c, int64_t ldc, int64_t stride_c = 0, double beta = 0) {
  GemmArgs g;
  g.trans_a = a.trans;
  g.trans_b = b.trans;
  g.batch = batch;
  g.M = M;
  g.N = N;
  g.K = K;
  g.a = a.ptr;
  g.b = b.ptr;
  g.c = c;
  g.lda = a.ld;
  g.ldb = b.ld;
  g.ldc = ldc;
  g.stride_a = a.batch_stride;
  g.stride_b = b.batch_stride;
  g.stride_c = stride_c;
  g.beta = beta;
  g.dtype = dtype;
  return g;
}

/// What a backend may fold into a 2-D GEMM (batch 1, beta 0) with Backend::gemm_epilogue: one of the
/// two, elements of the GEMM's dtype in device memory. Note [Bias folded into the GEMM] (prim/blas.cpp).
struct GemmEpilogue {
  /// N elements added to every row of C: C = op(A) op(B) + bias (linear's forward).
  const void* bias = nullptr;
  /// M elements written with the row sums of op(A), over K (linear's bias gradient, when op(A) = g^T).
  void* row_sums = nullptr;
};

/// One parameter of Backend::sgd_step.
struct SgdParam {
  RawTensor param;      ///< updated in place
  RawTensor grad;       ///< its gradient
  RawTensor velocity;   ///< the momentum buffer (undefined without momentum); set from d on the first step
  double lr;         ///< its group's learning rate
  bool first_step;   ///< velocity is new: v = d instead of momentum v + (1 - dampening) d
  /// Undefined, or one float64 on the parameter's device holding the learning rate, which then
  /// replaces lr: a capturable SGD step captured into a CUDA graph reads it there, written before
  /// each replay (Note [Captured SGD] in optim/optimizer.cpp).
  RawTensor lr_value;
};

/// One parameter of Backend::adam_step.
struct AdamParam {
  RawTensor param;            ///< updated in place
  RawTensor grad;             ///< its gradient
  RawTensor exp_avg;          ///< first moment, updated in place
  RawTensor exp_avg_sq;       ///< second moment, updated in place
  RawTensor max_exp_avg_sq;   ///< running max of exp_avg_sq (amsgrad), undefined otherwise
  double lr;               ///< its group's learning rate
  int64_t step;            ///< its step count after this step (1-based): the bias corrections
  /// Undefined, or float64 (3) on the parameter's device holding AdamStepValues, which then replace
  /// those of lr and step: a step captured into a CUDA graph reads them there, written before each
  /// replay (Note [Captured Adam] in optim/adam.cpp).
  RawTensor scalars;
};

/// Where the rows of one attention operand (batch..., rows, width) lie: the batch dims folded into an
/// outer and an inner step, batch entry b = outer * inner + in; row r of entry b starts at(b, r)
/// elements after the operand's first element, and its width elements are contiguous. prim::attention
/// sets these from the operands' strides (a contiguous copy where they do not fold), so that views
/// such as the heads of one packed qkv projection are read in place (Note [Attention operands in place]
/// in prim/attention.cpp).
struct AttentionRows {
  int64_t inner = 1;          ///< Batch entries per outer step (at least 1).
  int64_t stride_outer = 0;   ///< Elements between outer steps.
  int64_t stride_inner = 0;   ///< Elements between batch entries inside one outer step.
  int64_t stride_row = 0;     ///< Elements between rows.
  /// The offset of row r of batch entry b.
  TG_HD int64_t at(int64_t b, int64_t r) const {
    return (b / inner) * stride_outer + (b % inner) * stride_inner + r * stride_row;
  }
};

/// The geometry of one fused scaled-dot-product attention (Backend::attention): q (B, L, E), k (B, S,
/// E), v (B, S, Ev) -> out (B, L, Ev) = softmax(q k^T scale + mask) v, row by row, with the row's
/// log-sum-exp saved for the backward. See Note [Fused attention] in ops/attention.cpp.
struct AttentionArgs {
  int64_t B = 0;   ///< Batch (every leading dim merged).
  int64_t L = 0;   ///< Query rows.
  int64_t S = 0;   ///< Key (and value) rows.
  int64_t E = 0;   ///< Width of q and k.
  int64_t Ev = 0;   ///< Width of v and of out.
  /// The factor of q k^T.
  double scale = 1;
  /// Query i sees keys j <= i only (the top-left aligned lower triangle, PyTorch's is_causal).
  bool causal = false;
  /// Undefined, or a bool mask (true: attend) or an additive float mask of q's dtype, read through
  /// the strides below: element (b, i, j) is at mask_ptr + (b / mask_inner) mask_stride_outer + (b %
  /// mask_inner) mask_stride_inner + i mask_stride_l + j mask_stride_s, where mask_ptr is
  /// mask.data() (its offset included). Strides may be 0 (broadcast).
  RawTensor mask;
  /// The batch entries that share one mask_stride_outer step (at least 1).
  int64_t mask_inner = 1;
  int64_t mask_stride_outer = 0;   ///< Elements between consecutive outer steps of the mask batch (see mask).
  int64_t mask_stride_inner = 0;   ///< Elements between consecutive batch entries inside one outer step.
  int64_t mask_stride_l = 0;   ///< Elements between mask rows (query i).
  int64_t mask_stride_s = 0;   ///< Elements between consecutive keys of one mask row.
  AttentionRows q_rows;      ///< Where q's rows lie (prim::attention and attention_backward set these five).
  AttentionRows k_rows;      ///< Where k's rows lie.
  AttentionRows v_rows;      ///< Where v's rows lie.
  AttentionRows out_rows;    ///< Where out's rows lie.
  AttentionRows dout_rows;   ///< Where dout's rows lie (attention_backward).
};

/// The kernels of one device type. tensorgrad's ops reach them through tg::prim, which validates
/// shapes, dtypes and devices first; an implementation trusts its arguments. "Sets out" means every
/// element of out is written.
class Backend {
 public:
  virtual ~Backend() = default;
  /// Where this device's Storages get their bytes.
  virtual Allocator& allocator() = 0;

  /// dst (any strides) <- src (same shape, any strides, any dtype: converted). Sets dst.
  virtual void copy(const RawTensor& src, const RawTensor& dst) = 0;
  /// Sets every element of dst (any strides) to value.
  virtual void fill(const RawTensor& dst, double value) = 0;
  /// out (contiguous, x's shape) = op(x). Sets out.
  virtual void unary(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& out) = 0;
  /// dx (contiguous) = op'(x, y) * dy; x, y, dy share dx's shape (contiguous). Sets dx.
  virtual void unary_backward(UnaryOp op, UnaryArgs args, const RawTensor& x, const RawTensor& y, const RawTensor& dy,
                              const RawTensor& dx) = 0;
  /// out (any strides, shape S) = a op b, with a and b already expanded to S (stride 0 where broadcast).
  virtual void binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) = 0;
  /// out = cond != 0 ? a : b, all three expanded to out's shape. Sets out.
  virtual void where(const RawTensor& cond, const RawTensor& a, const RawTensor& b, const RawTensor& out) = 0;
  /// out (contiguous) has x's rank with size 1 on every reduced dim and x's size elsewhere; reduces
  /// x over the dims where the sizes differ. ArgMax/ArgMin need exactly one reduced dim and an int64 out.
  virtual void reduce(ReduceOp op, const RawTensor& x, const RawTensor& out) = 0;
  /// The inclusive scan of x along dim into out: out_i = x_0 op ... op x_i, or x_i op ... op x_{n-1}
  /// when reverse; op is Add or Mul. x and out contiguous, of one shape and dtype (float32, float64 or
  /// int64: prim::scan converts the others). Sets out.
  virtual void scan(BinaryOp op, const RawTensor& x, int64_t dim, bool reverse, const RawTensor& out) = 0;
  /// Multinomial draws with replacement by the inverse CDF (prim::sample_categories): probs (R, C), C
  /// > 0, contiguous, float32 or float64; u (R, S) float64 in [0, 1) -> out (R, S) int64, each u's
  /// category: the number of the row's running sums (float64, in order), divided by the last, that
  /// are <= u, at most C - 1; status (R) int64: 1 for a row with a NaN, an infinity or a negative
  /// element, else 2 where its sum is not positive, else 0 (a bad row's draws are unspecified). Returns
  /// false, having done nothing, where this backend cannot draw them (prim then raises an Error).
  virtual bool sample_categories(const RawTensor& probs, const RawTensor& u, const RawTensor& out,
                                 const RawTensor& status) {
    (void)probs;
    (void)u;
    (void)out;
    (void)status;
    return false;
  }
  /// One (batched) matrix product, see GemmArgs.
  virtual void gemm(const GemmArgs& args) = 0;
  /// Whether gemm() multiplies operands of this floating dtype itself, with float32 accumulation for
  /// the 16-bit ones; where it does not, tg::prim converts float16/bfloat16 operands to float32 first
  /// (Note [Low precision through float32] in prim/blas.cpp). The default takes every floating dtype.
  virtual bool gemm_takes(DType dtype) const {
    (void)dtype;
    return true;
  }
  /// args' product with the epilogue folded into its own launch, when this backend can for this dtype
  /// and these shapes; false, having done nothing, when it cannot (the caller then runs gemm() and the
  /// epilogue's pass itself). The default folds nothing.
  virtual bool gemm_epilogue(const GemmArgs& args, const GemmEpilogue& epilogue) {
    (void)args;
    (void)epilogue;
    return false;
  }
  /// x, out contiguous, same shape; (log-)softmax along dim. Sets out.
  virtual void softmax(const RawTensor& x, int64_t dim, bool log, const RawTensor& out) = 0;
  /// y = (log-)softmax output, dy its gradient, all contiguous. Sets dx.
  virtual void softmax_backward(const RawTensor& y, const RawTensor& dy, int64_t dim, bool log, const RawTensor& dx) = 0;
  /// logits (N, C) with N > 0, target (N) int64 (each in [0, C) or == args.ignore_index), all
  /// contiguous. Sets lse (N) = log(sum(exp(logits))) per row and loss (N) = (1 - s) (lse - logit[t])
  /// + s (lse - mean(logits)) with s = label_smoothing; 0 for ignored rows. With args.total also sets
  /// total (0-d) = the sum of loss, and with args.mean count (0-d, logits' dtype) = the rows not
  /// ignored and total = sum / count; total and count are undefined otherwise.
  virtual void cross_entropy(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                             const RawTensor& loss, const RawTensor& lse, const RawTensor& total, const RawTensor& count) = 0;
  /// dlogits (N, C) = (softmax(logits) - (1 - s) onehot(target) - s / C) * dloss[n] (/ count[0] with
  /// args.mean); 0 for ignored rows. dloss (N) may have stride 0. Sets.
  virtual void cross_entropy_backward(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                                      const RawTensor& lse, const RawTensor& dloss, const RawTensor& count,
                                      const RawTensor& dlogits) = 0;
  /// out = x.index_select(dim, index); x, out contiguous, index (K) int64 in range. Sets out.
  virtual void index_select(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) = 0;
  /// dst.index_select(dim, index) += src; dst, src contiguous. Accumulates (repeated indices add up).
  virtual void index_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) = 0;
  /// out[..i..] = x[..index[..i..]..] along dim; index has x's rank; x, index, out contiguous. Sets out.
  virtual void gather(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) = 0;
  /// dst[..index[..i..]..] += src[..i..] along dim; the reverse of gather. Accumulates.
  virtual void scatter_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) = 0;
  /// out (contiguous) element i = philox::sample<T>(dist, seed, offset + i). Sets out.
  virtual void random(const philox::Distribution& dist, uint64_t seed, uint64_t offset, const RawTensor& out) = 0;
  /// Fused SGD update of several parameters of one dtype on this device (each param, grad and
  /// velocity contiguous, of one shape; velocity undefined when momentum == 0), PyTorch's
  /// torch.optim.SGD formulas; the CUDA backend updates them all in one launch.
  virtual void sgd_step(const std::vector<SgdParam>& params, const SgdHyper& hyper) = 0;
  /// Fused Adam/AdamW update of several parameters of one dtype on this device (each one's tensors
  /// contiguous, of one shape), PyTorch's torch.optim.Adam formulas at each parameter's step;
  /// hyper.decoupled: AdamW. The CUDA backend updates them all in one launch.
  virtual void adam_step(const std::vector<AdamParam>& params, const AdamHyper& hyper) = 0;
  /// x (N, C, H, W), weight (O, C / groups, KH, KW), bias (O) or undefined, all contiguous -> out
  /// (N, O, OH, OW) contiguous; the convolution of PyTorch's conv2d (a cross-correlation). Sets out.
  virtual void conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& args,
                      const RawTensor& out) = 0;
  /// The gradients of conv2d from dy (N, O, OH, OW): dx (x's shape), dweight (weight's shape) and
  /// dbias (O), each contiguous or undefined when not wanted. x is read (and defined) only for
  /// dweight, weight only for dx. Sets each defined one.
  virtual void conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& args,
                               const RawTensor& dx, const RawTensor& dweight, const RawTensor& dbias) = 0;
  /// x (P, H, W) -> out (P, OH, OW), the maximum of each window (NaN wins, as in PyTorch), and
  /// indices (P, OH, OW) int64, the position h W + w of that maximum in its plane. Sets both.
  virtual void max_pool2d(const RawTensor& x, const Pool2dArgs& args, const RawTensor& out, const RawTensor& indices) = 0;
  /// dx (P, H, W) = dy scattered to indices (repeated positions add up). Sets dx.
  virtual void max_pool2d_backward(const RawTensor& dy, const RawTensor& indices, const Pool2dArgs& args,
                                   const RawTensor& dx) = 0;
  /// x (P, H, W) -> out (P, OH, OW), the mean of each window (see Pool2dArgs). Sets out.
  virtual void avg_pool2d(const RawTensor& x, const Pool2dArgs& args, const RawTensor& out) = 0;
  /// dx (P, H, W) = each dy spread evenly over its window. Sets dx.
  virtual void avg_pool2d_backward(const RawTensor& dy, const Pool2dArgs& args, const RawTensor& dx) = 0;
  /// Fused attention forward (see AttentionArgs): q, k, v and out of one floating dtype, their rows
  /// where args' q_rows, k_rows, v_rows and out_rows say; sets out's B x L rows of Ev and lse (B, L), the log-sum-exp of each row of scores (float32 for float32,
  /// float16 and bfloat16 inputs, float64 for float64). A row whose scores are all -inf (every key
  /// masked) has out 0 and lse +inf, PyTorch's rule (Note [Fused attention] in ops/attention.cpp);
  /// its gradients in attention_backward are 0. CPU: the reference loops (backend/cpu/attention.cpp),
  /// which the ops reach only through prim::attention (they compose on the CPU); CUDA: kernels
  /// (backend/cuda/attention.cu).
  virtual void attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& args,
                         const RawTensor& out, const RawTensor& lse) = 0;
  /// Fused attention backward from dout, with out and lse of the forward (rows as args says; lse, dq,
  /// dk and dv contiguous): the probabilities are recomputed from q, k and lse; sets dq (B, L, E), dk
  /// (B, S, E) and dv (B, S, Ev).
  virtual void attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& out,
                                  const RawTensor& lse, const RawTensor& dout, const AttentionArgs& args, const RawTensor& dq,
                                  const RawTensor& dk, const RawTensor& dv) = 0;
  /// Normalizes the M rows of x (M, D) (layer_norm; group_norm's groups are rows too): mean (M) and
  /// rstd (M) = 1 / sqrt(biased variance + eps) of each row, y (M, D) = xhat w + b with xhat = (x -
  /// mean) rstd (kernels/norm.h), w and b (D) applied when defined. x, w, b, y, mean, rstd contiguous of
  /// one dtype (float32 or float64); M, D > 0. Sets y, mean and rstd.
  virtual void layer_norm(const RawTensor& x, const RawTensor& w, const RawTensor& b, double eps, const RawTensor& y,
                          const RawTensor& mean, const RawTensor& rstd) = 0;
  /// The gradients of layer_norm from dy (M, D), with the forward's x, mean, rstd and w (undefined
  /// when there was none): dx (M, D) = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy w, dw (D) =
  /// the sum over rows of dy xhat, db (D) = the sum over rows of dy. Sets each one that is defined.
  virtual void layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean, const RawTensor& rstd,
                                   const RawTensor& w, const RawTensor& dx, const RawTensor& dw, const RawTensor& db) = 0;
  /// The LSTM cell's pointwise step (Note [Fused recurrent cells] in kernels/rnn.h), float32 or float64,
  /// contiguous but hc: xg, hg (N, 4H), cx (N, H) -> hc (2, N, H) (h' then c', each contiguous and
  /// stride(0) apart: rows of one buffer or of two) and the workspace ws (N, H, 8).
  virtual void lstm_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& cx, const RawTensor& hc,
                         const RawTensor& ws) = 0;
  /// The LSTM cell's gradient from dhc (2, N, H; halves as hc's), the forward's cx and ws -> dgates (N, 4H), dcx (N, H).
  virtual void lstm_cell_backward(const RawTensor& dhc, const RawTensor& cx, const RawTensor& ws,
                                  const RawTensor& dgates, const RawTensor& dcx) = 0;
  /// The GRU cell's pointwise step: xg, hg (N, 3H), hx (N, H) -> hy (N, H) and the workspace ws (N, H, 8).
  virtual void gru_cell(const RawTensor& xg, const RawTensor& hg, const RawTensor& hx, const RawTensor& hy,
                        const RawTensor& ws) = 0;
  /// The GRU cell's gradient from dhy (N, H) and the forward's hx, ws -> dxg, dhg (N, 3H), dhx (N, H).
  virtual void gru_cell_backward(const RawTensor& dhy, const RawTensor& hx, const RawTensor& ws, const RawTensor& dxg,
                                 const RawTensor& dhg, const RawTensor& dhx) = 0;
  /// The CTC forward (Note [ctc_loss] in kernels/ctc.h): log_probs (T, N, C) contiguous, float32 or
  /// float64; targets int64 contiguous; lengths (3, N) int64: each entry's input length, target length
  /// and the offset of its first label in targets (all checked, labels included on the CPU; CUDA
  /// kernels report a bad label through the device error flag as ctc_target_error). Computes in float64:
  /// sets alpha (N, T, 2S + 1) float64 (rows t >= the input length and states past 2 L_b + 1 are not
  /// written) and nll (N) float64, the negative log-likelihood (inf without an alignment).
  virtual void ctc_loss(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                        const CtcArgs& args, const RawTensor& alpha, const RawTensor& nll) = 0;
  /// The CTC gradient rule (Note [ctc_loss gradient] in kernels/ctc.h) from the forward's alpha and nll,
  /// with the workspace beta (N, 2, 2S + 1) float64 (each entry's beta rows t + 1 and t while the
  /// recursion runs backwards): sets grad (T, N, C) of log_probs' dtype, entry b's rows scaled as args
  /// says (0 for t >= its input length, and for an inf nll under zero_infinity; NaN for a NaN nll).
  virtual void ctc_loss_backward(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                                 const RawTensor& alpha, const RawTensor& nll, const CtcArgs& args,
                                 const RawTensor& beta, const RawTensor& grad) = 0;
  /// Waits until the device has finished all queued work (a no-op on the CPU).
  virtual void synchronize() = 0;
  /// x (R, N) contiguous, viewed as R rows of its last dim N -> indices (R, N) int64 contiguous, set:
  /// each row's positions 0..N-1 in the order a stable sort of its values puts them (ascending, or
  /// descending). See Note [Sort order] in prim/sort.cpp.
  virtual void argsort(const RawTensor& x, bool descending, const RawTensor& indices) = 0;
};

/// A contiguous tensor seen as (outer, D, inner) around dim: element (o, d, i) is at
/// (o * D + d) * inner + i. Softmax, cross-entropy and the index kernels walk rows this way.
struct RowView {
  int64_t outer = 1;   ///< The product of the sizes before dim.
  int64_t D = 1;   ///< The size of dim (1 for a 0-d tensor).
  int64_t inner = 1;   ///< The product of the sizes after dim.
};
/// x's (outer, D, inner) around dim (already wrapped).
RowView rows_of(const RawTensor& x, int64_t dim);

/// How a backend walks a reduction (Backend::reduce): x viewed with the kept dims first and the
/// reduced dims last, so that output o (contiguous, kept dims in order) reduces R elements that
/// are `rstride` apart. When the reduced dims are not one stride apart, x is copied once so they are.
struct ReductionLayout {
  /// The input with its kept dims first: a permuted view, or a contiguous copy of it.
  RawTensor x;            // permuted view (or contiguous copy) of the input
  /// How many leading dims of x are kept.
  int64_t nkept = 0;   // leading dims of x that are kept
  /// Elements reduced into each output.
  int64_t R = 1;       // elements reduced into each output
  /// The step, in elements, between the R elements of one output.
  int64_t rstride = 1;
  /// The sizes of the kept dims.
  Shape kept_shape() const { return Shape(x.shape().begin(), x.shape().begin() + nkept); }
  /// The strides of the kept dims in x.
  Shape kept_strides() const { return Shape(x.strides().begin(), x.strides().begin() + nkept); }
};
/// The layout of reducing x into out (x's rank, size 1 on the reduced dims).
ReductionLayout reduction_layout(const RawTensor& x, const RawTensor& out);

/// The errors for a bad class target (outside [0, C), not ignore_index) and a bad index (index_select,
/// index_add_, gather, scatter_add_): raised by prim's host checks for CPU tensors and, for CUDA
/// tensors, at the next sync from the device error flag (Note [Device error flag] in
/// backend/cuda/softmax_loss.cu), so both devices raise the same message.
IndexError cross_entropy_target_error(int64_t target, int64_t classes);
/// The IndexError for index out of [0, size) along dim in op (see cross_entropy_target_error()).
IndexError index_out_of_range_error(const char* op, int64_t index, int64_t dim, int64_t size);
/// The IndexError for ctc_loss's target `label` at `position` of batch entry `entry`, outside [0,
/// classes) or equal to blank (see cross_entropy_target_error()).
IndexError ctc_target_error(int64_t label, int64_t entry, int64_t position, int64_t classes, int64_t blank);

/// The backend serving a device ("cuda" without an index: the current one). CUDA devices throw
/// DeviceError with the reason when unusable.
Backend& backend_for(Device device);
/// The CPU backend (never destroyed).
Backend& cpu_backend();

/// Threads used by CPU loops and matrix products (core/parallel.h); default: OMP_NUM_THREADS when
/// set, else the number of cores. tg::Error for n <= 0, and when the operating system cannot start
/// the threads (the loops then run on the calling thread).
void set_num_threads(int n);
/// The CPU thread count in use (torch.get_num_threads).
int get_num_threads();
/// Flush subnormal floats to zero in CPU kernels (PyTorch: torch.set_flush_denormal). Off by default.
/// Training loops whose momentum buffers decay towards zero otherwise spend most of a step on slow
/// subnormal arithmetic. Applies to the calling thread and to every CPU kernel thread; returns
/// false where the processor offers no such mode (non-x86).
bool set_flush_denormal(bool on);

}  // namespace tg
