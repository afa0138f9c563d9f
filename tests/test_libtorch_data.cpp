// tests/test_libtorch_data.cpp: libtorch's data API (data/datasets.h, transforms.h, samplers.h,
// dataloader.h) as a libtorch program spells it: MNIST with Mode on small IDX files written here (and the
// real Fashion-MNIST when installed), .map(Normalize).map(Stack), make_data_loader's default shuffled
// order and its samplers, DataLoaderOptions, user datasets derived from Dataset<Self>, and the errors.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <type_traits>

#include "testing.h"

namespace fs = std::filesystem;
using tg::Tensor;
namespace datasets = tg::data::datasets;
namespace samplers = tg::data::samplers;
namespace transforms = tg::data::transforms;
using tg::data::DataLoaderOptions;
using tg::data::Example;
using tg::data::make_data_loader;

namespace {

/// A fresh folder with MNIST's four plain IDX files: n_train and n_test images whose pixel k of image
/// i is (i + k) % 256, and label i % 10.
struct MnistDir {
  fs::path path;
  MnistDir(uint32_t n_train, uint32_t n_test) {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("tg_libtorch_data_" + std::to_string(std::random_device()()) + "_" + std::to_string(counter++));
    fs::create_directories(path);
    write("train", n_train);
    write("t10k", n_test);
  }
  ~MnistDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  void write(const std::string& prefix, uint32_t n) const {
    auto be32 = [](std::vector<uint8_t>& out, uint32_t v) {
      for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
    };
    std::vector<uint8_t> images, labels;
    be32(images, 0x803);
    be32(images, n);
    be32(images, 28);
    be32(images, 28);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t k = 0; k < 784; ++k) images.push_back(static_cast<uint8_t>((i + k) % 256));
    be32(labels, 0x801);
    be32(labels, n);
    for (uint32_t i = 0; i < n; ++i) labels.push_back(static_cast<uint8_t>(i % 10));
    for (const auto& [name, bytes] : {std::make_pair(prefix + "-images-idx3-ubyte", &images),
                                      std::make_pair(prefix + "-labels-idx1-ubyte", &labels)}) {
      std::ofstream f(path / name, std::ios::binary);
      f.write(reinterpret_cast<const char*>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
      REQUIRE(f.good());
    }
  }
  std::string root() const { return path.string(); }
};

/// A user's dataset as libtorch's custom-dataset example writes it: get(index) and size().
struct Squares : public datasets::Dataset<Squares> {
  explicit Squares(size_t n) : n(n) {}
  Example<> get(size_t index) override {
    ++gets;   // state of this copy: each worker has its own
    const double i = static_cast<double>(index);
    return {tg::full({2}, i), tg::full({}, i * i, tg::TensorOptions().dtype(tg::kInt64))};
  }
  std::optional<size_t> size() const override { return n; }
  size_t n;
  size_t gets = 0;
};

/// A dataset without a size, which make_data_loader cannot build a sampler for.
struct Unsized : public datasets::Dataset<Unsized> {
  Example<> get(size_t) override { return {tg::zeros({1}), tg::zeros({})}; }
  std::optional<size_t> size() const override { return std::nullopt; }
};

/// A dataset whose sample 5 throws ShapeError.
struct Broken : public datasets::Dataset<Broken> {
  Example<> get(size_t index) override {
    if (index == 5) throw tg::ShapeError("Broken: sample 5 is broken");
    return {tg::full({1}, double(index)), tg::full({}, double(index), tg::TensorOptions().dtype(tg::kInt64))};
  }
  std::optional<size_t> size() const override { return 12; }
};

/// A dataset whose samples take 100 ms each, for the timeout.
struct Slow : public datasets::Dataset<Slow> {
  Example<> get(size_t) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return {tg::zeros({1}), tg::zeros({})};
  }
  std::optional<size_t> size() const override { return 4; }
};

/// The targets of one epoch of a loader of stacked Examples, in order.
template <class Loader>
std::vector<int64_t> epoch_targets(Loader& loader) {
  std::vector<int64_t> seen;
  for (auto& batch : loader) {
    const auto t = batch.target.template to_vector<int64_t>();
    seen.insert(seen.end(), t.begin(), t.end());
  }
  return seen;
}

}  // namespace

TEST_CASE("libtorch data: MNIST(root, Mode) reads the IDX files, size().value(), get") {
  MnistDir dir(30, 12);
  datasets::MNIST train(dir.root());   // Mode::kTrain is the default, as libtorch's
  datasets::MNIST test(dir.root(), datasets::MNIST::Mode::kTest);
  CHECK(train.size().value() == 30);
  CHECK(test.size().value() == 12);
  CHECK(train.is_train());
  CHECK_FALSE(test.is_train());
  CHECK(train.images().shape() == tg::Shape{30, 1, 28, 28});
  CHECK(train.targets().shape() == tg::Shape{30});
  Example<> e = test.get(3);
  CHECK(e.data.shape() == tg::Shape{1, 28, 28});
  CHECK(e.data.dtype() == tg::kFloat32);
  CHECK(e.target.dim() == 0);
  CHECK(e.target.dtype() == tg::kInt64);
  CHECK(e.target.item() == 3);
  CHECK(tg::flatten(e.data).to_vector<float>()[10] == doctest::Approx(13.0 / 255));   // torch: pixel / 255
  TG_CHECK_THROWS(test.get(12), tg::IndexError, "MNIST::get: index 12 is out of range");
  TG_CHECK_THROWS(datasets::MNIST(dir.root() + "/absent"), tg::IOError, "absent");
}

TEST_CASE("libtorch data: map(Normalize).map(Stack) and make_data_loader<SequentialSampler>") {
  MnistDir dir(10, 2);
  auto dataset = datasets::MNIST(dir.root())
                     .map(transforms::Normalize<>(0.1307, 0.3081))
                     .map(transforms::Stack<>());
  static_assert(std::is_same<decltype(dataset)::BatchType, Example<>>::value, "Stack makes one Example");
  CHECK(dataset.size().value() == 10);
  auto loader = make_data_loader<samplers::SequentialSampler>(std::move(dataset), DataLoaderOptions().batch_size(4));
  static_assert(std::is_same<decltype(loader), std::unique_ptr<tg::data::StatelessDataLoader<
                                                   decltype(dataset), samplers::SequentialSampler>>>::value,
                "a unique_ptr, as libtorch's");
  std::vector<int64_t> sizes;
  int64_t first = -1;
  for (auto& batch : *loader) {
    sizes.push_back(batch.data.size(0));
    CHECK(batch.data.shape() == tg::Shape{batch.data.size(0), 1, 28, 28});
    CHECK(batch.target.shape() == tg::Shape{batch.data.size(0)});
    if (first < 0) {
      first = batch.target.to_vector<int64_t>()[0];
      // torchvision/libtorch Normalize: (x - mean) / std; image 0's pixel 200 is 200 / 255.
      CHECK(tg::flatten(batch.data).to_vector<float>()[200] == doctest::Approx((200.0 / 255 - 0.1307) / 0.3081));
    }
  }
  CHECK(sizes == std::vector<int64_t>{4, 4, 2});
  CHECK(first == 0);
  CHECK(epoch_targets(*loader) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});   // labels i % 10

  // Per-channel Normalize of a (C, H, W) image, as torchvision's:
  // torch: transforms.Normalize([0.5, 1.0], [0.25, 2.0])(torch.ones(2, 1, 2)) -> [[[2, 2]], [[0, 0]]]
  transforms::Normalize<> per_channel({0.5, 1.0}, {0.25, 2.0});
  CHECK(per_channel.mean.shape() == tg::Shape{2, 1, 1});
  testing::check_values(per_channel(tg::ones({2, 1, 2})), {2, 2, 0, 0});
}

TEST_CASE("libtorch data: make_data_loader shuffles by default (RandomSampler), reproducibly from manual_seed") {
  auto make = [] { return Squares(20).map(transforms::Stack<>()); };
  tg::manual_seed(7);
  auto loader = make_data_loader(make(), 5);   // a bare batch size, libtorch's implicit DataLoaderOptions
  const auto e1 = epoch_targets(*loader), e2 = epoch_targets(*loader);
  std::vector<int64_t> sorted1 = e1;
  std::sort(sorted1.begin(), sorted1.end());
  std::vector<int64_t> squares(20);
  for (int64_t i = 0; i < 20; ++i) squares[i] = i * i;
  CHECK(sorted1 == squares);   // every sample once
  CHECK(e1 != squares);        // not in dataset order
  CHECK(e1 != e2);             // a new order every epoch
  tg::manual_seed(7);
  auto again = make_data_loader(make(), DataLoaderOptions(5));
  CHECK(epoch_targets(*again) == e1);   // the same seed, the same orders
  CHECK(epoch_targets(*again) == e2);
}

TEST_CASE("libtorch data: without Stack a batch is std::vector<Example<>>, with Lambda and TensorLambda transforms") {
  auto dataset = Squares(6).map(transforms::Lambda<Example<>>([](Example<> e) {
    e.data = e.data * 10.0;
    return e;
  }));
  auto loader = make_data_loader<samplers::SequentialSampler>(std::move(dataset), DataLoaderOptions().batch_size(4));
  std::vector<size_t> sizes;
  size_t index = 0;
  for (auto& batch : *loader) {
    static_assert(std::is_same<std::decay_t<decltype(batch)>, std::vector<Example<>>>::value, "libtorch's batch");
    sizes.push_back(batch.size());
    for (const Example<>& e : batch) {
      CHECK(e.data.to_vector<float>()[0] == 10.0f * static_cast<float>(index));
      CHECK(e.target.item() == static_cast<double>(index * index));
      ++index;
    }
  }
  CHECK(sizes == std::vector<size_t>{4, 2});

  auto halved = Squares(3)
                    .map(transforms::TensorLambda<>([](Tensor x) { return x * 0.5; }))
                    .map(transforms::Stack<>());
  auto l2 = make_data_loader<samplers::SequentialSampler>(std::move(halved), 3);
  for (auto& batch : *l2) testing::check_values(batch.data, {0, 0, 0.5, 0.5, 1, 1});
}

TEST_CASE("libtorch data: DataLoaderOptions, drop_last, workers give the same batches in order") {
  DataLoaderOptions o;
  CHECK(o.batch_size() == 1);
  CHECK(o.workers() == 0);
  CHECK_FALSE(o.max_jobs().has_value());
  CHECK(o.enforce_ordering());
  CHECK_FALSE(o.drop_last());
  o.batch_size(64).workers(2).max_jobs(3).drop_last(true).enforce_ordering(false);
  o.timeout(std::chrono::milliseconds(500));
  CHECK(o.batch_size() == 64);
  CHECK(o.workers() == 2);
  CHECK(*o.max_jobs() == 3);
  CHECK(o.timeout()->count() == 500);

  auto seq = make_data_loader<samplers::SequentialSampler>(Squares(23).map(transforms::Stack<>()),
                                                           DataLoaderOptions().batch_size(5).drop_last(true));
  CHECK(epoch_targets(*seq).size() == 20);   // the last 3 samples dropped
  for (size_t workers : {1, 2, 3}) {
    auto par = make_data_loader<samplers::SequentialSampler>(Squares(23).map(transforms::Stack<>()),
                                                             DataLoaderOptions().batch_size(4).workers(workers));
    CHECK(par->options().max_jobs().value() == 2 * workers);   // libtorch's default
    std::vector<int64_t> want(23);
    for (int64_t i = 0; i < 23; ++i) want[i] = i * i;
    CHECK(epoch_targets(*par) == want);
    CHECK(epoch_targets(*par) == want);   // a second epoch
  }
  // A dataset with state: each worker reads its own copy, as libtorch's workers do.
  auto counting = make_data_loader<samplers::SequentialSampler>(Squares(8), DataLoaderOptions(2).workers(2));
  size_t samples = 0;
  for (auto& batch : *counting) samples += batch.size();
  CHECK(samples == 8);
}

TEST_CASE("libtorch data: a break, a new epoch, errors of the dataset, a loader gone before its iterator") {
  auto loader = make_data_loader<samplers::SequentialSampler>(Squares(40).map(transforms::Stack<>()),
                                                              DataLoaderOptions(4).workers(2));
  for (auto& batch : *loader) {
    CHECK(batch.data.size(0) == 4);
    break;
  }
  CHECK(epoch_targets(*loader).size() == 40);   // begin() again after a break starts a whole epoch

  auto broken = make_data_loader<samplers::SequentialSampler>(Broken().map(transforms::Stack<>()),
                                                              DataLoaderOptions(4).workers(2));
  TG_CHECK_THROWS(epoch_targets(*broken), tg::ShapeError, "sample 5 is broken");   // its own type

  TG_CHECK_THROWS(make_data_loader(Squares(4), 0), tg::DataError, "batch_size must be positive");
  TG_CHECK_THROWS(make_data_loader(Unsized(), 2), tg::DataError, "expected the dataset to be sized");

  auto slow = make_data_loader<samplers::SequentialSampler>(
      Slow(), DataLoaderOptions(2).workers(1).timeout(std::chrono::milliseconds(5)));
  TG_CHECK_THROWS(*slow->begin(), tg::DataError, "DataLoader: timeout while waiting for batch 0 (timeout was 5 ms)");

  auto it = tg::data::Iterator<Example<>>();
  {
    auto gone = make_data_loader<samplers::SequentialSampler>(Squares(8).map(transforms::Stack<>()), 2);
    it = gone->begin();
  }
  TG_CHECK_THROWS(*it, tg::DataError, "destroyed while an iterator was in use");
  TG_CHECK_THROWS(++tg::data::Iterator<Example<>>(), tg::IndexError, "++ on the end iterator");
}

TEST_CASE("libtorch data: TensorDataset rows and Stack of TensorExample") {
  Tensor t = tg::arange(12).reshape({6, 2});
  datasets::TensorDataset ds(t);
  CHECK(ds.size().value() == 6);
  tg::data::TensorExample row = ds.get(2);
  testing::check_values(row.data, {4, 5});
  auto loader = make_data_loader<samplers::SequentialSampler>(ds.map(transforms::Stack<tg::data::TensorExample>()), 4);
  std::vector<int64_t> sizes;
  for (auto& batch : *loader) sizes.push_back(Tensor(batch).size(0));
  CHECK(sizes == std::vector<int64_t>{4, 2});
  TG_CHECK_THROWS(datasets::TensorDataset(tg::full({}, 1.0)), tg::ShapeError, "first (sample) dimension");
}

TEST_CASE("libtorch data: samplers (Sequential, Random, DistributedRandom, DistributedSequential)") {
  samplers::SequentialSampler seq(5);
  CHECK(*seq.next(2) == std::vector<size_t>{0, 1});
  CHECK(*seq.next(4) == std::vector<size_t>{2, 3, 4});
  CHECK_FALSE(seq.next(1).has_value());
  seq.reset(3);
  CHECK(*seq.next(10) == std::vector<size_t>{0, 1, 2});

  tg::manual_seed(1);
  samplers::RandomSampler rs(10);
  std::vector<size_t> order = *rs.next(10);
  CHECK_FALSE(rs.next(1).has_value());
  std::vector<size_t> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> iota(10);
  std::iota(iota.begin(), iota.end(), size_t(0));
  CHECK(sorted == iota);
  tg::manual_seed(1);
  samplers::RandomSampler rs2(10);
  CHECK(*rs2.next(10) == order);
  rs2.reset(4);
  CHECK(rs2.next(10)->size() == 4);
  TG_CHECK_THROWS(samplers::RandomSampler(-1), tg::Error, "RandomSampler: n must be non-negative");

  // 10 samples over 3 ranks: ceil(10 / 3) = 4 each, the order padded with its first indices.
  std::multiset<size_t> all;
  std::vector<std::vector<size_t>> per_rank;
  for (size_t rank = 0; rank < 3; ++rank) {
    samplers::DistributedRandomSampler d(10, 3, rank);
    d.set_epoch(2);
    d.reset();
    per_rank.push_back(*d.next(100));
    CHECK(per_rank.back().size() == 4);
    all.insert(per_rank.back().begin(), per_rank.back().end());
  }
  CHECK(std::set<size_t>(all.begin(), all.end()).size() == 10);   // every sample read by some rank
  samplers::DistributedRandomSampler again(10, 3, 0);
  again.set_epoch(2);
  again.reset();
  CHECK(*again.next(100) == per_rank[0]);   // the order depends on the epoch only
  again.set_epoch(3);
  again.reset();
  CHECK(*again.next(100) != per_rank[0]);
  samplers::DistributedRandomSampler no_dup(10, 3, 2, /*allow_duplicates=*/false);
  CHECK(no_dup.next(100)->size() == 3);
  TG_CHECK_THROWS(samplers::DistributedRandomSampler(10, 2, 2), tg::Error, "Invalid rank 2");

  samplers::DistributedSequentialSampler s1(10, 3, 2);
  CHECK(*s1.next(100) == std::vector<size_t>{8, 9, 0, 1});   // rank 2's block, wrapping around
  s1.reset();
  CHECK(*s1.next(2) == std::vector<size_t>{8, 9});

  // A sampler object given to make_data_loader.
  auto loader = make_data_loader(Squares(6).map(transforms::Stack<>()), samplers::DistributedSequentialSampler(6, 2, 1),
                                 DataLoaderOptions(2));
  CHECK(epoch_targets(*loader) == std::vector<int64_t>{9, 16, 25});
}

TEST_CASE("libtorch data: MNIST(root) reads the installed Fashion-MNIST folder") {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::is_directory(root)) {
    MESSAGE("skipped: " << root << " is absent (apt-get install dataset-fashion-mnist)");
    return;
  }
  if (!tg::detail::idx_reads_gzip()) {
    MESSAGE("skipped: this build reads no gzip files (built without zlib)");
    return;
  }
  auto test = datasets::MNIST(root, datasets::MNIST::Mode::kTest);
  CHECK(test.size().value() == 10000);
  auto loader = make_data_loader(
      std::move(test).map(transforms::Normalize<>(0.5, 0.5)).map(transforms::Stack<>()),
      DataLoaderOptions().batch_size(256).workers(2));
  int64_t n = 0;
  std::set<int64_t> labels;
  for (auto& batch : *loader) {
    n += batch.data.size(0);
    CHECK(batch.data.min().item() >= -1.0);
    CHECK(batch.data.max().item() <= 1.0);
    for (int64_t l : batch.target.to_vector<int64_t>()) labels.insert(l);
  }
  CHECK(n == 10000);
  CHECK(labels.size() == 10);
}
