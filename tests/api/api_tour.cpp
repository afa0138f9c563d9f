// tests/api/api_tour.cpp: one program that walks through the public API in the order of docs/api.md's
// sections (devices and dtypes, Tensors, modules, optimizers, data, autograd tools, hooks), compiled
// and run by CTest. Lines that need a GPU run only when one is usable, and the data part only when the
// packaged (gzip) Fashion-MNIST is there and readable (a build without zlib reads plain IDX files only).
// docs/api.md's own code blocks are compiled and run by the api_docs test (tests/api/doc_snippets.cmake).
#include <tensorgrad.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

struct Net : tg::nn::Module {
  tg::nn::Linear fc1{784, 128};
  tg::nn::Linear fc2{128, 10};
  Net() { register_module("fc1", fc1); register_module("fc2", fc2); }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

int main() {
  // ---- Devices and data types
  tg::Device cpu = tg::Device::cpu();
  tg::Device gpu = tg::Device::cuda();
  tg::Device d   = tg::Device("cuda:0");
  bool ok  = tg::cuda::is_available();
  int  n   = tg::cuda::device_count();
  tg::cuda::synchronize();
  size_t a = tg::cuda::memory_allocated();
  size_t m = tg::cuda::max_memory_allocated();
  size_t r = tg::cuda::memory_reserved();
  tg::cuda::empty_cache();
  tg::cuda::reset_peak_memory_stats();
  std::string info = tg::cuda::info();
  tg::DType types[] = {tg::kFloat32, tg::kFloat64, tg::kInt64};
  std::printf("%s %s %s available=%d count=%d mem=%zu/%zu/%zu dtypes=%zu\n", cpu.str().c_str(), gpu.str().c_str(),
              d.str().c_str(), int(ok), n, a, m, r, sizeof(types) / sizeof(types[0]));

  // ---- Tensors
  tg::manual_seed(42);
  tg::Tensor x = tg::randn({2, 3});
  tg::Tensor w = tg::randn({3, 4}, tg::TensorOptions().requires_grad(true));
  if (ok) {
    tg::Tensor y = tg::ones({5, 5}, tg::TensorOptions().device(gpu).dtype(tg::kFloat64));
    auto xg = x.to(gpu);
    auto xh = x.to(gpu, /*non_blocking=*/true);
    std::cout << y.sum().item() << xg.device() << xh.device() << x.cuda().device() << "\n";
  }
  tg::Tensor l = tg::randint(0, 10, {100});
  tg::Tensor v = tg::from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  auto zs = tg::zeros({2}); auto fl = tg::full({2}, 3.0); auto ar = tg::arange(4); auto ra = tg::rand({2});
  auto ey = tg::eye(3); auto zl = tg::zeros_like(x);
  std::cout << l.dtype() << v << zs.numel() + fl.numel() + ar.numel() + ra.numel() + ey.numel() + zl.numel() << "\n";

  x.shape();
  std::cout << x.dim() << x.numel() << x.dtype() << x.device() << x.is_cuda() << x.cpu().dim() << x.to(tg::kFloat64).dtype() << "\n";
  float s = x.sum().item<float>();
  std::vector<float> host = x.to_vector<float>();
  std::printf("s=%f host=%zu\n", s, host.size());

  auto z = (x.matmul(w) + 1.0).relu();
  z = tg::matmul(x, w); z = tg::relu(z);
  z.sum().backward();
  w.grad();
  std::cout << "x.grad defined: " << x.grad().defined() << ", w.grad defined: " << w.grad().defined() << "\n";
  w.requires_grad(); w.set_requires_grad(false); w.set_requires_grad(true); w.is_leaf();
  z = tg::relu(tg::matmul(x, w));
  z.retain_grad();
  auto dz = z.detach();
  { tg::NoGradGuard no_grad; w.sub_(w.grad() * 0.1); }
  w.zero_grad();
  z.sum().backward(/*grad=*/tg::Tensor(), /*retain_graph=*/true);
  std::cout << "z.grad after retain_grad: " << z.grad().shape().size() << " dims, detached: " << dz.requires_grad() << "\n";

  // ---- Modules
  tg::Device device = ok ? gpu : cpu;
  Net model;
  model.to(device);
  model.train(); model.eval();
  auto inputs = tg::randn({8, 784}).to(device);
  auto out = model(inputs);
  std::cout << "out " << tg::shape_str(out.shape()) << ", " << model.parameters().size() << " parameters, first "
            << model.named_parameters()[0].first << "\n";
  model.zero_grad();
  // the process id in the name: two runs at once (ctest -j) write different files
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("api_tour_net-" + std::to_string(static_cast<long>(::getpid())) + ".safetensors")).string();
  tg::save(model, path);
  tg::load(model, path);
  std::filesystem::remove(path);

  tg::nn::Sequential seq;  seq.add<tg::nn::Linear>(10, 5); seq.add<tg::nn::ReLU>();
  tg::nn::CrossEntropyLoss criterion;
  tg::nn::MSELoss mse;
  tg::nn::Dropout drop(0.5);
  std::cout << seq << "\n" << mse(seq(tg::randn({2, 10})), tg::zeros({2, 5})).item() << " "
            << criterion(out, tg::randint(0, 10, {8}).to(device)).item() << " " << drop(tg::ones({4})).numel() << "\n";

  // ---- Optimizers
  tg::optim::SGD optimizer(model.parameters(), /*lr=*/0.01);
  tg::optim::SGD sgd(model.parameters(), tg::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-4));
  tg::optim::Adam adam(model.parameters(), tg::optim::AdamOptions(1e-3));
  tg::optim::StepLR sched(optimizer, /*step_size=*/10, /*gamma=*/0.1);
  optimizer.zero_grad(); optimizer.step(); sched.step();
  sgd.zero_grad(); adam.zero_grad();

  // ---- Data
  if (std::filesystem::exists("/usr/share/datasets/fashion-mnist") && tg::detail::idx_reads_gzip()) {
    auto train = tg::data::FashionMNIST("/usr/share/datasets/fashion-mnist", tg::data::Split::Train);
    tg::data::DataLoader loader(train, tg::data::LoaderOptions().batch_size(64).shuffle(true)
                                           .pin_memory(true).seed(0));
    for (auto& batch : loader) {
      std::cout << "batch " << tg::shape_str(batch.data.shape()) << " " << tg::shape_str(batch.target.shape()) << "\n";
      break;
    }
  }

  // ---- Autograd tools
  auto opts = tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true);
  tg::Tensor ga = tg::randn({3}, opts), gb = tg::randn({3}, opts);
  bool good = tg::autograd::gradcheck([](const std::vector<tg::Tensor>& in) { return (in[0] * in[1]).sum(); },
                                      {ga, gb});
  auto loss = (ga * gb).sum();
  std::string dot = tg::autograd::to_dot(loss);
  { tg::autograd::DetectAnomalyGuard guard; loss.backward(); }
  // ---- Hooks
  {
    tg::Tensor w = tg::randn({3}, tg::TensorOptions().requires_grad(true));
    int calls = 0;
    auto h1 = model.register_forward_pre_hook([&](tg::nn::Module& m, const tg::Tensor& in) { calls += &m == &model && in.defined(); });
    auto h2 = model.register_forward_hook([&](tg::nn::Module& m, const tg::Tensor& in, const tg::Tensor& out) { calls += &m == &model && in.defined() && out.defined(); });
    auto h3 = w.register_hook([](const tg::Tensor& grad) { return grad * 2; });
    auto h4 = w.register_post_accumulate_grad_hook([&](tg::Tensor& param) { calls += param.grad().defined(); });
    h1.remove();
    model(tg::randn({1, 784}).to(device));
    (w * 3.0).sum().backward();
    std::cout << "hooks " << calls << " calls, w.grad " << w.grad() << "\n";   // 2 calls, [6, 6, 6]
    h2.remove(); h3.remove(); h4.remove();
  }
  std::printf("gradcheck %s, dot %zu chars\napi tour complete\n", good ? "passed" : "FAILED", dot.size());
  return good ? 0 : 1;
}
