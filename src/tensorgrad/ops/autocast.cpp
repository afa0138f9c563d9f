// ops/autocast.cpp: the thread-local autocast state and the casts the ops ask for.
#include "tensorgrad/ops/autocast.h"

#include <unordered_map>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace amp {

// Note [Autocast op lists]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's lists (torch.amp, "CUDA Ops that can autocast to float16" and the CPU's bfloat16 list),
// for the ops tensorgrad has:
// - lower precision (the region's float16 or bfloat16): matmul, linear, and
//   scaled_dot_product_attention where it runs fused (CUDA: Note [Fused attention]; composed, it casts
//   per op). Their floating inputs are cast before the op; outputs are in the lower precision. On
//   the CPU, where such products run through float32, float32 operands of matmul and linear are
//   rounded to the lower precision instead of cast, with the same bits (Note [Autocast products
//   through float32] in ops/linalg.cpp).
// - float32: softmax, log_softmax, cross_entropy, mse_loss, sum, mean, exp, log, pow. A
//   lower-precision input is cast up first; their outputs are float32.
// - every other op runs in its inputs' dtype (elementwise ops follow type promotion: a float32
//   bias added to a bfloat16 product gives float32, as in PyTorch).
// The casts are ordinary differentiable `to` ops, so gradients flow back in each input's dtype. A
// leaf that requires grad (a parameter) is cast once per outermost region and the cast reused while
// the leaf's version is unchanged; the cache is dropped when the thread's outermost region ends.
// Autocast applies to ops called on its own thread only, and not to backward (which runs in the
// dtypes the forward chose).
namespace {
struct State {
  bool enabled[2] = {false, false};                          // by DeviceType
  DType dtype[2] = {kBFloat16, kFloat16};                    // PyTorch's defaults: CPU bfloat16, CUDA float16
  int depth = 0;                                             // guards alive on this thread
  struct Cached {
    Tensor cast;
    uint64_t version;
  };
  std::unordered_map<const TensorImpl*, Cached> cache;     // parameters' casts in this region
  struct Rounded {
    RawTensor value;
    uint64_t version;
    DType dtype;
  };
  std::unordered_map<const TensorImpl*, Rounded> rounded;  // parameters' roundings in this region
};
thread_local State t_state;

int slot(DeviceType t) { return t == DeviceType::CUDA ? 1 : 0; }
}  // namespace

AutocastGuard::AutocastGuard(Device device, DType dtype, bool enabled) : type_(device.type()) {
  TG_CHECK(is_low_precision(dtype), DTypeError,
           "AutocastGuard: the autocast dtype must be float16 or bfloat16, got ", dtype_name(dtype));
  State& s = t_state;
  prev_enabled_ = s.enabled[slot(type_)];
  prev_dtype_ = s.dtype[slot(type_)];
  s.enabled[slot(type_)] = enabled;
  s.dtype[slot(type_)] = dtype;
  ++s.depth;
}

AutocastGuard::AutocastGuard(Device device)
    : AutocastGuard(device, device.is_cuda() ? kFloat16 : kBFloat16, true) {}

AutocastGuard::~AutocastGuard() {
  State& s = t_state;
  s.enabled[slot(type_)] = prev_enabled_;
  s.dtype[slot(type_)] = prev_dtype_;
  if (--s.depth == 0) {
    s.cache.clear();
    s.rounded.clear();
  }
}

bool is_autocast_enabled(DeviceType type) { return t_state.enabled[slot(type)]; }
DType get_autocast_dtype(DeviceType type) { return t_state.dtype[slot(type)]; }

bool detail::active_for(const Tensor& x) { return x.defined() && t_state.enabled[slot(x.device().type())]; }

Tensor detail::cast_lower(const Tensor& x) {
  if (!active_for(x) || !is_floating(x.dtype())) return x;
  const DType want = t_state.dtype[slot(x.device().type())];
  if (x.dtype() == want) return x;
  if (!(x.is_leaf() && x.requires_grad() && GradMode::is_enabled())) return x.to(want);
  auto& cache = t_state.cache;
  const auto it = cache.find(x.impl().get());
  const uint64_t version = x.data().version();
  if (it != cache.end() && it->second.version == version && it->second.cast.dtype() == want) return it->second.cast;
  Tensor cast = x.to(want);
  cache[x.impl().get()] = {cast, version};
  return cast;
}

bool detail::product_through_float32(const Tensor& a, const Tensor& b, const Tensor& c) {
  if (!active_for(a) || !b.defined()) return false;
  const DType want = lower_dtype(a);
  if (!prim::products_through_float32(want, a.device())) return false;
  bool any_float32 = false;
  for (const Tensor* v : {&a, &b, &c}) {
    if (!v->defined()) continue;   // only c can be: the bias is optional
    if (v->device() != a.device() || (v->dtype() != kFloat32 && v->dtype() != want)) return false;
    any_float32 = any_float32 || v->dtype() == kFloat32;
  }
  return any_float32;
}

DType detail::lower_dtype(const Tensor& x) { return t_state.dtype[slot(x.device().type())]; }

RawTensor detail::rounded_operand(const Tensor& x) {
  const DType want = lower_dtype(x);
  if (x.dtype() != kFloat32) return x.data().to(kFloat32);   // the region's dtype: exact
  if (!(x.is_leaf() && x.requires_grad() && GradMode::is_enabled())) return prim::round_to_precision(x.data(), want);
  auto& rounded = t_state.rounded;
  const auto it = rounded.find(x.impl().get());
  const uint64_t version = x.data().version();
  if (it != rounded.end() && it->second.version == version && it->second.dtype == want) return it->second.value;
  RawTensor value = prim::round_to_precision(x.data(), want);
  rounded[x.impl().get()] = {value, version, want};
  return value;
}

Tensor detail::cast_float32(const Tensor& x) {
  if (!active_for(x) || !is_low_precision(x.dtype())) return x;
  return x.to(kFloat32);
}

}  // namespace amp
}  // namespace tg
