// tests/cuda_emulator/include/cub/device/device_segmented_radix_sort.cuh: the CUDA emulator's stand-in
// for CUB's cub::DeviceSegmentedRadixSort (SortPairs, SortPairsDescending), which src/tensorgrad/cuda/
// sort.cu calls. It keeps CUB's contract: a size query when d_temp_storage is null, a stable sort of
// each segment [begin[s], end[s]) by CUB's radix order (unsigned bits; the sign bit flipped for signed
// integers; for floats all bits flipped when negative, the sign bit otherwise, -0 and +0 equal; NaN
// by its bits, so a positive NaN is above +inf), descending as the inverted order, queued on the
// stream. Every pointer must lie in device memory of the stream's device (what a GPU would fault on).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda_runtime_api.h"

namespace tg_emu {   // tests/cuda_emulator/runtime.cpp
std::recursive_mutex& api_mutex();
CUstream_st* stream_of(cudaStream_t stream);
int device_of(const CUstream_st* stream);
void submit(CUstream_st* stream, std::function<void()> op);
bool in_device_memory(const void* p, std::size_t bytes, int device);
void report(const std::string& what);

namespace cub_detail {

/// CUB's radix key of v: ascending order of the result is CUB's ascending order of the keys.
template <class K>
uint64_t radix_bits(K v) {
  if constexpr (std::is_floating_point<K>::value) {
    if (v == K(0)) v = K(0);   // -0 sorts as +0
    using U = std::conditional_t<sizeof(K) == 4, uint32_t, uint64_t>;
    U u;
    std::memcpy(&u, &v, sizeof u);
    const U sign = U(1) << (sizeof(U) * 8 - 1);
    return (u & sign) ? U(~u) : U(u ^ sign);
  } else if constexpr (std::is_signed<K>::value) {
    using U = std::make_unsigned_t<K>;
    return static_cast<U>(static_cast<U>(v) ^ (U(1) << (sizeof(U) * 8 - 1)));
  } else {
    return static_cast<uint64_t>(v);
  }
}

template <class K, class V>
cudaError_t sort_pairs(void* temp, std::size_t& temp_bytes, const K* keys_in, K* keys_out, const V* values_in,
                       V* values_out, int num_items, int num_segments, const int* begin, const int* end,
                       cudaStream_t stream, bool descending) {
  if (temp == nullptr) {   // the size query
    temp_bytes = 64;
    return cudaSuccess;
  }
  std::lock_guard<std::recursive_mutex> lock(api_mutex());
  CUstream_st* s = stream_of(stream);
  if (s == nullptr) {
    report("cub::DeviceSegmentedRadixSort: an unknown stream");
    return cudaErrorInvalidResourceHandle;
  }
  const int dev = device_of(s);
  const std::size_t n = static_cast<std::size_t>(num_items > 0 ? num_items : 0);
  const std::size_t segs = static_cast<std::size_t>(num_segments > 0 ? num_segments : 0);
  const bool ok = in_device_memory(temp, temp_bytes, dev) && (n == 0 || (in_device_memory(keys_in, n * sizeof(K), dev) &&
                  in_device_memory(keys_out, n * sizeof(K), dev) && in_device_memory(values_in, n * sizeof(V), dev) &&
                  in_device_memory(values_out, n * sizeof(V), dev))) &&
                  (segs == 0 || (in_device_memory(begin, segs * sizeof(int), dev) &&
                                 in_device_memory(end, segs * sizeof(int), dev)));
  if (!ok || temp_bytes < 64) {
    report("cub::DeviceSegmentedRadixSort: a buffer runs outside device memory of cuda:" + std::to_string(dev));
    return cudaErrorInvalidValue;
  }
  submit(s, [=] {
    std::vector<std::size_t> order;
    for (std::size_t seg = 0; seg < segs; ++seg) {
      const int b = begin[seg], e = end[seg];
      if (b < 0 || e > num_items || e <= b) continue;
      order.resize(static_cast<std::size_t>(e - b));
      std::iota(order.begin(), order.end(), static_cast<std::size_t>(b));
      std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
        const uint64_t a = radix_bits(keys_in[i]), c = radix_bits(keys_in[j]);
        return descending ? a > c : a < c;
      });
      for (std::size_t k = 0; k < order.size(); ++k) {
        keys_out[static_cast<std::size_t>(b) + k] = keys_in[order[k]];
        values_out[static_cast<std::size_t>(b) + k] = values_in[order[k]];
      }
    }
  });
  return cudaSuccess;
}

}  // namespace cub_detail
}  // namespace tg_emu

namespace cub {

/// The stand-in of cub::DeviceSegmentedRadixSort (see the top of this file).
struct DeviceSegmentedRadixSort {
  template <class K, class V>
  static cudaError_t SortPairs(void* temp, std::size_t& temp_bytes, const K* keys_in, K* keys_out, const V* values_in,
                               V* values_out, int num_items, int num_segments, const int* begin, const int* end,
                               int /*begin_bit*/ = 0, int /*end_bit*/ = sizeof(K) * 8, cudaStream_t stream = nullptr) {
    return tg_emu::cub_detail::sort_pairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, num_items,
                                          num_segments, begin, end, stream, false);
  }
  template <class K, class V>
  static cudaError_t SortPairsDescending(void* temp, std::size_t& temp_bytes, const K* keys_in, K* keys_out,
                                         const V* values_in, V* values_out, int num_items, int num_segments,
                                         const int* begin, const int* end, int /*begin_bit*/ = 0,
                                         int /*end_bit*/ = sizeof(K) * 8, cudaStream_t stream = nullptr) {
    return tg_emu::cub_detail::sort_pairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, num_items,
                                          num_segments, begin, end, stream, true);
  }
};

}  // namespace cub
