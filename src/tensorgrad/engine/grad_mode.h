/// \file
/// engine/grad_mode.h: thread-local switches of the autograd engine: grad mode (NoGradGuard) and
/// anomaly detection (autograd::DetectAnomalyGuard). Read by record() and by the backward pass.
#pragma once

namespace tg {

struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// While alive, ops on this thread record no graph and their results do not require grad.
class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;
 private:
  bool prev_;
};

namespace autograd {
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

/// While alive, backward checks every gradient it computes and throws AutogradError naming the op
/// whose backward produced NaN or Inf.
class DetectAnomalyGuard {
 public:
  DetectAnomalyGuard() : prev_(AnomalyMode::is_enabled()) { AnomalyMode::set_enabled(true); }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;
 private:
  bool prev_;
};
}  // namespace autograd

}  // namespace tg
