// backend/cuda/sort.cu: Backend::argsort on CUDA, through CUB's segmented radix sort (stable; one segment per
// row) rather than a sort of our own. The keys are a copy of x with every NaN made the positive quiet
// NaN, so that CUB's bit order puts NaN above +inf as the CPU does (Note [Sort order] in
// prim/sort.cpp); the values are the positions 0..N-1 of each row. The CPU twin is argsort in
// backend/cpu/sort.cpp. The emulator build compiles this file against the stand-in CUB of
// tests/cuda_emulator/include/cub/.
#include <cub/device/device_segmented_radix_sort.cuh>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tensorgrad/backend/cuda/kernels.cuh"

namespace tg {
namespace cuda {
namespace detail {
namespace {

/// The key CUB sorts for an element type: 16-bit floats widen to float (exact, same order), bool is
/// a 0/1 byte, the rest sort as themselves.
template <class T> struct SortKey { using type = T; };
template <> struct SortKey<Half> { using type = float; };
template <> struct SortKey<BFloat16> { using type = float; };
template <> struct SortKey<bool> { using type = uint8_t; };

/// keys[i] = x[i] as its sort key (every NaN the positive quiet NaN); pos[i] = i's position in its row.
/// Sets both.
template <class T, class K>
struct MakeKeys {
  const T* x;
  K* keys;
  int64_t* pos;
  int64_t N;
  __device__ void operator()(int64_t i) const {
    K k = static_cast<K>(x[i]);
    if constexpr (std::is_floating_point<K>::value) {
      if (k != k) k = K(NAN);
    }
    keys[i] = k;
    pos[i] = i % N;
  }
};

/// offsets[r] = r N for r in [0, R]: the row boundaries CUB reads (begin = offsets, end = offsets + 1).
struct RowOffsets {
  int* offsets;
  int64_t N;
  __device__ void operator()(int64_t r) const { offsets[r] = static_cast<int>(r * N); }
};

}  // namespace

void CudaBackend::argsort(const RawTensor& x, bool descending, const RawTensor& indices) {
  const int64_t n = x.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  const int64_t N = x.shape().back(), R = n / N;   // prim::sort checked n <= 2^31-1
  const Device dev = x.device();
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    using K = typename SortKey<T>::type;
    const DType key_dtype = std::is_same<K, float>::value && !std::is_same<T, float>::value ? kFloat32
                            : std::is_same<T, bool>::value ? kUInt8 : x.dtype();
    RawTensor keys_in = RawTensor::empty({n}, key_dtype, dev), keys_out = RawTensor::empty({n}, key_dtype, dev);
    RawTensor pos = RawTensor::empty({n}, kInt64, dev);
    RawTensor offsets = RawTensor::empty({R + 1}, kInt32, dev);
    launch_flat(ctx_.stream(), n, MakeKeys<T, K>{x.data<T>(), static_cast<K*>(keys_in.raw_data()), pos.data<int64_t>(), N});
    launch_flat(ctx_.stream(), R + 1, RowOffsets{offsets.data<int32_t>(), N});
    const K* kin = static_cast<const K*>(keys_in.raw_data());
    K* kout = static_cast<K*>(keys_out.raw_data());
    const int64_t* vin = pos.data<int64_t>();
    int64_t* vout = indices.data<int64_t>();
    const int* begin = offsets.data<int32_t>();
    auto run = [&](void* temp, std::size_t& bytes) {
      return descending ? cub::DeviceSegmentedRadixSort::SortPairsDescending(
                              temp, bytes, kin, kout, vin, vout, static_cast<int>(n), static_cast<int>(R), begin,
                              begin + 1, 0, int(sizeof(K) * 8), ctx_.stream())
                        : cub::DeviceSegmentedRadixSort::SortPairs(temp, bytes, kin, kout, vin, vout,
                                                                   static_cast<int>(n), static_cast<int>(R), begin,
                                                                   begin + 1, 0, int(sizeof(K) * 8), ctx_.stream());
    };
    std::size_t bytes = 0;
    TG_CUDA_CHECK(run(nullptr, bytes));   // the size query launches nothing
    RawTensor temp = RawTensor::empty({static_cast<int64_t>(bytes > 0 ? bytes : 1)}, kUInt8, dev);
    count_launch();
    TG_CUDA_CHECK(run(temp.raw_data(), bytes));
    TG_CUDA_CHECK(cudaGetLastError());
    // keys_in, keys_out, pos, offsets and temp go back to the caching allocator here: the next user of
    // those blocks is queued behind the sort on the one stream (Note [One stream per device]).
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
