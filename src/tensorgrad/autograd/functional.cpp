// autograd/functional.cpp: torch.autograd.functional on autograd::grad (autograd/engine.cpp). Each
// function makes its inputs differentiable leaves (or, under create_graph, views that keep the
// caller's graph, as PyTorch's _grad_preprocess), calls the user's function, and takes one or two
// reverse passes; the results are detached unless create_graph (_grad_postprocess).
#include "tensorgrad/autograd/functional.h"

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace autograd {
namespace functional {

namespace {

/// The inputs as the function sees them: fresh leaves that require grad, or, under create_graph, a
/// recorded view of an input that already requires grad (so its graph reaches the caller's).
std::vector<Tensor> prepare(const std::vector<Tensor>& xs, bool create_graph, const char* what) {
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    TG_CHECK(x.defined(), AutogradError, what, ": input ", i, " is an undefined Tensor");
    TG_CHECK(is_floating(x.dtype()), DTypeError, what, ": input ", i, " is ", dtype_name(x.dtype()),
             "; only floating tensors can be differentiated");
    if (create_graph && x.requires_grad()) out.push_back(x.view(x.shape()));
    else out.push_back(Tensor(x.data(), /*requires_grad=*/true));
  }
  return out;
}

Tensor post(const Tensor& t, bool create_graph) { return create_graph || !t.defined() ? t : t.detach(); }

/// zeros of x's shape, dtype and device, without a graph.
Tensor zeros_of(const Tensor& x) { return Tensor(prim::zeros_like(x.data())); }

/// Gradient k of a grad call with allow_unused: zeros of its input's shape where undefined, or an
/// AutogradError in strict mode.
Tensor filled(const Tensor& g, const Tensor& like, bool strict, const char* what, std::size_t k) {
  if (g.defined()) return g;
  TG_CHECK(!strict, AutogradError, what, ": the output of the user-provided function is independent of input ", k,
           ". This is not allowed in strict mode.");
  return zeros_of(like);
}

/// The gradients of outputs with respect to xs, zeros (or strict's error) where they do not depend on one.
std::vector<Tensor> grads_or_zeros(const std::vector<Tensor>& outputs, const std::vector<Tensor>& xs,
                                   const std::vector<Tensor>& grad_outputs, bool create_graph, bool strict,
                                   const char* what) {
  std::vector<Tensor> live, live_grads;
  for (std::size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].defined() && outputs[i].requires_grad()) {
      live.push_back(outputs[i]);
      if (!grad_outputs.empty()) live_grads.push_back(grad_outputs[i]);
    }
  std::vector<Tensor> g(xs.size());
  if (!live.empty()) g = grad(live, xs, live_grads, /*retain_graph=*/true, create_graph, /*allow_unused=*/true);
  for (std::size_t k = 0; k < xs.size(); ++k) g[k] = filled(g[k], xs[k], strict, what, k);
  return g;
}

/// The rows stacked along a new first dim (tg::stack, which lives in ops/, a floor above this one):
/// its backward hands each row its slice.
Tensor stack_rows(const std::vector<Tensor>& rows) {
  std::vector<RawTensor> parts;
  for (const Tensor& r : rows) parts.push_back(r.data().unsqueeze(0));
  return record("stack", prim::cat(parts, 0), rows, [](const auto& grad, auto& g) {
    for (std::size_t i = 0; i < g.size(); ++i)
      if (g.need(i)) g.set(i, grad.select(0, static_cast<int64_t>(i)));
  });
}

/// e_i: zeros of y's shape, dtype and device with a 1 at flat element i.
Tensor one_hot_like(const Tensor& y, int64_t i) {
  RawTensor e = prim::full(y.shape(), 0.0, kFloat64, Device::cpu());
  e.data<double>()[i] = 1.0;
  return Tensor(e.to(y.dtype()).to(y.device()));
}

void check_scalar(const Tensor& y, const char* what) {
  TG_CHECK(y.defined() && y.numel() == 1, AutogradError, "The Tensor returned by the function given to ", what,
           " should contain a single element (got shape ", y.defined() ? shape_str(y.shape()) : std::string("undefined"),
           ")");
}

FnN many(const Fn& f) {
  return [f](const std::vector<Tensor>& xs) { return f(xs[0]); };
}

}  // namespace

std::vector<Tensor> jacobian(const FnN& f, const std::vector<Tensor>& xs_in, bool create_graph, bool strict) {
  const std::vector<Tensor> xs = prepare(xs_in, create_graph, "jacobian");
  const Tensor y = f(xs);
  TG_CHECK(y.defined(), AutogradError, "jacobian: the function returned an undefined Tensor");
  std::vector<std::vector<Tensor>> rows(xs.size());
  for (int64_t i = 0; i < y.numel(); ++i) {
    const std::vector<Tensor> g = grads_or_zeros({y}, xs, {one_hot_like(y, i)}, create_graph, strict, "jacobian");
    for (std::size_t k = 0; k < xs.size(); ++k) rows[k].push_back(g[k]);
  }
  std::vector<Tensor> out;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    Shape shape = y.shape();
    shape.insert(shape.end(), xs[k].shape().begin(), xs[k].shape().end());
    out.push_back(post(y.numel() == 0 ? Tensor(prim::full(shape, 0.0, xs[k].dtype(), xs[k].device()))
                                      : stack_rows(rows[k]).reshape(shape),
                       create_graph));
  }
  return out;
}

Tensor jacobian(const Fn& f, const Tensor& x, bool create_graph, bool strict) {
  return jacobian(many(f), std::vector<Tensor>{x}, create_graph, strict)[0];
}

std::vector<std::vector<Tensor>> hessian(const FnN& f, const std::vector<Tensor>& xs_in, bool create_graph,
                                         bool strict) {
  std::vector<std::vector<Tensor>> out;
  for (std::size_t i = 0; i < xs_in.size(); ++i) {
    // the gradient with respect to input i, as a function of every input, differentiated once more
    FnN gradient_i = [&f, i, strict](const std::vector<Tensor>& xs) {
      const Tensor y = f(xs);
      check_scalar(y, "hessian");
      return grads_or_zeros({y}, xs, {}, /*create_graph=*/true, strict, "hessian")[i];
    };
    out.push_back(jacobian(gradient_i, xs_in, create_graph, strict));
  }
  return out;
}

Tensor hessian(const Fn& f, const Tensor& x, bool create_graph, bool strict) {
  return hessian(many(f), std::vector<Tensor>{x}, create_graph, strict)[0][0];
}

std::pair<Tensor, std::vector<Tensor>> vjp(const FnN& f, const std::vector<Tensor>& xs_in, const Tensor& v,
                                           bool create_graph, bool strict) {
  const std::vector<Tensor> xs = prepare(xs_in, create_graph, "vjp");
  const Tensor y = f(xs);
  TG_CHECK(y.defined(), AutogradError, "vjp: the function returned an undefined Tensor");
  TG_CHECK(v.defined() || y.numel() == 1, AutogradError,
           "The vector v can only be None if the user-provided function returns a single Tensor with a single element "
           "(got shape ", shape_str(y.shape()), ")");
  TG_CHECK(!v.defined() || v.shape() == y.shape(), ShapeError, "vjp: v has shape ", v.defined() ? shape_str(v.shape()) : "",
           " but the function's output has shape ", shape_str(y.shape()));
  std::vector<Tensor> g = grads_or_zeros({y}, xs, v.defined() ? std::vector<Tensor>{v} : std::vector<Tensor>{},
                                         create_graph, strict, "vjp");
  for (Tensor& t : g) t = post(t, create_graph);
  return {post(y, create_graph), g};
}

std::pair<Tensor, Tensor> vjp(const Fn& f, const Tensor& x, const Tensor& v, bool create_graph, bool strict) {
  auto r = vjp(many(f), std::vector<Tensor>{x}, v, create_graph, strict);
  return {r.first, r.second[0]};
}

std::pair<Tensor, Tensor> jvp(const FnN& f, const std::vector<Tensor>& xs_in, const std::vector<Tensor>& us,
                              bool create_graph, bool strict) {
  TG_CHECK(us.size() == xs_in.size() || (us.empty() && xs_in.size() == 1 && xs_in[0].numel() == 1), AutogradError,
           "jvp: got ", us.size(), " tangents for ", xs_in.size(), " inputs (v can only be None if the input has a "
           "single element)");
  const std::vector<Tensor> xs = prepare(xs_in, create_graph, "jvp");
  const Tensor y = f(xs);
  TG_CHECK(y.defined(), AutogradError, "jvp: the function returned an undefined Tensor");
  // J u = d/dw (w^T J u) with w^T J from a first pass that records its graph in w (the double-vjp trick)
  const Tensor w(prim::zeros_like(y.data()), /*requires_grad=*/true);
  const std::vector<Tensor> wj = grads_or_zeros({y}, xs, {w}, /*create_graph=*/true, strict, "jvp");
  std::vector<Tensor> tangents;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const Tensor u = us.empty() ? Tensor(prim::full(xs[k].shape(), 1.0, xs[k].dtype(), xs[k].device())) : us[k];
    TG_CHECK(u.shape() == xs[k].shape(), ShapeError, "jvp: tangent ", k, " has shape ", shape_str(u.shape()),
             " but input ", k, " has shape ", shape_str(xs[k].shape()));
    tangents.push_back(u);
  }
  std::vector<Tensor> live, live_u;
  for (std::size_t k = 0; k < xs.size(); ++k)
    if (wj[k].requires_grad()) {
      live.push_back(wj[k]);
      live_u.push_back(tangents[k]);
    }
  Tensor ju;
  if (!live.empty()) ju = grad(live, {w}, live_u, /*retain_graph=*/true, create_graph, /*allow_unused=*/true)[0];
  ju = filled(ju, y, strict, "jvp", 0);
  return {post(y, create_graph), post(ju, create_graph)};
}

std::pair<Tensor, Tensor> jvp(const Fn& f, const Tensor& x, const Tensor& u, bool create_graph, bool strict) {
  return jvp(many(f), std::vector<Tensor>{x}, u.defined() ? std::vector<Tensor>{u} : std::vector<Tensor>{},
             create_graph, strict);
}

std::pair<Tensor, std::vector<Tensor>> vhp(const FnN& f, const std::vector<Tensor>& xs_in, const std::vector<Tensor>& vs,
                                           bool create_graph, bool strict) {
  TG_CHECK(vs.size() == xs_in.size(), AutogradError, "vhp: got ", vs.size(), " vectors for ", xs_in.size(), " inputs");
  for (std::size_t k = 0; k < vs.size(); ++k)
    TG_CHECK(vs[k].defined() && vs[k].shape() == xs_in[k].shape(), ShapeError, "vhp: v ", k, " has shape ",
             vs[k].defined() ? shape_str(vs[k].shape()) : std::string("undefined"), " but input ", k, " has shape ",
             shape_str(xs_in[k].shape()));
  const std::vector<Tensor> xs = prepare(xs_in, create_graph, "vhp");
  const Tensor y = f(xs);
  check_scalar(y, "vhp");
  const std::vector<Tensor> g = grads_or_zeros({y}, xs, {}, /*create_graph=*/true, strict, "vhp");
  std::vector<Tensor> out = grads_or_zeros(g, xs, vs, create_graph, strict, "vhp");
  for (Tensor& t : out) t = post(t, create_graph);
  return {post(y, create_graph), out};
}

std::pair<Tensor, Tensor> vhp(const Fn& f, const Tensor& x, const Tensor& v, bool create_graph, bool strict) {
  auto r = vhp(many(f), std::vector<Tensor>{x}, std::vector<Tensor>{v}, create_graph, strict);
  return {r.first, r.second[0]};
}

std::pair<Tensor, std::vector<Tensor>> hvp(const FnN& f, const std::vector<Tensor>& xs, const std::vector<Tensor>& vs,
                                           bool create_graph, bool strict) {
  return vhp(f, xs, vs, create_graph, strict);   // H is symmetric (see autograd/functional.h)
}

std::pair<Tensor, Tensor> hvp(const Fn& f, const Tensor& x, const Tensor& v, bool create_graph, bool strict) {
  return vhp(f, x, v, create_graph, strict);
}

}  // namespace functional
}  // namespace autograd
}  // namespace tg
