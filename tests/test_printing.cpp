// tests/test_printing.cpp: operator<< of Tensor and RawTensor against the strings torch 2.15.0's
// str(tensor) gives: the element formatting of torch/_tensor_str.py's _Formatter (integer mode,
// scientific notation and its thresholds, the 4 digits, the padding computed over finite nonzero
// values, nan and inf), rows wrapped at 80 columns, summarized tensors, and the suffixes (Note
// [Printing numbers] in core/raw_tensor.cpp). Each expected string is what the torch call in the
// comment above it printed; tensorgrad names dtypes without torch's "torch." prefix.
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "testing.h"

using tg::Tensor;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// What tensorgrad prints for t, through Tensor and through RawTensor.
std::string printed(const Tensor& t) {
  std::ostringstream a, b;
  a << t;
  b << t.data();
  CHECK(a.str() == b.str());   // no autograd suffix here: both print the same
  return a.str();
}

/// Checks that t prints as torch printed it, with "dtype=torch.float64" read as "dtype=float64".
void check_print(const Tensor& t, std::string torch_str) {
  const std::string prefix = "dtype=torch.";
  for (std::size_t at = torch_str.find(prefix); at != std::string::npos; at = torch_str.find(prefix, at))
    torch_str.erase(at + 6, 6);
  CHECK(printed(t) == torch_str);
}

}  // namespace

TEST_CASE("printing: element formatting and the switch to scientific notation follow PyTorch's _Formatter") {
  // torch.tensor([1., 100000.], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{1., 100000.}, {2}).to(tg::kFloat32),
              "tensor([1.0000e+00, 1.0000e+05])");
  // torch.tensor([1., 1000.], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{1., 1000.}, {2}).to(tg::kFloat32),
              "tensor([   1., 1000.])");
  // torch.tensor([1., 1001.], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{1., 1001.}, {2}).to(tg::kFloat32),
              "tensor([1.0000e+00, 1.0010e+03])");
  // torch.tensor([-1., 1000.5], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{-1., 1000.5}, {2}).to(tg::kFloat32),
              "tensor([-1.0000e+00,  1.0005e+03])");
  // torch.tensor([0.5, 500.25], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{0.5, 500.25}, {2}).to(tg::kFloat32),
              "tensor([5.0000e-01, 5.0025e+02])");
  // torch.tensor([0.5, 499.75], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{0.5, 499.75}, {2}).to(tg::kFloat64),
              "tensor([  0.5000, 499.7500], dtype=torch.float64)");
  // torch.tensor([100000000.], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{100000000.}, {1}).to(tg::kFloat32),
              "tensor([100000000.])");
  // torch.tensor([100000000., -3.], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{100000000., -3.}, {2}).to(tg::kFloat64),
              "tensor([ 1.0000e+08, -3.0000e+00], dtype=torch.float64)");
  // torch.tensor([123456789.], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{123456789.}, {1}).to(tg::kFloat64),
              "tensor([1.2346e+08], dtype=torch.float64)");
  // torch.tensor([100000000.5], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{100000000.5}, {1}).to(tg::kFloat64),
              "tensor([1.0000e+08], dtype=torch.float64)");
  // torch.tensor([0.0001], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{0.0001}, {1}).to(tg::kFloat32),
              "tensor([1.0000e-04])");
  // torch.tensor([0.0001], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{0.0001}, {1}).to(tg::kFloat64),
              "tensor([0.0001], dtype=torch.float64)");
  // torch.tensor([0.00009999], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{0.00009999}, {1}).to(tg::kFloat64),
              "tensor([9.9990e-05], dtype=torch.float64)");
  // torch.tensor([0.001, 1.5], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{0.001, 1.5}, {2}).to(tg::kFloat32),
              "tensor([1.0000e-03, 1.5000e+00])");
  // torch.tensor([0.001, 1.0], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{0.001, 1.0}, {2}).to(tg::kFloat64),
              "tensor([0.0010, 1.0000], dtype=torch.float64)");
  // torch.tensor([float('nan'), float('inf'), float('-inf')], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{kNaN, kInf, -kInf}, {3}).to(tg::kFloat32),
              "tensor([nan, inf, -inf])");
  // torch.tensor([0., float('nan')], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{0., kNaN}, {2}).to(tg::kFloat32),
              "tensor([0., nan])");
  // torch.tensor([0., -0.], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{0., -0.}, {2}).to(tg::kFloat32),
              "tensor([0., -0.])");
  // torch.tensor([-0., 1.5], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{-0., 1.5}, {2}).to(tg::kFloat32),
              "tensor([-0.0000, 1.5000])");
  // torch.tensor([float('nan'), 1.5], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{kNaN, 1.5}, {2}).to(tg::kFloat32),
              "tensor([   nan, 1.5000])");
  // torch.tensor([float('-inf'), 1., 2.], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{-kInf, 1., 2.}, {3}).to(tg::kFloat32),
              "tensor([-inf, 1., 2.])");
  // torch.tensor([1e-05, float('nan')], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{1e-05, kNaN}, {2}).to(tg::kFloat32),
              "tensor([1.0000e-05,        nan])");
  // torch.tensor([10000000000., -10000000000., 0.], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{10000000000., -10000000000., 0.}, {3}).to(tg::kFloat32),
              "tensor([ 1.0000e+10, -1.0000e+10,  0.0000e+00])");
  // torch.tensor([float('nan')], dtype=torch.float64).to(torch.float32).reshape(())
  check_print(tg::from_vector(std::vector<double>{kNaN}, {}).to(tg::kFloat32),
              "tensor(nan)");
  // torch.tensor([-0.], dtype=torch.float64).to(torch.float32).reshape(())
  check_print(tg::from_vector(std::vector<double>{-0.}, {}).to(tg::kFloat32),
              "tensor(-0.)");
  // torch.tensor([1e-05], dtype=torch.float64).to(torch.float32).reshape(())
  check_print(tg::from_vector(std::vector<double>{1e-05}, {}).to(tg::kFloat32),
              "tensor(1.0000e-05)");
  // torch.tensor([-2.5], dtype=torch.float64).reshape(())
  check_print(tg::from_vector(std::vector<double>{-2.5}, {}).to(tg::kFloat64),
              "tensor(-2.5000, dtype=torch.float64)");
  // torch.tensor([float('-inf')], dtype=torch.float64).reshape(())
  check_print(tg::from_vector(std::vector<double>{-kInf}, {}).to(tg::kFloat64),
              "tensor(-inf, dtype=torch.float64)");
  // torch.tensor([0.3333333333333333, -0.6666666666666666], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{0.3333333333333333, -0.6666666666666666}, {2}).to(tg::kFloat64),
              "tensor([ 0.3333, -0.6667], dtype=torch.float64)");
  // torch.tensor([0.1, 65504.], dtype=torch.float64).to(torch.float16)
  check_print(tg::from_vector(std::vector<double>{0.1, 65504.}, {2}).to(tg::kFloat16),
              "tensor([9.9976e-02, 6.5504e+04], dtype=torch.float16)");
  // torch.tensor([0.1, 3.], dtype=torch.float64).to(torch.bfloat16)
  check_print(tg::from_vector(std::vector<double>{0.1, 3.}, {2}).to(tg::kBFloat16),
              "tensor([0.1001, 3.0000], dtype=torch.bfloat16)");
  // torch.tensor([float('-inf'), 0.25, float('inf'), float('nan')], dtype=torch.float64).to(torch.float16)
  check_print(tg::from_vector(std::vector<double>{-kInf, 0.25, kInf, kNaN}, {4}).to(tg::kFloat16),
              "tensor([  -inf, 0.2500,    inf,    nan], dtype=torch.float16)");
  // torch.tensor([1.5, -200.25, float('nan'), 0., 0.003, float('inf')], dtype=torch.float64)
  //     .to(torch.float32).reshape((2, 3))
  check_print(tg::from_vector(std::vector<double>{1.5, -200.25, kNaN, 0., 0.003, kInf}, {2, 3}).to(tg::kFloat32),
              "tensor([[ 1.5000e+00, -2.0025e+02,         nan],\n"
              "        [ 0.0000e+00,  3.0000e-03,         inf]])");
  // torch.tensor([1e+20, -1e-20, 3.], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{1e+20, -1e-20, 3.}, {3}).to(tg::kFloat64),
              "tensor([ 1.0000e+20, -1.0000e-20,  3.0000e+00], dtype=torch.float64)");
  // torch.tensor([1e+300, -1e-300], dtype=torch.float64)
  check_print(tg::from_vector(std::vector<double>{1e+300, -1e-300}, {2}).to(tg::kFloat64),
              "tensor([ 1.0000e+300, -1.0000e-300], dtype=torch.float64)");
  // torch.tensor([2.5, -7., 11., 0.125, -0.375], dtype=torch.float64).to(torch.float32)
  check_print(tg::from_vector(std::vector<double>{2.5, -7., 11., 0.125, -0.375}, {5}).to(tg::kFloat32),
              "tensor([ 2.5000, -7.0000, 11.0000,  0.1250, -0.3750])");
  // torch.tensor([-5, 100, 0])
  check_print(tg::from_vector(std::vector<int64_t>{-5, 100, 0}, {3}).to(tg::kInt64),
              "tensor([ -5, 100,   0])");
  // torch.tensor([-2147483648, 7, 2147483647]).to(torch.int32)
  check_print(tg::from_vector(std::vector<int64_t>{-2147483648, 7, 2147483647}, {3}).to(tg::kInt32),
              "tensor([-2147483648,           7,  2147483647], dtype=torch.int32)");
  // torch.tensor([-128, 7]).to(torch.int8)
  check_print(tg::from_vector(std::vector<int64_t>{-128, 7}, {2}).to(tg::kInt8),
              "tensor([-128,    7], dtype=torch.int8)");
  // torch.tensor([255, 0, 9]).to(torch.uint8)
  check_print(tg::from_vector(std::vector<int64_t>{255, 0, 9}, {3}).to(tg::kUInt8),
              "tensor([255,   0,   9], dtype=torch.uint8)");
  // torch.tensor([1, 0, 1]).to(torch.bool)
  check_print(tg::from_vector(std::vector<int64_t>{1, 0, 1}, {3}).to(tg::kBool),
              "tensor([ True, False,  True])");
  // torch.tensor([1, 0, 1, 1, 0]).to(torch.bool).reshape((5, 1))
  check_print(tg::from_vector(std::vector<int64_t>{1, 0, 1, 1, 0}, {5, 1}).to(tg::kBool),
              "tensor([[ True],\n"
              "        [False],\n"
              "        [ True],\n"
              "        [ True],\n"
              "        [False]])");
  // a NaN with its sign bit set prints "nan" too (printf would write "-nan");
  // t = torch.tensor([-float('nan'), 2.5]): math.copysign(1, t[0].item()) == -1.0, str(t) below
  check_print(tg::from_vector(std::vector<double>{-kNaN, 2.5}, {2}).to(tg::kFloat32), "tensor([   nan, 2.5000])");
  // torch.tensor([-float('nan'), 1e-5])
  check_print(tg::from_vector(std::vector<double>{-kNaN, 1e-5}, {2}).to(tg::kFloat32), "tensor([       nan, 1.0000e-05])");
}

TEST_CASE("printing: rows wrap at 80 columns, summarized and empty tensors, suffixes as PyTorch places them") {
  // torch.arange(30.)
  check_print(tg::arange(30).to(tg::kFloat32),
              "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
              "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
              "        28., 29.])");
  // torch.arange(40)
  check_print(tg::arange(40, tg::TensorOptions().dtype(tg::kInt64)),
              "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
              "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35,\n"
              "        36, 37, 38, 39])");
  // ((torch.arange(36.) - 10) / 3).reshape(2, 18)
  check_print(((tg::arange(36).to(tg::kFloat32) - 10.0) / 3.0).reshape({2, 18}),
              "tensor([[-3.3333, -3.0000, -2.6667, -2.3333, -2.0000, -1.6667, -1.3333, -1.0000,\n"
              "         -0.6667, -0.3333,  0.0000,  0.3333,  0.6667,  1.0000,  1.3333,  1.6667,\n"
              "          2.0000,  2.3333],\n"
              "        [ 2.6667,  3.0000,  3.3333,  3.6667,  4.0000,  4.3333,  4.6667,  5.0000,\n"
              "          5.3333,  5.6667,  6.0000,  6.3333,  6.6667,  7.0000,  7.3333,  7.6667,\n"
              "          8.0000,  8.3333]])");
  // torch.arange(24.).reshape(2, 3, 4) / 7
  check_print(tg::arange(24).to(tg::kFloat32).reshape({2, 3, 4}) / 7.0,
              "tensor([[[0.0000, 0.1429, 0.2857, 0.4286],\n"
              "         [0.5714, 0.7143, 0.8571, 1.0000],\n"
              "         [1.1429, 1.2857, 1.4286, 1.5714]],\n"
              "\n"
              "        [[1.7143, 1.8571, 2.0000, 2.1429],\n"
              "         [2.2857, 2.4286, 2.5714, 2.7143],\n"
              "         [2.8571, 3.0000, 3.1429, 3.2857]]])");
  // torch.arange(15, dtype=torch.float64) * 1e9
  check_print(tg::arange(15).to(tg::kFloat64) * 1e9,
              "tensor([0.0000e+00, 1.0000e+09, 2.0000e+09, 3.0000e+09, 4.0000e+09, 5.0000e+09,\n"
              "        6.0000e+09, 7.0000e+09, 8.0000e+09, 9.0000e+09, 1.0000e+10, 1.1000e+10,\n"
              "        1.2000e+10, 1.3000e+10, 1.4000e+10], dtype=torch.float64)");
  // torch.arange(6, dtype=torch.float64) * 1e9
  check_print(tg::arange(6).to(tg::kFloat64) * 1e9,
              "tensor([0.0000e+00, 1.0000e+09, 2.0000e+09, 3.0000e+09, 4.0000e+09, 5.0000e+09],\n"
              "       dtype=torch.float64)");
  // torch.arange(2000.)
  check_print(tg::arange(2000).to(tg::kFloat32),
              "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
              "        1.9990e+03])");
  // torch.arange(3000.).reshape(1000, 3) * 1.5
  check_print(tg::arange(3000).to(tg::kFloat32).reshape({1000, 3}) * 1.5,
              "tensor([[0.0000e+00, 1.5000e+00, 3.0000e+00],\n"
              "        [4.5000e+00, 6.0000e+00, 7.5000e+00],\n"
              "        [9.0000e+00, 1.0500e+01, 1.2000e+01],\n"
              "        ...,\n"
              "        [4.4865e+03, 4.4880e+03, 4.4895e+03],\n"
              "        [4.4910e+03, 4.4925e+03, 4.4940e+03],\n"
              "        [4.4955e+03, 4.4970e+03, 4.4985e+03]])");
  // torch.arange(1001.).reshape(7, 11, 13) - 500
  check_print(tg::arange(1001).to(tg::kFloat32).reshape({7, 11, 13}) - 500.0,
              "tensor([[[-500., -499., -498.,  ..., -490., -489., -488.],\n"
              "         [-487., -486., -485.,  ..., -477., -476., -475.],\n"
              "         [-474., -473., -472.,  ..., -464., -463., -462.],\n"
              "         ...,\n"
              "         [-396., -395., -394.,  ..., -386., -385., -384.],\n"
              "         [-383., -382., -381.,  ..., -373., -372., -371.],\n"
              "         [-370., -369., -368.,  ..., -360., -359., -358.]],\n"
              "\n"
              "        [[-357., -356., -355.,  ..., -347., -346., -345.],\n"
              "         [-344., -343., -342.,  ..., -334., -333., -332.],\n"
              "         [-331., -330., -329.,  ..., -321., -320., -319.],\n"
              "         ...,\n"
              "         [-253., -252., -251.,  ..., -243., -242., -241.],\n"
              "         [-240., -239., -238.,  ..., -230., -229., -228.],\n"
              "         [-227., -226., -225.,  ..., -217., -216., -215.]],\n"
              "\n"
              "        [[-214., -213., -212.,  ..., -204., -203., -202.],\n"
              "         [-201., -200., -199.,  ..., -191., -190., -189.],\n"
              "         [-188., -187., -186.,  ..., -178., -177., -176.],\n"
              "         ...,\n"
              "         [-110., -109., -108.,  ..., -100.,  -99.,  -98.],\n"
              "         [ -97.,  -96.,  -95.,  ...,  -87.,  -86.,  -85.],\n"
              "         [ -84.,  -83.,  -82.,  ...,  -74.,  -73.,  -72.]],\n"
              "\n"
              "        ...,\n"
              "\n"
              "        [[  72.,   73.,   74.,  ...,   82.,   83.,   84.],\n"
              "         [  85.,   86.,   87.,  ...,   95.,   96.,   97.],\n"
              "         [  98.,   99.,  100.,  ...,  108.,  109.,  110.],\n"
              "         ...,\n"
              "         [ 176.,  177.,  178.,  ...,  186.,  187.,  188.],\n"
              "         [ 189.,  190.,  191.,  ...,  199.,  200.,  201.],\n"
              "         [ 202.,  203.,  204.,  ...,  212.,  213.,  214.]],\n"
              "\n"
              "        [[ 215.,  216.,  217.,  ...,  225.,  226.,  227.],\n"
              "         [ 228.,  229.,  230.,  ...,  238.,  239.,  240.],\n"
              "         [ 241.,  242.,  243.,  ...,  251.,  252.,  253.],\n"
              "         ...,\n"
              "         [ 319.,  320.,  321.,  ...,  329.,  330.,  331.],\n"
              "         [ 332.,  333.,  334.,  ...,  342.,  343.,  344.],\n"
              "         [ 345.,  346.,  347.,  ...,  355.,  356.,  357.]],\n"
              "\n"
              "        [[ 358.,  359.,  360.,  ...,  368.,  369.,  370.],\n"
              "         [ 371.,  372.,  373.,  ...,  381.,  382.,  383.],\n"
              "         [ 384.,  385.,  386.,  ...,  394.,  395.,  396.],\n"
              "         ...,\n"
              "         [ 462.,  463.,  464.,  ...,  472.,  473.,  474.],\n"
              "         [ 475.,  476.,  477.,  ...,  485.,  486.,  487.],\n"
              "         [ 488.,  489.,  490.,  ...,  498.,  499.,  500.]]])");
  // torch.tensor([], dtype=torch.int64)
  check_print(tg::zeros({0}, tg::TensorOptions().dtype(tg::kInt64)),
              "tensor([], dtype=torch.int64)");
  // torch.zeros(2, 0, dtype=torch.float64)
  check_print(tg::zeros({2, 0}, tg::TensorOptions().dtype(tg::kFloat64)),
              "tensor([], size=(2, 0), dtype=torch.float64)");
  // torch.zeros(0, 3)
  check_print(tg::zeros({0, 3}),
              "tensor([], size=(0, 3))");
  // torch.zeros(0, dtype=torch.bool)
  check_print(tg::zeros({0}, tg::TensorOptions().dtype(tg::kBool)),
              "tensor([], dtype=torch.bool)");
}

TEST_CASE("printing: the autograd suffix comes last and wraps at 80 columns like PyTorch's") {
  // tensorgrad names the op where PyTorch names its backward class: grad_fn=<mul> for
  // grad_fn=<MulBackward0>, and prints requires_grad=true for requires_grad=True.
  std::ostringstream a, b, c, d;
  // (torch.arange(6, dtype=torch.float64) * 1e9).requires_grad_()
  //   -> "tensor([0.0000e+00, ..., 5.0000e+09],\n       dtype=torch.float64, requires_grad=True)"
  Tensor x = Tensor((tg::arange(6).to(tg::kFloat64) * 1e9).data(), /*requires_grad=*/true);
  a << x;
  CHECK(a.str() == "tensor([0.0000e+00, 1.0000e+09, 2.0000e+09, 3.0000e+09, 4.0000e+09, 5.0000e+09],\n"
                   "       dtype=float64, requires_grad=true)");
  // (torch.arange(6.) * 1e9).requires_grad_() * 1.0
  //   -> "tensor([0.0000e+00, ..., 5.0000e+09],\n       grad_fn=<MulBackward0>)"
  b << Tensor((tg::arange(6, tg::kFloat32) * 1e9).data(), true) * 1.0;
  CHECK(b.str() == "tensor([0.0000e+00, 1.0000e+09, 2.0000e+09, 3.0000e+09, 4.0000e+09, 5.0000e+09],\n"
                   "       grad_fn=<mul>)");
  // torch.tensor([1.5, float('nan')], requires_grad=True) -> "tensor([1.5000,    nan], requires_grad=True)"
  c << tg::from_vector(std::vector<double>{1.5, kNaN}, {2},
                       tg::TensorOptions().dtype(tg::kFloat32).requires_grad(true));
  CHECK(c.str() == "tensor([1.5000,    nan], requires_grad=true)");
  // the RawTensor of a tensor with a graph prints no autograd suffix
  d << (x * 1.0).data();
  CHECK(d.str() == "tensor([0.0000e+00, 1.0000e+09, 2.0000e+09, 3.0000e+09, 4.0000e+09, 5.0000e+09],\n"
                   "       dtype=float64)");
}
