// tests/compile_fail/functional_relu_inplace.cpp: must NOT compile. libtorch's
// F::ReLUFuncOptions::inplace is not supported; the ctest compile_fail_functional_relu_inplace
// requires the static_assert's message.
#include <tensorgrad.h>

namespace F = tg::nn::functional;

int main() {
  auto y = F::relu(tg::randn({2}), F::ReLUFuncOptions().inplace(true));
  return 0;
}
