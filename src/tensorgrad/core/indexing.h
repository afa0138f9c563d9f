/// \file
/// core/indexing.h: the index types of Tensor::index (PyTorch's torch::indexing): Slice, None,
/// Ellipsis, integers and index Tensors, gathered as TensorIndex. Plain data; the ops that read them
/// are tg::index (ops/slicing.cpp: a strided view, or a copy for index Tensors) and tg::index_put
/// (ops/advanced_index.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>

namespace tg {

class Tensor;
struct TensorImpl;
namespace indexing {

/// A new size-1 dim when used as an index (Python's x[None]), and an omitted bound in a Slice:
/// Slice(None, 4). torch::indexing::None.
constexpr std::nullopt_t None = std::nullopt;

/// The type of Ellipsis.
struct EllipsisIndexType {};
/// As many full slices as the other indices leave dims for (Python's x[..., 0]).
/// torch::indexing::Ellipsis.
constexpr EllipsisIndexType Ellipsis{};

/// Python's start:stop:step along one dim (torch::indexing::Slice). An omitted start is 0, an omitted
/// stop the dim's size, an omitted step 1. Negative start and stop count from the end; both are then
/// clamped into [0, size], as Python does, so a slice past the end is shorter, never an error. The
/// step must be positive (tg::index raises IndexError otherwise).
class Slice {
 public:
  /// Slice(), Slice(2), Slice(0, 4), Slice(None, -1), Slice(1, None, 2).
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}
  /// The start as given (nullopt when omitted).
  std::optional<int64_t> start() const { return start_; }
  /// The stop as given (nullopt when omitted).
  std::optional<int64_t> stop() const { return stop_; }
  /// The step as given (nullopt when omitted).
  std::optional<int64_t> step() const { return step_; }
 private:
  std::optional<int64_t> start_, stop_, step_;
};

/// One entry of an index list (torch::indexing::TensorIndex): an integer (selects, removing the
/// dim), a Slice (keeps the dim), None (inserts a size-1 dim), Ellipsis, or a Tensor (advanced
/// indexing: a bool mask over as many dims as it has, or an integer tensor of positions along one).
class TensorIndex {
 public:
  /// What the entry is.
  enum class Kind { Integer, Slice, None, Ellipsis, Tensor };
  /// An integer index: x.index({1}); negative counts from the end.
  TensorIndex(int64_t i) : kind_(Kind::Integer), integer_(i) {}   // NOLINT: implicit, as in libtorch
  /// A slice: x.index({Slice(0, 4)}).
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}        // NOLINT
  /// None: a new size-1 dim.
  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}              // NOLINT
  /// Ellipsis.
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}       // NOLINT
  /// An index Tensor: x.index({mask}) or x.index_put_({rows, cols}, v). Defined in ops/slicing.cpp
  /// (Tensor is declared above this floor); an undefined Tensor is refused there (Error).
  TensorIndex(const Tensor& t);                                   // NOLINT: implicit, as in libtorch
  /// What the entry is.
  Kind kind() const { return kind_; }
  /// The integer (Kind::Integer only).
  int64_t integer() const { return integer_; }
  /// The slice (Kind::Slice only).
  const Slice& slice() const { return slice_; }
  /// The index Tensor (Kind::Tensor only; undefined otherwise).
  Tensor tensor() const;
 private:
  Kind kind_;
  int64_t integer_ = 0;
  Slice slice_;
  std::shared_ptr<TensorImpl> tensor_;   // the index Tensor's shared state (a handle, as Tensor holds)
};

/// Prints an index as Python writes it: "0:4", ":", "::2", "1", "None", "..."; an index Tensor as
/// "Tensor(dtype, shape)".
std::ostream& operator<<(std::ostream& os, const TensorIndex& index);

}  // namespace indexing

using indexing::Slice;
using indexing::TensorIndex;

}  // namespace tg
