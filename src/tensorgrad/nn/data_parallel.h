/// \file
/// nn/data_parallel.h: DataParallel, single-process data parallelism over several devices (PyTorch's
/// torch.nn.DataParallel), and its four steps as functions in tg::nn::parallel: replicate, scatter,
/// parallel_apply, gather. Several processes (DistributedDataParallel) are not here; the threads
/// and the differentiable copies live in nn/data_parallel.cpp.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tensorgrad/nn/module.h"

namespace tg {
namespace nn {

// The steps of DataParallel (tg::nn::parallel is documented in tensorgrad.h).
namespace parallel {

/// PyTorch's torch.chunk sizes for n rows over `chunks` pieces: ceil(n / chunks) rows each, the last
/// one smaller, and fewer than `chunks` pieces when they run out (5 rows over 4: {2, 2, 1}); n = 0
/// gives `chunks` empty pieces. Error unless chunks > 0 and n >= 0.
std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunks);

/// Splits x (N, ...) along dim 0 into chunk_sizes(N, devices.size()) pieces, piece i moved to
/// devices[i] (PyTorch's Scatter): each piece is differentiable, its gradient lands in its rows of
/// x's gradient. ShapeError for an undefined or 0-d x; Error for an empty device list.
std::vector<Tensor> scatter(const Tensor& x, const std::vector<Device>& devices);

/// Concatenates outputs along dim 0 on `device` (PyTorch's Gather), differentiably: each output gets
/// its rows of the gradient back on its own device. 0-d outputs (losses) are gathered into a vector,
/// as PyTorch does. Error for an empty list; the concatenation's ShapeError for mismatched shapes.
Tensor gather(const std::vector<Tensor>& outputs, Device device);

/// One copy of module per device (PyTorch's replicate): clone(devices[i]) whose parameters are
/// differentiable copies of module's own (see Note [DataParallel replicas] in nn/data_parallel.cpp),
/// so a backward through a replica's output accumulates into module's parameters, summed over the
/// replicas. Under NoGradGuard the copies record no graph. The module must be clonable (Module::clone).
std::vector<std::unique_ptr<Module>> replicate(const Module& module, const std::vector<Device>& devices);

/// outputs[i] = (*replicas[i])(inputs[i]), each on a thread of its own when there are several
/// (PyTorch's parallel_apply), with the calling thread's grad mode and autocast state, and with
/// devices[i] as the thread's current CUDA device when it is one. Every thread is joined before
/// returning; the first replica's exception (by index) is rethrown unchanged, with its type. Error
/// when the three lists differ in length.
std::vector<Tensor> parallel_apply(const std::vector<Module*>& replicas, const std::vector<Tensor>& inputs,
                                     const std::vector<Device>& devices);

}  // namespace parallel

/// Data parallelism in one process (PyTorch's torch.nn.DataParallel): each call replicates the
/// module onto every device, splits the batch along dim 0 among the replicas, runs them on one thread
/// each and concatenates their outputs on the output device. Backward sums the replicas' gradients
/// into the module's own parameters, so the optimizer is built on model.parameters() as usual:
/// \code
/// Net model;
/// model.to(tg::Device::cuda(0));                          // the module lives on device_ids[0]
/// tg::nn::DataParallel dp(model, /*device_ids=*/{0, 1});
/// tg::optim::SGD optimizer(model.parameters(), 0.01);
/// auto loss = criterion(dp(inputs), targets.to(tg::Device::cuda(0)));   // output on cuda:0
/// loss.backward();                                         // model's gradients: sums over both GPUs
/// \endcode
/// As in PyTorch: without a usable CUDA device the device ids are ignored and dp(x) is module(x);
/// with one device the module is moved there at construction and dp(x) is module(x.to(device)); a
/// batch smaller than the device count uses fewer replicas (torch.chunk's sizes); the module's
/// parameters and buffers must be on the first device when dp(x) is called (DeviceError otherwise).
/// Replicas are made anew by every call (Module::clone, so user modules derive from nn::Cloneable),
/// with the module's forward hooks and training mode; what a replica writes into its buffers is
/// lost. A pruned module's replicas compute weight = weight_orig * weight_mask from their copies,
/// and the gradient lands on the module's weight_orig, as PyTorch's. The module is held by
/// reference and must outlive the DataParallel; it is registered as the child "module" (parameters
/// named "module.fc1.weight", as in PyTorch).
class DataParallel : public Module {
 public:
  /// Every visible CUDA device; without one, module(x) as it is.
  explicit DataParallel(Module& module);
  /// CUDA devices by index; output_device: where outputs are gathered (default device_ids[0], -1 the
  /// CPU). Without a usable CUDA device the ids are ignored (module(x) as it is). DeviceError for an id
  /// that is negative or not below cuda::device_count(), and for an empty list when CUDA is usable.
  DataParallel(Module& module, std::vector<int> device_ids, std::optional<int> output_device = std::nullopt);
  /// Any devices, the CPU included, several times over: `{Device::cpu(), Device::cpu()}` runs two
  /// replicas on two threads of the CPU, which is how the scatter, gather and gradient sums are
  /// tested without a GPU. "cuda" without an index means the current device. output_device defaults
  /// to devices[0]. DeviceError for an empty list or a CUDA device that is not usable.
  DataParallel(Module& module, std::vector<Device> devices, std::optional<Device> output_device = std::nullopt);

  /// module(x) run data-parallel as described above; x (N, ...) -> the concatenated outputs (N, ...).
  /// ShapeError for an undefined or 0-d x.
  Tensor forward(const Tensor& x) override;
  /// "DataParallel".
  std::string name() const override { return "DataParallel"; }

  /// The wrapped module (PyTorch's dp.module).
  Module& module() const { return *module_; }
  /// The devices replicas run on, in order; empty when dp(x) runs the module as it is.
  const std::vector<Device>& devices() const { return devices_; }
  /// Where outputs are gathered.
  Device output_device() const { return output_device_; }

 private:
  void init(std::vector<Device> devices, std::optional<Device> output_device);
  Module* module_;
  std::vector<Device> devices_;
  Device output_device_;
};

}  // namespace nn
}  // namespace tg
