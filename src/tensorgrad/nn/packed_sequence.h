/// \file
/// nn/packed_sequence.h: tg::nn::utils::rnn, PyTorch's torch.nn.utils.rnn with libtorch's C++
/// spelling (torch::nn::utils::rnn): PackedSequence, pack_padded_sequence, pad_packed_sequence,
/// pack_sequence and pad_sequence. A PackedSequence holds a batch of sequences of different lengths,
/// sorted by length (longest first) and stored time step by time step: data's first batch_sizes[0]
/// rows are step 0 of every sequence, the next batch_sizes[1] rows step 1 of the sequences that long,
/// and so on, so the sequences still running at a step are a prefix of the batch. RNN, LSTM and GRU
/// take one (nn/rnn.h: forward_with_packed_input) and run each sequence over its own length only.
/// Every function is a composition of differentiable ops (narrow, cat, index_select, reshape):
/// gradients flow back to the padded input, on every backend. Defined in nn/packed_sequence.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {
namespace utils {
namespace rnn {

/// A batch of packed sequences (torch::nn::utils::rnn::PackedSequence): data (sum of the lengths,
/// *), batch_sizes (int64 on the CPU, one per time step: how many sequences are at least that long),
/// and, when the batch was sorted to pack it, sorted_indices (position i of the packed batch is
/// sequence sorted_indices[i] of the original one) and unsorted_indices (its inverse), both int64
/// on data's device; undefined when the batch was already sorted.
class PackedSequence {
 public:
  /// The parts as described above; unsorted_indices undefined with sorted_indices defined is
  /// computed as the inverse permutation (libtorch's constructor). ShapeError unless batch_sizes is a
  /// 1-D int64 CPU tensor of positive, non-increasing sizes whose sum is data.size(0), or when the
  /// indices are not permutations of batch_sizes[0] entries.
  explicit PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {}, Tensor unsorted_indices = {});
  const Tensor& data() const { return data_; }                           ///< (sum of lengths, *)
  const Tensor& batch_sizes() const { return batch_sizes_; }             ///< int64, CPU, one per step
  const Tensor& sorted_indices() const { return sorted_indices_; }       ///< undefined when sorted
  const Tensor& unsorted_indices() const { return unsorted_indices_; }   ///< undefined when sorted
  /// data and the indices moved to device (batch_sizes stays on the CPU), as libtorch's to().
  PackedSequence to(Device device) const;
  /// data converted to dtype, as libtorch's to(dtype).
  PackedSequence to(DType dtype) const;
  PackedSequence cuda() const { return to(Device::cuda()); }   ///< to(Device::cuda())
  PackedSequence cpu() const { return to(Device::cpu()); }     ///< to(Device::cpu())
  bool is_cuda() const { return data_.is_cuda(); }             ///< data's device is a GPU

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

/// Packs input (T, B, *) ((B, T, *) batch_first) of sequences with these lengths (1-D, on the CPU,
/// any integer dtype), torch::nn::utils::rnn::pack_padded_sequence. With enforce_sorted the lengths
/// must be non-increasing; without, the batch is sorted by length (stably, longest first) and the
/// permutation kept in sorted_indices. Errors, naming the function and the values: ShapeError for
/// an empty input, a lengths count other than B, or a length above T; Error for a length below 1 or
/// unsorted lengths with enforce_sorted (PyTorch's messages).
PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first = false, bool enforce_sorted = true);
/// pack_padded_sequence with the lengths given as numbers.
PackedSequence pack_padded_sequence(Tensor input, const std::vector<int64_t>& lengths, bool batch_first = false,
                                    bool enforce_sorted = true);

/// Unpacks: (padded (T, B, *) ((B, T, *) batch_first) in the original batch order, with
/// padding_value after each sequence's end, lengths (int64, CPU)), T = the longest length or
/// total_length when given (torch::nn::utils::rnn::pad_packed_sequence). ShapeError (PyTorch's
/// message) for a total_length below the longest length.
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);

/// Stacks sequences (L_i, *) of one trailing shape into (max L, B, *) ((B, max L, *) batch_first),
/// padding_value filling the rest: after each sequence with padding_side "right", before it with
/// "left" (torch::nn::utils::rnn::pad_sequence). Error for an empty list or another padding_side,
/// ShapeError for 0-d sequences or different trailing shapes.
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false, double padding_value = 0.0,
                    const std::string& padding_side = "right");

/// pack_padded_sequence(pad_sequence(sequences), their lengths, false, enforce_sorted)
/// (torch::nn::utils::rnn::pack_sequence).
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

}  // namespace rnn
}  // namespace utils
}  // namespace nn
}  // namespace tg
