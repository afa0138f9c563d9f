/// \file
/// nn/rnn.h: the recurrent layers of torch::nn, RNN, LSTM and GRU (num_layers, bias, batch_first,
/// dropout between layers, bidirectional, LSTM's proj_size, packed sequences), and their one-step cells RNNCell, LSTMCell and GRUCell, with
/// PyTorch's parameter names (weight_ih_l0, weight_hh_l0_reverse, ...), gate order, init and
/// shapes, so that a PyTorch state_dict loads and gives PyTorch's outputs. Each step is composed of
/// differentiable ops (linear, sigmoid, tanh, chunk): autograd differentiates through time, on every
/// backend. Their forward returns libtorch's tuples, and so does calling them: `lstm(x)`,
/// `lstm->forward(x, state)` and `lstm.forward(x)` are one call (through a Module pointer, Module's
/// one-tensor call is not implemented for RNN, LSTM, GRU and LSTMCell: tg::Error). RNNCell and GRUCell
/// return a Tensor. A PackedSequence (nn/packed_sequence.h) in place of the input runs each sequence over
/// its own length only: `forward_with_packed_input(packed, state)` (libtorch's name) or `forward(packed,
/// state)` returns the packed output and the final states of every sequence at its own last step.
/// Defined in nn/rnn.cpp.
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "tensorgrad/nn/module.h"
#include "tensorgrad/nn/packed_sequence.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/recurrent.h"

namespace tg {
namespace nn {

/// RNN's nonlinearity (libtorch's torch::kTanh and torch::kReLU for RNNOptions::nonlinearity).
enum class RNNNonlinearity {
  Tanh,   ///< tanh (the default)
  ReLU,   ///< max(x, 0)
};
/// RNNNonlinearity::Tanh.
constexpr RNNNonlinearity kTanh = RNNNonlinearity::Tanh;
/// RNNNonlinearity::ReLU.
constexpr RNNNonlinearity kReLU = RNNNonlinearity::ReLU;

namespace detail {
/// The options every recurrent layer shares (torch::nn::RNNOptionsBase), with setters returning Self.
template <class Self>
struct RecurrentOptions {
  /// The sizes of one step's input and of the hidden state.
  RecurrentOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  /// Stacked layers (default 1).
  Self& num_layers(int64_t n) { num_layers_ = n; return self(); }
  /// Whether the layers have bias_ih and bias_hh (default true).
  Self& bias(bool b) { bias_ = b; return self(); }
  /// Input and output as (batch, seq, feature) instead of (seq, batch, feature) (default false).
  Self& batch_first(bool b) { batch_first_ = b; return self(); }
  /// Dropout on the outputs of every layer but the last, in training (default 0).
  Self& dropout(double p) { dropout_ = p; return self(); }
  /// A second direction reading the sequence backwards, its outputs concatenated (default false).
  Self& bidirectional(bool b) { bidirectional_ = b; return self(); }
  int64_t input_size_;          ///< See the constructor.
  int64_t hidden_size_;         ///< See the constructor.
  int64_t num_layers_ = 1;      ///< See num_layers().
  bool bias_ = true;            ///< See bias().
  bool batch_first_ = false;    ///< See batch_first().
  double dropout_ = 0;          ///< See dropout().
  bool bidirectional_ = false;  ///< See bidirectional().

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

/// The step of a recurrent layer (ops/recurrent.h).
using CellKind = tg::detail::CellKind;

/// The shared body of RNN, LSTM and GRU: their options, parameters and the loop over layers,
/// directions and time steps.
class RecurrentBase {
 public:
  /// The parameters of layer l, direction d (d 1 is the reverse direction): w_ih, w_hh, b_ih, b_hh
  /// (biases undefined without bias), w_hr (LSTM with proj_size only, else undefined).
  struct Weights {
    Tensor w_ih, w_hh, b_ih, b_hh, w_hr;
  };
  /// output, h_n and (LSTM only) c_n for input and initial states (undefined: zeros).
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0, bool training,
                                         const char* layer) const;
  /// As run for a packed batch: the packed output, h_n and c_n in the original batch order.
  std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> run(const utils::rnn::PackedSequence& input, const Tensor& h0,
                                                             const Tensor& c0, bool training, const char* layer) const;
  /// Sets the configuration from `o` and registers the parameters of every layer and direction on
  /// `owner` in PyTorch's order and names, drawn from U(-1/sqrt(hidden), 1/sqrt(hidden)).
  template <class Options>
  void configure(Module& owner, CellKind kind, const Options& o, const char* layer) {
    kind_ = kind;
    input_size_ = o.input_size_;
    hidden_size_ = o.hidden_size_;
    num_layers_ = o.num_layers_;
    bias_ = o.bias_;
    batch_first_ = o.batch_first_;
    bidirectional_ = o.bidirectional_;
    dropout_ = o.dropout_;
    make_parameters(owner, layer);
  }
  /// PyTorch's repr: "LSTM(10, 20, num_layers=2, batch_first=True)".
  std::string repr(const char* layer) const;

  void make_parameters(Module& owner, const char* layer);
  /// Every layer over packed rows data (sum of batch_sizes, input_size) with batch_sizes bs and the
  /// initial states h0 (D num_layers, bs[0], out), c0 (LSTM: (D num_layers, bs[0], hidden_size)), both
  /// in the packed (sorted) batch order: the packed output rows, h_n and c_n in that order.
  std::tuple<Tensor, Tensor, Tensor> run_rows(const Tensor& data, const std::vector<int64_t>& bs, const Tensor& h0,
                                              const Tensor& c0, bool training) const;
  /// The width of h and of each direction's output: proj_size when set, else hidden_size.
  int64_t out_size() const { return proj_size_ > 0 ? proj_size_ : hidden_size_; }
  CellKind kind_ = CellKind::Lstm;
  int64_t input_size_ = 0, hidden_size_ = 0, num_layers_ = 1, proj_size_ = 0;
  bool bias_ = true, batch_first_ = false, bidirectional_ = false;
  double dropout_ = 0;
  std::deque<Weights> weights_;   ///< layer-major: index l * directions + d; the module refers to these
};
}  // namespace detail

/// Options of RNN (torch::nn::RNNOptions).
struct RNNOptions : detail::RecurrentOptions<RNNOptions> {
  using RecurrentOptions::RecurrentOptions;
  /// kTanh (default) or kReLU.
  RNNOptions& nonlinearity(RNNNonlinearity n) { nonlinearity_ = n; return *this; }
  RNNNonlinearity nonlinearity_ = kTanh;   ///< See nonlinearity().
};
/// Options of LSTM (torch::nn::LSTMOptions).
struct LSTMOptions : detail::RecurrentOptions<LSTMOptions> {
  using RecurrentOptions::RecurrentOptions;
  /// A projection of h to this size (default 0: none), PyTorch's proj_size: h_t = W_hr (o tanh(c_t)),
  /// weight_hr_l{k} of shape (proj_size, hidden_size), h and the outputs proj_size wide. Must be
  /// below hidden_size (LSTM's constructor throws Error otherwise).
  LSTMOptions& proj_size(int64_t p) { proj_size_ = p; return *this; }
  int64_t proj_size_ = 0;   ///< See proj_size().
};
/// Options of GRU (torch::nn::GRUOptions).
struct GRUOptions : detail::RecurrentOptions<GRUOptions> {
  using RecurrentOptions::RecurrentOptions;
};

// RNN, LSTM, GRU and LSTMCell declare forward(input, state = {}) returning libtorch's tuples: it hides
// Module's one-tensor forward on purpose (bringing that one in with a using-declaration would make
// forward(x) ambiguous), so the compilers' warning about hiding a virtual is switched off for them.
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Woverloaded-virtual"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverloaded-virtual"
#endif

/// An Elman RNN (torch::nn::RNN): h_t = act(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh), act tanh or ReLU.
class RNN : public Cloneable<RNN>, private detail::RecurrentBase {
 public:
  /// float32 parameters on the CPU from the manual_seed stream. ShapeError for sizes below 1, Error for
  /// a dropout outside [0, 1].
  explicit RNN(const RNNOptions& options);
  /// RNN(RNNOptions(input_size, hidden_size)).
  RNN(int64_t input_size, int64_t hidden_size) : RNN(RNNOptions(input_size, hidden_size)) {}
  /// input (L, N, input_size) ((N, L, .) batch_first; (L, input_size) unbatched), h0 (D num_layers, N,
  /// hidden_size) or undefined for zeros -> (output (L, N, D hidden_size), h_n (D num_layers, N,
  /// hidden_size)), D = 2 when bidirectional. ShapeError / DTypeError in PyTorch's words.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = Tensor());
  /// A packed batch (data (sum of lengths, input_size)); h0 (D num_layers, batch_sizes[0], hidden_size)
  /// in the original batch order, or undefined -> (the packed output (sum of lengths, D hidden_size),
  /// h_n of every sequence at its own end, original order). The reverse direction starts at each
  /// sequence's own last step; batch_first does not apply.
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                           const Tensor& h0 = Tensor());
  /// forward_with_packed_input(input, h0).
  std::tuple<utils::rnn::PackedSequence, Tensor> forward(const utils::rnn::PackedSequence& input,
                                                         const Tensor& h0 = Tensor()) {
    return forward_with_packed_input(input, h0);
  }
  /// libtorch's rnn(x) (ModuleHolder's call): forward(input, h0).
  std::tuple<Tensor, Tensor> operator()(const Tensor& input, const Tensor& h0 = Tensor()) { return forward(input, h0); }
  /// forward_with_packed_input(input, h0).
  std::tuple<utils::rnn::PackedSequence, Tensor> operator()(const utils::rnn::PackedSequence& input,
                                                            const Tensor& h0 = Tensor()) {
    return forward_with_packed_input(input, h0);
  }
  /// "RNN(10, 20, num_layers=2)", PyTorch's repr.
  std::string name() const override;
  /// An RNN with the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<RNN>(options_); }
  const RNNOptions& options() const { return options_; }   ///< The options.
  RNN* operator->() { return this; }   ///< libtorch's rnn->forward(x)

 private:
  RNNOptions options_;
};

/// A long short-term memory layer (torch::nn::LSTM), PyTorch's gates (input, forget, cell, output):
/// c_t = f c_(t-1) + i g, h_t = o tanh(c_t).
class LSTM : public Cloneable<LSTM>, private detail::RecurrentBase {
 public:
  /// float32 parameters on the CPU from the manual_seed stream. ShapeError for sizes below 1, Error for
  /// a dropout outside [0, 1] or a proj_size below 0 or not below hidden_size (PyTorch's messages).
  explicit LSTM(const LSTMOptions& options);
  /// LSTM(LSTMOptions(input_size, hidden_size)).
  LSTM(int64_t input_size, int64_t hidden_size) : LSTM(LSTMOptions(input_size, hidden_size)) {}
  /// input as RNN's, state (h0 (D num_layers, N, out), c0 (D num_layers, N, hidden_size)) or undefined
  /// for zeros -> (output (L, N, D out), (h_n, c_n)), libtorch's nesting; out = proj_size when set,
  /// else hidden_size.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         const std::tuple<Tensor, Tensor>& state = {});
  /// A packed batch, as RNN::forward_with_packed_input; the states have batch_sizes[0] rows in the
  /// original batch order, c_n is also taken at each sequence's own end.
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& input, const std::tuple<Tensor, Tensor>& state = {});
  /// forward_with_packed_input(input, state).
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward(
      const utils::rnn::PackedSequence& input, const std::tuple<Tensor, Tensor>& state = {}) {
    return forward_with_packed_input(input, state);
  }
  /// libtorch's lstm(x) (ModuleHolder's call): forward(input, state).
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> operator()(const Tensor& input,
                                                            const std::tuple<Tensor, Tensor>& state = {}) {
    return forward(input, state);
  }
  /// forward_with_packed_input(input, state).
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> operator()(
      const utils::rnn::PackedSequence& input, const std::tuple<Tensor, Tensor>& state = {}) {
    return forward_with_packed_input(input, state);
  }
  /// "LSTM(10, 20, num_layers=2, batch_first=True)", PyTorch's repr.
  std::string name() const override;
  /// An LSTM with the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<LSTM>(options_); }
  const LSTMOptions& options() const { return options_; }   ///< The options.
  LSTM* operator->() { return this; }   ///< libtorch's lstm->forward(x)

 private:
  LSTMOptions options_;
};

/// A gated recurrent unit layer (torch::nn::GRU), PyTorch's gates (reset, update, new):
/// n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h_t = (1 - z) n + z h_(t-1).
class GRU : public Cloneable<GRU>, private detail::RecurrentBase {
 public:
  /// float32 parameters on the CPU from the manual_seed stream; errors as RNN's.
  explicit GRU(const GRUOptions& options);
  /// GRU(GRUOptions(input_size, hidden_size)).
  GRU(int64_t input_size, int64_t hidden_size) : GRU(GRUOptions(input_size, hidden_size)) {}
  /// As RNN::forward.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = Tensor());
  /// As RNN::forward_with_packed_input.
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                           const Tensor& h0 = Tensor());
  /// forward_with_packed_input(input, h0).
  std::tuple<utils::rnn::PackedSequence, Tensor> forward(const utils::rnn::PackedSequence& input,
                                                         const Tensor& h0 = Tensor()) {
    return forward_with_packed_input(input, h0);
  }
  /// libtorch's gru(x) (ModuleHolder's call): forward(input, h0).
  std::tuple<Tensor, Tensor> operator()(const Tensor& input, const Tensor& h0 = Tensor()) { return forward(input, h0); }
  /// forward_with_packed_input(input, h0).
  std::tuple<utils::rnn::PackedSequence, Tensor> operator()(const utils::rnn::PackedSequence& input,
                                                            const Tensor& h0 = Tensor()) {
    return forward_with_packed_input(input, h0);
  }
  /// "GRU(10, 20)", PyTorch's repr.
  std::string name() const override;
  /// A GRU with the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<GRU>(options_); }
  const GRUOptions& options() const { return options_; }   ///< The options.
  GRU* operator->() { return this; }   ///< libtorch's gru->forward(x)

 private:
  GRUOptions options_;
};

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/// Options of the cells (torch::nn::RNNCellOptions, LSTMCellOptions, GRUCellOptions).
struct RNNCellOptions {
  /// The sizes of the input and of the hidden state.
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  /// Whether the cell has bias_ih and bias_hh (default true).
  RNNCellOptions& bias(bool b) { bias_ = b; return *this; }
  /// kTanh (default) or kReLU (RNNCell only).
  RNNCellOptions& nonlinearity(RNNNonlinearity n) { nonlinearity_ = n; return *this; }
  int64_t input_size_;                      ///< See the constructor.
  int64_t hidden_size_;                     ///< See the constructor.
  bool bias_ = true;                        ///< See bias().
  RNNNonlinearity nonlinearity_ = kTanh;    ///< See nonlinearity().
};
/// LSTMCell's options (libtorch's name).
using LSTMCellOptions = RNNCellOptions;
/// GRUCell's options (libtorch's name).
using GRUCellOptions = RNNCellOptions;

namespace detail {
/// What the three cells share: weight_ih (G hidden, input), weight_hh (G hidden, hidden), bias_ih,
/// bias_hh, G = 1, 4 or 3.
class CellBase {
 protected:
  void make(Module& owner, const RNNCellOptions& o, int64_t gates, const char* cell);
  /// input (N, input_size) or (input_size), a state of the same batch form (undefined: zeros).
  Tensor state_or_zeros(const Tensor& input, const Tensor& state, const char* cell) const;
  int64_t input_size_ = 0, hidden_size_ = 0;

 public:
  Tensor weight_ih;   ///< (G hidden_size, input_size)
  Tensor weight_hh;   ///< (G hidden_size, hidden_size)
  Tensor bias_ih;     ///< (G hidden_size); undefined without bias
  Tensor bias_hh;     ///< (G hidden_size); undefined without bias
};
}  // namespace detail

/// One step of RNN (torch::nn::RNNCell): h' = act(W_ih x + b_ih + W_hh h + b_hh).
class RNNCell : public Cloneable<RNNCell>, public detail::CellBase {
 public:
  /// float32 parameters from U(-1/sqrt(hidden), 1/sqrt(hidden)).
  explicit RNNCell(const RNNCellOptions& options);
  /// input (N, input_size) or (input_size), h (N, hidden_size) or (hidden_size), undefined for zeros -> h'.
  Tensor forward(const Tensor& input, const Tensor& h);
  /// forward(input, zeros): also what cell(input) calls, with the module's hooks.
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  /// "RNNCell(10, 20)".
  std::string name() const override;
  /// An RNNCell with the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<RNNCell>(options_); }
  RNNCell* operator->() { return this; }   ///< libtorch's cell->forward(x)

 private:
  RNNCellOptions options_;
};

#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Woverloaded-virtual"
#elif defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverloaded-virtual"
#endif
/// One step of LSTM (torch::nn::LSTMCell).
class LSTMCell : public Cloneable<LSTMCell>, public detail::CellBase {
 public:
  /// float32 parameters from U(-1/sqrt(hidden), 1/sqrt(hidden)).
  explicit LSTMCell(const LSTMCellOptions& options);
  /// input as RNNCell's, state (h, c) (undefined: zeros) -> (h', c').
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const std::tuple<Tensor, Tensor>& state = {});
  /// libtorch's cell(x) (ModuleHolder's call): forward(input, state).
  std::tuple<Tensor, Tensor> operator()(const Tensor& input, const std::tuple<Tensor, Tensor>& state = {}) {
    return forward(input, state);
  }
  /// "LSTMCell(10, 20)".
  std::string name() const override;
  /// An LSTMCell with the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<LSTMCell>(options_); }
  LSTMCell* operator->() { return this; }   ///< libtorch's cell->forward(x)

 private:
  LSTMCellOptions options_;
};

#if defined(__clang__)
#pragma clang diagnostic pop
#elif defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/// One step of GRU (torch::nn::GRUCell).
class GRUCell : public Cloneable<GRUCell>, public detail::CellBase {
 public:
  /// float32 parameters from U(-1/sqrt(hidden), 1/sqrt(hidden)).
  explicit GRUCell(const GRUCellOptions& options);
  /// input and h as RNNCell's -> h'.
  Tensor forward(const Tensor& input, const Tensor& h);
  /// forward(input, zeros): also what cell(input) calls, with the module's hooks.
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  /// "GRUCell(10, 20)".
  std::string name() const override;
  /// A GRUCell with the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<GRUCell>(options_); }
  GRUCell* operator->() { return this; }   ///< libtorch's cell->forward(x)

 private:
  GRUCellOptions options_;
};

}  // namespace nn
}  // namespace tg
