// nn/layers.cpp: layer constructors (PyTorch's default init) and names.
#include "tensorgrad/nn/layers.h"

#include <cmath>
#include <sstream>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/nn/init.h"

namespace tg {
namespace nn {

Linear::Linear(int64_t in_features, int64_t out_features, bool with_bias)
    : in_features_(in_features), out_features_(out_features) {
  TG_CHECK(in_features > 0 && out_features > 0, ShapeError, "Linear: in_features and out_features must be positive, got ",
           in_features, " and ", out_features);
  // PyTorch's reset_parameters: kaiming_uniform_(a = sqrt(5)) gives U(+-1/sqrt(in)) for the weight.
  weight = Tensor(prim::empty({out_features, in_features}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (with_bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    bias = Tensor(prim::empty({out_features}));
    init::uniform_(bias, -bound, bound);
    register_parameter("bias", bias);
  }
}

std::unique_ptr<Module> Linear::new_instance() const {
  return std::make_unique<Linear>(in_features_, out_features_, bias.defined());
}

std::string Linear::name() const {
  std::ostringstream os;
  os << "Linear(in_features=" << in_features_ << ", out_features=" << out_features_
     << ", bias=" << (bias.defined() ? "true" : "false") << ")";
  return os.str();
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx)
    : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim), padding_idx_(padding_idx) {
  TG_CHECK(num_embeddings > 0 && embedding_dim > 0, ShapeError,
           "Embedding: num_embeddings and embedding_dim must be positive, got ", num_embeddings, " and ", embedding_dim);
  if (padding_idx_) {
    TG_CHECK(*padding_idx_ >= -num_embeddings && *padding_idx_ < num_embeddings, IndexError,
             "Embedding: Padding_idx must be within num_embeddings (", *padding_idx_, " for ", num_embeddings,
             " embeddings)");
    if (*padding_idx_ < 0) *padding_idx_ += num_embeddings;
  }
  // PyTorch's reset_parameters: normal_(0, 1), then the padding row zeroed.
  weight = Tensor(prim::empty({num_embeddings, embedding_dim}));
  init::normal_(weight, 0, 1);
  if (padding_idx_ && !init::SkipInitGuard::is_enabled()) prim::fill_(weight.data().select(0, *padding_idx_), 0.0);
  register_parameter("weight", weight);
}

std::unique_ptr<Embedding> Embedding::from_pretrained(const Tensor& embeddings, bool freeze,
                                                      std::optional<int64_t> padding_idx) {
  TG_CHECK(embeddings.defined() && embeddings.dim() == 2, ShapeError,
           "Embedding.from_pretrained: Embeddings parameter is expected to be 2-dimensional, got ",
           embeddings.defined() ? shape_str(embeddings.shape()) : std::string("an undefined tensor"));
  std::unique_ptr<Embedding> e;
  {
    init::SkipInitGuard skip;   // the values come from embeddings
    e = std::make_unique<Embedding>(embeddings.shape()[0], embeddings.shape()[1], padding_idx);
  }
  e->weight.set_data(embeddings.data().contiguous().clone());   // same dtype and device as embeddings
  e->weight.set_requires_grad(!freeze);
  return e;
}

std::unique_ptr<Module> Embedding::new_instance() const {
  return std::make_unique<Embedding>(num_embeddings_, embedding_dim_, padding_idx_);
}

std::string Embedding::name() const {
  std::ostringstream os;
  os << "Embedding(" << num_embeddings_ << ", " << embedding_dim_;
  if (padding_idx_) os << ", padding_idx=" << *padding_idx_;
  os << ")";
  return os.str();
}

Dropout::Dropout(double p) : p_(p) {
  TG_CHECK(p >= 0 && p <= 1, Error, "Dropout: probability has to be between 0 and 1, but got ", p);
}

Dropout2d::Dropout2d(double p) : p_(p) {
  TG_CHECK(p >= 0 && p <= 1, Error, "Dropout2d: probability has to be between 0 and 1, but got ", p);
}

Dropout2d::Dropout2d(const DropoutOptions& options) : Dropout2d(options.p_) {
  TG_CHECK(!options.inplace_, Error, "Dropout2d: Dropout2dOptions().inplace(true) is not supported: the layer "
           "returns a new tensor (drop .inplace(true))");
}

Tensor Dropout2d::forward(const Tensor& x) {
  TG_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, "Dropout2d: expected a 3-D or 4-D input, got ", x.dim(), "-D");
  // a 3-D input is (N, C, L), one draw per (n, c), as PyTorch 2.x reads it (with a warning there)
  return dropout2d(x, p_, is_training());
}

std::string Dropout2d::name() const {
  std::ostringstream os;
  os << "Dropout2d(p=" << p_ << ")";
  return os.str();
}

std::string Upsample::name() const {
  // PyTorch's repr: one value bare, several as a tuple; floats as Python prints them
  std::ostringstream os;
  os << "Upsample(";
  auto list = [&os](const auto& v, auto show) {
    if (v.size() == 1) {
      os << show(v[0]);
      return;
    }
    os << "(";
    for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << show(v[i]);
    os << ")";
  };
  if (!options_.size_.empty()) {
    os << "size=";
    list(options_.size_, [](int64_t x) { return std::to_string(x); });
  } else {
    os << "scale_factor=";
    list(options_.scale_factor_, [](double x) { return tg::detail::python_float(x); });
  }
  os << ", mode='" << options_.mode_ << "')";
  return os.str();
}

std::string Dropout::name() const {
  std::ostringstream os;
  os << "Dropout(p=" << p_ << ")";
  return os.str();
}

}  // namespace nn
}  // namespace tg
