// tests/test_layers.cpp: conv1d/conv2d, pooling and normalization against numbers recorded from
// PyTorch, their error messages, and the modules of nn/conv.h (parameter names, init, a PyTorch
// checkpoint of a small CNN). Gradients are also checked by finite differences in test_gradcheck.cpp.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "tensorgrad/backend/cpu/conv.h"
#include "testing.h"

using tg::Tensor;

namespace {

Tensor fill(const tg::Shape& shape, double seed, bool requires_grad = true) {
  return testing::sin_fill(shape, seed, requires_grad);
}

struct Reference {
  std::string name;
  double loss;                  ///< sum(out * fill(out.shape, 9))
  std::vector<double> first;    ///< out.flatten()[:8]
  std::vector<double> probes;   ///< sum(grad_i * fill(input_i.shape, 5)) per input
};

// Printed by `/usr/bin/python3 tests/data/layers_reference.py` (PyTorch 1.13, float64).
const std::vector<Reference> kReferences = {
  {"conv2d groups stride padding dilation", 10.298389355147815, {-0.17013894585435477, -1.2603642359311129, -0.67401432102711245, -1.3675057975201539, -1.3514669847204466, -0.63344118690105455, -1.2777411782011128, -0.32975362581443302}, {-7.7028918430700468, -9.9028095239950051, 4.4208108468680907}},
  {"conv2d 3x3 padding 1", 12.884884159370085, {-1.4147387291230895, -1.1610264879755088, -0.32521529565738261, 0.72992067668908389, 1.5081344943149884, 1.6434200388645628, 1.5051623257862801, -0.70834419408700755}, {-4.5823719042596132, -13.172771550327891, 0.80908292027683293}},
  {"conv2d 1x1 no bias", -3.7440174766081959, {0.32293343379130857, 0.59308205803597569, 0.5842949232235326, 0.3007047561590418, -0.12431155636847258, -0.49086220151424209, -0.62655268335439551, -0.46756564805723777}, {-1.1189050578685198, 3.8549750045936486}},
  {"conv1d stride 2 padding 1", -1.3396872748219608, {0.1542190090939943, 0.13528609408750006, 0.13945891865271284, 0.14638926079096123, 0.12825732160863029, -0.51665784050134411, -0.53635639858946749, -0.53221999414031707}, {0.016424537400820394, -0.016668902313321077, 2.8207815087429324}},
  {"max_pool2d 3 stride 2 padding 1", 0.81203951706168231, {0.99166481045246857, 0.99166481045246857, 0.66296923008218334, -0.37387666483023685, 0.8504366206285644, 0.98935824662338179, 0.98677196427461367, 0.63742259615024155}, {-0.75459143126735773}},
  {"max_pool2d 2", -0.7713452466696753, {0.99166481045246857, 0.67546318055115095, 0.98935824662338179, 0.85916181485649579, 0.65028784015711683, 0.98390669461861668, 0.87588107981088936, 0.98076324774515289}, {0.29665931743393747}},
  {"avg_pool2d (3, 2) stride 2 padding 1", -0.20365910287345157, {0.1921687247202124, 0.5844871430425943, 0.019577904504352484, -0.57783194205743726, -0.20822147325311091, -0.15231501636817232, 0.50454423859940267, 0.69605920920459285}, {2.1818939052046376}},
  {"avg_pool2d count_include_pad false", 1.4671471566472332, {0.74877844485057676, 0.70191212512850665, -0.2475222232553107, -0.78605341531054818, -0.01307660948539846, 0.61607230295498683, 0.4662967095856505, -0.45756206401087379}, {-0.62837521318113043}},
  {"adaptive_avg_pool2d (3, 4)", 0.21538272504257688, {0.83417607693709683, 0.020889366697721162, -0.82707506498788286, -0.30204053821776428, 0.82957960818568754, -0.0074629695409368741, -0.83211652740653674, -0.27540196790578148}, {-0.36436834222419945}},
  {"batch_norm training", -2.8501685960982912, {1.1866444990812812, 1.3786575592283876, 0.97441429343306707, 0.1640366260741255, -0.67134216338918373, -1.1388303771186128, -1.0185610034923738, -0.36709860818768836}, {-22.208645916559032, 5.3920333129704616, -0.22402168425333166}},
  {"batch_norm eval", -0.30055511410649771, {0.24340887231039676, 0.32668505718603608, 0.15136449872343699, -0.20009680497314689, -1.0207192500253679, -1.1329063679647058, -1.1040443046928681, -0.94770733954877873}, {-1.4219859548665323, 0.71500805559869796, 0.89718422216171301}},
  {"layer_norm over (3, 4)", 2.9254137453681199, {0.94603688504271055, -0.06156034825826015, -1.1183588231492019, -0.73289540555584098, 0.68247616544073875, 1.3891035579555289, 0.92097012024490621, 0.5257852994839195}, {-0.46014694868359124, 1.427571971254578, 2.4634350690339706}},
  // PyTorch 2.15, float64, from the same script's later cases (embedding, group_norm, attention):
  {"embedding padding_idx 1", 3.2711011871704319, {0.8414709848078965, 0.99166481045246857, 0.67546318055115095, 0.041580662433290935, 0.31154136351337786, 0.8504366206285644, 0.98935824662338179, 0.66296923008218334}, {-3.8615081625724601}},
  {"embedding repeated indices", 3.3864039713356595, {0.8414709848078965, 0.99166481045246857, 0.67546318055115095, -0.88345465572015358, -0.37387666483023685, 0.31154136351337786, 0.041580662433290935, -0.61185789094271892}, {0.43073110489610877}},
  {"group_norm 2 groups", 1.5161496934230687, {1.2213955161304992, 1.4146003150282391, 1.0078480929975362, 0.19244077573821899, -0.64812283435186469, -1.118512537278638, -1.0649986305501891, -0.75690366412717902}, {10.452869764326501, -1.6216163880273085, 4.1088575538442793}},
  {"group_norm 3 groups no affine", -9.0409796533995852, {1.0524594840563473, 1.2618477874149316, 0.82102458765879238, -0.062684076314256917, -0.97365621150891857, -1.4834473884108799, -1.3522948508162784, -0.64188168647078414}, {-47.379223176128392}},
  {"sdpa", -2.1863255199745688, {-0.034767760502620662, 0.066694936681994804, 0.136789963007935, 0.12994947957231762, 0.037638868583033946, -0.072373890424395348, -0.19699123931288756, -0.019211532185945998}, {1.0834939497507721, 2.3331263209190025, 1.8786774976366734}},
  {"sdpa causal L < S", 3.9994536937109508, {0.14112000805986721, -0.5298361409084934, -0.95160207388951601, -0.59489875177037776, -0.48483486775584422, -0.14674556968195324, 0.26993224970622159, 0.30059241718181917}, {-3.4847947750931638, -3.1194258625026872, -4.2982157063340445}},
  {"sdpa bool mask, broadcast key batch", -1.5261401883039809, {0.53936684584317018, 0.40283717941624475, 0.076846893005298872, 0.44758387526998278, 0.18819144121411574, -0.15971036821713358, 0.69354347806816186, 0.76508695235307267}, {0.43998957903532621, 1.2825317517279475, 0.24592069866593425}},
  {"sdpa float mask with gradient, scale 0.3", -1.7150912763547468, {0.18826017324107727, -0.14726729513797757, -0.25416408990957517, -0.45418647276770863, 0.023126746073695265, 0.050414337877062877, -0.15852269403462538, -0.44835210717365537}, {0.15000812773683436, 0.45457769667461995, -0.34688080496241036, -0.15470962633799051}},
  // PyTorch 2.15, float64: pooling with dilation and ceil_mode, and a stride-1 dilated convolution.
  {"max_pool2d 3 stride 2 padding 1 dilation 2", -3.2137763338168202, {0.66296923008218334, 0.66296923008218334, 0.98076324774515289, 0.98677196427461367, 0.66296923008218334, 0.97364545569497807, 0.98076324774515289, 0.98677196427461367}, {3.5162552585000482}},
  {"max_pool2d (3, 2) stride 2 padding 1 dilation (1, 2) ceil_mode", 2.1854699761653684, {0.99166481045246857, 0.99166481045246857, 0.041580662433290935, 0.32747443913769136, 0.98677196427461367, 0.98677196427461367, 0.66296923008218334, 0.66296923008218334}, {-4.4019570891756565}},
  {"max_pool2d 2 padding 1 ceil_mode, last window dropped", -0.2169418874108715, {0.8414709848078965, 0.99166481045246857, 0.041580662433290935, -0.88345465572015358, -0.37387666483023685, 0.8504366206285644, 0.98935824662338179, 0.98677196427461367}, {1.7024666599531395}},
  {"avg_pool2d 3 stride 2 padding 1 ceil_mode", -0.071725599344740321, {0.38727369688510338, 0.19682029556439679, -0.44769626664692513, -0.34900760622256144, 0.32905661528672292, 0.30620143081719636, 0.18341832063244098, -0.44979104037753537}, {0.58464827922220208}},
  {"avg_pool2d (3, 2) stride (2, 3) padding (1, 0) ceil_mode count_include_pad false", 0.047537502024629585, {0.87136581799148261, -0.54407102686720032, -0.32202154091238194, 0.91860429245158903, 0.27512748094866146, -0.77376936537354257, 0.5061414189864113, 0.53284375352143309}, {-0.07077708140695349}},
  {"avg_pool2d 2 ceil_mode no padding", -1.6568096555335141, {-0.0069622445312213788, 0.16367713541689571, 0.11928936484292274, 0.10466150494507698, 0.14658525763866614, 0.0029178671040612225, 0.32912551197152706, -0.81108584371479509}, {2.7491397132671604}},
  {"conv2d stride 1 groups 2 padding (2, 1) dilation (2, 1)", -7.8555555072589698, {0.54763434756923013, -1.4738244867867489, -3.2320889434263038, -3.4038805223381137, -1.9084029596424887, -0.12487658610954949, 2.4849653219984571, 3.8254518759714293}, {14.610037741044374, 9.472113711195119, 4.47786420431044}},
};

tg::TensorOptions f64() { return tg::TensorOptions().dtype(tg::kFloat64); }

/// The (2, 3) indices of the script's embedding cases.
Tensor ids23() { return tg::from_vector(std::vector<int64_t>{0, 2, 1, 4, 2, 3}, {2, 3}); }

using Op = std::function<Tensor(const std::vector<Tensor>&)>;
struct RefCase {
  std::string name;
  std::vector<tg::Shape> shapes;
  Op fn;
};

/// The same cases as tests/data/layers_reference.py, in its order.
std::vector<RefCase> reference_cases() {
  return {
      {"conv2d groups stride padding dilation", {{2, 4, 5, 6}, {6, 2, 3, 2}, {6}},
       [](auto& in) { return tg::conv2d(in[0], in[1], in[2], {2, 1}, {1, 2}, {1, 2}, 2); }},
      {"conv2d 3x3 padding 1", {{1, 3, 7, 7}, {4, 3, 3, 3}, {4}}, [](auto& in) { return tg::conv2d(in[0], in[1], in[2], {1}, {1}); }},
      {"conv2d 1x1 no bias", {{2, 5, 3, 4}, {3, 5, 1, 1}}, [](auto& in) { return tg::conv2d(in[0], in[1]); }},
      {"conv1d stride 2 padding 1", {{2, 3, 9}, {4, 3, 3}, {4}}, [](auto& in) { return tg::conv1d(in[0], in[1], in[2], 2, 1); }},
      {"max_pool2d 3 stride 2 padding 1", {{2, 3, 7, 8}}, [](auto& in) { return tg::max_pool2d(in[0], {3}, {2}, {1}); }},
      {"max_pool2d 2", {{2, 2, 6, 5}}, [](auto& in) { return tg::max_pool2d(in[0], {2}); }},
      {"avg_pool2d (3, 2) stride 2 padding 1", {{2, 3, 7, 8}}, [](auto& in) { return tg::avg_pool2d(in[0], {3, 2}, {2}, {1}); }},
      {"avg_pool2d count_include_pad false", {{2, 3, 7, 8}}, [](auto& in) { return tg::avg_pool2d(in[0], {3}, {2}, {1}, false); }},
      {"adaptive_avg_pool2d (3, 4)", {{2, 3, 7, 9}}, [](auto& in) { return tg::adaptive_avg_pool2d(in[0], {3, 4}); }},
      {"batch_norm training", {{4, 3, 2, 5}, {3}, {3}}, [](auto& in) {
         const Tensor rm = tg::zeros({3}, f64()), rv = tg::ones({3}, f64());
         const Tensor y = tg::batch_norm(in[0], rm, rv, in[1], in[2], true, 0.1, 1e-5);
         // The running statistics PyTorch left after the same step (printed by the script too).
         const std::vector<double> m = rm.to_vector<double>(), v = rv.to_vector<double>();
         const double want_m[] = {0.002365513941022255, 0.0025891288111606868, 0.0015383861540162165};
         const double want_v[] = {0.95188494305828308, 0.95223117648722733, 0.95087585915856143};
         for (int c = 0; c < 3; ++c) {
           CHECK(m[c] == doctest::Approx(want_m[c]).epsilon(1e-12));
           CHECK(v[c] == doctest::Approx(want_v[c]).epsilon(1e-12));
         }
         return y;
       }},
      {"batch_norm eval", {{2, 3, 4}, {3}, {3}}, [](auto& in) {
         return tg::batch_norm(in[0], fill({3}, 7.0, false), tg::exp(fill({3}, 8.0, false)), in[1], in[2], false);
       }},
      {"layer_norm over (3, 4)", {{2, 3, 4}, {3, 4}, {3, 4}}, [](auto& in) { return tg::layer_norm(in[0], {3, 4}, in[1], in[2]); }},
      {"embedding padding_idx 1", {{5, 4}}, [](auto& in) { return tg::embedding(ids23(), in[0], 1); }},
      {"embedding repeated indices", {{6, 3}}, [](auto& in) { return tg::embedding(tg::flatten(ids23()), in[0]); }},
      {"group_norm 2 groups", {{2, 6, 3, 2}, {6}, {6}}, [](auto& in) { return tg::group_norm(in[0], 2, in[1], in[2]); }},
      {"group_norm 3 groups no affine", {{3, 6, 5}}, [](auto& in) { return tg::group_norm(in[0], 3); }},
      {"sdpa", {{2, 3, 5, 4}, {2, 3, 6, 4}, {2, 3, 6, 3}}, [](auto& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2]); }},
      {"sdpa causal L < S", {{2, 5, 4}, {2, 6, 4}, {2, 6, 3}},
       [](auto& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0, true); }},
      {"sdpa bool mask, broadcast key batch", {{2, 3, 5, 4}, {1, 3, 6, 4}, {1, 3, 6, 3}}, [](auto& in) {
         std::vector<int64_t> keep;   // every row keeps keys 0, 2, 3, 5, except row 2, which drops key 0
         for (int64_t i = 0; i < 5; ++i)
           for (int64_t j = 0; j < 6; ++j) keep.push_back(j != 1 && j != 4 && !(i == 2 && j == 0));
         return tg::scaled_dot_product_attention(in[0], in[1], in[2], tg::from_vector(keep, {5, 6}) > 0);
       }},
      {"sdpa float mask with gradient, scale 0.3", {{3, 5, 4}, {3, 6, 4}, {3, 6, 2}, {5, 6}},
       [](auto& in) { return tg::scaled_dot_product_attention(in[0], in[1], in[2], in[3], 0, false, 0.3); }},
      {"max_pool2d 3 stride 2 padding 1 dilation 2", {{2, 3, 9, 10}},
       [](auto& in) { return tg::max_pool2d(in[0], {3}, {2}, {1}, {2}); }},
      {"max_pool2d (3, 2) stride 2 padding 1 dilation (1, 2) ceil_mode", {{2, 3, 8, 10}},
       [](auto& in) { return tg::max_pool2d(in[0], {3, 2}, {2}, {1}, {1, 2}, true); }},
      {"max_pool2d 2 padding 1 ceil_mode, last window dropped", {{1, 2, 5, 7}},
       [](auto& in) { return tg::max_pool2d(in[0], {2}, {2}, {1}, {1}, true); }},
      {"avg_pool2d 3 stride 2 padding 1 ceil_mode", {{2, 3, 8, 10}},
       [](auto& in) { return tg::avg_pool2d(in[0], {3}, {2}, {1}, true, true); }},
      {"avg_pool2d (3, 2) stride (2, 3) padding (1, 0) ceil_mode count_include_pad false", {{2, 3, 8, 10}},
       [](auto& in) { return tg::avg_pool2d(in[0], {3, 2}, {2, 3}, {1, 0}, false, true); }},
      {"avg_pool2d 2 ceil_mode no padding", {{1, 2, 5, 5}}, [](auto& in) { return tg::avg_pool2d(in[0], {2}, {}, {0}, true, true); }},
      {"conv2d stride 1 groups 2 padding (2, 1) dilation (2, 1)", {{2, 4, 7, 6}, {6, 2, 3, 3}, {6}},
       [](auto& in) { return tg::conv2d(in[0], in[1], in[2], {1}, {2, 1}, {2, 1}, 2); }},
  };
}

void check_reference(const RefCase& c, const Reference& r) {
  CAPTURE(c.name);
  REQUIRE(c.name == r.name);
  std::vector<Tensor> in;
  for (std::size_t i = 0; i < c.shapes.size(); ++i) in.push_back(fill(c.shapes[i], 1.0 + static_cast<double>(i)));
  const Tensor out = c.fn(in);
  const Tensor loss = tg::sum(out * fill(out.shape(), 9.0, false));
  CHECK(loss.item() == doctest::Approx(r.loss).epsilon(1e-12));
  const std::vector<double> got = out.to_vector<double>();
  REQUIRE(got.size() >= r.first.size());
  for (std::size_t i = 0; i < r.first.size(); ++i) CHECK(got[i] == doctest::Approx(r.first[i]).epsilon(1e-12));
  loss.backward();
  REQUIRE(r.probes.size() == in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    CAPTURE(i);
    REQUIRE(in[i].grad().defined());
    const double probe = tg::sum(in[i].grad() * fill(in[i].shape(), 5.0, false)).item();
    CHECK(probe == doctest::Approx(r.probes[i]).epsilon(1e-11));
  }
}

}  // namespace

TEST_CASE("layers: conv, pooling, normalization, embedding and attention match PyTorch's values and gradients") {
  const std::vector<RefCase> cases = reference_cases();
  REQUIRE(cases.size() == kReferences.size());
  for (std::size_t i = 0; i < cases.size(); ++i) check_reference(cases[i], kReferences[i]);
}

TEST_CASE("layers: conv2d in float32 matches float64 and runs on several threads") {
  // (8, 16, 20, 20) is above the parallel threshold: images are spread over the pool.
  const Tensor x = fill({8, 16, 20, 20}, 0.3), w = fill({24, 16, 3, 3}, 0.5), b = fill({24}, 0.9);
  const Tensor y64 = tg::conv2d(x, w, b, {1}, {1});
  const Tensor x32(x.data().to(tg::kFloat32), true), w32(w.data().to(tg::kFloat32), true), b32(b.data().to(tg::kFloat32), true);
  const Tensor y32 = tg::conv2d(x32, w32, b32, {1}, {1});
  CHECK(y32.dtype() == tg::kFloat32);
  testing::check_close(y32.to(tg::kFloat64), y64, 1e-4, 1e-4);
  tg::sum(y64 * y64).backward();
  tg::sum(y32 * y32).backward();
  testing::check_close(w32.grad().to(tg::kFloat64), w.grad(), 1e-4, 1e-3);
  testing::check_close(x32.grad().to(tg::kFloat64), x.grad(), 1e-4, 1e-3);
  testing::check_close(b32.grad().to(tg::kFloat64), b.grad(), 1e-4, 1e-3);
}

TEST_CASE("layers: conv and pooling errors name the op and the shapes") {
  const Tensor x = tg::randn({2, 4, 5, 5});
  TG_CHECK_THROWS(tg::conv2d(tg::randn({4, 5}), tg::randn({3, 4, 3, 3})), tg::ShapeError,
                  "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 5]");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({3, 4, 3})), tg::ShapeError, "conv2d: expected weight of 4 dims");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({3, 2, 3, 3}), Tensor(), {1}, {0}, {1}, 2), tg::ShapeError,
                  "conv2d: Given groups=2, expected weight to be divisible by 2 at dimension 0, but got weight of size [3, 2, 3, 3]");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 3, 3, 3})), tg::ShapeError,
                  "conv2d: Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 4, 5, 5] to have 3 channels, but got 4 channels instead");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 8, 3}), Tensor(), {1}, {1}), tg::ShapeError,
                  "conv2d: Calculated padded input size per channel: (7 x 7). Kernel size: (8 x 3)");
  CHECK(tg::conv2d(x, tg::randn({4, 4, 7, 7}), Tensor(), {1}, {1}).shape() == tg::Shape{2, 4, 1, 1});   // exactly fits
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 7, 7})), tg::ShapeError, "Kernel size can't be greater than actual input size");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}), tg::randn({3})), tg::ShapeError,
                  "expected bias to be 1-dimensional with 4 elements, but got bias of size [3]");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}), Tensor(), {0}), tg::ShapeError, "non-positive stride");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}), Tensor(), {1, 1, 1}), tg::ShapeError,
                  "conv2d: stride must have 1 or 2 elements, got 3");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}), Tensor(), {1}, {-1}), tg::ShapeError, "negative padding");
  TG_CHECK_THROWS(tg::conv2d(x, tg::randn({4, 4, 3, 3}, tg::TensorOptions().dtype(tg::kFloat64))), tg::DTypeError, "conv2d");
  TG_CHECK_THROWS(tg::conv2d(tg::randint(0, 3, {1, 1, 4, 4}), tg::randint(0, 3, {1, 1, 2, 2})), tg::DTypeError, "conv2d");
  TG_CHECK_THROWS(tg::conv1d(tg::randn({2, 3, 4}), tg::randn({2, 3, 5})), tg::ShapeError,
                  "conv1d: Calculated padded input size per channel: (4). Kernel size: (5)");
  TG_CHECK_THROWS(tg::conv1d(tg::randn({2, 3, 4, 4}), tg::randn({2, 3, 1})), tg::ShapeError,
                  "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [2, 3, 4, 4]");
  TG_CHECK_THROWS(tg::max_pool2d(tg::randn({5, 5}), {2}), tg::ShapeError, "max_pool2d: Expected 3D or 4D");
  TG_CHECK_THROWS(tg::max_pool2d(x, {3}, {1}, {2}), tg::ShapeError,
                  "max_pool2d: pad should be at most half of effective kernel size, but got pad=(2 x 2), kernel_size=(3 x 3)");
  TG_CHECK_THROWS(tg::max_pool2d(x, {6}), tg::ShapeError,
                  "max_pool2d: Given input size: (4x5x5). Calculated output size: (4x0x0). Output size is too small");
  TG_CHECK_THROWS(tg::avg_pool2d(x, {0}), tg::ShapeError, "avg_pool2d: kernel_size must be greater than zero");
  TG_CHECK_THROWS(tg::max_pool2d(x, {2}, {}, {0}, {0, 1}), tg::ShapeError,
                  "max_pool2d: dilation must be greater than zero, but got (0 x 1)");
  TG_CHECK_THROWS(tg::max_pool2d(x, {3}, {1}, {0}, {3}), tg::ShapeError,
                  "max_pool2d: Given input size: (4x5x5). Calculated output size: (4x0x0). Output size is too small");
  TG_CHECK_THROWS(tg::adaptive_avg_pool2d(x, {0, 2}), tg::ShapeError, "adaptive_avg_pool2d: elements of output_size must be positive");
}

namespace {

/// The model of tests/data/small_cnn.py, with the same layers and names.
struct SmallCnn : tg::nn::Module {
  tg::nn::Conv2d conv1{2, 4, 3, tg::nn::Conv2dOptions().padding(1)};
  tg::nn::BatchNorm2d bn1{4};
  tg::nn::MaxPool2d pool{2};
  tg::nn::Conv2d conv2{4, 6, 3, tg::nn::Conv2dOptions().padding({1, 2}).dilation({1, 2}).groups(2)};
  tg::nn::AvgPool2d avg{2};
  tg::nn::AdaptiveAvgPool2d gap{1};
  tg::nn::Conv1d conv3{6, 3, 2, tg::nn::Conv1dOptions().bias(false)};
  tg::nn::LayerNorm ln{{15}};
  tg::nn::Linear fc{15, 5};
  tg::nn::BatchNorm1d bn3{5};
  SmallCnn() {
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("pool", pool);
    register_module("conv2", conv2);
    register_module("avg", avg);
    register_module("gap", gap);
    register_module("conv3", conv3);
    register_module("ln", ln);
    register_module("fc", fc);
    register_module("bn3", bn3);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = pool(tg::relu(bn1(conv1(x))));                 // (N, 4, 4, 4)
    h = avg(tg::relu(conv2(h)));                                 // (N, 6, 2, 2)
    const Tensor s = conv3(tg::flatten(h, 2));                 // (N, 3, 3)
    const Tensor z = tg::cat({tg::flatten(s, 1), tg::flatten(gap(h), 1)}, 1);   // (N, 15)
    return bn3(fc(ln(z)));
  }
};

}  // namespace

TEST_CASE("layers: a PyTorch checkpoint of a small CNN loads and gives PyTorch's output") {
  SmallCnn model;
  // PyTorch's parameter and buffer names, in its state_dict order.
  std::vector<std::string> names;
  for (const auto& p : model.named_parameters()) names.push_back(p.first);
  CHECK(names == std::vector<std::string>{"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight",
                                          "conv2.bias", "conv3.weight", "ln.weight", "ln.bias", "fc.weight", "fc.bias",
                                          "bn3.weight", "bn3.bias"});
  names.clear();
  for (const auto& b : model.named_buffers()) names.push_back(b.first);
  CHECK(names == std::vector<std::string>{"bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked",
                                          "bn3.running_mean", "bn3.running_var", "bn3.num_batches_tracked"});
  CHECK(model.bn1.num_batches_tracked.dtype() == tg::kInt64);
  CHECK(model.conv2.weight.shape() == tg::Shape{6, 2, 3, 3});
  CHECK(model.conv3.weight.shape() == tg::Shape{3, 6, 2});
  CHECK_FALSE(model.conv3.bias.defined());
  // Written by `/usr/bin/python3 tests/data/small_cnn.py` (PyTorch 1.13): three training steps, then eval.
  tg::load(model, TG_SOURCE_DIR "/tests/data/small_cnn.safetensors");
  CHECK(model.bn1.num_batches_tracked.item() == 3);
  model.eval();
  const Tensor x(fill({2, 2, 8, 8}, 0.5, false).data().to(tg::kFloat32));
  const std::vector<float> got = model(x).to_vector<float>();
  // The output that script printed for the same input.
  const std::vector<double> want = {-0.0273345225, -1.28765082, -0.517788529, 1.24481857,  -0.341008753,
                                    -0.0858731195, -1.27098513, -0.393312484, 0.638541698, -0.192865744};
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("layers: modules have PyTorch's init, options, train/eval behaviour and printing") {
  tg::manual_seed(3);
  tg::nn::Conv2d conv(3, 8, 3, tg::nn::Conv2dOptions().stride(2).padding(1).bias(true));
  // kaiming_uniform_(a = sqrt(5)): U(+-1/sqrt(fan_in)), fan_in = 3 * 3 * 3
  const double bound = 1.0 / std::sqrt(27.0);
  CHECK(tg::max(tg::abs(conv.weight)).item() <= bound);
  CHECK(tg::max(tg::abs(conv.weight)).item() > 0.8 * bound);
  CHECK(tg::max(tg::abs(conv.bias)).item() <= bound);
  CHECK(conv.name() == "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1))");
  CHECK(conv(tg::randn({2, 3, 9, 9})).shape() == tg::Shape{2, 8, 5, 5});
  CHECK(tg::nn::MaxPool2d(2).name() == "MaxPool2d(kernel_size=2, stride=2, padding=0)");
  {
    // The libtorch-style options reach the op: output sizes by PyTorch's ceil_mode rule, values equal to
    // the functional form's.
    const Tensor px = tg::randn({2, 3, 8, 10});
    tg::nn::MaxPool2d mp(tg::nn::MaxPool2dOptions({3, 2}).stride({2}).padding({1}).dilation({1, 2}).ceil_mode(true));
    CHECK(mp.name() == "MaxPool2d(kernel_size=(3, 2), stride=2, padding=1, dilation=(1, 2), ceil_mode=True)");
    CHECK(mp(px).shape() == tg::Shape{2, 3, 5, 6});   // floor mode would give (4, 5)
    CHECK(mp(px).to_vector<float>() == tg::max_pool2d(px, {3, 2}, {2}, {1}, {1, 2}, true).to_vector<float>());
    CHECK(mp.clone()->name() == mp.name());
    tg::nn::AvgPool2d ap(tg::nn::AvgPool2dOptions(2).stride({2}).padding({1}).ceil_mode(true).count_include_pad(false));
    CHECK(ap.name() == "AvgPool2d(kernel_size=2, stride=2, padding=1, ceil_mode=True, count_include_pad=False)");
    CHECK(ap(tg::randn({1, 2, 5, 7})).shape() == tg::Shape{1, 2, 3, 4});   // the last row's window would start in the padding only
    CHECK(ap(px).to_vector<float>() == tg::avg_pool2d(px, {2}, {2}, {1}, false, true).to_vector<float>());
  }
  TG_CHECK_THROWS(tg::nn::Conv2d(3, 8, 3, tg::nn::Conv2dOptions().groups(2)), tg::ShapeError,
                  "Conv2d: in_channels must be divisible by groups (3 and 2)");

  tg::nn::BatchNorm2d bn(3);
  CHECK(bn.name() == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  const Tensor x = tg::randn({4, 3, 5, 5}) * 2.0 + 1.0;
  const Tensor y = bn(x);   // training: batch statistics, running ones move by momentum 0.1
  CHECK(bn.num_batches_tracked.item() == 1);
  const std::vector<float> rm = bn.running_mean.to_vector<float>();
  const std::vector<float> batch_mean = tg::mean(tg::mean(tg::mean(x, 3), 2), 0).to_vector<float>();
  for (int c = 0; c < 3; ++c) CHECK(rm[c] == doctest::Approx(0.1 * batch_mean[c]).epsilon(1e-5));
  CHECK(std::abs(tg::mean(y).item()) < 1e-5);
  bn.eval();   // eval: running statistics, nothing updated
  const Tensor z = bn(x);
  CHECK(bn.num_batches_tracked.item() == 1);
  CHECK(bn.running_mean.to_vector<float>() == rm);
  CHECK(std::abs(tg::mean(z).item()) > 0.1);   // normalized with the running (not the batch) statistics
  TG_CHECK_THROWS(bn(tg::randn({4, 3, 5})), tg::ShapeError, "BatchNorm2d: expected 4D input (got 3D input");
  bn.train();
  TG_CHECK_THROWS(tg::nn::BatchNorm1d(3)(tg::randn({1, 3})), tg::ShapeError,
                  "Expected more than 1 value per channel when training");

  tg::nn::LayerNorm ln({4});
  CHECK(ln.name() == "LayerNorm((4,), eps=1e-05, elementwise_affine=True)");
  const Tensor l = ln(tg::randn({3, 4}) * 5.0);
  CHECK(std::abs(tg::mean(l).item()) < 1e-5);
  TG_CHECK_THROWS(ln(tg::randn({3, 5})), tg::ShapeError, "layer_norm: Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[3, 5]");

  // clone() keeps the configuration and copies parameters and buffers
  std::unique_ptr<tg::nn::Module> copy = bn.clone();
  CHECK(copy->name() == bn.name());
  CHECK(copy->named_buffers().size() == 3);
}

TEST_CASE("layers: embedding, group_norm and attention errors name the op and the shapes") {
  const Tensor w = tg::randn({5, 3});
  const Tensor ids = tg::from_vector(std::vector<int64_t>{0, 4, 2}, {3});
  TG_CHECK_THROWS(tg::embedding(tg::from_vector(std::vector<int64_t>{0, 5}, {2}), w), tg::IndexError,
                  "embedding: index out of range in self");
  TG_CHECK_THROWS(tg::embedding(tg::from_vector(std::vector<int64_t>{-1}, {1}), w), tg::IndexError, "index out of range");
  TG_CHECK_THROWS(tg::embedding(tg::randn({3}), w), tg::DTypeError,
                  "embedding: Expected tensor for argument #1 'indices' to have scalar type Long, but got float32");
  TG_CHECK_THROWS(tg::embedding(ids, tg::randn({5})), tg::ShapeError, "embedding: 'weight' must be 2-D, got weight of size [5]");
  TG_CHECK_THROWS(tg::embedding(ids, w, 5), tg::IndexError, "embedding: Padding_idx must be within num_embeddings");
  TG_CHECK_THROWS(tg::embedding(ids, w, -6), tg::IndexError, "Padding_idx must be within num_embeddings");
  CHECK(tg::embedding(ids, w, -5).shape() == tg::Shape{3, 3});

  const Tensor x = tg::randn({2, 6, 4});
  TG_CHECK_THROWS(tg::group_norm(x, 4), tg::ShapeError,
                  "group_norm: Expected number of channels in input to be divisible by num_groups, but got input of "
                  "shape [2, 6, 4] and num_groups=4");
  TG_CHECK_THROWS(tg::group_norm(x, 0), tg::ShapeError, "num_groups=0");
  TG_CHECK_THROWS(tg::group_norm(tg::randn({6}), 2), tg::ShapeError,
                  "group_norm: Expected at least 2 dimensions for input tensor but received 1");
  TG_CHECK_THROWS(tg::group_norm(x, 3, tg::randn({4})), tg::ShapeError,
                  "group_norm: Expected weight to be a vector of size equal to the number of channels in input, but "
                  "got weight of shape [4] and input of shape [2, 6, 4]");
  TG_CHECK_THROWS(tg::group_norm(x, 3, Tensor(), tg::randn({5})), tg::ShapeError, "got bias of shape [5]");
  TG_CHECK_THROWS(tg::group_norm(tg::randint(0, 3, {2, 6}), 3), tg::DTypeError, "group_norm");
  TG_CHECK_THROWS(tg::nn::GroupNorm(4, 6), tg::ShapeError, "GroupNorm: num_channels must be divisible by num_groups (6 and 4)");

  const Tensor q = tg::randn({2, 3, 4}), k = tg::randn({2, 5, 4}), v = tg::randn({2, 5, 6});
  CHECK(tg::scaled_dot_product_attention(q, k, v).shape() == tg::Shape{2, 3, 6});
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, tg::randn({2, 5, 3}), v), tg::ShapeError,
                  "scaled_dot_product_attention: expected key (..., S, E) and value (..., S, Ev) for query (..., L, E), "
                  "got query [2, 3, 4], key [2, 5, 3] and value [2, 5, 6]");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, k, tg::randn({2, 4, 6})), tg::ShapeError, "value [2, 4, 6]");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, tg::randn({3, 5, 4}), v), tg::ShapeError,
                  "the size of tensor a (2) must match the size of tensor b (3)");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(tg::randn({4}), k, v), tg::ShapeError, "at least 2 dims");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, k.to(tg::kFloat64), v), tg::DTypeError,
                  "Expected query, key, and value to have the same dtype, but got query.dtype: float32 key.dtype: "
                  "float64 and value.dtype: float32 instead.");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, k, v, tg::ones({3, 5}) > 0.0, 0, true), tg::Error,
                  "Explicit attn_mask should not be set when is_causal=True");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, k, v, tg::zeros({3, 5}, tg::kInt64)), tg::DTypeError,
                  "Expected attn_mask dtype to be bool or float or to match query dtype");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, k, v, tg::randn({3, 4})), tg::ShapeError,
                  "attn_mask of shape [3, 4] does not broadcast to the attention scores' shape [2, 3, 5]");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, k, v, tg::randn({4, 2, 3, 5})), tg::ShapeError,
                  "does not broadcast to the attention scores' shape [2, 3, 5]");
  TG_CHECK_THROWS(tg::scaled_dot_product_attention(q, k, v, {}, 1.5), tg::Error, "dropout probability has to be between 0 and 1");
}

TEST_CASE("layers: embedding gradients skip padding_idx, Embedding has PyTorch's init and from_pretrained") {
  tg::manual_seed(5);
  tg::nn::Embedding emb(1000, 16, 3);
  CHECK(emb.name() == "Embedding(1000, 16, padding_idx=3)");
  CHECK(emb.weight.shape() == tg::Shape{1000, 16});
  // N(0, 1): 16000 draws, mean within 5 standard errors (5 / sqrt(16000) = 0.04), std within 5%
  const double m = tg::mean(emb.weight).item(), sd = std::sqrt(tg::mean(emb.weight * emb.weight).item() - m * m);
  CHECK(std::abs(m) < 0.04);
  CHECK(sd == doctest::Approx(1.0).epsilon(0.05));
  CHECK(tg::sum(tg::abs(emb.weight.select(0, 3))).item() == 0.0);   // the padding row is zero
  const Tensor ids = tg::from_vector(std::vector<int64_t>{3, 7, 3, 7, 7, 0}, {2, 3});
  const Tensor y = emb(ids);
  CHECK(y.shape() == tg::Shape{2, 3, 16});
  tg::sum(y * y + y).backward();
  const Tensor g = emb.weight.grad();
  CHECK(tg::sum(tg::abs(g.select(0, 3))).item() == 0.0);   // padding_idx: no gradient
  // row 7 is read three times: its gradient is 3 (2 w + 1)
  testing::check_close(g.select(0, 7), (emb.weight.select(0, 7) * 2.0 + 1.0) * 3.0, 1e-6, 1e-6);
  CHECK(tg::sum(tg::abs(g.select(0, 1))).item() == 0.0);   // rows never read get none
  TG_CHECK_THROWS(tg::nn::Embedding(4, 2, 4), tg::IndexError, "Embedding: Padding_idx must be within num_embeddings");
  CHECK(tg::nn::Embedding(4, 2, -1).padding_idx() == 3);

  const Tensor table = tg::from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2});
  std::unique_ptr<tg::nn::Embedding> pre = tg::nn::Embedding::from_pretrained(table);
  CHECK_FALSE(pre->weight.requires_grad());
  CHECK(pre->weight.dtype() == tg::kFloat64);
  CHECK((*pre)(tg::from_vector(std::vector<int64_t>{2, 0}, {2})).to_vector<double>() == std::vector<double>{5, 6, 1, 2});
  CHECK(pre->weight.data().storage() != table.data().storage());   // a copy
  std::unique_ptr<tg::nn::Embedding> trainable = tg::nn::Embedding::from_pretrained(table, false, 1);
  CHECK(trainable->weight.requires_grad());
  CHECK(trainable->weight.select(0, 1).to_vector<double>() == std::vector<double>{3, 4});   // kept, as PyTorch
  std::unique_ptr<tg::nn::Module> copy = emb.clone();
  CHECK(copy->name() == emb.name());

  tg::nn::GroupNorm gn(2, 6);
  CHECK(gn.name() == "GroupNorm(2, 6, eps=1e-05, affine=True)");
  CHECK(gn.weight.to_vector<float>() == std::vector<float>(6, 1.0f));
  CHECK(gn.bias.to_vector<float>() == std::vector<float>(6, 0.0f));
  const Tensor z = gn(tg::randn({3, 6, 4}) * 3.0 + 2.0);
  // each (sample, group) of 3 channels x 4 positions has mean 0 and biased variance 1 (up to eps)
  const Tensor groups = tg::reshape(z, {3, 2, 12});
  testing::check_close(tg::mean(groups, 2), tg::zeros({3, 2}), 1e-5, 1e-5);
  testing::check_close(tg::mean(groups * groups, 2), tg::ones({3, 2}), 1e-3, 1e-4);
  CHECK(tg::nn::GroupNorm(3, 6, 1e-3, false).named_parameters().empty());
}

TEST_CASE("layers: scaled_dot_product_attention is softmax(q k^T scale + mask) v and differentiates") {
  // float64 reference spelled out with matmul and softmax, for each mask kind
  const Tensor q = testing::randn64({2, 4, 3}, 300), k = testing::randn64({2, 5, 3}, 301), v = testing::randn64({2, 5, 2}, 302);
  auto reference = [&](const Tensor& add) {
    const Tensor s = tg::matmul(q, tg::transpose(k, 1, 2)) * (1.0 / std::sqrt(3.0)) + add;
    return tg::matmul(tg::softmax(s, -1), v);
  };
  testing::check_close(tg::scaled_dot_product_attention(q, k, v), reference(tg::zeros({4, 5}, tg::kFloat64)), 1e-12, 1e-12);
  // causal: key j for query i when j <= i; -inf elsewhere
  std::vector<double> causal(20);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 5; ++j) causal[i * 5 + j] = j <= i ? 0.0 : -INFINITY;
  const Tensor causal_add = tg::from_vector(causal, {4, 5});
  testing::check_close(tg::scaled_dot_product_attention(q, k, v, {}, 0, true), reference(causal_add), 1e-12, 1e-12);
  // a bool mask is the same causal pattern; true keeps
  testing::check_close(tg::scaled_dot_product_attention(q, k, v, causal_add == 0.0), reference(causal_add), 1e-12, 1e-12);
  // a row with every key masked is 0, as PyTorch 2.5 and later (tests/test_attention_masked.cpp)
  const Tensor none = tg::zeros({4, 5}, tg::kFloat64) > 1.0;
  CHECK(tg::scaled_dot_product_attention(q, k, v, none).to_vector<double>() == std::vector<double>(16, 0.0));
  // dropout only where asked, from the manual_seed stream: the same seed gives the same result
  tg::manual_seed(4);
  const Tensor d1 = tg::scaled_dot_product_attention(q, k, v, {}, 0.5);
  tg::manual_seed(4);
  const Tensor d2 = tg::scaled_dot_product_attention(q, k, v, {}, 0.5);
  CHECK(d1.to_vector<double>() == d2.to_vector<double>());
  CHECK(d1.to_vector<double>() != tg::scaled_dot_product_attention(q, k, v).to_vector<double>());
  // float32 on a transformer-like size above the parallel thresholds agrees with float64
  const Tensor q64 = testing::randn64({4, 8, 64, 32}, 303), k64 = testing::randn64({4, 8, 64, 32}, 304),
                 v64 = testing::randn64({4, 8, 64, 32}, 305);
  const Tensor y64 = tg::scaled_dot_product_attention(q64, k64, v64, {}, 0, true);
  const Tensor q32(q64.data().to(tg::kFloat32), true), k32(k64.data().to(tg::kFloat32), true), v32(v64.data().to(tg::kFloat32), true);
  const Tensor y32 = tg::scaled_dot_product_attention(q32, k32, v32, {}, 0, true);
  testing::check_close(y32.to(tg::kFloat64), y64, 1e-4, 1e-4);
  tg::sum(y64 * y64).backward();
  tg::sum(y32 * y32).backward();
  testing::check_close(q32.grad().to(tg::kFloat64), q64.grad(), 1e-3, 1e-3);
  testing::check_close(k32.grad().to(tg::kFloat64), k64.grad(), 1e-3, 1e-3);
  testing::check_close(v32.grad().to(tg::kFloat64), v64.grad(), 1e-3, 1e-3);
}

TEST_CASE("layers: the fused attention's host reference (prim::attention) matches the composed path") {
  // backend/cpu/attention.cpp is the arithmetic of the CUDA kernels (Note [Fused attention]): the
  // online-softmax forward with its saved log-sum-exp, and the backward that recomputes the
  // probabilities. Here it is checked against the composed op (matmul, softmax) on the CPU, values and
  // gradients, with the mask read through AttentionArgs' strides as ops/attention.cpp sets them.
  struct Sample {
    const char* what;
    int64_t N, H, L, S, E, Ev;
    bool causal;
    int mask;   // 0 none, 1 bool key padding (N, 1, 1, S), 2 float (L, S)
  };
  const Sample samples[] = {{"plain, head dim 8", 2, 3, 5, 7, 8, 8, false, 0},
                            {"causal L < S", 1, 2, 9, 33, 8, 5, true, 0},
                            {"causal L > S", 2, 1, 40, 17, 64, 64, true, 0},
                            {"key padding over (N, H)", 3, 2, 6, 11, 8, 8, false, 1},
                            {"float mask (L, S), head dim 64", 2, 2, 13, 37, 64, 16, false, 2}};
  for (tg::DType dt : {tg::kFloat64, tg::kFloat32, tg::kFloat16}) {
    for (const Sample& sm : samples) {
      const std::string what = std::string(sm.what) + " " + tg::dtype_name(dt);
      CAPTURE(what);
      const int64_t B = sm.N * sm.H;
      const tg::TensorOptions o = tg::TensorOptions().dtype(dt);
      tg::manual_seed(310);
      Tensor q(tg::randn({sm.N, sm.H, sm.L, sm.E}, o).data(), true), k(tg::randn({sm.N, sm.H, sm.S, sm.E}, o).data(), true),
          v(tg::randn({sm.N, sm.H, sm.S, sm.Ev}, o).data(), true);
      Tensor mask;
      tg::AttentionArgs a;
      a.B = B;
      a.L = sm.L;
      a.S = sm.S;
      a.E = sm.E;
      a.Ev = sm.Ev;
      a.scale = 1.0 / std::sqrt(static_cast<double>(sm.E));
      a.causal = sm.causal;
      if (sm.mask == 1) {   // key j of batch n kept when (j + n) % 3 != 2 (key 0 always kept)
        std::vector<double> keep(static_cast<std::size_t>(sm.N * sm.S));
        for (int64_t n = 0; n < sm.N; ++n)
          for (int64_t j = 0; j < sm.S; ++j) keep[n * sm.S + j] = j == 0 || (j + n) % 3 != 2 ? 1.0 : 0.0;
        mask = tg::from_vector(keep, {sm.N, 1, 1, sm.S}) > 0.5;
        a.mask = mask.data();
        a.mask_inner = sm.H;
        a.mask_stride_outer = sm.S;
        a.mask_stride_s = 1;
      } else if (sm.mask == 2) {
        mask = tg::randn({sm.L, sm.S}, o).detach();
        a.mask = mask.data();
        a.mask_inner = B;
        a.mask_stride_l = sm.S;
        a.mask_stride_s = 1;
      }
      // the composed reference computes in float32 for float16 inputs (the same values), as the
      // fused arithmetic does, so the two differ by the final roundings only
      const tg::DType ref_dt = dt == tg::kFloat16 ? tg::kFloat32 : dt;
      Tensor qr(q.data().to(ref_dt), true), kr(k.data().to(ref_dt), true), vr(v.data().to(ref_dt), true);
      const Tensor mr = mask.defined() && mask.dtype() != tg::kBool ? mask.to(ref_dt) : mask;
      const Tensor y = tg::scaled_dot_product_attention(qr, kr, vr, mr, 0, sm.causal);
      const Tensor w = tg::randn(y.shape(), o).detach();
      tg::sum(y * w.to(ref_dt)).backward();
      const tg::prim::Attention f = tg::prim::attention(q.data().reshape({B, sm.L, sm.E}), k.data().reshape({B, sm.S, sm.E}),
                                                        v.data().reshape({B, sm.S, sm.Ev}), a);
      CHECK(f.lse.dtype() == (dt == tg::kFloat64 ? tg::kFloat64 : tg::kFloat32));
      const tg::prim::AttentionGrads g =
          tg::prim::attention_backward(q.data().reshape({B, sm.L, sm.E}), k.data().reshape({B, sm.S, sm.E}),
                                       v.data().reshape({B, sm.S, sm.Ev}), f.out, f.lse, w.data().reshape({B, sm.L, sm.Ev}), a);
      // float64 and float32: sums in a different order (1e-12, 1e-5); float16: the reference rounded
      // once (u = 2^-11) against the fused result rounded once, plus its backward's D_i = dout . out from
      // the rounded out (a relative u on each probability's term): 4u of the largest gradient
      const double u = testing::unit_roundoff(dt);
      const double rtol = dt == tg::kFloat64 ? 1e-12 : dt == tg::kFloat32 ? 1e-5 : 4 * u;
      auto close = [&](const tg::RawTensor& got, const Tensor& want) {
        const Tensor ref = want.to(tg::kFloat64).reshape(got.shape());
        double biggest = 0;
        for (double x : ref.to_vector<double>()) biggest = std::max(biggest, std::fabs(x));
        testing::check_close(Tensor(got.to(tg::kFloat64)), ref, rtol, rtol * std::max(1.0, biggest));
      };
      close(f.out, y);
      close(g.dq, qr.grad());
      close(g.dk, kr.grad());
      close(g.dv, vr.grad());
    }
  }
}

TEST_CASE("layers: the fused attention reads strided heads in place, bit for bit as from contiguous copies") {
  // Note [Attention operands in place] (prim/attention.cpp): the heads of one packed projection, a
  // (B, L, 3, H, E) tensor permuted to (3, B, H, L, E), are read through their strides; a batch that does
  // not fold into two strides is copied first. Either way the arithmetic is that of contiguous operands,
  // so the results must be equal exactly. out has the heads innermost: out.transpose(1, 2) is
  // contiguous, and the gradient arriving in that layout is read in place too.
  const int64_t B = 2, L = 7, H = 3, E = 8;
  for (tg::DType dt : {tg::kFloat64, tg::kFloat32}) {
    CAPTURE(tg::dtype_name(dt));
    tg::manual_seed(41);
    const tg::RawTensor packed = tg::randn({B, L, 3, H, E}, tg::TensorOptions().dtype(dt)).data();
    const tg::RawTensor all = packed.permute({2, 0, 3, 1, 4});   // (3, B, H, L, E)
    const tg::RawTensor q = all.select(0, 0), k = all.select(0, 1), v = all.select(0, 2);
    CHECK_FALSE(q.is_contiguous());
    // a batch of three dims that do not fold into two strides: (2, 2, 2, L, E) cut from (4, 3, 5, L, E)
    const tg::RawTensor wide = tg::randn({4, 3, 5, L, E}, tg::TensorOptions().dtype(dt)).data();
    const tg::RawTensor unfoldable = wide.narrow(0, 0, 2).narrow(1, 0, 2).narrow(2, 0, 2);
    for (bool causal : {false, true}) {
      CAPTURE(causal);
      tg::AttentionArgs a;
      a.B = B * H;
      a.L = L;
      a.S = L;
      a.E = E;
      a.Ev = E;
      a.scale = 0.3;
      a.causal = causal;
      const tg::prim::Attention strided = tg::prim::attention(q, k, v, a);
      const tg::prim::Attention copied = tg::prim::attention(q.contiguous(), k.contiguous(), v.contiguous(), a);
      CHECK(strided.out.shape() == tg::Shape{B, H, L, E});
      CHECK(strided.out.transpose(1, 2).is_contiguous());
      CHECK(Tensor(strided.out).equal(Tensor(copied.out)));
      CHECK(Tensor(strided.lse).equal(Tensor(copied.lse)));
      // dout as the backward of y.transpose(1, 2).reshape(B, L, H E) delivers it: (B, L, H, E) memory
      const tg::RawTensor dout = tg::randn({B, L, H, E}, tg::TensorOptions().dtype(dt)).data().transpose(1, 2);
      const tg::prim::AttentionGrads gs = tg::prim::attention_backward(q, k, v, strided.out, strided.lse, dout, a);
      const tg::prim::AttentionGrads gc = tg::prim::attention_backward(
          q.contiguous(), k.contiguous(), v.contiguous(), copied.out, copied.lse, dout.contiguous(), a);
      CHECK(Tensor(gs.dq).equal(Tensor(gc.dq)));
      CHECK(Tensor(gs.dk).equal(Tensor(gc.dk)));
      CHECK(Tensor(gs.dv).equal(Tensor(gc.dv)));
      // three batch dims that do not fold: copied, with the same results as a contiguous input
      tg::AttentionArgs u = a;
      u.B = 2 * 2 * 2;
      const tg::prim::Attention from_view = tg::prim::attention(unfoldable, unfoldable, unfoldable, u);
      const tg::RawTensor c = unfoldable.contiguous();
      const tg::prim::Attention from_copy = tg::prim::attention(c, c, c, u);
      CHECK(Tensor(from_view.out).equal(Tensor(from_copy.out)));
    }
  }
}

TEST_CASE("layers: MultiheadAttention has PyTorch's names, init, layouts and masks") {
  tg::manual_seed(8);
  tg::nn::MultiheadAttention mha(16, 4);
  std::vector<std::string> names;
  for (const auto& p : mha.named_parameters()) names.push_back(p.first);
  CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
  CHECK(mha.in_proj_weight.shape() == tg::Shape{48, 16});
  // xavier_uniform_: U(+-sqrt(6 / (16 + 48)))
  const double bound = std::sqrt(6.0 / 64.0);
  CHECK(tg::max(tg::abs(mha.in_proj_weight)).item() <= bound);
  CHECK(tg::max(tg::abs(mha.in_proj_weight)).item() > 0.9 * bound);
  CHECK(tg::sum(tg::abs(mha.in_proj_bias)).item() == 0.0);
  CHECK(tg::sum(tg::abs(mha.out_proj.bias)).item() == 0.0);
  CHECK(tg::max(tg::abs(mha.out_proj.weight)).item() <= 0.25);   // Linear's U(+-1/sqrt(16))
  {
    tg::NoGradGuard g;   // non-zero biases, so that their use is checked below
    tg::nn::init::uniform_(mha.in_proj_bias, -0.5, 0.5);
    tg::nn::init::uniform_(mha.out_proj.bias, -0.5, 0.5);
  }
  const Tensor x = tg::randn({5, 3, 16});   // (L, N, E)
  auto [out, w] = mha(x, x, x);
  CHECK(out.shape() == tg::Shape{5, 3, 16});
  CHECK(w.shape() == tg::Shape{3, 5, 5});
  testing::check_close(tg::sum(w, -1), tg::ones({3, 5}), 1e-5, 1e-5);   // rows of softmax weights
  // need_weights = false goes through scaled_dot_product_attention: the same output
  auto [out2, none] = mha(x, x, x, Tensor(), false);
  CHECK_FALSE(none.defined());
  testing::check_close(out2, out, 1e-5, 1e-5);
  // batch_first: the same module on (N, L, E) gives the transposed output
  tg::nn::MultiheadAttention bf(16, 4, tg::nn::MultiheadAttentionOptions().batch_first(true));
  {
    const auto from = mha.named_parameters(), to = bf.named_parameters();
    REQUIRE(from.size() == to.size());
    for (std::size_t i = 0; i < from.size(); ++i) tg::prim::copy_(to[i].second.data(), from[i].second.data());
  }
  auto [out_bf, w_bf] = bf(tg::transpose(x, 0, 1), tg::transpose(x, 0, 1), tg::transpose(x, 0, 1));
  testing::check_close(out_bf, tg::transpose(out, 0, 1), 1e-5, 1e-5);
  testing::check_close(w_bf, w, 1e-6, 1e-6);
  // unbatched (L, E) is batch entry n of the batched call
  auto [out_u, w_u] = mha(tg::select(x, 1, 2), tg::select(x, 1, 2), tg::select(x, 1, 2), Tensor(), true, Tensor(), false);
  CHECK(w_u.shape() == tg::Shape{4, 5, 5});
  testing::check_close(out_u, tg::select(out, 1, 2), 1e-5, 1e-5);
  // a key masked by key_padding_mask gets zero weight; a bool attn_mask true forbids a position
  const Tensor kpm = tg::from_vector(std::vector<int64_t>{0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, {3, 5}) > 0;
  auto [o3, w3] = mha(x, x, x, kpm);
  CHECK(w3.select(0, 0).select(1, 4).to_vector<float>() == std::vector<float>(5, 0.0f));
  CHECK(w3.select(0, 1).select(1, 1).to_vector<float>() == std::vector<float>(5, 0.0f));
  CHECK(tg::sum(w3.select(0, 2).select(1, 1)).item() > 0.0);
  const Tensor am = tg::from_vector(std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {5, 5}) > 0;
  auto [o4, w4] = mha(x, x, x, Tensor(), true, am);
  CHECK(w4.select(1, 0).select(1, 1).to_vector<float>() == std::vector<float>(3, 0.0f));
  // float masks are added: -inf equals the bool mask
  auto [o5, w5] = mha(x, x, x, Tensor(), true, tg::masked_fill(tg::zeros({5, 5}), am, -INFINITY));
  testing::check_close(o5, o4, 1e-6, 1e-6);
  // gradients reach every parameter
  tg::sum(o4 * o4).backward();
  for (const auto& p : mha.named_parameters()) {
    CAPTURE(p.first);
    REQUIRE(p.second.grad().defined());
    CHECK(tg::sum(tg::abs(p.second.grad())).item() > 0.0);
  }
  // dropout acts in training only
  tg::nn::MultiheadAttention drop(16, 4, tg::nn::MultiheadAttentionOptions().dropout(0.5));
  drop.eval();
  auto [e1, ew1] = drop(x, x, x);
  auto [e2, ew2] = drop(x, x, x);
  CHECK(e1.to_vector<float>() == e2.to_vector<float>());
  drop.train();
  auto [t1, tw1] = drop(x, x, x);
  CHECK(t1.to_vector<float>() != e1.to_vector<float>());

  TG_CHECK_THROWS(tg::nn::MultiheadAttention(10, 3), tg::ShapeError, "MultiheadAttention: embed_dim must be divisible by num_heads (10 and 3)");
  TG_CHECK_THROWS(mha(tg::randn({5, 3, 8}), x, x), tg::ShapeError, "was expecting embedding dimension of 16, but got 8");
  TG_CHECK_THROWS(mha(x, x, tg::randn({4, 3, 16})), tg::ShapeError, "key shape [5, 3, 16] does not match value shape [4, 3, 16]");
  TG_CHECK_THROWS(mha(x, x, x, tg::zeros({3, 4}) > 0.0), tg::ShapeError, "expecting key_padding_mask shape of [3, 5], but got [3, 4]");
  TG_CHECK_THROWS(mha(x, x, x, Tensor(), true, tg::zeros({5, 4}) > 0.0), tg::ShapeError,
                  "The shape of the 2D attn_mask is [5, 4], but should be [5, 5].");
  TG_CHECK_THROWS(mha(x, x, x, Tensor(), true, tg::zeros({3, 5, 5}) > 0.0), tg::ShapeError,
                  "The shape of the 3D attn_mask is [3, 5, 5], but should be [12, 5, 5].");
  TG_CHECK_THROWS(mha(x, x, x, Tensor(), true, tg::zeros({5, 5}, tg::kInt64)), tg::DTypeError,
                  "only bool and floating types of attn_mask are supported");
  TG_CHECK_THROWS(mha(tg::randn({5, 3, 16}), tg::randn({5, 16}), tg::randn({5, 16})), tg::ShapeError,
                  "expected `key` and `value` to be 3-D but found 2-D and 2-D tensors respectively");
}

TEST_CASE("layers: a PyTorch MultiheadAttention state_dict loads and gives PyTorch's outputs and weights") {
  tg::nn::MultiheadAttention mha(8, 2);
  // Written by `python3 tests/data/mha.py` (PyTorch 2.15): in_proj_weight, in_proj_bias, out_proj.weight,
  // out_proj.bias, the biases drawn non-zero.
  tg::load(mha, TG_SOURCE_DIR "/tests/data/mha.safetensors");
  mha.eval();
  auto f32 = [](const tg::Shape& shape, double seed) { return Tensor(fill(shape, seed, false).data().to(tg::kFloat32)); };
  auto check = [](const Tensor& got, const tg::Shape& shape, const std::vector<double>& want) {
    REQUIRE(got.shape() == shape);
    const std::vector<float> g = got.to_vector<float>();
    REQUIRE(g.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(std::abs(g[i] - want[i]) <= 1e-5);
    }
  };
  // The outputs that script printed for the same inputs.
  // self-attention (L = S = 4, N = 2) with a bool key_padding_mask and a bool attn_mask, averaged weights
  const Tensor x = f32({4, 2, 8}, 0.5);
  const Tensor kpm = tg::from_vector(std::vector<int64_t>{0, 0, 0, 1, 0, 1, 0, 0}, {2, 4}) > 0;
  const Tensor am = tg::from_vector(std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0}, {4, 4}) > 0;
  auto [out1, w1] = mha(x, x, x, kpm, true, am);
  check(out1, {4, 2, 8}, {-0.192434251, -0.165267676, -0.272979438, -0.0617192984, 0.279672712, -0.179264978, -0.00182078779, -0.132370755, -0.046142906, -0.150039807, -0.104959771, -0.0857114196, 0.355913848, -0.219515994, -0.139388725, 0.00108832121, -0.189390615, -0.169555679, -0.338632762, -0.0872410834, 0.439048797, -0.135771573, 0.0395410061, -0.133176401, -0.211677954, -0.246259853, -0.139428914, -0.345091701, 0.105195805, -0.393535554, 0.0159341842, -0.0984743387, -0.31191355, -0.0646532178, -0.537347794, 0.156854853, 0.254347354, 0.0388319865, 0.100202441, -0.347725928, -0.000472538173, -0.0352753326, 0.0264315009, 0.0292150676, -0.0153749436, -0.224664941, -0.28887701, -0.0607790947, -0.116008207, -0.22245425, -0.262802839, -0.274764836, 0.62297982, -0.215508997, 0.0312447548, -0.0269186795, -0.0676718056, -0.273548365, -0.000753432512, -0.399852335, 0.323909402, -0.43449977, -0.0836201012, 0.0758517087});
  check(w1, {2, 4, 4}, {0.458831817, 0, 0.541168153, 0, 0.338966012, 0.379702866, 0.281331092, 0, 0, 0.500565112, 0.499434888, 0, 0.462185502, 0.537814498, 0, 0, 0.452533156, 0, 0.285861135, 0.26160571, 0.413242906, 0, 0.284966767, 0.301790357, 0, 0, 0.52444011, 0.475559831, 0.479504466, 0, 0, 0.520495534});
  // cross-attention (L = 3, S = 5) with a float attn_mask, weights per head
  const Tensor kv = f32({5, 2, 8}, 2.5);
  auto [out2, w2] = mha(f32({3, 2, 8}, 1.5), kv, kv, Tensor(), true, f32({3, 5}, 3.5), false);
  check(out2, {3, 2, 8}, {-0.107752487, -0.0673856065, -0.180965051, 0.117969751, 0.149047971, -0.118820421, -0.148507208, -0.126000956, -0.0875745267, -0.141702682, -0.117037982, 0.0305970907, 0.229739487, -0.201794386, -0.145740613, -0.0293269157, -0.105188102, -0.21845454, -0.149986759, -0.132236421, 0.404241741, -0.255164623, -0.0628756136, 0.0125888288, -0.137917012, -0.218005732, -0.19907704, -0.184620887, 0.405562103, -0.251666993, -0.0159274489, -0.0332478881, -0.179635912, -0.0727910027, -0.272866815, 0.033641398, 0.130031124, -0.117007256, -0.0577729791, -0.212365091, -0.139960498, -0.0951968431, -0.141529202, -0.131219894, 0.0256682634, -0.2436966, -0.101294145, -0.168163091});
  check(w2, {2, 2, 3, 5}, {0.168519974, 0.0795698762, 0.121192873, 0.268819511, 0.361897767, 0.103051782, 0.185437933, 0.39712888, 0.258753747, 0.0556275956, 0.103010751, 0.0887880921, 0.115695275, 0.224237666, 0.468268186, 0.251863062, 0.124467775, 0.0984578431, 0.159924448, 0.365286887, 0.219202861, 0.321787268, 0.252448916, 0.134114802, 0.0724461302, 0.0602643378, 0.0905771255, 0.220625639, 0.31613043, 0.312402457, 0.121365108, 0.136794269, 0.263388634, 0.269175768, 0.209276259, 0.136378169, 0.299201369, 0.361977696, 0.153413951, 0.0490288883, 0.115557954, 0.0542665757, 0.0563963801, 0.183019176, 0.590759933, 0.252337068, 0.118006118, 0.0936651751, 0.160995111, 0.374996543, 0.180206448, 0.345346421, 0.294450909, 0.123946093, 0.0560501926, 0.0654979423, 0.139194101, 0.275904268, 0.257155538, 0.262248069});
  // unbatched, without weights (PyTorch's scaled_dot_product_attention path)
  auto [out3, w3] = mha(f32({3, 8}, 4.5), f32({5, 8}, 5.5), f32({5, 8}, 6.5), Tensor(), false);
  CHECK_FALSE(w3.defined());
  check(out3, {3, 8}, {-0.370621741, -0.246296242, -0.456490159, -0.110824972, 0.270474434, -0.186866507, 0.192028463, -0.233490169, -0.418360204, -0.261841655, -0.48094061, -0.113696128, 0.202421486, -0.202968523, 0.226268798, -0.264440238, -0.384373218, -0.221296698, -0.480917186, -0.0591650605, 0.226794466, -0.155012101, 0.190488994, -0.269008279});
}

TEST_CASE("layers: MultiheadAttention's kdim/vdim, add_bias_kv and add_zero_attn have PyTorch's names and init") {
  tg::manual_seed(9);
  const auto opts = tg::nn::MultiheadAttentionOptions().kdim(5).vdim(3).add_bias_kv(true).add_zero_attn(true);
  tg::nn::MultiheadAttention mha(16, 4, opts);
  std::vector<std::string> names;
  for (const auto& p : mha.named_parameters()) names.push_back(p.first);
  CHECK(names == std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                                          "bias_v", "out_proj.weight", "out_proj.bias"});
  CHECK_FALSE(mha.in_proj_weight.defined());
  CHECK(mha.q_proj_weight.shape() == tg::Shape{16, 16});
  CHECK(mha.k_proj_weight.shape() == tg::Shape{16, 5});
  CHECK(mha.v_proj_weight.shape() == tg::Shape{16, 3});
  CHECK(mha.bias_k.shape() == tg::Shape{1, 1, 16});
  CHECK(mha.bias_v.shape() == tg::Shape{1, 1, 16});
  // xavier_uniform_ per weight: U(+-sqrt(6 / (fan_in + fan_out)))
  for (const auto& [w, fan_in] : {std::pair<Tensor, double>{mha.q_proj_weight, 16}, {mha.k_proj_weight, 5}, {mha.v_proj_weight, 3}}) {
    const double bound = std::sqrt(6.0 / (16 + fan_in));
    CHECK(tg::max(tg::abs(w)).item() <= bound);
    CHECK(tg::max(tg::abs(w)).item() > 0.8 * bound);
  }
  // xavier_normal_ on (1, 1, 16): std sqrt(2 / (16 + 16)) = 0.25; 16 draws each, so only a loose check
  for (const Tensor& b : {mha.bias_k, mha.bias_v}) {
    const double rms = std::sqrt(tg::mean(b * b).item());
    CHECK(rms > 0.1);
    CHECK(rms < 0.5);
  }
  CHECK(tg::sum(tg::abs(mha.in_proj_bias)).item() == 0.0);
  // kdim == vdim == embed_dim keeps the stacked in_proj_weight, with bias_k/bias_v beside it
  tg::nn::MultiheadAttention packed(16, 4, tg::nn::MultiheadAttentionOptions().add_bias_kv(true).kdim(16));
  names.clear();
  for (const auto& p : packed.named_parameters()) names.push_back(p.first);
  CHECK(names == std::vector<std::string>{"in_proj_weight", "in_proj_bias", "bias_k", "bias_v", "out_proj.weight", "out_proj.bias"});
  CHECK_FALSE(packed.q_proj_weight.defined());
  // the shapes the options give: key (S, N, kdim), value (S, N, vdim), weights over S + 2 keys
  const Tensor q = tg::randn({3, 2, 16}), k = tg::randn({4, 2, 5}), v = tg::randn({4, 2, 3});
  auto [out, w] = mha(q, k, v);
  CHECK(out.shape() == tg::Shape{3, 2, 16});
  CHECK(w.shape() == tg::Shape{2, 3, 6});
  testing::check_close(tg::sum(w, -1), tg::ones({2, 3}), 1e-5, 1e-5);
  // a clone keeps the options
  std::unique_ptr<tg::nn::Module> cloned = mha.clone();
  auto* copy = dynamic_cast<tg::nn::MultiheadAttention*>(cloned.get());
  REQUIRE(copy != nullptr);
  testing::check_close(std::get<0>((*copy)(q, k, v)), out, 1e-6, 1e-6);
  TG_CHECK_THROWS(mha(q, tg::randn({4, 2, 16}), v), tg::ShapeError, "kdim 5 and vdim 3");
  TG_CHECK_THROWS(mha(q, k, tg::randn({5, 2, 3})), tg::ShapeError, "key's sequence and batch dims [4, 2] do not match value's [5, 2]");
  TG_CHECK_THROWS(mha(q, k, v, Tensor(), false, Tensor(), true, true), tg::Error, "Need attn_mask if specifying the is_causal hint");
  TG_CHECK_THROWS(tg::nn::MultiheadAttention(16, 4, tg::nn::MultiheadAttentionOptions().kdim(-1)), tg::ShapeError,
                  "kdim and vdim must be positive");
}

TEST_CASE("layers: a PyTorch MultiheadAttention with kdim/vdim, add_bias_kv, add_zero_attn and is_causal gives PyTorch's values") {
  // Written by `python3 tests/data/mha_options.py` (PyTorch 2.15): MultiheadAttention(8, 2, kdim=5,
  // vdim=3, add_bias_kv=True, add_zero_attn=True) with its biases drawn non-zero, and the outputs,
  // weights and gradient probes below, printed by that script for the same inputs.
  tg::nn::MultiheadAttention mha(8, 2, tg::nn::MultiheadAttentionOptions().kdim(5).vdim(3).add_bias_kv(true).add_zero_attn(true));
  tg::load(mha, TG_SOURCE_DIR "/tests/data/mha_options.safetensors");
  mha.eval();
  auto f32 = [](const tg::Shape& shape, double seed) { return Tensor(fill(shape, seed, false).data().to(tg::kFloat32)); };
  auto check = [](const Tensor& got, const tg::Shape& shape, const std::vector<double>& want) {
    REQUIRE(got.shape() == shape);
    const std::vector<float> g = got.to_vector<float>();
    REQUIRE(g.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      CAPTURE(i);
      CHECK(std::abs(g[i] - want[i]) <= 1e-5);
    }
  };
  // 1. cross-attention L = 3, S = 4, N = 2, bool key_padding_mask and attn_mask; weights over S + 2
  //    keys (bias_k, then the zero key), averaged over the heads; gradient probes
  //    sum(grad * fill(param, 5)) of sum(out * fill(out, 9)) for every parameter
  const Tensor q = f32({3, 2, 8}, 0.5), k = f32({4, 2, 5}, 1.5), v = f32({4, 2, 3}, 2.5);
  const Tensor kpm = tg::from_vector(std::vector<int64_t>{0, 0, 1, 0, 0, 0, 0, 0}, {2, 4}) > 0;
  const Tensor am = tg::from_vector(std::vector<int64_t>{0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0}, {3, 4}) > 0;
  auto [out1, w1] = mha(q, k, v, kpm, true, am);
  check(out1, {3, 2, 8}, {-0.476234198, 0.306609631, -0.291741133, -0.331728041, -0.147158861, 0.316718102, 0.21595715, 0.465174049, -0.465482771, 0.177871794, -0.130355418, -0.53495121, -0.392781943, 0.173994392, 0.174677432, 0.533989012, -0.63308537, 0.229406804, -0.349259734, -0.301974118, -0.364041328, 0.234809816, 0.243486851, 0.505034626, -0.573123157, 0.216379851, -0.242200419, -0.380557328, -0.431021571, 0.157140493, 0.180394769, 0.548803568, -0.692190886, 0.183580667, -0.332919955, -0.348102421, -0.51104641, 0.122478768, 0.237891749, 0.559819937, -0.543412626, 0.17620571, -0.228796095, -0.475519478, -0.381512463, 0.188257664, 0.252189189, 0.492389917});
  check(w1, {2, 3, 6}, {0.297623634, 0, 0, 0.208852097, 0.309464097, 0.184060186, 0.336281121, 0.311910778, 0, 0, 0.206996486, 0.144811615, 0, 0.400594354, 0, 0.172519356, 0.188843355, 0.238042921, 0.115597993, 0, 0.195316747, 0.277618051, 0.265651584, 0.145815551, 0.0929255635, 0.134345114, 0.251051277, 0, 0.261043847, 0.260634124, 0, 0.155104935, 0.195951596, 0.263032317, 0.15321967, 0.232691407});
  tg::sum(out1 * f32(out1.shape(), 9)).backward();
  const std::vector<std::pair<std::string, double>> probes = {{"q_proj_weight", -0.93489933}, {"k_proj_weight", -0.11716608}, {"v_proj_weight", 1.63550711}, {"in_proj_bias", -1.84713948}, {"bias_k", 0.365784258}, {"bias_v", -0.617040515}, {"out_proj.weight", -5.02748108}, {"out_proj.bias", -7.11059952}};
  const auto params = mha.named_parameters();
  REQUIRE(params.size() == probes.size());
  for (std::size_t i = 0; i < probes.size(); ++i) {
    CAPTURE(probes[i].first);
    CHECK(params[i].first == probes[i].first);
    const double got = tg::sum(params[i].second.grad().to(tg::kFloat64) * fill(params[i].second.shape(), 5, false)).item();
    CHECK(std::abs(got - probes[i].second) <= 1e-4 * std::max(1.0, std::abs(probes[i].second)));
  }
  // 2. without weights (scaled_dot_product_attention), a float attn_mask padded for the extra keys
  auto [out2, none] = mha(q, k, v, Tensor(), false, f32({3, 4}, 3.5));
  CHECK_FALSE(none.defined());
  check(out2, {3, 2, 8}, {-0.503480613, 0.259021044, -0.266398221, -0.356812447, -0.243168563, 0.288677275, 0.207026541, 0.48470962, -0.428681165, 0.222287804, -0.153208822, -0.452467382, -0.283937544, 0.269958198, 0.16303286, 0.497548699, -0.52865535, 0.225223273, -0.222747415, -0.451422393, -0.368035555, 0.168372154, 0.207420439, 0.519189596, -0.487595677, 0.174206257, -0.128792733, -0.582719505, -0.439824224, 0.095546186, 0.194640219, 0.544788122, -0.539104581, 0.266592532, -0.276237488, -0.37476328, -0.300842702, 0.200871974, 0.218858674, 0.50133425, -0.428800195, 0.21978128, -0.150125831, -0.519196808, -0.297174126, 0.214920253, 0.208394557, 0.471121579});
  // 3. is_causal with a causal attn_mask and no weights: the hint's causal triangle over (L, S + 2)
  //    replaces the mask, so the two extra keys are hidden from these 4 rows, as in PyTorch
  std::vector<int64_t> tri(16);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) tri[i * 4 + j] = j > i ? 1 : 0;
  const Tensor causal = tg::from_vector(tri, {4, 4}) > 0;
  const Tensor q4 = f32({4, 2, 8}, 4.5), k4 = f32({4, 2, 5}, 5.5), v4 = f32({4, 2, 3}, 6.5);
  auto [out3, none3] = mha(q4, k4, v4, Tensor(), false, causal, true, true);
  check(out3, {4, 2, 8}, {-0.948188722, 0.0200549364, -0.339185357, -0.406203687, -0.984415948, -0.160583794, 0.215515181, 0.750290751, -0.601129353, 0.321640104, -0.401618481, -0.335731, -0.197941184, 0.180683494, 0.294776887, 0.496823907, -0.545150042, 0.0948203206, -0.141797796, -0.627812505, -0.51485455, 0.0944180787, 0.248734087, 0.534941733, -0.770157754, 0.174945623, -0.368599951, -0.354512721, -0.585757673, 0.0239904225, 0.247066736, 0.620291889, -0.590323567, 0.162962437, -0.215165347, -0.563792408, -0.487931967, 0.0380817652, 0.245966703, 0.570361257, -0.626119435, 0.130861625, -0.272479147, -0.549525142, -0.451722234, 0.100965127, 0.31522432, 0.524816632, -0.721920133, 0.106529668, -0.305292547, -0.474478155, -0.58790195, 0.0523573458, 0.28524965, 0.580421925, -0.642868221, 0.197455764, -0.347354829, -0.433032632, -0.361817092, 0.149704754, 0.315751612, 0.509800792});
  // 4. is_causal with weights: the mask as given, padded (the extra keys attended)
  auto [out4, w4] = mha(q4, k4, v4, Tensor(), true, causal, true, true);
  check(out4, {4, 2, 8}, {-0.56020993, 0.221808493, -0.255950868, -0.323806226, -0.396236837, 0.23698613, 0.180473089, 0.507571399, -0.534393668, 0.283535361, -0.324405074, -0.323005646, -0.219935387, 0.281482279, 0.253000945, 0.449419767, -0.497757941, 0.186740249, -0.189839542, -0.452191472, -0.364830136, 0.233775824, 0.212793887, 0.479447275, -0.624469817, 0.217866614, -0.292102009, -0.326843768, -0.439323485, 0.157637969, 0.194080874, 0.559307456, -0.536492705, 0.20079042, -0.218360752, -0.45553124, -0.383975387, 0.169708595, 0.208075792, 0.532020092, -0.556168735, 0.175735027, -0.246489406, -0.434067667, -0.363685876, 0.219182551, 0.233975723, 0.517702639, -0.63070941, 0.158731163, -0.275400847, -0.408972263, -0.466795623, 0.161638752, 0.229300588, 0.554331362, -0.563795388, 0.231451556, -0.305465519, -0.368621409, -0.293275595, 0.252963722, 0.247900426, 0.48942256});
  check(w4, {2, 4, 6}, {0.191436067, 0, 0, 0, 0.386357993, 0.422205985, 0.225306854, 0.255412281, 0, 0, 0.2078522, 0.311428666, 0.232573301, 0.207525432, 0.187194705, 0, 0.192680672, 0.180025876, 0.144854367, 0.151093826, 0.173211664, 0.209007382, 0.207481414, 0.114351302, 0.424554974, 0, 0, 0, 0.242502034, 0.332943022, 0.271961987, 0.27875191, 0, 0, 0.200984091, 0.248301983, 0.189926565, 0.195681453, 0.212745428, 0, 0.248507172, 0.153139368, 0.249030173, 0.139627472, 0.1023058, 0.114610568, 0.248114377, 0.146311626});
  // 5. unbatched, weights per head
  auto [out5, w5] = mha(f32({3, 8}, 7.5), f32({4, 5}, 8.5), f32({4, 3}, 9.5), Tensor(), true, Tensor(), false);
  check(out5, {3, 8}, {-0.486295611, 0.221457988, -0.20623289, -0.485318661, -0.301288366, 0.19687894, 0.218933389, 0.508817554, -0.501579225, 0.209298939, -0.234814435, -0.487890452, -0.280304879, 0.221728414, 0.25404343, 0.488368392, -0.503276467, 0.21304746, -0.256592155, -0.489881933, -0.248827636, 0.241796866, 0.282730609, 0.462534517});
  check(w5, {2, 3, 6}, {0.174978301, 0.138514891, 0.139333993, 0.174080029, 0.260355651, 0.11273706, 0.265186697, 0.0749853328, 0.172894165, 0.127895489, 0.26376617, 0.0952721611, 0.36783427, 0.0403120033, 0.21510455, 0.0852817744, 0.204137623, 0.08732979, 0.140277743, 0.222540453, 0.189198554, 0.161629796, 0.129958779, 0.15639472, 0.117815726, 0.244386658, 0.136235654, 0.196217194, 0.159392625, 0.145952106, 0.11816071, 0.221116811, 0.100548565, 0.235084534, 0.18653056, 0.138558894});
}

TEST_CASE("layers: the fused CPU layer_norm rows match the formula on 1 and 3 threads") {
  // See Note [Fused normalization rows]: (301, 257) is above the parallel threshold, and 301
  // rows over 3 threads give chunks of unequal length, each with its own partial dw and db.
  const int before = tg::get_num_threads();
  const Tensor x = testing::randn64({301, 257}, 310, false) * 3.0 + 1.0;
  const Tensor w = testing::randn64({257}, 311, false), b = testing::randn64({257}, 312, false);
  const Tensor gy = testing::randn64({301, 257}, 313, false);
  // the formula, spelled out with differentiable ops (none of them layer_norm)
  std::vector<Tensor> want;
  {
    const Tensor xr(x.data(), true), wr(w.data(), true), br(b.data(), true);
    const Tensor mu = tg::mean(xr, 1, true), d = xr - mu;
    const Tensor y = d / tg::sqrt(tg::mean(d * d, 1, true) + 1e-5) * wr + br;
    tg::sum(y * gy).backward();
    want = {y, xr.grad(), wr.grad(), br.grad()};
  }
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    tg::set_num_threads(threads);
    const Tensor xf(x.data(), true), wf(w.data(), true), bf(b.data(), true);
    const Tensor y = tg::layer_norm(xf, {257}, wf, bf);
    tg::sum(y * gy).backward();
    testing::check_close(y, want[0], 1e-10, 1e-10);
    testing::check_close(xf.grad(), want[1], 1e-9, 1e-9);
    testing::check_close(wf.grad(), want[2], 1e-9, 1e-9);
    testing::check_close(bf.grad(), want[3], 1e-9, 1e-9);
    // float32 through the same rows: within float32 rounding of the float64 result
    const Tensor x32(x.data().to(tg::kFloat32), true), w32(w.data().to(tg::kFloat32), true);
    const Tensor y32 = tg::layer_norm(x32, {257}, w32);
    tg::sum(y32 * Tensor(gy.data().to(tg::kFloat32))).backward();
    testing::check_close(y32.to(tg::kFloat64), tg::layer_norm(x, {257}, w), 1e-4, 1e-4);
    CHECK(x32.grad().dtype() == tg::kFloat32);
    testing::check_close(w32.grad().to(tg::kFloat64), want[2], 1e-3, 1e-2);
  }
  tg::set_num_threads(before);
}

TEST_CASE("layers: conv2d's stride-1 input gradient (a convolution of dy) matches the direct sum on 1 and 3 threads") {
  // Note [conv2d input gradient as a convolution]: (32, 8, 16, 15) with 8 filters of (4, 3, 3), groups 2,
  // padding (2, 1), dilation (2, 1) is above the parallel threshold (images spread over the threads);
  // output rows as long as the input's take im2col's one-copy-per-row path, in the forward and in dx;
  // the direct sum dx[n][c][ih][iw] = sum over o, kh, kw of W[o][c'][kh][kw] dy[n][o][oh][ow] with
  // ih = oh - ph + kh dh, iw = ow - pw + kw dw spells out the gradient without any convolution.
  const int before = tg::get_num_threads();
  const int64_t N = 32, C = 8, H = 16, Wd = 15, O = 8, G = 2, KH = 3, KW = 3, ph = 2, pw = 1, dh = 2, dw = 1;
  const Tensor x = testing::randn64({N, C, H, Wd}, 320, false), w = testing::randn64({O, C / G, KH, KW}, 321, false);
  const int64_t OH = H + 2 * ph - dh * (KH - 1), OW = Wd + 2 * pw - dw * (KW - 1);
  const Tensor gy = testing::randn64({N, O, OH, OW}, 322, false);
  const std::vector<double> wv = w.to_vector<double>(), gv = gy.to_vector<double>();
  std::vector<double> want(static_cast<std::size_t>(N * C * H * Wd), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t ci = 0; ci < C / G; ++ci)
        for (int64_t kh = 0; kh < KH; ++kh)
          for (int64_t kw = 0; kw < KW; ++kw)
            for (int64_t oh = 0; oh < OH; ++oh)
              for (int64_t ow = 0; ow < OW; ++ow) {
                const int64_t ih = oh - ph + kh * dh, iw = ow - pw + kw * dw, c = (o / (O / G)) * (C / G) + ci;
                if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                want[static_cast<std::size_t>(((n * C + c) * H + ih) * Wd + iw)] +=
                    wv[static_cast<std::size_t>(((o * (C / G) + ci) * KH + kh) * KW + kw)] *
                    gv[static_cast<std::size_t>(((n * O + o) * OH + oh) * OW + ow)];
              }
  const Tensor want_dx = tg::from_vector(want, {N, C, H, Wd});
  for (int threads : {1, 3}) {
    CAPTURE(threads);
    tg::set_num_threads(threads);
    const Tensor xf(x.data(), true);
    tg::sum(tg::conv2d(xf, w, Tensor(), {1}, {ph, pw}, {dh, dw}, G) * gy).backward();
    testing::check_close(xf.grad(), want_dx, 1e-12, 1e-12);
    // the forward through the same im2col, against its direct sum
    const Tensor y = tg::conv2d(x, w, Tensor(), {1}, {ph, pw}, {dh, dw}, G);
    REQUIRE(y.shape() == tg::Shape{N, O, OH, OW});
    const std::vector<double> xv = x.to_vector<double>();
    std::vector<double> want_y(static_cast<std::size_t>(N * O * OH * OW), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t ci = 0; ci < C / G; ++ci)
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw)
              for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                  const int64_t ih = oh - ph + kh * dh, iw = ow - pw + kw * dw, c = (o / (O / G)) * (C / G) + ci;
                  if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                  want_y[static_cast<std::size_t>(((n * O + o) * OH + oh) * OW + ow)] +=
                      wv[static_cast<std::size_t>(((o * (C / G) + ci) * KH + kh) * KW + kw)] *
                      xv[static_cast<std::size_t>(((n * C + c) * H + ih) * Wd + iw)];
                }
    testing::check_close(y, tg::from_vector(want_y, {N, O, OH, OW}), 1e-12, 1e-12);
    const Tensor x32(x.data().to(tg::kFloat32), true);
    tg::sum(tg::conv2d(x32, Tensor(w.data().to(tg::kFloat32)), Tensor(), {1}, {ph, pw}, {dh, dw}, G) *
            Tensor(gy.data().to(tg::kFloat32)))
        .backward();
    testing::check_close(x32.grad().to(tg::kFloat64), want_dx, 1e-4, 1e-4);
  }
  tg::set_num_threads(before);
}

TEST_CASE("layers: float32 conv2d (oneDNN where built with it) matches the float64 im2col reference in every geometry") {
  // Note [conv2d through oneDNN]: float32 takes oneDNN's kernels with their own layouts, float64 the
  // im2col + GEMM path. Strides, unequal padding per axis, dilation, groups, 1x1 and even kernels,
  // outputs whose last window stops short of the padded edge, with and without bias, each gradient
  // asked alone, on 1 and 3 threads (the batch cut into parts whose weight gradients add up).
  struct Geometry {
    int64_t N, C, H, W, O, KH, KW, sh, sw, ph, pw, dh, dw, G;
  };
  const std::vector<Geometry> geometries{
      {5, 6, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},   {7, 4, 11, 10, 6, 3, 2, 2, 1, 1, 0, 1, 2, 2},
      {3, 8, 7, 7, 8, 1, 1, 1, 1, 0, 0, 1, 1, 4},   {6, 3, 7, 9, 5, 2, 2, 2, 2, 0, 1, 1, 1, 1},
      {4, 4, 12, 6, 4, 5, 3, 3, 1, 2, 1, 2, 1, 4},  {9, 2, 5, 5, 3, 3, 3, 1, 1, 2, 2, 1, 1, 1},
      {16, 16, 14, 14, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1}};
  const int before = tg::get_num_threads();
  uint64_t seed = 400;
  for (const Geometry& g : geometries) {
    INFO("geometry ", g.N, " ", g.C, " ", g.H, " ", g.W, " ", g.O, " ", g.KH, "x", g.KW, " stride ", g.sh, ",", g.sw,
         " pad ", g.ph, ",", g.pw, " dilation ", g.dh, ",", g.dw, " groups ", g.G);
    const Tensor x = testing::randn64({g.N, g.C, g.H, g.W}, seed++, false);
    const Tensor w = testing::randn64({g.O, g.C / g.G, g.KH, g.KW}, seed++, false);
    const Tensor b = testing::randn64({g.O}, seed++, false);
    for (int threads : {1, 3}) {
      CAPTURE(threads);
      tg::set_num_threads(threads);
      for (int want = 0; want < 5; ++want) {   // all gradients, bias or not; then x, w, b alone
        CAPTURE(want);
        const bool gx = want <= 1 || want == 2, gw = want <= 1 || want == 3, gb = want == 0 || want == 4;
        const bool with_bias = want != 1;
        auto run = [&](tg::DType dt) {
          const Tensor xv(x.data().to(dt), gx), wv(w.data().to(dt), gw), bv(b.data().to(dt), gb);
          const Tensor y = tg::conv2d(xv, wv, with_bias ? bv : Tensor(), {g.sh, g.sw}, {g.ph, g.pw}, {g.dh, g.dw}, g.G);
          const Tensor gy = testing::randn64(y.shape(), 7, false);
          tg::sum(y * Tensor(gy.data().to(dt))).backward();
          return std::vector<Tensor>{y, gx ? xv.grad() : Tensor(), gw ? wv.grad() : Tensor(),
                                       gb && with_bias ? bv.grad() : Tensor()};
        };
        const int64_t onednn_before = tg::detail::cpu_conv2d_onednn_calls();
        const std::vector<Tensor> r64 = run(tg::kFloat64);
        CHECK(tg::detail::cpu_conv2d_onednn_calls() == onednn_before);   // float64: im2col
        const std::vector<Tensor> r32 = run(tg::kFloat32);
        // the forward and the backward, each on oneDNN when the build has it
        CHECK(tg::detail::cpu_conv2d_onednn_calls() - onednn_before == (tg::quantization::has_onednn() ? 2 : 0));
        for (std::size_t i = 0; i < r64.size(); ++i) {
          CAPTURE(i);
          REQUIRE(r64[i].defined() == r32[i].defined());
          if (!r64[i].defined()) continue;
          CHECK(r32[i].dtype() == tg::kFloat32);
          // float32 sums of up to a few thousand products of unit normals: 2e-4 relative is ~50 eps,
          // atol covers terms that cancel to near 0.
          testing::check_close(r32[i].to(tg::kFloat64), r64[i], 2e-4, 2e-3);
        }
      }
    }
  }
  tg::set_num_threads(before);
}

TEST_CASE("layers: layer_norm and group_norm of a 16-bit input with float32 parameters, as PyTorch's mixed dtype") {
  // torch 2.15.0: F.layer_norm(x.bfloat16(), (4,), w, b) with float32 w, b is bfloat16, the float32
  // result rounded: x = [[0.5, -1.25, 2, 0.75], [3, 1, -2, 0]], w = [1.5, -0.5, 0.25, 2], b = [0.1, 0.2, -0.3,
  // 0.4] gives F.layer_norm(x.float(), (4,), w, b) = [[0.1, 0.95483, 0.023497, 0.83133], [2.18012, 0.061325,
  // -0.646687, -0.154699]] and, in bfloat16, [[0.10009765625, 0.953125, 0.0234375, 0.83203125], [2.1875,
  // 0.061279296875, -0.6484375, -0.154296875]].
  const std::vector<float> xs = {0.5f, -1.25f, 2.f, 0.75f, 3.f, 1.f, -2.f, 0.f};
  for (tg::DType lowp : {tg::kBFloat16, tg::kFloat16}) {
    CAPTURE(tg::dtype_name(lowp));
    Tensor x = tg::from_vector(xs, {2, 4}).to(lowp);
    x.set_requires_grad(true);
    Tensor w = tg::from_vector(std::vector<float>{1.5f, -0.5f, 0.25f, 2.f}, {4}, tg::requires_grad());
    Tensor b = tg::from_vector(std::vector<float>{0.1f, 0.2f, -0.3f, 0.4f}, {4}, tg::requires_grad());
    Tensor y = tg::layer_norm(x, {4}, w, b);
    CHECK(y.dtype() == lowp);
    const Tensor y32 = tg::layer_norm(x.detach().to(tg::kFloat32), {4}, w.detach(), b.detach());
    testing::check_close(y32, tg::from_vector(std::vector<float>{0.1f, 0.95483f, 0.023497f, 0.83133f, 2.18012f,
                                                                 0.061325f, -0.646687f, -0.154699f}, {2, 4}),
                         1e-5, 1e-6);
    CHECK(y.to_vector<float>() == y32.to(lowp).to_vector<float>());   // computed in float32, rounded once
    if (lowp == tg::kBFloat16)
      CHECK(y.to_vector<float>() == std::vector<float>{0.10009765625f, 0.953125f, 0.0234375f, 0.83203125f, 2.1875f,
                                                       0.061279296875f, -0.6484375f, -0.154296875f});
    y.sum().backward();
    CHECK(x.grad().dtype() == lowp);
    CHECK(w.grad().dtype() == tg::kFloat32);
    CHECK(b.grad().dtype() == tg::kFloat32);
    // group_norm: the same rule, 2 groups of (N, C, L) = (2, 4, 3)
    Tensor gx = tg::randn({2, 4, 3}).to(lowp);
    const Tensor gy = tg::group_norm(gx, 2, w.detach(), b.detach());
    CHECK(gy.dtype() == lowp);
    CHECK(gy.to_vector<float>() ==
          tg::group_norm(gx.to(tg::kFloat32), 2, w.detach(), b.detach()).to(lowp).to_vector<float>());
  }
  // Other mixtures are refused, as PyTorch's "mixed dtype (CPU): expect parameter to have scalar type of Float"
  TG_CHECK_THROWS(tg::layer_norm(tg::randn({2, 4}), {4}, tg::ones({4}, tg::kFloat64)), tg::DTypeError,
                  "layer_norm: mixed dtype: expected weight and bias of the input's dtype float32");
  TG_CHECK_THROWS(tg::layer_norm(tg::randn({2, 4}, tg::kFloat64), {4}, tg::ones({4})), tg::DTypeError, "mixed dtype");
  TG_CHECK_THROWS(tg::group_norm(tg::randn({2, 4, 3}).to(tg::kBFloat16), 2, tg::ones({4}, tg::kFloat16)),
                  tg::DTypeError, "group_norm: mixed dtype");
}
