// ops/linalg.cpp: matmul, mm, bmm, dot, outer and the fused linear layer op. Forward and backward of the
// 2-D and 3-D products through prim::matmul, prim::addmm and prim::matmul_row_sums, which hand transposed
// views to the BLAS as flags (no copies); matmul's other ranks, mm, bmm and dot are reshapes around that
// one recorded product (Note [matmul of any rank]), outer a broadcast mul. einsum is in ops/einsum.cpp.
// Kernels: Backend::gemm, and Backend::gemm_epilogue for linear's bias (Note [Bias folded into the GEMM]).
// Shapes: N = rows (batch), I = in_features, O = out_features.
//
// Note [matmul of any rank]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// One op records a product: 2-D and 3-D operands, a 2-D one (or a batch of 1) shared by every batch entry
// (matmul_batched). Every other rank of torch.matmul is reshaped onto it, so its backward, double backward,
// autocast and CUDA paths serve them unchanged: a 1-D operand gains a dim of 1 (prepended for the left,
// appended for the right) that the result loses again (a 2-D or 3-D left operand times a 1-D right one is
// its product with the column (K, 1), no copy); an N-D left operand times a right one without a batch
// (1-D, 2-D or batch dims all 1) folds its batch into the rows, one (B*M, K) @ (K, N) GEMM, as PyTorch
// does; a left operand without a batch times an N-D right one is the 2-D @ 3-D product; otherwise
// both are expanded to the broadcast batch and flattened to 3-D (a copy where an operand is broadcast or
// not viewable, as PyTorch's expand + reshape). 2-D and 3-D operands take matmul_batched directly.
// The reshaped product is returned as a fresh result, not a view (PyTorch's _unsafe_view), so in-place
// ops may write it; the element counts on the way (the batch, the folded rows, each operand expanded,
// the result) are checked against int64, a dim of 0 making a count 0 whatever the others.
//
// Note [Autocast saves the caller's input]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Under autocast linear multiplies the lower-precision cast of its input, and its weight gradient
// needs that cast again (dW = grad^T x). When the input is a leaf that requires no grad (the batch the
// caller passed in, which the caller holds anyway), linear saves the caller's tensor and casts it again
// in backward instead of keeping the cast copy alive until then: bench/bench_amp's MLP keeps half of
// float32's activation bytes instead of 0.72x, for one more conversion of the input per step. (PyTorch
// saves the copy.) Like any saved input, writing into that tensor in place before backward is then an
// AutogradError. Inputs that are intermediate results keep the cast copy, as nobody else holds them.
//
// Note [Autocast products through float32]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Where products run through float32 (the CPU, except bfloat16 on one with AVX512_BF16: Note [Low
// precision through float32] in prim/blas.cpp), casting a float32 operand of matmul or linear to bfloat16 only for prim::matmul
// to convert it back, and rounding its gradient to bfloat16 only for the cast's backward to convert it
// back, are two passes over each operand where one does: at batch 64 the MLP of bench/bench_amp
// converted ~570k elements per step, 14 % of its autocast step. So under autocast on such a device,
// when every operand is float32 or the region's dtype and one at least is float32
// (amp::detail::product_through_float32), matmul and linear multiply float32 operands rounded to the
// region's dtype (prim::round_to_precision; a parameter's rounding is cached for the region like its
// cast: Note [Autocast cast cache]), round the product once into the region's dtype, and in backward
// round each gradient to that precision in place, keeping its input's dtype; an operand broadcast over
// matmul's batch has its gradient summed in the region's dtype, as the engine sums the cast's. No cast
// nodes: the results and gradients are the bits that the casts, the 16-bit product and the casts'
// backward give (tests/test_autocast.cpp compares them), and what is saved for backward stays as small: an operand
// in the region's dtype or a leaf (held by the caller; a float32 leaf is rounded again in backward) as
// it is, any other float32 operand as its lower-precision copy. As for linear's input (Note [Autocast
// saves the caller's input]), writing into a saved leaf in place between forward and backward is then
// an AutogradError (PyTorch's saved bfloat16 copy would not see the write). A float32 parameter used
// twice in one region gets two rounded float32 gradients, summed in float32 (PyTorch sums the cast's
// two bfloat16 gradients in bfloat16). Other devices, and operands of other dtypes (float16 in a
// bfloat16 region; float64, which stays as it is), take the cast path.
#include <algorithm>
#include <initializer_list>
#include <limits>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {
/// t in float32 with lowp's precision: a float32 t rounded, a lower-precision t converted exactly.
RawTensor rounded_float32(const RawTensor& t, DType lowp) {
  return t.dtype() == kFloat32 ? prim::round_to_precision(t, lowp) : t.to(kFloat32);
}

/// g (float32) as the gradient of an input of dtype `dtype` that a lowp product used: g's values
/// rounded to lowp, in place for a float32 input (Note [Autocast products through float32]).
RawTensor rounded_grad(RawTensor g, DType dtype, DType lowp) {
  if (dtype != kFloat32) return g.to(dtype);
  prim::round_to_precision_(g, lowp);
  return g;
}

/// What a product through float32 saves of operand v for backward: v itself when it is in lowp or a
/// leaf (the caller holds it; a float32 leaf is rounded again in backward), else its lowp copy.
SavedTensor saved_operand(const Tensor& v, DType lowp) {
  return v.dtype() == lowp || v.is_leaf() ? SavedTensor(v) : SavedTensor(Tensor(v.data().to(lowp)));
}

/// matmul under autocast where products run through float32: Note [Autocast products through float32].
Tensor matmul_through_float32(const Tensor& a, const Tensor& b) {
  const DType lowp = amp::detail::lower_dtype(a);
  const RawTensor out = prim::matmul(amp::detail::rounded_operand(a), amp::detail::rounded_operand(b)).to(lowp);
  const bool grad_mode = GradMode::is_enabled();
  const SavedTensor a_saved = grad_mode && b.requires_grad() ? saved_operand(a, lowp) : SavedTensor();
  const SavedTensor b_saved = grad_mode && a.requires_grad() ? saved_operand(b, lowp) : SavedTensor();
  const Shape a_shape = a.shape(), b_shape = b.shape();
  const DType a_dtype = a.dtype(), b_dtype = b.dtype();
  // An operand broadcast over the batch gets the product's batch sum: in lowp, as the engine sums the
  // cast path's gradient in the cast's dtype, then in the operand's dtype.
  auto operand_grad = [lowp](const RawTensor& product, const Shape& shape, DType dtype) {
    if (product.shape() == shape) return rounded_grad(product, dtype, lowp);
    return prim::sum_to(product.to(lowp), shape).to(dtype);
  };
  return record("matmul", out, {a, b},
                [a_saved, b_saved, a_shape, b_shape, a_dtype, b_dtype, lowp, operand_grad](const auto& grad, auto& g) {
    if constexpr (first_order_v<decltype(g)>) {
      const RawTensor g32 = grad.to(kFloat32);
      if (g.need(0))   // da = grad . b^T
        g.set(0, operand_grad(prim::matmul(g32, rounded_float32(b_saved.get(), lowp).transpose(-1, -2)), a_shape, a_dtype));
      if (g.need(1))   // db = a^T . grad
        g.set(1, operand_grad(prim::matmul(rounded_float32(a_saved.get(), lowp).transpose(-1, -2), g32), b_shape, b_dtype));
    } else {   // the same products as recorded ops, the roundings as casts through lowp
      const Tensor g32 = grad.to(kFloat32);
      auto rounded = [lowp](const Tensor& t) { return t.to(lowp).to(kFloat32); };
      if (g.need(0))
        g.set(0, sum_to_size(matmul(g32, rounded(g.input(1, b_saved)).transpose(-1, -2)).to(lowp), a_shape).to(a_dtype));
      if (g.need(1))
        g.set(1, sum_to_size(matmul(rounded(g.input(0, a_saved)).transpose(-1, -2), g32).to(lowp), b_shape).to(b_dtype));
    }
  });
}

/// linear under autocast where products run through float32: Note [Autocast products through float32].
/// Shapes are checked by the caller.
Tensor linear_through_float32(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const DType lowp = amp::detail::lower_dtype(weight);
  const int64_t I = x.shape().back(), O = weight.shape()[0];
  const Shape in_shape = x.shape();
  Shape out_shape = in_shape;
  out_shape.back() = O;
  const RawTensor x2 = amp::detail::rounded_operand(x).reshape({-1, I});
  const RawTensor w = amp::detail::rounded_operand(weight);
  const RawTensor y = (bias.defined() ? prim::addmm(amp::detail::rounded_operand(bias), x2, w.transpose(0, 1))
                                   : prim::matmul(x2, w.transpose(0, 1)))
                       .to(lowp);
  const bool grad_mode = GradMode::is_enabled();
  const SavedTensor x_saved = grad_mode && weight.requires_grad() ? saved_operand(x, lowp) : SavedTensor();
  const SavedTensor w_saved = grad_mode && x.requires_grad() ? saved_operand(weight, lowp) : SavedTensor();
  std::vector<Tensor> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  const DType x_dtype = x.dtype(), w_dtype = weight.dtype(), b_dtype = bias.defined() ? bias.dtype() : kFloat32;
  return record("linear", y.view(out_shape), inputs,
                [x_saved, w_saved, in_shape, I, O, lowp, x_dtype, w_dtype, b_dtype](const auto& grad_t, auto& g) {
    if constexpr (first_order_v<decltype(g)>) {
      const RawTensor g2 = grad_t.reshape({-1, O}).to(kFloat32);
      const bool need_bias = g.size() > 2 && g.need(2);
      if (g.need(0)) {   // dx = grad . W   (N, I)
        const RawTensor dx = prim::matmul(g2, rounded_float32(w_saved.get(), lowp));
        g.set(0, rounded_grad(dx, x_dtype, lowp).view(in_shape));
      }
      if (g.need(1)) {   // dW = grad^T . x (O, I), with db = sum_n grad (O) in the same GEMM where it folds
        const RawTensor xs = rounded_float32(x_saved.get().reshape({-1, I}), lowp);
        if (need_bias) {
          std::pair<RawTensor, RawTensor> wb = prim::matmul_row_sums(g2.transpose(0, 1), xs);
          g.set(1, rounded_grad(wb.first, w_dtype, lowp));
          g.set(2, rounded_grad(wb.second, b_dtype, lowp));
        } else {
          g.set(1, rounded_grad(prim::matmul(g2.transpose(0, 1), xs), w_dtype, lowp));
        }
      } else if (need_bias) {
        g.set(2, rounded_grad(prim::sum_to(g2, {O}), b_dtype, lowp));
      }
    } else {   // the same products as recorded ops, the roundings as casts through lowp
      const Tensor g2 = grad_t.reshape({-1, O}).to(kFloat32);
      auto rounded = [lowp](const Tensor& t) { return t.to(lowp).to(kFloat32); };
      if (g.need(0)) g.set(0, matmul(g2, rounded(g.input(1, w_saved))).to(lowp).to(x_dtype).reshape(in_shape));
      if (g.need(1)) g.set(1, matmul(g2.t(), rounded(g.input(0, x_saved).reshape({-1, I}))).to(lowp).to(w_dtype));
      if (g.size() > 2 && g.need(2)) g.set(2, sum(g2, 0).to(lowp).to(b_dtype));
    }
  });
}
}  // namespace

namespace {
// a (M, K) or (B, M, K), b (K, N) or (B, K, N) -> (M, N) or (B, M, N): the one recorded product
// (Note [matmul of any rank]).
Tensor matmul_batched(const Tensor& a_in, const Tensor& b_in) {
  if (amp::detail::product_through_float32(a_in, b_in)) return matmul_through_float32(a_in, b_in);
  // Note [Autocast op lists]: lower precision
  const Tensor a = amp::detail::cast(amp::detail::AutocastOp::Matmul, a_in),
               b = amp::detail::cast(amp::detail::AutocastOp::Matmul, b_in);
  RawTensor out = prim::matmul(a.data(), b.data());
  const bool grad_mode = GradMode::is_enabled();
  SavedTensor a_saved = grad_mode && b.requires_grad() ? SavedTensor(a) : SavedTensor();
  SavedTensor b_saved = grad_mode && a.requires_grad() ? SavedTensor(b) : SavedTensor();
  return record("matmul", out, {a, b}, [a_saved, b_saved](const auto& grad, auto& g) {
    if (g.need(0)) g.set(0, rules::matmul(grad, g.input(1, b_saved).transpose(-1, -2)));   // da = grad . b^T
    if (g.need(1)) g.set(1, rules::matmul(g.input(0, a_saved).transpose(-1, -2), grad));   // db = a^T . grad (summed over a broadcast batch)
  });
}

/// The product of vs (1 for none), 0 when one of them is 0 whatever the others, -1 when it overflows
/// int64 (a shape with a 0 may hold dims whose product does).
int64_t count_of(const int64_t* begin, const int64_t* end) {
  if (std::find(begin, end, int64_t{0}) != end) return 0;
  int64_t n = 1;
  for (const int64_t* v = begin; v != end; ++v)
    if (__builtin_mul_overflow(n, *v, &n)) return -1;
  return n;
}
/// See count_of above.
int64_t count_of(std::initializer_list<int64_t> vs) { return count_of(vs.begin(), vs.end()); }
/// The product of s's dims, as count_of.
int64_t count_of(const Shape& s) { return count_of(s.data(), s.data() + s.size()); }

/// The number of batch entries of a product over the broadcast batch, after checking that it and the
/// element counts the product goes through (each operand expanded to the batch, the result) fit in
/// int64, and that the GEMM's dims fit the BLAS's int (the rows B M when the batch is folded into
/// them): ShapeError naming the shapes otherwise (dims of size 0 count 0).
int64_t checked_batch(const Shape& batch, int64_t M, int64_t K, int64_t N, bool fold_rows, const Shape& as,
                      const Shape& bs) {
  const int64_t B = count_of(batch);
  const bool fits = B >= 0 && count_of({B, M}) >= 0 && count_of({B, M, K}) >= 0 && count_of({B, K, N}) >= 0 &&
                    count_of({B, M, N}) >= 0;
  TG_CHECK(fits, ShapeError, "matmul: the product of ", shape_str(as), " and ", shape_str(bs),
           " has more elements than int64 can count");
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  TG_CHECK((fold_rows ? count_of({B, M}) : M) <= kIntMax && N <= kIntMax && K <= kIntMax, ShapeError,
           "matmul: matrix dimensions above 2^31-1 are not supported (", shape_str(as), " and ", shape_str(bs), ")");
  return B;
}

/// t, a reshape of a product nobody else holds, as a fresh result rather than a view (PyTorch's
/// _unsafe_view in matmul): in-place ops may write it, as they may write any op's result. Safe because
/// no rule reads the product's values (matmul's saves its operands, reshape's nothing).
Tensor not_a_view(Tensor t) {
  if (t.impl()) t.impl()->is_view = false;
  return t;
}

/// s without its last `drop` dims.
Shape leading(const Shape& s, std::size_t drop) { return Shape(s.begin(), s.end() - static_cast<std::ptrdiff_t>(drop)); }
}  // namespace

// a (..., M, K) or (K), b (..., K, N) or (K) -> (..., M, N) with the batch dims broadcast; a 1-D operand's
// dim is dropped from the result (Note [matmul of any rank]).
Tensor matmul(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return matmul_batched(a, b);   // which names the undefined operand
  const std::size_t da = a.dim(), db = b.dim();
  if ((da == 2 || da == 3) && (db == 2 || db == 3)) return matmul_batched(a, b);
  TG_CHECK(da >= 1 && db >= 1, ShapeError, "matmul: both arguments to matmul need to be at least 1D, but they are ", da,
           "D and ", db, "D");
  // Device and dtypes (as autocast will cast them) are checked before an operand is expanded to the
  // batch or folded, either of which may copy it: a product that will be refused allocates nothing.
  prim::check_same_device("matmul", a.data(), b.data());
  auto product_dtype = [](const Tensor& x) {
    const bool cast = amp::detail::active_for(x) && (x.dtype() == kFloat32 || is_low_precision(x.dtype()));
    return cast ? amp::detail::lower_dtype(x) : x.dtype();
  };
  TG_CHECK(product_dtype(a) == product_dtype(b), DTypeError, "matmul: expected both tensors to have the same dtype, ",
           "but got ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  prim::check_floating("matmul", a.data());
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  const int64_t K = as.back();
  if (da == 1 && db == 1) {   // (K) . (K) -> 0-d
    TG_CHECK(bs[0] == K, ShapeError, "matmul: inconsistent tensor size, expected tensor [", K, "] and src [", bs[0],
             "] to have the same number of elements, but got ", K, " and ", bs[0], " elements respectively");
    return not_a_view(reshape(matmul_batched(reshape(a, {1, K}), reshape(b, {K, 1})), Shape{}));
  }
  if (db == 1) {   // (..., M, K) @ (K) -> (..., M): a times the column (K, 1), above 3-D with the rows folded
    TG_CHECK(bs[0] == K, ShapeError, "matmul: size mismatch, got input (", count_of(leading(as, 1)), "), mat (",
             shape_x(as), "), vec (", bs[0], ")");
    const int64_t rows = count_of({checked_batch(leading(as, 2), as[da - 2], K, 1, /*fold_rows=*/da > 3, as, bs), as[da - 2]});
    return not_a_view(reshape(matmul_batched(da <= 3 ? a : reshape(a, {rows, K}), reshape(b, {K, 1})), leading(as, 1)));
  }
  // From here b is at least 2-D; a 1-D a is the row (1, K) that the result drops.
  const Shape a2 = da == 1 ? Shape{1, K} : as;
  const int64_t M = a2[a2.size() - 2], N = bs[db - 1];
  const Shape a_batch = leading(a2, 2), b_batch = leading(bs, 2);
  const Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");   // checked first, as PyTorch does
  TG_CHECK(bs[db - 2] == K, ShapeError, "matmul: mat1 and mat2 shapes cannot be multiplied (", shape_x(a2), " and ",
           shape_x(bs), ")");
  Shape out = batch;
  if (da > 1) out.push_back(M);
  out.push_back(N);
  const int64_t B = checked_batch(batch, M, K, N, /*fold_rows=*/count_of(b_batch) == 1, as, bs);
  if (count_of(b_batch) == 1) {   // b without a batch: a's batch folded into its rows
    return not_a_view(reshape(matmul_batched(reshape(a, {count_of({B, M}), K}), reshape(b, {K, N})), out));
  }
  // x (batch_x..., R, C) as (B, R, C): expanded to the broadcast batch first where its batch differs
  auto flat_batch = [&](const Tensor& x, const Shape& x_batch, int64_t R, int64_t C) {
    if (x_batch == batch) return reshape(x, {B, R, C});
    Shape full = batch;
    full.push_back(R);
    full.push_back(C);
    return reshape(expand(x, full), {B, R, C});
  };
  const Tensor a3 = count_of(a_batch) == 1 ? reshape(a, {M, K})   // shared by every batch entry
                                                                  : flat_batch(a, a_batch, M, K);
  return not_a_view(reshape(matmul_batched(a3, flat_batch(b, b_batch, K, N)), out));
}

// a (M, K) @ b (K, N) -> (M, N), 2-D only (torch.mm)
Tensor mm(const Tensor& a, const Tensor& b) {
  TG_CHECK(a.defined() && b.defined(), Error, "mm: undefined input");
  TG_CHECK(a.dim() == 2, ShapeError, "mm: self must be a matrix, got ", a.dim(), "-D tensor");
  TG_CHECK(b.dim() == 2, ShapeError, "mm: mat2 must be a matrix, got ", b.dim(), "-D tensor");
  TG_CHECK(a.shape()[1] == b.shape()[0], ShapeError, "mm: mat1 and mat2 shapes cannot be multiplied (",
           shape_x(a.shape()), " and ", shape_x(b.shape()), ")");
  return matmul_batched(a, b);
}

// a (B, M, K) @ b (B, K, N) -> (B, M, N), one batch size, no broadcasting (torch.bmm)
Tensor bmm(const Tensor& a, const Tensor& b) {
  TG_CHECK(a.defined() && b.defined(), Error, "bmm: undefined input");
  TG_CHECK(a.dim() == 3, ShapeError, "bmm: batch1 must be a 3D tensor, got shape ", shape_str(a.shape()));
  TG_CHECK(b.dim() == 3, ShapeError, "bmm: batch2 must be a 3D tensor, got shape ", shape_str(b.shape()));
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  TG_CHECK(bs[0] == as[0] && bs[1] == as[2], ShapeError,
           "bmm: Expected size for first two dimensions of batch2 tensor to be: [", as[0], ", ", as[2], "] but got: [",
           bs[0], ", ", bs[1], "] (shapes ", shape_str(as), " and ", shape_str(bs), ")");
  return matmul_batched(a, b);
}

// a (K) . b (K) -> 0-d (torch.dot)
Tensor dot(const Tensor& a, const Tensor& b) {
  TG_CHECK(a.defined() && b.defined(), Error, "dot: undefined input");
  TG_CHECK(a.dim() == 1 && b.dim() == 1, ShapeError, "dot: 1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
           "D tensors");
  const int64_t K = a.shape()[0];
  TG_CHECK(b.shape()[0] == K, ShapeError, "dot: inconsistent tensor size, expected tensor [", K, "] and src [",
           b.shape()[0], "] to have the same number of elements, but got ", K, " and ", b.shape()[0],
           " elements respectively");
  return not_a_view(reshape(matmul_batched(reshape(a, {1, K}), reshape(b, {K, 1})), Shape{}));
}

// a (M) x b (N) -> (M, N), out[i][j] = a[i] * b[j] (torch.outer): a broadcast mul, so any dtype mul takes
Tensor outer(const Tensor& a, const Tensor& b) {
  TG_CHECK(a.defined() && b.defined(), Error, "outer: undefined input");
  TG_CHECK(a.dim() == 1, ShapeError, "outer: Expected 1-D argument self, but got ", a.dim(), "-D");
  TG_CHECK(b.dim() == 1, ShapeError, "outer: Expected 1-D argument vec2, but got ", b.dim(), "-D");
  return mul(reshape(a, {a.shape()[0], 1}), reshape(b, {1, b.shape()[0]}));
}

// y (N, O) = x (N, I) . weight (O, I)^T + bias (O); x of higher rank is flattened to (N, I) and back.
Tensor linear(const Tensor& x_in, const Tensor& weight_in, const Tensor& bias_in) {
  TG_CHECK(x_in.defined() && weight_in.defined(), Error, "linear: undefined input or weight");
  TG_CHECK(x_in.dim() >= 1 && weight_in.dim() == 2, ShapeError, "linear: expected input (..., in_features) and weight ",
           "(out_features, in_features), got ", shape_str(x_in.shape()), " and ", shape_str(weight_in.shape()));
  const int64_t I = x_in.shape().back(), O = weight_in.shape()[0];
  TG_CHECK(weight_in.shape()[1] == I, ShapeError, "linear: mat1 and mat2 shapes cannot be multiplied (",
           shape_x({x_in.numel() / std::max<int64_t>(I, 1), I}), " and ", shape_x({weight_in.shape()[1], O}), ")");
  TG_CHECK(!bias_in.defined() || bias_in.shape() == Shape{O}, ShapeError, "linear: expected bias of shape [", O,
           "], got ", bias_in.defined() ? shape_str(bias_in.shape()) : "undefined");
  if (amp::detail::product_through_float32(x_in, weight_in, bias_in))
    return linear_through_float32(x_in, weight_in, bias_in);
  // Note [Autocast op lists]: lower precision
  using amp::detail::AutocastOp;
  const Tensor x = amp::detail::cast(AutocastOp::Linear, x_in),
               weight = amp::detail::cast(AutocastOp::Linear, weight_in),
               bias = amp::detail::cast(AutocastOp::Linear, bias_in);
  const Shape in_shape = x.shape();
  Shape out_shape = in_shape;
  out_shape.back() = O;
  const RawTensor x2 = x.data().reshape({-1, I});
  // Note [Bias folded into the GEMM]: the bias goes into the GEMM when it has x's dtype and device.
  const bool fold = bias.defined() && bias.dtype() == x.dtype() && bias.device() == x.device();
  RawTensor y = fold ? prim::addmm(bias.data(), x2, weight.data().transpose(0, 1))
                  : prim::matmul(x2, weight.data().transpose(0, 1));
  if (bias.defined() && !fold) prim::binary_(BinaryOp::Add, y, bias.data(), "linear");   // row-broadcast bias, in place
  const bool grad_mode = GradMode::is_enabled();
  // Note [Autocast saves the caller's input]: a leaf input cast by autocast is saved uncast
  const bool recast = x.dtype() != x_in.dtype() && x_in.is_leaf() && !x_in.requires_grad();
  SavedTensor x_saved = grad_mode && weight.requires_grad() ? SavedTensor(recast ? x_in : x) : SavedTensor();
  SavedTensor w_saved = grad_mode && x.requires_grad() ? SavedTensor(weight) : SavedTensor();
  std::vector<Tensor> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  const DType x_dtype = x.dtype();
  return record("linear", y.view(out_shape), inputs, [x_saved, w_saved, in_shape, I, O, x_dtype](const auto& grad_t, auto& g) {
    if constexpr (!first_order_v<decltype(g)>) {   // the same formulas as recorded ops (Note [Differentiable rules])
      const Tensor g2 = reshape(grad_t, {-1, O});
      if (g.need(0)) g.set(0, reshape(matmul(g2, g.input(1, w_saved)), in_shape));
      if (g.need(1)) {
        Tensor xs = reshape(g.input(0, x_saved), {-1, I});
        if (xs.dtype() != x_dtype) xs = xs.to(x_dtype);
        g.set(1, matmul(t(g2), xs));
      }
      if (g.size() > 2 && g.need(2)) g.set(2, sum_to_size(g2, {O}));
    } else {   // first order: dW and db in one GEMM where they fold
      const RawTensor& grad = grad_t;
      const RawTensor g2 = grad.reshape({-1, O});
      auto saved_x = [&] {   // x as the forward multiplied it: (N, I) in x_dtype
        const RawTensor xs = x_saved.get().reshape({-1, I});
        return xs.dtype() == x_dtype ? xs : xs.to(x_dtype);
      };
      const bool need_bias = g.size() > 2 && g.need(2);
      if (g.need(0)) g.set(0, prim::matmul(g2, w_saved.get()).view(in_shape));   // dx = grad . W   (N, I)
      if (g.need(1) && need_bias) {   // dW = grad^T . x (O, I) and db = sum_n grad (O): one GEMM where it folds
        std::pair<RawTensor, RawTensor> wb = prim::matmul_row_sums(g2.transpose(0, 1), saved_x());
        g.set(1, wb.first);
        g.set(2, wb.second);
      } else if (g.need(1)) {
        g.set(1, prim::matmul(g2.transpose(0, 1), saved_x()));
      } else if (need_bias) {
        g.set(2, prim::sum_to(g2, {O}));
      }
    }
  });
}

}  // namespace tg
