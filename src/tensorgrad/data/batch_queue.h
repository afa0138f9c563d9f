/// \file
/// data/batch_queue.h: the worker threads and the ordered queue behind both loaders, DataLoader
/// (data/loader.h) and make_data_loader's (data/dataloader.h): batches made ahead on background
/// threads and handed to the consumer in order. Loaders use it; users iterate a loader instead.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace tg {
namespace data {
namespace detail {

/// Batches 0, 1, ..., num_batches - 1 of one epoch, made by `make` on worker threads and taken by one
/// consumer in that order (Note [Worker order] in data/batch_queue.cpp). Results are type-erased, so
/// that one implementation serves every batch type; the caller casts them back.
class BatchQueue {
 public:
  /// Makes batch b; worker is the thread's number in [0, workers), 0 when the consumer makes it.
  using Make = std::function<std::shared_ptr<void>(int64_t batch, int64_t worker)>;

  /// capacity: batches made or in the making ahead of the consumer; 0 makes each batch on the
  /// consumer's thread when it is taken, with no thread. workers: the threads (>= 1) when capacity > 0.
  /// who names the loader in errors ("DataLoader").
  BatchQueue(int64_t num_batches, int64_t capacity, int64_t workers, Make make, std::string who);
  /// Stops and joins the threads (shutdown()).
  ~BatchQueue();
  BatchQueue(const BatchQueue&) = delete;
  BatchQueue& operator=(const BatchQueue&) = delete;

  /// Starts the workers (none with capacity 0 or no batches). DataError when the OS refuses a
  /// thread; the ones started are stopped first.
  void start();
  /// Batch b, which must be the next one in order: waits for it (at most timeout, else DataError) and
  /// rethrows, with its own type, the exception that replaced it. DataError after shutdown().
  std::shared_ptr<void> take(int64_t b, std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  /// Stops the workers and joins them: a thread waiting for room returns at once, one inside make()
  /// after that batch. A later or waiting take() throws DataError saying `why` (a string literal).
  void shutdown(const char* why = "the loader was destroyed while one of its iterators was still in use") noexcept;
  /// The number of batches of the epoch.
  int64_t num_batches() const { return num_batches_; }

 private:
  struct Slot {
    std::shared_ptr<void> batch;
    std::exception_ptr error;   // set instead of batch when making it threw
  };
  void run(int64_t worker);

  const int64_t num_batches_, capacity_, workers_;
  const Make make_;
  const std::string who_;
  // shared with the workers, under mutex_
  std::mutex mutex_;
  std::condition_variable space_, ready_;
  std::map<int64_t, Slot> done_;        // finished batches not yet taken, by number
  int64_t next_ = 0;                    // the next batch number a worker takes
  int64_t front_ = 0;                   // the batch the consumer takes next
  int64_t last_batch_ = num_batches_;   // one past the last batch to make (cut at a failed one)
  bool stop_ = false;
  const char* why_ = "";                // what take() says once stopped
  std::mutex join_mutex_;   // shutdown may race between an iterator's and the loader's destructors
  std::vector<std::thread> threads_;
};

}  // namespace detail
}  // namespace data
}  // namespace tg
