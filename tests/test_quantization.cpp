// tests/test_quantization.cpp: quantized tensors (quantize_per_tensor, quantize_per_channel,
// dequantize) against values recorded from PyTorch, their parameter checks, and the safetensors
// round trip (Note [Quantized tensors] in quantization/quantize.h).
#include <cmath>
#include <filesystem>

#include <dlfcn.h>

#include "testing.h"
#include "tensorgrad/quantization/dynamic.h"
#include "tensorgrad/quantization/quantize.h"

using tg::Tensor;

namespace {

std::vector<int64_t> ints(const Tensor& v) { return v.to(tg::kInt64).to_vector<int64_t>(); }
std::vector<double> floats(const Tensor& v) { return v.to_vector<double>(); }

Tensor x12() {
  return tg::from_vector<double>({-13.0, -1.25, -0.75, -0.25, 0.0, 0.25, 0.35, 0.75, 1.25, 2.6, 6.3, 70.0}).to(tg::kFloat32);
}
Tensor w34() {
  return tg::from_vector<double>({0.31, -0.72, 1.05, -2.2, 0.013, 0.5, -0.026, 0.0, 3.3, -1.1, 0.55, 0.95}, {3, 4})
      .to(tg::kFloat32);
}

}  // namespace

// Recorded with PyTorch 1.13 (/usr/bin/python3):
//   x = torch.tensor([-13.0, -1.25, -0.75, -0.25, 0.0, 0.25, 0.35, 0.75, 1.25, 2.6, 6.3, 70.0])
//   q = torch.quantize_per_tensor(x, scale, zero_point, dtype); q.int_repr().tolist(), q.dequantize().tolist()
// The halves (-1.25 / 0.5 = -2.5, 0.25 / 0.5, 1.25 / 0.5) round to even; 70 and -13 clamp.
TEST_CASE("quantize_per_tensor: PyTorch's rounding (halves to even) and clamping") {
  struct Row {
    double scale;
    int64_t zp;
    tg::DType dt;
    std::vector<int64_t> q;
    std::vector<double> deq;
  };
  const std::vector<Row> rows = {
      {0.5, 0, tg::kInt8, {-26, -2, -2, 0, 0, 0, 1, 2, 2, 5, 13, 127},
       {-13.0, -1.0, -1.0, 0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 2.5, 6.5, 63.5}},
      {0.1, 3, tg::kInt8, {-127, -9, -5, 1, 3, 5, 7, 11, 15, 29, 66, 127},
       {-13.0, -1.2000000476837158, -0.800000011920929, -0.20000000298023224, 0.0, 0.20000000298023224,
        0.4000000059604645, 0.800000011920929, 1.2000000476837158, 2.6000001430511475, 6.300000190734863,
        12.40000057220459}},
      {0.05, 128, tg::kUInt8, {0, 103, 113, 123, 128, 133, 135, 143, 153, 180, 254, 255},
       {-6.400000095367432, -1.25, -0.75, -0.25, 0.0, 0.25, 0.3499999940395355, 0.75, 1.25, 2.6000001430511475,
        6.300000190734863, 6.349999904632568}},
      {0.5, -5, tg::kInt8, {-31, -7, -7, -5, -5, -5, -4, -3, -3, 0, 8, 127},
       {-13.0, -1.0, -1.0, 0.0, 0.0, 0.0, 0.5, 1.0, 1.0, 2.5, 6.5, 66.0}},
  };
  for (const Row& r : rows) {
    CAPTURE(r.scale);
    CAPTURE(r.zp);
    tg::QuantizedTensor q = tg::quantize_per_tensor(x12(), r.scale, r.zp, r.dt);
    CHECK(q.dtype() == r.dt);
    CHECK(q.int_repr().dtype() == r.dt);
    CHECK(q.qscheme() == tg::QScheme::PerTensorAffine);
    CHECK(q.q_scale() == r.scale);
    CHECK(q.q_zero_point() == r.zp);
    CHECK(ints(q.int_repr()) == r.q);
    Tensor back = q.dequantize();
    CHECK(back.dtype() == tg::kFloat32);
    CHECK(floats(back) == r.deq);   // bit for bit
    CHECK(floats(tg::dequantize(q)) == r.deq);
  }
  // float64 input quantizes the same (through float32, as PyTorch's float path)
  CHECK(ints(tg::quantize_per_tensor(x12().to(tg::kFloat64), 0.1, 3, tg::kInt8).int_repr()) == rows[1].q);
  CHECK(tg::quantize_per_tensor(x12(), 0.1, 3, tg::kInt8).nbytes() == 12);
}

// Recorded with PyTorch 1.13:
//   w = torch.tensor([[0.31, -0.72, 1.05, -2.2], [0.013, 0.5, -0.026, 0.0], [3.3, -1.1, 0.55, 0.95]])
//   torch.quantize_per_channel(w, torch.tensor([0.02, 0.004, 0.03], dtype=torch.float64),
//                              torch.tensor([0, -2, 5]), 0, torch.qint8)
//   torch.quantize_per_channel(w, torch.tensor([0.01, 0.02, 0.005, 0.05], dtype=torch.float64),
//                              torch.tensor([10, 0, 100, 3]), 1, torch.quint8)
TEST_CASE("quantize_per_channel: per-row and per-column parameters, against PyTorch") {
  Tensor s0 = tg::from_vector<double>({0.02, 0.004, 0.03});
  Tensor z0 = tg::from_vector<int64_t>({0, -2, 5});
  tg::QuantizedTensor q0 = tg::quantize_per_channel(w34(), s0, z0, 0, tg::kInt8);
  CHECK(q0.qscheme() == tg::QScheme::PerChannelAffine);
  CHECK(q0.q_per_channel_axis() == 0);
  CHECK(floats(q0.q_per_channel_scales()) == std::vector<double>{0.02, 0.004, 0.03});
  CHECK(ints(q0.q_per_channel_zero_points()) == std::vector<int64_t>{0, -2, 5});
  CHECK(ints(q0.int_repr()) == std::vector<int64_t>{16, -36, 52, -110, 1, 123, -8, -2, 115, -32, 23, 37});
  CHECK(floats(q0.dequantize()) ==
        std::vector<double>{0.3199999928474426, -0.7200000286102295, 1.0399999618530273, -2.200000047683716,
                            0.012000000104308128, 0.5, -0.024000000208616257, 0.0, 3.299999952316284,
                            -1.1100000143051147, 0.5400000214576721, 0.9599999785423279});
  Tensor s1 = tg::from_vector<double>({0.01, 0.02, 0.005, 0.05});
  Tensor z1 = tg::from_vector<int64_t>({10, 0, 100, 3});
  tg::QuantizedTensor q1 = tg::quantize_per_channel(w34(), s1, z1, -1, tg::kUInt8);
  CHECK(q1.q_per_channel_axis() == 1);
  CHECK(ints(q1.int_repr()) == std::vector<int64_t>{41, 0, 255, 0, 11, 25, 95, 3, 255, 0, 210, 22});
  CHECK(floats(q1.dequantize()) ==
        std::vector<double>{0.3100000023841858, 0.0, 0.7749999761581421, -0.15000000596046448, 0.009999999776482582,
                            0.5, -0.02500000037252903, 0.0, 2.450000047683716, 0.0, 0.550000011920929,
                            0.949999988079071});
  TG_CHECK_THROWS(q1.q_scale(), tg::Error, "q_scale: expected a per-tensor quantized tensor");
  TG_CHECK_THROWS(tg::quantize_per_tensor(x12(), 0.1, 0, tg::kInt8).q_per_channel_axis(), tg::Error,
                  "q_per_channel_axis: expected a per-channel");
}

TEST_CASE("quantize: bad parameters raise, naming the op") {
  TG_CHECK_THROWS(tg::quantize_per_tensor(x12(), 0.1, 0, tg::kInt64), tg::DTypeError,
                  "quantize_per_tensor: expected dtype int8 (qint8) or uint8 (quint8), got int64");
  TG_CHECK_THROWS(tg::quantize_per_tensor(x12(), 0.0, 0, tg::kInt8), tg::Error, "scale must be positive");
  TG_CHECK_THROWS(tg::quantize_per_tensor(x12(), -1.0, 0, tg::kInt8), tg::Error, "scale must be positive");
  TG_CHECK_THROWS(tg::quantize_per_tensor(x12(), 0.1, 128, tg::kInt8), tg::Error, "zero_point 128 is outside [-128, 127]");
  TG_CHECK_THROWS(tg::quantize_per_tensor(x12(), 0.1, -1, tg::kUInt8), tg::Error, "outside [0, 255]");
  TG_CHECK_THROWS(tg::quantize_per_tensor(tg::from_vector<int64_t>({1, 2}), 0.1, 0, tg::kInt8), tg::DTypeError,
                  "quantize_per_tensor");
  Tensor s = tg::from_vector<double>({0.1, 0.1});
  Tensor z = tg::from_vector<int64_t>({0, 0});
  TG_CHECK_THROWS(tg::quantize_per_channel(w34(), s, z, 0, tg::kInt8), tg::ShapeError,
                  "quantize_per_channel: expected scales of shape (3)");
  TG_CHECK_THROWS(tg::quantize_per_channel(w34(), tg::from_vector<double>({0.1, 0.0, 0.1}),
                                           tg::from_vector<int64_t>({0, 0, 0}), 0, tg::kInt8),
                  tg::Error, "scale must be positive");
  TG_CHECK_THROWS(tg::quantize_per_channel(w34(), tg::from_vector<double>({0.1, 0.1, 0.1}), s, 0, tg::kInt8),
                  tg::ShapeError, "zero_points");
  TG_CHECK_THROWS(tg::quantize_per_channel(w34(), s, z, 2, tg::kInt8), tg::IndexError, "dimension out of range");
  TG_CHECK_THROWS(tg::QuantizedTensor::per_tensor(tg::from_vector<int64_t>({1}), 0.1, 0), tg::DTypeError, "int8");
}

TEST_CASE("quantize: safetensors round trip keeps integers and parameters") {
  const std::string path = testing::temp_path("tg_test_quantized.safetensors");
  tg::QuantizedTensor a = tg::quantize_per_tensor(x12(), 0.05, 128, tg::kUInt8);
  tg::QuantizedTensor b = tg::quantize_per_channel(w34(), tg::from_vector<double>({0.02, 0.004, 0.03}),
                                                   tg::from_vector<int64_t>({0, -2, 5}), 0, tg::kInt8);
  tg::save_quantized({{"act", a}, {"fc.weight", b}}, path);
  // the documented keys, with the integers stored in one byte each
  const auto flat = tg::load_tensors(path);
  std::vector<std::string> keys;
  for (const auto& kv : flat) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"act", "act.scale", "act.zero_point", "fc.weight", "fc.weight.axis",
                                         "fc.weight.scale", "fc.weight.zero_point"});
  const auto back = tg::load_quantized(path);
  REQUIRE(back.size() == 2);
  for (const auto& kv : back) {
    const tg::QuantizedTensor& want = kv.first == "act" ? a : b;
    CAPTURE(kv.first);
    CHECK(kv.second.qscheme() == want.qscheme());
    CHECK(kv.second.dtype() == want.dtype());
    CHECK(kv.second.shape() == want.shape());
    CHECK(ints(kv.second.int_repr()) == ints(want.int_repr()));
    CHECK(floats(kv.second.dequantize()) == floats(want.dequantize()));
  }
  CHECK(back[0].second.q_scale() == 0.05);
  CHECK(back[0].second.q_zero_point() == 128);
  CHECK(back[1].second.q_per_channel_axis() == 0);
  // a file of plain tensors is not a quantized one
  tg::save_tensors({{"w", tg::randn({2}).data()}}, path);
  TG_CHECK_THROWS(tg::load_quantized(path), tg::SerializationError, "expected I8 or U8");
  std::filesystem::remove(path);
}

// ------------------------------------------------------------------------------------------------
// Dynamic quantization

namespace {

Tensor sin_cos(int64_t rows, int64_t cols, double off, double scale, bool cosine) {
  std::vector<double> v;
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t b = 0; b < cols; ++b)
      v.push_back(scale * (cosine ? std::cos(off + 5.0 * double(a) + 2.0 * double(b))
                                  : std::sin(off + 7.0 * double(a) + 3.0 * double(b))));
  return tg::from_vector<double>(v, {rows, cols}).to(tg::kFloat32);
}

}  // namespace

// Recorded with PyTorch 1.13 (/usr/bin/python3, torch.backends.quantized.engine = 'onednn'):
//   lin = nn.Linear(6, 4); lin.weight = 0.5 sin(1 + 7a + 3b); lin.bias = [0.1, -0.2, 0.3, -0.4]
//   q = quantize_dynamic(nn.Sequential(lin), {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
//   q[0].weight().int_repr(), .q_per_channel_scales(); q(x) for x[a][b] = 2 cos(1 + 5a + 2b), (3, 6)
TEST_CASE("quantize_dynamic: int8 weights, scales and outputs as PyTorch's dynamic Linear") {
  tg::nn::Sequential model;
  auto& lin = model.add<tg::nn::Linear>(6, 4);
  {
    tg::NoGradGuard g;
    tg::prim::copy_(lin.weight.data(), sin_cos(4, 6, 1.0, 0.5, false).data());
    tg::prim::copy_(lin.bias.data(), tg::from_vector<double>({0.1, -0.2, 0.3, -0.4}).data());
  }
  std::unique_ptr<tg::nn::Module> q = tg::quantization::quantize_dynamic(model);
  auto* ql = dynamic_cast<tg::quantization::DynamicQuantizedLinear*>(q->children().at(0).second);
  REQUIRE(ql != nullptr);
  CHECK(ql->name() == "DynamicQuantizedLinear(in_features=6, out_features=4, dtype=qint8, qscheme=per_channel_affine)");
  const tg::QuantizedTensor w = ql->weight();
  CHECK(ints(w.int_repr()) == std::vector<int64_t>{127, -115, 100, -82, 64, -44, 126, -128, 126, -123, 116, -108,
                                                   84, -97, 108, -117, 123, -128, -2, -26, 54, -80, 105, -128});
  const std::vector<double> scales = {0.00329988612793386, 0.003921530209481716, 0.003874633926898241,
                                      0.002523678820580244};
  CHECK(floats(w.q_per_channel_scales()) == scales);
  const std::vector<double> want = {0.7125367522239685,   0.07347727566957474,  0.09981993585824966,
                                    -0.9790999293327332,  0.34071657061576843,  0.18492110073566437,
                                    0.6436142325401306,   -0.27205386757850647, -0.36498087644577026,
                                    -0.23617036640644073, 0.7125544548034668,   0.25907599925994873};
  Tensor y = (*q)(sin_cos(3, 6, 1.0, 2.0, true));
  CHECK(y.dtype() == tg::kFloat32);
  CHECK(y.shape() == tg::Shape{3, 4});
  testing::check_values(y, want, 1e-6);
  CHECK_FALSE(y.requires_grad());
  // the source model is untouched
  CHECK(dynamic_cast<tg::nn::Linear*>(model.children().at(0).second) != nullptr);
}

TEST_CASE("quantize_dynamic: the int8 product is exact and the MLP stays close to float32") {
  // int8_matmul against the integer product computed in float64 (exact below 2^53)
  tg::manual_seed(21);
  const Tensor xq = tg::randint(0, 128, {33, 257}).to(tg::kUInt8);
  const Tensor wq = tg::randint(-128, 128, {17, 257}).to(tg::kInt8);
  const tg::RawTensor acc = tg::quantization::int8_matmul(xq.data(), wq.data());
  CHECK(acc.dtype() == tg::kInt32);
  const Tensor ref = tg::matmul(xq.to(tg::kFloat64), tg::t(wq.to(tg::kFloat64)));
  CHECK(Tensor(acc).to(tg::kInt64).to_vector<int64_t>() == ref.to(tg::kInt64).to_vector<int64_t>());
  MESSAGE("int8_matmul on oneDNN: " << tg::quantization::has_onednn());

  // a 784-128-10 MLP: the quantized one agrees with float32 on the predicted class for nearly all inputs
  tg::nn::Sequential mlp;
  mlp.add<tg::nn::Linear>(784, 128);
  mlp.add<tg::nn::ReLU>();
  mlp.add<tg::nn::Linear>(128, 10);
  auto qmlp = tg::quantization::quantize_dynamic(mlp);
  const Tensor x = tg::rand({256, 784});
  Tensor yf, yq;
  {
    tg::NoGradGuard g;
    yf = mlp(x);
    yq = (*qmlp)(x);
  }
  const auto cf = tg::argmax(yf, 1).to_vector<int64_t>(), cq = tg::argmax(yq, 1).to_vector<int64_t>();
  int agree = 0;
  for (std::size_t i = 0; i < cf.size(); ++i) agree += cf[i] == cq[i];
  MESSAGE("argmax agreement int8 vs float32: " << agree << " / 256");
  CHECK(agree >= 240);
  const double err = tg::max(tg::abs(yf - yq)).item(), range = tg::max(tg::abs(yf)).item();
  CHECK(err < 0.05 * range);
  // a checkpoint of the quantized model is about 4x smaller
  const std::string fpath = testing::temp_path("tg_test_dyn_f32.safetensors");
  const std::string qpath = testing::temp_path("tg_test_dyn_i8.safetensors");
  tg::save(mlp, fpath);
  tg::save(*qmlp, qpath);
  const double ratio = double(std::filesystem::file_size(fpath)) / double(std::filesystem::file_size(qpath));
  MESSAGE("checkpoint float32 / int8: " << ratio);
  CHECK(ratio > 3.5);
  // and it loads back into a fresh quantized model with the same outputs
  auto again = tg::quantization::quantize_dynamic(mlp);   // different weights are overwritten by the load
  tg::load(*again, qpath);
  testing::check_close((*again)(x), yq, 0, 0);
  std::filesystem::remove(fpath);
  std::filesystem::remove(qpath);
}

namespace {

/// The number of threads of this process (Linux: the entries of /proc/self/task).
int64_t process_threads() {
  int64_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) n += e.is_directory() ? 1 : 0;
  return n;
}

}  // namespace

// Note [oneDNN threads]: products above 2^20 multiply-adds are cut over the pool, by rows when the batch
// has at least one row per thread, else by blocks of 64 output columns (333 leaves a partial block);
// each block is one single-threaded oneDNN call. The int32 sums must not depend on the cut; with one
// thread no OpenMP team may start (the OpenMP default is one thread per core), and the caller's
// OpenMP thread count is left as it was.
TEST_CASE("quantize_dynamic: int8 products cut over the thread pool are exact, oneDNN single-threaded") {
  const int threads_before = tg::get_num_threads();
  using GetFn = int (*)();
  const auto omp_threads = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  const int omp_before = omp_threads != nullptr ? omp_threads() : 0;
  tg::manual_seed(22);
  for (int threads : {1, 2, 3}) {
    tg::set_num_threads(threads);
    const int64_t running = process_threads();
    for (const auto& nio : {std::vector<int64_t>{7, 1000, 300}, std::vector<int64_t>{2, 2049, 333}}) {
      const Tensor xq = tg::randint(0, 128, {nio[0], nio[1]}).to(tg::kUInt8);
      const Tensor wq = tg::randint(-128, 128, {nio[2], nio[1]}).to(tg::kInt8);
      const tg::RawTensor acc = tg::quantization::int8_matmul(xq.data(), wq.data());
      const Tensor ref = tg::matmul(xq.to(tg::kFloat64), tg::t(wq.to(tg::kFloat64)));
      CHECK_MESSAGE(Tensor(acc).to(tg::kInt64).to_vector<int64_t>() == ref.to(tg::kInt64).to_vector<int64_t>(),
                    threads << " threads, x " << nio[0] << "x" << nio[1] << ", w " << nio[2] << "x" << nio[1]);
    }
    // one thread: no pool threads, and no OpenMP team of oneDNN's either
    if (threads == 1) CHECK(process_threads() <= running);
  }
  tg::set_num_threads(threads_before);
  if (omp_threads != nullptr) CHECK(omp_threads() == omp_before);
}

TEST_CASE("quantize_dynamic: modules it cannot rebuild, and bad inputs, raise") {
  struct Net : tg::nn::Module {
    tg::nn::Linear fc{3, 2};
    Net() { register_module("fc", fc); }
    Tensor forward(const Tensor& x) override { return fc(x); }
  } net;
  TG_CHECK_THROWS(tg::quantization::quantize_dynamic(net), tg::Error, "the Linear 'fc' is inside");
  tg::nn::Linear lin(3, 2);
  auto q = tg::quantization::quantize_dynamic(lin);
  TG_CHECK_THROWS((*q)(tg::randn({4, 5})), tg::ShapeError, "expected input (..., 3)");
  CHECK((*q)(tg::randn({2, 5, 3})).shape() == tg::Shape{2, 5, 2});
  CHECK((*q)(tg::zeros({0, 3})).shape() == tg::Shape{0, 2});
  TG_CHECK_THROWS(tg::quantization::int8_matmul(tg::zeros({2, 3}).data(), tg::zeros({2, 3}).data()), tg::DTypeError,
                  "int8_matmul");
}
