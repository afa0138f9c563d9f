/// \file
/// core/parallel.h: the CPU thread pool behind every parallel CPU loop (backend/cpu/).
///
/// Note [One thread pool]: tensorgrad's loops and its matrix products share this one pool; the BLAS
/// always runs single-threaded on the pool thread that calls it. Two pools that each spin while idle
/// (OpenMP's team and OpenBLAS's own threads) take turns stealing each other's core: a 784-128-10
/// MLP step at batch 1024 runs 2.6x slower on two threads than on one. Pool threads spin
/// only briefly (tens of µs) after a loop, then sleep, so they also leave the cores to a data
/// loader's thread and to other processes. Loops run inline, without the pool, when they are small,
/// when called from inside a pool loop, on a thread marked serial, while another thread's loop holds
/// the pool, or in a child process forked after the pool started.
#pragma once
#include <cstdint>

namespace tg {
namespace parallel {

/// A borrowed callable f(begin, end): no allocation, valid while f lives.
class RangeFn {
 public:
  /// Borrows f, any callable as f(int64_t begin, int64_t end); f must outlive this RangeFn.
  template <class F>
  RangeFn(const F& f)   // NOLINT(google-explicit-constructor): passed as a plain lambda
      : obj_(&f), call_([](const void* o, int64_t b, int64_t e) { (*static_cast<const F*>(o))(b, e); }) {}
  /// Calls f(begin, end).
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

 private:
  const void* obj_;
  void (*call_)(const void*, int64_t, int64_t);
};

/// Calls f on `parts` disjoint chunks that cover [0, n) in order, spread over the pool's threads (the
/// calling thread takes part), and returns when all are done; an exception thrown by f is rethrown
/// here after the others finish. When the pool is not available to this call (see the file comment)
/// the same chunks run one after another on the calling thread: the chunks, and so the rounding of
/// whatever f computes per chunk, depend only on n and parts, never on the load (Note [Deterministic
/// chunks], parallel.cpp). Nothing when n <= 0. At most n parts.
void run(int64_t n, int parts, RangeFn f);

/// How many chunks a loop should be cut into: the pool's size (set_num_threads), on every thread and
/// whether or not the pool is free, so that results do not depend on which thread runs a loop.
int max_threads();

/// Sets the pool's size, the calling thread included. Default: OMP_NUM_THREADS when set (as PyTorch),
/// else the number of cores. Waits for a loop running on the pool; throws tg::Error for n < 1, when
/// called from a pool loop's chunk, and when threads cannot be created (the pool then has none). In a forked child it does nothing. tg::set_num_threads (backend/backend.h)
/// is the user-facing name.
void set_num_threads(int n);
/// The pool's size, the calling thread included; 1 in a child process forked after the pool started.
int num_threads();

/// Marks the calling thread so that its loops never use the pool (a data loader's prefetch thread:
/// a loop of its own would take the cores the training step is using).
void set_thread_serial(bool serial);

}  // namespace parallel
}  // namespace tg
