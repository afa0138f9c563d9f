// backend/cpu/random.cpp: the random family of the CPU backend: Philox draws (kernels/philox.h), the very
// formula the CUDA twin backend/cuda/random.cu runs, so that a seed gives the same numbers on both; and
// multinomial's draws with replacement from given uniforms in one pass over each row (Note [Drawing
// categories in one pass]; CUDA composes them in prim/random.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "tensorgrad/backend/cpu/cpu_backend.h"

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
// A draw u in [0, 1) from a row of weights p (C of them) is the first category k whose running sum,
// divided by the row's total, is above u: the inverse of the row's CDF, which prim composes as a scan,
// a division and a count. Here each row is read once for its total and about half of it again per
// walk, with nothing written but the draws, so that sampling a large vocabulary runs at the speed of
// memory:
// - The running sums are taken in blocks of 8 weights: the sum of a block is its weights added in
//   order, and the running sum at a weight is the sum of the blocks before it plus the weights of its
//   own block up to it, in order. A block's sum does not wait for the block before it, so the
//   additions overlap; the last running sum is the total computed the same way, so it divides to
//   exactly 1 > u and every draw finds a category, and a weight of 0 is never drawn (its running sum
//   equals the one before it).
// - A walk skips a block when the running sum at its end is at most u total (1 - 2^-50): a running sum
//   whose quotient by the total rounds above u exceeds u total exactly, which exceeds that bound. Only
//   the block where the draw lands is walked weight by weight, with the division.
// - A row's draws are walked in increasing order, all in one pass.
// The totals check the weights too: a NaN, an infinity or a negative weight, or a total that is not
// positive, gives the row a status that prim turns into torch.multinomial's errors.
namespace {
constexpr int64_t kDrawBlock = 8;

/// Draws out[j] for each u[j] (S of them) from the row p (C weights); returns the row's status.
template <class T>
int64_t draw_row(const T* p, int64_t C, const double* u, int64_t S, int64_t* out, std::vector<int64_t>& order) {
  const int64_t blocks = (C + kDrawBlock - 1) / kDrawBlock;
  auto block_sum = [&](int64_t b) {
    double s = 0;
    for (int64_t k = b * kDrawBlock, e = std::min(C, k + kDrawBlock); k < e; ++k) s += static_cast<double>(p[k]);
    return s;
  };
  double total = 0;
  bool bad = false;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t k = b * kDrawBlock, e = std::min(C, k + kDrawBlock); k < e; ++k) {
      const double v = static_cast<double>(p[k]);
      bad = bad || !(v >= 0) || v == INFINITY;   // NaN fails v >= 0
    }
    total += block_sum(b);
  }
  if (bad) return 1;
  if (!(total > 0)) return 2;
  order.resize(static_cast<std::size_t>(S));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (S > 1) std::sort(order.begin(), order.end(), [u](int64_t a, int64_t b) { return u[a] < u[b]; });
  std::size_t j = 0;
  double before = 0;   // the sum of the blocks before b
  for (int64_t b = 0; b < blocks && j < order.size(); ++b) {
    const double after = before + block_sum(b);
    while (j < order.size()) {
      const double uj = u[order[j]];
      if (after <= uj * total * (1 - 0x1p-50) && b + 1 < blocks) break;   // lands in a later block
      int64_t found = -1;
      double run = 0;
      for (int64_t k = b * kDrawBlock, e = std::min(C, k + kDrawBlock); k < e; ++k) {
        run += static_cast<double>(p[k]);
        if ((before + run) / total > uj) {
          found = k;
          break;
        }
      }
      if (found < 0) break;   // not in this block after all
      out[order[j++]] = found;
    }
    before = after;
  }
  for (; j < order.size(); ++j) out[order[j]] = C - 1;   // unreachable: the last running sum divides to 1
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
      for (int64_t r = r0; r < r1; ++r) st[r] = draw_row(p + r * C, C, draws + r * S, S, o + r * S, order);
    });
  });
  return true;
}

}  // namespace cpu
}  // namespace tg
