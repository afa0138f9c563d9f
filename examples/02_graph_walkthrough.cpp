// examples/02_graph_walkthrough.cpp: what backward does, step by step. Builds a tiny two-layer network
// on one sample, prints the recorded ops in the order the engine runs their backward (newest first,
// each only once all of its consumers have delivered their gradient) with the gradient flowing into
// each, then the gradients that land in the leaves, and writes the graph to graph_walkthrough.dot.
#include <tensorgrad.h>

#include <cstdio>
#include <fstream>
#include <iostream>

int main() {
  auto opts = tg::TensorOptions().requires_grad(true);
  tg::Tensor x = tg::from_vector(std::vector<float>{0.5f, -1.0f}, {1, 2});   // one sample, 2 features
  tg::Tensor w1 = tg::from_vector(std::vector<float>{0.5f, -0.3f, 0.8f, -0.2f, 0.4f, 0.1f}, {2, 3}, opts);
  tg::Tensor b1 = tg::full({3}, 0.1, opts);
  tg::Tensor w2 = tg::from_vector(std::vector<float>{1.0f, -0.5f, 0.7f}, {3, 1}, opts);
  tg::Tensor h = tg::relu(x.matmul(w1) + b1);     // hidden layer
  tg::Tensor y = h.matmul(w2);                     // output
  tg::Tensor loss = (y * y).sum();                 // a made-up loss: y^2

  std::cout << "forward: h = relu(x w1 + b1) = " << h << "\n         y = h w2 = " << y.item()
            << ", loss = y^2 = " << loss.item() << "\n\n";
  std::printf("backward, in the order the engine runs it:\n");
  int step = 0;
  {
    tg::autograd::BackwardTraceGuard trace([&step](const tg::Node& node, const tg::RawTensor& grad) {
      std::cout << "  " << ++step << ". " << node.name << " (op #" << node.sequence_nr << ", output "
                << tg::shape_str(node.out_shape) << ")  receives dloss/doutput = " << grad << "\n";
    });
    loss.backward();
  }
  std::cout << "\ngradients in the leaves:\n"
            << "  dloss/dw1 = " << w1.grad() << "\n"
            << "  dloss/db1 = " << b1.grad() << "\n"
            << "  dloss/dw2 = " << w2.grad() << "\n";
  std::ofstream("graph_walkthrough.dot") << tg::autograd::to_dot(loss);
  std::printf("\nwrote graph_walkthrough.dot (render: dot -Tpng graph_walkthrough.dot -o graph.png)\n");
  return step == 6 ? 0 : 1;   // sum, mul, matmul, relu, add, matmul
}
