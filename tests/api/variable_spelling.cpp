// tests/api/variable_spelling.cpp: a program in the spelling tensorgrad had before tg::Tensor became
// the user's type (Note [Tensor and RawTensor]): tg::Variable, a value module with its children
// registered by reference, the old header paths. It must keep compiling and training unchanged.
#include <tensorgrad/engine/variable.h>
#include <tensorgrad/nn/module.h>
#include <tensorgrad.h>

#include <cstdio>
#include <type_traits>

static_assert(std::is_same<tg::Variable, tg::Tensor>::value, "tg::Variable is an alias of tg::Tensor");

struct Net : tg::nn::Module {
  tg::nn::Linear fc1{4, 16};
  tg::nn::Linear fc2{16, 3};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  tg::Variable forward(const tg::Variable& x) override { return fc2(tg::relu(fc1(x))); }
};

int main() {
  tg::manual_seed(0);
  Net model;
  tg::optim::SGD optimizer(model.parameters(), tg::optim::SGDOptions(0.1).momentum(0.9));
  const tg::Variable x = tg::randn({32, 4});
  const tg::Variable y = tg::argmax(x.narrow(1, 0, 3), 1);   // a learnable rule: the largest of the first 3
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    optimizer.zero_grad();
    tg::Variable loss = tg::cross_entropy(model(x), y);
    loss.backward();
    optimizer.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  std::printf("loss %.4f -> %.4f\n", first, last);
  if (!(last < 0.5 * first)) {
    std::printf("FAILED: the loss did not halve\n");
    return 1;
  }
  std::printf("the Variable spelling trains\n");
  return 0;
}
