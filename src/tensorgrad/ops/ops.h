/// \file
/// ops/ops.h: every differentiable op (and the few non-differentiable ones on Tensors), as free
/// functions. Each is defined in `ops/<family>.cpp` with its backward right below its forward.
/// tests/test_gradcheck.cpp and tests/test_cuda.cpp read this file (tests/ops_coverage.h): every
/// function declared here must have a gradcheck entry (or be listed as non-differentiable with a
/// reason) and a CPU-vs-CUDA parity case (or be excluded with a reason), or a coverage test fails.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "tensorgrad/core/indexing.h"
#include "tensorgrad/autograd/tensor.h"

namespace tg {

/// How a loss combines its per-element (or per-row) values (PyTorch's reduction= argument).
enum class Reduction { None, Mean, Sum };
/// Reduction::None, as libtorch's torch::kNone: `CrossEntropyLossOptions().reduction(tg::kNone)`.
constexpr Reduction kNone = Reduction::None;
/// Reduction::Mean, as libtorch's torch::kMean.
constexpr Reduction kMean = Reduction::Mean;
/// Reduction::Sum, as libtorch's torch::kSum.
constexpr Reduction kSum = Reduction::Sum;

// ---- elementwise (ops/elementwise.cpp); binary ops broadcast (NumPy rules)
/// \name Elementwise
/// Binary ops broadcast a and b (NumPy rules; ShapeError otherwise) and need one device (DeviceError).
/// Their dtypes may differ: the op computes in PyTorch's result type of the two (torch.result_type:
/// float32 + float64 is float64, int64 + float32 is float32, a 0-d operand counts only when its category
/// is higher, bool < integer < floating; Note [Type promotion]). Unary ops need a floating x (DTypeError
/// for integer and bool x; floor, ceil and trunc return an integer x's values). The arithmetic and the
/// ops up to clamp are also Tensor methods (tg::add(a, b) is a.add(b)); the math functions sin ... frac
/// are free functions only.
///@{

/// a + b (torch.add).
Tensor add(const Tensor& a, const Tensor& b);
/// a + alpha b (torch.add(input, other, alpha=...)). As PyTorch, DTypeError for a fractional alpha with
/// an integer or bool result and for a non-bool alpha with a bool one.
Tensor add(const Tensor& a, const Tensor& b, double alpha);
/// a - b (torch.sub).
Tensor sub(const Tensor& a, const Tensor& b);
/// a - alpha b (torch.sub(input, other, alpha=...)); alpha checked as add's.
Tensor sub(const Tensor& a, const Tensor& b, double alpha);
/// a * b elementwise (torch.mul).
Tensor mul(const Tensor& a, const Tensor& b);
/// a / b elementwise (torch.div), true division: integer and bool operands give float32.
Tensor div(const Tensor& a, const Tensor& b);
/// a^b elementwise (torch.pow); at least one operand floating (DTypeError for two integer tensors).
/// Gradients: b a^(b-1) for a, a^b ln(a) for b.
Tensor pow(const Tensor& a, const Tensor& b);
/// a^exponent (torch.pow with a scalar exponent).
Tensor pow(const Tensor& a, double exponent);
/// -x (torch.neg).
Tensor neg(const Tensor& x);
/// e^x (torch.exp).
Tensor exp(const Tensor& x);
/// Natural logarithm (torch.log); NaN below 0, -inf at 0.
Tensor log(const Tensor& x);
/// Square root (torch.sqrt); NaN below 0.
Tensor sqrt(const Tensor& x);
/// |x| (torch.abs); the gradient at 0 is 0.
Tensor abs(const Tensor& x);
/// max(x, 0) (torch.relu); the gradient at 0 is 0.
Tensor relu(const Tensor& x);
/// 1 / (1 + e^-x) (torch.sigmoid).
Tensor sigmoid(const Tensor& x);
/// Hyperbolic tangent (torch.tanh).
Tensor tanh(const Tensor& x);
/// sin x (torch.sin).
Tensor sin(const Tensor& x);
/// cos x (torch.cos).
Tensor cos(const Tensor& x);
/// tan x (torch.tan).
Tensor tan(const Tensor& x);
/// arcsin x (torch.asin); NaN outside [-1, 1].
Tensor asin(const Tensor& x);
/// arccos x (torch.acos); NaN outside [-1, 1].
Tensor acos(const Tensor& x);
/// arctan x (torch.atan).
Tensor atan(const Tensor& x);
/// sinh x (torch.sinh).
Tensor sinh(const Tensor& x);
/// cosh x (torch.cosh).
Tensor cosh(const Tensor& x);
/// arsinh x (torch.asinh).
Tensor asinh(const Tensor& x);
/// arcosh x (torch.acosh); NaN below 1.
Tensor acosh(const Tensor& x);
/// artanh x (torch.atanh); +-inf at +-1, NaN outside.
Tensor atanh(const Tensor& x);
/// The error function (torch.erf).
Tensor erf(const Tensor& x);
/// 1 - erf(x), accurate where erf is near 1 (torch.erfc).
Tensor erfc(const Tensor& x);
/// log(1 + x), accurate near 0 (torch.log1p).
Tensor log1p(const Tensor& x);
/// e^x - 1, accurate near 0 (torch.expm1).
Tensor expm1(const Tensor& x);
/// Base-2 logarithm (torch.log2).
Tensor log2(const Tensor& x);
/// Base-10 logarithm (torch.log10).
Tensor log10(const Tensor& x);
/// 1 / sqrt(x) (torch.rsqrt).
Tensor rsqrt(const Tensor& x);
/// 1 / x (torch.reciprocal).
Tensor reciprocal(const Tensor& x);
/// x^2 (torch.square).
Tensor square(const Tensor& x);
/// The largest integer <= x (torch.floor), in x's dtype; an integer tensor's own values (bool refused,
/// as PyTorch); the gradient is 0.
Tensor floor(const Tensor& x);
/// The smallest integer >= x (torch.ceil); integers as floor.
Tensor ceil(const Tensor& x);
/// x rounded toward 0 (torch.trunc); integers as floor.
Tensor trunc(const Tensor& x);
/// x - trunc(x), with x's sign (torch.frac); the gradient is 1. Floating x only, as PyTorch.
Tensor frac(const Tensor& x);
/// min(max(x, min), max) (torch.clamp); the gradient is 1 strictly inside (min, max), 0 at the bounds and
/// outside. As PyTorch: min > max gives max everywhere, and a NaN bound NaN everywhere (gradient 0).
Tensor clamp(const Tensor& x, double min, double max);
/// x rounded to the nearest integer, halves to even (torch.round: 2.5 -> 2, -1.5 -> -2); floating x.
/// The gradient is 0 (a step function), as in PyTorch.
Tensor round(const Tensor& x);
/// 1 where x > 0, -1 where x < 0, 0 elsewhere, NaN included (torch.sign); floating x; gradient 0.
Tensor sign(const Tensor& x);
/// cond ? a : b elementwise, all three broadcast (torch.where); the result has a and b's result type.
/// cond must be bool (DTypeError otherwise: compare first, e.g. x != 0) and gets no gradient:
/// AutogradError when it requires grad.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
///@}

/// \name Comparisons
/// A bool result, broadcast: the operands are compared in their result type, with the same dtype and
/// device rules as the binary ops; NaN compares unequal to everything, itself included. Not
/// differentiable: the result never requires grad.
///@{

/// a == b (torch.eq).
Tensor eq(const Tensor& a, const Tensor& b);
/// a != b (torch.ne).
Tensor ne(const Tensor& a, const Tensor& b);
/// a > b (torch.gt).
Tensor gt(const Tensor& a, const Tensor& b);
/// a < b (torch.lt).
Tensor lt(const Tensor& a, const Tensor& b);
/// a >= b (torch.ge).
Tensor ge(const Tensor& a, const Tensor& b);
/// a <= b (torch.le).
Tensor le(const Tensor& a, const Tensor& b);
///@}

// ---- reductions (ops/reduce.cpp); max/min split the gradient among ties
/// \name Reductions
/// Without dim: over all elements, a 0-d result. With dim (negative counts from the end): over that
/// dim, which is removed unless keepdim. max and min over a dim give the values, which are also the
/// tuple (values, indices) of PyTorch's max(dim); they and argmax throw IndexError on an empty tensor or
/// a size-0 dim.
///@{

/// The sum of all elements (torch.sum); a floating x keeps its dtype, an integer or bool x sums in int64.
Tensor sum(const Tensor& x);
/// The sum along dim.
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);
/// x summed down to shape (Tensor.sum_to_size): shape must broadcast to x's; the dims where it has
/// size 1 (or that it lacks in front) are summed. What backward does to a broadcast input's gradient.
Tensor sum_to_size(const Tensor& x, const Shape& shape);
/// The mean of all elements (torch.mean); floating x only; NaN for an empty tensor.
Tensor mean(const Tensor& x);
/// The mean along dim.
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
/// The largest element (torch.max); NaN when any element is NaN. The gradient is split evenly among ties.
Tensor max(const Tensor& x);
/// The largest values along dim (torch.max(x, dim)): the values as a Tensor, which is also the tuple
/// (values, int64 indices) that libtorch returns (ValuesWithIndices: `auto [v, i] = tg::max(x, 1)`);
/// ties share the gradient, the index is the first of them.
ValuesWithIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
/// The smallest element (torch.min); NaN when any element is NaN. The gradient is split evenly among ties.
Tensor min(const Tensor& x);
/// The smallest values along dim (torch.min(x, dim)), also the tuple (values, indices) as max(x, dim).
ValuesWithIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
/// The index of the largest element in the flattened x, int64, 0-d (torch.argmax); the first one
/// on ties, a NaN when there is one. Not differentiable.
Tensor argmax(const Tensor& x);
/// The index of the largest value along dim, int64.
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
///@}

/// \name More reductions
/// dims: a list of dims (negative count from the end; IndexError out of range, ShapeError when repeated),
/// or one integer; the empty list (the default) reduces over every dim, PyTorch's dim=None. The reduced
/// dims are removed unless keepdim. Composed of sum, amax and the elementwise ops where noted, so
/// they run on every backend.
///@{

/// The largest values over dims (torch.amax); the gradient is split evenly among ties. IndexError for a
/// size-0 reduced dim.
Tensor amax(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
/// The smallest values over dims (torch.amin); the gradient as amax's.
Tensor amin(const Tensor& x, IntArrayRef dims = {}, bool keepdim = false);
/// Whether every element is nonzero, a bool 0-d tensor (torch.all); NaN counts as true, an empty x
/// gives true. Not differentiable.
Tensor all(const Tensor& x);
/// Whether every element along dim is nonzero (torch.all(x, dim)), bool.
Tensor all(const Tensor& x, int64_t dim, bool keepdim = false);
/// Whether some element is nonzero, a bool 0-d tensor (torch.any); an empty x gives false.
Tensor any(const Tensor& x);
/// Whether some element along dim is nonzero (torch.any(x, dim)), bool.
Tensor any(const Tensor& x, int64_t dim, bool keepdim = false);
/// log(sum(exp(x))) over dims, computed as m + log(sum(exp(x - m))) with m the max over dims
/// (torch.logsumexp): no overflow for large x; a slice of -inf gives -inf, one holding +inf gives +inf,
/// an empty one -inf. The gradient is softmax(x) over dims. Integer and bool x are computed in float32.
Tensor logsumexp(const Tensor& x, IntArrayRef dims, bool keepdim = false);
/// The variance of all elements with Bessel's correction, sum((x - mean)^2) / (N - 1) (torch.var);
/// floating x only (DTypeError). N - correction <= 0 divides by 0: NaN (or inf), as PyTorch.
Tensor var(const Tensor& x);
/// The variance over dims, unbiased (correction 1) or not (0) (torch.var(x, dim, unbiased, keepdim)).
/// Unlike libtorch there is no var(x, unbiased) without dims: var(x, 1) is the variance over dim 1;
/// write var(x, {}, false) for the biased variance of all elements.
Tensor var(const Tensor& x, IntArrayRef dims, bool unbiased = true, bool keepdim = false);
/// The variance over dims divided by N - correction (torch.var(x, dim, correction=c, keepdim=k));
/// std::nullopt is PyTorch's default, 1.
Tensor var(const Tensor& x, IntArrayRef dims, std::optional<double> correction, bool keepdim = false);
/// var(x, dims, correction, keepdim) for a numeric correction: `tg::var(x, {1}, 0, true)` and
/// `tg::var(x, 1, 2.0)` take the correction form, where libtorch would convert the number to the bool
/// unbiased (true and false still pick the unbiased form).
template <class T, typename std::enable_if<std::is_arithmetic<T>::value && !std::is_same<T, bool>::value, int>::type = 0>
Tensor var(const Tensor& x, IntArrayRef dims, T correction, bool keepdim = false) {
  return var(x, dims, std::optional<double>(static_cast<double>(correction)), keepdim);
}
/// sqrt(var(x)) (torch.std), with var's forms and corrections; the gradient is 0 where the result is 0,
/// as PyTorch (not inf).
Tensor std(const Tensor& x);
/// The standard deviation over dims, unbiased or not.
Tensor std(const Tensor& x, IntArrayRef dims, bool unbiased = true, bool keepdim = false);
/// The standard deviation over dims with a correction.
Tensor std(const Tensor& x, IntArrayRef dims, std::optional<double> correction, bool keepdim = false);
/// std(x, dims, correction, keepdim) for a numeric correction (as var's).
template <class T, typename std::enable_if<std::is_arithmetic<T>::value && !std::is_same<T, bool>::value, int>::type = 0>
Tensor std(const Tensor& x, IntArrayRef dims, T correction, bool keepdim = false) {
  return std(x, dims, std::optional<double>(static_cast<double>(correction)), keepdim);
}
/// The p-norm of all elements, (sum |x|^p)^(1/p) (torch.norm, torch.linalg.vector_norm): p = 2 by
/// default; INFINITY is max |x|, -INFINITY min |x|, 0 the count of nonzero entries (gradient 0).
/// Floating x only (DTypeError). The gradient is sgn(x) |x|^(p-1) / norm^(p-1), and 0 where the norm
/// is 0, as PyTorch.
Tensor norm(const Tensor& x, double p = 2);
/// The p-norm over dims (torch.norm(x, p, dim, keepdim)).
Tensor norm(const Tensor& x, double p, IntArrayRef dims, bool keepdim = false);
/// The product of all elements, 0-d (torch.prod); integer and bool x multiply in int64. The gradient is
/// the product of the other elements (exact with zeros in x, as PyTorch). ops/scan.cpp.
Tensor prod(const Tensor& x);
/// The product along dim (torch.prod(x, dim, keepdim)); a size-0 dim gives 1.
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false);
/// The running sum along dim, y_i = x_0 + ... + x_i (torch.cumsum); integer and bool x sum in int64,
/// float16 and bfloat16 in float32 (rounded once). Backend::scan: one pass on the CPU, ceil(log2 n)
/// elementwise passes on CUDA (Note [Scans by doubling] in ops/scan.cpp).
Tensor cumsum(const Tensor& x, int64_t dim);
/// The running product along dim (torch.cumprod); integers in int64. The gradient is exact with zeros
/// in x (no division), as PyTorch's.
Tensor cumprod(const Tensor& x, int64_t dim);
///@}

// ---- sorting (ops/sort.cpp); Note [Sort order] in prim/sort.cpp
/// The values and int64 indices of sort(), topk() and kthvalue() (torch.return_types.sort, ...):
/// `auto [values, indices] = tg::sort(x);`. values has the gradient: it flows back to the positions
/// indices names (scattered, as gather's); indices never requires grad.
struct SortResult {
  Tensor values;    ///< the selected entries, x's dtype
  Tensor indices;   ///< their positions along dim, int64
};
/// \name Sorting
/// Stable for ties (torch.sort(stable=True)); NaN sorts above every number; any dtype. The gradient
/// of values goes to the entries they were taken from.
///@{

/// x sorted along dim (torch.sort(x, dim, descending, stable=True)).
SortResult sort(const Tensor& x, int64_t dim = -1, bool descending = false);
/// The k largest (largest = true) or smallest entries along dim, in sorted order (torch.topk); ties
/// are taken lowest index first. `sorted` is accepted for PyTorch's signature: the result is always
/// sorted. IndexError unless 0 <= k <= x.size(dim).
SortResult topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
/// The k-th smallest entry along dim, k from 1 (torch.kthvalue); dim removed unless keepdim.
/// IndexError unless 1 <= k <= x.size(dim). With ties, the one a stable sort puts at k-1.
SortResult kthvalue(const Tensor& x, int64_t k, int64_t dim = -1, bool keepdim = false);
///@}

// ---- linear algebra (ops/linalg.cpp, einsum in ops/einsum.cpp)
/// The matrix product with torch.matmul's rules: a (M, K) @ b (K, N) -> (M, N); 1-D @ 1-D is the dot
/// product (0-d); a 1-D a is a row (1, K) and a 1-D b a column (K, 1), whose dim the result drops
/// ((K) @ (K, N) -> (N), (M, K) @ (K) -> (M)); above 2-D the leading dims are batch dims that
/// broadcast: (2, 1, 4, 5, 3) @ (6, 1, 3, 7) -> (2, 6, 4, 5, 7). Floating, same dtype and device.
/// ShapeError for a 0-d operand, mismatched K ("mat1 and mat2 shapes cannot be multiplied (3x2 and
/// 3x2)") or batches that do not broadcast. 2-D and 3-D operands run one GEMM without copies; the other
/// ranks are reshapes around it (Note [matmul of any rank] in ops/linalg.cpp).
Tensor matmul(const Tensor& a, const Tensor& b);
/// The matrix product of two matrices, a (M, K) @ b (K, N) -> (M, N) (torch.mm): no broadcasting.
/// ShapeError for other ranks ("self must be a matrix") or mismatched K.
Tensor mm(const Tensor& a, const Tensor& b);
/// The batched matrix product a (B, M, K) @ b (B, K, N) -> (B, M, N) (torch.bmm): 3-D operands of one
/// batch size, no broadcasting. ShapeError otherwise ("batch1 must be a 3D tensor").
Tensor bmm(const Tensor& a, const Tensor& b);
/// The dot product of two 1-D tensors of one size, sum_i a_i b_i, 0-d (torch.dot). ShapeError otherwise.
Tensor dot(const Tensor& a, const Tensor& b);
/// The outer product of two 1-D tensors, a (M) x b (N) -> (M, N) with out[i][j] = a[i] * b[j]
/// (torch.outer); a broadcast mul, so the dtypes promote and integers work. ShapeError for other ranks.
Tensor outer(const Tensor& a, const Tensor& b);
/// Einstein summation (torch.einsum; libtorch's `torch::einsum("ij,jk->ik", {a, b})`): each operand's
/// dims are named by letters (a-z, A-Z), `...` stands for any number of leading, trailing or middle dims
/// (broadcast across operands, right-aligned). Letters missing from the output are summed over; a letter
/// repeated in one operand takes its diagonal ("ii->i", trace "ii->"); a letter's sizes must match
/// across operands or be 1 (broadcast). Without "->" the output is `...` then the letters that appear
/// once, in ASCII order (uppercase first). Spaces are ignored. Operands are contracted left to right,
/// each pair by one batched matmul; composed of differentiable ops (permute, reshape, expand,
/// index_select, sum_to_size, mul, matmul), so twice differentiable and on every backend. Floating
/// operands of one dtype (DTypeError; PyTorch also takes integers on the CPU). Errors in PyTorch's
/// words: Error for a malformed equation or an operand count that does not match it, ShapeError for a
/// subscript count that does not match an operand's rank and for sizes that do not match.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands);
/// y = x . weight^T + bias: x (..., I), weight (O, I), bias (O) or undefined -> y (..., O). Fused.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

// ---- views and shape (ops/shape.cpp): views share storage with their input
/// \name Views and shapes
/// The view ops (reshape when it can, view, transpose, t, permute, squeeze, unsqueeze, expand) share
/// x's storage: in-place writes through one are seen by the other.
///@{

/// x with another shape and the same elements (torch.reshape); one size may be -1 (inferred). A view
/// when the strides allow it, else a copy. ShapeError when the element counts differ.
Tensor reshape(const Tensor& x, const Shape& shape);
/// As reshape(), but always a view: ShapeError when x's strides do not allow it (torch.Tensor.view).
Tensor view(const Tensor& x, const Shape& shape);
/// Swaps dims d0 and d1 (torch.transpose).
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1);
/// The transpose of a 2-D x (torch.t); 0-D and 1-D x come back unchanged. ShapeError above 2-D.
Tensor t(const Tensor& x);
/// Reorders the dims: dim i of the result is dim dims[i] of x (torch.permute).
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
/// Removes every size-1 dim (torch.squeeze).
Tensor squeeze(const Tensor& x);
/// Removes dim when its size is 1; otherwise x's shape is kept.
Tensor squeeze(const Tensor& x, int64_t dim);
/// Inserts a size-1 dim at dim, in [-x.dim()-1, x.dim()] (torch.unsqueeze).
Tensor unsqueeze(const Tensor& x, int64_t dim);
/// Broadcasts x to shape without copying (stride 0); -1 keeps a size (torch.Tensor.expand). The
/// gradient is summed back over the broadcast dims.
Tensor expand(const Tensor& x, const Shape& shape);
/// x itself when contiguous, else a contiguous copy (torch.Tensor.contiguous).
Tensor contiguous(const Tensor& x);
/// A fresh contiguous copy of x, never a view (torch.clone); the gradient passes through unchanged.
Tensor clone(const Tensor& x);
/// Merges dims start_dim..end_dim into one (torch.flatten), through reshape(); a 0-d x becomes (1).
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
/// Concatenates xs along dim (torch.cat): at least one, same rank, dtype and device, equal sizes off dim.
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0);
/// Stacks equal-shape xs along a new dim (torch.stack): (S...) x n -> (n, S...) for dim 0.
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0);
/// x with the order of the elements along each of dims reversed (torch.flip), a copy; ShapeError for a
/// dim listed twice.
Tensor flip(const Tensor& x, IntArrayRef dims);
/// x with its elements shifted by shifts[i] along dims[i], those pushed past the end coming back at the
/// start (torch.roll), a copy; with no dims, x is rolled flattened (one shift). ShapeError unless
/// shifts and dims have the same length.
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
/// x padded (torch.nn.functional.pad): pad lists (left, right) pairs from the last dim backwards,
/// {l_last, r_last, l_prev, r_prev, ...}. Mode "constant" fills with value (default 0) and takes
/// negative pads, which crop; "reflect" mirrors about the edge element, "replicate" repeats it,
/// "circular" wraps around: those pad the last 1, 2 or 3 dims of an input with one or two more
/// (PyTorch's combinations), without a value. A copy, differentiable (index_select or cat). ShapeError
/// for an odd pad length, a reflect pad not below its dim, a circular one above it, or a negative size.
Tensor pad(const Tensor& x, IntArrayRef pad, const std::string& mode = "constant",
           std::optional<double> value = std::nullopt);
/// input (N, C, ...) resized over its spatial dims (torch.nn.functional.interpolate): to `size`, or by
/// `scale_factor` (output floor(in factor); one value for every spatial dim or one each), in mode
/// "nearest" (any number of spatial dims: PyTorch's legacy nearest, source floor(o in / out)),
/// "linear" (N, C, L) or "bilinear" (N, C, H, W), half-pixel centres unless align_corners. Exactly
/// one of size and scale_factor; align_corners only for the interpolating modes. Composed of
/// index_select and blends: differentiable, on every backend.
Tensor interpolate(const Tensor& input, IntArrayRef size = {}, const std::vector<double>& scale_factor = {},
                   const std::string& mode = "nearest", std::optional<bool> align_corners = std::nullopt);
/// x tiled repeats[i] times along dim i (torch.Tensor.repeat), a copy; more repeats than x has dims
/// add leading dims. ShapeError for fewer repeats than dims, Error for a negative one.
Tensor repeat(const Tensor& x, IntArrayRef repeats);
/// Each element repeated `repeats` times in place along dim (torch.repeat_interleave with an integer
/// repeats): [a, b] -> [a, a, b, b]; without dim over the flattened x. Error for a negative repeats.
Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim = std::nullopt);
///@}

// ---- indexing (ops/index.cpp); index is int64
/// x (..., D, ...), index (K) int64 with entries in [0, D) -> (..., K, ...): the entries at index along
/// dim (torch.index_select). Out-of-range indices throw IndexError (for CUDA tensors at the next sync).
/// Repeated indices add up in the gradient; index gets none.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
/// out[i][j] = x[index[i][j]][j] for dim 0, x[i][index[i][j]] for dim 1 (torch.gather): index (int64)
/// has x's rank, sizes no larger than x's off dim, entries in [0, x.size(dim)); out has index's shape.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
/// x with src added at index along dim (torch.scatter_add): out[index[i][j]][j] += src[i][j] for dim 0,
/// repeated indices adding up; index (int64) has x's rank and sizes no larger than src's, nor than x's
/// off dim (only src's first index.size(d) entries along each d are read). x and src of one floating
/// dtype (PyTorch also takes integers).
/// Gradients: x's is the output's, src's gathers it at index (zeros where src is not read).
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
/// x with alpha src added at the entries index names along dim (torch.index_add): index 0-d or 1-D
/// int64 of src.size(dim) entries in [0, x.size(dim)), src x's shape off dim, floating as scatter_add's;
/// repeated indices add up.
/// Gradients: x's is the output's, src's the output's gradient index_select-ed, times alpha.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, double alpha = 1.0);
/// x (*) int64 -> (*, num_classes) int64: 1 at the position x names, 0 elsewhere
/// (torch.nn.functional.one_hot). num_classes -1 takes max(x) + 1 (Error for an empty x, which has no
/// max, as PyTorch). DTypeError for a non-int64 x; IndexError naming the value for a negative one or
/// one not below num_classes, and for num_classes below -1. The values are read on the host (a sync
/// for CUDA x). Not differentiable (an integer result).
Tensor one_hot(const Tensor& x, int64_t num_classes = -1);
/// input (*) int64 with entries in [0, V), weight (V, D) -> (*, D): the rows of weight that input
/// names (torch.nn.functional.embedding). weight's gradient is dense: the output gradient's rows added
/// into the rows they were read from (index_add), except the row padding_idx (negative counts from
/// V), which gets none. IndexError for an index out of range (for CUDA tensors at the next sync) or a
/// padding_idx outside [-V, V); DTypeError for a non-int64 input; ShapeError unless weight is 2-D.
Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);

// ---- neural-network functions (ops/softmax_loss.cpp)
/// exp(x) / sum(exp(x)) along dim, computed stably (torch.softmax); floating x.
Tensor softmax(const Tensor& x, int64_t dim);
/// log(softmax(x, dim)), computed stably (torch.log_softmax); floating x.
Tensor log_softmax(const Tensor& x, int64_t dim);
/// logits (N, C), target (N) int64 class indices. Fused log-softmax + NLL, stable for large logits.
/// Targets equal to ignore_index contribute nothing; label_smoothing mixes in the uniform distribution.
/// Result: (N) per row for Reduction::None, else 0-d; Mean divides by the rows not ignored (NaN when
/// there are none), as torch.nn.functional.cross_entropy. Other targets outside [0, C) throw
/// IndexError (for CUDA tensors at the next sync); a target that requires grad throws AutogradError.
/// Also as PyTorch: logits (N, C, d1, ...) with target (N, d1, ...) (each position a row; None gives
/// (N, d1, ...)), and class probabilities as a floating target of the logits' shape (classes along
/// dim 1; -sum_c t_c log_softmax(x)_c, differentiable in the target too; Mean divides by the positions;
/// ignore_index does not apply).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction = Reduction::Mean,
                       int64_t ignore_index = -100, double label_smoothing = 0);
/// cross_entropy with class weights (C), ATen's argument order (undefined weight: the overload above):
/// each position's loss is scaled by the weight of its target class, and Mean divides by the sum of
/// those weights over the positions not ignored, as nll_loss; with label smoothing the smoothing term
/// -sum_c weight_c log p_c is normalized the same way (PyTorch's formula). For class-probability
/// targets the loss is -sum_c weight_c t_c log p_c and Mean divides by the number of positions.
/// ShapeError unless weight is (C); composed of log_softmax and nll_loss (weight gets no gradient).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100, double label_smoothing = 0);
/// (input - target)^2 elementwise, then reduced (torch.nn.functional.mse_loss); ShapeError unless the
/// shapes are equal (no broadcasting).
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);

// ---- more losses (ops/loss.cpp): input and target of one shape (ShapeError), floating input
/// input (N, C) log-probabilities (or (C), or (N, C, d1, ...)), target (N) (or (), (N, d1, ...)) int64
/// class indices -> -input[n][target[n]] weight[target[n]] (torch.nn.functional.nll_loss). Targets
/// equal to ignore_index count nothing; Mean divides by the sum of the weights of the rows not ignored
/// (NaN when every row is). IndexError for another target outside [0, C); weight (C) gets no gradient
/// (AutogradError when it requires grad, as PyTorch's backward).
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
/// -weight (t log x + (1 - t) log(1 - x)) elementwise, each log clamped at -100
/// (torch.nn.functional.binary_cross_entropy): input (probabilities) and target of one shape and
/// dtype; Error unless every input is in [0, 1], and under CUDA autocast (PyTorch refuses it there:
/// use binary_cross_entropy_with_logits). weight broadcasts with the loss.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                            Reduction reduction = Reduction::Mean);
/// -weight (pos_weight t log sigmoid(x) + (1 - t) log sigmoid(-x)), stable for large |x|
/// (torch.nn.functional.binary_cross_entropy_with_logits; libtorch's argument order).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(), Reduction reduction = Reduction::Mean);
/// |input - target| (torch.nn.functional.l1_loss).
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, d = input - target
/// (torch.nn.functional.smooth_l1_loss; beta 0 is l1_loss). Error for a negative beta.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
/// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (torch.nn.functional.huber_loss). Error
/// unless delta > 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);

/// Reduction of kl_div that divides the sum by the batch size (input.size(0)), as libtorch's
/// torch::kBatchMean: the mathematically correct KL divergence per sample.
struct BatchMean {};
/// BatchMean{}, libtorch's spelling.
constexpr BatchMean kBatchMean{};
/// The Kullback-Leibler divergence loss (torch.nn.functional.kl_div): input holds log-probabilities;
/// target probabilities (log-probabilities with log_target), elementwise target (log target - input)
/// (xlogy(t, t) - t input: 0 where t == 0), or exp(t) (t - input) with log_target, then reduced. Mean
/// averages over every element, as PyTorch's 'mean'; kl_div(input, target, kBatchMean) divides the
/// sum by input.size(0). Input and target of one shape (ShapeError), floating.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);
/// kl_div with reduction 'batchmean' (see above).
Tensor kl_div(const Tensor& input, const Tensor& target, BatchMean, bool log_target = false);
/// max(0, -y (x1 - x2) + margin) elementwise, y = 1 or -1 ranking x1 above or below x2, then reduced
/// (torch.nn.functional.margin_ranking_loss). x1, x2 and target broadcast; ShapeError unless they
/// have one number of dims.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0,
                           Reduction reduction = Reduction::Mean);
/// 1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1, 0 elsewhere, then reduced
/// (torch.nn.functional.cosine_embedding_loss): the cosine along the last dim of x1 and x2 (N, D) or
/// (D), with PyTorch's epsilon (1e-12 added to each squared norm); target (N) or 0-d. ShapeError for
/// other ranks or sizes.
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0,
                             Reduction reduction = Reduction::Mean);
/// x where y == 1, max(0, margin - x) where y == -1 (both terms elsewhere, as PyTorch's formula), then
/// reduced (torch.nn.functional.hinge_embedding_loss). input and target broadcast; floating input.
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            Reduction reduction = Reduction::Mean);
/// max(0, margin + d(a, p) - d(a, n)) with d the p-norm of the difference plus eps along the last dim
/// (torch.nn.functional.pairwise_distance); swap uses min(d(a, n), d(p, n)) as the negative distance
/// (torch.nn.functional.triplet_margin_loss). anchor, positive, negative (N, D) or (D), one number of
/// dims (ShapeError), broadcast; Error unless margin > 0 and p > 0.
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin = 1.0,
                           double p = 2, double eps = 1e-6, bool swap = false, Reduction reduction = Reduction::Mean);
/// sum over i != y of weight[y] max(0, margin - x[y] + x[i])^p / C per row
/// (torch.nn.functional.multi_margin_loss; libtorch's argument order): input (N, C) or (C), target (N)
/// or () int64 class indices. Error unless p is 1 or 2; ShapeError for other ranks, an empty input, a
/// target of the wrong size or a weight other than (C); IndexError for a target outside [0, C). weight
/// gets no gradient.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p = 1, double margin = 1.0,
                         const Tensor& weight = Tensor(), Reduction reduction = Reduction::Mean);
/// exp(x) - t x with log_input, else x - t log(x + eps); full adds Stirling's t log t - t + 0.5 log(2 pi t)
/// where t > 1 (torch.nn.functional.poisson_nll_loss). input and target broadcast; floating input.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true, bool full = false,
                        double eps = 1e-8, Reduction reduction = Reduction::Mean);
/// 0.5 (log v + (x - t)^2 / v), v = max(var, eps) (the clamp passes the gradient unchanged, as PyTorch's
/// clamp_ under no_grad), plus 0.5 log(2 pi) when full (torch.nn.functional.gaussian_nll_loss). var of
/// input's shape, or one dim short of it, or of its rank with one mismatched size (broadcast);
/// ShapeError for another var shape, Error for a negative var entry (one read back).
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full = false,
                         double eps = 1e-6, Reduction reduction = Reduction::Mean);
/// gaussian_nll_loss with one variance for every element (PyTorch's float var).
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, double var, bool full = false,
                         double eps = 1e-6, Reduction reduction = Reduction::Mean);
/// log(1 + exp(-y x)), then reduced (torch.nn.functional.soft_margin_loss): input and target (1 or -1)
/// broadcast; floating input (DTypeError). As PyTorch's formula, -y x above about 709 gives inf.
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), times weight when defined, summed over the last dim
/// of input and divided by its size C (one loss per row), then reduced
/// (torch.nn.functional.multilabel_soft_margin_loss): input (N, C) or (C), target and weight broadcast
/// with it; weight gets a gradient. DTypeError for integer input, IndexError for a 0-d input.
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                                   Reduction reduction = Reduction::Mean);
/// sum over the listed targets y_k and the classes j not listed of max(0, 1 - (x[y_k] - x[j])) / C per
/// row (torch.nn.functional.multilabel_margin_loss): input (N, C) or (C) (or 0-d, C = 1); target int64
/// of input's shape, the class indices of a row listed until its first -1 (a repeated index counts
/// each time). None gives (N), or 0-d for a (C) input. ShapeError for other ranks, an empty input or
/// another target shape; DTypeError for a non-int64 target; IndexError for a target entry outside
/// [-1, C) (one read back, as PyTorch's check). Holds (N, C, C) intermediates.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
/// A distance of two batches of points, one number per point (torch.nn.TripletMarginWithDistanceLoss's
/// distance_function); an empty one stands for torch.nn.functional.pairwise_distance (p 2, eps 1e-6).
using DistanceFunction = std::function<Tensor(const Tensor&, const Tensor&)>;
/// max(0, margin + d(a, p) - d(a, n)) with d the distance_function (an empty one: pairwise_distance with
/// p 2 and eps 1e-6, as PyTorch's default); swap uses min(d(a, n), d(p, n)) as the negative distance;
/// then reduced (torch.nn.functional.triplet_margin_with_distance_loss). anchor, positive and negative
/// of one number of dims (ShapeError); Error unless margin > 0. With the default distance, floating
/// inputs (DTypeError).
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const DistanceFunction& distance_function = {}, double margin = 1.0,
                                         bool swap = false, Reduction reduction = Reduction::Mean);

// ---- the connectionist temporal classification loss (ops/ctc_loss.cpp)
/// -log p(target | log_probs) summed over the alignments of each target
/// (torch.nn.functional.ctc_loss; Note [ctc_loss]): log_probs (T, N, C) or unbatched (T, C),
/// floating; targets (N, S) padded or the targets of the batch concatenated (sum(target_lengths)), or
/// (S) unbatched, int64; input_lengths and target_lengths (N) (or 0-d unbatched) int64, each input
/// length in [0, T]. Mean divides each loss by its target length (at least 1), then averages over the
/// batch; None gives (N) (or 0-d). An impossible alignment gives inf (0, with a zero gradient, under
/// zero_infinity). The gradient is PyTorch's (Note [ctc_loss gradient]); not differentiable twice.
/// ShapeError for wrong ranks or sizes, DTypeError for non-int64 targets or lengths, Error for a
/// negative or too large length, IndexError for a blank outside [0, C) or a target outside [0, C) or
/// equal to blank. Computed on the CPU in float64 (a CUDA input is copied there and back).
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank = 0, Reduction reduction = Reduction::Mean,
                bool zero_infinity = false);
/// ctc_loss with the lengths as lists (at::ctc_loss's IntArrayRef overload).
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, int64_t blank = 0, Reduction reduction = Reduction::Mean,
                bool zero_infinity = false);

/// Zeroes each element with probability p and scales the rest by 1/(1-p) when training.
/// Returns x itself when not training or p == 0; Error unless 0 <= p <= 1. The mask comes from the
/// manual_seed stream (torch.nn.functional.dropout).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true);

/// \name Sampling
/// Draws from the manual_seed stream (ops/random.cpp): the same seed gives the same samples on the CPU
/// and on CUDA. Not differentiable. Bad probabilities are found by reading a count back from the
/// device, a synchronization on CUDA.
///@{

/// num_samples category indices per row of input (C) or (R, C), int64 (num_samples) or (R,
/// num_samples), drawn with probabilities proportional to the row (torch.multinomial; rows need not sum
/// to 1). Without replacement each index at most once per row (PyTorch's exponential race: the largest
/// p / q, q ~ Exponential(1)). Error for num_samples <= 0, num_samples > C without replacement, a NaN,
/// infinite or negative entry or a row summing to 0; ShapeError for other ranks; DTypeError for
/// integer input.
Tensor multinomial(const Tensor& input, int64_t num_samples, bool replacement = false);
/// 1 with probability p[i], else 0, in p's dtype (torch.bernoulli(p)). Error unless every p is in
/// [0, 1]; DTypeError for integer p.
Tensor bernoulli(const Tensor& p);
/// 1 with probability p, else 0, of x's shape and dtype (torch.bernoulli(x, p)). Error unless 0 <= p <= 1.
Tensor bernoulli(const Tensor& x, double p);
///@}
/// dropout of whole channels (torch.nn.functional.dropout2d): x (N, C, ...) with at least 2 dims, each
/// (n, c) plane zeroed with probability p, the others scaled by 1/(1-p). x itself when not training or
/// p == 0; Error unless 0 <= p <= 1, ShapeError for fewer than 2 dims.
Tensor dropout2d(const Tensor& x, double p = 0.5, bool training = true);

// ---- activations (ops/elementwise.cpp), masks (ops/masking.cpp), slicing views (ops/slicing.cpp)
/// \name Activations, masks and slices
/// The activations are elementwise unary ops (floating x, DTypeError otherwise) with PyTorch's
/// defaults; each is also a Tensor method. narrow, select and index are views (they share x's
/// storage, as the views above); their gradient is dL/dy in the positions they read and 0 elsewhere.
///@{

/// x Phi(x) (torch.nn.functional.gelu): approximate "none" uses erf, "tanh" PyTorch's tanh
/// approximation; Error for another string.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
/// x sigmoid(x) (torch.nn.functional.silu).
Tensor silu(const Tensor& x);
/// log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (torch.nn.functional.softplus).
/// Error when beta is 0 or NaN.
Tensor softplus(const Tensor& x, double beta = 1, double threshold = 20);
/// min(max(x, min_val), max_val) (torch.nn.functional.hardtanh); the gradient is 1 strictly inside.
/// Error when min_val > max_val.
Tensor hardtanh(const Tensor& x, double min_val = -1, double max_val = 1);
/// min(max(x, 0), 6) (torch.nn.functional.relu6): hardtanh(x, 0, 6).
Tensor relu6(const Tensor& x);
/// x min(max(x + 3, 0), 6) / 6 (torch.nn.functional.hardswish).
Tensor hardswish(const Tensor& x);
/// min(max(x + 3, 0), 6) / 6 (torch.nn.functional.hardsigmoid).
Tensor hardsigmoid(const Tensor& x);
/// x for x > 0, alpha (e^x - 1) elsewhere (torch.nn.functional.elu).
Tensor elu(const Tensor& x, double alpha = 1.0);
/// scale elu(x, alpha) with PyTorch's constants (torch.nn.functional.selu).
Tensor selu(const Tensor& x);
/// x for x > 0, alpha (e^(x / alpha) - 1) elsewhere (torch.nn.functional.celu); Error for alpha 0.
Tensor celu(const Tensor& x, double alpha = 1.0);
/// x tanh(log(1 + e^x)) (torch.nn.functional.mish).
Tensor mish(const Tensor& x);
/// x / (1 + |x|) (torch.nn.functional.softsign), composed as PyTorch composes it.
Tensor softsign(const Tensor& x);
/// x where x > 0, negative_slope * x elsewhere (torch.nn.functional.leaky_relu).
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
/// x where x > 0, weight * x elsewhere (torch.nn.functional.prelu): weight has one element, or one per
/// channel (dim 1 of x; 1-D x has one channel), broadcast along dim 1. Composed of where and mul.
/// ShapeError for a weight of more than 1 dim or a count matching neither; DTypeError for integer
/// input or a weight of another dtype.
Tensor prelu(const Tensor& x, const Tensor& weight);
/// log(sigmoid(x)), computed stably for large |x| (torch.nn.functional.logsigmoid).
Tensor log_sigmoid(const Tensor& x);
/// x with value where mask is true (torch.masked_fill): mask is bool (DTypeError otherwise) and
/// broadcasts with x (the result has the broadcast shape); value is converted to x's dtype. The mask
/// gets no gradient (AutogradError when it requires grad).
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
/// The same with a 0-d value (ShapeError otherwise), which gets the gradient summed over the mask.
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
/// The lower triangle of the last two dims (torch.tril): elements with col - row <= diagonal are kept,
/// the others are 0. x has at least 2 dims (ShapeError); any dtype.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
/// The upper triangle (torch.triu): elements with col - row >= diagonal are kept, the others 0.
Tensor triu(const Tensor& x, int64_t diagonal = 0);
/// Elements [start, start + length) along dim, a view (torch.narrow); a negative start counts from the
/// end. IndexError naming the dim and its size when the range does not fit.
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
/// The slice at index along dim, which is removed, a view (torch.select); a negative index counts from
/// the end. IndexError naming the index, the dim and its size when out of range.
Tensor select(const Tensor& x, int64_t dim, int64_t index);
/// Python's x[...] as one view (libtorch's Tensor::index): integers select (removing the dim), Slices
/// keep it (start:stop:step, negative bounds count from the end and clamp, as in Python), None inserts
/// a size-1 dim, one Ellipsis stands for the dims no other index names:
/// `x.index({tg::Slice(0, 4), 1})` is x[0:4, 1]. IndexError for an integer out of range (naming the
/// dim and its size), a step below 1, more indices than dims, or two Ellipses.
/// With index Tensors (advanced indexing) the result is a copy, as PyTorch's: `x.index({mask})` (a bool
/// mask of x's leading dims: the selected rows, (count, trailing dims...)) and `x.index({i0, i1})`
/// (integer tensors, int64 or int32, broadcast together to B: x[i0[b], i1[b], ...] of shape (B,
/// trailing dims...)); negative positions count from the end. Index Tensors may stand anywhere among
/// the other entries, with PyTorch's rule: the integers, Slices, None and Ellipsis are applied first
/// (a view), then the index Tensors index the dims of that view they stand at (a k-dim mask k of
/// them, as its nonzero() positions would). When the index Tensors are adjacent there, the broadcast
/// dims B replace theirs in place (`x.index({Slice(), i})`, Python's x[:, i], is (x.size(0), B...,
/// rest...); x[i0, 0, i1] is adjacent too, the integer's dim being gone); when a Slice, None or
/// Ellipsis dim separates them, B comes first (x[i0, :, i1] is (B..., x.size(1))). IndexError for a
/// position out of range (naming the dim of x it indexes and its size), a mask whose shape differs
/// from the dims it covers, index shapes that do not broadcast, more indices than dims, or an index
/// Tensor that is not int64, int32 or bool. Differentiable (index_select over the indexed dims
/// flattened, after the view and a permute of them to the front); the indices are read on the host
/// (a sync for CUDA indices).
Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices);
/// x with values written at indices (torch.index_put; Python's x[indices] = values, out of place).
/// indices are as index()'s advanced form (bool masks and integer tensors anywhere among integers,
/// Slices, None and one Ellipsis: `x.index_put_({Slice(), i}, v)` is Python's x[:, i] = v); it writes
/// the elements index(x, indices) reads. values has x's dtype and device (DTypeError, DeviceError) and
/// broadcasts to the shape index(x, indices) has (ShapeError otherwise). With accumulate the values
/// are added, a repeated position getting the sum of its values: they are added pairwise in index
/// order and then once into x, so every run and every backend gives the same result. Without it a
/// repeated position takes the value of its last occurrence in index order (PyTorch leaves the choice
/// unspecified). Any dtype (with accumulate, bool adds as logical or).
/// Gradients: x's is the output's, with zeros at the written positions without accumulate; values'
/// is the output's gradient at the positions it was written to, summed to values' shape (a value that
/// a later duplicate overwrote gets none; PyTorch gives it the gradient of the position anyway).
Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                 bool accumulate = false);
/// The same with one value for every indexed element, converted to x's dtype (a constant).
Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, double value, bool accumulate = false);
///@}

/// \name Splitting
/// Lists of views of x (ops/slicing.cpp), composed of narrow and select: each piece shares x's storage
/// and sends its gradient back to its own positions. Free functions only (torch.split(x, 2) is
/// tg::split(x, 2), not a method). IndexError for a 0-d x or a dim out of range.
///@{

/// x cut along dim into pieces of split_size, the last one smaller when split_size does not divide
/// x.size(dim) (torch.split with an integer): ceil(size / split_size) pieces; a size-0 dim gives one
/// empty piece. Error for a negative split_size, or 0 with a non-empty dim. Note: `split(x, {2})` is
/// this form (a braced single integer converts to int64_t first); a list of one size is
/// split_with_sizes(x, {2}).
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
/// x cut along dim into pieces of the listed sizes (torch.split with a list): split_with_sizes.
std::vector<Tensor> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
/// x cut along dim into pieces of the listed sizes (torch.split_with_sizes). ShapeError unless the sizes
/// sum to x.size(dim); Error for a negative size.
std::vector<Tensor> split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim = 0);
/// x cut along dim into at most chunks pieces of ceil(size / chunks) (torch.chunk): fewer pieces when
/// that does not divide evenly (size 6 in 4 chunks gives 3 pieces of 2), chunks empty pieces for a
/// size-0 dim. Error unless chunks > 0.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
/// The x.size(dim) slices select(x, dim, i), each without dim (torch.unbind).
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);
///@}

// ---- convolution and pooling (ops/conv.cpp); sizes given as {n} (both dims) or {h, w}
/// \name Convolution and pooling
/// PyTorch's functional forms (torch.nn.functional.conv2d, ...): input (N, C, H, W) or unbatched
/// (C, H, W), a size argument {n} applies to both spatial dims, {h, w} to each. Bad geometry (rank,
/// channels not divisible by groups, a kernel larger than the padded input, an output smaller than
/// 1x1) throws ShapeError naming the op and the shapes, before any allocation.
///@{

/// input (N, C, H, W), weight (O, C / groups, KH, KW), bias (O) or undefined -> (N, O, OH, OW) with
/// OH = (H + 2 padding - dilation (KH - 1) - 1) / stride + 1 (torch.nn.functional.conv2d: a
/// cross-correlation). im2col + GEMM on both backends.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                IntArrayRef stride = {1}, IntArrayRef padding = {0},
                IntArrayRef dilation = {1}, int64_t groups = 1);
/// input (N, C, L) or (C, L), weight (O, C / groups, K), bias (O) or undefined -> (N, O, OL)
/// (torch.nn.functional.conv1d), computed as conv2d over a height of 1.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
                int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
/// input (N, Cin, H, W) or (Cin, H, W), weight (Cin, Cout / groups, KH, KW), bias (Cout) or undefined ->
/// (N, Cout, OH, OW), OH = (H - 1) stride - 2 padding + dilation (KH - 1) + output_padding + 1
/// (torch.nn.functional.conv_transpose2d, libtorch's argument order: groups before dilation): the
/// input gradient of a conv2d, on conv2d's kernels (Note [Transposed convolution] in ops/conv.cpp).
/// ShapeError for bad geometry, output_padding not below stride or dilation, or an empty output.
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const std::vector<int64_t>& stride = {1}, const std::vector<int64_t>& padding = {0},
                        const std::vector<int64_t>& output_padding = {0}, int64_t groups = 1,
                        const std::vector<int64_t>& dilation = {1});
/// input (N, Cin, L) or (Cin, L), weight (Cin, Cout / groups, K), bias (Cout) or undefined -> (N, Cout, OL),
/// OL = (L - 1) stride - 2 padding + dilation (K - 1) + output_padding + 1
/// (torch.nn.functional.conv_transpose1d, libtorch's argument order: groups before dilation), computed
/// as conv_transpose2d over a height of 1. ShapeError as conv_transpose2d, naming conv_transpose1d.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
                        int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, int64_t dilation = 1);
/// The maximum of each kernel_size window (torch.nn.functional.max_pool2d); stride defaults to
/// kernel_size, padding (at most half the kernel) counts as -inf, dilation spaces the window's taps.
/// ceil_mode rounds the output size up, PyTorch's rule: OH = ceil((H + 2 padding - dilation (KH - 1)
/// - 1) / stride) + 1, less one when the last window would start past the input and its left padding.
/// NaN propagates. The gradient goes to the position of each maximum (indices saved by the forward).
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size,
                    IntArrayRef stride = {}, IntArrayRef padding = {0},
                    IntArrayRef dilation = {1}, bool ceil_mode = false);
/// The mean of each kernel_size window (torch.nn.functional.avg_pool2d); stride defaults to
/// kernel_size; zero padding, counted in the divisor when count_include_pad. ceil_mode: the output
/// size rule of max_pool2d; a window reaching past the padded input divides by the part inside it
/// (as PyTorch). Note the order: PyTorch's ceil_mode comes before count_include_pad; here it comes
/// last, so that calls written before it existed keep their meaning.
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size,
                    IntArrayRef stride = {}, IntArrayRef padding = {0},
                    bool count_include_pad = true, bool ceil_mode = false);
/// Means over output_size {OH, OW} windows covering the input (torch.nn.functional.adaptive_avg_pool2d):
/// window i spans rows [floor(i H / OH), ceil((i + 1) H / OH)).
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
/// max_pool2d over one spatial dim (torch.nn.functional.max_pool1d): input (N, C, L) or (C, L),
/// kernel_size, stride (empty: kernel_size), padding and dilation of one element each, computed as
/// max_pool2d over a height of 1 (ops/pooling.cpp). ShapeError with PyTorch's max_pool1d messages.
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  IntArrayRef dilation = {1}, bool ceil_mode = false);
/// avg_pool2d over one spatial dim (torch.nn.functional.avg_pool1d): input (N, C, L) or (C, L);
/// PyTorch's argument order (ceil_mode before count_include_pad), computed as avg_pool2d over a height
/// of 1 (ops/pooling.cpp). ShapeError for bad sizes, naming avg_pool1d.
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
/// adaptive_avg_pool2d over one spatial dim (torch.nn.functional.adaptive_avg_pool1d): input (N, C, L)
/// or (C, L), output_size of one element -> (N, C, OL) (ops/pooling.cpp).
Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size);
/// Maxima over output_size {OH, OW} windows covering the input (torch.nn.functional.adaptive_max_pool2d,
/// without indices): window i spans rows [floor(i H / OH), ceil((i + 1) H / OH)), columns likewise.
/// Composed of index_select and amax (ops/pooling.cpp), so differentiable twice and on every backend;
/// max_pool2d's kernel when OH divides H and OW divides W. Where a window holds several equal maxima,
/// PyTorch gives its gradient to one of them; amax (the composed case) splits it evenly among them.
Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
/// adaptive_max_pool2d over one spatial dim (torch.nn.functional.adaptive_max_pool1d, without indices):
/// input (N, C, L) or (C, L), output_size of one element (ops/pooling.cpp).
Tensor adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size);
/// input (N, C, D, H, W) or (C, D, H, W), weight (O, C / groups, KD, KH, KW), bias (O) or undefined ->
/// (N, O, OD, OH, OW), each output size as conv2d's (torch.nn.functional.conv3d); stride, padding and
/// dilation {n} (all three dims) or {d, h, w}. Composed of pad, depth slices and one conv2d
/// (ops/conv3d.cpp, Note [3-D convolution as a composition]), so differentiable twice on every
/// backend. ShapeError with PyTorch's messages for bad geometry, naming conv3d.
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(), IntArrayRef stride = {1},
              IntArrayRef padding = {0}, IntArrayRef dilation = {1}, int64_t groups = 1);
/// input (N, Cin, D, H, W) or (Cin, D, H, W), weight (Cin, Cout / groups, KD, KH, KW), bias (Cout) or
/// undefined -> (N, Cout, OD, OH, OW), OD = (D - 1) stride - 2 padding + dilation (KD - 1) +
/// output_padding + 1 (torch.nn.functional.conv_transpose3d, libtorch's argument order: groups before
/// dilation); sizes {n} or {d, h, w}. Composed of one conv_transpose2d, pad and sums (ops/conv3d.cpp).
/// ShapeError as conv_transpose2d, naming conv_transpose3d.
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        IntArrayRef stride = {1}, IntArrayRef padding = {0}, IntArrayRef output_padding = {0},
                        int64_t groups = 1, IntArrayRef dilation = {1});
/// The maximum of each kernel_size window of (N, C, D, H, W) or (C, D, H, W) input
/// (torch.nn.functional.max_pool3d, without indices): max_pool2d's rules per dim, sizes {n} or
/// {d, h, w}. Composed of two max_pool2d (over (H, W), then over depth; ops/conv3d.cpp), each window's
/// gradient going to one maximum. ShapeError with PyTorch's messages, naming max_pool3d.
Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  IntArrayRef dilation = {1}, bool ceil_mode = false);
/// The mean of each kernel_size window of (N, C, D, H, W) or (C, D, H, W) input
/// (torch.nn.functional.avg_pool3d, PyTorch's argument order: ceil_mode before count_include_pad; no
/// divisor_override, which avg_pool2d lacks too). Composed of two avg_pool2d (ops/conv3d.cpp).
Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
/// Means over output_size {OD, OH, OW} (or {n}) windows covering (N, C, D, H, W) or (C, D, H, W) input
/// (torch.nn.functional.adaptive_avg_pool3d), adaptive_avg_pool2d's windows per dim; composed of two
/// adaptive_avg_pool2d (ops/conv3d.cpp).
Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size);
/// Maxima over output_size {OD, OH, OW} (or {n}) windows covering (N, C, D, H, W) or (C, D, H, W) input
/// (torch.nn.functional.adaptive_max_pool3d, without indices), adaptive_max_pool2d's windows per dim:
/// max_pool3d when each output size divides its input size, index_select and amax per dim otherwise
/// (ops/pooling.cpp); ties within a window as adaptive_max_pool2d's.
Tensor adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size);
///@}

// ---- normalization (ops/norm.cpp)
/// \name Normalization
///@{

/// input (N, C, ...) normalized per channel (torch.nn.functional.batch_norm): training uses the batch
/// statistics (biased variance) and, when running_mean / running_var are defined, updates them in
/// place as (1 - momentum) running + momentum batch (the unbiased variance); evaluation uses the
/// running statistics. weight and bias (C) are optional. ShapeError for a training batch with one
/// value per channel or per-channel tensors of another size.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                    const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                    double momentum = 0.1, double eps = 1e-5);
/// input (*, normalized_shape) normalized over its trailing normalized_shape dims with the biased
/// variance, then scaled by weight and shifted by bias (both of normalized_shape, optional)
/// (torch.nn.functional.layer_norm).
Tensor layer_norm(const Tensor& input, const std::vector<int64_t>& normalized_shape,
                    const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), double eps = 1e-5);
/// input (N, C, *) split into num_groups groups of C / num_groups channels, each normalized over its
/// channels and every trailing dim with the biased variance, then scaled by weight and shifted by bias
/// (both (C), optional, per channel) (torch.nn.functional.group_norm). ShapeError for fewer than 2
/// dims, C not divisible by num_groups, or weight / bias of another size than C.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = Tensor(),
                    const Tensor& bias = Tensor(), double eps = 1e-5);
/// input (N, C, *) normalized per sample and channel over the trailing dims
/// (torch.nn.functional.instance_norm). use_input_stats: each instance's own statistics (biased
/// variance), group_norm with C groups; when running_mean / running_var (C) are defined they are updated
/// in place, without gradient, as (1 - momentum) running + momentum times the batch mean of the
/// instances' means and unbiased variances. Otherwise the running statistics normalize (both must be
/// defined). weight and bias (C) are optional. ShapeError for fewer than 2 dims, a single spatial
/// element with use_input_stats, or per-channel tensors of another size (ops/norm_extra.cpp).
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = Tensor(), const Tensor& running_var = Tensor(),
                     const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);
///@}

// ---- attention (ops/attention.cpp)
/// softmax(query key^T scale + mask) value (torch.nn.functional.scaled_dot_product_attention):
/// query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev); the leading dims broadcast.
/// attn_mask broadcasts to (..., L, S): a bool mask keeps the positions where it is true (the others
/// get -inf before the softmax), a floating one (query's dtype) is added to the scores. is_causal
/// keeps key j for query i when j <= i (top-left aligned, as PyTorch), and needs no attn_mask
/// (Error when both are given). scale defaults to 1 / sqrt(E). dropout_p > 0 drops attention weights
/// from the manual_seed stream and scales the others by 1 / (1 - dropout_p): as in PyTorch this
/// function always applies it, so pass 0 in evaluation (nn::MultiheadAttention does). A query row
/// whose every key is masked gives 0 and zero gradients, as PyTorch 2.5 and later. On CUDA it runs
/// fused kernels (an online softmax that never stores the (L, S) scores, and a backward that
/// recomputes them) when dropout_p is 0, the head dims are at most 128 (64 in float64) and a float
/// attn_mask needs no gradient; otherwise, and on the CPU, it is composed of matmul, masked_fill,
/// softmax and dropout, which autograd differentiates (attn_mask included). See Note [Fused
/// attention] in ops/attention.cpp.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                      const Tensor& attn_mask = Tensor(), double dropout_p = 0,
                                      bool is_causal = false, std::optional<double> scale = std::nullopt);

// ---- recurrent cells (ops/rnn.cpp): the pointwise part of one step of nn::LSTM and nn::GRU
/// One LSTM step's pointwise part (PyTorch's _thnn_fused_lstm_cell, the biases already in the
/// gates): input_gates and hidden_gates (N, 4H) are the input's and the state's products, gates in
/// PyTorch's order (input, forget, cell, output), cx (N, H) the cell state -> (h', c') (N, H), with
/// c' = sigmoid(f) cx + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c') for each gate's x + h. One
/// kernel forward and one backward on either device (Note [Fused recurrent cells] in kernels/rnn.h);
/// differentiable twice. The three operands are brought to their promoted dtype first. ShapeError
/// for gates that are not (N, 4H) for a state (N, H).
std::tuple<Tensor, Tensor> fused_lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx);
/// One GRU step's pointwise part (PyTorch's _thnn_fused_gru_cell, the biases already in the gates):
/// input_gates and hidden_gates (N, 3H) the input's and the state's products, gates in PyTorch's
/// order (reset, update, new), hx (N, H) the state -> h' = (1 - z) n + z hx, with r, z the sigmoids
/// of their gates' sums and n = tanh(x_n + r h_n). Fused as fused_lstm_cell.
Tensor fused_gru_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx);

// ---- operators (ops/methods.cpp): Tensors and scalars on either side
/// \name Operators
/// The same ops as the functions above, with a Tensor or a double on either side; a double becomes
/// a 0-d constant on the Tensor's device (scalar_like) and broadcasts: of the Tensor's dtype,
/// except that a fractional double next to an integer Tensor is float32 (Note [Type promotion]).
///@{

/// add(a, b)
Tensor operator+(const Tensor& a, const Tensor& b);
/// sub(a, b)
Tensor operator-(const Tensor& a, const Tensor& b);
/// mul(a, b), elementwise (matmul() is the matrix product)
Tensor operator*(const Tensor& a, const Tensor& b);
/// div(a, b)
Tensor operator/(const Tensor& a, const Tensor& b);
/// neg(x)
Tensor operator-(const Tensor& x);
/// a + s
Tensor operator+(const Tensor& a, double s);
/// a - s
Tensor operator-(const Tensor& a, double s);
/// a * s
Tensor operator*(const Tensor& a, double s);
/// a / s
Tensor operator/(const Tensor& a, double s);
/// s + a
Tensor operator+(double s, const Tensor& a);
/// s - a
Tensor operator-(double s, const Tensor& a);
/// s * a
Tensor operator*(double s, const Tensor& a);
/// s / a
Tensor operator/(double s, const Tensor& a);
/// eq(a, b): a bool Tensor, as every comparison
Tensor operator==(const Tensor& a, const Tensor& b);
/// ne(a, b)
Tensor operator!=(const Tensor& a, const Tensor& b);
/// gt(a, b)
Tensor operator>(const Tensor& a, const Tensor& b);
/// lt(a, b)
Tensor operator<(const Tensor& a, const Tensor& b);
/// ge(a, b)
Tensor operator>=(const Tensor& a, const Tensor& b);
/// le(a, b)
Tensor operator<=(const Tensor& a, const Tensor& b);
/// a > s
Tensor operator>(const Tensor& a, double s);
/// a < s
Tensor operator<(const Tensor& a, double s);
/// a >= s
Tensor operator>=(const Tensor& a, double s);
/// a <= s
Tensor operator<=(const Tensor& a, double s);
/// a == s
Tensor operator==(const Tensor& a, double s);
/// a != s
Tensor operator!=(const Tensor& a, double s);

///@}

/// a.add_(b), as libtorch's a += b (the in-place rules of Tensor::add_).
inline Tensor& operator+=(Tensor& a, const Tensor& b) { return a.add_(b); }
/// a.add_(s).
inline Tensor& operator+=(Tensor& a, double s) { return a.add_(s); }
/// a.sub_(b), as libtorch's a -= b.
inline Tensor& operator-=(Tensor& a, const Tensor& b) { return a.sub_(b); }
/// a.sub_(s).
inline Tensor& operator-=(Tensor& a, double s) { return a.sub_(s); }
/// a.mul_(b), as libtorch's a *= b.
inline Tensor& operator*=(Tensor& a, const Tensor& b) { return a.mul_(b); }
/// a.mul_(s).
inline Tensor& operator*=(Tensor& a, double s) { return a.mul_(s); }

/// a.allclose(b, rtol, atol, equal_nan) (torch.allclose): not an op (no graph), a bool.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
/// a.equal(b) (torch.equal): same shape, dtype and values; a bool.
bool equal(const Tensor& a, const Tensor& b);

/// A 0-d constant on like's device, of prim::scalar_dtype(value, like's dtype) (scalar operands of
/// the operators above).
Tensor scalar_like(double value, const Tensor& like);

namespace detail {
/// PyTorch's alpha_check for add and sub with alpha: DTypeError naming op for a fractional alpha with
/// an integer or bool result dtype, and for a non-bool alpha with a bool one.
void check_alpha(const char* op, DType result, double alpha);
}  // namespace detail

}  // namespace tg
