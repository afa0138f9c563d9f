// ops/advanced_index.cpp: indexing by Tensors (PyTorch's advanced indexing): x.index({mask}),
// x.index({Slice(), i0, 0, i1}), index_put / index_put_ (x[indices] = values), and one_hot. As PyTorch
// does, the basic entries of an index list (integers, slices, None, Ellipsis) are applied first, as a
// view (tg::index); the dims the index Tensors cover are then moved to the front of that view, where
// the index Tensors are read on the host and turned into one list of flat positions over those leading
// dims. The ops are compositions of differentiable ops over the view as (positions, trailing
// elements): index_select reads, where (without accumulate) and index_add (with it) write; a write
// of any other form than the leading one goes to x flattened, at the positions the read names. So
// they run on every backend and are differentiable twice without a rule of their own.
#include <algorithm>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "tensorgrad/ops/advanced_index.h"
#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

namespace {

/// The indices of an advanced index list, resolved against x's shape.
struct Advanced {
  int64_t dims = 0;            ///< how many leading dims of x the index Tensors cover
  int64_t positions = 1;       ///< the product of those dims' sizes (P)
  Shape batch;                 ///< the broadcast shape of the index Tensors (B)
  Shape trailing;              ///< x's dims after the indexed ones
  std::vector<int64_t> flat;   ///< per element of B (row-major): its flat position in [0, P)
};

std::string index_list_str(const std::vector<TensorIndex>& indices) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < indices.size(); ++i) os << (i ? ", " : "") << indices[i];
  os << ']';
  return os.str();
}

/// One index Tensor turned into positions along consecutive dims: a bool mask over m dims gives m
/// 1-D lists (its nonzero() coordinates), an integer tensor one list of its own shape.
struct Positions {
  Shape shape;
  std::vector<std::vector<int64_t>> per_dim;
};

/// Resolves the index Tensors `tensors`, which name the leading dims of a tensor of `shape`. Leading
/// dim k is dim x_dims[k] of the tensor the caller indexed (a position out of range names it) and dim
/// view_dims[k] of the view of shape view_shape that the basic entries made of it, before its indexed
/// dims were moved to the front (a mask of the wrong shape names those, as PyTorch's message does).
Advanced resolve_advanced(const char* op, const Shape& shape, const std::vector<Tensor>& tensors,
                          const std::vector<int64_t>& x_dims, const std::vector<int64_t>& view_dims,
                          const Shape& view_shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  Advanced a;
  std::vector<Positions> lists;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (t.dtype() == kBool) {
      TG_CHECK(t.dim() > 0, IndexError, op, ": a 0-d bool index is not supported (index ", i, ")");
      TG_CHECK(a.dims + t.dim() <= rank, IndexError, op, ": too many indices for tensor of dimension ", rank,
               " (the mask of shape ", shape_str(t.shape()), " at index ", i, ")");
      for (int64_t d = 0; d < t.dim(); ++d)
        TG_CHECK(t.size(d) == shape[static_cast<std::size_t>(a.dims + d)], IndexError, op, ": The shape of the mask ",
                 shape_str(t.shape()), " at index ", d, " does not match the shape of the indexed tensor ",
                 shape_str(view_shape), " at index ", view_dims[static_cast<std::size_t>(a.dims + d)]);
      const std::vector<int64_t> m = t.to_vector<int64_t>();   // row-major over the mask's dims
      Positions p;
      p.per_dim.assign(static_cast<std::size_t>(t.dim()), {});
      for (int64_t e = 0; e < static_cast<int64_t>(m.size()); ++e) {
        if (m[static_cast<std::size_t>(e)] == 0) continue;
        int64_t rest = e;
        for (int64_t d = t.dim(); d-- > 0;) {
          p.per_dim[static_cast<std::size_t>(d)].push_back(rest % t.size(d));
          rest /= t.size(d);
        }
      }
      p.shape = {static_cast<int64_t>(p.per_dim[0].size())};
      a.dims += t.dim();
      lists.push_back(std::move(p));
    } else {
      TG_CHECK(t.dtype() == kInt64 || t.dtype() == kInt32, IndexError, op,
               ": tensors used as indices must be long, int or bool tensors, got ", dtype_name(t.dtype()),
               " (index ", i, ")");
      TG_CHECK(a.dims < rank, IndexError, op, ": too many indices for tensor of dimension ", rank, " (index ", i,
               " of shape ", shape_str(t.shape()), ")");
      Positions p;
      p.shape = t.shape();
      p.per_dim.push_back(t.to_vector<int64_t>());
      const int64_t size = shape[static_cast<std::size_t>(a.dims)];
      for (int64_t& v : p.per_dim[0]) {
        TG_CHECK(v >= -size && v < size, IndexError, op, ": index ", v, " is out of bounds for dimension ",
                 x_dims[static_cast<std::size_t>(a.dims)], " with size ", size);
        if (v < 0) v += size;
      }
      a.dims += 1;
      lists.push_back(std::move(p));
    }
  }

  // broadcast the index shapes together (NumPy rules)
  for (const Positions& p : lists) {
    Shape out = a.batch;
    const std::size_t n = std::max(out.size(), p.shape.size());
    Shape b(n, 1);
    bool ok = true;
    for (std::size_t k = 0; k < n; ++k) {
      const int64_t x = k + out.size() >= n ? out[k + out.size() - n] : 1;
      const int64_t y = k + p.shape.size() >= n ? p.shape[k + p.shape.size() - n] : 1;
      ok = ok && (x == y || x == 1 || y == 1);
      b[k] = x == 1 ? y : x;
    }
    if (!ok) {
      std::ostringstream shapes;
      for (std::size_t k = 0; k < lists.size(); ++k) shapes << (k ? ", " : "") << shape_str(lists[k].shape);
      throw IndexError(std::string(op) + ": shape mismatch: indexing tensors could not be broadcast together "
                       "with shapes " + shapes.str());
    }
    a.batch = b;
  }
  a.trailing.assign(shape.begin() + a.dims, shape.end());
  Shape sizes(shape.begin(), shape.begin() + a.dims);
  for (int64_t s : sizes) a.positions *= s;

  // flat positions: per element of B, the row-major position over the indexed dims
  int64_t n = 1;
  for (int64_t s : a.batch) n *= s;
  a.flat.assign(static_cast<std::size_t>(n), 0);
  const std::size_t nb = a.batch.size();
  int64_t dim = 0;
  for (const Positions& p : lists) {
    // the strides that read p's lists at a coordinate of B (0 along broadcast dims)
    Shape strides(nb, 0);
    int64_t st = 1;
    for (std::size_t k = p.shape.size(); k-- > 0;) {
      const std::size_t bk = k + nb - p.shape.size();
      strides[bk] = p.shape[k] == 1 ? 0 : st;
      st *= p.shape[k];
    }
    for (const std::vector<int64_t>& list : p.per_dim) {
      int64_t inner = 1;   // the stride of this dim in the flat position
      for (int64_t d = dim + 1; d < a.dims; ++d) inner *= shape[static_cast<std::size_t>(d)];
      for (int64_t e = 0; e < n; ++e) {
        int64_t rest = e, at = 0;
        for (std::size_t k = nb; k-- > 0;) {
          at += (rest % a.batch[k]) * strides[k];
          rest /= a.batch[k];
        }
        a.flat[static_cast<std::size_t>(e)] += list[static_cast<std::size_t>(at)] * inner;
      }
      ++dim;
    }
  }
  return a;
}

Shape concat(const Shape& a, const Shape& b) {
  Shape s = a;
  s.insert(s.end(), b.begin(), b.end());
  return s;
}

int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/// An int64 tensor of v on device.
Tensor positions_on(const std::vector<int64_t>& v, Device device) {
  return tg::from_vector(v, {static_cast<int64_t>(v.size())}, TensorOptions().dtype(kInt64).device(device));
}

/// The sum of each run of equal positions, pairwise in index order: rows (N, T) and their positions
/// -> (U, T) sums and the U distinct positions. A fixed order of additions (no atomics), so every
/// backend and every run agree; each round is index_select and add, so it stays differentiable.
std::pair<Tensor, std::vector<int64_t>> sum_repeats(const Tensor& rows, const std::vector<int64_t>& flat) {
  const int64_t n = static_cast<int64_t>(flat.size());
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  std::stable_sort(order.begin(), order.end(), [&flat](int64_t a, int64_t b) {
    return flat[static_cast<std::size_t>(a)] < flat[static_cast<std::size_t>(b)];
  });
  std::vector<int64_t> unique, counts;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t p = flat[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])];
    if (unique.empty() || unique.back() != p) {
      unique.push_back(p);
      counts.push_back(0);
    }
    ++counts.back();
  }
  if (static_cast<int64_t>(unique.size()) == n) return {rows, flat};   // no repeats: the rows themselves
  const Device dev = rows.device();
  Tensor cur = index_select(rows, 0, positions_on(order, dev));   // grouped by position, index order within
  while (*std::max_element(counts.begin(), counts.end()) > 1) {
    const int64_t zero_row = cur.size(0);
    std::vector<int64_t> left, right;
    int64_t start = 0;
    for (int64_t& c : counts) {
      for (int64_t j = 0; 2 * j < c; ++j) {
        left.push_back(start + 2 * j);
        right.push_back(2 * j + 1 < c ? start + 2 * j + 1 : zero_row);
      }
      start += c;
      c = (c + 1) / 2;
    }
    const Tensor ext = cat({cur, zeros({1, cur.size(1)}, TensorOptions().dtype(cur.dtype()).device(dev))}, 0);
    cur = index_select(ext, 0, positions_on(left, dev)) + index_select(ext, 0, positions_on(right, dev));
  }
  return {cur, unique};
}

/// An index list as PyTorch applies it: the basic entries (integers, slices, None, Ellipsis) as a view
/// of x, then the index Tensors over that view's dims. The index Tensors' dims are moved to the front
/// of the view, so the leading form (resolve_advanced) gathers and scatters every form.
struct Plan {
  std::vector<TensorIndex> basic;   ///< the list with each index Tensor replaced by full slices (k for a k-dim mask)
  std::vector<Tensor> tensors;      ///< the index Tensors, in order
  std::vector<int64_t> adv;         ///< the view's dims the index Tensors cover, ascending
  std::vector<int64_t> x_dims;      ///< per entry of adv, the dim of x it is (for messages)
  int64_t view_rank = 0;            ///< the rank of the basic entries' view
  bool leading = false;             ///< the view is x itself and adv its leading dims: no view, no permute
  int64_t insert_at = 0;            ///< where the broadcast dims stand in the result
};

Plan plan_index(const char* op, const Shape& shape, const std::vector<TensorIndex>& indices) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t consumed = 0, ellipses = 0;   // the dims of x the entries name, the Ellipses
  for (std::size_t i = 0; i < indices.size(); ++i) {
    const TensorIndex& e = indices[i];
    if (e.kind() == TensorIndex::Kind::Integer || e.kind() == TensorIndex::Kind::Slice) ++consumed;
    if (e.kind() == TensorIndex::Kind::Ellipsis) ++ellipses;
    if (e.kind() == TensorIndex::Kind::Tensor) {
      const Tensor t = e.tensor();
      TG_CHECK(t.dtype() != kBool || t.dim() > 0, IndexError, op, ": a 0-d bool index is not supported (entry ", i,
               " of ", index_list_str(indices), ")");
      consumed += t.dtype() == kBool ? t.dim() : 1;   // a mask covers as many dims as it has
    }
  }
  TG_CHECK(ellipses <= 1, IndexError, op, ": an index can only have a single ellipsis ('...'), got ",
           index_list_str(indices));
  TG_CHECK(consumed <= rank, IndexError, op, ": too many indices for tensor of dimension ", rank, " (got ",
           index_list_str(indices), " for a tensor of shape ", shape_str(shape), ")");
  Plan p;
  bool whole = true;    // every basic entry keeps its dims whole (full slices, Ellipsis)
  int64_t vd = 0, xd = 0;   // the next dim of the view, of x
  for (const TensorIndex& e : indices) {
    switch (e.kind()) {
      case TensorIndex::Kind::None:
        p.basic.push_back(e);
        ++vd;
        whole = false;
        break;
      case TensorIndex::Kind::Ellipsis:
        p.basic.push_back(e);
        vd += rank - consumed;
        xd += rank - consumed;
        break;
      case TensorIndex::Kind::Integer: {   // checked here so that the message names op
        const int64_t size = shape[static_cast<std::size_t>(xd)], at = e.integer();
        TG_CHECK(at >= -size && at < size, IndexError, op, ": index ", at, " is out of bounds for dimension ", xd,
                 " with size ", size);
        p.basic.push_back(e);
        ++xd;
        whole = false;
        break;
      }
      case TensorIndex::Kind::Slice: {
        const Slice& s = e.slice();
        TG_CHECK(s.step().value_or(1) > 0, IndexError, op, ": slice step must be positive, got ", *s.step(),
                 " for dimension ", xd, " with size ", shape[static_cast<std::size_t>(xd)]);
        p.basic.push_back(e);
        whole = whole && !s.start() && !s.stop() && !s.step();
        ++vd;
        ++xd;
        break;
      }
      case TensorIndex::Kind::Tensor: {
        const Tensor t = e.tensor();
        for (int64_t k = 0; k < (t.dtype() == kBool ? t.dim() : 1); ++k) {
          p.basic.push_back(Slice());
          p.adv.push_back(vd++);
          p.x_dims.push_back(xd++);
        }
        p.tensors.push_back(t);
        break;
      }
    }
  }
  p.view_rank = vd + rank - xd;
  // adjacent index Tensors keep their place (the broadcast dims replace theirs); separated by a slice,
  // None or Ellipsis dim, the broadcast dims go first (PyTorch's and NumPy's rule)
  const bool adjacent = p.adv.back() - p.adv.front() + 1 == static_cast<int64_t>(p.adv.size());
  p.insert_at = adjacent ? p.adv.front() : 0;
  p.leading = whole && adjacent && p.adv.front() == 0;
  return p;
}

/// x[indices] for a plan (the tensor of the plan's shape): the basic entries' view, the indexed dims
/// moved to its front, the leading gather (index_select over them flattened), and the broadcast dims
/// moved to insert_at. Differentiable through each step.
Tensor read_planned(const char* op, const Tensor& x, const Plan& p) {
  Tensor v = x;
  Shape view_shape = x.shape();
  if (!p.leading) {
    std::vector<int64_t> perm = p.adv;
    for (int64_t d = 0; d < p.view_rank; ++d)
      if (!std::binary_search(p.adv.begin(), p.adv.end(), d)) perm.push_back(d);
    v = index(x, p.basic);   // a view, as basic holds no index Tensor
    view_shape = v.shape();
    v = permute(v, perm);
  }
  const Advanced a = resolve_advanced(op, v.shape(), p.tensors, p.x_dims, p.adv, view_shape);
  const Tensor flat = reshape(v, {a.positions, product(a.trailing)});
  const Tensor rows = index_select(flat, 0, positions_on(a.flat, x.device()));   // (N, T)
  Tensor out = reshape(rows, concat(a.batch, a.trailing));
  if (p.insert_at == 0) return out;
  const int64_t nb = static_cast<int64_t>(a.batch.size());
  std::vector<int64_t> back;   // (batch, rest) -> (rest[:insert_at], batch, rest[insert_at:])
  for (int64_t d = 0; d < p.insert_at; ++d) back.push_back(nb + d);
  for (int64_t d = 0; d < nb; ++d) back.push_back(d);
  for (int64_t d = nb + p.insert_at; d < out.dim(); ++d) back.push_back(d);
  return contiguous(permute(out, back));   // a tensor of its own, not a view of the gathered rows
}

/// x with values written at the positions a names over x's leading dims (the leading form of
/// tg::index_put; every other form reaches it through x flattened).
Tensor put_leading(const char* op, const Tensor& x, const Advanced& a, const Tensor& values, bool accumulate) {
  const Shape target = concat(a.batch, a.trailing);
  // values broadcast to the indexed shape; leading size-1 dims beyond its rank are dropped, as PyTorch's
  Shape vshape = values.shape();
  while (vshape.size() > target.size() && vshape.front() == 1) vshape.erase(vshape.begin());
  bool fits = vshape.size() <= target.size();
  for (std::size_t k = 0; fits && k < vshape.size(); ++k) {
    const int64_t want = target[k + target.size() - vshape.size()];
    fits = vshape[k] == want || vshape[k] == 1;
  }
  TG_CHECK(fits, ShapeError, op, ": shape mismatch: value tensor of shape ", shape_str(values.shape()),
           " cannot be broadcast to indexing result of shape ", shape_str(target));
  const int64_t n = static_cast<int64_t>(a.flat.size()), cols = product(a.trailing);
  const Tensor rows = reshape(expand(reshape(values, vshape), target), {n, cols});   // (N, T)
  const Tensor flat = reshape(x, {a.positions, cols});                                // (P, T)
  const Device dev = x.device();
  if (n == 0) {   // nothing written; an empty index_add keeps values in the graph (a zero gradient, as PyTorch's)
    if (!is_floating(x.dtype())) return clone(x);
    return reshape(index_add(flat, 0, positions_on({}, dev), rows), x.shape());
  }

  if (accumulate) {
    if (!is_floating(x.dtype())) {   // integer and bool: exact in any order, and nothing to differentiate
      RawTensor out = flat.data().contiguous().clone();
      prim::index_add_(out, 0, positions_on(a.flat, dev).data(), rows.data().contiguous());
      return Tensor(out.view(x.shape()));
    }
    const auto summed = sum_repeats(rows, a.flat);
    return reshape(index_add(flat, 0, positions_on(summed.second, dev), summed.first), x.shape());
  }

  // Without accumulate: each written position reads the row of its last occurrence. source[p] is
  // that row + 1 for a written p, 0 for one left alone (built on the device from the distinct
  // positions: no host array of P entries).
  std::vector<int64_t> last_of;   // per distinct position, its last occurrence
  std::vector<int64_t> distinct;
  {
    std::vector<int64_t> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&a](int64_t l, int64_t r) {
      return a.flat[static_cast<std::size_t>(l)] < a.flat[static_cast<std::size_t>(r)];
    });
    for (int64_t k : order) {
      const int64_t p = a.flat[static_cast<std::size_t>(k)];
      if (!distinct.empty() && distinct.back() == p) last_of.back() = k + 1;   // later in index order
      else {
        distinct.push_back(p);
        last_of.push_back(k + 1);
      }
    }
  }
  RawTensor source = prim::full({a.positions}, 0.0, kInt64, dev);
  prim::index_add_(source, 0, positions_on(distinct, dev).data(), positions_on(last_of, dev).data());
  const RawTensor written = prim::binary(BinaryOp::Ne, source, prim::scalar_like(0.0, source), op);
  const RawTensor row_of = prim::where(written, prim::sub(source, prim::scalar_like(1.0, source)), source);
  const Tensor picked = index_select(rows, 0, Tensor(row_of));                        // (P, T)
  return reshape(where(Tensor(written.reshape({a.positions, 1})), picked, flat), x.shape());
}

}  // namespace

namespace detail {

bool has_tensor_index(const std::vector<TensorIndex>& indices) {
  for (const TensorIndex& i : indices)
    if (i.kind() == TensorIndex::Kind::Tensor) return true;
  return false;
}

Tensor advanced_index(const Tensor& x, const std::vector<TensorIndex>& indices) {
  TG_CHECK(x.defined(), Error, "index: the Tensor is undefined");
  return read_planned("index", x, plan_index("index", x.shape(), indices));
}

Tensor index_put(const char* op, const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                 bool accumulate) {
  TG_CHECK(x.defined() && values.defined(), Error, op, ": self and values must be defined");
  TG_CHECK(x.dtype() == values.dtype(), DTypeError, op, ": Index put requires the source and destination dtypes "
           "match, got ", dtype_name(x.dtype()), " for the destination and ", dtype_name(values.dtype()),
           " for the source");
  prim::check_same_device(op, x.data(), values.data());
  const Plan p = plan_index(op, x.shape(), indices);
  if (p.leading)
    return put_leading(op, x, resolve_advanced(op, x.shape(), p.tensors, p.x_dims, p.adv, x.shape()), values,
                       accumulate);
  // Any other form writes the elements of x that read_planned() reads: their flat positions, read from
  // an arange of x's shape (on the host, where the positions are read anyway), index x flattened.
  const int64_t numel = product(x.shape());
  const Tensor read_at = read_planned(op, reshape(arange(numel, TensorOptions().dtype(kInt64)), x.shape()), p);
  Advanced a;
  a.dims = 1;
  a.positions = numel;
  a.batch = read_at.shape();
  a.flat = read_at.to_vector<int64_t>();
  return reshape(put_leading(op, reshape(x, {numel}), a, values, accumulate), x.shape());
}

}  // namespace detail

Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  return detail::index_put("index_put", x, indices, values, accumulate);
}

Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, double value, bool accumulate) {
  TG_CHECK(x.defined(), Error, "index_put: self must be defined");
  return index_put(x, indices, Tensor(prim::full({}, value, x.dtype(), x.device())), accumulate);
}

Tensor Tensor::index_put(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) const {
  return tg::index_put(*this, indices, values, accumulate);
}
Tensor Tensor::index_put(const std::vector<TensorIndex>& indices, double value, bool accumulate) const {
  return tg::index_put(*this, indices, value, accumulate);
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  TG_CHECK(x.defined(), Error, "one_hot: the input is undefined");
  TG_CHECK(x.dtype() == kInt64, DTypeError, "one_hot is only applicable to index tensor of type LongTensor (int64), "
           "got ", dtype_name(x.dtype()));
  TG_CHECK(num_classes >= -1, IndexError, "one_hot: num_classes should be -1 or non-negative, got ", num_classes);
  const std::vector<int64_t> v = x.to_vector<int64_t>();
  if (v.empty()) {
    TG_CHECK(num_classes != -1, Error, "one_hot: Can not infer total number of classes from empty tensor (shape ",
             shape_str(x.shape()), "); pass num_classes");
  } else {
    const auto mm = std::minmax_element(v.begin(), v.end());
    TG_CHECK(*mm.first >= 0, IndexError, "one_hot: Class values must be non-negative, got ", *mm.first);
    if (num_classes == -1) num_classes = *mm.second + 1;
    TG_CHECK(*mm.second < num_classes, IndexError, "one_hot: Class values must be smaller than num_classes (",
             num_classes, "), got ", *mm.second);
  }
  const RawTensor classes = prim::arange(num_classes, kInt64, x.device());
  const RawTensor hit = prim::binary(BinaryOp::Eq, x.data().unsqueeze(x.dim()), classes, "one_hot");
  return Tensor(hit.to(kInt64));
}

}  // namespace tg
