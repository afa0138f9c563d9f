// tests/test_rnn.cpp: RNN, LSTM, GRU and their cells (nn/rnn.h) against PyTorch 2.15 in float64, printed
// by tests/data/rnn_reference.py: every parameter set from waves in PyTorch's named_parameters() order, the
// output, h_n, c_n and the gradients of the input and of the first parameter; the parameter names, reprs
// and errors.
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "testing.h"

using tg::Tensor;

namespace {

using testing::vals;

/// m in float64, parameter j (named_parameters() order) element i = 0.3 sin(1.1 i + 0.7 j + 0.1).
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

void check_values(const Tensor& got, const std::vector<double>& want) {
  const std::vector<double> g = got.contiguous().to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == doctest::Approx(want[i]).epsilon(1e-10));
}

struct RnnCheck {
  tg::Shape y_shape;
  std::vector<double> y;
  tg::Shape hn_shape;
  std::vector<double> hn, cn, dx, dw0;
};

/// output, h_n, c_n of the layer on x = vals(n, 0, 1) of `shape`, then the gradients of
/// sum(output * vals(output.numel(), 0.5, 1)) + sum(h_n): all against `want`.
template <class Layer>
void check_layer(Layer& m, const tg::Shape& shape, const RnnCheck& want) {
  Tensor x = vals(tg::numel_of(shape), 0, 1, shape, true);
  Tensor y, hn, cn;
  if constexpr (std::is_same<Layer, tg::nn::LSTM>::value) {
    auto [out, state] = m.forward(x);
    y = out;
    hn = std::get<0>(state);
    cn = std::get<1>(state);
  } else {
    std::tie(y, hn) = m.forward(x);
  }
  CHECK(y.shape() == want.y_shape);
  CHECK(hn.shape() == want.hn_shape);
  check_values(y, want.y);
  check_values(hn, want.hn);
  if (!want.cn.empty()) check_values(cn, want.cn);
  (tg::sum(y * vals(y.numel(), 0.5, 1, y.shape())) + tg::sum(hn)).backward();
  check_values(x.grad(), want.dx);
  check_values(m.named_parameters().front().second.grad(), want.dw0);
}

}  // namespace

TEST_CASE("rnn: LSTM, GRU and RNN against PyTorch, outputs, states and gradients") {
  {
    // lstm 2 layers bidirectional batch_first
    tg::nn::LSTM m(tg::nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
    set_waves(m);
    RnnCheck want{{2, 5, 8}, {-0.16582584207091, -0.11114634701119, -0.06570858551473, 0.03958250501769, 0.10030878034458,
        0.13108704526366, 0.12995533167691, -0.04065643486509, -0.22912686640906, -0.16453169511284,
        -0.11508259319934, 0.0654987647057, 0.09202585721855, 0.13132677265417, 0.12148700373183,
        -0.02006425549883, -0.23716227787492, -0.20006981965243, -0.14685970467614, 0.08394862083557,
        0.08218165203774, 0.1224786305175, 0.12090856497969, -0.02887896960998, -0.25001617806814,
        -0.20600841171172, -0.1767598818494, 0.09318619489876, 0.06547079863888, 0.10730052757738,
        0.11109927499446, -0.02952140487154, -0.24109069709724, -0.22431137898743, -0.18175316875674,
        0.10093725627384, 0.03588394799, 0.07684350361211, 0.0828906235519, -0.03087752699351,
        -0.15703813762923, -0.11749064926319, -0.06351020202631, 0.04151243599242, 0.10060730841176,
        0.12965023046956, 0.13275183026106, -0.04848643621428, -0.22552775098241, -0.16493290764423,
        -0.11682113948679, 0.06694294442399, 0.09325159789738, 0.13034908850014, 0.1223433696232,
        -0.02165423835765, -0.24450782014721, -0.19483535572507, -0.14933402466994, 0.0835440704749,
        0.0819984944015, 0.12330167463647, 0.1189399869949, -0.02207852807271, -0.24831358309055,
        -0.2077731341492, -0.17591196783368, 0.09365615251266, 0.06499040188128, 0.10700366253816,
        0.11227363663304, -0.03300475101473, -0.23944193646037, -0.22469973277474, -0.18246631892374,
        0.10133390057788, 0.03601230644554, 0.07620067643434, 0.08390392098454, -0.03302407708367},
                  {4, 2, 4}, {-0.26629530735533, -0.16932316378923, -0.01330318362367, 0.17802981965379, -0.2508780318618,
        -0.17440258223009, -0.01926878545514, 0.22213652866077, 0.08622765798524, 0.20652588611436,
        -0.08489166461933, -0.21562861312456, 0.07044820279645, 0.23496626428773, -0.12486205709484,
        -0.17492486715609, -0.24109069709724, -0.22431137898743, -0.18175316875674, 0.10093725627384,
        -0.23944193646037, -0.22469973277474, -0.18246631892374, 0.10133390057788, 0.10030878034458,
        0.13108704526366, 0.12995533167691, -0.04065643486509, 0.10060730841176, 0.12965023046956,
        0.13275183026106, -0.04848643621428},
                  {-0.47632337769942, -0.45916868516663, -0.03453450984324, 0.43575135945362, -0.52380047525524,
        -0.38404843168776, -0.0615041331407, 0.46927683973747, 0.25589301097065, 0.42155738890009,
        -0.13803983842428, -0.35410243634196, 0.24448162498778, 0.42675268163263, -0.2317008821234,
        -0.25447792277162, -0.37068855150066, -0.54825166366313, -0.43533438869421, 0.26760574672756,
        -0.36847580899321, -0.54864055432715, -0.43706686120469, 0.26929404314457, 0.30787018691378,
        0.30169466932555, 0.24491978941064, -0.06153733902455, 0.30350693388101, 0.30222189736827,
        0.24898748087034, -0.07332931118031},
                  {0.02207848596631, 0.01069430743424, -0.0123766932193, 0.02667417994749, -0.01222042801222,
        -0.0377604574445, 0.03306009868341, 0.02129134745328, -0.01374475343394, 0.0232610697599,
        0.00168072057975, -0.02173633308755, -0.03636906161508, -0.02611148007766, 0.01268092943926,
        0.07849391561036, 0.05413575425229, -0.02938237929178, 0.04293514602677, 0.00060584973115,
        -0.04238552385034, 0.01153114675589, 0.00571330502972, -0.00634808075189, 0.0336516265345,
        0.02702223140342, -0.0091372678208, -0.07971625391346, -0.049489864634, 0.03481943261774},
                  {0.07229335914302, 0.09158576463408, -0.02329518962641, -0.05865328841974, -0.03920905518953,
        0.03767653575039, 0.0771188145874, 0.04185099758192, -0.05472862892754, -0.12092789962206,
        -0.08791077964526, 0.0738958384649, 0.01477048573313, 0.05458626831936, 0.0144330399357,
        0.05057434515388, 0.01200665226094, -0.04415081432287, -0.02567490495195, -0.00389647116418,
        0.02359030200757, -0.02799575549713, -0.03938647976938, 0.00692408109322, -0.00202514542274,
        -0.05246884067452, -0.02604556141671, -0.2811129883856, -0.28880398879372, 0.12660353097674,
        -0.15120099058707, -0.09491142800901, 0.10042359895608, -0.07577035741076, -0.11616530247772,
        0.01362219273153, 0.07815265472556, 0.15752544306824, 0.00612308827309, 0.08656946555735,
        0.17985378256793, 0.00965188676389, 0.01414978082793, 0.01760880234952, -0.00472911282397,
        -0.15519882584533, -0.21924732330461, 0.03790202151922}};
    check_layer(m, {2, 5, 3}, want);
  }
  {
    // gru
    tg::nn::GRU m(3, 4);
    set_waves(m);
    RnnCheck want{{5, 2, 4}, {-0.06479176018391, -0.242901202627, 0.07731106195959, 0.12106984204, -0.41253053525668,
        0.03287729119096, -0.1917842878329, 0.2768593691704, -0.01134293840415, -0.40658731467886,
        0.20258875368809, -0.02443783204308, -0.40375388527314, -0.04710696101065, -0.20863146177263,
        0.43737205110629, -0.31675476498797, -0.33625222703751, 0.04178373298365, 0.199827649306,
        -0.16542368608918, -0.30680330209466, -0.01962209872727, 0.13022991057311, -0.46887184210023,
        -0.21224462596213, -0.21398504690504, 0.44033827762705, -0.1647499289614, -0.37136397640669,
        0.09092780353731, 0.09633285769865, -0.29259627833567, -0.30386049055865, -0.13216079175946,
        0.3698429715274, -0.44371067217935, -0.25631169756881, -0.15662909556374, 0.34154248520266},
                  {1, 2, 4}, {-0.29259627833567, -0.30386049055865, -0.13216079175946, 0.3698429715274, -0.44371067217935,
        -0.25631169756881, -0.15662909556374, 0.34154248520266},
                  {},
                  {-0.10040038760922, -0.08544924687027, 0.02288149369103, 0.21855790617316, 0.16263278214994,
        -0.07101870777343, -0.34194458239213, -0.15254179467897, 0.20355984954877, 0.0290773999997,
        0.05881494526644, 0.02427906210973, 0.21087949889513, 0.20316940341222, -0.02656579213487,
        -0.12697965680757, -0.13633518272368, 0.00329743661295, 0.29808436226462, 0.2218116343715,
        -0.09685856818866, -0.2231821202026, -0.09116248624871, 0.14048021983874, -0.26860389070412,
        -0.10645641293836, 0.17202745868467, 0.23873968313518, 0.23080906490571, -0.02935148987299},
                  {0.02072534233094, 0.0250436907645, -0.00732702644306, 0.00383272457186, -0.02095983208643,
        -0.01504618563443, -0.0164035660668, -0.02703438734524, 0.00194023217193, 0.08419708196346,
        0.03920028288306, -0.06322502245752, -0.49363011090652, -0.56434617320637, 0.19170623036357,
        0.75978736818872, 0.64717016310759, -0.4135528470846, -0.97946338094434, -0.48944806873086,
        0.71760981082819, 0.76521527297033, 0.42179752698387, -0.53955458420047, -0.40338848699842,
        -0.05547006783154, 0.37371213066109, -0.1018859620104, 0.43446718215309, 0.33432488661396,
        -0.80234299408778, 0.04503228419279, 0.8264351606315, 1.07076710274605, 0.54303848695811,
        -0.78024278442732}};
    check_layer(m, {5, 2, 3}, want);
  }
  {
    // rnn relu 2 layers no bias
    tg::nn::RNN m(tg::nn::RNNOptions(3, 4).num_layers(2).nonlinearity(tg::nn::kReLU).bias(false));
    set_waves(m);
    RnnCheck want{{4, 2, 4}, {0.03780513301733, 0.07042012607175, 0.0, 0.0, 0.0, 0.04717535336365, 0.03084778746745, 0.0,
        0.02362289660185, 0.05502371009555, 0.0, 0.0, 0.05120088879311, 0.06075169172653, 0.0, 0.0, 0.0,
        0.11707977623507, 0.0, 0.0, 0.04394362225506, 0.04886521662627, 0.0, 0.0, 0.04595353721754,
        0.01490593539683, 0.0, 0.01897180021743, 0.0, 0.0967766607295, 0.0, 0.0},
                  {2, 2, 4}, {0.18317394867037, 0.0, 0.0, 0.01111042031895, 0.0, 0.31431857118122, 0.0, 0.24275871573458,
        0.04595353721754, 0.01490593539683, 0.0, 0.01897180021743, 0.0, 0.0967766607295, 0.0, 0.0},
                  {},
                  {0.03595641716156, 0.13323894532273, 0.08491692048089, -0.04788041874462, -0.08903357371696,
        -0.03289014868473, -0.06101710598716, -0.09591205859187, -0.02599356956327, -0.01906010573769,
        0.00983912959057, 0.02798608777866, 0.03012669255741, -0.03492942603121, -0.06181439690017,
        0.05910259427861, 0.20320802548497, 0.12524615012646, -0.04105287573395, 0.23952145135074,
        0.25834487839579, -0.28905818848629, -0.73859255706093, -0.38098724990699},
                  {-1.15723121695889, 0.57205784989353, 1.46328082646293, 0.47137774094434, -1.49711073172292,
        -1.2723284750587, 0.55817990003829, 0.37109885915547, -0.35964287978227, 0.38292787630339,
        -0.51752405864851, -0.65980203525043}};
    check_layer(m, {4, 2, 3}, want);
  }
  {
    // lstm unbatched
    tg::nn::LSTM m(3, 2);
    set_waves(m);
    RnnCheck want{{4, 2}, {0.16307646310093, 0.0228025231524, -0.07244919475982, 0.22815073612564, -0.02543522742561,
        0.12631036946677, 0.04440685986948, 0.12909968800101},
                  {1, 2}, {0.04440685986948, 0.12909968800101},
                  {0.07087980212614, 0.27510586672305},
                  {0.04384318160342, 0.08526996588288, 0.03351306999371, 0.07334366714242, 0.09383916452457,
        0.0117864949899, -0.01584195734992, -0.00910306990301, 0.00758372294778, 0.13356340474038,
        0.21312903712179, 0.05978560446284},
                  {0.04588753714714, 0.10627220736469, 0.01096784482367, 0.02780898885745, 0.06536954264056,
        0.0071635633107, -0.03627143229105, -0.02656996797072, 0.02205656167353, 0.02313499194419,
        0.03206775691692, -0.0059788171204, -0.25481821610051, 1.05144985984408, 0.81734142783207,
        0.22135982161779, 0.40049347600007, -0.00709675021417, 0.0188061179254, 0.08537432457234,
        0.02686894571003, 0.06473829351561, 0.1153585997363, -0.00302171291314}};
    check_layer(m, {4, 3}, want);
  }
}

TEST_CASE("rnn: the cells against PyTorch") {
  const Tensor h = vals(8, 0.1, 0.5, {2, 4});
  {
    tg::nn::LSTMCell cell(tg::nn::LSTMCellOptions(3, 4));
    set_waves(cell);
    Tensor x = vals(6, 0, 1, {2, 3}, true);
    auto [h1, c1] = cell.forward(x, {h, vals(8, -0.2, 0.7, {2, 4})});
    check_values(h1, {-0.16820044679885, -0.01877134931163, 0.06457081217867, -0.10601253988517, -0.27640052696677,
        0.00403682400432, 0.04959609441303, 0.08998680334486});
    check_values(c1, {-0.32138725796647, -0.0374474089002, 0.17332184094543, -0.28903421029923, -0.75810739668577,
        0.00796766812655, 0.14195141599596, 0.18895756422575});
    (tg::sum(h1) + tg::sum(c1) * 2.0).backward();
    check_values(x.grad(), {0.32452492353536, 0.3268042771802, -0.02805061834691, -0.2582590154041, -0.32081932369266,
        -0.03278578640664});
  }
  {
    tg::nn::GRUCell cell(tg::nn::GRUCellOptions(3, 4));
    set_waves(cell);
    Tensor x = vals(6, 0, 1, {2, 3}, true);
    const Tensor h1 = cell.forward(x, h);
    check_values(h1, {0.0360219623459, -0.03042110543555, 0.22573099980571, -0.06999131728436, -0.45315702214921,
        0.2489015604926, 0.05103707620767, 0.29927126914426});
    tg::sum(h1).backward();
    check_values(x.grad(), {-0.09802041166941, -0.01113427785369, 0.08791948117079, 0.18596940617311, 0.15147960759981,
        -0.04854828120843});
  }
  {
    tg::nn::RNNCell cell(tg::nn::RNNCellOptions(3, 4));
    set_waves(cell);
    Tensor x = vals(6, 0, 1, {2, 3}, true);
    const Tensor h1 = cell->forward(x, h);
    check_values(h1, {0.83058204855854, -0.34076913618337, -0.32384218092963, -0.54567422097767, 0.49311289584086,
        0.44703365114151, -0.70179389645387, -0.32009084796379});
    tg::sum(h1).backward();
    check_values(x.grad(), {-0.06436394065331, -0.11386535820657, -0.03893382904116, -0.12352272933848, -0.13880511300396,
        -0.00240019244678});
  }
}

TEST_CASE("rnn: PyTorch's parameter names, reprs, shapes and errors") {
  tg::nn::LSTM lstm(tg::nn::LSTMOptions(10, 20).num_layers(2).batch_first(true).dropout(0.5).bidirectional(true));
  CHECK(lstm.name() == "LSTM(10, 20, num_layers=2, batch_first=True, dropout=0.5, bidirectional=True)");
  std::vector<std::string> names;
  for (const auto& [name, p] : lstm.named_parameters()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                                          "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                                          "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
                                          "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse",
                                          "bias_hh_l1_reverse"});
  CHECK(lstm.named_parameters()[8].second.shape() == tg::Shape{80, 40});   // layer 1 reads both directions
  CHECK(tg::nn::RNN(tg::nn::RNNOptions(10, 20).nonlinearity(tg::nn::kReLU).bias(false)).name() == "RNN(10, 20, bias=False)");
  CHECK(tg::nn::GRU(3, 4).name() == "GRU(3, 4)");
  CHECK(tg::nn::LSTMCell(tg::nn::LSTMCellOptions(3, 4)).name() == "LSTMCell(3, 4)");
  // every parameter in U(-1/sqrt(hidden), 1/sqrt(hidden)), as PyTorch's reset_parameters
  for (const auto& np : lstm.named_parameters()) {
    const std::string& name = np.first;
    CAPTURE(name);
    for (float v : np.second.to_vector<float>()) CHECK(std::fabs(v) <= 1.0f / std::sqrt(20.0f));
  }
  // a cell returning a Tensor is also called as cell(x), with zeros for the state
  tg::nn::GRUCell gcell(tg::nn::GRUCellOptions(10, 20));
  const Tensor xc = tg::randn({3, 10});
  CHECK(tg::equal(gcell(xc), gcell.forward(xc, tg::zeros({3, 20}))));
  // eval: the dropout between layers is off, so two calls agree; shapes of a batch-first call
  lstm.eval();
  const Tensor x = tg::randn({3, 7, 10});
  auto [y, state] = lstm->forward(x);
  CHECK(y.shape() == tg::Shape{3, 7, 40});
  CHECK(std::get<0>(state).shape() == tg::Shape{4, 3, 20});
  CHECK(std::get<1>(state).shape() == tg::Shape{4, 3, 20});
  CHECK(tg::equal(std::get<0>(lstm->forward(x)), y));
  TG_CHECK_THROWS(lstm->forward(tg::randn({3, 7})), tg::ShapeError, "input.size(-1) must be equal to input_size. Expected 10, got 7");
  TG_CHECK_THROWS(lstm->forward(tg::randn({2, 3, 7, 10})), tg::ShapeError, "Expected input to be 2D or 3D, got 4D tensor instead");
  TG_CHECK_THROWS(lstm.forward(x, {tg::zeros({2, 3, 20}), tg::zeros({4, 3, 20})}), tg::ShapeError,
                  "Expected hidden[0] size [4, 3, 20], got [2, 3, 20]");
  TG_CHECK_THROWS(lstm->forward(x.to(tg::kFloat64)), tg::DTypeError, "input must have the type float32, got type float64");
  TG_CHECK_THROWS(tg::nn::LSTM(tg::nn::LSTMOptions(3, 4).proj_size(5)), tg::Error,
                  "proj_size has to be smaller than hidden_size");
  TG_CHECK_THROWS(tg::nn::GRU(tg::nn::GRUOptions(3, 4).dropout(1.5)), tg::Error, "dropout should be a number in range [0, 1]");
  TG_CHECK_THROWS(tg::nn::RNN(0, 4), tg::ShapeError, "input_size and hidden_size must be positive");
  TG_CHECK_THROWS(tg::nn::GRUCell(tg::nn::GRUCellOptions(3, 4)).forward(tg::randn({2, 5})), tg::ShapeError,
                  "input has inconsistent input_size: got 5 expected 3");
  // a clone has the same parameters and output
  lstm.train();
  std::unique_ptr<tg::nn::GRU> copy;
  tg::nn::GRU gru(3, 4);
  copy = gru.clone();
  const Tensor xg = tg::randn({5, 2, 3});
  CHECK(tg::equal(std::get<0>(gru.forward(xg)), std::get<0>(copy->forward(xg))));
}

TEST_CASE("rnn: calling a recurrent layer or cell is its forward, as libtorch's lstm(x)") {
  tg::manual_seed(7);
  tg::nn::LSTM lstm(tg::nn::LSTMOptions(3, 4).num_layers(2));
  tg::nn::GRU gru(3, 4);
  tg::nn::RNN rnn(3, 4);
  tg::nn::LSTMCell cell(tg::nn::LSTMCellOptions(3, 4));
  const Tensor x = vals(30, -0.5, 0.8, {5, 2, 3}).to(tg::kFloat32);
  auto [out, state] = lstm(x);
  auto [out_f, state_f] = lstm->forward(x);
  testing::check_close(out, out_f, 0, 0);
  testing::check_close(std::get<1>(state), std::get<1>(state_f), 0, 0);
  const auto [h_out, h_n] = gru(x, tg::zeros({1, 2, 4}));
  testing::check_close(h_out, std::get<0>(gru->forward(x)), 0, 0);
  testing::check_close(std::get<0>(rnn(x)), std::get<0>(rnn.forward(x)), 0, 0);
  const auto [hc, cc] = cell(tg::select(x, 0, 0));
  testing::check_close(hc, std::get<0>(cell.forward(tg::select(x, 0, 0))), 0, 0);
  CHECK(h_n.shape() == tg::Shape{1, 2, 4});
  CHECK(cc.shape() == tg::Shape{2, 4});
}

namespace {
/// The LSTM cell's pointwise step composed of ops, PyTorch's formulas (the reference fused_lstm_cell
/// is checked against).
std::tuple<Tensor, Tensor> lstm_composed(const Tensor& xg, const Tensor& hg, const Tensor& c) {
  const std::vector<Tensor> g = tg::chunk(xg + hg, 4, 1);
  const Tensor c_new = tg::sigmoid(g[1]) * c + tg::sigmoid(g[0]) * tg::tanh(g[2]);
  return {tg::sigmoid(g[3]) * tg::tanh(c_new), c_new};
}
/// The GRU cell's pointwise step composed of ops.
Tensor gru_composed(const Tensor& xg, const Tensor& hg, const Tensor& h) {
  const std::vector<Tensor> x3 = tg::chunk(xg, 3, 1), h3 = tg::chunk(hg, 3, 1);
  const Tensor r = tg::sigmoid(x3[0] + h3[0]), z = tg::sigmoid(x3[1] + h3[1]);
  const Tensor n = tg::tanh(x3[2] + r * h3[2]);
  return (1.0 - z) * n + z * h;
}
}  // namespace

TEST_CASE("rnn: fused_lstm_cell and fused_gru_cell equal the composed step, values and gradients") {
  Tensor xg = testing::randn64({5, 12}, 31), hg = testing::randn64({5, 12}, 32), c = testing::randn64({5, 3}, 33);
  const Tensor w = testing::randn64({5, 6}, 34, false);
  auto run_lstm = [&](bool fused) {
    for (Tensor* t : {&xg, &hg, &c}) t->zero_grad();
    auto [h1, c1] = fused ? tg::fused_lstm_cell(xg, hg, c) : lstm_composed(xg, hg, c);
    const Tensor out = tg::cat({h1, c1}, 1);
    tg::sum(out * w).backward();
    return std::vector<Tensor>{out, xg.grad(), hg.grad(), c.grad()};
  };
  const std::vector<Tensor> lf = run_lstm(true), lc = run_lstm(false);
  for (std::size_t k = 0; k < lf.size(); ++k) {
    CAPTURE(k);
    CHECK(tg::allclose(lf[k], lc[k], 1e-13, 1e-13));
  }
  Tensor gx = testing::randn64({4, 9}, 35), gh = testing::randn64({4, 9}, 36), h = testing::randn64({4, 3}, 37);
  const Tensor v = testing::randn64({4, 3}, 38, false);
  auto run_gru = [&](bool fused) {
    for (Tensor* t : {&gx, &gh, &h}) t->zero_grad();
    const Tensor out = fused ? tg::fused_gru_cell(gx, gh, h) : gru_composed(gx, gh, h);
    tg::sum(out * v).backward();
    return std::vector<Tensor>{out, gx.grad(), gh.grad(), h.grad()};
  };
  const std::vector<Tensor> gf = run_gru(true), gc = run_gru(false);
  for (std::size_t k = 0; k < gf.size(); ++k) {
    CAPTURE(k);
    CHECK(tg::allclose(gf[k], gc[k], 1e-13, 1e-13));
  }
}

TEST_CASE("rnn: the fused cells promote their operands and name their shapes in errors") {
  // float32 gates with a float64 state compute in float64, and each gradient keeps its input's dtype
  const Tensor xg(tg::randn({2, 8}).data(), true), hg(tg::randn({2, 8}).data(), true);
  const Tensor c = testing::randn64({2, 2}, 41);
  auto [h1, c1] = tg::fused_lstm_cell(xg, hg, c);
  CHECK(h1.dtype() == tg::kFloat64);
  CHECK(c1.dtype() == tg::kFloat64);
  tg::sum(h1 + c1).backward();
  CHECK(xg.grad().dtype() == tg::kFloat32);
  CHECK(c.grad().dtype() == tg::kFloat64);
  // bfloat16 runs through float32 and comes back in bfloat16
  const Tensor b = tg::randn({3, 6}).to(tg::kBFloat16), s = tg::randn({3, 2}).to(tg::kBFloat16);
  const Tensor hb = tg::fused_gru_cell(b, b, s);
  CHECK(hb.dtype() == tg::kBFloat16);
  CHECK(tg::allclose(hb.to(tg::kFloat32), gru_composed(b.to(tg::kFloat32), b.to(tg::kFloat32), s.to(tg::kFloat32)), 1e-2, 1e-2));
  CHECK_THROWS_WITH_AS(tg::fused_lstm_cell(tg::randn({2, 7}), tg::randn({2, 7}), tg::randn({2, 2})),
                       doctest::Contains("lstm_cell: expected gates of shape [2, 8] for a state of shape [2, 2]"),
                       tg::ShapeError);
  CHECK_THROWS_WITH_AS(tg::fused_gru_cell(tg::randn({2, 6}), tg::randn({2, 6}), tg::randn({2})),
                       doctest::Contains("gru_cell: expected a state of shape (N, H)"), tg::ShapeError);
  const Tensor ints = tg::zeros({2, 6}, tg::TensorOptions().dtype(tg::kInt64));
  CHECK_THROWS_WITH_AS(tg::fused_gru_cell(ints, ints, tg::zeros({2, 2}, tg::TensorOptions().dtype(tg::kInt64))),
                       doctest::Contains("fused_gru_cell: expected floating gates and state"), tg::DTypeError);
  CHECK_THROWS_AS(tg::fused_lstm_cell(Tensor(), tg::randn({2, 8}), tg::randn({2, 2})), tg::Error);
}

namespace {

/// While alive, recurrent layers run step by step instead of as one fused op per direction.
struct StepByStep {
  StepByStep() { tg::detail::set_fused_recurrent_layers(false); }
  ~StepByStep() { tg::detail::set_fused_recurrent_layers(true); }
  StepByStep(const StepByStep&) = delete;
  StepByStep& operator=(const StepByStep&) = delete;
};

/// m's output, final states and every gradient (input, h0, c0, each parameter) in float64 on a batch
/// of 4 sequences of up to 5 steps, padded (batch_first) or packed from unsorted lengths.
template <class Layer>
std::vector<Tensor> layer_results(Layer& m, int64_t input_size, int64_t state_rows, int64_t hidden, bool packed) {
  constexpr bool kLstm = std::is_same<Layer, tg::nn::LSTM>::value;
  m.zero_grad();
  Tensor x = testing::randn64({4, 5, input_size}, 61);
  Tensor h0 = testing::randn64({state_rows, 4, hidden}, 62), c0 = testing::randn64({state_rows, 4, hidden}, 63);
  Tensor y, hn, cn;
  auto run = [&](const auto& in, auto forward) {
    if constexpr (kLstm) {
      auto [out, state] = forward(in, std::tuple<Tensor, Tensor>{h0, c0});
      std::tie(hn, cn) = state;
      return out;
    } else {
      auto [out, h] = forward(in, h0);
      hn = h;
      return out;
    }
  };
  if (packed) {
    y = run(tg::nn::utils::rnn::pack_padded_sequence(x, std::vector<int64_t>{2, 5, 3, 2}, true, false),
            [&m](const auto& in, const auto& state) { return m.forward_with_packed_input(in, state); })
            .data();
  } else {
    y = run(x, [&m](const auto& in, const auto& state) { return m.forward(in, state); });
  }
  Tensor loss = tg::sum(y * testing::vals(y.numel(), 0.5, 1, y.shape())) + tg::sum(hn * hn);
  if (kLstm) loss = loss + tg::sum(cn * testing::vals(cn.numel(), -0.3, 0.7, cn.shape()));
  loss.backward();
  std::vector<Tensor> r{y, hn, x.grad(), h0.grad()};
  if (kLstm) r.insert(r.end(), {cn, c0.grad()});
  for (auto& [name, p] : m.named_parameters()) r.push_back(p.grad());
  return r;
}

template <class Layer>
void check_fused_equals_steps(Layer& m, int64_t input_size, int64_t state_rows, int64_t hidden) {
  set_waves(m);
  for (bool packed : {false, true}) {
    CAPTURE(packed);
    const std::vector<Tensor> fused = layer_results(m, input_size, state_rows, hidden, packed);
    std::vector<Tensor> steps;
    {
      StepByStep off;
      steps = layer_results(m, input_size, state_rows, hidden, packed);
    }
    REQUIRE(fused.size() == steps.size());
    for (std::size_t k = 0; k < fused.size(); ++k) {
      CAPTURE(k);
      REQUIRE(fused[k].defined());
      CHECK(fused[k].shape() == steps[k].shape());
      CHECK(tg::allclose(fused[k], steps[k], 1e-12, 1e-12));
    }
  }
}

}  // namespace

TEST_CASE("rnn: the fused LSTM and GRU layers equal the step-by-step loop, padded and packed") {
  tg::nn::LSTM lstm(tg::nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
  check_fused_equals_steps(lstm, 3, 4, 4);
  tg::nn::GRU gru(tg::nn::GRUOptions(3, 5).num_layers(2).bidirectional(true).batch_first(true).bias(false));
  check_fused_equals_steps(gru, 3, 4, 5);
  tg::nn::LSTM lstm1(tg::nn::LSTMOptions(2, 3).batch_first(true).bias(false));
  check_fused_equals_steps(lstm1, 2, 1, 3);
}

TEST_CASE("rnn: the fused layer's time loop allocates nothing per step") {
  using tg::detail::CellKind;
  // tensor allocations of one direction's forward and backward over T steps of 3 rows
  auto allocations = [](CellKind k, int64_t T, bool reverse) {
    const int64_t B = 3, H = 4, G = (k == CellKind::Lstm ? 4 : 3) * H;
    const Tensor xp = testing::randn64({T * B, G}, 71), h0 = testing::randn64({B, H}, 72);
    const Tensor c0 = k == CellKind::Lstm ? testing::randn64({B, H}, 73) : Tensor();
    const Tensor w = testing::randn64({G, H}, 74), b = testing::randn64({G}, 75);
    const std::size_t before = tg::memory::memory_stats().allocations_total;
    {
      auto [y, hn, cn] = tg::detail::recurrent_layer(k, xp, std::vector<int64_t>(static_cast<std::size_t>(T), B), h0,
                                                     c0, w, b, Tensor(), reverse);
      Tensor loss = tg::sum(y) + tg::sum(hn);
      if (cn.defined()) loss = loss + tg::sum(cn);
      (void)tg::autograd::grad({loss}, {xp, h0, w, b});
    }
    return tg::memory::memory_stats().allocations_total - before;
  };
  for (CellKind k : {CellKind::Lstm, CellKind::Gru})
    for (bool reverse : {false, true}) {
      CAPTURE(static_cast<int>(k));
      CAPTURE(reverse);
      CHECK(allocations(k, 24, reverse) == allocations(k, 3, reverse));
      StepByStep off;   // the check can fail: step by step, every step allocates
      CHECK(allocations(k, 24, reverse) > allocations(k, 3, reverse) + 21);
    }
}

TEST_CASE("rnn: the fused layers' gradients and second derivatives, packed, both directions") {
  using tg::detail::CellKind;
  const std::vector<int64_t> bs{3, 3, 2, 1};   // 9 rows
  for (CellKind k : {CellKind::Lstm, CellKind::Gru})
    for (bool reverse : {false, true})
      for (bool bias : {true, false}) {
        CAPTURE(static_cast<int>(k));
        CAPTURE(reverse);
        CAPTURE(bias);
        const bool lstm = k == CellKind::Lstm;
        const int64_t H = 2, G = (lstm ? 4 : 3) * H;
        std::vector<Tensor> in{testing::randn64({9, G}, 81), testing::randn64({3, H}, 82),
                               testing::randn64({G, H}, 83)};
        if (lstm) in.push_back(testing::randn64({3, H}, 84));
        if (bias) in.push_back(testing::randn64({G}, 85));
        auto fn = [&](const std::vector<Tensor>& v) {
          auto [y, hn, cn] = tg::detail::recurrent_layer(k, v[0], bs, v[1], lstm ? v[3] : Tensor(), v[2],
                                                         bias ? v.back() : Tensor(), Tensor(), reverse);
          return lstm ? tg::cat({y, hn, cn}, 0) : tg::cat({y, hn}, 0);
        };
        {   // one fused node, the output rows a view of it (of its h part for an LSTM: narrow of select)
          auto [y, hn, cn] = tg::detail::recurrent_layer(k, in[0], bs, in[1], lstm ? in[3] : Tensor(), in[2],
                                                         bias ? in.back() : Tensor(), Tensor(), reverse);
          REQUIRE(y.grad_fn() != nullptr);
          const tg::Node* node = y.grad_fn()->next[0].fn.get();
          if (lstm) node = node->next[0].fn.get();
          CHECK(std::string(node->name) == (lstm ? "lstm_layer" : "gru_layer"));
        }
        CHECK(tg::autograd::gradcheck(fn, in));
        CHECK(tg::autograd::gradgradcheck(fn, in));
      }
}

TEST_CASE("rnn: an empty batch gives empty outputs and states, forward and backward") {
  tg::nn::LSTM lstm(tg::nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  tg::nn::GRU gru(3, 4);
  const Tensor x(tg::randn({5, 0, 3}).data(), true);
  auto [y, state] = lstm.forward(x);
  CHECK(y.shape() == tg::Shape{5, 0, 8});
  CHECK(std::get<0>(state).shape() == tg::Shape{4, 0, 4});
  CHECK(std::get<1>(state).shape() == tg::Shape{4, 0, 4});
  auto [yg, hg] = gru.forward(x);
  CHECK(yg.shape() == tg::Shape{5, 0, 4});
  CHECK(hg.shape() == tg::Shape{1, 0, 4});
  (tg::sum(y) + tg::sum(yg)).backward();
  CHECK(x.grad().shape() == x.shape());
}
