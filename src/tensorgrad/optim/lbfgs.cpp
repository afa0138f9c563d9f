// optim/lbfgs.cpp: LBFGS::step(closure) and the strong-Wolfe line search, torch.optim.LBFGS (PyTorch
// 2.x) line by line: the flat vectors are RawTensors on the parameters' device, the scalars (dot
// products, step lengths, losses) doubles read back from it, as PyTorch reads them with float() and
// Python comparisons. Declarations: optim/lbfgs.h.
#include "tensorgrad/optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace optim {

namespace {

double dot(const RawTensor& a, const RawTensor& b) { return prim::sum(prim::mul(a, b)).item(); }
RawTensor abs(const RawTensor& x) { return prim::unary(UnaryOp::Abs, x); }
double abs_max(const RawTensor& x) { return prim::reduce(ReduceOp::Max, abs(x), {}, false, "LBFGS").item(); }
/// x += alpha y in place (torch's add_(y, alpha=alpha)).
void add_scaled_(const RawTensor& x, const RawTensor& y, double alpha) {
  prim::binary_(BinaryOp::Add, x, prim::mul(y, alpha), "LBFGS");
}

/// The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2, clamped to the
/// bounds (default: between x1 and x2); their midpoint when the cubic has no minimum (PyTorch's
/// _cubic_interpolate).
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2, const double* bounds = nullptr) {
  double lo, hi;
  if (bounds != nullptr) {
    lo = bounds[0];
    hi = bounds[1];
  } else if (x1 <= x2) {
    lo = x1;
    hi = x2;
  } else {
    lo = x2;
    hi = x1;
  }
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);   // Python's min(max(...)): NaN min_pos gives lo's side
  }
  return (lo + hi) / 2.0;
}

struct Wolfe {
  double f;
  RawTensor g;
  double t;
  int64_t evals;
};

/// PyTorch's _strong_wolfe: a step t along d from x (loss f, gradient g, slope gtd) that satisfies the
/// strong Wolfe conditions (c1, c2), in at most max_ls evaluations of obj(t).
Wolfe strong_wolfe(const std::function<std::pair<double, RawTensor>(double)>& obj, double t, const RawTensor& d,
                   double f, const RawTensor& g, double gtd, int64_t max_ls, double c1 = 1e-4, double c2 = 0.9,
                   double tolerance_change = 1e-9) {
  const double d_norm = abs_max(d);
  auto [f_new, g_new] = obj(t);
  int64_t evals = 1;
  double gtd_new = dot(g_new, d);
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  RawTensor g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<RawTensor> bracket_g;
  while (ls_iter < max_ls) {
    if (f_new > (f + c1 * t * gtd) || (ls_iter > 1 && f_new >= f_prev)) {
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::fabs(gtd_new) <= -c2 * gtd) {
      bracket = {t};
      bracket_f = {f_new};
      bracket_g = {g_new};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    const double bounds[2] = {t + 0.01 * (t - t_prev), t * 10};   // interpolate beyond t
    const double tmp = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds);
    t_prev = tmp;
    f_prev = f_new;
    g_prev = g_new;
    gtd_prev = gtd_new;
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls) {   // reached the most evaluations
    bracket = {0, t};
    bracket_f = {f, f_new};
    bracket_g = {g, g_new};
  }
  // Zoom: shrink the bracket until a point satisfies the conditions (PyTorch's second loop).
  bool insuf_progress = false;
  std::size_t low = bracket_f.front() <= bracket_f.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::fabs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    const double bmax = std::max(bracket[0], bracket[1]), bmin = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (bmax - bmin);
    if (std::min(bmax - t, t - bmin) < eps) {   // too close to an end: move away from it
      if (insuf_progress || t >= bmax || t <= bmin) {
        t = std::fabs(t - bmax) < std::fabs(t - bmin) ? bmax - eps : bmin + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = dot(g_new, d);
    ++ls_iter;
    if (f_new > (f + c1 * t * gtd) || f_new >= bracket_f[low]) {
      bracket[high] = t;
      bracket_f[high] = f_new;
      bracket_g[high] = g_new;
      bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1;
      high = 1 - low;
    } else {
      if (std::fabs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        bracket[high] = bracket[low];
        bracket_f[high] = bracket_f[low];
        bracket_g[high] = bracket_g[low];
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t;
      bracket_f[low] = f_new;
      bracket_g[low] = g_new;
      bracket_gtd[low] = gtd_new;
    }
  }
  return Wolfe{bracket_f[low], bracket_g[low], bracket[low], evals};
}

}  // namespace

void LBFGSOptions::check(const std::string& who) const {
  TG_CHECK(max_iter_ > 0, Error, who, ": max_iter must be positive, got ", max_iter_);
  TG_CHECK(!max_eval_ || *max_eval_ > 0, Error, who, ": max_eval must be positive, got ", max_eval_.value_or(0));
  TG_CHECK(history_size_ > 0, Error, who, ": history_size must be positive, got ", history_size_);
  TG_CHECK(tolerance_grad_ >= 0, Error, who, ": invalid tolerance_grad ", tolerance_grad_);
  TG_CHECK(tolerance_change_ >= 0, Error, who, ": invalid tolerance_change ", tolerance_change_);
  TG_CHECK(!line_search_fn_ || *line_search_fn_ == "strong_wolfe", Error, who, ": only 'strong_wolfe' is supported as "
           "line_search_fn, got '", line_search_fn_.value_or(""), "'");
}

namespace {
LBFGSOptions with_max_eval(LBFGSOptions o) {
  if (!o.max_eval_) o.max_eval_ = o.max_iter_ * 5 / 4;   // PyTorch fixes it when the optimizer is built
  return o;
}
}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions options)
    : Optimizer(std::vector<ParamGroup>{ParamGroup{std::move(params)}}, with_max_eval(options), "LBFGS") {
  for (const Tensor& p : params_)
    TG_CHECK(p.device() == params_.front().device(), DeviceError, "LBFGS: every parameter must be on one device (",
             params_.front().device(), " and ", p.device(), "): it works on one flat vector");
}

void LBFGS::step() {
  throw Error("LBFGS: step() needs the closure that re-evaluates the loss: step(closure), with a closure that zeroes "
              "the gradients, computes the loss, calls backward() and returns the loss");
}

int64_t LBFGS::numel() const {
  int64_t n = 0;
  for (const Tensor& p : params_) n += p.numel();
  return n;
}

RawTensor LBFGS::gather_flat_grad() const {
  std::vector<RawTensor> views;
  for (const Tensor& p : params_) {
    const Tensor g = p.grad();
    views.push_back(g.defined() ? g.data().contiguous().reshape({p.numel()})
                                : prim::full({p.numel()}, 0.0, p.dtype(), p.device()));
  }
  return prim::cat(views, 0);
}

void LBFGS::add_grad(double step, const RawTensor& update) {
  int64_t offset = 0;
  for (const Tensor& p : params_) {
    const int64_t n = p.numel();
    add_scaled_(p.data(), update.narrow(0, offset, n).reshape(p.shape()), step);
    offset += n;
  }
}

std::pair<double, RawTensor> LBFGS::directional_evaluate(const std::function<Tensor()>& closure,
                                                         const std::vector<RawTensor>& x, double t,
                                                         const RawTensor& d) {
  {
    NoGradGuard no_grad;
    add_grad(t, d);
  }
  const double loss = closure().item();
  const RawTensor flat_grad = gather_flat_grad();
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) prim::copy_(params_[i].data(), x[i]);
  return {loss, flat_grad};
}

Tensor LBFGS::step(const std::function<Tensor()>& closure) {
  TG_CHECK(static_cast<bool>(closure), Error, "LBFGS: step(closure) got an empty closure");
  TG_CHECK(num_param_groups() == 1, Error, "LBFGS doesn't support per-parameter options (parameter groups)");
  check_grads("LBFGS");   // the group's options
  const LBFGSOptions& o = options_of<LBFGSOptions>(0);
  const double lr = o.lr_;
  const int64_t max_iter = o.max_iter_, max_eval = o.max_eval_.value_or(o.max_iter_ * 5 / 4);
  const double tolerance_grad = o.tolerance_grad_, tolerance_change = o.tolerance_change_;
  const int64_t history_size = o.history_size_;
  const bool wolfe = o.line_search_fn_.has_value();
  EnableGradGuard enable_grad;   // the closure records its graph even inside a NoGradGuard

  const Tensor orig_loss = closure();
  double loss = orig_loss.item();
  int64_t current_evals = 1;
  ++func_evals_;
  RawTensor flat_grad = gather_flat_grad();
  bool opt_cond = abs_max(flat_grad) <= tolerance_grad;
  if (opt_cond) return orig_loss;   // already at a stationary point

  RawTensor d = d_, prev_flat_grad = prev_flat_grad_;
  double t = t_, h_diag = h_diag_, prev_loss = prev_loss_;
  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    ++n_iter;
    ++n_iter_;
    if (n_iter_ == 1) {   // the first iteration ever: steepest descent
      d = prim::mul(flat_grad, -1.0);
      old_dirs_.clear();
      old_stps_.clear();
      ro_.clear();
      h_diag = 1;
    } else {
      // the curvature pair of the last iteration, kept when y.s shows positive curvature
      const RawTensor y = prim::sub(flat_grad, prev_flat_grad);
      const RawTensor s = prim::mul(d, t);
      const double ys = dot(y, s);
      if (ys > 1e-10) {
        if (static_cast<int64_t>(old_dirs_.size()) == history_size) {
          old_dirs_.erase(old_dirs_.begin());
          old_stps_.erase(old_stps_.begin());
          ro_.erase(ro_.begin());
        }
        old_dirs_.push_back(y);
        old_stps_.push_back(s);
        ro_.push_back(1.0 / ys);
        h_diag = ys / dot(y, y);
      }
      // the two-loop recursion: d = -H g
      const std::size_t num_old = old_dirs_.size();
      std::vector<double> al(num_old);
      RawTensor q = prim::mul(flat_grad, -1.0);
      for (std::size_t k = num_old; k-- > 0;) {
        al[k] = dot(old_stps_[k], q) * ro_[k];
        add_scaled_(q, old_dirs_[k], -al[k]);
      }
      RawTensor r = prim::mul(q, h_diag);
      for (std::size_t k = 0; k < num_old; ++k) {
        const double be_k = dot(old_dirs_[k], r) * ro_[k];
        add_scaled_(r, old_stps_[k], al[k] - be_k);
      }
      d = r;
    }
    prev_flat_grad = flat_grad.clone();
    prev_loss = loss;
    if (n_iter_ == 1) {
      const double sum = prim::sum(abs(flat_grad)).item();
      t = std::min(1.0, 1.0 / sum) * lr;
    } else {
      t = lr;
    }
    const double gtd = dot(flat_grad, d);
    if (gtd > -tolerance_change) break;   // not a descent direction any more

    int64_t ls_func_evals = 0;
    if (wolfe) {
      std::vector<RawTensor> x_init;
      for (const Tensor& p : params_) x_init.push_back(p.data().clone());
      const Wolfe w = strong_wolfe([&](double step) { return directional_evaluate(closure, x_init, step, d); }, t, d,
                                   loss, flat_grad, gtd, max_eval - current_evals);
      loss = w.f;
      flat_grad = w.g;
      t = w.t;
      ls_func_evals = w.evals;
      NoGradGuard no_grad;
      add_grad(t, d);
      opt_cond = abs_max(flat_grad) <= tolerance_grad;
    } else {
      {
        NoGradGuard no_grad;
        add_grad(t, d);
      }
      if (n_iter != max_iter) {   // re-evaluate, except after the last iteration
        loss = closure().item();
        flat_grad = gather_flat_grad();
        opt_cond = abs_max(flat_grad) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    func_evals_ += ls_func_evals;
    if (n_iter == max_iter || current_evals >= max_eval || opt_cond) break;
    if (abs_max(prim::mul(d, t)) <= tolerance_change) break;   // the step became negligible
    if (std::fabs(loss - prev_loss) < tolerance_change) break;   // so did the loss's change
  }
  d_ = d;
  t_ = t;
  h_diag_ = h_diag;
  prev_flat_grad_ = prev_flat_grad;
  prev_loss_ = prev_loss;
  return orig_loss;
}

std::vector<std::pair<std::string, RawTensor>> LBFGS::state() const {
  std::vector<std::pair<std::string, RawTensor>> out;
  if (n_iter_ == 0) return out;
  auto scalar = [](double v) { return prim::from_host(&v, {}, kFloat64, Device::cpu()); };
  out.emplace_back("func_evals", prim::from_host(&func_evals_, {}, kInt64, Device::cpu()));
  out.emplace_back("n_iter", prim::from_host(&n_iter_, {}, kInt64, Device::cpu()));
  out.emplace_back("d", d_);
  out.emplace_back("prev_flat_grad", prev_flat_grad_);
  out.emplace_back("t", scalar(t_));
  out.emplace_back("H_diag", scalar(h_diag_));
  out.emplace_back("prev_loss", scalar(prev_loss_));
  for (std::size_t k = 0; k < old_dirs_.size(); ++k) {
    out.emplace_back("old_dirs." + std::to_string(k), old_dirs_[k]);
    out.emplace_back("old_stps." + std::to_string(k), old_stps_[k]);
    out.emplace_back("ro." + std::to_string(k), scalar(ro_[k]));
  }
  return out;
}

void LBFGS::set_state(const std::vector<std::pair<std::string, RawTensor>>& entries) {
  // Validate every entry, then copy onto the parameters' device, then swap.
  const char* who = "LBFGS::set_state";
  std::map<std::string, RawTensor> by_name;
  for (const auto& [name, t] : entries) {
    TG_CHECK(t.defined(), Error, who, ": entry \"", name, "\" is undefined");
    TG_CHECK(by_name.emplace(name, t).second, Error, who, ": duplicate entry \"", name, "\"");
  }
  if (by_name.empty()) {
    func_evals_ = n_iter_ = 0;
    d_ = prev_flat_grad_ = RawTensor();
    old_dirs_.clear();
    old_stps_.clear();
    ro_.clear();
    return;
  }
  const Device device = params_.front().device();
  DType flat_dtype = params_.front().dtype();
  for (const Tensor& p : params_) flat_dtype = promote_types(flat_dtype, p.dtype());
  auto take = [&](const std::string& name) {
    auto it = by_name.find(name);
    TG_CHECK(it != by_name.end(), Error, who, ": the state is incomplete: no entry \"", name, "\"");
    RawTensor t = it->second;
    by_name.erase(it);
    return t;
  };
  auto integer = [&](const std::string& name) {
    const RawTensor t = take(name);
    TG_CHECK(t.dtype() == kInt64 && t.numel() == 1, Error, who, ": \"", name, "\" must be a one-element int64 tensor");
    return t.to(Device::cpu()).contiguous().data<int64_t>()[0];
  };
  auto real = [&](const std::string& name) {
    const RawTensor t = take(name);
    TG_CHECK(t.dtype() == kFloat64 && t.numel() == 1, Error, who, ": \"", name, "\" must be a one-element float64 "
             "tensor");
    return t.to(Device::cpu()).contiguous().data<double>()[0];
  };
  auto flat = [&](const std::string& name) {
    const RawTensor t = take(name);
    TG_CHECK(t.dim() == 1 && t.numel() == numel(), ShapeError, who, ": \"", name, "\" must have shape [", numel(),
             "] (every parameter's elements), got ", shape_str(t.shape()));
    TG_CHECK(t.dtype() == flat_dtype, DTypeError, who, ": \"", name, "\" must be ", dtype_name(flat_dtype), ", got ",
             dtype_name(t.dtype()));
    return private_copy(t, device);
  };
  const int64_t func_evals = integer("func_evals"), n_iter = integer("n_iter");
  TG_CHECK(func_evals >= 1 && n_iter >= 1, Error, who, ": func_evals and n_iter must be at least 1");
  RawTensor d = flat("d"), prev = flat("prev_flat_grad");
  const double t = real("t"), h_diag = real("H_diag"), prev_loss = real("prev_loss");
  std::vector<RawTensor> dirs, stps;
  std::vector<double> ro;
  while (by_name.count("old_dirs." + std::to_string(dirs.size()))) {
    const std::string k = std::to_string(dirs.size());
    dirs.push_back(flat("old_dirs." + k));
    stps.push_back(flat("old_stps." + k));
    ro.push_back(real("ro." + k));
  }
  TG_CHECK(by_name.empty(), Error, who, ": unexpected entry \"", by_name.begin()->first, "\"");
  TG_CHECK(static_cast<int64_t>(dirs.size()) <= options_of<LBFGSOptions>(0).history_size_, Error, who, ": ",
           dirs.size(), " curvature pairs exceed history_size ", options_of<LBFGSOptions>(0).history_size_);
  func_evals_ = func_evals;
  n_iter_ = n_iter;
  d_ = d;
  prev_flat_grad_ = prev;
  t_ = t;
  h_diag_ = h_diag;
  prev_loss_ = prev_loss;
  old_dirs_ = std::move(dirs);
  old_stps_ = std::move(stps);
  ro_ = std::move(ro);
}

}  // namespace optim
}  // namespace tg
