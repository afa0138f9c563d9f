// quantization/dynamic.cpp: DynamicQuantizedLinear, quantize_dynamic and the int8 matrix product
// (oneDNN's u8s8s32 matmul under TENSORGRAD_HAVE_DNNL, a reference loop otherwise). The arithmetic:
// Note [Dynamic quantized Linear] in quantization/dynamic.h.
#include "tensorgrad/quantization/dynamic.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#if TENSORGRAD_HAVE_DNNL
#include "tensorgrad/backend/cpu/onednn.h"
#endif

#include "tensorgrad/core/parallel.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace quantization {

namespace {

constexpr double kActivationQMax = 127;   // uint8 with PyTorch's reduce_range: [0, 127]

void check_cpu(const char* op, const RawTensor& t) {
  TG_CHECK(t.device().is_cpu(), DeviceError, op, ": the int8 kernels run on the CPU, got a tensor on ",
           t.device().str());
}

/// f(begin, end) over [0, n), split over the CPU pool when n * cost is worth it.
template <class F>
void split(int64_t n, int64_t cost, const F& f) {
  const int threads = parallel::max_threads();
  if (threads <= 1 || n < 2 || n * cost < (int64_t(1) << 16)) {
    f(int64_t(0), n);
    return;
  }
  parallel::run(n, threads, f);
}

#if TENSORGRAD_HAVE_DNNL
// Products large enough to pay for it are cut into row blocks (batch >= the pool's size) or blocks of
// output columns (small batches) over tensorgrad's pool, one single-threaded oneDNN call each (Note
// [oneDNN threads] in backend/cpu/onednn.h). The int32 sums are exact, so any cut gives the same result.
constexpr int64_t kInt8ParallelMacs = int64_t(1) << 20;   // smaller products run on the calling thread
constexpr int64_t kColumnBlock = 64;                      // output columns per block when splitting O

/// acc[:, o0:o1] = x (N, I) times w[o0:o1] transposed, for rows [n0, n1): one single-threaded oneDNN
/// matmul on the calling thread; x, w and acc contiguous.
void onednn_block(const uint8_t* x, const int8_t* w, int32_t* acc, int64_t n0, int64_t n1, int64_t o0, int64_t o1,
                  int64_t I, int64_t O) {
  const detail::SingleThreadedOneDnn single_threaded;
  using dt = dnnl::memory::data_type;
  const int64_t n = n1 - n0, o = o1 - o0;
  const dnnl::memory::desc src_md({n, I}, dt::u8, {I, 1}), wei_md({I, o}, dt::s8, {1, I}),
      dst_md({n, o}, dt::s32, {O, 1});
  // oneDNN's primitive cache makes a repeated shape cheap to create again
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, dst_md), detail::onednn_engine());
  dnnl::memory src(src_md, detail::onednn_engine(), const_cast<uint8_t*>(x + n0 * I)),
      wei(wei_md, detail::onednn_engine(), const_cast<int8_t*>(w + o0 * I)), dst(dst_md, detail::onednn_engine(), acc + n0 * O + o0);
  dnnl::stream stream(detail::onednn_engine());
  dnnl::matmul(pd).execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
  stream.wait();
}
#endif

}  // namespace

bool has_onednn() { return TENSORGRAD_HAVE_DNNL != 0; }

RawTensor int8_matmul(const RawTensor& xq, const RawTensor& wq) {
  TG_CHECK(xq.dtype() == kUInt8 && wq.dtype() == kInt8, DTypeError, "int8_matmul: expected uint8 x and int8 w, got ",
           dtype_name(xq.dtype()), " and ", dtype_name(wq.dtype()));
  TG_CHECK(xq.dim() == 2 && wq.dim() == 2 && xq.shape()[1] == wq.shape()[1], ShapeError,
           "int8_matmul: x (N, I) and w (O, I) expected, got ", shape_str(xq.shape()), " and ", shape_str(wq.shape()));
  check_cpu("int8_matmul", xq);
  check_cpu("int8_matmul", wq);
  const int64_t N = xq.shape()[0], I = xq.shape()[1], O = wq.shape()[0];
  RawTensor acc = RawTensor::empty({N, O}, kInt32);
  if (N == 0 || O == 0) return acc;
  const RawTensor x = xq.contiguous(), w = wq.contiguous();
#if TENSORGRAD_HAVE_DNNL
  // See Note [oneDNN threads]
  const uint8_t* xp = x.data<uint8_t>();
  const int8_t* wp = w.data<int8_t>();
  int32_t* ap = acc.data<int32_t>();
  const int threads = parallel::max_threads();
  try {
    if (threads <= 1 || N * O * I < kInt8ParallelMacs) {
      onednn_block(xp, wp, ap, 0, N, 0, O, I, O);
    } else if (N >= threads) {
      parallel::run(N, threads, [&](int64_t b, int64_t e) { onednn_block(xp, wp, ap, b, e, 0, O, I, O); });
    } else {
      const int64_t blocks = (O + kColumnBlock - 1) / kColumnBlock;
      parallel::run(blocks, threads, [&](int64_t b, int64_t e) {
        onednn_block(xp, wp, ap, 0, N, b * kColumnBlock, std::min(O, e * kColumnBlock), I, O);
      });
    }
  } catch (const dnnl::error& e) {
    throw Error(detail::cat("int8_matmul: oneDNN failed (", e.what(), ") for x ", shape_str(xq.shape()), " and w ",
                            shape_str(wq.shape())));
  }
#else
  const uint8_t* xp = x.data<uint8_t>();
  const int8_t* wp = w.data<int8_t>();
  int32_t* ap = acc.data<int32_t>();
  split(N * O, I, [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) {
      const uint8_t* xr = xp + (k / O) * I;
      const int8_t* wr = wp + (k % O) * I;
      int32_t s = 0;
      for (int64_t i = 0; i < I; ++i) s += int32_t(xr[i]) * int32_t(wr[i]);
      ap[k] = s;
    }
  });
#endif
  return acc;
}

DynamicQuantizedLinear::DynamicQuantizedLinear(int64_t in_features, int64_t out_features, bool bias)
    : in_features_(in_features), out_features_(out_features) {
  TG_CHECK(in_features > 0 && out_features > 0, ShapeError,
           "DynamicQuantizedLinear: in_features and out_features must be positive, got ", in_features, " and ",
           out_features);
  weight_ = Tensor(prim::full({out_features, in_features}, 0, kInt8));
  scale_ = Tensor(prim::full({out_features}, 1, kFloat64));
  zero_point_ = Tensor(prim::full({out_features}, 0, kInt64));
  if (bias) bias_ = Tensor(prim::full({out_features}, 0, kFloat32));
  register_buffer("weight", weight_);
  register_buffer("weight_scale", scale_);
  register_buffer("weight_zero_point", zero_point_);
  if (bias) register_buffer("bias", bias_);
}

DynamicQuantizedLinear::DynamicQuantizedLinear(const nn::Linear& linear)
    : DynamicQuantizedLinear(linear.weight.shape()[1], linear.weight.shape()[0], linear.bias.defined()) {
  const RawTensor w = linear.weight.data();
  check_cpu("quantize_dynamic", w);
  // PyTorch's per-channel symmetric weight observer: scale = max(|min|, |max|) / ((127 - -128) / 2)
  // in float32, as the observer computes it
  const RawTensor amax = prim::reduce(ReduceOp::Max, prim::unary(UnaryOp::Abs, w.to(kFloat32)), {1}, false,
                                   "quantize_dynamic");
  const double eps = std::numeric_limits<float>::epsilon();
  RawTensor scale = prim::div(amax, prim::scalar_like(127.5, amax));
  scale = prim::where(prim::binary(BinaryOp::Gt, scale, prim::scalar_like(eps, scale), "quantize_dynamic"), scale,
                      prim::scalar_like(eps, scale));
  scale = scale.to(kFloat64);
  const QuantizedTensor q =
      quantize_per_channel(Tensor(w), Tensor(scale), Tensor(prim::full({out_features_}, 0, kInt64)), 0, kInt8);
  prim::copy_(weight_.data(), q.int_repr().data());
  prim::copy_(scale_.data(), scale);
  if (linear.bias.defined()) prim::copy_(bias_.data(), linear.bias.data());
}

namespace internal {

RawTensor WeightSums::get(const RawTensor& w) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sums_.defined() || of_ != w.raw_data() || version_ != w.version()) {
    sums_ = prim::reduce(ReduceOp::Sum, w, {1}, false, "int8 Linear");   // int64 (O)
    of_ = w.raw_data();
    version_ = w.version();
  }
  return sums_;
}

RawTensor int8_linear_output(const RawTensor& acc, double sx, int64_t zx, const RawTensor& colsum, const RawTensor& w_scale,
                          const RawTensor& bias) {
  const int64_t N = acc.shape()[0], O = acc.shape()[1];
  RawTensor y = RawTensor::empty({N, O}, kFloat32);   // set, one pass over the output
  const RawTensor s64 = w_scale.contiguous();
  std::vector<float> row_scale(static_cast<std::size_t>(O));
  std::vector<int32_t> row_shift(static_cast<std::size_t>(O));
  const double* sp = s64.data<double>();
  const int64_t* cp = colsum.data<int64_t>();
  for (int64_t o = 0; o < O; ++o) {
    row_scale[o] = static_cast<float>(sx * sp[o]);
    row_shift[o] = static_cast<int32_t>(zx * cp[o]);   // |zx colsum| <= 255 * 128 I: int32 for I < 2^16
  }
  const RawTensor b = bias.defined() ? bias.contiguous() : RawTensor();
  const float* bp = b.defined() ? b.data<float>() : nullptr;
  const int32_t* ap = acc.data<int32_t>();
  float* yp = y.data<float>();
  split(N, O, [&](int64_t lo, int64_t hi) {
    for (int64_t n = lo; n < hi; ++n)
      for (int64_t o = 0; o < O; ++o)
        yp[n * O + o] = static_cast<float>(ap[n * O + o] - row_shift[o]) * row_scale[o] + (bp ? bp[o] : 0.0f);
  });
  return y;
}

}  // namespace internal

Tensor DynamicQuantizedLinear::forward(const Tensor& input) {
  TG_CHECK(input.defined() && input.dim() >= 1 && input.shape().back() == in_features_, ShapeError,
           "DynamicQuantizedLinear: expected input (..., ", in_features_, "), got ",
           input.defined() ? shape_str(input.shape()) : "undefined");
  check_cpu("DynamicQuantizedLinear", input.data());
  prim::check_floating("DynamicQuantizedLinear", input.data());
  const int64_t N = input.numel() / in_features_;
  const RawTensor x = input.data().to(kFloat32).contiguous().reshape({N, in_features_});
  Shape out_shape = input.shape();
  out_shape.back() = out_features_;
  // the batch's range, widened to include 0; PyTorch's ChooseQuantizationParams with reduce_range
  float lo = 0, hi = 0;
  if (N > 0) {
    lo = std::min(0.0f, static_cast<float>(Tensor(prim::reduce(ReduceOp::Min, x, {}, false, "DynamicQuantizedLinear")).item()));
    hi = std::max(0.0f, static_cast<float>(Tensor(prim::reduce(ReduceOp::Max, x, {}, false, "DynamicQuantizedLinear")).item()));
  }
  TG_CHECK(std::isfinite(lo) && std::isfinite(hi), Error, "DynamicQuantizedLinear: the input holds inf or NaN");
  const double qmin = 0, qmax = kActivationQMax;
  double sx = (static_cast<double>(hi) - lo) / (qmax - qmin);
  if (static_cast<float>(sx) == 0.0f || std::isinf(1.0f / static_cast<float>(sx))) sx = 0.1;
  const double z_from_min = qmin - lo / sx, z_from_max = qmax - hi / sx;
  const double z0 = std::abs(qmin) - std::abs(lo / sx) < std::abs(qmax) - std::abs(hi / sx) ? z_from_min : z_from_max;
  const int64_t zx = z0 < qmin ? int64_t(qmin) : z0 > qmax ? int64_t(qmax) : static_cast<int64_t>(std::nearbyint(z0));
  // stored as uint8 with the dtype's clamp to [0, 255], as PyTorch's quint8 input
  const QuantizedTensor xq = quantize_per_tensor(Tensor(x), sx, zx, kUInt8);
  const RawTensor acc = int8_matmul(xq.int_repr().data(), weight_.data());   // (N, O) int32
  // y = (acc - zx colsum[o]) sx sw[o] + bias[o], in float32
  const RawTensor y = internal::int8_linear_output(acc, sx, zx, colsum_.get(weight_.data()), scale_.data(),
                                              bias_.defined() ? bias_.data() : RawTensor());
  return Tensor(y.reshape(out_shape));
}

std::string DynamicQuantizedLinear::name() const {
  std::ostringstream os;
  os << "DynamicQuantizedLinear(in_features=" << in_features_ << ", out_features=" << out_features_
     << ", dtype=qint8, qscheme=per_channel_affine)";
  return os.str();
}

std::unique_ptr<nn::Module> DynamicQuantizedLinear::new_instance() const {
  return std::make_unique<DynamicQuantizedLinear>(in_features_, out_features_, bias_.defined());
}

QuantizedTensor DynamicQuantizedLinear::weight() const {
  return QuantizedTensor::per_channel(weight_, scale_, zero_point_, 0);
}

namespace internal {

std::unique_ptr<nn::Module> rebuild(const nn::Module& model, const std::function<bool(const nn::Module&)>& wants,
                                    const std::function<std::unique_ptr<nn::Module>(const nn::Module&)>& replace,
                                    const std::string& op, const std::string& what) {
  // A work list instead of recursion over nested Sequentials: (source, the Sequential it goes into)
  auto convert_leaf = [&](const nn::Module& m) -> std::unique_ptr<nn::Module> {
    if (wants(m)) return replace(m);
    // a module whose own forward calls a wanted member cannot be rebuilt around a replacement
    std::vector<std::pair<std::string, const nn::Module*>> stack;
    for (const auto& c : m.children()) stack.emplace_back(c.first, c.second);
    while (!stack.empty()) {
      auto top = stack.back();
      stack.pop_back();
      TG_CHECK(!wants(*top.second), Error, op, ": the ", what, " '", top.first, "' is inside ", m.name(),
               ", whose forward calls it directly; put the ", what, " layers in a Sequential to quantize them");
      for (const auto& c : top.second->children()) stack.emplace_back(top.first + "." + c.first, c.second);
    }
    return m.clone();
  };
  const auto* top_seq = dynamic_cast<const nn::Sequential*>(&model);
  if (top_seq == nullptr) return convert_leaf(model);
  auto root = std::make_unique<nn::Sequential>();
  std::vector<std::pair<const nn::Sequential*, nn::Sequential*>> work{{top_seq, root.get()}};
  while (!work.empty()) {
    auto item = work.back();
    work.pop_back();
    for (const auto& c : item.first->children()) {
      if (const auto* sub = dynamic_cast<const nn::Sequential*>(c.second)) {
        auto fresh = std::make_unique<nn::Sequential>();
        work.emplace_back(sub, fresh.get());
        item.second->push_back(c.first, std::move(fresh));
      } else {
        item.second->push_back(c.first, convert_leaf(*c.second));
      }
    }
  }
  root->train(model.is_training());
  return root;
}

}  // namespace internal

std::unique_ptr<nn::Module> quantize_dynamic(const nn::Module& model) {
  return internal::rebuild(
      model, [](const nn::Module& m) { return dynamic_cast<const nn::Linear*>(&m) != nullptr; },
      [](const nn::Module& m) { return std::make_unique<DynamicQuantizedLinear>(dynamic_cast<const nn::Linear&>(m)); },
      "quantize_dynamic", "Linear");
}

}  // namespace quantization
}  // namespace tg
