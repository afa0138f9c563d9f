// backend/cuda/launch.cuh: TG_LAUNCH, the one way backend/cuda/*.cu launches a kernel. Under nvcc it is the
// <<<grid, block, smem, stream>>> syntax; in the CUDA emulator build (TENSORGRAD_CUDA_EMULATE,
// tests/cuda_emulator/) the stand-in cuda_runtime.h provides the fiber launcher instead.
// Internal to backend/cuda/.
#pragma once
#include <cuda_runtime.h>

// Note [One launch macro]
// ~~~~~~~~~~~~~~~~~~~~~~~
// TG_LAUNCH(grid, block, smem, stream, kernel)(args...) is kernel<<<grid, block, smem, stream>>>(args...).
// The kernel comes last so that a template-id with commas (k<T, F, V>) needs no parentheses. Every
// launch is followed by TG_CUDA_CHECK(cudaGetLastError()) as on a GPU; the emulator reports a bad
// configuration (block > 1024 threads, grid.y or grid.z > 65535) there, as the runtime does. Each
// launch also counts one unit of stream work (tg::cuda::detail::launch_count()).
namespace tg {
namespace cuda {
namespace detail {
/// Adds one to launch_count(): called for every kernel launch, cuBLAS call and stream memset/copy.
void count_launch() noexcept;
}  // namespace detail
}  // namespace cuda
}  // namespace tg

#if defined(TENSORGRAD_CUDA_EMULATE)
#define TG_LAUNCH(grid, block, smem, stream, ...) \
  ::tg::cuda::detail::count_launch(), ::tg_emu::make_launch(grid, block, smem, stream, &__VA_ARGS__, #__VA_ARGS__)
#else
#define TG_LAUNCH(grid, block, smem, stream, ...) \
  ::tg::cuda::detail::count_launch(), __VA_ARGS__<<<grid, block, smem, stream>>>
#endif
