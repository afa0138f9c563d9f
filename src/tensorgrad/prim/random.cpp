// prim/random.cpp: the one process-wide random stream (Philox, kernels/philox.h): manual_seed, the
// draws and the generator state. Each draw reserves numel counters, so results do not depend on the
// device or the thread count.
#include "tensorgrad/prim/prim.h"

#include <mutex>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
std::mutex g_rng_mutex;
uint64_t g_seed = 0x5eed;
uint64_t g_offset = 0;
}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  g_seed = seed;
  g_offset = 0;
}

RawTensor random(const philox::Distribution& dist, const Shape& shape, DType dtype, Device device, RngState* drawn_at) {
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
  RawTensor t = RawTensor::empty(shape, dtype, device);
  backend_for(device).random(dist, at.seed, at.offset, t);
  return t;
}

RngState get_rng_state() {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  return RngState{g_seed, g_offset};
}

void set_rng_state(RngState state) {
  std::lock_guard<std::mutex> lock(g_rng_mutex);
  g_seed = state.seed;
  g_offset = state.offset;
}

}  // namespace prim
}  // namespace tg
