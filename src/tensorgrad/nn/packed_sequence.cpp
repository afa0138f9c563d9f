// nn/packed_sequence.cpp: tg::nn::utils::rnn (nn/packed_sequence.h). Packing and unpacking work on
// runs of time steps with one batch size (one per distinct length), so they cost a few narrow/cat ops
// per distinct length rather than per step or per sequence; every op is differentiable.
#include "tensorgrad/nn/packed_sequence.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <utility>

#include "tensorgrad/ops/creation.h"

namespace tg {
namespace nn {
namespace utils {
namespace rnn {

namespace {

std::string list_str(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

/// The inverse of the permutation p (int64, on p's device), checked to be one of n entries.
Tensor invert_permutation(const Tensor& p, int64_t n, const char* what) {
  TG_CHECK(p.dim() == 1 && p.dtype() == kInt64 && p.size(0) == n, ShapeError, "PackedSequence: ", what,
           " must be a 1-D int64 tensor of batch_sizes[0] = ", n, " entries, got ", shape_str(p.shape()), " ",
           dtype_name(p.dtype()));
  const std::vector<int64_t> v = p.to_vector<int64_t>();
  std::vector<int64_t> inv(v.size(), -1);
  for (std::size_t i = 0; i < v.size(); ++i) {
    TG_CHECK(v[i] >= 0 && v[i] < n && inv[static_cast<std::size_t>(v[i])] < 0, ShapeError, "PackedSequence: ", what,
             " is not a permutation of 0 .. ", n - 1, ": ", list_str(v));
    inv[static_cast<std::size_t>(v[i])] = static_cast<int64_t>(i);
  }
  return from_vector(inv).to(p.device());
}

}  // namespace

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices)
    : data_(std::move(data)), batch_sizes_(std::move(batch_sizes)), sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  TG_CHECK(data_.defined() && data_.dim() >= 1, ShapeError, "PackedSequence: data must have at least 1 dimension");
  TG_CHECK(batch_sizes_.defined() && batch_sizes_.dim() == 1 && batch_sizes_.dtype() == kInt64 &&
               !batch_sizes_.is_cuda(),
           ShapeError, "PackedSequence: batch_sizes should always be a 1-D int64 tensor on CPU, got ",
           batch_sizes_.defined() ? shape_str(batch_sizes_.shape()) + " " + dtype_name(batch_sizes_.dtype()) +
                                        (batch_sizes_.is_cuda() ? " on cuda" : "")
                                  : std::string("an undefined tensor"));
  const std::vector<int64_t> bs = batch_sizes_.to_vector<int64_t>();
  int64_t total = 0;
  for (std::size_t t = 0; t < bs.size(); ++t) {
    TG_CHECK(bs[t] > 0 && (t == 0 || bs[t] <= bs[t - 1]), ShapeError,
             "PackedSequence: batch_sizes must be positive and non-increasing, got ", list_str(bs));
    total += bs[t];
  }
  TG_CHECK(total == data_.size(0), ShapeError, "PackedSequence: data has ", data_.size(0),
           " rows but batch_sizes ", list_str(bs), " sum to ", total);
  const int64_t n = bs.empty() ? 0 : bs[0];
  if (sorted_indices_.defined()) {
    const Tensor inverse = invert_permutation(sorted_indices_, n, "sorted_indices");
    if (!unsorted_indices_.defined()) unsorted_indices_ = inverse;
  }
  if (unsorted_indices_.defined()) (void)invert_permutation(unsorted_indices_, n, "unsorted_indices");
}

PackedSequence PackedSequence::to(Device device) const {
  return PackedSequence(data_.to(device), batch_sizes_, sorted_indices_.defined() ? sorted_indices_.to(device) : Tensor(),
                        unsorted_indices_.defined() ? unsorted_indices_.to(device) : Tensor());
}

PackedSequence PackedSequence::to(DType dtype) const {
  return PackedSequence(data_.to(dtype), batch_sizes_, sorted_indices_, unsorted_indices_);
}

PackedSequence pack_padded_sequence(Tensor input, const std::vector<int64_t>& lengths_in, bool batch_first,
                                    bool enforce_sorted) {
  TG_CHECK(input.defined() && input.dim() >= 2, ShapeError,
           "pack_padded_sequence: input must have at least 2 dimensions (time and batch), got ",
           input.defined() ? input.dim() : 0);
  TG_CHECK(input.numel() > 0, ShapeError, "pack_padded_sequence: Cannot pack empty tensors. (input ",
           shape_str(input.shape()), ")");
  Tensor x = batch_first ? transpose(input, 0, 1) : input;   // (T, B, *)
  const int64_t T = x.size(0), B = x.size(1);
  TG_CHECK(static_cast<int64_t>(lengths_in.size()) == B, ShapeError,
           "pack_padded_sequence: Expected `len(lengths)` to be equal to batch_size, but got ", lengths_in.size(),
           " (batch_size=", B, ")");
  std::vector<int64_t> lengths = lengths_in;
  Tensor sorted_indices;
  if (!enforce_sorted) {
    // longest first, ties in their original order (torch.sort's order for these)
    std::vector<int64_t> order(lengths.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return lengths_in[static_cast<std::size_t>(a)] > lengths_in[static_cast<std::size_t>(b)];
    });
    for (std::size_t i = 0; i < order.size(); ++i) lengths[i] = lengths_in[static_cast<std::size_t>(order[i])];
    sorted_indices = from_vector(order).to(input.device());
    x = index_select(x, 1, sorted_indices);
  }
  TG_CHECK(lengths.back() > 0, Error,
           "pack_padded_sequence: Length of all samples has to be greater than 0, but found an element in 'lengths' "
           "that is <= 0 (lengths ", list_str(lengths_in), ")");
  for (std::size_t i = 1; i < lengths.size(); ++i)
    TG_CHECK(lengths[i] <= lengths[i - 1], Error,
             "pack_padded_sequence: `lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
             "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this "
             "requirement if you do not need ONNX exportability. (lengths ", list_str(lengths_in), ")");
  TG_CHECK(lengths.front() <= T, ShapeError, "pack_padded_sequence: a length of ", lengths.front(),
           " is longer than the input's ", T, " time steps (lengths ", list_str(lengths_in), ", input ",
           shape_str(input.shape()), batch_first ? ", batch_first" : "", ")");
  // one run of steps [prev, l) per distinct length l, over the sequences at least l long (a prefix)
  const Shape step_shape(x.shape().begin() + 1, x.shape().end());   // (B, *)
  std::vector<Tensor> runs;
  std::vector<int64_t> batch_sizes;
  int64_t prev = 0;
  for (int64_t i = B - 1; i >= 0; --i) {
    const int64_t l = lengths[static_cast<std::size_t>(i)];
    if (l <= prev) continue;
    const int64_t active = i + 1;
    Tensor run = narrow(narrow(x, 0, prev, l - prev), 1, 0, active);   // (l - prev, active, *)
    Shape rows = step_shape;   // the run's steps one after the other: ((l - prev) active, *)
    rows[0] = (l - prev) * active;
    runs.push_back(reshape(run, rows));
    batch_sizes.insert(batch_sizes.end(), static_cast<std::size_t>(l - prev), active);
    prev = l;
  }
  Tensor data = runs.size() == 1 ? runs[0] : cat(runs, 0);
  return PackedSequence(data, from_vector(batch_sizes), sorted_indices);
}

PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first, bool enforce_sorted) {
  TG_CHECK(lengths.defined() && lengths.dim() == 1 && !lengths.is_cuda(), ShapeError,
           "pack_padded_sequence: 'lengths' argument should be a 1D CPU int64 tensor, but got ",
           lengths.defined() ? std::to_string(lengths.dim()) + "D " + (lengths.is_cuda() ? "cuda " : "cpu ") +
                                   dtype_name(lengths.dtype()) + " tensor"
                             : std::string("an undefined tensor"));
  return pack_padded_sequence(std::move(input), lengths.to_vector<int64_t>(), batch_first, enforce_sorted);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length) {
  const std::vector<int64_t> bs = sequence.batch_sizes().to_vector<int64_t>();
  const int64_t steps = static_cast<int64_t>(bs.size());
  int64_t T = steps;
  if (total_length.has_value()) {
    TG_CHECK(*total_length >= steps, ShapeError,
             "pad_packed_sequence: Expected total_length to be at least the length of the longest sequence in input, "
             "but got total_length=", *total_length, " and max sequence length being ", steps);
    T = *total_length;
  }
  const Tensor& data = sequence.data();
  const int64_t B = steps > 0 ? bs[0] : 0;
  Shape step_shape = data.shape();   // (B, *): one padded time step
  step_shape[0] = B;
  const TensorOptions opts = tg::dtype(data.dtype()).device(data.device());
  // one (steps, B, *) block per run of steps with one batch size b: its rows, padded to B
  std::vector<Tensor> blocks;
  int64_t offset = 0;
  for (int64_t t = 0; t < steps;) {
    const int64_t b = bs[static_cast<std::size_t>(t)];
    int64_t k = 1;
    while (t + k < steps && bs[static_cast<std::size_t>(t + k)] == b) ++k;
    Shape run_shape = step_shape;
    run_shape.insert(run_shape.begin(), k);   // (k, B, *)
    run_shape[1] = b;
    Tensor run = reshape(narrow(data, 0, offset, k * b), run_shape);
    if (b < B) {
      Shape fill_shape = run_shape;
      fill_shape[1] = B - b;
      run = cat({run, full(fill_shape, padding_value, opts)}, 1);
    }
    blocks.push_back(run);
    offset += k * b;
    t += k;
  }
  if (T > steps || blocks.empty()) {
    Shape fill_shape = step_shape;
    fill_shape.insert(fill_shape.begin(), T - steps);
    blocks.push_back(full(fill_shape, padding_value, opts));
  }
  Tensor padded = blocks.size() == 1 ? blocks[0] : cat(blocks, 0);   // (T, B, *), sorted order
  std::vector<int64_t> lengths(static_cast<std::size_t>(B), 0);
  for (int64_t b : bs)
    for (int64_t i = 0; i < b; ++i) ++lengths[static_cast<std::size_t>(i)];
  if (sequence.unsorted_indices().defined()) {
    padded = index_select(padded, 1, sequence.unsorted_indices());
    const std::vector<int64_t> u = sequence.unsorted_indices().to_vector<int64_t>();
    std::vector<int64_t> original(lengths.size());
    for (std::size_t i = 0; i < u.size(); ++i) original[i] = lengths[static_cast<std::size_t>(u[i])];
    lengths = original;
  }
  if (batch_first) padded = transpose(padded, 0, 1);
  return {padded, from_vector(lengths)};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
                    const std::string& padding_side) {
  TG_CHECK(!sequences.empty(), Error, "pad_sequence: received an empty list of sequences");
  TG_CHECK(padding_side == "left" || padding_side == "right", Error,
           "pad_sequence: Expected padding_side to be one of left or right, but got ", padding_side, ".");
  int64_t max_len = 0;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const Tensor& s = sequences[i];
    TG_CHECK(s.defined() && s.dim() >= 1, ShapeError, "pad_sequence: sequence ", i,
             " must have at least 1 dimension (time), got ", s.defined() ? s.dim() : 0);
    TG_CHECK(Shape(s.shape().begin() + 1, s.shape().end()) ==
                 Shape(sequences[0].shape().begin() + 1, sequences[0].shape().end()),
             ShapeError, "pad_sequence: every sequence must have the trailing shape of the first, but sequence ", i,
             " is ", shape_str(s.shape()), " and sequence 0 is ", shape_str(sequences[0].shape()));
    TG_CHECK(s.dtype() == sequences[0].dtype() && s.device() == sequences[0].device(), DTypeError,
             "pad_sequence: every sequence must have the dtype and device of the first, but sequence ", i, " is ",
             dtype_name(s.dtype()), " and sequence 0 ", dtype_name(sequences[0].dtype()));
    max_len = std::max(max_len, s.size(0));
  }
  const TensorOptions opts = tg::dtype(sequences[0].dtype()).device(sequences[0].device());
  // each sequence padded to (max_len, *) along time, then stacked along the batch dim
  std::vector<Tensor> padded;
  padded.reserve(sequences.size());
  for (const Tensor& s : sequences) {
    if (s.size(0) == max_len) {
      padded.push_back(s);
      continue;
    }
    Shape fill_shape = s.shape();
    fill_shape[0] = max_len - s.size(0);
    const Tensor fill = full(fill_shape, padding_value, opts);
    padded.push_back(padding_side == "right" ? cat({s, fill}, 0) : cat({fill, s}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    TG_CHECK(sequences[i].defined() && sequences[i].dim() >= 1, ShapeError, "pack_sequence: sequence ", i,
             " must have at least 1 dimension (time), got ", sequences[i].defined() ? sequences[i].dim() : 0);
    lengths.push_back(sequences[i].size(0));
  }
  return pack_padded_sequence(pad_sequence(sequences), lengths, false, enforce_sorted);
}

}  // namespace rnn
}  // namespace utils
}  // namespace nn
}  // namespace tg
