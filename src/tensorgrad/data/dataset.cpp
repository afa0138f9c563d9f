// data/dataset.cpp: Dataset's default get_batch (stacking get() results) and TensorDataset.
// The loader that calls these from its prefetch thread is data/loader.cpp.
#include "tensorgrad/data/dataset.h"

#include <utility>

#include "tensorgrad/core/error.h"
#include "tensorgrad/data/internal.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace data {

namespace {

/// Stacks one field (data or target) of the examples along a new first dim: B x (...) -> (B, ...).
RawTensor stack_field(const std::vector<Example<>>& examples, const std::vector<int64_t>& indices,
                      Tensor Example<>::*field, const char* name) {
  TG_CHECK((examples[0].*field).defined(), DataError, "Dataset::get_batch: sample ", indices[0], " has an undefined ",
           name);
  const RawTensor& first = (examples[0].*field).data();
  Shape shape = first.shape();
  shape.insert(shape.begin(), static_cast<int64_t>(examples.size()));
  RawTensor out = RawTensor::empty(shape, first.dtype(), first.device());   // set row by row below
  for (std::size_t k = 0; k < examples.size(); ++k) {
    const Tensor& v = examples[k].*field;
    TG_CHECK(v.defined() && v.shape() == first.shape() && v.dtype() == first.dtype() && v.device() == first.device(),
             DataError, "Dataset::get_batch: sample ", indices[k], " (position ", k, " in the batch) has ", name, " ",
             v.defined() ? tensor_meta_str(v.data()) : std::string("undefined"), " on ",
             v.defined() ? v.device().str() : std::string("-"), " but sample ", indices[0], " has ",
             tensor_meta_str(first), " on ", first.device().str(),
             "; every sample of a batch needs the same shape, dtype and device");
    prim::copy_(out.select(0, static_cast<int64_t>(k)), v.data());
  }
  return out;
}

}  // namespace

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  TG_CHECK(!indices.empty(), IndexError, "Dataset::get_batch: indices is empty");
  const int64_t n = size();
  std::vector<Example<>> examples;
  examples.reserve(indices.size());
  for (int64_t index : indices) {
    detail::check_index(index, n, "Dataset::get_batch");
    examples.push_back(get(index));
  }
  return {Tensor(stack_field(examples, indices, &Example<>::data, "data")),
          Tensor(stack_field(examples, indices, &Example<>::target, "target"))};
}

TensorDataset::TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
  TG_CHECK(data_.defined() && targets_.defined(), Error, "TensorDataset: data and targets must be defined");
  TG_CHECK(data_.dim() >= 1 && targets_.dim() >= 1, ShapeError,
           "TensorDataset: data and targets need a first (sample) dimension, got data ", tensor_meta_str(data_.data()),
           " and targets ", tensor_meta_str(targets_.data()));
  TG_CHECK(data_.size(0) == targets_.size(0), ShapeError, "TensorDataset: data has ", data_.size(0),
           " samples but targets has ", targets_.size(0), " (data ", tensor_meta_str(data_.data()), ", targets ",
           tensor_meta_str(targets_.data()), "); the first dimension is the sample dimension");
  size_ = data_.size(0);
}

Example<> TensorDataset::get(int64_t index) const {
  detail::check_index(index, size_, "TensorDataset::get");
  return {Tensor(data_.data().select(0, index)), Tensor(targets_.data().select(0, index))};
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  TG_CHECK(!indices.empty(), IndexError, "TensorDataset::get_batch: indices is empty");
  for (int64_t index : indices) detail::check_index(index, size_, "TensorDataset::get_batch");
  const Shape shape{static_cast<int64_t>(indices.size())};
  // One gather per tensor: index (B) -> data (B, ...), targets (B, ...), fresh contiguous copies.
  RawTensor index = prim::from_host(indices.data(), shape, kInt64, data_.device());
  RawTensor data = prim::index_select(data_.data(), 0, index);
  if (targets_.device() != data_.device()) index = prim::from_host(indices.data(), shape, kInt64, targets_.device());
  return {Tensor(std::move(data)), Tensor(prim::index_select(targets_.data(), 0, index))};
}

}  // namespace data
}  // namespace tg
