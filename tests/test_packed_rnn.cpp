// tests/test_packed_rnn.cpp: packed sequences (nn/packed_sequence.h: PackedSequence,
// pack_padded_sequence, pad_packed_sequence, pack_sequence, pad_sequence), RNN, LSTM and GRU on packed
// input, and LSTM's proj_size, against PyTorch's float64 values written by
// tests/data/packed_rnn_reference.py (outputs, final states, the gradients of the input, the initial
// states and every parameter); round trips, errors, and a float64 gradcheck of a packed LSTM.
#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "data/packed_rnn_reference.h"
#include "testing.h"

using tg::Tensor;
namespace rnn_utils = tg::nn::utils::rnn;

namespace {

using testing::vals;

/// m in float64, parameter j (named_parameters() order) element i = 0.3 sin(1.1 i + 0.7 j + 0.1), as
/// tests/data/packed_rnn_reference.py sets it.
void set_waves(tg::nn::Module& m) {
  m.double_();
  tg::NoGradGuard g;
  int j = 0;
  for (auto& [name, p] : m.named_parameters()) {
    std::vector<double> v(static_cast<size_t>(p.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = 0.3 * std::sin(1.1 * static_cast<double>(i) + 0.7 * j + 0.1);
    tg::prim::copy_(p.data(), tg::from_vector(v, p.shape()).data());
    ++j;
  }
}

void check_values(const Tensor& got, const std::vector<double>& want, const char* what) {
  CAPTURE(what);
  REQUIRE(got.defined());
  const std::vector<double> g = got.contiguous().to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-10));
}

tg::Shape shape_of(const std::vector<double>& v) {
  tg::Shape s;
  for (double d : v) s.push_back(static_cast<int64_t>(d));
  return s;
}

/// How a case of the script runs its layer.
struct Setup {
  tg::Shape shape;                 ///< the padded input's shape
  std::vector<int64_t> lengths;    ///< empty: the padded input itself
  bool enforce_sorted = true;
  bool batch_first = false;
  bool with_state = false;
};

/// Runs m as the script's run() does and checks every recorded value of c.
template <class Layer>
void check_case(Layer& m, const Setup& s, const packed_rnn::Case& c) {
  CAPTURE(c.name);
  set_waves(m);
  constexpr bool is_lstm = std::is_same<Layer, tg::nn::LSTM>::value;
  const auto& v = c.values;
  Tensor x = vals(tg::numel_of(s.shape), 0, 1, s.shape, true);
  const int64_t dirs = m.options().bidirectional_ ? 2 : 1, layers = m.options().num_layers_;
  const int64_t batch = s.batch_first ? s.shape[0] : s.shape[1];
  int64_t out_size = m.options().hidden_size_, hidden = m.options().hidden_size_;
  if constexpr (is_lstm) {
    if (m.options().proj_size_ > 0) out_size = m.options().proj_size_;
  }
  Tensor h0, c0;
  if (s.with_state) {
    h0 = vals(layers * dirs * batch * out_size, 0.1, 0.5, {layers * dirs, batch, out_size}, true);
    if (is_lstm) c0 = vals(layers * dirs * batch * hidden, -0.2, 0.7, {layers * dirs, batch, hidden}, true);
  }
  Tensor out, hn, cn;
  std::optional<rnn_utils::PackedSequence> packed_out;
  if (s.lengths.empty()) {
    if constexpr (is_lstm) {
      auto [y, state] = m(x, {h0, c0});
      out = y;
      std::tie(hn, cn) = state;
    } else {
      std::tie(out, hn) = m(x, h0);
    }
  } else {
    const rnn_utils::PackedSequence packed =
        rnn_utils::pack_padded_sequence(x, s.lengths, s.batch_first, s.enforce_sorted);
    if constexpr (is_lstm) {
      auto [y, state] = m.forward_with_packed_input(packed, {h0, c0});
      packed_out.emplace(y);
      std::tie(hn, cn) = state;
    } else {
      auto [y, h] = m.forward_with_packed_input(packed, h0);
      packed_out.emplace(y);
      hn = h;
    }
    out = packed_out->data();
    CHECK(tg::equal(packed_out->batch_sizes(), packed.batch_sizes()));
  }
  CHECK(out.shape() == shape_of(v.at("out_shape")));
  check_values(out, v.at("out"), "out");
  check_values(hn, v.at("hn"), "hn");
  if (is_lstm) check_values(cn, v.at("cn"), "cn");
  Tensor loss = tg::sum(out * vals(out.numel(), 0.5, 1, out.shape())) + tg::sum(hn * vals(hn.numel(), -0.3, 0.8, hn.shape()));
  if (is_lstm) loss = loss + tg::sum(cn);
  loss.backward();
  check_values(x.grad(), v.at("dx"), "dx");
  if (s.with_state) check_values(h0.grad(), v.at("dh0"), "dh0");
  if (s.with_state && is_lstm) check_values(c0.grad(), v.at("dc0"), "dc0");
  std::vector<std::string> names;
  for (const auto& np : m.named_parameters()) {
    const std::string& name = np.first;
    names.push_back(name);
    CAPTURE(name);
    check_values(np.second.grad(), v.at("d_" + name), "parameter gradient");
  }
  CHECK(names == c.parameters);
  if (packed_out) {
    auto [padded, lengths] = rnn_utils::pad_packed_sequence(*packed_out, s.batch_first);
    CHECK(padded.shape() == shape_of(v.at("padded_shape")));
    check_values(padded, v.at("padded"), "padded");
    check_values(lengths.to(tg::kFloat64), v.at("lengths"), "lengths");
    CHECK(lengths.dtype() == tg::kInt64);
  }
}

}  // namespace

TEST_CASE("rnn: packed LSTM, GRU and RNN, and LSTM's proj_size, against PyTorch") {
  const auto& cases = packed_rnn::kCases;
  REQUIRE(cases.size() == 7);
  {
    tg::nn::LSTM m(tg::nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
    check_case(m, {{5, 4, 3}, {3, 5, 1, 5}, false, false, true}, cases[0]);
  }
  {
    tg::nn::GRU m(tg::nn::GRUOptions(3, 4).bidirectional(true).batch_first(true));
    check_case(m, {{3, 4, 3}, {4, 2, 2}, true, true, false}, cases[1]);
  }
  {
    tg::nn::RNN m(tg::nn::RNNOptions(2, 3).num_layers(2));
    check_case(m, {{4, 3, 2}, {2, 4, 3}, false, false, true}, cases[2]);
  }
  {
    tg::nn::RNN m(tg::nn::RNNOptions(2, 3).bidirectional(true).nonlinearity(tg::nn::kReLU).bias(false));
    check_case(m, {{3, 2, 2}, {3, 1}, true, false, false}, cases[3]);
  }
  {
    tg::nn::LSTM m(tg::nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).proj_size(2));
    check_case(m, {{4, 2, 3}, {}, true, false, true}, cases[4]);
  }
  {
    tg::nn::LSTM m(tg::nn::LSTMOptions(3, 5).proj_size(3).bias(false).batch_first(true));
    check_case(m, {{2, 4, 3}, {}, true, true, false}, cases[5]);
  }
  {
    tg::nn::LSTM m(tg::nn::LSTMOptions(2, 3).proj_size(1).bidirectional(true));
    check_case(m, {{4, 3, 2}, {2, 4, 1}, false, false, true}, cases[6]);
  }
}

TEST_CASE("rnn: pack_padded_sequence, pad_sequence and pack_sequence against PyTorch, and round trips") {
  const auto& want = packed_rnn::kPacking;
  auto ints = [](const Tensor& t) {
    std::vector<double> r;
    for (int64_t v : t.to_vector<int64_t>()) r.push_back(static_cast<double>(v));
    return r;
  };
  Tensor x = vals(40, 0, 1, {5, 4, 2}, true);
  const rnn_utils::PackedSequence p =
      rnn_utils::pack_padded_sequence(x, tg::tensor({2, 5, 3, 5}), /*batch_first=*/false, /*enforce_sorted=*/false);
  check_values(p.data(), want.at("data"), "data");
  CHECK(ints(p.batch_sizes()) == want.at("batch_sizes"));
  CHECK(ints(p.sorted_indices()) == want.at("sorted_indices"));
  CHECK(ints(p.unsorted_indices()) == want.at("unsorted_indices"));
  CHECK(p.batch_sizes().dtype() == tg::kInt64);
  CHECK_FALSE(p.is_cuda());
  // pack -> pad gives the input back where the sequences run and the padding value elsewhere, in the
  // original order; the gradient reaches exactly the packed positions
  auto [padded, lengths] = rnn_utils::pad_packed_sequence(p, false, -7.0, 6);
  CHECK(padded.shape() == tg::Shape{6, 4, 2});
  CHECK(lengths.to_vector<int64_t>() == std::vector<int64_t>{2, 5, 3, 5});
  const std::vector<int64_t> len{2, 5, 3, 5};
  const std::vector<double> xs = x.detach().to_vector<double>(), ps = padded.detach().to_vector<double>();
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t f = 0; f < 2; ++f) {
        const double got = ps[static_cast<size_t>((t * 4 + b) * 2 + f)];
        CHECK(got == (t < len[static_cast<size_t>(b)] ? xs[static_cast<size_t>((t * 4 + b) * 2 + f)] : -7.0));
      }
  tg::sum(padded * vals(48, 0.5, 1, {6, 4, 2})).backward();
  const std::vector<double> g = x.grad().to_vector<double>(), w = vals(48, 0.5, 1, {48}).to_vector<double>();
  for (int64_t t = 0; t < 5; ++t)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t f = 0; f < 2; ++f) {
        const size_t i = static_cast<size_t>((t * 4 + b) * 2 + f);
        CHECK(g[i] == (t < len[static_cast<size_t>(b)] ? w[i] : 0.0));
      }
  // batch_first both ways, sorted lengths: no indices, and the padded result is the input itself
  const Tensor xb = vals(24, 0, 1, {3, 4, 2});
  const rnn_utils::PackedSequence pb = rnn_utils::pack_padded_sequence(xb, std::vector<int64_t>{4, 4, 4}, true);
  CHECK_FALSE(pb.sorted_indices().defined());
  CHECK_FALSE(pb.unsorted_indices().defined());
  CHECK(tg::equal(std::get<0>(rnn_utils::pad_packed_sequence(pb, true)), xb));
  // pad_sequence on the left, pack_sequence
  const std::vector<Tensor> seqs{vals(4, 0, 1, {2, 2}), vals(8, 1, 1, {4, 2}), vals(6, 2, 1, {3, 2})};
  const Tensor left = rnn_utils::pad_sequence(seqs, true, -1.5, "left");
  CHECK(left.shape() == shape_of(want.at("pad_left_shape")));
  check_values(left, want.at("pad_left"), "pad_left");
  const rnn_utils::PackedSequence q = rnn_utils::pack_sequence(seqs, false);
  check_values(q.data(), want.at("pack_sequence_data"), "pack_sequence");
  CHECK(ints(q.batch_sizes()) == want.at("pack_sequence_batch_sizes"));
  // pad_sequence on the right is time-first by default, with trailing dims of any rank
  const Tensor right = rnn_utils::pad_sequence({vals(2, 0, 1, {2}), vals(3, 0, 1, {3})});
  CHECK(right.shape() == tg::Shape{3, 2});
  CHECK(right.to_vector<double>()[4] == 0.0);
  // a PackedSequence made by hand computes unsorted_indices, and moves with to()
  const rnn_utils::PackedSequence h(vals(5, 0, 1, {5, 1}), tg::tensor({3, 2}), tg::tensor({2, 0, 1}));
  CHECK(h.unsorted_indices().to_vector<int64_t>() == std::vector<int64_t>{1, 2, 0});
  CHECK(h.to(tg::kFloat32).data().dtype() == tg::kFloat32);
}

TEST_CASE("rnn: packed sequences and proj_size refuse bad input with PyTorch's messages") {
  const Tensor x = tg::randn({4, 3, 2});
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(x, std::vector<int64_t>{3, 4, 2}), tg::Error,
                  "pack_padded_sequence: `lengths` array must be sorted in decreasing order when `enforce_sorted` is True");
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(x, std::vector<int64_t>{3, 4, 2}), tg::Error, "(lengths [3, 4, 2])");
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(x, std::vector<int64_t>{4, 3, 0}), tg::Error,
                  "Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0");
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(x, std::vector<int64_t>{0, 3, 2}, false, false), tg::Error,
                  "Length of all samples has to be greater than 0");
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(x, std::vector<int64_t>{5, 3, 2}), tg::ShapeError,
                  "pack_padded_sequence: a length of 5 is longer than the input's 4 time steps (lengths [5, 3, 2], input [4, 3, 2])");
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(x, std::vector<int64_t>{4, 3}), tg::ShapeError,
                  "Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)");
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(x, tg::tensor({{4, 3, 2}})), tg::ShapeError,
                  "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu int64 tensor");
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(tg::zeros({0, 3, 2}), std::vector<int64_t>{1, 1, 1}), tg::ShapeError,
                  "Cannot pack empty tensors.");
  TG_CHECK_THROWS(rnn_utils::pack_padded_sequence(tg::zeros({4}), std::vector<int64_t>{4}), tg::ShapeError,
                  "input must have at least 2 dimensions");
  const rnn_utils::PackedSequence p = rnn_utils::pack_padded_sequence(x, std::vector<int64_t>{4, 3, 2});
  TG_CHECK_THROWS(rnn_utils::pad_packed_sequence(p, false, 0.0, 3), tg::ShapeError,
                  "pad_packed_sequence: Expected total_length to be at least the length of the longest sequence in input, "
                  "but got total_length=3 and max sequence length being 4");
  TG_CHECK_THROWS(rnn_utils::pad_sequence({}), tg::Error, "received an empty list of sequences");
  TG_CHECK_THROWS(rnn_utils::pad_sequence({tg::randn({2, 3}), tg::randn({3, 4})}), tg::ShapeError,
                  "sequence 1 is [3, 4] and sequence 0 is [2, 3]");
  TG_CHECK_THROWS(rnn_utils::pad_sequence({tg::randn({2, 3})}, false, 0.0, "middle"), tg::Error,
                  "Expected padding_side to be one of left or right, but got middle.");
  TG_CHECK_THROWS(rnn_utils::pack_sequence({tg::randn({2, 3}), tg::randn({3, 3})}), tg::Error,
                  "must be sorted in decreasing order");
  TG_CHECK_THROWS(rnn_utils::PackedSequence(tg::randn({5, 2}), tg::tensor({3, 3})), tg::ShapeError,
                  "data has 5 rows but batch_sizes [3, 3] sum to 6");
  TG_CHECK_THROWS(rnn_utils::PackedSequence(tg::randn({5, 2}), tg::tensor({2, 3})), tg::ShapeError,
                  "batch_sizes must be positive and non-increasing, got [2, 3]");
  TG_CHECK_THROWS(rnn_utils::PackedSequence(tg::randn({5, 2}), tg::tensor({3, 2}), tg::tensor({0, 0, 1})), tg::ShapeError,
                  "sorted_indices is not a permutation of 0 .. 2");
  // the layers on packed input: data width, state shapes (batch_sizes[0] sequences)
  tg::nn::LSTM lstm(tg::nn::LSTMOptions(3, 4).proj_size(2));
  TG_CHECK_THROWS(lstm(p), tg::ShapeError, "LSTM: input.size(-1) must be equal to input_size. Expected 3, got 2");
  const rnn_utils::PackedSequence p3 = rnn_utils::pack_padded_sequence(tg::randn({4, 3, 3}), std::vector<int64_t>{4, 3, 2});
  TG_CHECK_THROWS(lstm(p3, {tg::zeros({1, 3, 4}), tg::zeros({1, 3, 4})}), tg::ShapeError,
                  "LSTM: Expected hidden[0] size [1, 3, 2], got [1, 3, 4]");
  TG_CHECK_THROWS(lstm(p3, {tg::zeros({1, 3, 2}), tg::zeros({1, 3, 2})}), tg::ShapeError,
                  "LSTM: Expected hidden[1] size [1, 3, 4], got [1, 3, 2]");
  TG_CHECK_THROWS(tg::nn::GRU(3, 4)(p3, tg::zeros({1, 2, 4})), tg::ShapeError, "GRU: Expected hidden size [1, 3, 4], got [1, 2, 4]");
  TG_CHECK_THROWS(tg::nn::GRU(3, 4)(p3.to(tg::kFloat64)), tg::DTypeError, "GRU: input must have the type float32, got type float64");
  TG_CHECK_THROWS(tg::nn::LSTM(tg::nn::LSTMOptions(3, 4).proj_size(4)), tg::Error,
                  "LSTM: proj_size has to be smaller than hidden_size, got proj_size 4 and hidden_size 4");
  TG_CHECK_THROWS(tg::nn::LSTM(tg::nn::LSTMOptions(3, 4).proj_size(-1)), tg::Error,
                  "proj_size should be a positive integer or zero to disable projections");
}

TEST_CASE("rnn: proj_size's parameter names, shapes and repr, and packed output equal to each sequence run alone") {
  tg::nn::LSTM lstm(tg::nn::LSTMOptions(3, 5).proj_size(2).num_layers(2).bidirectional(true));
  CHECK(lstm.name() == "LSTM(3, 5, proj_size=2, num_layers=2, bidirectional=True)");
  std::vector<std::string> names;
  for (const auto& [name, p] : lstm.named_parameters()) names.push_back(name);
  CHECK(names.size() == 20);
  CHECK(names[4] == "weight_hr_l0");
  CHECK(names[19] == "weight_hr_l1_reverse");
  CHECK(lstm.named_parameters()[4].second.shape() == tg::Shape{2, 5});    // weight_hr: (proj, hidden)
  CHECK(lstm.named_parameters()[1].second.shape() == tg::Shape{20, 2});   // weight_hh reads h: proj wide
  CHECK(lstm.named_parameters()[10].second.shape() == tg::Shape{20, 4});  // layer 1 reads 2 directions of proj
  auto [y, state] = lstm(tg::randn({6, 3, 3}));
  CHECK(y.shape() == tg::Shape{6, 3, 4});
  CHECK(std::get<0>(state).shape() == tg::Shape{4, 3, 2});
  CHECK(std::get<1>(state).shape() == tg::Shape{4, 3, 5});
  // each sequence of a packed batch gives what it gives alone, unpadded (both directions, states)
  tg::manual_seed(3);
  tg::nn::GRU gru(tg::nn::GRUOptions(2, 3).num_layers(2).bidirectional(true));
  gru.double_();
  const std::vector<int64_t> len{3, 6, 1, 4};
  const Tensor x = vals(48, 0, 1, {6, 4, 2});
  auto [out, hn] = gru(rnn_utils::pack_padded_sequence(x, len, false, false));
  const Tensor padded = std::get<0>(rnn_utils::pad_packed_sequence(out));
  for (int64_t b = 0; b < 4; ++b) {
    CAPTURE(b);
    const Tensor alone = tg::narrow(tg::narrow(x, 1, b, 1), 0, 0, len[static_cast<size_t>(b)]);
    auto [ya, ha] = gru(alone);
    testing::check_close(tg::narrow(tg::narrow(padded, 1, b, 1), 0, 0, len[static_cast<size_t>(b)]), ya, 1e-12, 1e-12);
    testing::check_close(tg::narrow(hn, 1, b, 1), ha, 1e-12, 1e-12);
  }
}

TEST_CASE("rnn: gradcheck of a packed bidirectional LSTM with proj_size in float64") {
  tg::manual_seed(11);
  tg::nn::LSTM lstm(tg::nn::LSTMOptions(2, 3).proj_size(2).bidirectional(true));
  lstm.double_();
  const Tensor x = vals(18, 0, 1, {3, 3, 2}, true);
  const Tensor h0 = vals(12, 0.1, 0.5, {2, 3, 2}, true);
  const Tensor w = lstm.named_parameters()[0].second;
  CHECK(tg::autograd::gradcheck(
      [&](const std::vector<Tensor>& in) {
        auto [y, state] = lstm(rnn_utils::pack_padded_sequence(in[0], std::vector<int64_t>{2, 3, 1}, false, false),
                               {in[1], Tensor()});
        return tg::cat({tg::reshape(y.data(), {-1}), tg::reshape(std::get<0>(state), {-1}),
                        tg::reshape(std::get<1>(state), {-1})});
      },
      {x, h0, w}));
}
