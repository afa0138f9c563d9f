/// \file
/// ops/recurrent.h: the time loop of one direction of a recurrent layer (ops/rnn.cpp), what nn::RNN,
/// LSTM and GRU and their cells (nn/rnn.h) run. Internal: the public names are the modules'.
#pragma once
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace detail {

/// The step of a recurrent layer.
enum class CellKind { RnnTanh, RnnRelu, Lstm, Gru };

/// One step from xp = W_ih x + b_ih (already computed) and the state (h, c): the new (h, c) (c
/// undefined except for LSTM), PyTorch's gate order and formulas, made of recorded ops (the LSTM and
/// GRU cells' pointwise part one fused op each); w_hr (LSTM with proj_size) projects h. h may be
/// one state (H) or a batch of them (N, H).
std::pair<Tensor, Tensor> recurrent_step(CellKind k, const Tensor& xp, const Tensor& h, const Tensor& c,
                                         const Tensor& w_hh, const Tensor& b_hh, const Tensor& w_hr = Tensor());

/// One direction of one layer over rows laid out as a PackedSequence's data: xp = W_ih x + b_ih of
/// every row (R, gates H), bs the batch size of each step (positive, non-increasing), h0 and c0 the
/// initial states of every sequence (bs[0] rows; c0 LSTM only), reverse from the last step -> the
/// output rows (R, out) in xp's row order and the final h and c of every sequence. LSTM and GRU
/// layers without projection run as one recorded op whose time loop allocates nothing per step (Note
/// [Fused recurrent layer] in prim/rnn.cpp) where every operand has one dtype (float32 or float64)
/// and autocast is off; the others step by step with recurrent_step.
std::tuple<Tensor, Tensor, Tensor> recurrent_layer(CellKind k, const Tensor& xp, const std::vector<int64_t>& bs,
                                                   const Tensor& h0, const Tensor& c0, const Tensor& w_hh,
                                                   const Tensor& b_hh, const Tensor& w_hr, bool reverse);

/// Switches the fused LSTM and GRU layers off (every layer then runs step by step) or back on; for
/// tests that compare the two, process-wide.
void set_fused_recurrent_layers(bool on);

}  // namespace detail
}  // namespace tg
