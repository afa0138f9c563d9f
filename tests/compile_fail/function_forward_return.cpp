// tests/compile_fail/function_forward_return.cpp: must NOT compile. A custom Function's forward returns
// tg::Tensor or tg::autograd::variable_list (libtorch's rule); the ctest compile_fail_function_forward_return
// requires the static_assert's message in the compiler's output.
#include <tensorgrad.h>

struct Twice : tg::autograd::Function<Twice> {
  static std::tuple<tg::Tensor, tg::Tensor> forward(tg::autograd::AutogradContext*, tg::Tensor x) { return {x, x}; }
  static tg::autograd::variable_list backward(tg::autograd::AutogradContext*, tg::autograd::variable_list g) {
    return g;
  }
};

int main() {
  auto y = Twice::apply(tg::ones({2}));
  return 0;
}
