// optim/lbfgs.h: L-BFGS (torch.optim.LBFGS, PyTorch 2.x's algorithm), stepped with a closure that
// re-evaluates the loss, optionally with the strong-Wolfe line search. One parameter group; the
// parameters are handled as one flat vector. Implemented in optim/lbfgs.cpp.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/optim/optimizer.h"

namespace tg {
namespace optim {

/// Options of LBFGS (torch.optim.LBFGS's defaults, libtorch's spelling): LBFGSOptions(1).max_iter(20)
/// .max_eval(max_iter * 5 / 4).tolerance_grad(1e-7).tolerance_change(1e-9).history_size(100)
/// .line_search_fn("strong_wolfe") (default none). Each setter has a getter of the same name.
struct LBFGSOptions : OptionsBase<LBFGSOptions> {
  /// The learning rate (default 1): the step length without line search, its first trial with it.
  LBFGSOptions(double lr = 1) : lr_(lr) {}   // NOLINT: LBFGS(params, 1.0)
  /// Sets the learning rate.
  LBFGSOptions& lr(double v) { lr_ = v; return *this; }
  /// The learning rate.
  double lr() const { return lr_; }
  /// The most iterations per step (default 20; Error unless positive).
  LBFGSOptions& max_iter(int64_t v) { max_iter_ = v; return *this; }
  /// The most iterations per step.
  int64_t max_iter() const { return max_iter_; }
  /// The most closure evaluations per step (default max_iter * 5 / 4, fixed when the optimizer is built).
  LBFGSOptions& max_eval(std::optional<int64_t> v) { max_eval_ = v; return *this; }
  /// The most closure evaluations per step; unset: max_iter * 5 / 4.
  std::optional<int64_t> max_eval() const { return max_eval_; }
  /// A step ends when max |gradient| falls to this (default 1e-7).
  LBFGSOptions& tolerance_grad(double v) { tolerance_grad_ = v; return *this; }
  /// The gradient tolerance.
  double tolerance_grad() const { return tolerance_grad_; }
  /// A step ends when the loss or the parameters change by less (default 1e-9).
  LBFGSOptions& tolerance_change(double v) { tolerance_change_ = v; return *this; }
  /// The change tolerance.
  double tolerance_change() const { return tolerance_change_; }
  /// The number of curvature pairs kept (default 100; Error unless positive).
  LBFGSOptions& history_size(int64_t v) { history_size_ = v; return *this; }
  /// The number of curvature pairs kept.
  int64_t history_size() const { return history_size_; }
  /// "strong_wolfe" or none (default): Error for another name, when the optimizer is built (PyTorch at
  /// the first step).
  LBFGSOptions& line_search_fn(std::optional<std::string> v) { line_search_fn_ = std::move(v); return *this; }
  /// The line search, if any.
  const std::optional<std::string>& line_search_fn() const { return line_search_fn_; }
  /// "LBFGSOptions".
  const char* type_name() const override { return "LBFGSOptions"; }
  /// max_iter, max_eval and history_size positive, tolerances not negative, line_search_fn known.
  void check(const std::string& who) const override;
  /// max_iter, tolerance_grad, tolerance_change, history_size (max_eval and line_search_fn, which
  /// are not numbers PyTorch's schedulers change, are not checkpointed).
  void fields(OptionFields& f) override {
    f("max_iter", max_iter_);
    f("tolerance_grad", tolerance_grad_);
    f("tolerance_change", tolerance_change_);
    f("history_size", history_size_);
  }
  double lr_;                                    ///< See lr().
  int64_t max_iter_ = 20;                        ///< See max_iter().
  std::optional<int64_t> max_eval_;              ///< See max_eval().
  double tolerance_grad_ = 1e-7;                 ///< See tolerance_grad().
  double tolerance_change_ = 1e-9;               ///< See tolerance_change().
  int64_t history_size_ = 100;                   ///< See history_size().
  std::optional<std::string> line_search_fn_;    ///< See line_search_fn().
};

/// torch.optim.LBFGS: each step(closure) runs up to max_iter quasi-Newton iterations from the
/// two-loop recursion over the last history_size curvature pairs (s, y), with a fixed step lr (the
/// first iteration of all min(1, 1 / sum |g|) lr) or the strong-Wolfe line search, and stops early on
/// tolerance_grad, tolerance_change or max_eval. The parameters must be on one device; their
/// gradients are read and their values written as one flat vector in the parameters' promoted dtype.
class LBFGS : public Optimizer {
 public:
  /// One group (LBFGS takes no parameter groups; add_param_group makes the next step raise).
  LBFGS(std::vector<Tensor> params, LBFGSOptions options = {});
  /// Error: LBFGS needs the closure, step(closure).
  void step() override;
  /// closure: zero the gradients, compute the loss, backward it, return it (called with gradients
  /// enabled, several times). Returns the closure's first loss.
  Tensor step(const std::function<Tensor()>& closure);
  /// The default options.
  const LBFGSOptions& options() const { return static_cast<const LBFGSOptions&>(defaults()); }
  /// PyTorch's state keys once a step ran: "func_evals", "n_iter" (0-d int64), "d", "prev_flat_grad"
  /// (the flat vectors), "t", "H_diag", "prev_loss" (0-d float64), and "old_dirs.<k>", "old_stps.<k>",
  /// "ro.<k>" for each stored curvature pair.
  std::vector<std::pair<std::string, RawTensor>> state() const override;
  /// Loads entries named as state() names them; Error before anything changes when one does not fit.
  void set_state(const std::vector<std::pair<std::string, RawTensor>>& state) override;

 private:
  RawTensor gather_flat_grad() const;
  void add_grad(double step, const RawTensor& update);
  /// f and the flat gradient at x + t d (the parameters are put back to x).
  std::pair<double, RawTensor> directional_evaluate(const std::function<Tensor()>& closure,
                                                    const std::vector<RawTensor>& x, double t, const RawTensor& d);
  int64_t numel() const;
  // PyTorch's state of the first parameter
  int64_t func_evals_ = 0, n_iter_ = 0;
  RawTensor d_, prev_flat_grad_;
  double t_ = 0, h_diag_ = 1, prev_loss_ = 0;
  std::vector<RawTensor> old_dirs_, old_stps_;
  std::vector<double> ro_;
};

}  // namespace optim
}  // namespace tg
