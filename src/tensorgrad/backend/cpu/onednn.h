// backend/cpu/onednn.h: what the CPU code that calls oneDNN shares (the float32 convolution of
// backend/cpu/conv.cpp, the int8 matrix product of quantization/dynamic.cpp): the engine, a stream, and
// running a primitive single-threaded on the calling thread (Note [oneDNN threads]). Included only
// where TENSORGRAD_HAVE_DNNL is 1.
#pragma once
#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.hpp>

namespace tg {
namespace detail {

/// The CPU engine every oneDNN call uses; never destroyed, as the CPU backend.
inline dnnl::engine& onednn_engine() {
  static auto* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

// Note [oneDNN threads]
// ~~~~~~~~~~~~~~~~~~~~~
// Debian's oneDNN runs its primitives on an OpenMP team of omp_get_max_threads() threads (the calling
// thread's value, OMP_NUM_THREADS by default), whose threads spin after each primitive. Beside
// tensorgrad's pool that makes two pools taking turns on the same cores (Note [One thread pool] in
// core/parallel.h): on 2 cores the int8 Linear ran at 0.03x of float32 at batch 1. So oneDNN runs
// single-threaded on the thread that calls it, as the BLAS does: the calling thread's OpenMP thread
// count is 1 during each call and restored after it (each thread keeps its own), and the callers cut
// large work into blocks over tensorgrad's pool, one oneDNN call each (images for a convolution, rows
// or output columns for the int8 product). The thread count is then tg::set_num_threads's, whatever
// OMP_NUM_THREADS says. The OpenMP functions are looked up at run time in the OpenMP runtime oneDNN
// itself loaded (libgomp), so tensorgrad and its consumers link no OpenMP of their own; without one (a
// oneDNN on another runtime) nothing is set.

/// Runs oneDNN single-threaded on this thread while it lives: the calling thread's OpenMP thread count
/// is 1, and the value it had comes back afterwards (a user's own OpenMP code on that thread keeps it).
class SingleThreadedOneDnn {
 public:
  SingleThreadedOneDnn() {
    if (get_ != nullptr && set_ != nullptr) {
      before_ = get_();
      if (before_ != 1) set_(1);
    }
  }
  ~SingleThreadedOneDnn() {
    if (before_ > 1) set_(before_);
  }
  SingleThreadedOneDnn(const SingleThreadedOneDnn&) = delete;
  SingleThreadedOneDnn& operator=(const SingleThreadedOneDnn&) = delete;

 private:
  using GetFn = int (*)();
  using SetFn = void (*)(int);
  static inline const GetFn get_ = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  static inline const SetFn set_ = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  int before_ = 0;
};

}  // namespace detail
}  // namespace tg
