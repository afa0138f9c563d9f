/// \file
/// optim/grad_scaler.h: GradScaler, the loss scaling of mixed-precision training (PyTorch's
/// torch.amp.GradScaler): scale the loss, unscale the gradients and check them for inf/NaN, skip the
/// optimizer step that would apply them, and grow or back off the scale. Its checkpoint state goes
/// through tg::save / tg::load like an optimizer's (io/checkpoint.h). Autocast (which ops run in low
/// precision) is not here.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {

namespace optim { class Optimizer; }

namespace amp {

/// Options of GradScaler with PyTorch's defaults, e.g. GradScalerOptions().init_scale(1024).growth_interval(100).
struct GradScalerOptions {
  /// The scale before the first update (default 2^16); positive and finite, else Error.
  GradScalerOptions& init_scale(double s) { init_scale_ = s; return *this; }
  /// What update() multiplies the scale by after growth_interval clean steps (default 2; > 1, else Error).
  GradScalerOptions& growth_factor(double f) { growth_factor_ = f; return *this; }
  /// What update() multiplies the scale by after a step with inf/NaN gradients (default 0.5; in (0, 1),
  /// else Error).
  GradScalerOptions& backoff_factor(double f) { backoff_factor_ = f; return *this; }
  /// Consecutive clean steps before the scale grows (default 2000; >= 1, else Error).
  GradScalerOptions& growth_interval(int64_t n) { growth_interval_ = n; return *this; }
  /// false: every member is a pass-through (scale returns its input, step calls optimizer.step(),
  /// update does nothing), so one training loop serves both (default true).
  GradScalerOptions& enabled(bool e) { enabled_ = e; return *this; }
  double init_scale_ = 65536.0;    ///< see init_scale()
  double growth_factor_ = 2.0;     ///< see growth_factor()
  double backoff_factor_ = 0.5;    ///< see backoff_factor()
  int64_t growth_interval_ = 2000;   ///< see growth_interval()
  bool enabled_ = true;            ///< see enabled()
};

/// Loss scaling for mixed-precision training, with torch.amp.GradScaler's semantics:
///
///     scaler.scale(loss).backward();   // gradients of loss * S
///     scaler.unscale_(optimizer);      // optional (before clip_grad_norm): gradients / S, checked for inf/NaN
///     scaler.step(optimizer);          // optimizer.step() unless some gradient was inf/NaN
///     scaler.update();                 // S *= backoff_factor after an inf/NaN, S *= growth_factor after
///                                      // growth_interval clean steps in a row
///
/// Note [GradScaler synchronization]: the scale S is a float32 number kept on the host (PyTorch
/// stores a float32 tensor; the values are the same, rounded the same way). scale() multiplies by a
/// 0-d copy of it on the loss's device, made once for each value of S. unscale_() multiplies each
/// gradient in place by float32(1 / S) and reduces the gradients to one device-side flag per device
/// (0, or NaN when some element was inf/NaN) without reading anything back. step() reads that flag,
/// one host synchronization per optimizer and device, because it has to decide on the host whether
/// optimizer.step() runs; update() reuses what step() read and reads only the flags of optimizers
/// that were unscaled but not stepped. get_scale() never synchronizes.
///
/// Inside a CUDA graph capture (Note [GradScaler in CUDA graphs] in optim/grad_scaler.cpp) scale(),
/// unscale_(), step() and update() read nothing back: S and the growth tracker live in device memory
/// the captured work reads and update() rewrites with the same rule, and step() captures the
/// optimizer's update so that a replay whose gradients held an inf/NaN keeps the old parameters and
/// state, step counts included (optim::Optimizer::capture_step_unless_found). step() inside a capture
/// supports SGD and Adam/AdamW with capturable(true) (Error for other optimizers) and returns true
/// (whether a replay applies the step is decided on the device).
/// After replays, the first call outside a capture (get_scale() included) reads S and the tracker
/// back once.
///
/// Several optimizers can share one scaler: each has its own unscale_/step state until update(),
/// which backs off when any of them saw an inf/NaN. Errors (tg::Error, PyTorch's messages): a second
/// unscale_() or step() on one optimizer before update(), unscale_() after step(), unscale_/step/update
/// before any scale() (nothing was scaled), step() or update() when no gradient was checked.
class GradScaler {
 public:
  /// A scaler with the given options (PyTorch's defaults without them). Error for options out of
  /// range (see GradScalerOptions).
  explicit GradScaler(GradScalerOptions options = {});

  /// outputs * S, recorded in the graph (so backward produces gradients scaled by S). outputs must be
  /// floating (DTypeError); S is a 0-d float32 tensor on outputs' device, so a float16 or bfloat16
  /// output gives a float32 product (type promotion, as in PyTorch). Disabled: outputs.
  Tensor scale(const Tensor& outputs);
  /// scale() of each output (for several losses backwarded together).
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs);

  /// Divides the gradient of each of optimizer's parameters by S in place (a multiplication by
  /// float32(1 / S), as PyTorch does) and records, per device, whether any element was inf/NaN
  /// before the division. Parameters without a gradient are skipped. Error when it was already called
  /// for this optimizer since the last update(), or after step(). Disabled: does nothing.
  void unscale_(optim::Optimizer& optimizer);

  /// Unscales optimizer's gradients if unscale_() was not called, then runs optimizer.step() unless
  /// some gradient was inf/NaN. Returns whether optimizer.step() ran (PyTorch returns the closure's
  /// result or None; a bool tells C++ callers whether the step was skipped). Error when step() was
  /// already called for this optimizer since the last update(), or when no parameter has a gradient.
  /// Disabled: optimizer.step(), true.
  bool step(optim::Optimizer& optimizer);

  /// Ends the iteration: S *= backoff_factor and the growth tracker resets when any optimizer stepped
  /// or unscaled since the last update() saw an inf/NaN gradient; else the tracker counts the clean
  /// step and, on reaching growth_interval, S *= growth_factor (kept when that would overflow float32)
  /// and the tracker resets. Products are taken in float64 and rounded to float32, as PyTorch's
  /// _amp_update_scale_. Two guards PyTorch lacks: S never falls below the smallest normal float32
  /// (its reciprocal stays finite), and a tracker already past growth_interval (after
  /// set_growth_interval or a load) grows at the next clean step. Error when no gradient was checked
  /// since the last update(). Disabled: does nothing.
  void update();
  /// Ends the iteration with S = new_scale (rounded to float32) instead; the growth tracker is left as
  /// is (PyTorch's update(new_scale)). Error unless new_scale is positive and finite.
  void update(double new_scale);

  /// The current S (1.0 when disabled); no synchronization (Note [GradScaler synchronization]),
  /// except the one read of S after replays of a graph that captured this scaler.
  double get_scale() const;
  /// The growth factor.
  double get_growth_factor() const { return growth_factor_; }
  /// Sets the growth factor (Error unless > 1).
  void set_growth_factor(double f);
  /// The backoff factor.
  double get_backoff_factor() const { return backoff_factor_; }
  /// Sets the backoff factor (Error unless in (0, 1)).
  void set_backoff_factor(double f);
  /// The growth interval.
  int64_t get_growth_interval() const { return growth_interval_; }
  /// Sets the growth interval (Error unless >= 1).
  void set_growth_interval(int64_t n);
  /// Clean steps since the last growth or backoff (PyTorch's _get_growth_tracker()); read back once
  /// after replays of a graph that captured this scaler.
  int64_t get_growth_tracker() const;
  /// Whether the scaler is enabled.
  bool is_enabled() const { return enabled_; }


  /// PyTorch's state_dict keys as 0-d CPU tensors: "scale", "growth_factor" and "backoff_factor"
  /// (float64), "growth_interval" and "_growth_tracker" (int64). Empty when disabled. tg::save(scaler,
  /// path) writes it.
  std::vector<std::pair<std::string, RawTensor>> state_dict() const;
  /// Loads entries named as state_dict() names them, each once, each 0-d or of one element (the
  /// integers int64, the others floating): all five, no others, values in range (Error otherwise,
  /// before anything changes). Disabled: does nothing.
  /// An empty state is refused with PyTorch's message (it comes from a disabled scaler).
  void load_state_dict(const std::vector<std::pair<std::string, RawTensor>>& state);

 private:
  /// Where one optimizer is in the iteration (PyTorch's OptState).
  enum class Stage { kReady, kUnscaled, kStepped };
  /// One optimizer's iteration: its stage and the inf/NaN flags unscale_ left for each device.
  struct OptimizerState {
    const optim::Optimizer* optimizer = nullptr;
    Stage stage = Stage::kReady;
    std::vector<RawTensor> found_inf;   // 0-d float32 per device: 0, or NaN when a gradient was inf/NaN
    bool found_read = false;         // step() read found_inf: the answer is in any_inf
    bool any_inf = false;
  };
  OptimizerState& state_of(const optim::Optimizer& optimizer);
  /// scale_ = s; the device copies of an older value are dropped (scale() makes fresh ones).
  void set_scale(float s);
  /// Error naming `what` when no scale() ran yet (PyTorch's "_scale is None").
  void check_scaled(const char* what) const;
  /// Whether any of the flags (0-d float32, as OptimizerState::found_inf) is set; one host read per device.
  static bool read_found_inf(const std::vector<RawTensor>& flags);

  /// The scale and growth tracker in device memory, for work captured into CUDA graphs.
  struct DeviceState;
  /// Whether work on `device` is being captured into a CUDA graph now.
  static bool capturing(Device device);
  /// The device state's (scale, tracker) as float64 (2) on `device`, created in the current capture
  /// when there is none, with a replay hook that writes the host's values there when they are newer.
  RawTensor device_values(Device device);
  /// When replays left newer values on the device than on the host: reads them back (one
  /// synchronization) into scale_ and growth_tracker_.
  void pull_device_state() const;
  /// After the host changed scale_ or growth_tracker_: what the next replay writes to the device.
  void push_host_state();
  /// Inside a capture: the sum of every recorded inf/NaN flag (0-d float32 on the capture's device).
  RawTensor found_inf_on_device(const std::vector<RawTensor>& flags, const char* who);
  /// Inside a capture: the update rule applied to the device state, with `found` the summed flag.
  void update_on_device(const RawTensor& found);

  bool enabled_;
  double growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  double init_scale_;            // what get_scale() gives before the first scale(), which rounds it into scale_
  bool scaled_ = false;          // scale() ran: scale_ is live
  float scale_ = 0;
  int64_t growth_tracker_ = 0;
  std::vector<RawTensor> scale_on_device_;   // 0-d copies of scale_, one per (device, dtype) scale() saw
  std::vector<OptimizerState> optimizers_;
  std::shared_ptr<DeviceState> device_;   // shared with the replay hooks of graphs that captured the scaler
};

}  // namespace amp

}  // namespace tg
