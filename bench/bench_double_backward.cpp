// bench/bench_double_backward.cpp: gradients of gradients, tensorgrad vs libtorch in the same process:
// a Hessian-vector product of an MLP's MSE loss (grad with create_graph, then the gradient's dot product
// with fixed vectors differentiated again) and one training step of examples/16's physics-informed
// network (u'' by two nested grad calls, then backward through both and an Adam step), float32.
// Target: no slower than libtorch at 1 thread. Flags: --help (bench/common.h).
#include "common.h"

#include <memory>

namespace {

bench::Work tg_hvp(int64_t batch, int64_t in) {
  struct State {
    tg::nn::Sequential net;
    std::vector<tg::Tensor> params, v;
    tg::Tensor x, y;
  };
  auto s = std::make_shared<State>();
  s->net = tg::nn::Sequential(tg::nn::Linear(in, 128), tg::nn::Tanh(), tg::nn::Linear(128, 128), tg::nn::Tanh(),
                              tg::nn::Linear(128, 1));
  s->params = s->net->parameters();
  for (const auto& p : s->params) s->v.push_back(tg::randn(p.shape()));
  s->x = tg::randn({batch, in});
  s->y = tg::randn({batch, 1});
  return [s] {
    const tg::Tensor loss = tg::mse_loss(s->net->forward(s->x), s->y);
    const std::vector<tg::Tensor> g = tg::autograd::grad({loss}, s->params, {}, true, true);
    tg::Tensor dot = tg::zeros({});
    for (std::size_t i = 0; i < g.size(); ++i) dot = dot + (g[i] * s->v[i]).sum();
    tg::autograd::grad({dot}, s->params);
  };
}

bench::Work tg_pinn(int64_t points, int64_t width) {
  struct State {
    tg::nn::Sequential u;
    std::unique_ptr<tg::optim::Adam> adam;
    tg::Tensor x, rhs, boundary;
  };
  auto s = std::make_shared<State>();
  s->u = tg::nn::Sequential(tg::nn::Linear(1, width), tg::nn::Tanh(), tg::nn::Linear(width, width), tg::nn::Tanh(),
                            tg::nn::Linear(width, 1));
  s->adam = std::make_unique<tg::optim::Adam>(s->u->parameters(), tg::optim::AdamOptions(1e-3));
  s->x = ((tg::arange(points, tg::kFloat32) + 0.5) / static_cast<double>(points)).unsqueeze(1).requires_grad_(true);
  const double pi = 3.14159265358979323846;
  s->rhs = tg::sin(s->x.detach() * pi) * (-pi * pi);
  s->boundary = tg::from_vector(std::vector<float>{0.0f, 1.0f}, {2, 1});
  return [s] {
    s->adam->zero_grad();
    const tg::Tensor ux = s->u->forward(s->x);
    const tg::Tensor du = tg::autograd::grad({ux.sum()}, {s->x}, {}, true, true)[0];
    const tg::Tensor d2u = tg::autograd::grad({du.sum()}, {s->x}, {}, true, true)[0];
    const tg::Tensor loss = tg::mse_loss(d2u, s->rhs) + tg::pow(s->u->forward(s->boundary), 2.0).mean() * 10.0;
    loss.backward();
    s->adam->step();
  };
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  const Options o = parse_options(argc, argv, "bench_double_backward",
      "Gradients of gradients: an MLP Hessian-vector product and a physics-informed training step, tensorgrad vs "
      "libtorch: us per call.");
  set_threads(o.threads);
  tg::manual_seed(0);
  print_header("gradients of gradients (float32); µs per call, median [min..max]", o);
  const int64_t batch = o.smoke ? 4 : 64, in = o.smoke ? 3 : 32, points = o.smoke ? 4 : 64, width = o.smoke ? 3 : 32;
  Table table({"workload", "tensorgrad µs", "libtorch µs", "tg/torch", "target"});
  const auto hvp = measure({tg_hvp(batch, in), torch_side::mlp_hvp(batch, in)}, plan_for(o, 10, 10, 1.5));
  const double r_hvp = time_ratio(hvp[0], hvp[1]);
  const std::string hvp_name = "MLP Hessian-vector product, batch " + std::to_string(batch) + ", " + std::to_string(in) +
                               "-128-128-1 tanh";
  table.row({hvp_name, cell(hvp[0], 1e6), cell(hvp[1], 1e6), ratio_str(r_hvp), "<= 1.0x: " + verdict(r_hvp, r_hvp <= 1.0)});
  const auto pinn = measure({tg_pinn(points, width), torch_side::pinn_step(points, width)}, plan_for(o, 10, 10, 1.5));
  const double r_pinn = time_ratio(pinn[0], pinn[1]);
  const std::string pinn_name = "PINN step, " + std::to_string(points) + " points, 1-" + std::to_string(width) + "-" +
                                std::to_string(width) + "-1 tanh, Adam";
  table.row({pinn_name, cell(pinn[0], 1e6), cell(pinn[1], 1e6), ratio_str(r_pinn), "<= 1.0x: " + verdict(r_pinn, r_pinn <= 1.0)});
  table.print();
  if (!o.smoke) {
    print_target("MLP Hessian-vector product", o.threads, ratio_str(r_hvp) + " libtorch", "target <= 1.0x",
                 verdict(r_hvp, r_hvp <= 1.0));
    print_target("PINN training step", o.threads, ratio_str(r_pinn) + " libtorch", "target <= 1.0x",
                 verdict(r_pinn, r_pinn <= 1.0));
  }
  print_footer();
  return 0;
}
