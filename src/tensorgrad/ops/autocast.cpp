// ops/autocast.cpp: the thread-local autocast state, the op lists and the casts the ops ask for.
#include "tensorgrad/ops/autocast.h"

#include <algorithm>
#include <unordered_map>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace amp {

// Note [Autocast op lists]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's autocast lists (torch 2.x, aten/src/ATen/autocast_mode.cpp; the CUDA ones are those of
// torch.amp's documentation), for the ops tensorgrad has, as torch 2.15 applies them
// (tests/data/autocast_lists.py prints what it gives on each device). The CPU's and CUDA's differ:
//
//   op                                                   CPU       CUDA
//   matmul, linear, conv1d, conv2d,                      lower     lower
//   scaled_dot_product_attention
//   cross_entropy, mse_loss, nll_loss, l1_loss,          float32   float32
//   smooth_l1_loss, huber_loss, kl_div,
//   binary_cross_entropy_with_logits,
//   margin_ranking_loss, cosine_embedding_loss,
//   hinge_embedding_loss, triplet_margin_loss,
//   multi_margin_loss, multilabel_margin_loss,
//   poisson_nll_loss, soft_margin_loss
//   binary_cross_entropy                                 float32   refused (ops/loss.cpp)
//   ctc_loss                                             float32   -
//   gaussian_nll_loss, multilabel_soft_margin_loss,      -         float32 (*)
//   triplet_margin_with_distance_loss (*)
//   softmax, log_softmax, sum, exp, log, pow,            -         float32
//   layer_norm, group_norm, softplus
//   every other op (mean, batch_norm, gelu, ...)         -         -
//
// lower: the op's eligible inputs are cast to the region's float16 or bfloat16, and its output is in
// it. float32: they are cast to float32, and so is the output. -: the op runs in its inputs' dtypes,
// and elementwise ops follow type promotion (a float32 bias added to a bfloat16 product gives float32;
// softmax, exp or sum of a bfloat16 tensor on the CPU is bfloat16, as in PyTorch). Eligible are
// float32, float16 and bfloat16 inputs (a float16 input of matmul in a bfloat16 region is cast to
// bfloat16): a float64 input is never cast (a float64 matmul or conv2d under autocast runs in
// float64), nor an integer one, as PyTorch's is_autocast_eligible says. The
// table is kPolicy below; ops ask for it through detail::cast(op, x).
// On the CPU, where products in the region's dtype run through float32, matmul and linear round
// float32 operands to the lower precision instead of casting them, with the same bits (Note [Autocast
// products through float32] in ops/linalg.cpp). scaled_dot_product_attention casts q, k, v and a
// float mask where it runs fused (CUDA: Note [Fused attention]); composed, each of its ops casts by its
// own policy, which gives the listed output dtype too.
// (*) PyTorch composes these three in Python from listed ops (log and pow, sum, pairwise_distance's
// norm), which run in float32 under CUDA autocast and in the inputs' dtype on the CPU; tensorgrad's
// compositions cast their floating inputs to float32 on entry under CUDA autocast instead, which gives
// the same output dtype (with the subtractions before the listed ops in float32 too, where PyTorch
// does them in the lower precision). triplet_margin_with_distance_loss casts only with its default
// distance: with a distance_function, that function's ops decide, as in PyTorch.
// The casts are differentiable `to` ops, so gradients flow back in each input's dtype. Autocast applies
// to ops called on its own thread only, and not to backward (which runs in the dtypes the forward
// chose).
//
// Note [Autocast cast cache]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A float32 leaf that requires grad (a parameter) is converted once per region, as PyTorch's autocast
// caches parameters' casts: its lower-precision copy (the cast path) and its float32 copy rounded to
// that precision (Note [Autocast products through float32]) stay in a per-thread cache until the
// thread's outermost region ends. Three rules keep the cache from changing any result:
// - An entry holds a std::weak_ptr to the parameter's TensorImpl and one to the Storage its copies were
//   made from, with that value's offset, shape, strides and version. A lookup hits only when both are
//   the same objects (owner-equal: an expired weak_ptr still names its own control block, so a tensor
//   allocated at a dead parameter's address never matches it) and the value is unchanged (an in-place
//   write or set_data makes a new copy). Entries of dead parameters are dropped when the cache has
//   doubled since the last sweep. (PyTorch keys by the TensorImpl pointer with a weak reference that
//   keeps the address from being reused, and does not check the version.)
// - The cache holds values, not graph. Each use of a cached copy records its own `to` node from the
//   parameter to the shared copy; that node saves nothing and ends at the parameter, as the uncached
//   cast does. So a backward frees nothing that another use needs: several backwards in one region
//   (gradient accumulation, or two losses' graphs each backpropagated) all reach the parameter, and a
//   checkpointed block (tg::checkpoint) records the same edges, to the parameter, in its forward and in
//   its recomputation, whether its backward runs inside the region or after it (Note [Partial
//   backward]). PyTorch shares one cast node among the uses, which its engine may run again because
//   ToCopyBackward saves nothing; ours releases a node's rule after a backward without retain_graph,
//   and a node made in a checkpointed forward and handed to its recomputation would be inside the
//   forward's part of the graph and outside the recomputation's.
// - Since the node is made per use, a copy cached under NoGradGuard serves a later use with grad on,
//   which still records its node.
// The price: a parameter used k times in a region gets k lower-precision gradients, each cast to
// float32 and summed in float32, where PyTorch sums them in the lower precision and casts once (more
// accurate, not the same bits; with one use per region the bits are PyTorch's). The products through
// float32 sum a parameter's gradients in float32 the same way.
namespace {
using detail::AutocastOp;
using detail::CastPolicy;

constexpr int kOps = static_cast<int>(AutocastOp::TripletMarginWithDistanceLoss) + 1;
// kPolicy[op] = {CPU, CUDA}: Note [Autocast op lists]
constexpr CastPolicy kPolicy[kOps][2] = {
    {CastPolicy::Lower, CastPolicy::Lower},       // Matmul
    {CastPolicy::Lower, CastPolicy::Lower},       // Linear
    {CastPolicy::Lower, CastPolicy::Lower},       // Conv1d
    {CastPolicy::Lower, CastPolicy::Lower},       // Conv2d
    {CastPolicy::Lower, CastPolicy::Lower},       // ScaledDotProductAttention
    {CastPolicy::None, CastPolicy::Float32},      // Softmax
    {CastPolicy::None, CastPolicy::Float32},      // LogSoftmax
    {CastPolicy::Float32, CastPolicy::Float32},   // CrossEntropy
    {CastPolicy::Float32, CastPolicy::Float32},   // MseLoss
    {CastPolicy::None, CastPolicy::Float32},      // Sum
    {CastPolicy::None, CastPolicy::Float32},      // Exp
    {CastPolicy::None, CastPolicy::Float32},      // Log
    {CastPolicy::None, CastPolicy::Float32},      // Pow
    {CastPolicy::None, CastPolicy::Float32},      // LayerNorm
    {CastPolicy::None, CastPolicy::Float32},      // GroupNorm
    {CastPolicy::None, CastPolicy::Float32},      // Softplus
    {CastPolicy::Lower, CastPolicy::Lower},       // ConvTranspose2d
    {CastPolicy::Float32, CastPolicy::Float32},   // NllLoss
    {CastPolicy::Float32, CastPolicy::None},      // BinaryCrossEntropy: CUDA refuses it (ops/loss.cpp)
    {CastPolicy::Float32, CastPolicy::Float32},   // BinaryCrossEntropyWithLogits
    {CastPolicy::Float32, CastPolicy::Float32},   // L1Loss
    {CastPolicy::Float32, CastPolicy::Float32},   // SmoothL1Loss
    {CastPolicy::Float32, CastPolicy::Float32},   // HuberLoss
    {CastPolicy::Float32, CastPolicy::Float32},   // KlDiv
    {CastPolicy::Float32, CastPolicy::Float32},   // MarginRankingLoss
    {CastPolicy::Float32, CastPolicy::Float32},   // CosineEmbeddingLoss
    {CastPolicy::Float32, CastPolicy::Float32},   // HingeEmbeddingLoss
    {CastPolicy::Float32, CastPolicy::Float32},   // TripletMarginLoss
    {CastPolicy::Float32, CastPolicy::Float32},   // MultiMarginLoss
    {CastPolicy::Float32, CastPolicy::Float32},   // PoissonNllLoss
    {CastPolicy::Float32, CastPolicy::Float32},   // SoftMarginLoss
    {CastPolicy::Float32, CastPolicy::Float32},   // MultilabelMarginLoss
    {CastPolicy::Float32, CastPolicy::None},      // CtcLoss: CUDA's list does not have it
    {CastPolicy::None, CastPolicy::Float32},      // GaussianNllLoss: PyTorch's composition, float32 on CUDA
    {CastPolicy::None, CastPolicy::Float32},      // MultilabelSoftMarginLoss: likewise
    {CastPolicy::None, CastPolicy::Float32},      // TripletMarginWithDistanceLoss: the default distance
};

/// One parameter's copies in the region: Note [Autocast cast cache].
struct Cached {
  std::weak_ptr<TensorImpl> source;   // the parameter
  std::weak_ptr<Storage> storage;     // the value the copies were made from
  int64_t offset = 0;
  Shape shape, strides;
  uint64_t version = 0;
  RawTensor lower;                    // the cast: the value in lower.dtype()
  RawTensor rounded;                  // float32, rounded to rounded_to's precision
  DType rounded_to = kFloat32;
};

struct State {
  bool enabled[2] = {false, false};            // by DeviceType
  DType dtype[2] = {kBFloat16, kFloat16};      // PyTorch's defaults: CPU bfloat16, CUDA float16
  int depth = 0;                               // guards alive on this thread
  std::unordered_map<const TensorImpl*, Cached> cache;   // parameters' copies in this region
  std::size_t sweep_at = 64;                   // the cache size at which dead entries are swept
};
thread_local State t_state;

int slot(DeviceType t) { return t == DeviceType::CUDA ? 1 : 0; }

template <class A, class B>
bool same_owner(const A& a, const B& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

/// Whether c's copies were made from x as it is now.
bool current(const Cached& c, const Tensor& x) {
  const RawTensor& v = x.data();
  return same_owner(c.source, x.impl()) && same_owner(c.storage, v.storage()) && c.offset == v.offset() &&
         c.shape == v.shape() && c.strides == v.strides() && c.version == v.version();
}

/// Whether x's copies are cached: a float32 leaf that requires grad, as PyTorch's cache takes.
bool cacheable(const Tensor& x) { return x.is_leaf() && x.requires_grad() && x.dtype() == kFloat32; }

/// x's entry, emptied when it holds copies of another tensor or of another value of x.
Cached& entry(const Tensor& x) {
  State& s = t_state;
  auto it = s.cache.find(x.impl().get());
  if (it != s.cache.end() && current(it->second, x)) return it->second;
  if (it == s.cache.end() && s.cache.size() >= s.sweep_at) {   // drop dead parameters' entries
    for (auto e = s.cache.begin(); e != s.cache.end();)
      e = e->second.source.expired() ? s.cache.erase(e) : std::next(e);
    s.sweep_at = std::max<std::size_t>(64, 2 * s.cache.size());
  }
  Cached& c = s.cache[x.impl().get()];
  const RawTensor& v = x.data();
  c = Cached();
  c.source = x.impl();
  c.storage = v.storage();
  c.offset = v.offset();
  c.shape = v.shape();
  c.strides = v.strides();
  c.version = v.version();
  return c;
}

/// One use of x's cached copy `value`: recorded as a cast of x, its own node (Note [Autocast cast cache]).
Tensor use_of(const Tensor& x, const RawTensor& value) {
  const DType from = x.dtype();
  return record("to", value, {x}, [from](const auto& grad, auto& g) {
    g.set(0, grad.to(from));   // cast back
  });
}

/// Whether autocast may cast x: on for x's device, and x float32, float16 or bfloat16.
bool eligible(const Tensor& x) {
  return detail::active_for(x) && (x.dtype() == kFloat32 || is_low_precision(x.dtype()));
}

/// x cast to the region's lower precision when eligible; parameters' casts come from the cache.
Tensor cast_lower(const Tensor& x) {
  if (!eligible(x)) return x;
  const DType want = detail::lower_dtype(x);
  if (x.dtype() == want) return x;
  if (!cacheable(x)) return x.to(want);
  Cached& c = entry(x);
  if (!c.lower.defined() || c.lower.dtype() != want) c.lower = x.data().to(want);
  return use_of(x, c.lower);
}

/// x cast to float32 when eligible.
Tensor cast_float32(const Tensor& x) { return eligible(x) ? x.to(kFloat32) : x; }
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
    s.sweep_at = 64;
  }
}

bool is_autocast_enabled(DeviceType type) { return t_state.enabled[slot(type)]; }
DType get_autocast_dtype(DeviceType type) { return t_state.dtype[slot(type)]; }

detail::CastPolicy detail::policy(AutocastOp op, DeviceType type) {
  return kPolicy[static_cast<int>(op)][slot(type)];
}

Tensor detail::cast(AutocastOp op, const Tensor& x) {
  if (!active_for(x)) return x;
  switch (policy(op, x.device().type())) {
    case CastPolicy::Lower: return cast_lower(x);
    case CastPolicy::Float32: return cast_float32(x);
    case CastPolicy::None: break;
  }
  return x;
}

bool detail::active_for(const Tensor& x) {
  return x.defined() && t_state.enabled[slot(x.device().type())] && !tg::detail::in_backward_rule();
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
  if (!cacheable(x)) return prim::round_to_precision(x.data(), want);
  Cached& c = entry(x);
  if (!c.rounded.defined() || c.rounded_to != want) {
    c.rounded = prim::round_to_precision(x.data(), want);
    c.rounded_to = want;
  }
  return c.rounded;
}

}  // namespace amp
}  // namespace tg
