// tests/compile_fail/map_after_stack.cpp: must NOT compile. A per-example transform (Normalize) after
// Stack, which has already made the batch one Example; the ctest compile_fail_map_after_stack requires the
// static_assert's message in the compiler's output.
#include <tensorgrad.h>

int main() {
  auto dataset = tg::data::datasets::MNIST("mnist")
                     .map(tg::data::transforms::Stack<>())
                     .map(tg::data::transforms::Normalize<>(0.1307, 0.3081));
  return 0;
}
