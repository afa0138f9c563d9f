// autograd/tools.cpp: gradcheck and to_dot. Both walk or perturb from the outside: neither
// changes how the engine (autograd/engine.cpp) runs.
#include "tensorgrad/autograd/tools.h"

#include <cmath>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace autograd {

namespace {

/// Fixed weights 1 + 0.5 sin(1 + i): distinct per element, no random stream consumed.
RawTensor projection_weights(const RawTensor& like) {
  RawTensor w = RawTensor::empty(like.shape(), kFloat64, Device::cpu());
  for (int64_t i = 0; i < w.numel(); ++i) w.data<double>()[i] = 1.0 + 0.5 * std::sin(1.0 + static_cast<double>(i));
  return w;
}

double scalar_value(const Tensor& y, const RawTensor& w) {
  const RawTensor yc = y.data().to(kFloat64).contiguous();
  double s = 0;
  for (int64_t i = 0; i < yc.numel(); ++i) s += yc.data<double>()[i] * w.data<double>()[i];
  return s;
}

/// Address of logical element `flat` (row-major order) of a strided CPU float64 tensor.
double* element(const RawTensor& t, int64_t flat) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    off += (flat % t.shape()[d]) * t.strides()[d];
    flat /= t.shape()[d];
  }
  return t.data<double>() + off;
}

}  // namespace

namespace {
thread_local const BackwardObserver* t_observer = nullptr;
}  // namespace

BackwardTraceGuard::BackwardTraceGuard(BackwardObserver observer) : observer_(std::move(observer)), prev_(t_observer) {
  t_observer = &observer_;
}
BackwardTraceGuard::~BackwardTraceGuard() { t_observer = prev_; }
const BackwardObserver* BackwardTraceGuard::current() { return t_observer; }

bool gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
               const GradcheckOptions& opt) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.requires_grad()) continue;
    TG_CHECK(in.dtype() == kFloat64, DTypeError, "gradcheck: input ", i, " is ", dtype_name(in.dtype()),
             "; gradcheck needs float64 inputs (finite differences in float32 are too coarse)");
    TG_CHECK(in.device().is_cpu(), DeviceError, "gradcheck: input ", i, " is on ", in.device(),
             "; run gradcheck on CPU tensors");
    for (int64_t d = 0; d < in.dim(); ++d)
      TG_CHECK(in.data().strides()[d] != 0 || in.shape()[d] <= 1, Error, "gradcheck: input ", i,
               " has overlapping (expanded) elements; pass a contiguous copy");
  }
  // Analytic: backward of sum(y * w).
  for (const Tensor& in : inputs)
    if (in.requires_grad()) const_cast<Tensor&>(in).zero_grad();
  const Tensor y = fn(inputs);
  TG_CHECK(y.defined() && is_floating(y.dtype()), Error, "gradcheck: the function must return a floating Tensor");
  const RawTensor w = projection_weights(y.data());
  if (y.requires_grad()) y.backward(Tensor(w.to(y.dtype()).to(y.device())));

  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.requires_grad()) continue;
    const Tensor ag = in.grad();
    const RawTensor analytic = ag.defined() ? ag.data().to(kFloat64).contiguous() : prim::zeros_like(in.data());
    const RawTensor& x = in.data();
    double worst_excess = -1;
    int64_t worst_at = -1;
    double worst_a = 0, worst_n = 0;
    for (int64_t j = 0; j < x.numel(); ++j) {
      double* p = element(x, j);
      const double orig = *p;
      double up, down;
      {
        NoGradGuard no_grad;
        *p = orig + opt.eps;
        up = scalar_value(fn(inputs), w);
        *p = orig - opt.eps;
        down = scalar_value(fn(inputs), w);
        *p = orig;
      }
      const double numeric = (up - down) / (2 * opt.eps);
      const double a = analytic.data<double>()[j];
      const double excess = std::fabs(a - numeric) - (opt.atol + opt.rtol * std::fabs(numeric));
      if (!(excess <= 0) && (worst_at < 0 || excess > worst_excess || std::isnan(excess))) {
        worst_excess = excess;
        worst_at = j;
        worst_a = a;
        worst_n = numeric;
      }
    }
    if (worst_at >= 0)
      throw AutogradError(detail::cat("gradcheck: Jacobian mismatch for input ", i, " (shape ", shape_str(x.shape()),
                                      ") at flat element ", worst_at, ": analytical ", worst_a, ", numerical ",
                                      worst_n, " (|difference| ", std::fabs(worst_a - worst_n), " > atol ", opt.atol,
                                      " + rtol ", opt.rtol, " * |numerical|)"));
  }
  return true;
}

bool gradgradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs,
                   const GradcheckOptions& opt) {
  std::vector<std::size_t> wrt;   // the inputs that require grad
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].requires_grad()) wrt.push_back(i);
  TG_CHECK(!wrt.empty(), AutogradError, "gradgradcheck: no input requires grad");
  Tensor y0;
  {
    NoGradGuard no_grad;
    y0 = fn(inputs);
  }
  TG_CHECK(y0.defined() && y0.dtype() == kFloat64, DTypeError, "gradgradcheck: the function must return a float64 Tensor");
  // grad_outputs: fixed, distinct values (not ones, which would hide a transposed rule), differentiated too
  RawTensor v0 = projection_weights(y0.data());
  for (int64_t i = 0; i < v0.numel(); ++i) v0.data<double>()[i] -= 0.75;
  std::vector<Tensor> extended = inputs;
  extended.push_back(Tensor(v0, /*requires_grad=*/true));
  // The first derivatives, projected on fixed weights w_k to one number (gradcheck projects a
  // non-scalar output the same way), as a function of the inputs and of v.
  auto first_order = [&fn, &wrt](const std::vector<Tensor>& in) {
    EnableGradGuard enable;   // gradcheck's finite differences call this under no-grad: the gradient needs a graph
    std::vector<Tensor> xs(in.begin(), in.end() - 1);
    const Tensor y = fn(xs);
    std::vector<Tensor> targets;
    for (std::size_t i : wrt) targets.push_back(xs[i]);
    Tensor total(prim::full({}, 0.0, kFloat64, Device::cpu()));
    if (!y.requires_grad()) return total;
    const std::vector<Tensor> g = grad({y}, targets, {in.back()}, /*retain_graph=*/true, /*create_graph=*/true,
                                       /*allow_unused=*/true);
    for (std::size_t k = 0; k < g.size(); ++k)
      if (g[k].defined()) total = total.add(g[k].mul(Tensor(projection_weights(g[k].data()))).sum());
    return total;
  };
  return gradcheck(first_order, extended, opt);
}

namespace {
/// ||t||_2 in float64 (syncs with t's device).
double l2_norm(const RawTensor& t) {
  const RawTensor d = t.to(kFloat64);
  return std::sqrt(prim::sum(prim::mul(d, d)).item());
}
std::string norm_str(double n) {
  std::ostringstream os;
  os << std::setprecision(4) << n;
  return os.str();
}
}  // namespace

GradNormRecorder::GradNormRecorder()
    : guard_([this](const Node& node, const RawTensor& grad) { norms_[&node] = l2_norm(grad); }) {}

std::string to_dot(const Tensor& v, const DotOptions& options) {
  std::unordered_map<const TensorImpl*, std::string> names;   // torchviz's params
  for (const auto& p : options.params_)
    if (p.second.defined()) names.emplace(p.second.impl().get(), p.first);
  // "fc1.weight\n[4, 3]" or "leaf [4, 3]", with "\n|grad| = 0.5" once it has one
  auto leaf_label = [&](const TensorImpl& leaf) {
    std::ostringstream os;
    auto it = names.find(&leaf);
    if (it != names.end()) os << it->second << "\\n" << shape_str(leaf.data.shape());
    else os << "leaf " << shape_str(leaf.data.shape()) << (leaf.requires_grad ? "\\nrequires_grad" : "");
    if (options.grad_norms_) {
      std::shared_ptr<TensorImpl> grad;
      {
        std::lock_guard<std::mutex> lock(tg::detail::grad_mutex());   // Note [Gradient slots] in autograd/engine.cpp
        grad = leaf.grad;
      }
      if (grad && grad->data.defined()) os << "\\n|grad| = " << norm_str(l2_norm(grad->data));
    }
    return os.str();
  };
  std::ostringstream os;
  os << "digraph tensorgrad {\n  rankdir=BT;\n  node [fontname=\"monospace\"];\n";
  if (!v.defined()) return os.str() + "}\n";
  if (!v.grad_fn()) {
    os << "  leaf0 [shape=ellipse, label=\"" << leaf_label(*v.impl()) << "\"];\n}\n";
    return os.str();
  }
  std::unordered_map<const void*, int> ids;
  auto id_of = [&ids](const void* p) {
    auto it = ids.find(p);
    if (it != ids.end()) return it->second;
    const int id = static_cast<int>(ids.size());
    ids.emplace(p, id);
    return id;
  };
  std::unordered_set<const Node*> seen{v.grad_fn().get()};
  std::vector<const Node*> stack{v.grad_fn().get()};   // iterative: graphs can be very deep
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    const int nid = id_of(n);
    os << "  n" << nid << " [shape=box, label=\"" << n->name << "\\n" << shape_str(n->out_shape) << " "
       << dtype_name(n->out_dtype) << (n->backward ? "" : "\\n(freed)");
    if (options.recorder_ != nullptr) {
      auto it = options.recorder_->norms().find(n);
      if (it != options.recorder_->norms().end()) os << "\\n|grad| = " << norm_str(it->second);
    }
    os << "\"];\n";
    for (std::size_t i = 0; i < n->next.size(); ++i) {
      const Edge& e = n->next[i];
      if (e.fn) {
        os << "  n" << id_of(e.fn.get()) << " -> n" << nid << ";\n";
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      } else if (e.leaf) {
        const bool fresh = ids.find(e.leaf.get()) == ids.end();
        const int lid = id_of(e.leaf.get());
        if (fresh)
          os << "  n" << lid << " [shape=ellipse, style=filled, fillcolor=lightblue, label=\"" << leaf_label(*e.leaf)
             << "\"];\n";
        os << "  n" << lid << " -> n" << nid << ";\n";
      }
    }
  }
  os << "}\n";
  return os.str();
}

}  // namespace autograd
}  // namespace tg
