// examples/06_checkpoint_resume.cpp: stop a training run and resume it exactly. Trains a small model
// for 6 steps, saves the model and the optimizer (momentum buffers) as safetensors checkpoints,
// "restarts" with fresh objects loaded from the files, and trains 6 more steps. The resumed losses
// are bitwise equal to those of a run that never stopped: nothing of the state was lost.
#include <tensorgrad.h>

#include <cstdio>
#include <filesystem>
#include <vector>

namespace {

struct Net : tg::nn::Module {
  tg::nn::Linear fc1{8, 16}, fc2{16, 3};
  Net() {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  tg::Tensor forward(const tg::Tensor& x) override { return fc2(tg::tanh(fc1(x))); }
};

/// `steps` SGD steps on a fixed batch; returns the losses.
std::vector<double> train(Net& model, tg::optim::SGD& opt, int steps) {
  tg::manual_seed(7);   // the same batch every time
  const auto x = tg::randn({32, 8});
  const auto y = tg::randint(0, 3, {32});
  tg::nn::CrossEntropyLoss criterion;
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    auto loss = criterion(model(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item());
  }
  return losses;
}

}  // namespace

int main() {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string model_path = (dir / "resume_model.safetensors").string();
  const std::string optim_path = (dir / "resume_optim.safetensors").string();
  const auto options = tg::optim::SGDOptions(0.1).momentum(0.9);

  // A run that never stops: 12 steps.
  tg::manual_seed(1);
  Net reference;
  tg::optim::SGD reference_opt(reference.parameters(), options);
  const std::vector<double> expected = train(reference, reference_opt, 12);

  // The same run, stopped after 6 steps...
  tg::manual_seed(1);
  std::vector<double> losses;
  {
    Net model;
    tg::optim::SGD opt(model.parameters(), options);
    losses = train(model, opt, 6);
    tg::save(model, model_path);
    tg::save(opt, optim_path);
    std::printf("saved %s and %s after 6 steps\n", model_path.c_str(), optim_path.c_str());
  }
  // ...and resumed in "another process": fresh objects, state from the files.
  {
    tg::manual_seed(99);   // fresh weights, to show that loading replaces them
    Net model;
    tg::optim::SGD opt(model.parameters(), options);
    tg::load(model, model_path);
    tg::load(opt, optim_path);
    for (double l : train(model, opt, 6)) losses.push_back(l);
  }
  bool same = losses == expected;
  for (std::size_t i = 0; i < losses.size(); ++i)
    std::printf("step %2zu  uninterrupted %.8f  resumed %.8f%s\n", i + 1, expected[i], losses[i],
                i == 6 ? "   <- resumed from the checkpoint here" : "");
  std::printf("%s\n", same ? "resumed run is bitwise identical to the uninterrupted one"
                           : "MISMATCH: the resumed run differs");
  std::filesystem::remove(model_path);
  std::filesystem::remove(optim_path);
  return same ? 0 : 1;
}
