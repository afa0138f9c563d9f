// nn/parallel/distributed.cpp: DistributedDataParallel: the buckets, the post-accumulate-grad hooks
// that launch them, the communication thread that all-reduces them, and the checks for parameters
// that got no gradient. The collectives are tg::distributed's (Gloo or NCCL, distributed/).
#include "tensorgrad/nn/parallel/distributed.h"

#include <algorithm>
#include <chrono>
#include <system_error>
#include <unordered_set>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace nn {
namespace parallel {

// Note [DDP buckets]
// ~~~~~~~~~~~~~~~~~~
// Backward produces gradients roughly in reverse registration order (the last layer first), so the
// parameters are packed into buckets of at most bucket_cap_mb in reverse order, one dtype and device
// per bucket, as PyTorch's Reducer does. A leaf's post-accumulate-grad hook marks it ready; when every
// parameter of a bucket is ready the bucket may be launched, but buckets launch strictly in index
// order: Gloo needs every rank to call the same collectives in the same order, and the order in which
// gradients complete is not guaranteed to agree across ranks, while the bucket order is. A launched
// bucket goes to the communication thread, which copies its gradients into one flat tensor, sums it
// over the ranks, scales by 1/world_size and writes the averages back into the gradients: backward
// keeps computing the earlier layers meanwhile. With NCCL the sum is queued on the device's stream
// (all_reduce_async, Note [Queued collectives]) with the copies after it, so the thread does not wait
// for it. The hook that makes the last parameter ready waits for the thread to finish and then once
// for every queued sum, so loss.backward() returns with every gradient averaged; a failure on the
// thread or in that wait (a rank that died) is rethrown there. A forward arms the hooks only when grad mode is on and
// no NoSyncGuard is alive, so no_sync() backwards just accumulate into .grad, and the next armed
// backward reduces those sums. A parameter that got no gradient leaves the reduction unfinished,
// which the next forward reports by name (or, with find_unused_parameters, the forward walks the graph
// and marks every unreachable parameter ready at once, reducing zeros for it).

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

DistributedDataParallel::DistributedDataParallel(Module& module, const DistributedDataParallelOptions& options)
    : DistributedDataParallel(module, distributed::default_group(), options) {}

DistributedDataParallel::DistributedDataParallel(Module& module, distributed::ProcessGroup& group,
                                                 const DistributedDataParallelOptions& options)
    : module_(module), group_(group), options_(options) {
  init(options);
}

void DistributedDataParallel::init(const DistributedDataParallelOptions& options) {
  TG_CHECK(options.bucket_cap_mb() > 0, DistributedError, "DistributedDataParallel: bucket_cap_mb must be positive, got ",
           options.bucket_cap_mb());
  register_module("module", module_);
  // Every rank starts from rank 0's values (the broadcast's header check also catches ranks whose
  // models differ in shape: Note [Collective headers]).
  {
    NoGradGuard no_grad;
    for (auto& np : module_.named_parameters()) {
      RawTensor t = np.second.data();
      group_.broadcast(t, 0);
    }
    for (auto& nb : module_.named_buffers()) {
      RawTensor t = nb.second.data();
      group_.broadcast(t, 0);
    }
  }
  for (auto& np : module_.named_parameters()) {
    if (!np.second.requires_grad()) continue;
    params_.push_back(np.second);
    names_.push_back("module." + np.first);
  }
  // Buckets in reverse registration order (Note [DDP buckets]).
  const double cap = options.bucket_cap_mb() * 1024 * 1024;
  bucket_of_.assign(params_.size(), -1);
  for (int i = static_cast<int>(params_.size()) - 1; i >= 0; --i) {
    const RawTensor& d = params_[i].data();
    const double bytes = static_cast<double>(d.numel()) * dtype_size(d.dtype());
    bool fits = !buckets_.empty();
    if (fits) {
      const Bucket& b = buckets_.back();
      const RawTensor& first = params_[b.params.front()].data();
      fits = first.dtype() == d.dtype() && first.device() == d.device() &&
             (static_cast<double>(b.numel) * dtype_size(d.dtype()) + bytes <= cap);
    }
    if (!fits) buckets_.emplace_back();
    buckets_.back().params.push_back(i);
    buckets_.back().numel += d.numel();
    bucket_of_[i] = static_cast<int>(buckets_.size()) - 1;
  }
  ready_.assign(params_.size(), 0);
  reset_step();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const int index = static_cast<int>(i);
    hooks_.push_back(params_[i].register_post_accumulate_grad_hook([this, index](Tensor&) { on_grad_ready(index); }));
  }
  try {
    comm_ = std::thread([this] { comm_loop(); });
  } catch (const std::system_error& e) {   // the OS refused a thread: no hook may call into this object
    for (auto& h : hooks_) h.remove();
    throw DistributedError(
        tg::detail::cat("DistributedDataParallel: cannot start the communication thread: ", e.what()));
  }
}

DistributedDataParallel::~DistributedDataParallel() {
  for (auto& h : hooks_) h.remove();
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
    stop_ = true;
  }
  cv_.notify_all();
  if (comm_.joinable()) comm_.join();
}

void DistributedDataParallel::reset_step() {
  std::fill(ready_.begin(), ready_.end(), 0);
  ready_count_ = 0;
  got_grad_ = false;
  next_bucket_ = 0;
  done_buckets_ = 0;
  for (Bucket& b : buckets_) b.pending = static_cast<int>(b.params.size());
  stats_ = Stats();
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wait_idle(lock);
    if (armed_ && got_grad_) {
      // A backward ran but some parameters never got a gradient: the reduction is unfinished.
      std::string missing;
      int shown = 0;
      for (std::size_t i = 0; i < params_.size(); ++i)
        if (!ready_[i] && shown++ < 20) missing += (missing.empty() ? "" : ", ") + names_[i];
      reset_step();
      armed_ = false;
      throw DistributedError(
          "DistributedDataParallel: expected to have finished reduction in the prior iteration before starting a new "
          "one: these parameters did not receive a gradient: " + missing +
          ". Every parameter must take part in the loss, or construct DistributedDataParallel with "
          "DistributedDataParallelOptions().find_unused_parameters(true)");
    }
    if (error_) {
      auto e = error_;
      error_ = nullptr;
      std::rethrow_exception(e);
    }
    reset_step();
    armed_ = GradMode::is_enabled() && !no_sync_ && !params_.empty();
  }
  if (options_.broadcast_buffers() && group_.size() > 1) {
    NoGradGuard no_grad;
    for (auto& nb : module_.named_buffers()) {
      RawTensor t = nb.second.data();
      group_.broadcast(t, 0);
    }
  }
  Tensor out = module_(x);
  if (armed_ && options_.find_unused_parameters()) mark_unused(out);
  return out;
}

void DistributedDataParallel::mark_unused(const Tensor& out) {
  // Every leaf the output depends on, by an iterative walk of its graph (no recursion over graphs).
  std::unordered_set<const TensorImpl*> reached;
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack;
  if (out.defined() && out.grad_fn()) stack.push_back(out.grad_fn().get());
  else if (out.defined()) reached.insert(out.impl().get());
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    for (const Edge& e : n->next) {
      if (e.leaf) reached.insert(e.leaf.get());
      if (e.fn) stack.push_back(e.fn.get());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (reached.count(params_[i].impl().get())) continue;
    ready_[i] = 1;
    ++ready_count_;
    --buckets_[bucket_of_[i]].pending;
  }
}

void DistributedDataParallel::on_grad_ready(int index) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!armed_) return;
  if (ready_[index]) {
    finish_step(lock);   // a second backward through the same forward (retain_graph) cannot be reduced
    throw DistributedError("DistributedDataParallel: parameter " + names_[index] +
                           " got a second gradient from one forward (backward twice with retain_graph?): each "
                           "forward may have one synchronized backward");
  }
  ready_[index] = 1;
  ++ready_count_;
  got_grad_ = true;
  --buckets_[bucket_of_[index]].pending;
  launch_ready_buckets();
  if (next_bucket_ == static_cast<int>(buckets_.size())) finish_step(lock);
}

void DistributedDataParallel::launch_ready_buckets() {
  bool launched = false;
  while (next_bucket_ < static_cast<int>(buckets_.size()) && buckets_[next_bucket_].pending == 0) {
    queue_.push_back(next_bucket_++);
    launched = true;
  }
  if (launched) cv_.notify_all();
}

void DistributedDataParallel::wait_idle(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

void DistributedDataParallel::finish_step(std::unique_lock<std::mutex>& lock) {
  const auto t0 = Clock::now();
  wait_idle(lock);
  // every bucket's collective is queued (or done); one wait covers them (a failure is kept like the
  // thread's own and rethrown below)
  std::vector<std::unique_ptr<distributed::Work>> works;
  works.swap(works_);
  for (auto& w : works) {
    try {
      if (!error_) w->wait();
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  stats_.exposed_seconds = seconds_since(t0);
  last_stats_ = stats_;
  armed_ = false;
  reset_step();
  if (error_) {
    auto e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void DistributedDataParallel::comm_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;   // stop_
    const int b = queue_.front();
    queue_.pop_front();
    busy_ = true;
    const bool failed = error_ != nullptr;
    lock.unlock();
    const auto t0 = Clock::now();
    std::exception_ptr err;
    if (!failed) {   // after a failure the group is broken: drop the remaining buckets
      try {
        reduce_bucket(b);
      } catch (...) {
        err = std::current_exception();
      }
    }
    const double spent = seconds_since(t0);
    lock.lock();
    if (err && !error_) error_ = err;
    stats_.comm_seconds += spent;
    ++stats_.buckets;
    stats_.bytes += buckets_[b].numel * static_cast<int64_t>(dtype_size(params_[buckets_[b].params.front()].dtype()));
    busy_ = false;
    cv_.notify_all();
  }
}

void DistributedDataParallel::reduce_bucket(int b) {
  const Bucket& bucket = buckets_[b];
  const RawTensor& first = params_[bucket.params.front()].data();
  RawTensor flat = RawTensor::empty(Shape{bucket.numel}, first.dtype(), first.device());
  // Copy in: every gradient of the bucket is complete (its hook ran), zeros for a parameter without one.
  int64_t at = 0;
  std::vector<Tensor> grads;
  for (int i : bucket.params) {
    const RawTensor& p = params_[i].data();
    RawTensor slot = flat.narrow(0, at, p.numel()).view(p.shape());
    Tensor g = params_[i].grad();
    if (g.defined()) prim::copy_(slot, g.data());   // sets
    else prim::fill_(slot, 0.0);
    grads.push_back(g);
    at += p.numel();
  }
  // Queued where the backend can (NCCL: on the device's stream, Note [Queued collectives]): the
  // copies below run after it on the same stream, and finish_step waits once for every bucket.
  std::unique_ptr<distributed::Work> work = group_.all_reduce_async(flat, distributed::ReduceOp::SUM);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    works_.push_back(std::move(work));
  }
  RawTensor avg = prim::mul(flat, 1.0 / group_.size());
  // Copy out: the averages replace the local gradients.
  at = 0;
  for (std::size_t k = 0; k < bucket.params.size(); ++k) {
    Tensor& p = params_[bucket.params[k]];
    RawTensor slot = avg.narrow(0, at, p.numel()).view(p.shape());
    if (grads[k].defined()) prim::copy_(grads[k].data(), slot);   // sets, in place
    else p.set_grad(Tensor(slot.clone()));
    at += p.numel();
  }
}

DistributedDataParallel::Stats DistributedDataParallel::last_stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_stats_;
}

std::vector<std::vector<int>> DistributedDataParallel::bucket_indices() const {
  std::vector<std::vector<int>> out;
  for (const Bucket& b : buckets_) out.push_back(b.params);
  return out;
}

}  // namespace parallel
}  // namespace nn
}  // namespace tg
