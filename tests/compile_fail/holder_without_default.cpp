// tests/compile_fail/holder_without_default.cpp: must NOT compile. A holder of a module without a default
// constructor, declared without arguments, stops with a static_assert naming libtorch's `= nullptr`
// (ModuleHolder in nn/pimpl.h); the ctest compile_fail_holder_without_default requires its message.
#include <tensorgrad.h>

struct NetImpl : tg::nn::Module {
  explicit NetImpl(int64_t n) : fc(n, n) { register_module("fc", fc); }
  tg::Tensor forward(tg::Tensor x) { return fc(x); }
  tg::nn::Linear fc;
};
TG_MODULE(Net);

int main() {
  Net net;
  return 0;
}
