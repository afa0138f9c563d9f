// backend/cpu/random.cpp: the random family of the CPU backend: Philox draws (kernels/philox.h), the very
// formula the CUDA twin backend/cuda/random.cu runs, so that a seed gives the same numbers on both; and
// multinomial's draws with replacement from given uniforms in one pass over each row (Note [Drawing
// categories in one pass]; CUDA composes them in prim/random.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "tensorgrad/backend/cpu/cpu_backend.h"
#include "tensorgrad/kernels/sampling.h"

namespace tg {
namespace cpu {

void CpuBackend::random(const philox::Distribution& dist, uint64_t seed, uint64_t offset, const RawTensor& out) {
  dispatch_dtype(out.dtype(), [&](auto t) {
    using T = decltype(t);
    T* p = out.data<T>();
    parallel_for(out.numel(), 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        p[i] = philox::sample<T>(dist, seed, offset + static_cast<uint64_t>(i));
    });
  });
}

// Note [Drawing categories in one pass]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A draw u in [0, 1) from a row of weights p (C of them) is the first category whose running sum,
// divided by the row's total, is above u: the inverse of the row's CDF. Each row is read once, plus
// one block of 64 weights per draw, with nothing written but the draws (the value-level rules are
// kernels/sampling.h's, which the CUDA kernel runs too):
// - The row is cut into blocks of 64 weights. A block's sum is taken in 8 lanes (lane j adds weights
//   j, j + 8, ... in order, in float64) combined as a fixed tree, on every code path
//   (kernels.inc's category_block_sums); the total is the blocks' sums added in order. The sums are
//   kept (8 bytes per 64 weights) for the walk.
// - A walk skips a block when the sum of the kept block sums up to its end is at most
//   u total (1 - 2^-40): a running sum whose quotient by the total rounds above u exceeds u total
//   exactly, and the running sums inside a block differ from that bound's block sum by far less than
//   the margin. Only the block where the draw lands is walked weight by weight: the running sum is
//   the blocks before it plus its weights in order, and the draw is the first category of positive
//   weight whose running sum divided by the total is above u (the last one of positive weight when
//   rounding leaves none, which takes a u within about 1e-15 of 1). A weight of 0 is never drawn.
// - A row's draws are walked in increasing order, all in one pass.
// The first pass checks the weights too: a NaN, an infinity or a negative weight (a sum that is not
// finite, or a negative minimum), or a total that is not positive, gives the row a status that prim
// turns into torch.multinomial's errors.
namespace {
constexpr int64_t kDrawBlock = sampling::kBlock;

/// Draws out[j] for each u[j] (S of them) from the row p (C weights); returns the row's status.
/// sums holds room for the row's block sums.
template <class T>
int64_t draw_row(const T* p, int64_t C, const double* u, int64_t S, int64_t* out, std::vector<int64_t>& order,
                 std::vector<double>& sums) {
  const int64_t blocks = (C + kDrawBlock - 1) / kDrawBlock;
  double total = 0, min = 0;
  with_kernels([&](auto k) { decltype(k)::category_block_sums(p, C, sums.data(), &min); });
  for (int64_t b = 0; b < blocks; ++b) total += sums[static_cast<std::size_t>(b)];
  if (!std::isfinite(total) || min < 0) return 1;   // a NaN or an infinity makes the sum NaN or infinite
  if (!(total > 0)) return 2;
  order.resize(static_cast<std::size_t>(S));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (S > 1) std::sort(order.begin(), order.end(), [u](int64_t a, int64_t b) { return u[a] < u[b]; });
  std::size_t j = 0;
  double before = 0;   // the sum of the blocks before b
  for (int64_t b = 0; b < blocks && j < order.size(); ++b) {
    const int64_t k0 = b * kDrawBlock, k1 = std::min(C, k0 + kDrawBlock);
    const double after = before + sums[static_cast<std::size_t>(b)];
    while (j < order.size()) {
      const double uj = u[order[j]];
      if (after <= sampling::skip_bound(uj, total) && b + 1 < blocks) break;   // lands in a later block
      const int64_t found = sampling::walk_block(p, k0, k1, before, total, uj);
      if (found < 0) break;   // not in this block after all
      out[order[j++]] = found;
    }
    before = after;
  }
  if (j < order.size()) {   // rounding left no running sum above u
    const int64_t k = sampling::last_positive(p, C);
    for (; j < order.size(); ++j) out[order[j]] = k;
  }
  return 0;
}
}  // namespace

bool CpuBackend::sample_categories(const RawTensor& probs, const RawTensor& u, const RawTensor& out,
                                   const RawTensor& status) {
  const int64_t R = probs.shape()[0], C = probs.shape()[1], S = u.shape()[1];
  dispatch_only<kFloat32, kFloat64>(probs.dtype(), "multinomial", [&](auto tag) {
    using T = decltype(tag);
    const T* p = probs.data<T>();
    const double* draws = u.data<double>();
    int64_t* o = out.data<int64_t>();
    int64_t* st = status.data<int64_t>();
    parallel_for(R, 2 * C + S, [&](int64_t r0, int64_t r1) {
      std::vector<int64_t> order;
      std::vector<double> sums(static_cast<std::size_t>((C + kDrawBlock - 1) / kDrawBlock));
      for (int64_t r = r0; r < r1; ++r) st[r] = draw_row(p + r * C, C, draws + r * S, S, o + r * S, order, sums);
    });
  });
  return true;
}

}  // namespace cpu
}  // namespace tg
