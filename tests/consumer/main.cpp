// A user's program built against the installed tensorgrad: a gradient through the umbrella header.
#include <tensorgrad.h>

#include <cmath>
#include <cstdio>

int main() {
  auto w = tg::from_vector(std::vector<float>{1, 2, 3}, {3}, tg::TensorOptions().requires_grad(true));
  auto loss = (w * w).sum();   // d/dw = 2w
  loss.backward();
  auto g = w.grad().to_vector<float>();
  const bool ok = std::fabs(g[0] - 2) < 1e-6 && std::fabs(g[1] - 4) < 1e-6 && std::fabs(g[2] - 6) < 1e-6;
  std::printf("consumer: loss %.1f, grad [%.1f, %.1f, %.1f], cuda available: %d -> %s\n", loss.item(), g[0], g[1],
              g[2], int(tg::cuda::is_available()), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
