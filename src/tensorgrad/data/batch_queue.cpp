// data/batch_queue.cpp: the worker threads and ordered queue both loaders share (data/loader.cpp,
// data/dataloader.h). What a batch is and how it is made is the loader's; this file only runs
// make(b) on the workers and hands the results out in order.
#include "tensorgrad/data/batch_queue.h"

#include <algorithm>
#include <utility>

#include "tensorgrad/core/error.h"
#include "tensorgrad/core/parallel.h"

namespace tg {
namespace data {
namespace detail {

/// Note [Worker order]
/// Workers take batch numbers from one counter (`next_`) and file each finished batch under its
/// number; the consumer takes batch `b` only, waiting for it if needed, so batches arrive in
/// order whatever thread made them and whenever it finished, and each is make(b) of the same
/// indices, the same bits as with one worker. A worker may start batch b only while b < front +
/// capacity (front: the batch the consumer takes next), so at most `capacity` batches are made or
/// in the making ahead of the consumer. A batch whose make() threw is filed as its error and
/// rethrown when the consumer reaches it; no worker starts a batch after it.
///
/// The workers use only the queue and what make() reads, never the consumer's side. shutdown()
/// sets `stop_`, wakes the threads and joins them; the loader calls it before anything make() reads
/// goes away (Note [Epoch lifetime] in data/loader.cpp).

BatchQueue::BatchQueue(int64_t num_batches, int64_t capacity, int64_t workers, Make make, std::string who)
    : num_batches_(num_batches), capacity_(capacity), workers_(workers), make_(std::move(make)),
      who_(std::move(who)) {}

BatchQueue::~BatchQueue() { shutdown(); }

void BatchQueue::start() {
  if (capacity_ == 0 || num_batches_ == 0) return;
  const int64_t n = std::min(workers_, num_batches_);
  try {
    threads_.reserve(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) threads_.emplace_back([this, i] { run(i); });
  } catch (const std::exception& e) {   // std::system_error from the OS, or std::bad_alloc
    shutdown();
    throw DataError(tg::detail::cat(who_, ": cannot start worker thread ", threads_.size() + 1, " of ", n, ": ",
                                    e.what()));
  }
}

void BatchQueue::run(int64_t worker) {
  // Copies on this thread stay on it: spreading them over the thread pool would fight the training
  // step for the cores (PyTorch's loader workers run single-threaded too). On a busy 2-core machine a
  // 64-image gather took 3-7 ms with a team of threads and 6 us without.
  parallel::set_thread_serial(true);
  for (;;) {
    int64_t b;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // next - front, not front + capacity: capacity saturates at INT64_MAX (the loaders' begin())
      space_.wait(lock, [&] { return stop_ || next_ >= last_batch_ || next_ - front_ < capacity_; });
      if (stop_ || next_ >= last_batch_) return;
      b = next_++;
    }
    Slot slot;
    try {
      slot.batch = make_(b, worker);
    } catch (...) {
      slot.error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (slot.error) last_batch_ = std::min(last_batch_, b + 1);   // nothing after a failed batch
      done_.emplace(b, std::move(slot));
    }
    ready_.notify_all();   // the consumer waits for one particular batch
  }
}

std::shared_ptr<void> BatchQueue::take(int64_t b, std::optional<std::chrono::milliseconds> timeout) {
  if (capacity_ == 0) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_) throw DataError(tg::detail::cat(who_, ": ", why_));
    }
    return make_(b, 0);
  }
  Slot slot;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto arrived = [&] { return stop_ || done_.count(b) != 0; };
    if (timeout) {
      if (!ready_.wait_for(lock, *timeout, arrived))
        throw DataError(tg::detail::cat(who_, ": timeout while waiting for batch ", b, " (timeout was ",
                                        timeout->count(), " ms)"));
    } else {
      ready_.wait(lock, arrived);
    }
    if (stop_) throw DataError(tg::detail::cat(who_, ": ", why_));
    auto it = done_.find(b);
    slot = std::move(it->second);
    done_.erase(it);
    front_ = b + 1;
  }
  space_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  return std::move(slot.batch);
}

void BatchQueue::shutdown(const char* why) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stop_) why_ = why;
    stop_ = true;
  }
  space_.notify_all();
  ready_.notify_all();
  std::lock_guard<std::mutex> lock(join_mutex_);
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

}  // namespace detail
}  // namespace data
}  // namespace tg
