// tests/test_attention_masked.cpp: attention whose query rows mask every key (Note [Fused attention] in
// ops/attention.cpp, Note [NaN and infinity] in kernels/elementwise.h). scaled_dot_product_attention
// gives such a row 0 and zero gradients (PyTorch 2.5 and later) on the composed path, in the fused
// kernels' host reference and, with a GPU, in the CUDA kernels; nn::MultiheadAttention gives out_proj's
// bias there without weights and NaN with them. The reference values are PyTorch 2.15.0's (CPU,
// float64), printed by `python3 tests/data/attention_masked.py`, under the case letters used below.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "testing.h"

using tg::RawTensor;
using tg::Tensor;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

/// wave(shape, a, b) of tests/data/attention_masked.py: sin(a i + b) over the flattened float64 tensor, times scale.
Tensor wave(const tg::Shape& shape, double a, double b, double scale = 1.0) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = scale * std::sin(static_cast<double>(i) * a + b);
  return tg::from_vector(v, shape);
}

/// A float64 leaf that requires grad, holding x's values.
Tensor leaf(const Tensor& x) { return Tensor(x.data().clone(), true); }

/// float64 against PyTorch's float64: both sum a handful of terms, so they agree to a few ulps; 1e-12
/// relative (and absolute for values near 0) leaves room for libm's sin and exp differing by an ulp.
void check_torch(const Tensor& got, const std::vector<double>& want) {
  testing::check_close(got.to(tg::kFloat64), tg::from_vector(want, got.shape()), 1e-12, 1e-12);
}

/// Every element of x is exactly 0 (-0 counts as 0) where rows says so: x viewed as
/// (R, C) rows of its last dim, rows[r] true for a row that must be zero; the others finite.
void check_zero_rows(const Tensor& x, const std::vector<bool>& rows) {
  const auto v = x.to(tg::kFloat64).to_vector<double>();
  REQUIRE(v.size() % rows.size() == 0);
  const std::size_t C = v.size() / rows.size();
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (rows[i / C]) CHECK_MESSAGE(v[i] == 0.0, "element " << i << " of a fully masked row: " << v[i]);
    else CHECK_MESSAGE(std::isfinite(v[i]), "element " << i << ": " << v[i]);
  }
}

/// The bool mask (3, 5) of case A: row 0 masks keys 1 and 3, row 1 every key, row 2 none.
Tensor mask_a() {
  return tg::from_vector(std::vector<double>{1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}, {3, 5}) > 0.5;
}
/// Case B's float mask: wave((3, 5), 0.4, 0) with -inf where mask_a() is false.
Tensor mask_b() {
  const Tensor w = wave({3, 5}, 0.4, 0.0);
  return tg::where(mask_a(), w, tg::scalar_like(-kInf, w));
}
/// Case C's key padding mask (2, 1, 1, 4): batch 0 keeps keys 0 and 2, batch 1 none.
Tensor mask_c() {
  return tg::from_vector(std::vector<double>{1, 0, 1, 0, 0, 0, 0, 0}, {2, 1, 1, 4}) > 0.5;
}

/// The inputs of a case of attention_masked.py's sdpa_case, float64 leaves.
struct Qkv {
  Tensor q, k, v;
  Qkv(const tg::Shape& qs, const tg::Shape& ks, const tg::Shape& vs)
      : q(leaf(wave(qs, 0.7, 0.3))), k(leaf(wave(ks, 1.3, -0.2))), v(leaf(wave(vs, 0.5, 0.9, 2.0))) {}
};

/// PyTorch 2.15.0 (attention_masked.py), F.scaled_dot_product_attention(q, k, v, attn_mask=m) and the
/// gradients of sum(out * wave(out.shape, 0.9, 0.1)).
struct TorchAttention {
  std::vector<double> out, dq, dk, dv;
};
// A: q (2, 3, 4), k (2, 5, 4), v (2, 5, 3), attn_mask = mask_a()
const TorchAttention kA = {
    {0.6010695279886886, 0.7691695622220638, 0.7489500618971818, 0.0, 0.0, 0.0, 0.2930974490450876,
     0.045683539589719394, -0.21291529362635528, 1.4301278589798483, 0.933921229399403, 0.2090581112204209, 0.0, 0.0,
     0.0, 0.8086691146508491, 0.35779070284166153, -0.18068735141016434},
    {0.6157614416762535, 1.1759917962636386, 0.01339141426904248, -1.1688274210024485, 0.0, 0.0, 0.0, 0.0,
     0.268220644214383, 0.08410309865292043, -0.22322568346767444, -0.20352831634597224, 0.2744677122078896,
     0.07553611340746505, -0.23405606849718796, -0.20075556171841277, 0.0, 0.0, 0.0, 0.0, 0.5967216304794549,
     -0.17683278662018284, -0.691326757046098, -0.19302540879314864},
    {0.12516862142312887, 0.5006505925630572, 0.6406687671392789, 0.4793704098042683, 0.06321934081071684,
     -0.05267897541968982, -0.14380154637851952, -0.16729200311438758, -0.19562707592871978, -0.6596469071498304,
     -0.8134244906711284, -0.5846358261215234, -0.03399174607102068, 0.028324407258673735, 0.07731914927354198,
     0.0899494872400297, 0.04123085976589476, 0.18335088274778918, 0.23923812063682698, 0.18260793219161295,
     0.39199260671144726, 0.21676841646058603, -0.06040534715162787, -0.3091695321388459, -0.4122823271357408,
     -0.2716961909686354, -0.003327090818889726, 0.2666067921302078, -0.27453708469948485, -0.10868514605434883,
     0.10828311503240003, 0.2743241351490664, 0.05789856343652341, 0.03815545346691531, 0.00046723753641066996,
     -0.037440727508255806, 0.23692824168725496, 0.12545746709548283, -0.045017914598293095, -0.19432066763217248},
    {-0.08176994038709214, 0.4493060614564666, 0.640356193598635, -0.2513001579973658, 0.041512628735597384,
     0.3029094856596991, -0.16480355890306664, 0.28604584343652545, 0.5204214542281349, -0.08098901848657485,
     0.013378690578176464, 0.09762167333818152, -0.02684423314946443, 0.16777696545162354, 0.2354279014913286,
     0.9029208588942856, 0.5995677035690111, -0.15752633651098974, 0.18351880285900224, 0.19969558518769528,
     0.06474672988562774, 0.16729620025211173, 0.11094009472376652, -0.02937326272974176, 0.06455441434813601,
     0.07024474521885544, 0.022775253345211247, 0.48160209518273334, 0.2735452891747068, -0.1415251381337751}};
// B: the same inputs, attn_mask = mask_b() requiring grad; its gradient kBMask
const TorchAttention kB = {
    {0.3310123910396728, 0.4591125613942436, 0.47480596460915003, 0.0, 0.0, 0.0, 0.36645829312166, 0.1755403828297148,
     -0.058355935363824024, 1.4067899980945318, 0.9821322246592288, 0.3170142295685424, 0.0, 0.0, 0.0,
     0.9544782993924247, 0.48258686322589495, -0.10745866786358517},
    {0.9142575354711876, 1.1503941094813266, -0.2987993819854268, -1.3102510788310322, 0.0, 0.0, 0.0, 0.0,
     0.2850038551526444, 0.09723275411476243, -0.2329845594933616, -0.221878947618942, 0.3156820111143208,
     0.008913668400199127, -0.31091321940271865, -0.1752515123884519, 0.0, 0.0, 0.0, 0.0, 0.5446176577144308,
     -0.1909020184530128, -0.6467497903509336, -0.15510760421113112},
    {0.08393886012728918, 0.3901715809845384, 0.5129005107056334, 0.39440431595031733, 0.06553656972978722,
     -0.05460985991965617, -0.14907241914628586, -0.17342389032761452, -0.218712527046548, -0.7315161793774394,
     -0.9002763422915178, -0.6456224742200074, -0.03224462517314238, 0.026868578430750308, 0.07334506976554216,
     0.08532622874127102, 0.101481722362614, 0.3690858798818068, 0.46310318096662817, 0.3393158198560336,
     0.3231263012049604, 0.18446922481188366, -0.04094661042136996, -0.24710461496501654, -0.37800781026521957,
     -0.24910910666233943, -0.003050497758997913, 0.24444280790574266, -0.2751919196310401, -0.09673958749965317,
     0.12721088423057203, 0.2913320893822624, 0.04423127730446788, 0.029148641050880438, 0.00035694345098379347,
     -0.028602630231305798, 0.2858421513868314, 0.13223082829922853, -0.08357071950118794, -0.26006765209168275},
    {-0.12086332771870359, 0.2851517443533658, 0.47536966123834445, -0.2368575082689504, 0.03912682698795077,
     0.2855007596339743, -0.1381600781058513, 0.34553087137436156, 0.5677309460889552, -0.08171778342268143,
     0.013499076289308532, 0.0985001041904422, -0.0281082114073771, 0.2747116706534027, 0.36963523716426283,
     0.7065782437653596, 0.5457527013884351, -0.02808760497797072, 0.15761967746941766, 0.17151350836532087,
     0.05560933551649714, 0.17277326520432626, 0.10312134683927628, -0.044570750930744904, 0.05935425525606536,
     0.06458620344121535, 0.02094060048756771, 0.7035669298411, 0.3690196578397874, -0.24479433423901684}};
const std::vector<double> kBMask = {0.9841934716751256, 0.0, -2.0907644964670973, 0.0, 1.1065710247919716, 0.0, 0.0,
                                    0.0, 0.0, 0.0, 0.7817742861466525, -1.116728834991851, -0.4399353316969813,
                                    0.2621364597924889, 0.5127534207496909};
// C: q (2, 2, 2, 3), k (2, 2, 4, 3), v (2, 2, 4, 2), attn_mask = mask_c()
const TorchAttention kC = {
    {1.2241447692462648, 1.1896678741798619, 0.7860502063984462, 0.19041454042422823, -0.1885639307479724,
     0.3566558367226248, 0.10741919714609371, 0.6736076590905481, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {-0.31918323712582186, 0.10675652779276604, 0.37629772939100825, -0.2541597624421327, 0.08500826668494646,
     0.2996389859653922, 0.8724324108871405, -0.17316098568891442, -0.9650731325576682, 0.289250050259083,
     -0.05741054915933215, -0.3199645595607145, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},
    {0.22801574252890175, 0.23928869849476425, 0.1380204405694862, 0.0, 0.0, 0.0, -0.22801574252890167,
     -0.23928869849476422, -0.13802044056948617, 0.0, 0.0, 0.0, -0.615923595946237, -0.42376940899379667,
     -0.03230984741190357, 0.0, 0.0, 0.0, 0.615923595946237, 0.42376940899379667, 0.03230984741190357, 0.0, 0.0, 0.0,
     0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
     0.0, 0.0},
    {0.33586796150239606, 0.6712881743496147, 0.0, 0.0, 0.7102655428318465, 0.5051709606141864, 0.0, 0.0,
     -0.46553534883621117, -0.38908553605020746, 0.0, 0.0, -0.7698411176426743, -0.48805626273276426, 0.0, 0.0, 0.0,
     0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}};

/// Runs sdpa on x with mask and checks the output and gradients against PyTorch's want; returns the output.
Tensor check_case(const Qkv& x, const Tensor& mask, const TorchAttention& want) {
  const Tensor out = tg::scaled_dot_product_attention(x.q, x.k, x.v, mask);
  tg::sum(out * wave(out.shape(), 0.9, 0.1)).backward();
  check_torch(out, want.out);
  check_torch(x.q.grad(), want.dq);
  check_torch(x.k.grad(), want.dk);
  check_torch(x.v.grad(), want.dv);
  return out;
}

}  // namespace

TEST_CASE("attention: a query row whose bool mask is all false gives 0 and zero gradients, as PyTorch 2.15") {
  const Qkv x({2, 3, 4}, {2, 5, 4}, {2, 5, 3});
  const Tensor out = check_case(x, mask_a(), kA);
  check_zero_rows(out, {false, true, false, false, true, false});   // query row 1 of each batch entry
  check_zero_rows(x.q.grad(), {false, true, false, false, true, false});
  // float32, float16 and bfloat16 compose the same way: exact zeros there, finite values elsewhere
  for (tg::DType dt : {tg::kFloat32, tg::kFloat16, tg::kBFloat16}) {
    const std::string name = tg::dtype_name(dt);
    CAPTURE(name);
    const Tensor q(x.q.data().to(dt), true), k(x.k.data().to(dt), true), v(x.v.data().to(dt), true);
    const Tensor y = tg::scaled_dot_product_attention(q, k, v, mask_a());
    check_zero_rows(y, {false, true, false, false, true, false});
    tg::sum(y).backward();
    check_zero_rows(q.grad(), {false, true, false, false, true, false});
    check_zero_rows(k.grad(), std::vector<bool>(10, false));
    if (dt == tg::kFloat32) testing::check_close(y.to(tg::kFloat64), tg::from_vector(kA.out, y.shape()), 1e-5, 1e-6);
  }
}

TEST_CASE("attention: a float mask row of -inf gives 0, and the mask's gradient there is 0, as PyTorch 2.15") {
  const Qkv x({2, 3, 4}, {2, 5, 4}, {2, 5, 3});
  const Tensor m = leaf(mask_b());
  const Tensor out = check_case(x, m, kB);
  check_torch(m.grad(), kBMask);
  check_zero_rows(m.grad(), {false, true, false});
  // a float mask of 0 and -inf gives what the bool mask of case A gives: -inf along a row is 0 as well
  const Qkv y({2, 3, 4}, {2, 5, 4}, {2, 5, 3});
  const Tensor zeros = tg::zeros({3, 5}, tg::kFloat64);
  check_torch(tg::scaled_dot_product_attention(y.q, y.k, y.v, tg::where(mask_a(), zeros, zeros - kInf)), kA.out);
}

TEST_CASE("attention: a key padding mask that masks a whole batch entry gives it 0 and zero gradients") {
  const Qkv x({2, 2, 2, 3}, {2, 2, 4, 3}, {2, 2, 4, 2});
  const Tensor out = check_case(x, mask_c(), kC);
  check_zero_rows(out, {false, false, false, false, true, true, true, true});   // (N, H, L): batch entry 1
  // batch entry 1's keys and values are attended by no query: no gradient reaches them
  check_zero_rows(x.k.grad(), {false, false, false, false, false, false, false, false, true, true, true, true, true,
                               true, true, true});
  check_zero_rows(x.v.grad(), {false, false, false, false, false, false, false, false, true, true, true, true, true,
                               true, true, true});
}

TEST_CASE("attention: -inf scores from infinite inputs and dropout give fully masked rows 0 as well") {
  // G: PyTorch 2.15.0, F.scaled_dot_product_attention(q, k, wave((1, 4, 2), 0.5, 0.9) * 2) with q row 0
  // holding -inf and every key's first component positive: that row's scores are all -inf
  const Tensor q = tg::from_vector(std::vector<double>{-kInf, 0.5, 0.25, 0.3, -0.2, 0.1}, {1, 2, 3});
  const Tensor k =
      tg::from_vector(std::vector<double>{1.0, 0.2, -0.3, 0.5, 0.1, 0.7, 2.0, -1.0, 0.4, 0.25, 0.3, 0.3}, {1, 4, 3});
  check_torch(tg::scaled_dot_product_attention(q, k, wave({1, 4, 2}, 0.5, 0.9, 2.0)), {0.0, 0.0, 0.6671187435446533,
                                                                                       0.20014891363775777});
  // a NaN score is not -inf: its row stays NaN, as softmax's
  const Tensor qn = tg::from_vector(std::vector<double>{kNaN, 0.5, 0.25, 0.3, -0.2, 0.1}, {1, 2, 3});
  const auto yn = tg::scaled_dot_product_attention(qn, k, wave({1, 4, 2}, 0.5, 0.9, 2.0)).to_vector<double>();
  CHECK(std::isnan(yn[0]));
  CHECK(std::isfinite(yn[2]));
  // dropout draws over the probabilities; a fully masked row stays 0 and passes no gradient
  const Qkv x({2, 3, 4}, {2, 5, 4}, {2, 5, 3});
  tg::manual_seed(3);
  const Tensor y = tg::scaled_dot_product_attention(x.q, x.k, x.v, mask_a(), 0.5);
  check_zero_rows(y, {false, true, false, false, true, false});
  tg::sum(y).backward();
  check_zero_rows(x.q.grad(), {false, true, false, false, true, false});
  // is_causal alone never masks a whole row (key 0 is always kept), also with L > S
  const Qkv c({1, 6, 4}, {1, 2, 4}, {1, 2, 3});
  check_zero_rows(tg::scaled_dot_product_attention(c.q, c.k, c.v, {}, 0, true), std::vector<bool>(6, false));
}

namespace {

/// Cases A, B and C for the fused attention (prim::attention), with AttentionArgs' mask fields for each
/// mask's layout, as ops/attention.cpp's set_mask gives them.
struct FusedSample {
  const char* what;
  tg::Shape q, k, v;
  Tensor mask;
  int64_t inner, stride_outer, stride_l;
  const TorchAttention* want;
  std::vector<bool> dead;   ///< (B, L): the rows whose keys are all masked
};
std::vector<FusedSample> fused_samples() {
  return {{"A: bool (3, 5) over batch 2", {2, 3, 4}, {2, 5, 4}, {2, 5, 3}, mask_a(), 2, 0, 5, &kA,
           {false, true, false, false, true, false}},
          {"B: float (3, 5) over batch 2", {2, 3, 4}, {2, 5, 4}, {2, 5, 3}, mask_b(), 2, 0, 5, &kB,
           {false, true, false, false, true, false}},
          {"C: key padding (2, 1, 1, 4) over (N, H) = (2, 2)", {2, 2, 2, 3}, {2, 2, 4, 3}, {2, 2, 4, 2}, mask_c(), 2,
           4, 0, &kC, {false, false, false, false, true, true, true, true}}};
}

/// prim::attention and attention_backward of sample sm in dtype dt on device d (a float mask in dt), the
/// gradients of sum(out * wave(out.shape, 0.9, 0.1)): out, lse, dq, dk, dv, each (B, ...).
std::vector<RawTensor> run_fused(const FusedSample& sm, tg::DType dt, tg::Device d) {
  const Qkv x(sm.q, sm.k, sm.v);
  tg::AttentionArgs a;
  a.L = sm.q[sm.q.size() - 2];
  a.S = sm.k[sm.k.size() - 2];
  a.E = sm.q.back();
  a.Ev = sm.v.back();
  a.B = x.q.numel() / (a.L * a.E);
  a.scale = 1.0 / std::sqrt(static_cast<double>(a.E));
  a.mask = (sm.mask.dtype() == tg::kBool ? sm.mask.data() : sm.mask.data().to(dt)).to(d);
  a.mask_inner = sm.inner;
  a.mask_stride_outer = sm.stride_outer;
  a.mask_stride_l = sm.stride_l;
  a.mask_stride_s = 1;
  auto in = [&](const Tensor& t, int64_t rows, int64_t cols) {
    return t.data().to(dt).reshape({a.B, rows, cols}).to(d);
  };
  const RawTensor q = in(x.q, a.L, a.E), k = in(x.k, a.S, a.E), v = in(x.v, a.S, a.Ev);
  const tg::prim::Attention f = tg::prim::attention(q, k, v, a);
  const RawTensor w = wave({a.B, a.L, a.Ev}, 0.9, 0.1).data().to(dt).to(d);
  const tg::prim::AttentionGrads g = tg::prim::attention_backward(q, k, v, f.out, f.lse, w, a);
  return {f.out, f.lse, g.dq, g.dk, g.dv};
}

/// lse (B, L) is +inf exactly on the dead rows, finite elsewhere.
void check_lse(const RawTensor& lse, const std::vector<bool>& dead) {
  const auto v = Tensor(lse).cpu().to_vector<double>();
  REQUIRE(v.size() == dead.size());
  for (std::size_t r = 0; r < v.size(); ++r) {
    CAPTURE(r);
    if (dead[r]) CHECK(v[r] == kInf);
    else CHECK(std::isfinite(v[r]));
  }
}

}  // namespace

TEST_CASE("attention: the fused host reference writes 0 rows, saves +inf log-sum-exp and gives zero gradients") {
  // backend/cpu/attention.cpp, the CUDA kernels' reference (Note [Fused attention]), on cases A, B and C
  // with the mask read through AttentionArgs' strides: PyTorch's values and gradients
  for (const FusedSample& sm : fused_samples()) {
    CAPTURE(sm.what);
    const std::vector<RawTensor> r = run_fused(sm, tg::kFloat64, tg::Device::cpu());
    check_torch(Tensor(r[0]), sm.want->out);
    check_lse(r[1], sm.dead);
    check_torch(Tensor(r[2]), sm.want->dq);
    check_torch(Tensor(r[3]), sm.want->dk);
    check_torch(Tensor(r[4]), sm.want->dv);
  }
}

namespace {

/// tests/data/attention_masked.py's MultiheadAttention(4, 2) in float64, its parameters set from waves.
struct Mha {
  tg::nn::MultiheadAttention m{4, 2};
  Mha() {
    m.double_();
    tg::NoGradGuard g;
    tg::prim::copy_(m.in_proj_weight.data(), wave({12, 4}, 0.37, 0.1, 0.5).data());
    tg::prim::copy_(m.in_proj_bias.data(), wave({12}, 0.8, 0.4, 0.1).data());
    tg::prim::copy_(m.out_proj.weight.data(), wave({4, 4}, 0.61, -0.5, 0.5).data());
    tg::prim::copy_(m.out_proj.bias.data(), tg::from_vector(std::vector<double>{0.1, 0.2, 0.3, 0.4}, {4}).data());
  }
  /// m(x, x, x, ...) on x = wave((3, 2, 4), 0.45, 0.2), then the gradients of sum(out * wave(out.shape, 0.9, 0.1)).
  struct Result {
    Tensor out, weights, dx;
  };
  Result run(const Tensor& key_padding_mask, bool need_weights, const Tensor& attn_mask = Tensor(),
             bool is_causal = false) {
    m.zero_grad();
    const Tensor x(wave({3, 2, 4}, 0.45, 0.2).data().to(m.in_proj_weight.device()), true);
    auto [out, weights] = m.forward(x, x, x, key_padding_mask, need_weights, attn_mask, true, is_causal);
    tg::sum(out * wave({3, 2, 4}, 0.9, 0.1).to(x.device())).backward();
    return {out, weights, x.grad()};
  }
};

/// key_padding_mask (2, 3) of the MultiheadAttention cases: batch entry 1 pads every key.
Tensor padding() { return tg::from_vector(std::vector<double>{0, 0, 1, 1, 1, 1}, {2, 3}) > 0.5; }

}  // namespace

TEST_CASE("attention: MultiheadAttention without weights gives out_proj's bias where every key is padded") {
  // H: PyTorch 2.15.0, m(x, x, x, key_padding_mask=kpm, need_weights=False)
  Mha mha;
  const Mha::Result r = mha.run(padding(), false);
  CHECK_FALSE(r.weights.defined());
  check_torch(r.out, {-0.31774666609739255, 0.9103325962821844, -0.36737900504602067, 0.7091758629211959, 0.1, 0.2,
                      0.3, 0.4, 0.6356080929651895, -0.5585466367884233, 0.9231708123627413, 0.2065719568407872, 0.1,
                      0.2, 0.3, 0.4, -0.3687476346828612, 0.9758301236490778, -0.4164340506632285, 0.7186163147163868,
                      0.1, 0.2, 0.3, 0.4});
  check_torch(r.dx, {-0.027251406706992835, -0.021437750904497864, -0.01272259608611493, -0.002285497571872415, 0.0,
                     0.0, 0.0, 0.0, -0.041757703546799904, -0.037111950506202016, -0.02744326906461981,
                     -0.014060269897336164, 0.0, 0.0, 0.0, 0.0, -0.00795699320025577, -0.008565471927057533,
                     -0.008014654210977341, -0.006379090645883927, 0.0, 0.0, 0.0, 0.0});
  check_torch(mha.m.in_proj_weight.grad(), {0.0010692340004787573, 4.957702553116429e-05, -0.0009799510225131556,
                                            -0.0018143651428701893, 0.002571697998505037, 0.0001192415666479386,
                                            -0.0023569565521687798, -0.004363870962191004, 0.0010185721293773373,
                                            -0.002169583845023996, -0.004925763102503409, -0.006701194380025858,
                                            0.004529665862734601, -0.009648300395921239, -0.02190523413100553,
                                            -0.029800708803320544, -0.0014034938567290688, -0.0025976764410503084,
                                            -0.0032746465916580606, -0.003299615628324832, -0.0015153130425075874,
                                            -0.002804638561448359, -0.0035355442890979234, -0.003562502659267201,
                                            -0.004868169307579903, -0.009010319967353901, -0.011358463704168674,
                                            -0.011445071491839567, -0.0054822085164787735, -0.010146823115686293,
                                            -0.012791146428730995, -0.012888678359352937, 0.019720372469830792,
                                            0.007487071456352315, -0.00623694887387103, -0.018719156538350233,
                                            0.03507098994192835, 0.016285687195941312, -0.0057421902511134715,
                                            -0.02662676434148714, 0.040764580351608466, 0.02475003092000673,
                                            0.00380760689850998, -0.017892933722683968, 0.02928579810330869,
                                            0.019718217518727363, 0.006224625553287025, -0.008508325433351921});
  for (int64_t l = 0; l < 3; ++l) check_torch(r.out.select(0, l).select(0, 1), {0.1, 0.2, 0.3, 0.4});   // (L, N, E)
  // J: an attn_mask (L, S) forbidding every key to query 1: m(x, x, x, attn_mask=am, need_weights=False)
  const Tensor am = tg::from_vector(std::vector<double>{0, 1, 0, 1, 1, 1, 0, 0, 0}, {3, 3}) > 0.5;
  const Mha::Result j = mha.run(Tensor(), false, am);
  check_torch(j.out, {-0.34789238571777514, 1.0196942499832746, -0.504297472668154, 0.8089750232500634,
                      0.2889130631694786, 0.1928864340693197, 0.1219538364281936, 0.6791022987462236, 0.1, 0.2, 0.3,
                      0.4, 0.1, 0.2, 0.3, 0.4, -0.3241776343462235, 0.9938115446495839, -0.4884730164301609,
                      0.8106838081053669, 0.29192767005619336, 0.07759152665797647, 0.29506723554734576,
                      0.5299439142964358});
  check_torch(j.dx, {-0.01816319231019238, -0.013278251980640182, -0.006596162536604274, 0.000978686562763821,
                     0.026045562281633843, 0.02161812984922149, 0.014264784956948683, 0.004980768339884086,
                     0.001185225442151587, 0.0014570233397260043, 0.0015316199634739802, 0.0013989190103198116,
                     -0.0024244356073851473, 0.002546451386840608, 0.007172688131801009, 0.010828135186723264,
                     -0.028384318354508872, -0.0279358273905255, -0.023706353242125108, -0.016268335393933405,
                     0.01815660492144351, 0.03044505237230344, 0.038612904808769256, 0.04155468172069315});
  check_torch(mha.m.in_proj_weight.grad(), {0.006196646717310596, 0.002220127997714436, -0.0021984310725225607,
                                            -0.006179269775664489, 0.019268422162223464, 0.011223382770786067,
                                            0.0009437028268750808, -0.009523873818902663, 0.00035370350685038905,
                                            0.0028474572774780838, 0.0047742658023059645, 0.005750490337617688,
                                            0.0198102427171304, 0.0229437642727438, 0.021509049395779623,
                                            0.015791758132836932, 0.004072867477255579, 0.001335729907202488,
                                            -0.001667359228322998, -0.004338467478651367, 0.009645052825570828,
                                            0.009933652934550279, 0.008244405175815072, 0.004913648567817922,
                                            0.0017518815997915713, 0.007071650324211648, 0.0109834124867839,
                                            0.012708313571125906, 0.013710257973746623, 0.01969239517894031,
                                            0.021753662380774592, 0.019483649333713538, -0.008832502340778637,
                                            -0.042880791920544885, -0.06839126732210678, -0.08028464505229183,
                                            -0.001092627110768329, -0.057019614163542315, -0.10159366559089036,
                                            -0.12593982943386575, 0.004669939721362736, -0.05316113342606659,
                                            -0.10040751682393415, -0.12766218173101168, 0.01002899402914613,
                                            -0.02806720634180299, -0.0605750632723685, -0.08102207405506555});
  // K: the is_causal hint with the causal attn_mask and the padding: m(x, x, x, attn_mask=triu(ones(3, 3),
  // 1).bool(), key_padding_mask=kpm, need_weights=False, is_causal=True): the masks are applied as given
  const Tensor causal = tg::from_vector(std::vector<double>{0, 1, 1, 0, 0, 1, 0, 0, 0}, {3, 3}) > 0.5;
  const Mha::Result c = mha.run(padding(), false, causal, true);
  check_torch(c.out, {-0.41443735469300924, 1.032138366453648, -0.45676251436591514, 0.7239150592169239, 0.1, 0.2,
                      0.3, 0.4, 0.6356080929651895, -0.5585466367884233, 0.9231708123627413, 0.2065719568407872, 0.1,
                      0.2, 0.3, 0.4, -0.3687476346828612, 0.9758301236490778, -0.4164340506632285, 0.7186163147163868,
                      0.1, 0.2, 0.3, 0.4});
  check_torch(c.dx, {-0.042199487877968136, -0.03641508052615096, -0.025702062855984538, -0.011510391552087815, 0.0,
                     0.0, 0.0, 0.0, -0.0378316670879293, -0.034117782306801875, -0.025786215744200945,
                     -0.013964605849228762, 0.0, 0.0, 0.0, 0.0, -0.00795699320025577, -0.008565471927057533,
                     -0.008014654210977341, -0.006379090645883927, 0.0, 0.0, 0.0, 0.0});
  check_torch(mha.m.in_proj_weight.grad(), {0.002668383214430646, 0.0049209044778065255, 0.006193645141559751,
                                            0.006233195163629902, 0.006417936362595179, 0.011835650746930146,
                                            0.014896818476467913, 0.014991943315888559, 0.0029687763735655607,
                                            0.0037711272464575705, 0.003822624829786338, 0.0031130156562674334,
                                            0.013202368890314705, 0.01677048277646235, 0.016999496351927296,
                                            0.013843811686633314, 0.004324983892567302, 0.008004957564850172,
                                            0.010091097794883656, 0.010168041973070778, 0.0044029492046088374,
                                            0.008149260764567366, 0.010273007278933254, 0.010351338508959446,
                                            0.003780253789003711, 0.006996736153709942, 0.008820127802064953,
                                            0.008887380889789402, 0.00750100059668287, 0.0138833329699916,
                                            0.01750141329096977, 0.017634860799869118, 0.020062193413864345,
                                            0.008119735581753579, -0.005439408660944466, -0.017915535116272585,
                                            0.03196772953657125, 0.010541973814660363, -0.012982749987593814,
                                            -0.03392253302845656, 0.033166041311631075, 0.010686167543680902,
                                            -0.013921384111705695, -0.03575710751192887, 0.02117294294528465,
                                            0.004702424886212343, -0.012704373219642608, -0.027581656991880615});
}

TEST_CASE("attention: MultiheadAttention with weights gives NaN where every key is padded, bool or float mask") {
  // I: PyTorch 2.15.0, m(x, x, x, key_padding_mask=kpm, need_weights=True): softmax of -inf is NaN, and
  // the NaN reaches the shared in_proj_weight's gradient; I2, a float key_padding_mask of -inf, is the same
  Mha mha;
  const Tensor float_padding = tg::masked_fill(tg::zeros({2, 3}, tg::kFloat64), padding(), -kInf);
  for (const Tensor& kpm : {padding(), float_padding}) {
    const std::string kind = tg::dtype_name(kpm.dtype());
    CAPTURE(kind);
    const Mha::Result r = mha.run(kpm, true);
    check_torch(r.out, {-0.31774666609739244, 0.9103325962821844, -0.3673790050460209, 0.7091758629211962, kNaN, kNaN,
                        kNaN, kNaN, 0.6356080929651895, -0.5585466367884233, 0.9231708123627413, 0.2065719568407872,
                        kNaN, kNaN, kNaN, kNaN, -0.3687476346828613, 0.9758301236490778, -0.41643405066322864,
                        0.7186163147163868, kNaN, kNaN, kNaN, kNaN});
    check_torch(r.weights, {0.9262096172807086, 0.07379038271929146, 0.0, 0.04000550399983009, 0.9599944960001698,
                            0.0, 0.9658712471503651, 0.03412875284963489, 0.0, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN,
                            kNaN, kNaN, kNaN});
    check_torch(r.dx, {-0.027251406706992786, -0.021437750904497815, -0.012722596086114875, -0.0022854975718723594,
                       kNaN, kNaN, kNaN, kNaN, -0.04175770354679989, -0.037111950506202, -0.027443269064619795,
                       -0.014060269897336143, kNaN, kNaN, kNaN, kNaN, -0.007956993200255762, -0.008565471927057528,
                       -0.008014654210977336, -0.006379090645883922, kNaN, kNaN, kNaN, kNaN});
    check_torch(mha.m.in_proj_weight.grad(), {kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN,
                                              kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN,
                                              kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN,
                                              kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN});
  }
}

namespace {

/// Whether y's graph has a node named name (an explicit stack over the edges).
bool graph_has(const Tensor& y, const std::string& name) {
  std::vector<const tg::Node*> stack;
  if (y.grad_fn()) stack.push_back(y.grad_fn().get());
  while (!stack.empty()) {
    const tg::Node* n = stack.back();
    stack.pop_back();
    if (name == n->name) return true;
    for (const tg::Edge& e : n->next)
      if (e.fn) stack.push_back(e.fn.get());
  }
  return false;
}

/// got (any device) against want (the CPU) element by element within rtol of want's largest magnitude
/// (at least 1); NaN and infinities must match exactly.
void check_device(const Tensor& got, const Tensor& want, double rtol) {
  const auto x = got.cpu().to(tg::kFloat64).to_vector<double>(), y = want.to(tg::kFloat64).to_vector<double>();
  REQUIRE(x.size() == y.size());
  double biggest = 1;
  for (double v : y)
    if (std::isfinite(v)) biggest = std::max(biggest, std::fabs(v));
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(y[i]) || std::isinf(y[i])) {
      const bool same = std::isnan(y[i]) ? std::isnan(x[i]) : x[i] == y[i];
      CHECK_MESSAGE(same, "element " << i << ": " << x[i] << " vs " << y[i]);
      continue;
    }
    CHECK_MESSAGE(std::fabs(x[i] - y[i]) <= rtol * biggest, "element " << i << ": " << x[i] << " vs " << y[i]);
  }
}

/// The tolerance of the CUDA attention cases of tests/test_cuda.cpp: float64 1e-7, float32 1e-4; float16
/// and bfloat16 4u (both devices accumulate in float32 and round once, and the backward reads the rounded out).
double device_rtol(tg::DType dt) {
  return dt == tg::kFloat64 ? 1e-7 : dt == tg::kFloat32 ? 1e-4 : 4 * testing::unit_roundoff(dt);
}

}  // namespace

TEST_CASE("cuda: the fused attention kernels write 0 rows and +inf log-sum-exp where every key is masked") {
  TG_NEED_CUDA();
  // backend/cuda/attention.cu against the host reference (backend/cpu/attention.cpp) in each floating
  // dtype, on cases A, B and C: fully masked rows exactly 0 in out and dq, lse +inf there
  const tg::Device gpu = tg::Device::cuda(0);
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64, tg::kFloat16, tg::kBFloat16}) {
    for (const FusedSample& sm : fused_samples()) {
      const std::string what = std::string(sm.what) + " " + tg::dtype_name(dt);
      CAPTURE(what);
      const std::vector<RawTensor> g = run_fused(sm, dt, gpu), c = run_fused(sm, dt, tg::Device::cpu());
      check_zero_rows(Tensor(g[0]).cpu(), sm.dead);
      check_zero_rows(Tensor(g[2]).cpu(), sm.dead);
      check_lse(g[1], sm.dead);
      for (std::size_t i : {0, 2, 3, 4}) {
        CAPTURE(i);
        check_device(Tensor(g[i]), Tensor(c[i]), device_rtol(dt));
      }
    }
  }
}

TEST_CASE("cuda: scaled_dot_product_attention gives fully masked rows 0 and zero gradients, fused and composed") {
  TG_NEED_CUDA();
  const tg::Device gpu = tg::Device::cuda(0);
  const std::vector<bool> dead = {false, true, false, false, true, false};
  for (tg::DType dt : {tg::kFloat32, tg::kFloat64, tg::kFloat16, tg::kBFloat16}) {
    const std::string name = tg::dtype_name(dt);
    CAPTURE(name);
    // the CPU composes in float32 for the 16-bit dtypes: the same values, the kernels' accumulator
    const tg::DType ref_dt = dt == tg::kFloat64 ? tg::kFloat64 : tg::kFloat32;
    const Qkv x({2, 3, 4}, {2, 5, 4}, {2, 5, 3});
    auto on = [&](const Tensor& t, tg::Device d, tg::DType to, bool grad) {
      return Tensor(t.data().to(dt).to(to).to(d), grad);
    };
    // fused on CUDA: the bool mask (case A) and the float mask (case B, needing no gradient)
    for (const Tensor& mask : {mask_a(), mask_b()}) {
      const std::string kind = tg::dtype_name(mask.dtype());
      CAPTURE(kind);
      const Tensor qg = on(x.q, gpu, dt, true), kg = on(x.k, gpu, dt, true), vg = on(x.v, gpu, dt, true);
      const Tensor qc = on(x.q, tg::Device::cpu(), ref_dt, true), kc = on(x.k, tg::Device::cpu(), ref_dt, true),
                   vc = on(x.v, tg::Device::cpu(), ref_dt, true);
      const Tensor mg = mask.dtype() == tg::kBool ? mask.to(gpu) : on(mask, gpu, dt, false);
      const Tensor mc = mask.dtype() == tg::kBool ? mask : on(mask, tg::Device::cpu(), ref_dt, false);
      const Tensor yg = tg::scaled_dot_product_attention(qg, kg, vg, mg);
      const Tensor yc = tg::scaled_dot_product_attention(qc, kc, vc, mc);
      CHECK(graph_has(yg, "scaled_dot_product_attention"));   // the fused node
      const Tensor w = wave(yc.shape(), 0.9, 0.1);
      tg::sum(yg * w.to(dt).to(gpu)).backward();
      tg::sum(yc * w.to(dt).to(ref_dt)).backward();
      check_zero_rows(yg.cpu(), dead);
      check_zero_rows(qg.grad().cpu(), dead);
      check_device(yg, yc, device_rtol(dt));
      check_device(qg.grad(), qc.grad(), device_rtol(dt));
      check_device(kg.grad(), kc.grad(), device_rtol(dt));
      check_device(vg.grad(), vc.grad(), device_rtol(dt));
    }
    // composed on CUDA: a float mask that needs its gradient (0 on the fully masked row), and dropout
    const Tensor qg = on(x.q, gpu, dt, true), mg = on(mask_b(), gpu, dt, true);
    const Tensor y = tg::scaled_dot_product_attention(qg, on(x.k, gpu, dt, false), on(x.v, gpu, dt, false), mg);
    CHECK_FALSE(graph_has(y, "scaled_dot_product_attention"));
    tg::sum(y).backward();
    check_zero_rows(y.cpu(), dead);
    check_zero_rows(qg.grad().cpu(), dead);
    check_zero_rows(mg.grad().cpu(), {false, true, false});
    tg::manual_seed(5);
    const Tensor qd = on(x.q, gpu, dt, true);
    const Tensor yd = tg::scaled_dot_product_attention(qd, on(x.k, gpu, dt, false), on(x.v, gpu, dt, false),
                                                       mask_a().to(gpu), 0.3);
    tg::sum(yd).backward();
    check_zero_rows(yd.cpu(), dead);
    check_zero_rows(qd.grad().cpu(), dead);
  }
}

TEST_CASE("cuda: MultiheadAttention without weights gives out_proj's bias where every key is padded, as the CPU") {
  TG_NEED_CUDA();
  // case H of tests/data/attention_masked.py on the GPU (float64, the fused kernels): PyTorch's values
  Mha gpu_mha, cpu_mha;
  gpu_mha.m.to(tg::Device::cuda(0));
  const Mha::Result g = gpu_mha.run(padding().to(tg::Device::cuda(0)), false);
  const Mha::Result c = cpu_mha.run(padding(), false);
  check_device(g.out, c.out, 1e-10);
  check_device(g.dx, c.dx, 1e-10);
  check_device(gpu_mha.m.in_proj_weight.grad(), cpu_mha.m.in_proj_weight.grad(), 1e-10);
  for (int64_t l = 0; l < 3; ++l) check_torch(g.out.select(0, l).select(0, 1).cpu(), {0.1, 0.2, 0.3, 0.4});
}
