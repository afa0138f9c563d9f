// data/datasets.cpp: libtorch's MNIST and TensorDataset (data/datasets.h). MNIST reads its files
// through tensorgrad's own MNIST (data/idx.h), which finds plain or gzipped files and names what is
// missing or malformed.
#include "tensorgrad/data/datasets.h"

#include "tensorgrad/core/error.h"
#include "tensorgrad/data/idx.h"
#include "tensorgrad/data/internal.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace data {
namespace datasets {

MNIST::MNIST(const std::string& root, Mode mode) : mode_(mode) {
  const data::MNIST files(root, mode == Mode::kTrain ? Split::Train : Split::Test);
  images_ = files.data();
  targets_ = files.targets();
}

Example<> MNIST::get(size_t index) {
  data::detail::check_index(index, images_.size(0), "MNIST::get");
  const auto i = static_cast<int64_t>(index);
  return {Tensor(images_.data().select(0, i)), Tensor(targets_.data().select(0, i))};
}

std::optional<size_t> MNIST::size() const { return static_cast<size_t>(images_.size(0)); }

TensorDataset::TensorDataset(const std::vector<Tensor>& tensors) : TensorDataset(stack(tensors)) {}

TensorDataset::TensorDataset(Tensor t) : tensor(std::move(t)) {
  TG_CHECK(tensor.defined(), Error, "TensorDataset: the tensor is undefined");
  TG_CHECK(tensor.dim() >= 1, ShapeError, "TensorDataset: the tensor needs a first (sample) dimension, got ",
           tensor_meta_str(tensor.data()));
}

TensorExample TensorDataset::get(size_t index) {
  data::detail::check_index(index, tensor.size(0), "TensorDataset::get");
  return tensor.select(0, static_cast<int64_t>(index));
}

}  // namespace datasets
}  // namespace data
}  // namespace tg
