// tests/test_reductions.cpp: logsumexp, var, std, norm, prod, amax, amin, cumsum, cumprod, all and any
// (ops/reduce.cpp, ops/scan.cpp), and flip, roll, repeat, repeat_interleave (ops/shape.cpp), against
// PyTorch 2.15: values and gradients in float64 printed by tests/data/ops_vocab_reference.py (each case:
// x, y = f(x), and the gradient of sum(y * w), w_i = 0.5 + 0.25 (i % 5)); then float32, integer inputs,
// edge cases and errors. gradcheck (tests/test_gradcheck.cpp) and CUDA parity (tests/test_cuda.cpp)
// cover the other shapes and dtypes.
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "testing.h"

using tg::Tensor;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Reference {
  const char* name;
  tg::Shape x_shape;
  std::vector<double> x;
  tg::Shape y_shape;
  std::vector<double> y, dx;   // dx empty: values only
};

// printed by tests/data/ops_vocab_reference.py (PyTorch 2.15, float64)
const std::vector<Reference> kReference = {
    {"logsumexp dim 1", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {3}, {2.762999119100221, 1.6400845724610318, 2.166638326121974}, {0.04258955261087571, 0.009503013694714674, 0.384371287248013, 0.06353614644639664, 0.43702422750308967, 0.21701980877882776, 0.07983712597668843, 0.016118837741394047, 0.04657747023455525, 0.6930602615134319, 0.13992645356002717, 0.1204358146919858}},
    {"logsumexp dims 0 2 keepdim", {2, 2, 3}, {0.5, -0.25, 1.5, 2.0, -1.0, 0.75, -0.3, 0.9, 1.2, 0.1, -2.5, 0.6}, {1, 2, 1}, {2.5974723490568383, 2.5559326964908724}, {0.06138317343869855, 0.028995358033541852, 0.1668567649315642, 0.43015280672591716, 0.021416047197091802, 0.12324084250984951, 0.027581237735438177, 0.09157293415544811, 0.12361053170530904, 0.06433736135673643, 0.004778566040833425, 0.10607437616957183}},
    {"logsumexp large", {3, 4}, {300.0, -1200.0, 2500.0, 700.0, 1100.0, 400.0, -600.0, -2200.0, -900.0, 1800.0, 200.0, 50.0}, {4}, {1100.0, 1800.0, 2500.0, 700.0}, {0.0, 0.0, 1.0, 1.25, 0.5, 0.0, 0.0, 0.0, 0.0, 0.75, 0.0, 6.389939935813945e-283}},
    {"logsumexp inf rows", {3, 3}, {-kInf, -kInf, -kInf, 1000.0, 1000.5, -kInf, 0.5, kInf, 1.0}, {3}, {-kInf, 1000.9740769841801, kInf}, {}},
    {"var dim 1", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {3}, {2.3158333333333334, 2.049166666666667, 1.2539583333333335}, {-0.09166666666666665, -0.5916666666666666, 0.6416666666666666, 0.041666666666666664, 0.7125000000000001, 0.36250000000000004, -0.13749999999999996, -0.9375, -0.7916666666666666, 1.0083333333333333, -0.05833333333333335, -0.15833333333333335}},
    {"var all", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {}, {1.6861174242424242}, {0.010984848484848484, -0.12537878787878787, 0.2109848484848485, 0.04734848484848484, 0.08371212121212122, 0.020075757575757577, -0.07083333333333333, -0.2162878787878788, -0.0981060606060606, 0.14734848484848487, 0.0018939393939393949, -0.011742424242424242}},
    {"var dim 0 correction 0 keepdim", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {1, 4}, {0.6755555555555556, 1.5022222222222223, 1.7266666666666666, 1.5438888888888889}, {0.044444444444444425, -0.7666666666666666, 1.1999999999999997, 0.986111111111111, 0.3111111111111111, 0.033333333333333354, -0.8666666666666667, -1.4305555555555556, -0.3555555555555555, 0.7333333333333334, -0.3333333333333333, 0.4444444444444445}},
    {"var dims 0 2 correction 2", {2, 2, 3}, {0.5, -0.25, 1.5, 2.0, -1.0, 0.75, -0.3, 0.9, 1.2, 0.1, -2.5, 0.6}, {2}, {0.7005208333333334, 3.0455208333333332}, {-0.02291666666666667, -0.21041666666666667, 0.22708333333333333, 0.753125, -0.371875, 0.284375, -0.22291666666666665, 0.07708333333333334, 0.15208333333333332, 0.040624999999999994, -0.934375, 0.22812499999999997}},
    {"var dim 1 unbiased false", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {3}, {1.736875, 1.5368750000000002, 0.9404687500000001}, {-0.06874999999999999, -0.44375, 0.48125, 0.03125, 0.534375, 0.27187500000000003, -0.10312499999999997, -0.703125, -0.59375, 0.75625, -0.04375000000000001, -0.11875000000000002}},
    {"std dim 0", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {4}, {1.0066445913694333, 1.501110699893027, 1.6093476939431082, 1.5217862311551296}, {0.03311330892662608, -0.38304969782773246, 0.5592327894010799, 0.48599686223468064, 0.23179316248638268, 0.01665433468816229, -0.40389034790078, -0.7050377015517199, -0.26490647141300877, 0.3663953631395702, -0.1553424415003, 0.21904083931703922}},
    {"std all", {2, 2, 3}, {0.5, -0.25, 1.5, 2.0, -1.0, 0.75, -0.3, 0.9, 1.2, 0.1, -2.5, 0.6}, {}, {1.2084613307337508}, {0.00783616051987959, -0.020374017351686938, 0.04544973101530162, 0.06425651626301264, -0.04858419522325347, 0.017239553143735098, -0.02225469587645804, 0.022881588718048407, 0.03416565986667501, -0.007209267678289224, -0.10500455096638651, 0.011597517569421793}},
    {"std zero spread", {2, 3}, {2.0, 2.0, 2.0, 1.0, 2.0, 4.0}, {2}, {0.0, 1.5275252316519465}, {0.0, 0.0, 0.0, -0.32732683535398865, -0.08183170883849719, 0.40915854419248576}},
    {"norm all", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {}, {4.351149273467874}, {0.03447365065470386, -0.13789460261881545, 0.2872804221225322, 0.08043851819430901, 0.1264033857339142, 0.04596486753960515, -0.06894730130940772, -0.2528067714678284, -0.1034209519641116, 0.2068419039282232, 0.022982433769802576, 0.005745608442450644}},
    {"norm p1 dim 1", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {3}, {4.7, 4.300000000000001, 2.95}, {0.5, -0.5, 0.5, 0.5, 0.75, 0.75, -0.75, -0.75, -1.0, 1.0, 1.0, 1.0}},
    {"norm inf dim 0", {3, 3}, {1.0, 3.0, 3.0, -2.0, 3.0, 0.5, 1.0, -2.0, -2.0}, {3}, {2.0, 3.0, 3.0}, {0.0, 0.375, 1.0, -0.5, 0.375, 0.0, 0.0, -0.0, -0.0}},
    {"norm -inf all", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {}, {0.05}, {0.0, -0.0, 0.0, 0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 0.0, 0.0, 0.5}},
    {"norm p3 dim 1 keepdim", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {3, 1}, {2.607228405989266, 2.30578255104958, 1.87284790116643}, {0.006619944606980588, -0.10591911371168941, 0.4597183754847631, 0.036041920638005424, 0.17069073049004763, 0.022570675106122002, -0.05078401898877449, -0.6827629219601905, -0.23092981180062927, 0.9237192472025171, 0.011403941323487867, 0.0007127463327179917}},
    {"norm p0.5 dim 1", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {3}, {16.491449150744725, 15.51651469394802, 8.768376618407357}, {3.7071382888000377, -1.8535691444000189, 1.284190373377122, 2.4268916885850333, 2.816838898053464, 4.671198859860754, -3.8140178979097974, -1.9918058863236467, -3.121320343559643, 2.2071067811865475, 6.621320343559643, 13.242640687119286}},
    {"norm p0 dim 1", {3, 4}, {1.5, 0.0, -2.0, 0.5, 0.0, 3.0, 0.0, -1.0, 0.8, -1.25, 2.0, 0.6}, {3}, {3.0, 2.0, 4.0}, {}},
    {"norm zero row", {2, 3}, {0.0, 0.0, 0.0, 3.0, 0.0, -4.0}, {2}, {0.0, 5.0}, {0.0, 0.0, 0.0, 0.44999999999999996, 0.0, -0.6000000000000001}},
    {"norm p3 zero row", {2, 3}, {0.0, 0.0, 0.0, 3.0, 0.0, -4.0}, {2}, {0.0, 4.497941445275415}, {0.0, 0.0, 0.0, 0.33363851379790166, 0.0, -0.5931351356407141}},
    {"prod all", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {}, {0.005927644800000001}, {0.009879408000000003, -0.0024698520000000007, 0.0011855289600000002, 0.004234032000000001, 0.002694384, 0.007409556000000001, -0.004939704000000001, -0.001347192, -0.0032931360000000008, 0.0016465680000000004, 0.014819112000000002, 0.05927644800000001}},
    {"prod dim 1 zeros", {3, 4}, {1.5, 0.0, -2.0, 0.5, 0.0, 3.0, 0.0, -1.0, 0.8, -1.25, 2.0, 0.6}, {3}, {-0.0, -0.0, -1.2}, {-0.0, -0.75, 0.0, -0.0, -0.0, -0.0, -0.0, 0.0, -1.5, 0.96, -0.6, -2.0}},
    {"prod dim 0 keepdim zeros", {3, 4}, {1.5, 0.0, -2.0, 0.5, 0.0, 3.0, 0.0, -1.0, 0.8, -1.25, 2.0, 0.6}, {1, 4}, {0.0, -0.0, -0.0, -0.3}, {0.0, -2.8125, 0.0, -0.75, 0.6000000000000001, -0.0, -4.0, 0.375, 0.0, 0.0, -0.0, -0.625}},
    {"prod all one zero", {5}, {1.5, 0.0, -2.0, 0.5, 3.0}, {}, {-0.0}, {-0.0, -2.25, 0.0, -0.0, -0.0}},
    {"amax dims 0 1 ties", {3, 3}, {1.0, 3.0, 3.0, -2.0, 3.0, 0.5, 1.0, -2.0, -2.0}, {}, {3.0}, {0.0, 0.16666666666666666, 0.16666666666666666, 0.0, 0.16666666666666666, 0.0, 0.0, 0.0, 0.0}},
    {"amax dim 1", {3, 3}, {1.0, 3.0, 3.0, -2.0, 3.0, 0.5, 1.0, -2.0, -2.0}, {3}, {3.0, 3.0, 1.0}, {0.0, 0.25, 0.25, 0.0, 0.75, 0.0, 1.0, 0.0, 0.0}},
    {"amin dim 0 keepdim", {3, 3}, {1.0, 3.0, 3.0, -2.0, 3.0, 0.5, 1.0, -2.0, -2.0}, {1, 3}, {-2.0, -2.0, -2.0}, {0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.75, 1.0}},
    {"amin dims 0 2", {2, 2, 3}, {0.5, -0.25, 1.5, 2.0, -1.0, 0.75, -0.3, 0.9, 1.2, 0.1, -2.5, 0.6}, {2}, {-0.3, -2.5}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.75, 0.0}},
    {"cumsum dim 1", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {3, 4}, {0.3, -0.8999999999999999, 1.6, 2.3, 1.1, 1.5, 0.9, -1.3000000000000003, -0.9, 0.9, 1.1, 1.1500000000000001}, {3.5, 3.0, 2.25, 1.25, 3.75, 2.25, 1.75, 1.0, 4.0, 2.75, 1.25, 0.75}},
    {"cumsum dim 0", {2, 2, 3}, {0.5, -0.25, 1.5, 2.0, -1.0, 0.75, -0.3, 0.9, 1.2, 0.1, -2.5, 0.6}, {2, 2, 3}, {0.5, -0.25, 1.5, 2.0, -1.0, 0.75, 0.2, 0.65, 2.7, 2.1, -3.5, 1.35}, {1.25, 1.75, 2.25, 2.75, 2.0, 1.25, 0.75, 1.0, 1.25, 1.5, 0.5, 0.75}},
    {"cumprod dim 1 zeros", {3, 4}, {1.5, 0.0, -2.0, 0.5, 0.0, 3.0, 0.0, -1.0, 0.8, -1.25, 2.0, 0.6}, {3, 4}, {1.5, 0.0, -0.0, -0.0, 0.0, 0.0, 0.0, -0.0, 0.8, -1.0, -2.0, -1.2}, {0.5, -3.75, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, -2.9999999999999996, 2.7199999999999998, -0.95, -1.5}},
    {"cumprod dim 0", {3, 4}, {0.3, -1.2, 2.5, 0.7, 1.1, 0.4, -0.6, -2.2, -0.9, 1.8, 0.2, 0.05}, {3, 4}, {0.3, -1.2, 2.5, 0.7, 0.33, -0.48, -1.5, -1.54, -0.29700000000000004, -0.864, -0.30000000000000004, -0.07700000000000001}, {0.9124999999999999, 2.0300000000000002, 0.49000000000000005, -1.0325, 0.11249999999999992, -3.84, 2.125, 0.72625, 0.4125000000000001, -0.72, -0.7500000000000001, -1.155}},
    {"cumprod long zeros", {11}, {1.5, -0.5, 2.0, 0.0, 1.25, -3.0, 0.0, 2.0, 0.75, 1.1, -0.9}, {11}, {1.5, -0.75, -1.5, -0.0, -0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.0}, {-0.875, 4.125, -0.75, -1.875, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
    {"all dim 1", {3, 4}, {1.5, 0.0, -2.0, 0.5, 0.0, 3.0, 0.0, -1.0, 0.8, -1.25, 2.0, 0.6}, {3}, {0.0, 0.0, 1.0}, {}},
    {"any dim 0", {2, 3}, {0.0, 0.0, 1.0, 0.0, kNaN, 0.0}, {3}, {0.0, 1.0, 1.0}, {}},
    {"flip dims 0 2", {2, 3, 4}, {-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0, 4.25, 4.5, 4.75}, {2, 3, 4}, {2.75, 2.5, 2.25, 2.0, 3.75, 3.5, 3.25, 3.0, 4.75, 4.5, 4.25, 4.0, -0.25, -0.5, -0.75, -1.0, 0.75, 0.5, 0.25, 0.0, 1.75, 1.5, 1.25, 1.0}, {0.5, 1.5, 1.25, 1.0, 1.5, 1.25, 1.0, 0.75, 1.25, 1.0, 0.75, 0.5, 1.25, 1.0, 0.75, 0.5, 1.0, 0.75, 0.5, 1.5, 0.75, 0.5, 1.5, 1.25}},
    {"roll 1 dim 2", {2, 3, 4}, {-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0, 4.25, 4.5, 4.75}, {2, 3, 4}, {-0.25, -1.0, -0.75, -0.5, 0.75, 0.0, 0.25, 0.5, 1.75, 1.0, 1.25, 1.5, 2.75, 2.0, 2.25, 2.5, 3.75, 3.0, 3.25, 3.5, 4.75, 4.0, 4.25, 4.5}, {0.75, 1.0, 1.25, 0.5, 0.5, 0.75, 1.0, 1.5, 1.5, 0.5, 0.75, 1.25, 1.25, 1.5, 0.5, 1.0, 1.0, 1.25, 1.5, 0.75, 0.75, 1.0, 1.25, 0.5}},
    {"roll -2 5 dims 1 2", {2, 3, 4}, {-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0, 4.25, 4.5, 4.75}, {2, 3, 4}, {1.75, 1.0, 1.25, 1.5, -0.25, -1.0, -0.75, -0.5, 0.75, 0.0, 0.25, 0.5, 4.75, 4.0, 4.25, 4.5, 2.75, 2.0, 2.25, 2.5, 3.75, 3.0, 3.25, 3.5}, {0.5, 0.75, 1.0, 1.5, 1.5, 0.5, 0.75, 1.25, 0.75, 1.0, 1.25, 0.5, 1.0, 1.25, 1.5, 0.75, 0.75, 1.0, 1.25, 0.5, 1.25, 1.5, 0.5, 1.0}},
    {"roll 3 flat", {2, 3, 4}, {-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0, 4.25, 4.5, 4.75}, {2, 3, 4}, {4.25, 4.5, 4.75, -1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 2.75, 3.0, 3.25, 3.5, 3.75, 4.0}, {1.25, 1.5, 0.5, 0.75, 1.0, 1.25, 1.5, 0.5, 0.75, 1.0, 1.25, 1.5, 0.5, 0.75, 1.0, 1.25, 1.5, 0.5, 0.75, 1.0, 1.25, 0.5, 0.75, 1.0}},
    {"repeat 2 1 3", {2, 3}, {0.3, -1.2, 2.5, 1.1, 0.4, -0.6}, {2, 2, 9}, {0.3, -1.2, 2.5, 0.3, -1.2, 2.5, 0.3, -1.2, 2.5, 1.1, 0.4, -0.6, 1.1, 0.4, -0.6, 1.1, 0.4, -0.6, 0.3, -1.2, 2.5, 0.3, -1.2, 2.5, 0.3, -1.2, 2.5, 1.1, 0.4, -0.6, 1.1, 0.4, -0.6, 1.1, 0.4, -0.6}, {6.0, 6.25, 5.25, 5.75, 6.0, 6.25}},
    {"repeat_interleave 2 dim 1", {2, 3}, {0.3, -1.2, 2.5, 1.1, 0.4, -0.6}, {2, 6}, {0.3, 0.3, -1.2, -1.2, 2.5, 2.5, 1.1, 1.1, 0.4, 0.4, -0.6, -0.6}, {1.25, 2.25, 2.0, 1.75, 2.75, 1.25}},
    {"repeat_interleave 3 flat", {2, 2}, {0.3, -1.2, 1.1, 0.4}, {12}, {0.3, 0.3, 0.3, -1.2, -1.2, -1.2, 1.1, 1.1, 1.1, 0.4, 0.4, 0.4}, {2.25, 3.25, 3.0, 2.75}},
};

using Op = std::function<Tensor(const Tensor&)>;

/// The op of each reference case, as the script calls it.
const std::map<std::string, Op>& ops() {
  static const std::map<std::string, Op> m = {
      {"logsumexp dim 1", [](const Tensor& x) { return tg::logsumexp(x, 1); }},
      {"logsumexp dims 0 2 keepdim", [](const Tensor& x) { return tg::logsumexp(x, {0, 2}, true); }},
      {"logsumexp large", [](const Tensor& x) { return tg::logsumexp(x, 0); }},
      {"logsumexp inf rows", [](const Tensor& x) { return tg::logsumexp(x, 1); }},
      {"var dim 1", [](const Tensor& x) { return tg::var(x, 1); }},
      {"var all", [](const Tensor& x) { return tg::var(x); }},
      {"var dim 0 correction 0 keepdim", [](const Tensor& x) { return tg::var(x, {0}, 0, true); }},
      {"var dims 0 2 correction 2", [](const Tensor& x) { return tg::var(x, {0, 2}, 2); }},
      {"var dim 1 unbiased false", [](const Tensor& x) { return tg::var(x, 1, false); }},
      {"std dim 0", [](const Tensor& x) { return tg::std(x, 0); }},
      {"std all", [](const Tensor& x) { return tg::std(x); }},
      {"std zero spread", [](const Tensor& x) { return tg::std(x, 1); }},
      {"norm all", [](const Tensor& x) { return tg::norm(x); }},
      {"norm p1 dim 1", [](const Tensor& x) { return tg::norm(x, 1, 1); }},
      {"norm inf dim 0", [](const Tensor& x) { return tg::norm(x, kInf, 0); }},
      {"norm -inf all", [](const Tensor& x) { return tg::norm(x, -kInf); }},
      {"norm p3 dim 1 keepdim", [](const Tensor& x) { return tg::norm(x, 3, 1, true); }},
      {"norm p0.5 dim 1", [](const Tensor& x) { return tg::norm(x, 0.5, 1); }},
      {"norm p0 dim 1", [](const Tensor& x) { return tg::norm(x, 0, 1); }},
      {"norm zero row", [](const Tensor& x) { return tg::norm(x, 2, 1); }},
      {"norm p3 zero row", [](const Tensor& x) { return tg::norm(x, 3, 1); }},
      {"prod all", [](const Tensor& x) { return tg::prod(x); }},
      {"prod dim 1 zeros", [](const Tensor& x) { return tg::prod(x, 1); }},
      {"prod dim 0 keepdim zeros", [](const Tensor& x) { return tg::prod(x, 0, true); }},
      {"prod all one zero", [](const Tensor& x) { return tg::prod(x); }},
      {"amax dims 0 1 ties", [](const Tensor& x) { return tg::amax(x, {0, 1}); }},
      {"amax dim 1", [](const Tensor& x) { return tg::amax(x, 1); }},
      {"amin dim 0 keepdim", [](const Tensor& x) { return tg::amin(x, 0, true); }},
      {"amin dims 0 2", [](const Tensor& x) { return tg::amin(x, {0, 2}); }},
      {"cumsum dim 1", [](const Tensor& x) { return tg::cumsum(x, 1); }},
      {"cumsum dim 0", [](const Tensor& x) { return tg::cumsum(x, 0); }},
      {"cumprod dim 1 zeros", [](const Tensor& x) { return tg::cumprod(x, 1); }},
      {"cumprod dim 0", [](const Tensor& x) { return tg::cumprod(x, 0); }},
      {"cumprod long zeros", [](const Tensor& x) { return tg::cumprod(x, 0); }},
      {"all dim 1", [](const Tensor& x) { return tg::all(x, 1); }},
      {"any dim 0", [](const Tensor& x) { return tg::any(x, 0); }},
      {"flip dims 0 2", [](const Tensor& x) { return tg::flip(x, {0, 2}); }},
      {"roll 1 dim 2", [](const Tensor& x) { return tg::roll(x, 1, 2); }},
      {"roll -2 5 dims 1 2", [](const Tensor& x) { return tg::roll(x, {-2, 5}, {1, 2}); }},
      {"roll 3 flat", [](const Tensor& x) { return tg::roll(x, 3); }},
      {"repeat 2 1 3", [](const Tensor& x) { return tg::repeat(x, {2, 1, 3}); }},
      {"repeat_interleave 2 dim 1", [](const Tensor& x) { return tg::repeat_interleave(x, 2, 1); }},
      {"repeat_interleave 3 flat", [](const Tensor& x) { return tg::repeat_interleave(x, 3); }},
  };
  return m;
}

/// Compares a and b elementwise to rtol/atol, NaN matching NaN and infinities matching exactly.
void check_matches(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      CHECK_MESSAGE(std::isnan(got[i]), "element " << i << ": " << got[i] << " vs NaN");
    } else if (std::isinf(want[i])) {
      CHECK_MESSAGE(got[i] == want[i], "element " << i << ": " << got[i] << " vs " << want[i]);
    } else {
      CHECK_MESSAGE(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])),
                    "element " << i << ": " << got[i] << " vs " << want[i]);
    }
  }
}

/// w_i = 0.5 + 0.25 (i % 5), the script's gradient weights, of shape s.
Tensor weights(const tg::Shape& s) {
  std::vector<double> w(static_cast<std::size_t>(tg::numel_of(s)));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = 0.5 + 0.25 * static_cast<double>(i % 5);
  return tg::from_vector(w, s);
}

}  // namespace

TEST_CASE("reductions and rearrangements: values and gradients against PyTorch in float64") {
  REQUIRE(kReference.size() == ops().size());
  for (const Reference& r : kReference) {
    CAPTURE(std::string(r.name));
    const auto op = ops().find(r.name);
    REQUIRE(op != ops().end());
    Tensor x(tg::from_vector(r.x, r.x_shape).data(), !r.dx.empty());
    Tensor y = op->second(x);
    CHECK(y.shape() == r.y_shape);
    check_matches(y.to(tg::kFloat64).to_vector<double>(), r.y, 1e-12);
    if (r.dx.empty()) continue;
    tg::sum(y * weights(y.shape())).backward();
    REQUIRE(x.grad().defined());
    check_matches(x.grad().to_vector<double>(), r.dx, 1e-12);
  }
}

TEST_CASE("reductions and rearrangements: float32 matches the float64 reference to float32 rounding") {
  for (const Reference& r : kReference) {
    bool finite = true;
    for (double v : r.x) finite = finite && std::isfinite(v) && std::fabs(v) < 100;
    if (!finite) continue;
    CAPTURE(std::string(r.name));
    Tensor x(tg::from_vector(r.x, r.x_shape).to(tg::kFloat32).data(), !r.dx.empty());
    Tensor y = ops().at(r.name)(x);
    if (y.dtype() != tg::kBool) CHECK(y.dtype() == tg::kFloat32);
    check_matches(y.to(tg::kFloat64).to_vector<double>(), r.y, 1e-5);
    if (r.dx.empty()) continue;
    tg::sum(y * weights(y.shape()).to(tg::kFloat32)).backward();
    check_matches(x.grad().to(tg::kFloat64).to_vector<double>(), r.dx, 1e-5);
  }
}

TEST_CASE("split, chunk and unbind: PyTorch's piece sizes, views of x, gradients to each piece's positions") {
  // sizes printed by tests/data/ops_vocab_reference.py from torch.split / torch.chunk / torch.unbind
  Tensor d = testing::randn64({7, 5}, 3);
  auto sizes = [](const std::vector<Tensor>& parts) {
    std::vector<tg::Shape> s;
    for (const Tensor& p : parts) s.push_back(p.shape());
    return s;
  };
  CHECK(sizes(tg::split(d, 3, 0)) == std::vector<tg::Shape>{{3, 5}, {3, 5}, {1, 5}});
  CHECK(sizes(tg::split(d, {1, 3, 1}, 1)) == std::vector<tg::Shape>{{7, 1}, {7, 3}, {7, 1}});
  CHECK(sizes(tg::split_with_sizes(d, {7}, 0)) == std::vector<tg::Shape>{{7, 5}});
  CHECK(sizes(tg::chunk(d, 4, 0)) == std::vector<tg::Shape>{{2, 5}, {2, 5}, {2, 5}, {1, 5}});
  CHECK(sizes(tg::chunk(d, 3, 1)) == std::vector<tg::Shape>{{7, 2}, {7, 2}, {7, 1}});
  CHECK(sizes(tg::chunk(tg::arange(6), 4)) == std::vector<tg::Shape>{{2}, {2}, {2}});   // 3 pieces, not 4
  CHECK(sizes(tg::unbind(d, 1)) == std::vector<tg::Shape>(5, tg::Shape{7}));
  CHECK(sizes(tg::chunk(tg::zeros({0, 3}), 3)) == std::vector<tg::Shape>(3, tg::Shape{0, 3}));
  CHECK(sizes(tg::split(tg::zeros({0, 3}), 2)) == std::vector<tg::Shape>{{0, 3}});
  CHECK(sizes(tg::split(d, 10, -1)) == std::vector<tg::Shape>{{7, 5}});

  // values: the pieces are x's slices, in order, and share x's storage
  const std::vector<Tensor> parts = tg::split(d, 3, 0);
  CHECK(tg::equal(tg::cat(parts, 0), d));
  CHECK(tg::equal(tg::unbind(d, 1)[2], tg::select(d, 1, 2)));
  {
    tg::NoGradGuard g;
    Tensor base = tg::zeros({4, 3});
    tg::chunk(base, 2, 0)[1].fill_(5.0);   // a write through the view shows in base
    CHECK(base.sum().item() == doctest::Approx(30.0));
  }

  // the gradient of a piece reaches only its positions; unused pieces contribute nothing
  const std::vector<Tensor> cs = tg::chunk(d, 3, 1);   // columns [0, 2), [2, 4), [4, 5)
  tg::sum(cs[1] * 2.0).backward();
  const Tensor expected = tg::cat({tg::zeros({7, 2}, tg::kFloat64), tg::full({7, 2}, 2.0, tg::kFloat64),
                                   tg::zeros({7, 1}, tg::kFloat64)}, 1);
  CHECK(tg::equal(d.grad(), expected));
  Tensor e = testing::randn64({3, 4}, 4);
  const std::vector<Tensor> rows = tg::unbind(e, 0);
  (rows[0] * 1.0 + rows[2] * 3.0).sum().backward();
  CHECK(e.grad().to_vector<double>() == std::vector<double>{1, 1, 1, 1, 0, 0, 0, 0, 3, 3, 3, 3});
}

TEST_CASE("split, chunk and unbind: errors name the op and the shapes") {
  Tensor d = tg::zeros({7, 5});
  TG_CHECK_THROWS(tg::split(d, {2, 2}, 1), tg::ShapeError, "split_with_sizes: expects split_sizes to sum exactly to 5");
  TG_CHECK_THROWS(tg::split(d, {2, 2}, 1), tg::ShapeError, "[7, 5]");
  TG_CHECK_THROWS(tg::split_with_sizes(d, {8, -1}, 0), tg::Error, "non-negative entries");
  TG_CHECK_THROWS(tg::split(d, -1, 0), tg::Error, "split: expects split_size be non-negative");
  TG_CHECK_THROWS(tg::split(d, 0, 0), tg::Error, "split_size can only be 0 if dimension size is 0");
  TG_CHECK_THROWS(tg::split(d, 2, 2), tg::IndexError, "split");
  TG_CHECK_THROWS(tg::chunk(d, 0, 0), tg::Error, "chunk: expects `chunks` to be greater than 0, got: 0");
  TG_CHECK_THROWS(tg::chunk(d, 2, -3), tg::IndexError, "chunk");
  TG_CHECK_THROWS(tg::unbind(tg::zeros({}), 0), tg::IndexError, "unbind");
  TG_CHECK_THROWS(tg::split(tg::zeros({}), 1, 0), tg::IndexError, "split: cannot be applied to a 0-dim tensor");
}

TEST_CASE("reductions: integer and bool inputs as PyTorch") {
  const Tensor i = tg::from_vector(std::vector<int64_t>{3, -2, 0, 5, 1, 4}, {2, 3});
  // prod, cumsum and cumprod of integers are int64 and exact
  CHECK(tg::prod(i).dtype() == tg::kInt64);
  CHECK(tg::prod(i).item<int64_t>() == 0);
  CHECK(tg::prod(i, 1).to_vector<int64_t>() == std::vector<int64_t>{0, 20});
  CHECK(tg::cumsum(i, 1).to_vector<int64_t>() == std::vector<int64_t>{3, 1, 1, 5, 6, 10});
  CHECK(tg::cumprod(i, 0).to_vector<int64_t>() == std::vector<int64_t>{3, -2, 0, 15, -2, 0});
  CHECK(tg::prod(tg::full({2}, 3000000000.0, tg::kInt64)).item<int64_t>() == 9000000000000000000LL);
  CHECK(tg::cumsum(i.to(tg::kInt8), 0).dtype() == tg::kInt64);
  CHECK(tg::cumsum(i > 0.0, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 1, 1, 2, 3});
  // amax / amin keep an integer dtype; all / any give bool
  CHECK(tg::amax(i, 1).to_vector<int64_t>() == std::vector<int64_t>{3, 5});
  CHECK(tg::amin(i).item<int64_t>() == -2);
  CHECK(tg::all(i).dtype() == tg::kBool);
  CHECK_FALSE(tg::all(i).item<bool>());
  CHECK(tg::any(i).item<bool>());
  CHECK(tg::all(i, 0, true).shape() == tg::Shape{1, 3});
  CHECK(tg::all(tg::zeros({0})).item<bool>());    // empty: true
  CHECK_FALSE(tg::any(tg::zeros({0})).item<bool>());
  // logsumexp promotes integers to float32, as PyTorch
  const Tensor l = tg::logsumexp(i, 1);
  CHECK(l.dtype() == tg::kFloat32);
  CHECK(l.to_vector<float>()[0] == doctest::Approx(std::log(std::exp(3.0) + std::exp(-2.0) + 1.0)).epsilon(1e-6));
  // flip, roll, repeat, repeat_interleave keep any dtype
  CHECK(tg::flip(i, 1).to_vector<int64_t>() == std::vector<int64_t>{0, -2, 3, 4, 1, 5});
  CHECK(tg::roll(i, 1, 0).to_vector<int64_t>() == std::vector<int64_t>{5, 1, 4, 3, -2, 0});
  CHECK(tg::repeat(i > 0.0, {1, 2}).shape() == tg::Shape{2, 6});
  CHECK(tg::repeat_interleave(i, 2, 0).to_vector<int64_t>() ==
        std::vector<int64_t>{3, -2, 0, 3, -2, 0, 5, 1, 4, 5, 1, 4});
}

TEST_CASE("reductions: empty inputs, 0-d inputs and the unreduced cases follow PyTorch") {
  const tg::TensorOptions f64 = tg::TensorOptions().dtype(tg::kFloat64);
  // torch.logsumexp(torch.empty(0, 3), 0) is -inf; over all of an empty tensor too
  CHECK(tg::logsumexp(tg::zeros({0, 3}, f64), 0).to_vector<double>() == std::vector<double>(3, -kInf));
  CHECK(tg::logsumexp(tg::zeros({0, 3}, f64), 1).shape() == tg::Shape{0});
  CHECK(tg::prod(tg::zeros({0, 3}, f64), 0).to_vector<double>() == std::vector<double>(3, 1.0));
  CHECK(tg::prod(tg::zeros({0}, f64)).item() == 1.0);
  CHECK(tg::cumsum(tg::zeros({0, 3}, f64), 0).shape() == tg::Shape{0, 3});
  CHECK(std::isnan(tg::var(tg::zeros({0}, f64)).item()));
  CHECK(std::isnan(tg::var(tg::ones({1}, f64)).item()));   // N - 1 = 0: 0 / 0
  CHECK(tg::var(tg::from_vector(std::vector<double>{1, 3}), {0}, 2).item() == kInf);   // N - 2 = 0: 2 / 0
  CHECK(tg::norm(tg::zeros({0}, f64)).item() == 0.0);
  // 0-d x: dim 0 and -1 are the whole tensor
  Tensor s(tg::full({}, 2.5, f64).data(), true);
  CHECK(tg::cumsum(s, 0).shape() == tg::Shape{});
  CHECK(tg::cumprod(s, -1).item() == 2.5);
  CHECK(tg::prod(s, 0).item() == 2.5);
  CHECK(tg::logsumexp(s, 0).item() == doctest::Approx(2.5));
  CHECK(tg::amax(s).item() == 2.5);
  CHECK(tg::flip(s, {}).item() == 2.5);
  CHECK(tg::repeat(s, {2, 3}).shape() == tg::Shape{2, 3});
  CHECK(tg::repeat_interleave(s, 3).shape() == tg::Shape{3});
  tg::sum(tg::cumprod(s, 0) + tg::prod(s) + tg::repeat(s, {4})).backward();
  CHECK(s.grad().item() == doctest::Approx(12.0));   // each term broadcast to the 4 elements of the repeat
  // repeats of 0 and 1: empty results and copies (never views of x)
  Tensor x = testing::randn64({2, 3}, 5);
  CHECK(tg::repeat(x, {0, 2}).shape() == tg::Shape{0, 6});
  CHECK(tg::repeat_interleave(x, 0, 1).shape() == tg::Shape{2, 0});
  Tensor same = tg::repeat(x, {1, 1});
  {
    tg::NoGradGuard g;
    same.fill_(0.0);
  }
  CHECK(tg::abs(x).min().item() > 0);   // x unchanged
  CHECK(tg::equal(tg::roll(x, 3, 1), x));   // a full turn
  CHECK(tg::equal(tg::flip(tg::flip(x, {0, 1}), {1, 0}), x));
}

TEST_CASE("reductions and rearrangements: errors name the op and the shapes") {
  const Tensor x = tg::zeros({2, 3});
  const Tensor i = tg::zeros({2, 3}, tg::kInt64);
  TG_CHECK_THROWS(tg::logsumexp(x, 2), tg::IndexError, "logsumexp");
  TG_CHECK_THROWS(tg::logsumexp(x, {1, -1}), tg::ShapeError, "logsumexp: dim 1 appears multiple times");
  TG_CHECK_THROWS(tg::var(i, 1), tg::DTypeError, "var: std and var only support floating point");
  TG_CHECK_THROWS(tg::std(i), tg::DTypeError, "std");
  TG_CHECK_THROWS(tg::var(x, {0, 0}), tg::ShapeError, "[2, 3]");
  TG_CHECK_THROWS(tg::norm(i), tg::DTypeError, "norm: expected a floating point tensor");
  TG_CHECK_THROWS(tg::norm(x, 2, 5), tg::IndexError, "norm");
  TG_CHECK_THROWS(tg::norm(x, std::nan("")), tg::Error, "norm: p must not be NaN");
  TG_CHECK_THROWS(tg::amax(tg::zeros({0, 3}), 0), tg::IndexError, "amax");
  TG_CHECK_THROWS(tg::amin(x, {0, 2}), tg::IndexError, "amin");
  TG_CHECK_THROWS(tg::prod(x, 2), tg::IndexError, "prod");
  TG_CHECK_THROWS(tg::cumsum(x, -3), tg::IndexError, "cumsum");
  TG_CHECK_THROWS(tg::cumprod(x, 2), tg::IndexError, "cumprod");
  TG_CHECK_THROWS(tg::all(x, 2), tg::IndexError, "all");
  TG_CHECK_THROWS(tg::any(x, -3), tg::IndexError, "any");
  TG_CHECK_THROWS(tg::flip(x, {0, -2}), tg::ShapeError, "flip: dim 0 appears multiple times");
  TG_CHECK_THROWS(tg::roll(x, {1, 2}, {0}), tg::ShapeError, "roll: shifts and dimensions must align");
  TG_CHECK_THROWS(tg::roll(x, {1, 2}), tg::ShapeError, "roll: shifts [1, 2] must have one entry");
  TG_CHECK_THROWS(tg::repeat(x, {2}), tg::ShapeError, "repeat: number of dimensions of repeat dims [2] can not be smaller");
  TG_CHECK_THROWS(tg::repeat(x, {2, -1}), tg::Error, "negative dimension -1");
  TG_CHECK_THROWS(tg::repeat_interleave(x, -1, 0), tg::Error, "repeat_interleave: repeats can not be negative");
  TG_CHECK_THROWS(tg::repeat_interleave(x, 2, 3), tg::IndexError, "repeat_interleave");
}

TEST_CASE("cumsum and cumprod: long lines (the CPU's 64-byte blocks and their tails) against a sequential loop") {
  // lengths around the kernel's blocks (8 doubles or int64s, 16 floats: Note [Vectorized scan]), each
  // forward and, through the backward (the gradient of sum(cumsum(x) * w) is w summed from the end),
  // reverse
  for (int64_t n : {1, 7, 8, 9, 16, 17, 255, 1000, 4097, 70001}) {
    CAPTURE(n);
    Tensor x = testing::randn64({2, n}, 400 + static_cast<uint64_t>(n));
    Tensor w = testing::randn64({2, n}, 500 + static_cast<uint64_t>(n), false);
    const std::vector<double> xv = x.to_vector<double>(), wv = w.to_vector<double>();
    Tensor y = tg::cumsum(x, 1);
    tg::sum(y * w).backward();
    const std::vector<double> yv = y.to_vector<double>(), gv = x.grad().to_vector<double>();
    double worst_y = 0, worst_g = 0;
    for (int64_t r = 0; r < 2; ++r) {
      double acc = 0, back = 0;
      for (int64_t k = 0; k < n; ++k) {
        acc += xv[r * n + k];
        worst_y = std::max(worst_y, std::fabs(yv[r * n + k] - acc));
        back += wv[r * n + (n - 1 - k)];
        worst_g = std::max(worst_g, std::fabs(gv[r * n + (n - 1 - k)] - back));
      }
    }
    // float64 sums of up to 70001 standard normals in another association: far below 1e-9
    CHECK(worst_y < 1e-9);
    CHECK(worst_g < 1e-9);
    // int64 exactly, and products of values near 1 (no overflow over 70001 factors)
    const Tensor i = tg::randint(-1000, 1000, {n});
    const std::vector<int64_t> iv = i.to_vector<int64_t>(), ic = tg::cumsum(i, 0).to_vector<int64_t>();
    int64_t isum = 0;
    bool exact = true;
    for (int64_t k = 0; k < n; ++k) exact = exact && ic[static_cast<std::size_t>(k)] == (isum += iv[static_cast<std::size_t>(k)]);
    CHECK(exact);
    const Tensor near_one = tg::exp(testing::randn64({n}, 600 + static_cast<uint64_t>(n), false) * 1e-3);
    const std::vector<double> pv = near_one.to_vector<double>(), pc = tg::cumprod(near_one, 0).to_vector<double>();
    double prod = 1, worst_p = 0;
    for (int64_t k = 0; k < n; ++k) worst_p = std::max(worst_p, std::fabs(pc[static_cast<std::size_t>(k)] / (prod *= pv[static_cast<std::size_t>(k)]) - 1));
    CHECK(worst_p < 1e-11);
    // float32, forwards and backwards: each output is a sum of its k + 1 terms in at most k / 16 + 6
    // roundings (the running value once per block, the block's tree, the combine), so it is within
    // (k / 16 + 6) 2^-24 of the sum of their magnitudes from the exact sum
    Tensor x32(x.data().to(tg::kFloat32), true);
    const Tensor w32(w.data().to(tg::kFloat32), false);
    Tensor y32 = tg::cumsum(x32, 1);
    tg::sum(y32 * w32).backward();
    const std::vector<double> x32v = x32.to_vector<double>(), w32v = w32.to_vector<double>();
    const std::vector<double> y32v = y32.to_vector<double>(), g32v = x32.grad().to_vector<double>();
    bool within = true;
    for (int64_t r = 0; r < 2; ++r) {
      double acc = 0, mag = 0, back = 0, back_mag = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double bound = double(k / 16 + 6) * 0x1p-24;
        const std::size_t f = static_cast<std::size_t>(r * n + k), b = static_cast<std::size_t>(r * n + (n - 1 - k));
        acc += x32v[f];
        mag += std::fabs(x32v[f]);
        back += w32v[b];
        back_mag += std::fabs(w32v[b]);
        within = within && std::fabs(y32v[f] - acc) <= bound * mag && std::fabs(g32v[b] - back) <= bound * back_mag;
      }
    }
    CHECK(within);
  }
}
