// examples/13_backward_by_hand.cpp: the backward algorithm of autograd/engine.cpp done by hand on a
// small graph, then checked against tensorgrad's own backward(). It walks the Nodes the forward pass
// recorded (from loss.grad_fn() along each Node's edges), puts them in topological order with an
// explicit depth-first search, applies each op's derivative rule as written out below (not the
// library's), sums the gradients of a value used more than once, and sums broadcast gradients back to
// their input's shape. Prints every step; exit status 1 when a gradient differs from backward()'s.
#include <tensorgrad.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using tg::Tensor;

// The forward value of each Node's output. The rules of relu, mul and matmul need values; a Node keeps
// its own saved tensors inside its opaque rule, so main() records the outputs here as it computes them.
std::map<const tg::Node*, Tensor> forward_value;

// The value an edge leads to: a leaf (x, w, b) or the output of an earlier Node.
Tensor value_of(const tg::Edge& e) { return e.leaf ? Tensor(e.leaf) : forward_value.at(e.fn.get()); }

// Topological order: every Node before the Nodes it reads from, so consumers come before producers.
// A Node's gradient is the sum of what its consumers send it, so it is complete only once every
// consumer has run: walking this order guarantees that. Depth-first search gives it: a Node is
// finished (appended to `finished`) only after everything below it is, and reversing that list puts
// each Node before all of its inputs. An explicit stack instead of recursion: real graphs can be a
// million ops deep, which would overflow the call stack (the engine walks iteratively too).
std::vector<const tg::Node*> topological_order(const tg::Node* root) {
  std::vector<const tg::Node*> finished;
  std::set<const tg::Node*> seen{root};   // fan-out: relu is reached from mul (twice) and mean; visit it once
  std::vector<std::pair<const tg::Node*, std::size_t>> stack{{root, 0}};   // a Node, its next edge to visit
  while (!stack.empty()) {
    auto& [node, edge] = stack.back();
    if (edge == node->next.size()) {   // every input visited: this Node is finished
      finished.push_back(node);
      stack.pop_back();
      continue;
    }
    const tg::Node* input = node->next[edge++].fn.get();   // null for a leaf: nothing to visit
    if (input != nullptr && seen.insert(input).second) stack.push_back({input, 0});
  }
  std::reverse(finished.begin(), finished.end());
  return finished;
}

// Broadcasting stretched the input to the output's shape: b (2) was added to every row of a (3, 2).
// Each element of b therefore reached several outputs, and its gradient is the sum over them. Sum
// away the leading dims broadcasting added, then the dims where the input had size 1 (keeping them).
Tensor sum_to(Tensor g, const tg::Shape& shape) {
  while (g.dim() > static_cast<int64_t>(shape.size())) g = g.sum(0);
  for (int64_t d = 0; d < g.dim(); ++d)
    if (shape[static_cast<std::size_t>(d)] == 1 && g.size(d) != 1) g = g.sum(d, /*keepdim=*/true);
  return g;
}

// Each op's local rule: given g = dloss/d(output), the gradient for each input (in the output's
// broadcast shape; the caller sums it back to the input's shape).
std::vector<Tensor> local_rule(const tg::Node& node, const Tensor& g) {
  const std::string op = node.name;
  const tg::Shape& in_shape = node.next[0].shape;
  if (op == "sum") return {g.expand(in_shape)};   // every element counts once: each gets g
  if (op == "mean") {                              // every element counts 1/n
    double n = 1;
    for (int64_t s : in_shape) n *= static_cast<double>(s);
    return {g.expand(in_shape) * (1.0 / n)};
  }
  if (op == "add") return {g, g};                  // d(a + b)/da = d(a + b)/db = 1
  if (op == "mul") return {g * value_of(node.next[1]), g * value_of(node.next[0])};   // d(ab)/da = b
  if (op == "relu") return {g * (forward_value.at(&node) > 0.0)};   // slope 1 where the output is > 0, else 0
  if (op == "matmul") {                                             // 2-D out = A B: dA = g B^T, dB = A^T g
    const Tensor a = value_of(node.next[0]), b = value_of(node.next[1]);
    return {g.matmul(b.t()), a.t().matmul(g)};
  }
  throw std::runtime_error("no hand-written rule for op '" + op + "'");
}

int main() {
  tg::manual_seed(0);
  const auto opts = tg::TensorOptions().dtype(tg::kFloat64).requires_grad(true);   // float64: tight checks
  Tensor x = tg::randn({3, 4}, opts), w = tg::randn({4, 2}, opts), b = tg::randn({2}, opts);

  // Forward. h feeds three uses (twice into h * h, once into mean): fan-out. b is broadcast over rows.
  Tensor z = x.matmul(w), a = z + b, h = tg::relu(a);
  Tensor hh = h * h, squares = hh.sum(), average = h.mean(), loss = squares + average;
  for (const Tensor& v : {z, a, h, hh, squares, average, loss}) forward_value[v.grad_fn().get()] = v;
  std::printf("forward: h = relu(x w + b) has shape %s (%d of its %lld entries clipped to 0), loss = sum(h * h) + "
              "mean(h) = %.6f\n\n", tg::shape_str(h.shape()).c_str(), static_cast<int>((a <= 0.0).sum().item()),
              static_cast<long long>(h.numel()), loss.item());

  // Backward by hand, with no graph recorded for the arithmetic it does. The engine picks another valid
  // order (it counts each Node's consumers and runs the newest ready Node first); any topological
  // order gives the same gradients.
  std::map<const void*, Tensor> grad;   // key: a Node (gradient of its output) or a leaf's TensorImpl
  std::map<const void*, int> arrivals;    // how many consumers delivered into each key so far
  {
    tg::NoGradGuard no_grad;
    grad[loss.grad_fn().get()] = tg::ones({}, tg::kFloat64);   // dloss/dloss = 1
    int step = 0;
    for (const tg::Node* node : topological_order(loss.grad_fn().get())) {
      const Tensor g = grad.at(node);
      std::printf("step %d: %-6s (op #%llu) receives dloss/dout of shape %s\n", ++step, node->name,
                  static_cast<unsigned long long>(node->sequence_nr), tg::shape_str(g.shape()).c_str());
      const std::vector<Tensor> in_grads = local_rule(*node, g);
      for (std::size_t i = 0; i < node->next.size(); ++i) {
        const tg::Edge& e = node->next[i];
        if (!e.needs_grad()) continue;   // an input that wants no gradient
        Tensor gi = in_grads[i];
        const std::string to = e.leaf ? "a leaf" : std::string("'") + e.fn->name + "'";
        std::printf("          input %zu (%s, shape %s)", i, to.c_str(), tg::shape_str(e.shape).c_str());
        if (gi.shape() != e.shape) {   // broadcast input: sum the gradient back to its shape
          std::printf(": sum %s back to %s", tg::shape_str(gi.shape()).c_str(), tg::shape_str(e.shape).c_str());
          gi = sum_to(gi, e.shape);
        }
        // Fan-out: a value used k times influences the loss along k paths, and the chain rule adds
        // the paths up. So a second (third...) delivery is added to what is there, never replacing it.
        const void* key = e.fn ? static_cast<const void*>(e.fn.get()) : e.leaf.get();
        if (++arrivals[key] > 1) {
          std::printf(": delivery %d, added to the gradient so far", arrivals[key]);
          grad[key] = grad[key] + gi;
        } else {
          grad[key] = gi;
        }
        std::printf("\n");
      }
    }
  }

  // The library's backward over the same graph, then the comparison.
  loss.backward();
  bool ok = true;
  std::printf("\n");
  for (const auto& [name, leaf] : {std::pair<const char*, Tensor>{"x", x}, {"w", w}, {"b", b}}) {
    const Tensor mine = grad.at(leaf.impl().get());
    const bool same_shape = mine.shape() == leaf.grad().shape();
    const double diff = same_shape ? (mine - leaf.grad()).abs().max().item() : INFINITY;
    const bool same = same_shape && diff <= 1e-12;   // float64, the same sums in maybe another order
    ok = ok && same;
    std::printf("d loss/d %s: by hand vs backward(): max |difference| %.2e  %s\n", name, diff,
                same ? "match" : "MISMATCH");
  }
  std::printf("%s\n", ok ? "all gradients match" : "FAILED: a hand-computed gradient differs from backward()");
  return ok ? 0 : 1;
}
