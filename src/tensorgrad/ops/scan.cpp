// ops/scan.cpp: the running reductions cumsum and cumprod, and prod (whose gradient needs running
// products). The scans are Backend::scan (prim::scan: one pass per line on the CPU, Note [Scans by
// doubling] on CUDA); prod's forward is a tree of elementwise products, cumprod's backward a doubling
// of elementwise kernels. The other reductions are in ops/reduce.cpp.
#include <utility>
#include <vector>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {

// Note [Scans by doubling]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// An inclusive scan along dim, y_i = x_0 op x_1 op ... op x_i, can be computed in ceil(log2 n) passes:
// pass k combines each element with the one 2^k before it (after it for a reverse scan). Each pass is
// one elementwise kernel over narrow views, so it needs no kernel of its own and is parallel over the
// whole tensor, however few and long the lines are; it does O(n log n) work. The CUDA backend's scan
// (backend/cuda/reduce.cu) is computed this way, where every pass runs at the GPU's bandwidth and a
// thread per line would leave a long 1-D line serial; the CPU backend's is one sequential pass per
// line (backend/cpu/reduce.cpp), memory-bound. cumprod's backward needs an affine recurrence that no
// backend scan computes, and runs it by doubling here (reverse_affine_scan).

/// scan() on the backend: see prim::scan for the dtypes.
RawTensor scan(const RawTensor& x, int64_t dim, BinaryOp op, bool reverse) {
  return prim::scan(op, x, dim, reverse, op == BinaryOp::Add ? "cumsum" : "cumprod");
}

/// The exclusive scan from an inclusive one: shifted by one along dim (towards the end, or towards the
/// start when reverse), the vacated end holding the identity (1 for products).
RawTensor exclusive(const RawTensor& inclusive, int64_t dim, double identity, bool reverse) {
  const int64_t n = inclusive.shape()[dim];
  RawTensor out = prim::full(inclusive.shape(), identity, inclusive.dtype(), inclusive.device());
  if (n > 1) {
    if (reverse) prim::copy_(out.narrow(dim, 0, n - 1), inclusive.narrow(dim, 1, n - 1));
    else prim::copy_(out.narrow(dim, 1, n - 1), inclusive.narrow(dim, 0, n - 1));
  }
  return out;
}

/// S along dim with S_i = b_i + a_i S_{i+1} and S_n = 0, by doubling (Note [Scans by doubling]): each pass composes every
/// affine map with the one 2^k after it, (a_i, b_i) <- (a_i a_{i+s}, b_i + a_i b_{i+s}).
RawTensor reverse_affine_scan(RawTensor a, RawTensor b, int64_t dim) {
  const int64_t n = b.shape()[dim];
  for (int64_t s = 1; s < n; s *= 2) {
    const int64_t m = n - s;
    RawTensor na = a.clone(), nb = b.clone();
    const RawTensor a_head = a.narrow(dim, 0, m);
    prim::copy_(nb.narrow(dim, 0, m), prim::add(b.narrow(dim, 0, m), prim::mul(a_head, b.narrow(dim, s, m))));
    prim::copy_(na.narrow(dim, 0, m), prim::mul(a_head, a.narrow(dim, s, m)));
    a = std::move(na);
    b = std::move(nb);
  }
  return b;
}

/// x as the scans see it: integers and bool in int64 (PyTorch's cumsum, cumprod and prod of them are
/// int64), and a 0-d x as one element along dim 0.
RawTensor scan_input(const Tensor& x) {
  RawTensor t = is_floating(x.dtype()) || x.dtype() == kInt64 ? x.data() : x.data().to(kInt64);
  return x.dim() == 0 ? t.reshape({1}) : t;
}

/// The product along dim, kept as size 1: pairwise products of the two halves until one element is
/// left (an odd last element carried over), O(n) work in ceil(log2 n) elementwise kernels. An empty dim
/// gives 1.
RawTensor product_along(const RawTensor& x, int64_t dim) {
  int64_t n = x.shape()[dim];
  if (n == 0) {
    Shape keep = x.shape();
    keep[dim] = 1;
    return prim::full(keep, 1.0, x.dtype(), x.device());
  }
  RawTensor p = x.narrow(dim, 0, n);
  if (n == 1) return p.clone();
  while (n > 1) {
    const int64_t h = n / 2;
    RawTensor m = prim::mul(p.narrow(dim, 0, h), p.narrow(dim, h, h));
    if (n % 2 == 1) m = prim::cat({m, p.narrow(dim, 2 * h, 1)}, dim);
    p = std::move(m);
    n = p.shape()[dim];
  }
  return p;
}

/// prod of xt (a 1-d or wider tensor) along dim, kept as size 1, and its gradient rule.
Tensor prod_impl(const Tensor& x, const RawTensor& xt, int64_t dim, const Shape& out_shape) {
  const RawTensor out = product_along(xt, dim).reshape(out_shape);
  if (!is_floating(xt.dtype())) return Tensor(out);   // integer products have no gradient
  const Shape in_shape = x.shape();
  Shape keep = xt.shape();
  keep[dim] = 1;
  SavedTensor x_saved = any_requires_grad({x}) ? SavedTensor(x) : SavedTensor();
  return record("prod", out, {x}, [x_saved, dim, in_shape, keep, xshape = xt.shape()](const auto& grad, auto& g) {
    // d(prod x)/dx_i = prod_{j != i} x_j = (x_0 ... x_{i-1}) (x_{i+1} ... x_{n-1}): exclusive running
    // products from both ends, with no division, so zeros in x give PyTorch's gradients (the product of
    // the others at a single zero, 0 everywhere for two or more)
    if constexpr (first_order_v<decltype(g)>) {
      const RawTensor xs = x_saved.get().reshape(xshape);
      const RawTensor before = exclusive(scan(xs, dim, BinaryOp::Mul, false), dim, 1.0, false);
      const RawTensor after = exclusive(scan(xs, dim, BinaryOp::Mul, true), dim, 1.0, true);
      g.set(0, prim::mul(prim::mul(grad.reshape(keep), before), after).reshape(in_shape));
    } else {   // the same products as recorded ops: cumprod, flip and cat
      const Tensor xs = g.input(0, x_saved).reshape(xshape);
      const int64_t n = xshape[dim];
      const Tensor ones(prim::full(keep, 1.0, xs.dtype(), xs.device()));
      Tensor others = Tensor(prim::full(xshape, 1.0, xs.dtype(), xs.device()));
      if (n > 1) {
        const Tensor before = cat({ones, cumprod(narrow(xs, dim, 0, n - 1), dim)}, dim);
        const Tensor after = flip(cat({ones, cumprod(narrow(flip(xs, {dim}), dim, 0, n - 1), dim)}, dim), {dim});
        others = before * after;
      }
      g.set(0, (grad.reshape(keep) * others).reshape(in_shape));
    }
  });
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  dim = wrap_dim(dim, x.dim(), "cumsum");
  const RawTensor xt = scan_input(x);
  const int64_t d = x.dim() == 0 ? 0 : dim;
  const RawTensor out = scan(xt, d, BinaryOp::Add, false).reshape(x.shape());
  if (!is_floating(xt.dtype())) return Tensor(out);
  const Shape in_shape = x.shape(), shape = xt.shape();
  return record("cumsum", out, {x}, [d, in_shape, shape](const auto& grad, auto& g) {
    // d/dx_i sum_k dy_k y_k = sum_{k >= i} dy_k: the gradient summed from the end (one reverse scan;
    // under create_graph the same as recorded ops: flip, cumsum, flip)
    if constexpr (first_order_v<decltype(g)>) {
      g.set(0, scan(grad.reshape(shape), d, BinaryOp::Add, true).reshape(in_shape));
    } else {
      g.set(0, flip(cumsum(flip(grad.reshape(shape), {d}), d), {d}).reshape(in_shape));
    }
  });
}

Tensor cumprod(const Tensor& x, int64_t dim) {
  dim = wrap_dim(dim, x.dim(), "cumprod");
  const RawTensor xt = scan_input(x);
  const int64_t d = x.dim() == 0 ? 0 : dim;
  const RawTensor out = scan(xt, d, BinaryOp::Mul, false).reshape(x.shape());
  if (!is_floating(xt.dtype())) return Tensor(out);
  const Shape in_shape = x.shape(), shape = xt.shape();
  SavedTensor x_saved = any_requires_grad({x}) ? SavedTensor(x) : SavedTensor();
  return record("cumprod", out, {x}, [x_saved, d, in_shape, shape](const auto& grad, auto& g) {
    const int64_t n = shape[d];
    if constexpr (first_order_v<decltype(g)>) {
      const RawTensor xs = x_saved.get().reshape(shape);
      // dL/dx_i = sum_{k >= i} dy_k prod_{j <= k, j != i} x_j = P_i S_i, with P_i = x_0 ... x_{i-1} (an
      // exclusive running product) and S_i = dy_i + x_{i+1} S_{i+1} (a reverse affine recurrence). No
      // division: exact at zeros of x, as PyTorch's cumprod_backward.
      const RawTensor before = exclusive(scan(xs, d, BinaryOp::Mul, false), d, 1.0, false);
      RawTensor next_x = prim::full(shape, 0.0, xs.dtype(), xs.device());   // a_i = x_{i+1}, a_{n-1} = 0
      if (n > 1) prim::copy_(next_x.narrow(d, 0, n - 1), xs.narrow(d, 1, n - 1));
      const RawTensor s = reverse_affine_scan(next_x, grad.reshape(shape).contiguous(), d);
      g.set(0, prim::mul(before, s).reshape(in_shape));
    } else {
      // The same sum as recorded ops, O(n^2) memory along dim (a double backward through cumprod is
      // rare, and this form has no division either): row i of Y is x with x_i replaced by 1, so
      // cumprod(Y_i)_k = prod_{j <= k, j != i} x_j, summed against dy_k over k >= i.
      const Tensor xs = g.input(0, x_saved).reshape(shape);
      Shape square(shape.size() + 1, 1);   // (n, 1.., n at d + 1, 1..): row i, position k along dim
      square[0] = n;
      square[static_cast<std::size_t>(d) + 1] = n;
      const RawTensor eye = prim::eye(n, xs.dtype(), xs.device());
      const Tensor unit(eye.reshape(square));
      const Tensor later(triu(Tensor(prim::full({n, n}, 1.0, xs.dtype(), xs.device()))).data().reshape(square));
      const Tensor y = xs.unsqueeze(0) * (1.0 - unit) + unit;
      const Tensor rows = sum(cumprod(y, d + 1) * later * grad.reshape(shape).unsqueeze(0), d + 1);   // (n, rest)
      std::vector<int64_t> order;   // row i back to position d
      for (int64_t k = 1; k <= d; ++k) order.push_back(k);
      order.push_back(0);
      for (int64_t k = d + 1; k < static_cast<int64_t>(shape.size()); ++k) order.push_back(k);
      g.set(0, permute(rows, order).reshape(in_shape));
    }
  });
}

Tensor prod(const Tensor& x) {
  const RawTensor flat = scan_input(x).reshape({x.numel()});
  return prod_impl(x, flat, 0, {});
}

Tensor prod(const Tensor& x, int64_t dim, bool keepdim) {
  dim = wrap_dim(dim, x.dim(), "prod");
  const RawTensor xt = scan_input(x);
  const int64_t d = x.dim() == 0 ? 0 : dim;
  Shape out_shape = x.shape();
  if (x.dim() > 0) {
    if (keepdim) out_shape[d] = 1;
    else out_shape.erase(out_shape.begin() + d);
  }
  return prod_impl(x, xt, d, out_shape);
}

}  // namespace tg
