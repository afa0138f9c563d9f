// ops/einsum.cpp: einsum (torch.einsum): the equation parsed and checked with PyTorch's messages, then
// composed of differentiable ops (index_select for diagonals, sum_to_size for sums, permute and reshape,
// mul or one batched matmul per pair of operands). No backward of its own and no kernel: gradients of any
// order and the CUDA path come from those ops. The matrix products themselves are in ops/linalg.cpp.
//
// Note [einsum on aligned operands]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every dim of the equation gets one global position: first the ellipsis dims (as many as the operand
// with the most, right-aligned as in broadcasting), then the letters in ASCII order. Each operand, once a
// repeated letter is reduced to its diagonal, is permuted into that order and reshaped to one dim per
// global position, size 1 where it lacks the letter (a view). Aligned operands broadcast against each
// other like any two tensors, so a dim of size 1 behaves as an absent letter, and a sum over a letter is
// sum_to_size with a 1 at its position (keeping the rank). Operands are combined left to right; before
// combining the next one, a letter that no later operand has and the output lacks is summed: in both
// operands by the product when both have it (the K dims of one batched matmul), in the one operand
// alone otherwise. Dims both have and keep are the batch of the matmul, dims one alone has its rows (M)
// or columns (N). A pair with nothing to contract is a broadcast mul. The result is summed over the
// remaining letters the output lacks and permuted into the output's order.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"

namespace tg {

namespace {

constexpr int kLetters = 52;        // A-Z then a-z: ASCII order, the order of an implicit output
constexpr int kEllipsisMark = -1;   // in a parsed term, where the ellipsis stands

/// The letter's index in [0, 52), or -1 for anything else.
int letter_index(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}
char letter_of(int i) { return static_cast<char>(i < 26 ? 'A' + i : 'a' + (i - 26)); }

/// One side of the equation for one operand (or the output): letters and at most one ellipsis.
struct Term {
  std::vector<int> labels;   // letter indices in order; kEllipsisMark where the ellipsis stands
  bool ellipsis = false;
  int letters() const { return static_cast<int>(labels.size()) - (ellipsis ? 1 : 0); }
};

/// Parses the equation into the operands' terms and the output (explicit when it has "->"), checking
/// it against the number of operands. PyTorch's messages; `index` counts from the equation's start.
void parse(const std::string& eq, std::size_t num_ops, std::vector<Term>& terms, Term& output, bool& explicit_output) {
  TG_CHECK(num_ops > 0, Error, "einsum(): must provide at least one operand");
  const std::size_t arrow = eq.find("->");
  explicit_output = arrow != std::string::npos;
  const std::size_t lhs_end = explicit_output ? arrow : eq.size();
  terms.assign(1, Term());
  // Reads the term character at i (a letter, a space or the start of an ellipsis) into t; false for others.
  auto read = [&eq](std::size_t& i, std::size_t end, Term& t, const std::string& who) {
    const char c = eq[i];
    if (c == ' ') return true;
    if (c == '.') {
      TG_CHECK(!t.ellipsis, Error, "einsum(): found '.' for ", who,
               who == "output" ? " but an ellipsis (...) was already found" : " for which an ellipsis was already found");
      TG_CHECK(i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.', Error, "einsum(): found '.' for ", who,
               " that is not part of any ellipsis", who == "output" ? " (...)" : "");
      t.ellipsis = true;
      t.labels.push_back(kEllipsisMark);
      i += 2;
      return true;
    }
    const int l = letter_index(c);
    if (l < 0) return false;
    t.labels.push_back(l);
    return true;
  };
  for (std::size_t i = 0; i < lhs_end; ++i) {
    if (eq[i] == ',') {
      TG_CHECK(terms.size() < num_ops, Error, "einsum(): fewer operands were provided than specified in the equation");
      terms.emplace_back();
      continue;
    }
    TG_CHECK(read(i, lhs_end, terms.back(), "operand " + std::to_string(terms.size() - 1)), Error,
             "einsum(): invalid subscript given at index ", i, " in the equation string, subscripts must be in [a-zA-Z]");
  }
  TG_CHECK(terms.size() == num_ops, Error, "einsum(): more operands were provided than specified in the equation");
  output = Term();
  if (!explicit_output) return;
  for (std::size_t i = arrow + 2; i < eq.size(); ++i)
    TG_CHECK(read(i, eq.size(), output, "output"), Error, "einsum(): invalid subscript given at index ", i,
             " in the equation string, subscripts must be in [a-zA-Z]");
}

/// x with the dims at positions `dims` (all of size n, k of them) replaced by their diagonal, one dim of
/// size n at the end: the other dims are moved in front, the k dims flattened, and every
/// (1 + n + ... + n^(k-1))-th element taken (index_select, differentiable twice).
Tensor diagonal_of(const Tensor& x, const std::vector<int64_t>& dims, int64_t n) {
  std::vector<int64_t> order;
  Shape shape;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      order.push_back(d);
      shape.push_back(x.shape()[static_cast<std::size_t>(d)]);
    }
  order.insert(order.end(), dims.begin(), dims.end());
  int64_t step = 0, power = 1, flat = 1;
  for (std::size_t j = 0; j < dims.size(); ++j) {
    step += power;
    power *= n;
    flat *= n;
  }
  shape.push_back(flat);
  std::vector<int64_t> index(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) index[static_cast<std::size_t>(i)] = i * step;
  const Tensor idx = from_vector(index, {n}, TensorOptions().device(x.device()));
  return index_select(reshape(permute(x, order), shape), -1, idx);
}

/// x (aligned) permuted so that dim i of the result is x's dim order[i], then reshaped to `sizes`.
Tensor permuted(const Tensor& x, const std::vector<int64_t>& order, const Shape& sizes) {
  bool identity = true;
  for (std::size_t i = 0; i < order.size(); ++i) identity = identity && order[i] == static_cast<int64_t>(i);
  return reshape(identity ? x : permute(x, order), sizes);
}

/// The product of the sizes of x at the positions dims.
int64_t size_at(const Shape& s, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= s[static_cast<std::size_t>(d)];
  return n;
}

/// Two aligned operands combined, summing the global positions in `contract` (Note [einsum on aligned
/// operands]); every position in `contract` that only one of them has was already summed in it.
Tensor combine(const Tensor& a, const Tensor& b, const std::vector<bool>& contract) {
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  const int64_t G = static_cast<int64_t>(as.size());
  std::vector<int64_t> batch, rows, cols, inner, rest;
  for (int64_t g = 0; g < G; ++g) {
    const bool in_a = as[static_cast<std::size_t>(g)] != 1, in_b = bs[static_cast<std::size_t>(g)] != 1;
    if (contract[static_cast<std::size_t>(g)] && in_a && in_b) inner.push_back(g);
    else if (in_a && in_b) batch.push_back(g);
    else if (in_a) rows.push_back(g);
    else if (in_b) cols.push_back(g);
    else rest.push_back(g);
  }
  if (inner.empty()) return mul(a, b);   // nothing summed: the broadcast product is the result
  const int64_t B = size_at(as, batch), M = size_at(as, rows), K = size_at(as, inner), N = size_at(bs, cols);
  auto concat = [](std::initializer_list<const std::vector<int64_t>*> parts) {
    std::vector<int64_t> all;
    for (const auto* p : parts) all.insert(all.end(), p->begin(), p->end());
    return all;
  };
  std::vector<int64_t> a_order = concat({&batch, &rows, &inner, &cols, &rest});
  std::vector<int64_t> b_order = concat({&batch, &inner, &cols, &rows, &rest});
  const bool batched = !batch.empty();
  const Tensor a3 = permuted(a, a_order, batched ? Shape{B, M, K} : Shape{M, K});
  const Tensor b3 = permuted(b, b_order, batched ? Shape{B, K, N} : Shape{K, N});
  // The product (B, M, N) back to G dims: batch, rows and cols at their sizes, 1 for the summed and
  // absent positions, then permuted into the global order.
  const std::vector<int64_t> y_order = concat({&batch, &rows, &cols, &inner, &rest});
  Shape y_shape;
  for (int64_t g : batch) y_shape.push_back(as[static_cast<std::size_t>(g)]);
  for (int64_t g : rows) y_shape.push_back(as[static_cast<std::size_t>(g)]);
  for (int64_t g : cols) y_shape.push_back(bs[static_cast<std::size_t>(g)]);
  for (std::size_t i = inner.size() + rest.size(); i > 0; --i) y_shape.push_back(1);
  std::vector<int64_t> inverse(static_cast<std::size_t>(G));
  for (std::size_t i = 0; i < y_order.size(); ++i) inverse[static_cast<std::size_t>(y_order[i])] = static_cast<int64_t>(i);
  Shape aligned_shape;
  for (int64_t g = 0; g < G; ++g) aligned_shape.push_back(y_shape[static_cast<std::size_t>(inverse[static_cast<std::size_t>(g)])]);
  return permuted(reshape(matmul(a3, b3), y_shape), inverse, aligned_shape);
}

/// x (aligned) summed over the global positions in `which` that x has (size other than 1), keeping them as 1.
Tensor sum_positions(const Tensor& x, const std::vector<bool>& which) {
  Shape target = x.shape();
  bool any = false;
  for (std::size_t g = 0; g < target.size(); ++g)
    if (which[g] && target[g] != 1) {
      target[g] = 1;
      any = true;
    }
  return any ? sum_to_size(x, target) : x;
}

}  // namespace

// operands: one tensor per comma-separated term of equation -> the output term's dims
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  std::vector<Term> terms;
  Term output;
  bool explicit_output = false;
  parse(equation, operands.size(), terms, output, explicit_output);
  const std::size_t n_ops = operands.size();
  for (std::size_t k = 0; k < n_ops; ++k) {
    TG_CHECK(operands[k].defined(), Error, "einsum(): operand ", k, " is undefined");
    TG_CHECK(is_floating(operands[k].dtype()), DTypeError, "einsum(): expected floating-point operands, but operand ",
             k, " is ", dtype_name(operands[k].dtype()));
    TG_CHECK(operands[k].dtype() == operands[0].dtype(), DTypeError,
             "einsum(): expected all operands to have one dtype, but found ", dtype_name(operands[0].dtype()), " and ",
             dtype_name(operands[k].dtype()));
  }
  // Ranks against the terms; the number of ellipsis dims of each operand and of the equation.
  std::vector<int64_t> ellipsis_dims(n_ops, 0);
  int64_t E = 0;
  std::array<int, kLetters> count{};   // occurrences of each letter over all operands
  for (std::size_t k = 0; k < n_ops; ++k) {
    const int64_t rank = operands[k].dim(), letters = terms[k].letters();
    if (terms[k].ellipsis) {
      TG_CHECK(letters <= rank, ShapeError, "einsum(): the number of subscripts in the equation (", letters,
               ") is more than the number of dimensions (", rank, ") for operand ", k);
      ellipsis_dims[k] = rank - letters;
      E = std::max(E, ellipsis_dims[k]);
    } else {
      TG_CHECK(letters == rank, ShapeError, "einsum(): the number of subscripts in the equation (", letters,
               ") does not match the number of dimensions (", rank, ") for operand ", k, " and no ellipsis was given");
    }
    for (int l : terms[k].labels)
      if (l != kEllipsisMark) ++count[static_cast<std::size_t>(l)];
  }
  // Global positions: ellipsis dims 0..E-1, then each letter used, in ASCII order.
  std::array<int64_t, kLetters> position{};
  int64_t G = E;
  for (int l = 0; l < kLetters; ++l) position[static_cast<std::size_t>(l)] = count[static_cast<std::size_t>(l)] > 0 ? G++ : -1;
  // The output's positions, in its order.
  std::vector<int64_t> out_positions;
  if (explicit_output) {
    std::array<bool, kLetters> seen{};
    for (int l : output.labels) {
      if (l == kEllipsisMark) {
        for (int64_t e = 0; e < E; ++e) out_positions.push_back(e);
        continue;
      }
      const std::size_t li = static_cast<std::size_t>(l);
      TG_CHECK(count[li] > 0, Error, "einsum(): output subscript ", letter_of(l),
               " does not appear in the equation for any input operand");
      TG_CHECK(!seen[li], Error, "einsum(): output subscript ", letter_of(l), " appears more than once in the output");
      seen[li] = true;
      out_positions.push_back(position[li]);
    }
  } else {
    for (int64_t e = 0; e < E; ++e) out_positions.push_back(e);
    for (int l = 0; l < kLetters; ++l)
      if (count[static_cast<std::size_t>(l)] == 1) out_positions.push_back(position[static_cast<std::size_t>(l)]);
  }
  std::vector<bool> in_output(static_cast<std::size_t>(G), false);
  for (int64_t g : out_positions) in_output[static_cast<std::size_t>(g)] = true;

  // Each operand diagonalized and aligned to the G positions, its sizes checked against the others'.
  Shape sizes(static_cast<std::size_t>(G), 1);   // each position's size so far (1 until an operand has more)
  std::vector<Tensor> aligned;
  for (std::size_t k = 0; k < n_ops; ++k) {
    Tensor x = operands[k];
    std::vector<int64_t> pos;   // the global position of each dim of x
    for (int l : terms[k].labels) {
      if (l == kEllipsisMark) {
        for (int64_t e = 0; e < ellipsis_dims[k]; ++e) pos.push_back(E - ellipsis_dims[k] + e);
      } else {
        pos.push_back(position[static_cast<std::size_t>(l)]);
      }
    }
    // A letter repeated in this operand: its diagonal, at the end of x's dims.
    for (int l = 0; l < kLetters; ++l) {
      const int64_t g = position[static_cast<std::size_t>(l)];
      std::vector<int64_t> dims;
      for (std::size_t d = 0; d < pos.size(); ++d)
        if (pos[d] == g) dims.push_back(static_cast<int64_t>(d));
      if (dims.size() < 2) continue;
      const int64_t n = x.shape()[static_cast<std::size_t>(dims[0])];
      for (int64_t d : dims) {
        const int64_t m = x.shape()[static_cast<std::size_t>(d)];
        TG_CHECK(m == n, ShapeError, "einsum(): subscript ", letter_of(l), " is repeated for operand ", k,
                 " but the sizes don't match, ", m, " != ", n);
      }
      x = diagonal_of(x, dims, n);
      std::vector<int64_t> kept;
      for (std::size_t d = 0; d < pos.size(); ++d)
        if (pos[d] != g) kept.push_back(pos[d]);
      kept.push_back(g);
      pos = kept;
    }
    // Sizes broadcast across operands.
    for (std::size_t d = 0; d < pos.size(); ++d) {
      const std::size_t g = static_cast<std::size_t>(pos[d]);
      const int64_t s = x.shape()[d];
      if (s == 1 || s == sizes[g]) continue;
      if (static_cast<int64_t>(g) < E) {
        TG_CHECK(sizes[g] == 1, ShapeError, "einsum(): dimension ", static_cast<int64_t>(g) - (E - ellipsis_dims[k]),
                 " covered by ellipsis in operand ", k, " has size ", s,
                 " which does not broadcast with previously seen ellipsis with size ", sizes[g],
                 " for the respective dimension");
      } else {
        int letter = 0;
        while (position[static_cast<std::size_t>(letter)] != static_cast<int64_t>(g)) ++letter;
        TG_CHECK(sizes[g] == 1, ShapeError, "einsum(): subscript ", letter_of(letter), " has size ", s, " for operand ",
                 k, " which does not broadcast with previously seen size ", sizes[g]);
      }
      sizes[g] = s;
    }
    // Permuted into the global order and reshaped to G dims, 1 where x lacks a position (a view).
    std::vector<int64_t> order(pos.size());
    for (std::size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
    std::sort(order.begin(), order.end(), [&pos](int64_t i, int64_t j) { return pos[static_cast<std::size_t>(i)] < pos[static_cast<std::size_t>(j)]; });
    Shape full(static_cast<std::size_t>(G), 1);
    for (std::size_t d = 0; d < pos.size(); ++d) full[static_cast<std::size_t>(pos[d])] = x.shape()[d];
    aligned.push_back(permuted(x, order, full));
  }

  // Left to right: before combining operand k, the positions nobody after it has and the output lacks
  // are summed (Note [einsum on aligned operands]).
  auto later_has = [&aligned](std::size_t from, std::size_t g) {
    for (std::size_t j = from; j < aligned.size(); ++j)
      if (aligned[j].shape()[g] != 1) return true;
    return false;
  };
  Tensor acc = aligned[0];
  for (std::size_t k = 1; k < n_ops; ++k) {
    std::vector<bool> contract(static_cast<std::size_t>(G)), only_acc(static_cast<std::size_t>(G)),
        only_next(static_cast<std::size_t>(G));
    const Tensor& next = aligned[k];
    for (std::size_t g = 0; g < static_cast<std::size_t>(G); ++g) {
      contract[g] = !in_output[g] && !later_has(k + 1, g);
      const bool in_acc = acc.shape()[g] != 1, in_next = next.shape()[g] != 1;
      only_acc[g] = contract[g] && in_acc && !in_next;
      only_next[g] = contract[g] && in_next && !in_acc;
    }
    acc = combine(sum_positions(acc, only_acc), sum_positions(next, only_next), contract);
  }
  std::vector<bool> not_output(static_cast<std::size_t>(G));
  for (std::size_t g = 0; g < not_output.size(); ++g) not_output[g] = !in_output[g];
  acc = sum_positions(acc, not_output);
  // Into the output's order; the summed positions (all 1 now) go last and are dropped by the reshape.
  std::vector<int64_t> order = out_positions;
  Shape out_shape;
  for (int64_t g : out_positions) out_shape.push_back(acc.shape()[static_cast<std::size_t>(g)]);
  for (int64_t g = 0; g < G; ++g)
    if (!in_output[static_cast<std::size_t>(g)]) order.push_back(g);
  return permuted(acc, order, out_shape);
}

}  // namespace tg
