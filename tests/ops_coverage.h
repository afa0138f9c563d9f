// tests/ops_coverage.h: the op names declared in src/tensorgrad/ops/ops.h, and the check that a test
// table covers each of them. Used by the coverage tests of test_gradcheck.cpp (the gradcheck table)
// and test_cuda.cpp (the CPU-vs-CUDA parity table), so adding an op to ops.h fails both until it has
// entries. Also which ops are differentiable twice (kTwice: gradgradcheck in test_gradcheck.cpp,
// double-backward parity in test_cuda.cpp) and which are not yet (kFirstOrderOnly). Kept out of
// testing.h so that the other suites do not compile <regex>.
#pragma once
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace testing {

/// Every name declared in ops/ops.h as `Tensor name(`, `SortResult name(`, `std::vector<Tensor> name(`
/// (the splitting ops) or `std::tuple<Tensor, Tensor> name(` (fused_lstm_cell) at the start of a line
/// (overloads count once). The operators (`Tensor operator+(`) do not match: each is spelled in terms of a named op.
inline std::set<std::string> declared_ops() {
  std::ifstream header(TG_SOURCE_DIR "/src/tensorgrad/ops/ops.h");
  REQUIRE(header.good());
  std::stringstream text;
  text << header.rdbuf();
  const std::string s = text.str();
  const std::regex decl(R"(^(?:Tensor|SortResult|std::vector<Tensor>|std::tuple<Tensor, Tensor>) ([a-z_0-9]+)\()", std::regex::multiline);
  std::set<std::string> declared;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), decl); it != std::sregex_iterator(); ++it)
    declared.insert((*it)[1]);
  CHECK(declared.size() >= 40);   // the parse found the header's ops
  return declared;
}

/// Fails for each op declared in ops/ops.h that is neither in `covered` (the ops `table` has entries
/// for) nor in `excluded` (op -> why it has none), or is in both; and for each stale name in either
/// (not declared in ops/ops.h). `table` names the table in the messages.
inline void check_covers_declared_ops(const std::set<std::string>& covered,
                                      const std::map<std::string, std::string>& excluded, const std::string& table) {
  const std::set<std::string> declared = declared_ops();
  for (const std::string& op : declared) {
    const auto why = excluded.find(op);
    const bool in_table = covered.count(op) == 1, in_excluded = why != excluded.end();
    CHECK_MESSAGE((in_table || in_excluded),
                  "op '" << op << "' in ops/ops.h has no entry in " << table << " and is not excluded");
    if (in_table && in_excluded)
      FAIL_CHECK("op '" << op << "' has entries in " << table << " but is also excluded (" << why->second << ")");
  }
  for (const std::string& op : covered)
    CHECK_MESSAGE(declared.count(op) == 1, "stale entry '" << op << "' in " << table << ": not declared in ops/ops.h");
  for (const auto& entry : excluded)
    CHECK_MESSAGE(declared.count(entry.first) == 1,
                  "stale exclusion '" << entry.first << "' of " << table << ": not declared in ops/ops.h");
}

/// The ops of the gradcheck table whose every sample also passes gradgradcheck: their backward rules
/// are differentiable (Note [Differentiable rules] in autograd/engine.cpp), directly or through the
/// ops they are composed of.
inline const std::set<std::string> kTwice = {
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "adaptive_max_pool2d", "avg_pool1d", "conv_transpose1d",
    "instance_norm", "max_pool1d", "prelu",   // composed of twice-differentiable ops (ops/pooling.cpp, ops/norm_extra.cpp)
    "adaptive_avg_pool3d", "avg_pool3d", "conv3d", "conv_transpose3d", "max_pool3d",   // the same (ops/conv3d.cpp)
    "adaptive_max_pool3d",   // the same (ops/pooling.cpp)
    "abs", "acos", "acosh", "adaptive_avg_pool2d", "add", "amax", "amin", "asin", "asinh", "atan", "atanh",
    "avg_pool2d", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cat", "ceil", "celu", "chunk", "clamp", "clone",
    "contiguous", "conv1d", "conv2d", "conv_transpose2d", "cos", "cosh", "cosine_embedding_loss", "cross_entropy",
    "cumprod", "cumsum", "div", "dropout", "dropout2d", "elu", "embedding", "erf", "erfc", "exp", "expand", "expm1", "flatten",
    "flip", "floor", "frac", "gather", "gelu", "group_norm", "hardsigmoid", "hardswish", "hardtanh", "huber_loss", "index_add",
    "index", "index_put", "index_select", "interpolate", "kl_div", "kthvalue", "l1_loss", "layer_norm", "leaky_relu", "linear",
    "log", "log10", "log1p", "log2", "log_sigmoid", "log_softmax", "logsumexp", "margin_ranking_loss",
    "masked_fill", "matmul", "max", "max_pool2d", "mean", "min", "mish", "mse_loss", "mul", "narrow", "neg",
    "nll_loss", "norm", "pad", "permute", "pow", "prod", "reciprocal", "relu", "relu6", "repeat", "repeat_interleave",
    "reshape", "roll", "round", "rsqrt", "scatter_add", "scaled_dot_product_attention", "select", "selu", "sigmoid", "sign",
    "silu", "sin", "sinh", "smooth_l1_loss", "softmax", "softplus", "softsign", "sort", "split", "split_with_sizes",
    "sqrt", "square", "squeeze", "stack", "std", "sub", "sum", "sum_to_size", "t", "tan", "tanh", "topk",
    "transpose", "tril", "triu", "trunc", "unbind", "unsqueeze", "var", "view", "where",
    "bmm", "dot", "einsum", "mm", "outer",
    "hinge_embedding_loss", "triplet_margin_loss", "multi_margin_loss", "poisson_nll_loss",
    "gaussian_nll_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
    "triplet_margin_with_distance_loss",   // compositions of twice-differentiable ops (ops/loss.cpp)
    "fused_lstm_cell", "fused_gru_cell"};   // recorded formulas under create_graph (ops/rnn.cpp)

/// Differentiable ops whose gradient cannot yet be differentiated again: a backward with create_graph
/// through them works, and a second backward that reaches their gradient raises AutogradError naming
/// the op (tests/test_gradcheck.cpp checks that, so an op that gains a differentiable rule must move to kTwice).
inline const std::map<std::string, std::string> kFirstOrderOnly = {
    {"ctc_loss", "its rule is computed in the forward on the CPU (ops/ctc_loss.cpp), as PyTorch's "
                 "ctc_loss_backward, which is not differentiable either"}};

}  // namespace testing
