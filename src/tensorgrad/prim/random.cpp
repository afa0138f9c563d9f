// prim/random.cpp: the one process-wide random stream (Philox, kernels/philox.h): manual_seed, the
// draws and the generator state. Each draw reserves numel counters, so results do not depend on the
// device or the thread count. Also multinomial's draws from given uniforms (sample_categories), which
// each backend makes in one pass (Note [Drawing categories in one pass] in backend/cpu/random.cpp).
#include "tensorgrad/prim/prim.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
std::mutex g_rng_mutex;
uint64_t g_seed = 0x5eed;
uint64_t g_offset = 0;

/// The values an integer draw may give in dtype, and the name PyTorch's messages give its C++ type
/// (torch's check_from_to in ATen/native/DistributionTemplates.h): bool [0, 1], the integer types their
/// range, float16 [-65504, 65504]. float32, float64 and bfloat16 hold every int64 (rounded).
struct IntegerBounds {
  int64_t lo, hi;
  const char* cpp_name;
};
IntegerBounds integer_bounds(DType dtype) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  switch (dtype) {
    case kBool: return {0, 1, "bool"};
    case kUInt8: return {0, 255, "unsigned char"};
    case kInt8: return {-128, 127, "signed char"};
    case kInt32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), "int"};
    case kFloat16: return {-65504, 65504, "c10::Half"};
    case kBFloat16: return {kMin, kMax, "c10::BFloat16"};
    case kFloat32: return {kMin, kMax, "float"};
    case kFloat64: return {kMin, kMax, "double"};
    case kInt64: return {kMin, kMax, "long"};
  }
  tg::detail::unknown_dtype(dtype);
}

/// randint's arguments as PyTorch checks them: from < to, and from and to - 1 both values of dtype
/// (converting them wraps: torch.randint(0, 300, dtype=torch.uint8) raises instead of giving 44).
/// The distribution holds low and the count of values, so to = low + range in uint64_t (wrapping,
/// which gives back the high a caller passed to Distribution::integer, also when high <= low).
void check_integer_draw(const philox::Distribution& d, DType dtype) {
  if (d.kind != philox::Kind::Integer) return;
  const int64_t from = d.low, to = static_cast<int64_t>(static_cast<uint64_t>(d.low) + d.range);
  TG_CHECK(d.range != 0 && from < to, Error, "randint: expected 'from' to be less than 'to', but got from=", from,
           " >= to=", to);
  const IntegerBounds b = integer_bounds(dtype);
  TG_CHECK(from >= b.lo && from <= b.hi, Error, "randint: from is out of bounds for ", b.cpp_name, ": low=", from,
           " is outside ", dtype_name(dtype), "'s range [", b.lo, ", ", b.hi, "]");
  TG_CHECK(to - 1 >= b.lo && to - 1 <= b.hi, Error, "randint: to - 1 is out of bounds for ", b.cpp_name,
           ": high - 1 = ", to - 1, " is outside ", dtype_name(dtype), "'s range [", b.lo, ", ", b.hi, "]");
}
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  g_seed = seed;
  g_offset = 0;
}

RawTensor random(const philox::Distribution& dist, const Shape& shape, DType dtype, Device device, RngState* drawn_at) {
  check_integer_draw(dist, dtype);
  RawTensor t = RawTensor::empty(shape, dtype, device);
  uint64_t seed, offset;
  {
    std::lock_guard<std::mutex> lock(g_rng_mutex);
    seed = g_seed;
    offset = g_offset;
    g_offset += static_cast<uint64_t>(t.numel());
  }
  if (drawn_at != nullptr) *drawn_at = RngState{seed, offset};
  backend_for(device).random(dist, seed, offset, t);
  return t;
}

RawTensor random_at(const philox::Distribution& dist, const Shape& shape, DType dtype, Device device, RngState at) {
  check_integer_draw(dist, dtype);
  RawTensor t = RawTensor::empty(shape, dtype, device);
  backend_for(device).random(dist, at.seed, at.offset, t);
  return t;
}

RngState get_rng_state() {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  return RngState{g_seed, g_offset};
}

RngState reserve_random(uint64_t count) {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  const RngState at{g_seed, g_offset};
  g_offset += count;
  return at;
}

void set_rng_state(RngState state) {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  g_seed = state.seed;
  g_offset = state.offset;
}

// ---- multinomial's draws (ops/random.cpp)

void check_distribution(const RawTensor& probs, const char* op) {
  const RawTensor bad = binary(BinaryOp::Ne, probs, probs, op);   // NaN
  const RawTensor a = unary(UnaryOp::Abs, probs);
  const RawTensor inf = binary(BinaryOp::Eq, a, scalar_like(INFINITY, a), op);
  const RawTensor neg = binary(BinaryOp::Lt, probs, scalar_like(0.0, probs), op);
  const RawTensor count = add(add(sum(bad), sum(inf)), sum(neg));
  TG_CHECK(count.item() == 0, Error, op,
           ": probability tensor contains either `inf`, `nan` or element < 0 (shape ", shape_str(probs.shape()), ")");
  if (probs.numel() == 0) return;
  const RawTensor row_sums = reduce(ReduceOp::Sum, probs, {probs.dim() - 1}, false, op);
  TG_CHECK(reduce(ReduceOp::Min, row_sums, {}, false, op).item() > 0, Error, op,
           ": invalid multinomial distribution (sum of probabilities <= 0) in input of shape ", shape_str(probs.shape()));
}

RawTensor sample_categories(const RawTensor& probs, const RawTensor& u) {
  const char* op = "multinomial";
  check_defined(op, probs);
  check_floating(op, probs);
  const RawTensor rows = probs.dim() == 1 ? probs.unsqueeze(0) : probs;   // (R, C)
  TG_CHECK(rows.dim() == 2 && u.dim() == 2 && u.shape()[0] == rows.shape()[0] && rows.shape()[1] > 0 &&
               u.dtype() == kFloat64,
           ShapeError, op, ": expected probabilities (C > 0) or (R, C > 0) and float64 draws (R, S), got ",
           shape_str(probs.shape()), " and ", shape_str(u.shape()));
  check_same_device(op, probs, u);
  const int64_t R = rows.shape()[0], S = u.shape()[1];
  const RawTensor out = RawTensor::empty({R, S}, kInt64, probs.device());
  const RawTensor p = through_float32(rows).contiguous();
  const RawTensor status = RawTensor::empty({R}, kInt64, probs.device());
  TG_CHECK(backend_for(probs.device()).sample_categories(p, u.contiguous(), out, status), Error, op,
           ": draws with replacement are not implemented on ", probs.device());
  // the rows' statuses in one copy to the host (one synchronization on a device)
  const RawTensor codes = status.to(Device::cpu());
  const int64_t* c = codes.data<int64_t>();
  TG_CHECK(std::find(c, c + R, 1) == c + R, Error, op,
           ": probability tensor contains either `inf`, `nan` or element < 0 (shape ", shape_str(probs.shape()), ")");
  TG_CHECK(std::find(c, c + R, 2) == c + R, Error, op,
           ": invalid multinomial distribution (sum of probabilities <= 0) in input of shape ", shape_str(probs.shape()));
  return out;
}

}  // namespace prim
}  // namespace tg
