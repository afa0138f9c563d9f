/// \file
/// autograd/grad_mode.h: thread-local switches of the autograd engine: grad mode (NoGradGuard,
/// EnableGradGuard) and anomaly detection (autograd::DetectAnomalyGuard). Read by record() and by the backward pass.
#pragma once

namespace tg {

/// The calling thread's grad mode (PyTorch's torch::GradMode): while off, ops record no graph.
/// Prefer NoGradGuard, which restores the previous mode.
struct GradMode {
  /// True unless grad mode was switched off on this thread (the default is on).
  static bool is_enabled();
  /// Switches grad mode on or off for the calling thread.
  static void set_enabled(bool enabled);
};

/// While alive, ops on this thread record no graph and their results do not require grad
/// (PyTorch's torch::NoGradGuard, `with torch.no_grad():`). Nests.
class NoGradGuard {
 public:
  /// Switches grad mode off for this thread.
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  /// Restores the mode the constructor found.
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;
 private:
  bool prev_;
};

/// While alive, ops on this thread record the graph again, also inside a NoGradGuard or a backward
/// pass (PyTorch's torch::AutoGradMode(true), `with torch.enable_grad():`). Nests; restores the mode
/// it found. tg::checkpoint's recomputation runs under one.
class EnableGradGuard {
 public:
  /// Switches grad mode on for this thread.
  EnableGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  /// Restores the mode the constructor found.
  ~EnableGradGuard() { GradMode::set_enabled(prev_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;
 private:
  bool prev_;
};

namespace autograd {
/// The calling thread's anomaly detection switch (PyTorch's torch.autograd.set_detect_anomaly).
/// Prefer DetectAnomalyGuard, which restores the previous setting.
struct AnomalyMode {
  /// True while anomaly detection is on for this thread (off by default).
  static bool is_enabled();
  /// Switches anomaly detection on or off for the calling thread.
  static void set_enabled(bool enabled);
};

/// While alive, backward checks every gradient it computes and throws AutogradError naming the op
/// whose backward produced NaN or Inf (PyTorch's torch.autograd.detect_anomaly).
class DetectAnomalyGuard {
 public:
  /// Switches anomaly detection on for this thread.
  DetectAnomalyGuard() : prev_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  /// Restores the setting the constructor found.
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;
 private:
  bool prev_;
};
}  // namespace autograd

namespace detail {
/// Whether a differentiable backward rule runs on this thread: autocast leaves its ops alone, so a
/// backward inside an autocast region computes each gradient in the dtypes its forward saved, as a
/// first-order rule's prims do (ops/autocast.cpp reads it).
bool in_backward_rule();
/// Marks the calling thread as running a differentiable rule while alive (the engine's).
class BackwardRuleScope {
 public:
  BackwardRuleScope();
  ~BackwardRuleScope();
  BackwardRuleScope(const BackwardRuleScope&) = delete;
  BackwardRuleScope& operator=(const BackwardRuleScope&) = delete;
 private:
  bool prev_;
};
}  // namespace detail

}  // namespace tg
