// ops/slicing.cpp: the differentiable views narrow, select and index (Python's x[0:4, 1]), their
// Tensor methods, and split / split_with_sizes / chunk / unbind (lists of narrow and select views). Each forward is a strided view of the input (RawTensor::narrow, select, as_strided:
// no copy); each backward writes the gradient into the same view of a zero tensor of the input's
// shape. The index types are in core/indexing.h; the other views are in ops/shape.cpp.
#include <algorithm>
#include <limits>
#include <ostream>
#include <vector>

#include "tensorgrad/core/indexing.h"
#include "tensorgrad/ops/advanced_index.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

namespace {

/// dL/dx for a view op: zeros of x's shape with dL/dy written into the positions the view reads
/// (view_of maps a tensor of x's shape to the forward's view of it). Sets every element.
template <class ViewOf>
RawTensor scatter_into_zeros(const Shape& in_shape, const RawTensor& grad, ViewOf view_of) {
  RawTensor gx = prim::full(in_shape, 0.0, grad.dtype(), grad.device());
  prim::copy_(view_of(gx), grad);
  return gx;
}

/// The backward of a view op, as input 0's gradient: grad placed into zeros of in_shape where view_of
/// (callable on a RawTensor and on a Tensor) looks. First order, the engine gets the view itself and
/// may add grad into the input's running gradient instead (Note [View gradients] in
/// autograd/engine.cpp); under create_graph an op whose gradient is the same view of the incoming
/// gradient (rules::linear_backward).
template <class G, class Gr, class ViewOf>
void set_into_zeros(Gr& g, const char* name, const Shape& in_shape, const G& grad, ViewOf view_of) {
  if constexpr (first_order_v<Gr>) {
    g.set_view(0, grad, in_shape, [view_of](const RawTensor& t) { return view_of(t); });
  } else {
    g.set(0, rules::linear_backward(name, grad, [&](const RawTensor& gr) { return scatter_into_zeros(in_shape, gr, view_of); },
                                    view_of));
  }
}

/// One resolved entry of an index list against the input's shape: a new size-1 dim, an integer
/// position (the dim is removed), or start / length / step along an input dim.
struct Resolved {
  TensorIndex::Kind kind;
  int64_t start = 0, length = 0, step = 1;
};

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  // a stride of a zero-size tensor may be saturated already (contiguous_strides): no element is addressed
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}

/// Checks `indices` against `shape` and resolves them (Python's rules: negative positions count from
/// the end, slice bounds clamp, at most one Ellipsis, at most one index per dim).
std::vector<Resolved> resolve(const Shape& shape, const std::vector<TensorIndex>& indices) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    if (i.kind() == TensorIndex::Kind::Integer || i.kind() == TensorIndex::Kind::Slice) ++consumed;
    if (i.kind() == TensorIndex::Kind::Ellipsis) ++ellipses;
  }
  TG_CHECK(ellipses <= 1, IndexError, "index: an index can only have a single ellipsis ('...')");
  TG_CHECK(consumed <= rank, IndexError, "index: too many indices for tensor of dimension ", rank, " (got ",
           consumed, ")");
  std::vector<Resolved> out;
  int64_t d = 0;
  auto full = [&out, &shape, &d] {
    out.push_back({TensorIndex::Kind::Slice, 0, shape[d], 1});
    ++d;
  };
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::None:
        out.push_back({TensorIndex::Kind::None});
        break;
      case TensorIndex::Kind::Tensor:   // tg::index hands index Tensors to detail::advanced_index
        throw Error("index: an index Tensor reached the view path");
      case TensorIndex::Kind::Ellipsis:
        for (int64_t k = 0; k < rank - consumed; ++k) full();
        break;
      case TensorIndex::Kind::Integer: {
        const int64_t size = shape[d], at = i.integer();
        TG_CHECK(at >= -size && at < size, IndexError, "index: index ", at, " is out of bounds for dimension ", d,
                 " with size ", size);
        out.push_back({TensorIndex::Kind::Integer, at < 0 ? at + size : at});
        ++d;
        break;
      }
      case TensorIndex::Kind::Slice: {
        const int64_t size = shape[d];
        const Slice& s = i.slice();
        const int64_t step = s.step().value_or(1);
        TG_CHECK(step > 0, IndexError, "index: slice step must be positive, got ", step, " for dimension ", d,
                 " with size ", size);
        auto clamp = [size](int64_t v) {   // Python: negative counts from the end, then clamp to [0, size]
          if (v < 0) v += size;
          return v < 0 ? int64_t(0) : (v > size ? size : v);
        };
        const int64_t start = clamp(s.start().value_or(0)), stop = clamp(s.stop().value_or(size));
        const int64_t length = stop > start ? (stop - start - 1) / step + 1 : 0;
        out.push_back({TensorIndex::Kind::Slice, start, length, step});
        ++d;
        break;
      }
    }
  }
  while (d < rank) full();   // the dims after the last index are kept whole
  return out;
}

/// The view of t (of the shape resolve() saw) that the resolved index list selects.
RawTensor indexing_view(const RawTensor& t, const std::vector<Resolved>& index) {
  Shape shape, strides;
  int64_t offset = t.offset(), d = 0;
  for (const Resolved& r : index) {
    if (r.kind == TensorIndex::Kind::None) {
      shape.push_back(1);
      strides.push_back(1);   // a size-1 dim never steps
      continue;
    }
    const int64_t stride = t.strides()[d++];
    if (t.numel() != 0) offset += r.start * stride;   // an empty view addresses nothing (and starts may be 0 anyway)
    if (r.kind == TensorIndex::Kind::Slice) {
      shape.push_back(r.length);
      strides.push_back(saturating_mul(stride, r.step));
    }
  }
  return t.as_strided(shape, strides, offset);
}

}  // namespace

Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  TG_CHECK(x.dim() > 0, IndexError, "narrow: cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, x.dim(), "narrow");
  const int64_t size = x.shape()[dim];
  TG_CHECK(start >= -size && start <= size, IndexError, "narrow: start (", start, ") is out of range for dimension ",
           dim, " with size ", size, " (expected to be in range of [", -size, ", ", size, "])");
  if (start < 0) start += size;
  TG_CHECK(length >= 0, IndexError, "narrow: length (", length, ") must be non-negative");
  TG_CHECK(length <= size - start, IndexError, "narrow: start (", start, ") + length (", length,
           ") exceeds the size (", size, ") of dimension ", dim);
  const Shape in_shape = x.shape();
  return mark_view(record("narrow", x.data().narrow(dim, start, length), {x},
                          [in_shape, dim, start, length](const auto& grad, auto& g) {
                            // d/dx: the gradient in the narrowed positions, 0 elsewhere
                            set_into_zeros(g, "narrow_backward", in_shape, grad,
                                           [=](const auto& t) { return t.narrow(dim, start, length); });
                          }),
                   x);
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  TG_CHECK(x.dim() > 0, IndexError, "select: cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, x.dim(), "select");
  RawTensor out = x.data().select(dim, index);   // IndexError naming the index, the dim and its size
  if (index < 0) index += x.shape()[dim];
  const Shape in_shape = x.shape();
  return mark_view(record("select", std::move(out), {x},
                          [in_shape, dim, index](const auto& grad, auto& g) {
                            // d/dx: the gradient in the selected slice, 0 elsewhere
                            set_into_zeros(g, "select_backward", in_shape, grad,
                                           [=](const auto& t) { return t.select(dim, index); });
                          }),
                   x);
}

Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices) {
  if (detail::has_tensor_index(indices)) return detail::advanced_index(x, indices);   // a copy, not a view
  std::vector<Resolved> resolved = resolve(x.shape(), indices);
  RawTensor out = indexing_view(x.data(), resolved);
  const Shape in_shape = x.shape();
  // the view again, of a RawTensor (the first-order scatter) or of a Tensor (its differentiable form)
  struct View {
    std::vector<Resolved> resolved;
    std::vector<TensorIndex> indices;
    RawTensor operator()(const RawTensor& t) const { return indexing_view(t, resolved); }
    Tensor operator()(const Tensor& t) const { return tg::index(t, indices); }
  };
  return mark_view(record("index", std::move(out), {x},
                          [in_shape, view = View{std::move(resolved), indices}](const auto& grad, auto& g) {
                            // d/dx: the gradient at the indexed positions, 0 elsewhere
                            set_into_zeros(g, "index_backward", in_shape, grad, view);
                          }),
                   x);
}

// split, split_with_sizes, chunk and unbind are compositions of narrow and select: each piece is a view
// with its own node, so a piece's gradient reaches x through its own narrow, added into x's running
// gradient in place where the engine can (Note [View gradients] in autograd/engine.cpp). Pieces that
// get no gradient cost nothing in backward.

std::vector<Tensor> split_with_sizes(const Tensor& x, IntArrayRef split_sizes, int64_t dim) {
  TG_CHECK(x.dim() > 0, IndexError, "split_with_sizes: cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, x.dim(), "split_with_sizes");
  const int64_t size = x.shape()[dim];
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    TG_CHECK(s >= 0, Error, "split_with_sizes: expects split_sizes have only non-negative entries, but got split_sizes=",
             shape_str(split_sizes), " for input of shape ", shape_str(x.shape()));
    TG_CHECK(!__builtin_add_overflow(total, s, &total), ShapeError, "split_with_sizes: split_sizes=",
             shape_str(split_sizes), " overflow int64");
  }
  TG_CHECK(total == size, ShapeError, "split_with_sizes: expects split_sizes to sum exactly to ", size,
           " (input tensor's size at dimension ", dim, "), but got split_sizes=", shape_str(split_sizes),
           " for input of shape ", shape_str(x.shape()));
  std::vector<Tensor> out;
  out.reserve(split_sizes.size());
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    out.push_back(narrow(x, dim, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  TG_CHECK(x.dim() > 0, IndexError, "split: cannot be applied to a 0-dim tensor");
  dim = wrap_dim(dim, x.dim(), "split");
  const int64_t size = x.shape()[dim];
  TG_CHECK(split_size >= 0, Error, "split: expects split_size be non-negative, but got split_size=", split_size);
  TG_CHECK(split_size > 0 || size == 0, Error, "split: split_size can only be 0 if dimension size is 0, but got ",
           "dimension size of ", size, " (input of shape ", shape_str(x.shape()), ", dim ", dim, ")");
  // PyTorch's rule: ceil(size / split_size) pieces, the last one smaller; one empty piece for size 0
  const int64_t pieces = split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  Shape sizes(static_cast<std::size_t>(pieces), split_size);
  sizes.back() = size - split_size * (pieces - 1);
  return split_with_sizes(x, sizes, dim);
}

std::vector<Tensor> split(const Tensor& x, IntArrayRef split_sizes, int64_t dim) {
  return split_with_sizes(x, split_sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  TG_CHECK(x.dim() > 0, IndexError, "chunk: cannot be applied to a 0-dim tensor");
  TG_CHECK(chunks > 0, Error, "chunk: expects `chunks` to be greater than 0, got: ", chunks);
  dim = wrap_dim(dim, x.dim(), "chunk");
  const int64_t size = x.shape()[dim];
  // PyTorch's rule: pieces of ceil(size / chunks), so fewer than chunks pieces when they do not divide
  // evenly (size 5 in 4 chunks: 2, 2, 1); a size-0 dim gives chunks empty pieces
  if (size == 0) return split_with_sizes(x, Shape(static_cast<std::size_t>(chunks), 0), dim);
  return split(x, (size + chunks - 1) / chunks, dim);
}

std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  TG_CHECK(x.dim() > 0, IndexError, "unbind: dimension specified as ", dim, " but tensor has no dimensions");
  dim = wrap_dim(dim, x.dim(), "unbind");
  std::vector<Tensor> out;
  out.reserve(static_cast<std::size_t>(x.shape()[dim]));
  for (int64_t i = 0; i < x.shape()[dim]; ++i) out.push_back(select(x, dim, i));
  return out;
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const { return tg::narrow(*this, dim, start, length); }
Tensor Tensor::select(int64_t dim, int64_t index) const { return tg::select(*this, dim, index); }
Tensor Tensor::index(const std::vector<TensorIndex>& indices) const { return tg::index(*this, indices); }

namespace indexing {
TensorIndex::TensorIndex(const Tensor& t) : kind_(Kind::Tensor), tensor_(t.impl()) {
  TG_CHECK(t.defined(), Error, "TensorIndex: an index Tensor must be defined");
}

Tensor TensorIndex::tensor() const { return Tensor(tensor_); }

std::ostream& operator<<(std::ostream& os, const TensorIndex& index) {
  switch (index.kind()) {
    case TensorIndex::Kind::Tensor: {
      const Tensor t = index.tensor();
      return os << "Tensor(" << dtype_name(t.dtype()) << ", " << shape_str(t.shape()) << ')';
    }
    case TensorIndex::Kind::Integer: return os << index.integer();
    case TensorIndex::Kind::None: return os << "None";
    case TensorIndex::Kind::Ellipsis: return os << "...";
    case TensorIndex::Kind::Slice: {
      const Slice& s = index.slice();
      if (s.start()) os << *s.start();
      os << ':';
      if (s.stop()) os << *s.stop();
      if (s.step()) os << ':' << *s.step();
      return os;
    }
  }
  return os;
}
}  // namespace indexing

}  // namespace tg
