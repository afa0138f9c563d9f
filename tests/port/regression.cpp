// tests/port/regression.cpp: a program written against libtorch's C++ frontend, in the shape of its
// polynomial regression example: features x, x^2, x^3, x^4 of random points, a target polynomial
// with random coefficients, one Linear layer fitted by SGD on smooth_l1_loss until the loss is below
// 1e-3. CTest compiles it after the rename of tests/port/port.cmake (torch:: -> tg::,
// <torch/torch.h> -> <tensorgrad.h>); it also compiles against libtorch as it stands.
//
// Exit 0 when the fit converges within 20000 batches and the learned coefficients are within 0.25 of
// the target's.
#include <torch/torch.h>

#include <cstdio>
#include <string>

#define POLY_DEGREE 4

// Builds features i.e. a matrix with columns [x, x^2, x^3, x^4].
torch::Tensor make_features(torch::Tensor x) {
  x = x.unsqueeze(1);
  std::vector<torch::Tensor> xs;
  for (int64_t i = 0; i < POLY_DEGREE; ++i) xs.push_back(x.pow(i + 1));
  return torch::cat(xs, 1);
}

// Approximated function.
torch::Tensor f(torch::Tensor x, torch::Tensor w_target, torch::Tensor b_target) {
  return x.mm(w_target) + b_target.item();
}

// Creates a string description of a polynomial.
std::string poly_desc(torch::Tensor w, torch::Tensor b) {
  auto size = w.size(0);
  std::string result = "y = ";
  for (int64_t i = 0; i < size; ++i) {
    result += std::to_string(w[i].item<float>()) + " x^" + std::to_string(size - i) + " ";
  }
  result += "+ " + std::to_string(b[0].item<float>());
  return result;
}

// Builds a batch i.e. (x, f(x)) pair.
std::pair<torch::Tensor, torch::Tensor> get_batch(torch::Tensor w_target, torch::Tensor b_target, int64_t batch_size = 32) {
  auto random = torch::randn({batch_size});
  auto x = make_features(random);
  auto y = f(x, w_target, b_target);
  return std::make_pair(x, y);
}

int main() {
  torch::manual_seed(0);
  auto w_target = torch::randn({POLY_DEGREE, 1}) * 5;
  auto b_target = torch::randn({1}) * 5;

  // Define the model and optimizer
  auto fc = torch::nn::Linear(w_target.size(0), 1);
  torch::optim::SGD optim(fc->parameters(), .1);

  float loss = 0;
  int64_t batch_idx = 0;
  while (++batch_idx) {
    // Get data
    torch::Tensor batch_x, batch_y;
    std::tie(batch_x, batch_y) = get_batch(w_target, b_target);

    // Reset gradients
    optim.zero_grad();

    // Forward pass
    auto output = torch::smooth_l1_loss(fc(batch_x), batch_y);
    loss = output.item<float>();

    // Backward pass
    output.backward();

    // Apply gradients
    optim.step();

    // Stop criterion
    if (loss < 1e-3f) break;
    if (batch_idx == 20000) break;
  }

  std::printf("Loss: %f after %ld batches\n", loss, static_cast<long>(batch_idx));
  std::printf("==> Learned function:\t%s\n", poly_desc(fc->weight.view({-1}), fc->bias).c_str());
  std::printf("==> Actual function:\t%s\n", poly_desc(w_target.view({-1}), b_target).c_str());
  const double error = (fc->weight.view({-1}) - w_target.view({-1})).abs().max().item<double>();
  std::printf("largest coefficient error: %.4f\n", error);
  return loss < 1e-3f && error < 0.25 ? 0 : 1;
}
