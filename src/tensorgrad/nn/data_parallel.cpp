// nn/data_parallel.cpp: DataParallel and its steps: replicate (clone + differentiable parameter
// copies), scatter and gather (differentiable row splits and concatenation across devices), and
// parallel_apply (one thread per replica, the caller's grad mode and autocast state inside).
// Module::clone is in nn/module.cpp; the backward engine that sums the replicas' gradients is
// autograd/engine.cpp.
#include "tensorgrad/nn/data_parallel.h"

#include <exception>
#include <system_error>
#include <thread>
#include <utility>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/backend/backend.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {

namespace {

/// DeviceError unless d is the CPU or a usable CUDA device. who/what name it in the message.
void check_usable(const Device& d, const std::string& what) {
  if (d.is_cpu()) return;
  TG_CHECK(cuda::is_available(), DeviceError, "DataParallel: ", what, " is ", d.str(),
           " but CUDA is not available: ", cuda::info());
  const int count = cuda::device_count();
  TG_CHECK(d.index() < count, DeviceError, "DataParallel: ", what, " is ", d.str(), " but only ", count,
           " CUDA device(s) are visible (valid indices 0 to ", count - 1, ")");
}

}  // namespace

namespace parallel {

std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunks) {
  TG_CHECK(chunks > 0, Error, "chunk: the number of chunks must be positive, got ", chunks);
  TG_CHECK(n >= 0, ShapeError, "chunk: the size to split must be non-negative, got ", n);
  const int64_t each = n / chunks + (n % chunks != 0 ? 1 : 0);   // ceil(n / chunks), as torch.chunk
  if (each == 0) return std::vector<int64_t>(static_cast<std::size_t>(chunks), 0);   // torch.chunk of 0 rows
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < n; at += each) sizes.push_back(std::min(each, n - at));
  return sizes;
}

std::vector<Tensor> scatter(const Tensor& x, const std::vector<Device>& devices) {
  TG_CHECK(!devices.empty(), Error, "scatter: expects at least one device");
  TG_CHECK(x.defined(), ShapeError, "scatter: expects a defined tensor to split along dim 0, got an undefined one");
  TG_CHECK(x.dim() >= 1, ShapeError, "scatter: cannot split a 0-d tensor along dim 0 (the batch dimension); "
                                     "the input needs a batch dimension, got shape ", shape_str(x.shape()));
  const std::vector<int64_t> sizes = chunk_sizes(x.size(0), static_cast<int64_t>(devices.size()));
  std::vector<Tensor> pieces;
  pieces.reserve(sizes.size());
  int64_t start = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const Device to = with_index(devices[i]);
    const int64_t rows = sizes[i];
    RawTensor piece = prim::to_device(x.data().narrow(0, start, rows), to);   // rows [start, start + rows) of x
    Tensor v = record("scatter", piece, {x},
                        [start, rows, shape = x.shape(), dtype = x.dtype(), from = x.device()](const RawTensor& grad,
                                                                                                Grads& g) {
                          // d piece / d x: the piece's gradient in its rows, zeros elsewhere (sets)
                          RawTensor full = prim::full(shape, 0.0, dtype, from);
                          prim::copy_(full.narrow(0, start, rows), grad);   // across devices when they differ
                          g.set(0, full);
                        });
    pieces.push_back(to == x.device() ? mark_view(std::move(v), x) : std::move(v));   // same device: a view of x
    start += rows;
  }
  return pieces;
}

Tensor gather(const std::vector<Tensor>& outputs, Device device) {
  TG_CHECK(!outputs.empty(), Error, "gather: expects at least one output to concatenate");
  device = with_index(device);
  bool all_scalars = true;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    TG_CHECK(outputs[i].defined(), Error, "gather: output ", i, " of the replicas is undefined");
    all_scalars = all_scalars && outputs[i].dim() == 0;
  }
  std::vector<Tensor> moved;
  moved.reserve(outputs.size());
  for (const Tensor& o : outputs) {   // Tensor::to is differentiable: each gradient slice goes back
    Tensor m = o.to(device);
    moved.push_back(all_scalars ? m.unsqueeze(0) : m);   // PyTorch gathers scalar outputs into a vector
  }
  return cat(moved, 0);
}

// Note [DataParallel replicas]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Gradients reach the original module through the graph, as in PyTorch's Broadcast: each replica is
// module.clone(device), and each of its parameters that requires grad is then linked to the
// original's by a "broadcast" node (the replica's TensorImpl gets that node as its grad_fn, so it is
// a non-leaf copy of the original, exactly what Broadcast's outputs are in PyTorch). Its rule sends
// the replica's gradient back to the original's device; the backward engine adds the gradients that
// reach one leaf from several replicas (fan-out), so after loss.backward() the module's .grad holds
// the sum over the replicas, its register_hook and post-accumulate-grad hooks run once per backward
// with that sum, and retain_graph, gradient accumulation and optimizers built on model.parameters()
// work unchanged. The alternative, reducing the replicas' leaf gradients into the model's after
// backward, needs a step the user must call (or a hook that knows when the last replica is done)
// and bypasses the model's own hooks. The replica modules themselves are dropped when forward
// returns: the graph keeps the broadcast nodes (through the edges of the ops that used the
// parameters), never the replica's TensorImpls, and the nodes save nothing. Linking mutates only
// the clone's own TensorImpls, which nothing else holds yet; tied parameters are linked once
// (parameters() lists each once, in the same order for the original and its clone, which
// Module::clone checks to have the same layout).
std::vector<std::unique_ptr<Module>> replicate(const Module& module, const std::vector<Device>& devices) {
  const std::vector<Tensor> originals = module.parameters();
  std::vector<std::unique_ptr<Module>> replicas;
  replicas.reserve(devices.size());
  for (const Device& d : devices) {
    std::unique_ptr<Module> replica = module.clone(with_index(d));
    const std::vector<Tensor> copies = replica->parameters();
    TG_CHECK(copies.size() == originals.size(), Error, "replicate: the clone of ", module.name(), " has ",
             copies.size(), " parameters, the module ", originals.size());
    for (std::size_t i = 0; i < originals.size(); ++i) {
      const Tensor& original = originals[i];
      if (!original.requires_grad()) continue;
      Tensor link = record("broadcast", copies[i].data(), {original}, [from = original.device()](const auto& grad, auto& g) {
        g.set(0, grad.to(from));   // d copy / d original = identity, back on the original's device
      });
      if (link.grad_fn()) copies[i].impl()->grad_fn = link.grad_fn();   // grad mode off: the copy stays a leaf
    }
    replicas.push_back(std::move(replica));
  }
  return replicas;
}

std::vector<Tensor> parallel_apply(const std::vector<Module*>& replicas, const std::vector<Tensor>& inputs,
                                     const std::vector<Device>& devices) {
  TG_CHECK(replicas.size() == inputs.size() && replicas.size() == devices.size(), Error,
           "parallel_apply: expects as many inputs and devices as replicas, got ", replicas.size(), " replicas, ",
           inputs.size(), " inputs and ", devices.size(), " devices");
  const std::size_t n = replicas.size();
  std::vector<Tensor> outputs(n);
  std::vector<std::exception_ptr> errors(n);
  // The caller's thread-local state, as PyTorch's parallel_apply carries it into its threads.
  const bool grad_enabled = GradMode::is_enabled();
  const bool cpu_autocast = amp::is_autocast_enabled(DeviceType::CPU);
  const bool cuda_autocast = amp::is_autocast_enabled(DeviceType::CUDA);
  const DType cpu_dtype = amp::get_autocast_dtype(DeviceType::CPU);
  const DType cuda_dtype = amp::get_autocast_dtype(DeviceType::CUDA);
  auto work = [&](std::size_t i) {   // runs replica i; never throws (the error is kept for the caller)
    try {
      TG_CHECK(replicas[i] != nullptr, Error, "parallel_apply: replica ", i, " is null");
      GradMode::set_enabled(grad_enabled);
      std::unique_ptr<amp::AutocastGuard> on_cpu, on_cuda;
      if (cpu_autocast) on_cpu = std::make_unique<amp::AutocastGuard>(Device::cpu(), cpu_dtype);
      if (cuda_autocast) on_cuda = std::make_unique<amp::AutocastGuard>(Device::cuda(0), cuda_dtype);
      const Device d = with_index(devices[i]);
      if (d.is_cuda()) cuda::set_device(d.index());   // "cuda" inside the replica means its own GPU
      outputs[i] = (*replicas[i])(inputs[i]);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  };
  if (n == 1) {   // as PyTorch: one replica runs on the calling thread, its CUDA device restored after
    const int previous = cuda::current_device();
    const bool grad_before = GradMode::is_enabled();
    work(0);
    GradMode::set_enabled(grad_before);
    if (with_index(devices[0]).is_cuda() && cuda::is_available()) cuda::set_device(previous);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(n);
    std::exception_ptr spawn_error;
    for (std::size_t i = 0; i < n; ++i) {
      try {
        threads.emplace_back(work, i);
      } catch (const std::system_error& e) {   // the OS refused a thread: run nothing more, join the rest
        spawn_error = std::make_exception_ptr(
            Error(tg::detail::cat("parallel_apply: cannot start the thread of replica ", i, ": ", e.what())));
        break;
      }
    }
    for (std::thread& t : threads) t.join();
    if (spawn_error) std::rethrow_exception(spawn_error);
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return outputs;
}

}  // namespace parallel

// ------------------------------------------------------------------------------------------------
// DataParallel

DataParallel::DataParallel(Module& module) : module_(&module) {
  register_module("module", module);
  if (!cuda::is_available()) return;   // PyTorch: no device type available, the module runs as it is
  std::vector<Device> all;
  for (int i = 0; i < cuda::device_count(); ++i) all.push_back(Device::cuda(i));
  init(std::move(all), std::nullopt);
}

DataParallel::DataParallel(Module& module, std::vector<int> device_ids, std::optional<int> output_device)
    : module_(&module) {
  register_module("module", module);
  if (!cuda::is_available()) return;   // PyTorch ignores device_ids then
  const int count = cuda::device_count();
  TG_CHECK(!device_ids.empty(), DeviceError, "DataParallel: device_ids is empty; pass at least one CUDA device index");
  std::vector<Device> devices;
  for (std::size_t i = 0; i < device_ids.size(); ++i) {
    TG_CHECK(device_ids[i] >= 0 && device_ids[i] < count, DeviceError, "DataParallel: device_ids[", i, "] = ",
             device_ids[i], " is out of range: ", count, " CUDA device(s) are visible (valid ids 0 to ", count - 1, ")");
    devices.push_back(Device::cuda(device_ids[i]));
  }
  std::optional<Device> out;
  if (output_device) {
    TG_CHECK(*output_device >= -1 && *output_device < count, DeviceError, "DataParallel: output_device = ",
             *output_device, " is out of range: ", count, " CUDA device(s) are visible (-1 means the CPU)");
    out = *output_device == -1 ? Device::cpu() : Device::cuda(*output_device);
  }
  init(std::move(devices), out);
}

DataParallel::DataParallel(Module& module, std::vector<Device> devices, std::optional<Device> output_device)
    : module_(&module) {
  register_module("module", module);
  TG_CHECK(!devices.empty(), DeviceError, "DataParallel: the device list is empty; pass at least one device");
  for (std::size_t i = 0; i < devices.size(); ++i) {
    devices[i] = with_index(devices[i]);
    check_usable(devices[i], tg::detail::cat("devices[", i, "]"));
  }
  if (output_device) {
    output_device = with_index(*output_device);
    check_usable(*output_device, "output_device");
  }
  init(std::move(devices), output_device);
}

void DataParallel::init(std::vector<Device> devices, std::optional<Device> output_device) {
  devices_ = std::move(devices);
  output_device_ = output_device.value_or(devices_.front());
  if (devices_.size() == 1) module_->to(devices_.front());   // as PyTorch with a single device
}

Tensor DataParallel::forward(const Tensor& x) {
  if (devices_.empty()) return (*module_)(x);
  const Device& source = devices_.front();
  for (const Tensor& p : module_->parameters())
    TG_CHECK(p.device() == source, DeviceError, "DataParallel: module must have its parameters and buffers on device ",
             source.str(), " (device_ids[0]) but found one of them on device: ", p.device().str());
  for (const auto& b : module_->named_buffers())
    TG_CHECK(b.second.device() == source, DeviceError, "DataParallel: module must have its parameters and buffers on device ",
             source.str(), " (device_ids[0]) but found one of them on device: ", b.second.device().str(), " (buffer \"",
             b.first, "\")");
  TG_CHECK(x.defined() && x.dim() >= 1, ShapeError, "DataParallel: the input must be a tensor with a batch dimension "
           "(dim 0) to split among the replicas, got ", x.defined() ? "a 0-d tensor" : "an undefined tensor");
  if (devices_.size() == 1) return (*module_)(x.to(source));
  const std::vector<Tensor> inputs = parallel::scatter(x, devices_);
  const std::vector<Device> used(devices_.begin(), devices_.begin() + static_cast<std::ptrdiff_t>(inputs.size()));
  const std::vector<std::unique_ptr<Module>> replicas = parallel::replicate(*module_, used);
  std::vector<Module*> raw;
  for (const auto& r : replicas) raw.push_back(r.get());
  return parallel::gather(parallel::parallel_apply(raw, inputs, used), output_device_);
}

}  // namespace nn
}  // namespace tg
