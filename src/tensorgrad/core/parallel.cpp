// core/parallel.cpp: the CPU thread pool (core/parallel.h, Note [One thread pool]).
//
// One loop at a time: the caller publishes a Job under the mutex and bumps the generation; workers
// spin briefly on the generation (2000 pauses: about 20 µs on our machines, 5-100 µs depending on
// the CPU), else sleep on a condition variable; every thread claims chunks
// with an atomic counter. The caller returns only when every chunk is done and no worker still
// holds the Job (it lives on the caller's stack).
#include "tensorgrad/core/parallel.h"

#include "tensorgrad/core/error.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <pthread.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TG_CPU_RELAX() _mm_pause()
#else
#define TG_CPU_RELAX() std::this_thread::yield()
#endif

namespace tg {
namespace parallel {
namespace {

thread_local bool t_in_loop = false;   // running a chunk of a pool loop (or the caller inside run)
thread_local bool t_serial = false;
// In a child process forked after the pool started, the pool's threads do not exist (and its locks may
// be held by them): every loop runs inline there, as PyTorch's intra-op pool does after fork.
std::atomic<bool> g_forked{false};

// Spin this many pauses (tens of µs) for the next loop or for the last chunk before sleeping: long
// enough to bridge the serial gaps of a training step, short enough not to hold a core that other
// threads or processes want.
constexpr int kSpin = 2000;

int default_threads() {
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

struct Job {
  int64_t n = 0;
  int parts = 0;
  RangeFn f;
  std::atomic<int64_t> next{0};    // next chunk to claim (each thread overshoots by one at the end)
  std::atomic<int> remaining{0};   // chunks not finished
  std::exception_ptr error;        // first exception, under Pool::mutex_
  Job(int64_t n_, int parts_, RangeFn f_) : n(n_), parts(parts_), f(f_), remaining(parts_) {}
};

// Note [Deterministic chunks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A loop's result may depend on how it is cut: a matrix product split into row blocks is a different
// sequence of BLAS calls than one call, and rounds differently. So the cut depends only on the loop's
// size and on set_num_threads (max_threads() is the pool's size everywhere), and a loop that cannot
// use the pool (another thread's loop holds it, a nested loop, a serial thread, a forked child) runs
// the same chunks in order on its own thread. Four threads training their own models then get the
// results each gets alone; only set_num_threads changes them, within the derived tolerances.

/// Chunk c of [0, n) cut into `parts`: n / parts elements, one more for the first n % parts chunks
/// (no overflow for any n).
std::pair<int64_t, int64_t> chunk(int64_t n, int64_t parts, int64_t c) {
  const int64_t base = n / parts, extra = n % parts;
  const int64_t b = c * base + std::min(c, extra);
  return {b, b + base + (c < extra ? 1 : 0)};
}

/// The chunks of run(n, parts, f), one after another on the calling thread.
void run_inline(int64_t n, int64_t parts, RangeFn f) {
  for (int64_t c = 0; c < parts; ++c) {
    const auto [b, e] = chunk(n, parts, c);
    if (b < e) f(b, e);
  }
}

class Pool {
 public:
  Pool() {
    ::pthread_atfork(nullptr, nullptr, [] { g_forked.store(true, std::memory_order_relaxed); });
    try {
      resize(default_threads());
    } catch (const Error&) {   // no threads to be had: loops run on their callers
    }
  }
  // Never destroyed (see pool()): workers sleep on the condition variable until the process exits.

  int size() const { return size_.load(std::memory_order_relaxed); }

  void resize(int n) {
    n = std::max(n, 1);
    std::lock_guard<std::mutex> busy(run_mutex_);
    if (n == size() && static_cast<int>(workers_.size()) == n - 1) return;
    stop_workers();
    try {
      for (int i = 1; i < n; ++i) workers_.emplace_back([this] { worker(); });
    } catch (const std::exception& e) {   // thread creation failed (system_error): no workers, then report it
      stop_workers();
      throw Error(detail::cat("set_num_threads: cannot start ", n - 1, " worker thread", n == 2 ? "" : "s", " (",
                              e.what(), "); CPU loops run on the calling thread"));
    }
    size_.store(n, std::memory_order_relaxed);
  }

  void run(int64_t n, int parts, RangeFn f) {
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (!busy) {   // another thread's loop holds the pool: the same chunks, here
      run_inline(n, parts, f);
      return;
    }
    Job job(n, parts, f);
    {
      std::lock_guard<std::mutex> lk(mutex_);
      job_ = &job;
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_acquire) > 0) cv_work_.notify_all();
    t_in_loop = true;
    work(job);
    t_in_loop = false;
    for (int i = 0; i < kSpin && !finished(job); ++i) TG_CPU_RELAX();
    {
      std::unique_lock<std::mutex> lk(mutex_);
      cv_done_.wait(lk, [&] { return finished(job); });
      job_ = nullptr;
    }
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  /// Wakes every worker to exit, joins them; the pool is then its caller alone. Under run_mutex_.
  void stop_workers() {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      stop_ = true;
    }
    cv_work_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_ = false;
    size_.store(1, std::memory_order_relaxed);
  }

  bool finished(const Job& job) const {
    return job.remaining.load(std::memory_order_acquire) == 0 && active_.load(std::memory_order_acquire) == 0;
  }

  void work(Job& job) {
    for (int64_t c; (c = job.next.fetch_add(1, std::memory_order_relaxed)) < job.parts;) {
      const auto [b, e] = chunk(job.n, job.parts, c);
      try {
        if (b < e) job.f(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mutex_);
        if (!job.error) job.error = std::current_exception();
      }
      job.remaining.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  void worker() {
    uint64_t seen = generation_.load(std::memory_order_acquire);
    for (;;) {
      for (int i = 0; i < kSpin && generation_.load(std::memory_order_acquire) == seen; ++i) TG_CPU_RELAX();
      Job* job = nullptr;
      {
        std::unique_lock<std::mutex> lk(mutex_);
        if (generation_.load(std::memory_order_relaxed) == seen && !stop_) {
          sleepers_.fetch_add(1, std::memory_order_acq_rel);
          cv_work_.wait(lk, [&] { return generation_.load(std::memory_order_relaxed) != seen || stop_; });
          sleepers_.fetch_sub(1, std::memory_order_acq_rel);
        }
        if (stop_) return;
        seen = generation_.load(std::memory_order_relaxed);
        job = job_;   // null when that loop already finished without us
        if (job != nullptr) active_.fetch_add(1, std::memory_order_acq_rel);
      }
      if (job == nullptr) continue;
      t_in_loop = true;
      work(*job);
      t_in_loop = false;
      {
        std::lock_guard<std::mutex> lk(mutex_);
        active_.fetch_sub(1, std::memory_order_acq_rel);
      }
      cv_done_.notify_one();
    }
  }

  std::mutex run_mutex_;   // held by the thread whose loop runs on the pool
  std::mutex mutex_;       // guards job_, stop_ and the sleeping/waking below
  std::condition_variable cv_work_, cv_done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0}, active_{0}, size_{1};
  Job* job_ = nullptr;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

Pool& pool() {
  static Pool* p = new Pool();   // never destroyed: loops may run during static destruction
  return *p;
}

}  // namespace

void run(int64_t n, int parts, RangeFn f) {
  if (n <= 0) return;
  const int64_t chunks = std::min<int64_t>(std::max(parts, 1), n);
  if (chunks <= 1 || t_in_loop || t_serial || g_forked.load(std::memory_order_relaxed)) {
    run_inline(n, chunks, f);   // See Note [Deterministic chunks]
    return;
  }
  pool().run(n, static_cast<int>(chunks), f);
}

int max_threads() { return pool().size(); }   // See Note [Deterministic chunks]

void set_num_threads(int n) {
  TG_CHECK(n > 0, Error, "set_num_threads: expected a positive number of threads, got ", n);
  TG_CHECK(!t_in_loop, Error, "set_num_threads: cannot be called from inside a parallel CPU loop");
  if (g_forked.load(std::memory_order_relaxed)) return;   // a forked child's loops all run inline
  pool().resize(n);
}

int num_threads() { return g_forked.load(std::memory_order_relaxed) ? 1 : pool().size(); }

void set_thread_serial(bool serial) { t_serial = serial; }

}  // namespace parallel
}  // namespace tg
