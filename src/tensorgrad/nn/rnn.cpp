// nn/rnn.cpp: RNN, LSTM, GRU and their cells (nn/rnn.h). The input projection of a whole layer is
// one linear over every step (one GEMM instead of one per step); the time loop of each direction is
// tg::detail::recurrent_layer (ops/rnn.cpp): one fused op for LSTM and GRU, or steps of recorded ops
// (a linear for the recurrent projection, then the cell); the cells run one such step.
//
// Padded and packed input run the same loop (RecurrentBase::run_rows) over rows laid out as a
// PackedSequence's data: step t is batch_sizes[t] consecutive rows, the sequences still running at
// t being a prefix of the batch (sorted longest first). A padded (L, N, .) input is the packed layout
// with every batch size N.
#include "tensorgrad/nn/rnn.h"

#include <cmath>
#include <algorithm>
#include <sstream>
#include <tuple>
#include <utility>

#include "tensorgrad/nn/init.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace nn {

namespace {

using detail::CellKind;

int64_t gates_of(CellKind k) { return k == CellKind::Lstm ? 4 : k == CellKind::Gru ? 3 : 1; }

/// slot = a fresh float32 tensor of `shape` from U(-bound, bound), registered on owner as name (the
/// module keeps a reference to slot, which must outlive it: a member).
void uniform_parameter(Module& owner, const std::string& name, Tensor& slot, const Shape& shape, double bound) {
  slot = Tensor(prim::empty(shape));
  init::uniform_(slot, -bound, bound);
  owner.register_parameter(name, slot);
}

void check_options(const char* layer, int64_t input_size, int64_t hidden_size, int64_t num_layers, double dropout) {
  TG_CHECK(input_size > 0 && hidden_size > 0, ShapeError, layer, ": input_size and hidden_size must be positive, got ",
           input_size, " and ", hidden_size);
  TG_CHECK(num_layers > 0, ShapeError, layer, ": num_layers must be greater than or equal to 1, got ", num_layers);
  TG_CHECK(dropout >= 0 && dropout <= 1, Error, layer,
           ": dropout should be a number in range [0, 1] representing the probability of an element being zeroed, got ",
           dropout);
}

}  // namespace

// ---- layers

void detail::RecurrentBase::make_parameters(Module& owner, const char* layer) {
  check_options(layer, input_size_, hidden_size_, num_layers_, dropout_);
  const int64_t G = gates_of(kind_) * hidden_size_, dirs = bidirectional_ ? 2 : 1;
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size_));
  weights_.clear();
  for (int64_t l = 0; l < num_layers_; ++l)
    for (int64_t d = 0; d < dirs; ++d) {
      const std::string suffix = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      const int64_t in = l == 0 ? input_size_ : out_size() * dirs;
      Weights& w = weights_.emplace_back();   // a deque: the registered references stay valid
      uniform_parameter(owner, "weight_ih" + suffix, w.w_ih, {G, in}, bound);
      uniform_parameter(owner, "weight_hh" + suffix, w.w_hh, {G, out_size()}, bound);
      if (bias_) {
        uniform_parameter(owner, "bias_ih" + suffix, w.b_ih, {G}, bound);
        uniform_parameter(owner, "bias_hh" + suffix, w.b_hh, {G}, bound);
      }
      if (proj_size_ > 0) uniform_parameter(owner, "weight_hr" + suffix, w.w_hr, {proj_size_, hidden_size_}, bound);
    }
}

std::string detail::RecurrentBase::repr(const char* layer) const {
  std::ostringstream os;
  os << layer << "(" << input_size_ << ", " << hidden_size_;
  if (proj_size_ != 0) os << ", proj_size=" << proj_size_;
  if (num_layers_ != 1) os << ", num_layers=" << num_layers_;
  if (!bias_) os << ", bias=False";
  if (batch_first_) os << ", batch_first=True";
  if (dropout_ != 0) os << ", dropout=" << tg::detail::python_float(dropout_);
  if (bidirectional_) os << ", bidirectional=True";
  os << ")";
  return os.str();
}

std::tuple<Tensor, Tensor, Tensor> detail::RecurrentBase::run_rows(const Tensor& data, const std::vector<int64_t>& bs,
                                                                   const Tensor& h0, const Tensor& c0,
                                                                   bool training) const {
  const int64_t dirs = bidirectional_ ? 2 : 1;
  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = data;
  for (int64_t l = 0; l < num_layers_; ++l) {
    std::vector<Tensor> direction_outputs;
    for (int64_t d = 0; d < dirs; ++d) {
      const Weights& w = weights_[static_cast<std::size_t>(l * dirs + d)];
      const Tensor xp = linear(layer_input, w.w_ih, w.b_ih);   // every row at once
      auto [out, h, c] = tg::detail::recurrent_layer(kind_, xp, bs, select(h0, 0, l * dirs + d),
                                                     c0.defined() ? select(c0, 0, l * dirs + d) : Tensor(), w.w_hh,
                                                     w.b_hh, w.w_hr, d == 1);
      direction_outputs.push_back(out);
      h_n.push_back(h);
      if (c.defined()) c_n.push_back(c);
    }
    layer_input = dirs == 1 ? direction_outputs[0] : cat(direction_outputs, 1);
    if (l + 1 < num_layers_ && dropout_ > 0) layer_input = tg::dropout(layer_input, dropout_, training);
  }
  return {layer_input, stack(h_n, 0), c_n.empty() ? Tensor() : stack(c_n, 0)};
}

namespace {
/// The checks of an input's dtype and feature size that padded and packed input share.
void check_input(const Tensor& input, DType dtype, int64_t input_size, const char* layer) {
  TG_CHECK(input.dtype() == dtype, DTypeError, layer, ": input must have the type ", dtype_name(dtype), ", got type ",
           dtype_name(input.dtype()));
  TG_CHECK(input.size(-1) == input_size, ShapeError, layer, ": input.size(-1) must be equal to input_size. Expected ",
           input_size, ", got ", input.size(-1));
}
}  // namespace

std::tuple<Tensor, Tensor, Tensor> detail::RecurrentBase::run(const Tensor& input_in, const Tensor& h0_in,
                                                              const Tensor& c0_in, bool training,
                                                              const char* layer) const {
  TG_CHECK(input_in.defined() && (input_in.dim() == 2 || input_in.dim() == 3), ShapeError, layer,
           ": Expected input to be 2D or 3D, got ", input_in.defined() ? input_in.dim() : 0, "D tensor instead");
  const DType dtype = weights_.front().w_ih.dtype();
  check_input(input_in, dtype, input_size_, layer);
  const bool batched = input_in.dim() == 3;
  // (L, N, input_size) from every layout
  Tensor input = batched ? (batch_first_ ? transpose(input_in, 0, 1) : input_in) : unsqueeze(input_in, 1);
  const int64_t L = input.size(0), N = input.size(1), dirs = bidirectional_ ? 2 : 1;
  auto initial = [&](const Tensor& s, int64_t width, const char* what) {
    const Shape state_shape = batched ? Shape{num_layers_ * dirs, N, width} : Shape{num_layers_ * dirs, width};
    if (!s.defined()) return Tensor(prim::full({num_layers_ * dirs, N, width}, 0.0, dtype, input.device()));
    TG_CHECK(s.shape() == state_shape, ShapeError, layer, ": Expected ", what, " size ", shape_str(state_shape), ", got ",
             shape_str(s.shape()));
    return batched ? s : unsqueeze(s, 1);
  };
  const Tensor h0 = initial(h0_in, out_size(), kind_ == CellKind::Lstm ? "hidden[0]" : "hidden");
  const Tensor c0 = kind_ == CellKind::Lstm ? initial(c0_in, hidden_size_, "hidden[1]") : Tensor();
  // the packed layout of L steps of N rows each
  auto [rows, hn, cn] = run_rows(reshape(input, {L * N, input_size_}), std::vector<int64_t>(static_cast<std::size_t>(L), N),
                                 h0, c0, training);
  Tensor output = reshape(rows, {L, N, out_size() * dirs});
  if (!batched) {
    output = squeeze(output, 1);
    hn = squeeze(hn, 1);
    if (cn.defined()) cn = squeeze(cn, 1);
  } else if (batch_first_) {
    output = transpose(output, 0, 1);
  }
  return {output, hn, cn};
}

std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> detail::RecurrentBase::run(
    const utils::rnn::PackedSequence& input, const Tensor& h0_in, const Tensor& c0_in, bool training,
    const char* layer) const {
  const Tensor& data = input.data();
  TG_CHECK(data.dim() == 2, ShapeError, layer, ": input must have 2 dimensions, got ", data.dim(),
           " (a packed batch's data is (sum of lengths, input_size))");
  const DType dtype = weights_.front().w_ih.dtype();
  check_input(data, dtype, input_size_, layer);
  const std::vector<int64_t> bs = input.batch_sizes().to_vector<int64_t>();
  const int64_t N = bs.empty() ? 0 : bs[0], dirs = bidirectional_ ? 2 : 1;
  const Tensor& sorted = input.sorted_indices();
  // the states given in the original batch order, the packed rows in the sorted one
  auto initial = [&](const Tensor& s, int64_t width, const char* what) {
    const Shape state_shape{num_layers_ * dirs, N, width};
    if (!s.defined()) return Tensor(prim::full(state_shape, 0.0, dtype, data.device()));
    TG_CHECK(s.shape() == state_shape, ShapeError, layer, ": Expected ", what, " size ", shape_str(state_shape), ", got ",
             shape_str(s.shape()), " (a packed batch of ", N, " sequences)");
    return sorted.defined() ? index_select(s, 1, sorted) : s;
  };
  const Tensor h0 = initial(h0_in, out_size(), kind_ == CellKind::Lstm ? "hidden[0]" : "hidden");
  const Tensor c0 = kind_ == CellKind::Lstm ? initial(c0_in, hidden_size_, "hidden[1]") : Tensor();
  auto [rows, hn, cn] = run_rows(data, bs, h0, c0, training);
  const Tensor& unsorted = input.unsorted_indices();
  if (unsorted.defined()) {
    hn = index_select(hn, 1, unsorted);
    if (cn.defined()) cn = index_select(cn, 1, unsorted);
  }
  return {utils::rnn::PackedSequence(rows, input.batch_sizes(), sorted, unsorted), hn, cn};
}

RNN::RNN(const RNNOptions& options) : options_(options) {
  configure(*this, options.nonlinearity_ == kReLU ? CellKind::RnnRelu : CellKind::RnnTanh, options, "RNN");
}
std::tuple<Tensor, Tensor> RNN::forward(const Tensor& input, const Tensor& h0) {
  auto [out, hn, cn] = run(input, h0, Tensor(), is_training(), "RNN");
  (void)cn;
  return {out, hn};
}
std::tuple<utils::rnn::PackedSequence, Tensor> RNN::forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                              const Tensor& h0) {
  auto [out, hn, cn] = run(input, h0, Tensor(), is_training(), "RNN");
  (void)cn;
  return {out, hn};
}
std::string RNN::name() const { return repr("RNN"); }

LSTM::LSTM(const LSTMOptions& options) : options_(options) {
  TG_CHECK(options.proj_size_ >= 0, Error, "LSTM: proj_size should be a positive integer or zero to disable "
           "projections, got ", options.proj_size_);
  TG_CHECK(options.proj_size_ < options.hidden_size_ || options.proj_size_ == 0, Error,
           "LSTM: proj_size has to be smaller than hidden_size, got proj_size ", options.proj_size_,
           " and hidden_size ", options.hidden_size_);
  proj_size_ = options.proj_size_;   // before configure: it sizes the parameters
  configure(*this, CellKind::Lstm, options, "LSTM");
}
std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTM::forward(const Tensor& input, const std::tuple<Tensor, Tensor>& state) {
  auto [out, hn, cn] = run(input, std::get<0>(state), std::get<1>(state), is_training(), "LSTM");
  return {out, {hn, cn}};
}
std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> LSTM::forward_with_packed_input(
    const utils::rnn::PackedSequence& input, const std::tuple<Tensor, Tensor>& state) {
  auto [out, hn, cn] = run(input, std::get<0>(state), std::get<1>(state), is_training(), "LSTM");
  return {out, {hn, cn}};
}
std::string LSTM::name() const { return repr("LSTM"); }

GRU::GRU(const GRUOptions& options) : options_(options) { configure(*this, CellKind::Gru, options, "GRU"); }
std::tuple<Tensor, Tensor> GRU::forward(const Tensor& input, const Tensor& h0) {
  auto [out, hn, cn] = run(input, h0, Tensor(), is_training(), "GRU");
  (void)cn;
  return {out, hn};
}
std::tuple<utils::rnn::PackedSequence, Tensor> GRU::forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                              const Tensor& h0) {
  auto [out, hn, cn] = run(input, h0, Tensor(), is_training(), "GRU");
  (void)cn;
  return {out, hn};
}
std::string GRU::name() const { return repr("GRU"); }

// ---- cells

void detail::CellBase::make(Module& owner, const RNNCellOptions& o, int64_t gates, const char* cell) {
  check_options(cell, o.input_size_, o.hidden_size_, 1, 0);
  input_size_ = o.input_size_;
  hidden_size_ = o.hidden_size_;
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size_));
  uniform_parameter(owner, "weight_ih", weight_ih, {gates * hidden_size_, input_size_}, bound);
  uniform_parameter(owner, "weight_hh", weight_hh, {gates * hidden_size_, hidden_size_}, bound);
  if (o.bias_) {
    uniform_parameter(owner, "bias_ih", bias_ih, {gates * hidden_size_}, bound);
    uniform_parameter(owner, "bias_hh", bias_hh, {gates * hidden_size_}, bound);
  }
}

Tensor detail::CellBase::state_or_zeros(const Tensor& input, const Tensor& state, const char* cell) const {
  TG_CHECK(input.defined() && (input.dim() == 1 || input.dim() == 2), ShapeError, cell,
           ": Expected input to be 1D or 2D, got ", input.defined() ? input.dim() : 0, "D instead");
  TG_CHECK(input.size(-1) == input_size_, ShapeError, cell, ": input has inconsistent input_size: got ",
           input.size(-1), " expected ", input_size_);
  Shape want = input.dim() == 2 ? Shape{input.size(0), hidden_size_} : Shape{hidden_size_};
  if (!state.defined()) return Tensor(prim::full(want, 0.0, input.dtype(), input.device()));
  TG_CHECK(state.shape() == want, ShapeError, cell, ": Expected hidden of size ", shape_str(want), ", got ",
           shape_str(state.shape()));
  return state;
}

RNNCell::RNNCell(const RNNCellOptions& options) : options_(options) { make(*this, options, 1, "RNNCell"); }
Tensor RNNCell::forward(const Tensor& input, const Tensor& h) {
  const Tensor hx = state_or_zeros(input, h, "RNNCell");
  const CellKind k = options_.nonlinearity_ == kReLU ? CellKind::RnnRelu : CellKind::RnnTanh;
  return tg::detail::recurrent_step(k, linear(input, weight_ih, bias_ih), hx, Tensor(), weight_hh, bias_hh).first;
}
std::string RNNCell::name() const {
  std::ostringstream os;
  os << "RNNCell(" << options_.input_size_ << ", " << options_.hidden_size_;
  if (!options_.bias_) os << ", bias=False";
  if (options_.nonlinearity_ == kReLU) os << ", nonlinearity='relu'";
  os << ")";
  return os.str();
}

LSTMCell::LSTMCell(const LSTMCellOptions& options) : options_(options) { make(*this, options, 4, "LSTMCell"); }
std::tuple<Tensor, Tensor> LSTMCell::forward(const Tensor& input, const std::tuple<Tensor, Tensor>& state) {
  const Tensor h = state_or_zeros(input, std::get<0>(state), "LSTMCell");
  const Tensor c = state_or_zeros(input, std::get<1>(state), "LSTMCell");
  std::pair<Tensor, Tensor> hc =
      tg::detail::recurrent_step(CellKind::Lstm, linear(input, weight_ih, bias_ih), h, c, weight_hh, bias_hh);
  return {hc.first, hc.second};
}
std::string LSTMCell::name() const {
  std::ostringstream os;
  os << "LSTMCell(" << options_.input_size_ << ", " << options_.hidden_size_ << (options_.bias_ ? "" : ", bias=False")
     << ")";
  return os.str();
}

GRUCell::GRUCell(const GRUCellOptions& options) : options_(options) { make(*this, options, 3, "GRUCell"); }
Tensor GRUCell::forward(const Tensor& input, const Tensor& h) {
  const Tensor hx = state_or_zeros(input, h, "GRUCell");
  return tg::detail::recurrent_step(CellKind::Gru, linear(input, weight_ih, bias_ih), hx, Tensor(), weight_hh,
                                    bias_hh).first;
}
std::string GRUCell::name() const {
  std::ostringstream os;
  os << "GRUCell(" << options_.input_size_ << ", " << options_.hidden_size_ << (options_.bias_ ? "" : ", bias=False")
     << ")";
  return os.str();
}

}  // namespace nn
}  // namespace tg
