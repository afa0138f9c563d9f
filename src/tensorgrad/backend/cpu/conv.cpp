// backend/cpu/conv.cpp: convolution and pooling on the CPU. conv2d in float32 runs on oneDNN's
// convolution kernels where the build has oneDNN (Note [conv2d through oneDNN]); float64, and every
// conv2d without oneDNN, is im2col + GEMM per image (the GEMM through the CPU backend's gemm, i.e.
// OpenBLAS), images spread over core/parallel.h's pool with one single-threaded GEMM per image, so
// each image's column buffer stays in cache; with stride 1 the input gradient is a convolution of dy
// too (Note [conv2d input gradient as a convolution]). The im2col path is the reference the oneDNN
// path is tested against. Pooling is a plain loop per plane (max_pool2d's dilation steps over the
// window's taps). Validation happened in prim/conv.cpp; the CUDA twin is backend/cuda/conv.cu.
#include "tensorgrad/backend/cpu/conv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <unordered_map>
#include <vector>

#include "tensorgrad/core/parallel.h"
#include "tensorgrad/kernels/pool.h"

#if TENSORGRAD_HAVE_DNNL
#include <atomic>

#include "tensorgrad/backend/cpu/onednn.h"
#endif

namespace tg {
namespace detail {
namespace {

// Convolutions with fewer multiply-adds than this run on the calling thread.
constexpr int64_t kConvParallelMacs = int64_t(1) << 20;

/// True when the column matrix of one group is the input itself: a 1x1 kernel, stride 1, no padding.
bool is_pointwise(const Conv2dArgs& a) {
  return a.KH == 1 && a.KW == 1 && a.stride_h == 1 && a.stride_w == 1 && a.pad_h == 0 && a.pad_w == 0;
}

/// col (Cg KH KW, OH OW) = the input windows of x (Cg, H, W): row (c, kh, kw), column (oh, ow) holds
/// x[c][oh sH - pH + kh dH][ow sW - pW + kw dW], 0 outside the input. Sets col.
template <class T>
void im2col(const T* x, int64_t Cg, const Conv2dArgs& a, T* col) {
  const int64_t L = a.OH * a.OW;
  if (a.stride_h == 1 && a.stride_w == 1 && a.OW == a.W) {
    // Rows as long as the input's ("same" padding): each column row is the input plane shifted by
    // (kh dH - pH) W + kw dW - pW elements, so one copy fills all its in-range rows; the columns whose
    // input lies left or right of the plane read the neighbouring rows' ends and are zeroed after.
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t kh = 0; kh < a.KH; ++kh)
        for (int64_t kw = 0; kw < a.KW; ++kw) {
          T* row = col + ((c * a.KH + kh) * a.KW + kw) * L;
          const T* xc = x + c * a.H * a.W;
          const int64_t ih0 = conv_input_index(0, kh, a.stride_h, a.pad_h, a.dil_h);
          const int64_t iw0 = conv_input_index(0, kw, a.stride_w, a.pad_w, a.dil_w);
          const int64_t olo = std::min(a.OH, std::max<int64_t>(0, -ih0));
          const int64_t ohi = std::max(olo, std::min(a.OH, a.H - ih0));
          const int64_t lo = std::min(a.OW, std::max<int64_t>(0, -iw0));
          const int64_t hi = std::max(lo, std::min(a.OW, a.W - iw0));
          std::fill_n(row, olo * a.OW, T(0));
          if (ohi > olo && hi > lo) {
            const int64_t first = olo * a.OW + lo, last = (ohi - 1) * a.OW + hi;
            std::memcpy(row + first, xc + (olo + ih0) * a.W + lo + iw0, sizeof(T) * (last - first));
            for (int64_t oh = olo; oh < ohi; ++oh) {
              T* r = row + oh * a.OW;
              std::fill(r, r + lo, T(0));
              std::fill(r + hi, r + a.OW, T(0));
            }
          } else {
            std::fill(row + olo * a.OW, row + ohi * a.OW, T(0));
          }
          std::fill(row + ohi * a.OW, row + L, T(0));
        }
    return;
  }
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t kh = 0; kh < a.KH; ++kh)
      for (int64_t kw = 0; kw < a.KW; ++kw) {
        T* row = col + ((c * a.KH + kh) * a.KW + kw) * L;
        const T* xc = x + c * a.H * a.W;
        const int64_t iw0 = conv_input_index(0, kw, a.stride_w, a.pad_w, a.dil_w);   // iw = ow sW + iw0
        // Columns ow whose iw = ow sW + iw0 lies in [0, W).
        const int64_t lo = std::min(a.OW, iw0 >= 0 ? 0 : (-iw0 + a.stride_w - 1) / a.stride_w);
        const int64_t hi = std::max(lo, std::min(a.OW, a.W - iw0 <= 0 ? 0 : (a.W - iw0 + a.stride_w - 1) / a.stride_w));
        for (int64_t oh = 0; oh < a.OH; ++oh) {
          T* r = row + oh * a.OW;
          const int64_t ih = conv_input_index(oh, kh, a.stride_h, a.pad_h, a.dil_h);
          if (ih < 0 || ih >= a.H) {
            std::fill_n(r, a.OW, T(0));
            continue;
          }
          const T* xr = xc + ih * a.W;   // element iw of the input row
          std::fill_n(r, lo, T(0));
          if (a.stride_w == 1) {
            if (hi > lo) std::memcpy(r + lo, xr + lo + iw0, sizeof(T) * (hi - lo));
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) r[ow] = xr[ow * a.stride_w + iw0];
          }
          std::fill(r + hi, r + a.OW, T(0));
        }
      }
}

/// dx (Cg, H, W) += the columns of col (Cg KH KW, OH OW) added back where im2col read them. Accumulates.
template <class T>
void col2im(const T* col, int64_t Cg, const Conv2dArgs& a, T* dx) {
  const int64_t L = a.OH * a.OW;
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t kh = 0; kh < a.KH; ++kh)
      for (int64_t kw = 0; kw < a.KW; ++kw) {
        const T* row = col + ((c * a.KH + kh) * a.KW + kw) * L;
        T* xc = dx + c * a.H * a.W;
        const int64_t iw0 = conv_input_index(0, kw, a.stride_w, a.pad_w, a.dil_w);   // iw = ow sW + iw0
        const int64_t lo = std::min(a.OW, iw0 >= 0 ? 0 : (-iw0 + a.stride_w - 1) / a.stride_w);
        const int64_t hi = std::max(lo, std::min(a.OW, a.W - iw0 <= 0 ? 0 : (a.W - iw0 + a.stride_w - 1) / a.stride_w));
        for (int64_t oh = 0; oh < a.OH; ++oh) {
          const int64_t ih = conv_input_index(oh, kh, a.stride_h, a.pad_h, a.dil_h);
          if (ih < 0 || ih >= a.H) continue;
          const T* r = row + oh * a.OW;
          T* xr = xc + ih * a.W;
          for (int64_t ow = lo; ow < hi; ++ow) xr[ow * a.stride_w + iw0] += r[ow];
        }
      }
}

/// One row-major product through the CPU backend: C (M, N) = op(A) op(B) + beta C.
template <class T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B, int64_t ldb,
          double beta, T* C, int64_t ldc) {
  cpu_backend().gemm(make_gemm(dtype_of<T>(), 1, M, N, K, {A, ta, lda}, {B, tb, ldb}, C, ldc, 0, beta));
}

/// Calls f(part, begin, end) for `parts` consecutive ranges of [0, n), spread over the pool when the
/// work is large; the ranges depend only on n and parts (results do not depend on the load).
template <class F>
void for_parts(int64_t n, int parts, F f) {
  parallel::run(parts, parts, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) f(p, n * p / parts, n * (p + 1) / parts);
  });
}

int parts_for(int64_t n, int64_t macs) {
  if (macs < kConvParallelMacs) return 1;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(n, parallel::max_threads())));
}

template <class T>
std::unique_ptr<T[]> scratch(int64_t n) {
  try {
    return std::unique_ptr<T[]>(new T[static_cast<std::size_t>(std::max<int64_t>(n, 1))]);
  } catch (const std::bad_alloc&) {   // also std::bad_array_new_length
    throw OutOfMemoryError(
        tg::detail::cat("conv2d: cannot allocate a scratch buffer of ", n, " elements of ", sizeof(T), " bytes"));
  }
}

template <class T>
void conv2d_impl(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& a, const RawTensor& out) {
  const int64_t G = a.groups, Cg = a.C / G, Og = a.O / G, L = a.OH * a.OW, K = Cg * a.KH * a.KW;
  const T* xp = x.data<T>();
  const T* wp = weight.data<T>();
  const T* bp = bias.defined() ? bias.data<T>() : nullptr;
  T* op = out.data<T>();
  const bool pointwise = is_pointwise(a);
  const int parts = parts_for(a.N, a.N * a.O * K * L);
  for_parts(a.N, parts, [&](int64_t, int64_t n0, int64_t n1) {
    auto col = pointwise ? nullptr : scratch<T>(K * L);
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t g = 0; g < G; ++g) {
        const T* xg = xp + (n * a.C + g * Cg) * a.H * a.W;
        T* yg = op + (n * a.O + g * Og) * L;
        if (!pointwise) im2col(xg, Cg, a, col.get());
        if (bp != nullptr)
          for (int64_t o = 0; o < Og; ++o) std::fill_n(yg + o * L, L, bp[g * Og + o]);
        // y_g (Og, L) = W_g (Og, K) . col (K, L) (+ the bias rows just written)
        gemm<T>(false, false, Og, L, K, wp + g * Og * K, K, pointwise ? xg : col.get(), L, bp != nullptr ? 1.0 : 0.0,
                yg, L);
      }
  });
}

/// Note [conv2d input gradient as a convolution]: with stride 1, the input gradient is itself a
/// convolution: dx = conv2d(dy, W'), W'[c][o][kh][kw] = W[o][c][KH-1-kh][KW-1-kw], with the same
/// dilation and padding d (K - 1) - p on each axis (input row ih reads dy row oh = ih - p' + kh' d). So
/// the CPU computes it as im2col(dy) and one GEMM (Cg, Og KH KW) . (Og KH KW, H W) per image, shaped
/// like the forward's, instead of the GEMM W^T dy, whose inner dimension is only Og, followed by
/// col2im's scattered additions. Needs p <= d (K - 1) on both axes; other geometries take col2im.
bool dx_as_convolution(const Conv2dArgs& a) {
  return a.stride_h == 1 && a.stride_w == 1 && !is_pointwise(a) && a.pad_h <= a.dil_h * (a.KH - 1) &&
         a.pad_w <= a.dil_w * (a.KW - 1);
}

/// The geometry of that convolution: dy (Og, OH, OW) -> dx (Cg, H, W).
Conv2dArgs dx_convolution_args(const Conv2dArgs& a) {
  Conv2dArgs t = a;
  t.H = a.OH;
  t.W = a.OW;
  t.OH = a.H;
  t.OW = a.W;
  t.pad_h = a.dil_h * (a.KH - 1) - a.pad_h;
  t.pad_w = a.dil_w * (a.KW - 1) - a.pad_w;
  return t;
}

template <class T>
void conv2d_backward_impl(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& a,
                          const RawTensor& dx, const RawTensor& dweight, const RawTensor& dbias) {
  const int64_t G = a.groups, Cg = a.C / G, Og = a.O / G, L = a.OH * a.OW, K = Cg * a.KH * a.KW;
  const T* xp = x.defined() ? x.data<T>() : nullptr;         // read for dweight only
  const T* wp = weight.defined() ? weight.data<T>() : nullptr;   // read for dx only
  const T* dyp = dy.data<T>();
  const bool pointwise = is_pointwise(a);
  const bool want_dx = dx.defined(), want_dw = dweight.defined(), want_db = dbias.defined();
  const int parts = parts_for(a.N, a.N * a.O * K * L * (int64_t(want_dx) + int64_t(want_dw)));
  // Note [conv2d input gradient as a convolution]: the flipped, transposed weight per group,
  // wflip[g][c][(o KH + kh) KW + kw] = W[g Og + o][c][KH-1-kh][KW-1-kw].
  const bool dx_conv = want_dx && dx_as_convolution(a);
  const Conv2dArgs t = dx_convolution_args(a);
  const int64_t KT = Og * a.KH * a.KW, HW = a.H * a.W;   // the inner dimension and columns of that GEMM
  std::unique_ptr<T[]> wflip;
  if (dx_conv) {
    wflip = scratch<T>(a.O * K);
    for (int64_t g = 0; g < G; ++g)
      for (int64_t o = 0; o < Og; ++o)
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t kh = 0; kh < a.KH; ++kh)
            for (int64_t kw = 0; kw < a.KW; ++kw)
              wflip[g * Cg * KT + c * KT + (o * a.KH + kh) * a.KW + kw] =
                  wp[(g * Og + o) * K + (c * a.KH + a.KH - 1 - kh) * a.KW + a.KW - 1 - kw];
  }
  // Per part: partial sums of dweight and dbias, added up in part order afterwards (deterministic).
  // dweight is accumulated transposed, dW_g^T (K, Og) per group: the GEMM col (K, L) . dy_g^T (L, Og)
  // runs faster in OpenBLAS than dy_g (Og, L) . col^T (about 10% on (64, 32, 28, 28) 3x3).
  std::vector<std::unique_ptr<T[]>> dw_part(parts), db_part(parts);
  for_parts(a.N, parts, [&](int64_t p, int64_t n0, int64_t n1) {
    T* dwp = nullptr;
    if (want_dw) {
      dw_part[p] = scratch<T>(a.O * K);
      dwp = dw_part[p].get();
      std::fill_n(dwp, a.O * K, T(0));
    }
    if (want_db) {
      db_part[p] = scratch<T>(a.O);
      std::fill_n(db_part[p].get(), a.O, T(0));
    }
    auto col = pointwise || !want_dw ? nullptr : scratch<T>(K * L);
    auto dcol = pointwise || !want_dx ? nullptr : scratch<T>(dx_conv ? KT * HW : K * L);
    for (int64_t n = n0; n < n1; ++n) {
      if (want_dx && !dx_conv) std::fill_n(dx.data<T>() + n * a.C * a.H * a.W, a.C * a.H * a.W, T(0));
      for (int64_t g = 0; g < G; ++g) {
        const T* dyg = dyp + (n * a.O + g * Og) * L;
        if (want_db) {
          T* db = db_part[p].get() + g * Og;
          for (int64_t o = 0; o < Og; ++o) {
            T s = 0;
            for (int64_t l = 0; l < L; ++l) s += dyg[o * L + l];
            db[o] += s;
          }
        }
        if (want_dw) {
          const T* xg = xp + (n * a.C + g * Cg) * a.H * a.W;
          if (!pointwise) im2col(xg, Cg, a, col.get());
          // dW_g^T (K, Og) += col (K, L) . dy_g (Og, L)^T
          gemm<T>(false, true, K, Og, L, pointwise ? xg : col.get(), L, dyg, L, 1.0, dwp + g * K * Og, Og);
        }
        if (dx_conv) {
          // dx_g (Cg, H W) = wflip_g (Cg, Og KH KW) . im2col(dy_g) (Og KH KW, H W); sets dx_g
          T* dxg = dx.data<T>() + (n * a.C + g * Cg) * HW;
          im2col(dyg, Og, t, dcol.get());
          gemm<T>(false, false, Cg, HW, KT, wflip.get() + g * Cg * KT, KT, dcol.get(), HW, 0.0, dxg, HW);
        } else if (want_dx) {
          T* dxg = dx.data<T>() + (n * a.C + g * Cg) * a.H * a.W;
          // dcol (K, L) = W_g (Og, K)^T . dy_g (Og, L), then folded back onto dx (col2im)
          gemm<T>(true, false, K, L, Og, wp + g * Og * K, K, dyg, L, 0.0, pointwise ? dxg : dcol.get(), L);
          if (!pointwise) col2im(dcol.get(), Cg, a, dxg);
        }
      }
    }
  });
  if (want_dw) {
    T* dw = dweight.data<T>();
    std::fill_n(dw, a.O * K, T(0));
    for (int p = 0; p < parts; ++p) {
      const T* src = dw_part[p].get();
      for (int64_t g = 0; g < G; ++g)
        for (int64_t k = 0; k < K; ++k)
          for (int64_t o = 0; o < Og; ++o) dw[(g * Og + o) * K + k] += src[(g * K + k) * Og + o];
    }
  }
  if (want_db) {
    T* db = dbias.data<T>();
    std::fill_n(db, a.O, T(0));
    for (int p = 0; p < parts; ++p)
      for (int64_t o = 0; o < a.O; ++o) db[o] += db_part[p][o];
  }
}

#if TENSORGRAD_HAVE_DNNL
// Note [conv2d through oneDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// float32 conv2d and its gradients run on oneDNN's direct convolution (Debian's libdnnl, which
// libtorch's CPU convolution calls too): on (64, 32, 28, 28) with 3x3 filters, forward + backward at
// one thread, im2col + OpenBLAS took 1.1-1.5x libtorch's time, oneDNN about 0.9x (bench/bench_layers).
// The descriptors leave the layouts to oneDNN (format `any`), so it picks its blocked ones (8 or 16
// channels innermost, by the CPU's vector width) and each tensor is reordered from NCHW into them and
// the results back, around each primitive, as libtorch does. The batch is cut into parts over
// tensorgrad's pool, one single-threaded oneDNN call per part (Note [oneDNN threads] in
// backend/cpu/onednn.h); the weight and bias gradients are per-part sums added in part order, so the
// result depends on the part count (the thread count) only through float32 rounding. A geometry oneDNN
// refuses (dnnl::error while building a primitive) takes the im2col path for the whole call.
namespace onednn_conv {

std::atomic<int64_t> calls{0};   // cpu_conv2d_onednn_calls()

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

/// The shapes and convolution parameters of `n` images of a, as oneDNN descriptors: `any` layouts for
/// the primitives, tensorgrad's (NCHW, (G,) O, C/G, KH, KW) for the user buffers.
struct Descs {
  dims x, w, b, y, stride, dilation, pad_l, pad_r;
  dnnl::memory::desc x_any, w_any, b_any, y_any, x_user, w_user, b_user, y_user;
  Descs(const Conv2dArgs& a, int64_t n)
      : x{n, a.C, a.H, a.W},
        w(a.groups == 1 ? dims{a.O, a.C, a.KH, a.KW} : dims{a.groups, a.O / a.groups, a.C / a.groups, a.KH, a.KW}),
        b{a.O},
        y{n, a.O, a.OH, a.OW},
        stride{a.stride_h, a.stride_w},
        dilation{a.dil_h - 1, a.dil_w - 1},   // oneDNN counts the gaps between taps
        pad_l{a.pad_h, a.pad_w},
        pad_r{a.pad_h, a.pad_w},
        x_any(x, dt::f32, tag::any),
        w_any(w, dt::f32, tag::any),
        b_any(b, dt::f32, tag::x),
        y_any(y, dt::f32, tag::any),
        x_user(x, dt::f32, tag::nchw),
        w_user(w, dt::f32, a.groups == 1 ? tag::oihw : tag::goihw),
        b_user(b, dt::f32, tag::x),
        y_user(y, dt::f32, tag::nchw) {}
};

dnnl::convolution_forward::primitive_desc forward_pd(const Descs& d, bool bias) {
  using F = dnnl::convolution_forward;
  const F::desc desc = bias ? F::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.x_any,
                                      d.w_any, d.b_any, d.y_any, d.stride, d.dilation, d.pad_l, d.pad_r)
                            : F::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, d.x_any,
                                      d.w_any, d.y_any, d.stride, d.dilation, d.pad_l, d.pad_r);
  return F::primitive_desc(desc, onednn_engine());
}

/// A user buffer as a oneDNN memory.
dnnl::memory user(const dnnl::memory::desc& md, const float* p) {
  return dnnl::memory(md, onednn_engine(), const_cast<float*>(p));
}

/// `m` in the layout `want`: m itself when it has it, else a reordered copy.
dnnl::memory in_layout(dnnl::memory m, const dnnl::memory::desc& want, dnnl::stream& s) {
  if (m.get_desc() == want) return m;
  dnnl::memory r(want, onednn_engine());
  dnnl::reorder(m, r).execute(s, m, r);
  return r;
}

/// Where a primitive writes a result that belongs in `dst`: dst itself when the layouts agree, else a
/// buffer in `want` that finish() reorders into dst.
struct Output {
  dnnl::memory dst, mem;
  Output(const dnnl::memory& d, const dnnl::memory::desc& want)
      : dst(d), mem(d.get_desc() == want ? d : dnnl::memory(want, onednn_engine())) {}
  void finish(dnnl::stream& s) {
    if (mem != dst) dnnl::reorder(mem, dst).execute(s, mem, dst);
  }
};

/// y = conv2d(x, w) + b for the `n` images at x and y (b may be null), single-threaded.
void forward(const float* x, const float* w, const float* b, float* y, const Conv2dArgs& a, int64_t n) {
  const SingleThreadedOneDnn single_threaded;
  const Descs d(a, n);
  const auto pd = forward_pd(d, b != nullptr);
  dnnl::stream s(onednn_engine());
  const dnnl::memory xm = in_layout(user(d.x_user, x), pd.src_desc(), s);
  const dnnl::memory wm = in_layout(user(d.w_user, w), pd.weights_desc(), s);
  Output ym(user(d.y_user, y), pd.dst_desc());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym.mem}};
  if (b != nullptr) args.emplace(DNNL_ARG_BIAS, user(d.b_user, b));
  dnnl::convolution_forward(pd).execute(s, args);
  ym.finish(s);
  s.wait();
}

/// For the `n` images at x and dy: dx = the input gradient (when dx is not null) and dw, db = the weight
/// and bias gradients of these images alone (when not null; db only with dw), single-threaded.
void backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db, const Conv2dArgs& a,
              int64_t n) {
  const SingleThreadedOneDnn single_threaded;
  const Descs d(a, n);
  const auto fwd = forward_pd(d, db != nullptr);
  dnnl::stream s(onednn_engine());
  const dnnl::memory dy_user = user(d.y_user, dy);
  if (dx != nullptr) {
    using B = dnnl::convolution_backward_data;
    const B::primitive_desc pd(B::desc(dnnl::algorithm::convolution_direct, d.x_any, d.w_any, d.y_any, d.stride,
                                       d.dilation, d.pad_l, d.pad_r),
                               onednn_engine(), fwd);
    const dnnl::memory dym = in_layout(dy_user, pd.diff_dst_desc(), s);
    const dnnl::memory wm = in_layout(user(d.w_user, w), pd.weights_desc(), s);
    Output dxm(user(d.x_user, dx), pd.diff_src_desc());
    B(pd).execute(s, {{DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, dxm.mem}});
    dxm.finish(s);
  }
  if (dw != nullptr) {
    using B = dnnl::convolution_backward_weights;
    const B::desc desc = db != nullptr ? B::desc(dnnl::algorithm::convolution_direct, d.x_any, d.w_any, d.b_any,
                                                 d.y_any, d.stride, d.dilation, d.pad_l, d.pad_r)
                                       : B::desc(dnnl::algorithm::convolution_direct, d.x_any, d.w_any, d.y_any,
                                                 d.stride, d.dilation, d.pad_l, d.pad_r);
    const B::primitive_desc pd(desc, onednn_engine(), fwd);
    const dnnl::memory xm = in_layout(user(d.x_user, x), pd.src_desc(), s);
    const dnnl::memory dym = in_layout(dy_user, pd.diff_dst_desc(), s);
    Output dwm(user(d.w_user, dw), pd.diff_weights_desc());
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dym},
                                               {DNNL_ARG_DIFF_WEIGHTS, dwm.mem}};
    if (db != nullptr) args.emplace(DNNL_ARG_DIFF_BIAS, user(d.b_user, db));
    B(pd).execute(s, args);
    dwm.finish(s);
  }
  s.wait();
}

/// Runs f(part, n0, n1) over the parts of the batch and reports whether oneDNN took every part; false
/// when a part raised dnnl::error (a geometry it does not implement), after which the caller redoes
/// the whole call on the im2col path.
template <class F>
bool over_parts(int64_t N, int parts, F f) {
  std::atomic<bool> ok{true};
  for_parts(N, parts, [&](int64_t p, int64_t n0, int64_t n1) {
    if (!ok.load()) return;
    try {
      f(p, n0, n1);
    } catch (const dnnl::error&) {
      ok.store(false);
    }
  });
  return ok.load();
}

/// Whether the oneDNN path may take this convolution: float32 with no empty dimension.
bool applies(const Conv2dArgs& a) {
  return a.dtype == kFloat32 && a.N > 0 && a.C > 0 && a.O > 0 && a.OH > 0 && a.OW > 0;
}

bool conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& a, const RawTensor& out) {
  if (!applies(a)) return false;
  const float* xp = x.data<float>();
  const float* wp = weight.data<float>();
  const float* bp = bias.defined() ? bias.data<float>() : nullptr;
  float* yp = out.data<float>();
  const int64_t per_image_x = a.C * a.H * a.W, per_image_y = a.O * a.OH * a.OW;
  const int parts = parts_for(a.N, a.N * a.O * (a.C / a.groups) * a.KH * a.KW * a.OH * a.OW);
  const bool ok = over_parts(a.N, parts, [&](int64_t, int64_t n0, int64_t n1) {
    forward(xp + n0 * per_image_x, wp, bp, yp + n0 * per_image_y, a, n1 - n0);
  });
  if (ok) ++calls;
  return ok;
}

bool conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& a, const RawTensor& dx,
                     const RawTensor& dweight, const RawTensor& dbias) {
  if (!applies(a)) return false;
  const bool want_dx = dx.defined(), want_dw = dweight.defined(), want_db = dbias.defined();
  const int64_t per_image_x = a.C * a.H * a.W, per_image_y = a.O * a.OH * a.OW, wsize = a.O * (a.C / a.groups) * a.KH * a.KW;
  const int parts = parts_for(a.N, a.N * wsize * a.OH * a.OW * (int64_t(want_dx) + int64_t(want_dw)));
  // Per part: the weight and bias gradients of its images, added up in part order afterwards; one part
  // writes straight into dweight and dbias.
  std::vector<std::unique_ptr<float[]>> dw_part(want_dw ? parts : 0), db_part(want_dw && want_db ? parts : 0);
  const float* dyp = dy.data<float>();
  const bool ok = over_parts(a.N, parts, [&](int64_t p, int64_t n0, int64_t n1) {
    float* dwp = nullptr;
    float* dbp = nullptr;
    if (want_dw && parts == 1) {
      dwp = dweight.data<float>();
      if (want_db) dbp = dbias.data<float>();
    } else if (want_dw) {
      dw_part[p] = scratch<float>(wsize);
      dwp = dw_part[p].get();
      if (want_db) {
        db_part[p] = scratch<float>(a.O);
        dbp = db_part[p].get();
      }
    }
    backward(want_dw ? x.data<float>() + n0 * per_image_x : nullptr, want_dx ? weight.data<float>() : nullptr,
             dyp + n0 * per_image_y, want_dx ? dx.data<float>() + n0 * per_image_x : nullptr, dwp, dbp, a, n1 - n0);
  });
  if (!ok) return false;
  if (want_dw && parts > 1) {
    float* dw = dweight.data<float>();
    std::copy_n(dw_part[0].get(), wsize, dw);
    for (int p = 1; p < parts; ++p)
      for (int64_t i = 0; i < wsize; ++i) dw[i] += dw_part[p][i];
  }
  if (want_db && want_dw && parts > 1) {
    float* db = dbias.data<float>();
    std::copy_n(db_part[0].get(), a.O, db);
    for (int p = 1; p < parts; ++p)
      for (int64_t o = 0; o < a.O; ++o) db[o] += db_part[p][o];
  } else if (want_db && !want_dw) {
    // The bias gradient alone: the sum of dy over images and positions, image by image.
    float* db = dbias.data<float>();
    const int64_t L = a.OH * a.OW;
    std::fill_n(db, a.O, 0.0f);
    for (int64_t n = 0; n < a.N; ++n)
      for (int64_t o = 0; o < a.O; ++o) {
        float s = 0;
        for (int64_t l = 0; l < L; ++l) s += dyp[(n * a.O + o) * L + l];
        db[o] += s;
      }
  }
  ++calls;
  return true;
}

}  // namespace onednn_conv
#endif

template <class T>
bool is_nan_value(T v) {
  return v != v;
}

/// f(begin, end) over ranges of the P planes, in parallel when there are many window elements.
template <class F>
void for_planes(const Pool2dArgs& a, int64_t per_plane, F f) {
  const int parts = a.P * per_plane < (int64_t(1) << 16) ? 1 : static_cast<int>(std::min<int64_t>(a.P, parallel::max_threads()));
  for_parts(a.P, parts, [&](int64_t, int64_t b, int64_t e) { f(b, e); });
}

PoolSpan span_h(const Pool2dArgs& a, int64_t oh) { return pool_span_h(a, oh); }
PoolSpan span_w(const Pool2dArgs& a, int64_t ow) { return pool_span_w(a, ow); }

}  // namespace

int64_t cpu_conv2d_onednn_calls() {
#if TENSORGRAD_HAVE_DNNL
  return onednn_conv::calls.load();
#else
  return 0;
#endif
}

void cpu_conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& a, const RawTensor& out) {
#if TENSORGRAD_HAVE_DNNL
  if (onednn_conv::conv2d(x, weight, bias, a, out)) return;
#endif
  dispatch_only<kFloat32, kFloat64>(a.dtype, "conv2d", [&](auto t) { conv2d_impl<decltype(t)>(x, weight, bias, a, out); });
}

void cpu_conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& a,
                         const RawTensor& dx, const RawTensor& dweight, const RawTensor& dbias) {
#if TENSORGRAD_HAVE_DNNL
  if (onednn_conv::conv2d_backward(x, weight, dy, a, dx, dweight, dbias)) return;
#endif
  dispatch_only<kFloat32, kFloat64>(a.dtype, "conv2d", [&](auto t) {
    conv2d_backward_impl<decltype(t)>(x, weight, dy, a, dx, dweight, dbias);
  });
}

void cpu_max_pool2d(const RawTensor& x, const Pool2dArgs& a, const RawTensor& out, const RawTensor& indices) {
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "max_pool2d", [&](auto t) {
    using T = decltype(t);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    int64_t* ip = indices.data<int64_t>();
    for_planes(a, a.OH * a.OW * a.KH * a.KW, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t oh = 0; oh < a.OH; ++oh) {
          const PoolSpan sh = span_h(a, oh);
          for (int64_t ow = 0; ow < a.OW; ++ow) {
            const PoolSpan sw = span_w(a, ow);
            const int64_t o = (p * a.OH + oh) * a.OW + ow;
            op[o] = max_window(xp + p * a.H * a.W, a.W, sh, sw, ip[o]);
          }
        }
    });
  });
}

void cpu_max_pool2d_backward(const RawTensor& dy, const RawTensor& indices, const Pool2dArgs& a, const RawTensor& dx) {
  dispatch_only<kFloat32, kFloat64>(dy.dtype(), "max_pool2d", [&](auto t) {
    using T = decltype(t);
    const T* dyp = dy.data<T>();
    const int64_t* ip = indices.data<int64_t>();
    T* dxp = dx.data<T>();
    for_planes(a, a.H * a.W + a.OH * a.OW, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        T* plane = dxp + p * a.H * a.W;
        std::fill_n(plane, a.H * a.W, T(0));
        for (int64_t o = p * a.OH * a.OW; o < (p + 1) * a.OH * a.OW; ++o) plane[ip[o]] += dyp[o];
      }
    });
  });
}

void cpu_avg_pool2d(const RawTensor& x, const Pool2dArgs& a, const RawTensor& out) {
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "avg_pool2d", [&](auto t) {
    using T = decltype(t);
    const T* xp = x.data<T>();
    T* op = out.data<T>();
    for_planes(a, a.OH * a.OW * a.KH * a.KW, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p)
        for (int64_t oh = 0; oh < a.OH; ++oh) {
          const PoolSpan sh = span_h(a, oh);
          for (int64_t ow = 0; ow < a.OW; ++ow) {
            const PoolSpan sw = span_w(a, ow);
            op[(p * a.OH + oh) * a.OW + ow] = avg_window(xp + p * a.H * a.W, a.W, sh, sw);
          }
        }
    });
  });
}

void cpu_avg_pool2d_backward(const RawTensor& dy, const Pool2dArgs& a, const RawTensor& dx) {
  dispatch_only<kFloat32, kFloat64>(dy.dtype(), "avg_pool2d", [&](auto t) {
    using T = decltype(t);
    const T* dyp = dy.data<T>();
    T* dxp = dx.data<T>();
    for_planes(a, a.OH * a.OW * a.KH * a.KW, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        T* plane = dxp + p * a.H * a.W;
        std::fill_n(plane, a.H * a.W, T(0));
        for (int64_t oh = 0; oh < a.OH; ++oh) {
          const PoolSpan sh = span_h(a, oh);
          for (int64_t ow = 0; ow < a.OW; ++ow) {
            const PoolSpan sw = span_w(a, ow);
            const T g = dyp[(p * a.OH + oh) * a.OW + ow] / T(avg_divisor(sh, sw));
            for (int64_t h = sh.begin; h < sh.end; ++h)
              for (int64_t w = sw.begin; w < sw.end; ++w) plane[h * a.W + w] += g;
          }
        }
      }
    });
  });
}

}  // namespace detail
}  // namespace tg
