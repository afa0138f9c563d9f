// tests/test_data.cpp: the IDX reader on small files written here (plain and gzip, good and broken),
// MNIST's folder layout, TensorDataset, and DataLoader: coverage, reproducible shuffling, batch shapes,
// errors from the prefetch thread, early exits; PyTorch's dataset utilities (Subset, ConcatDataset,
// random_split, WeightedRandomSampler) over libtorch-style datasets and make_data_loader. Loads the real
// Fashion-MNIST when it is installed.
// TG_TEST_HAVE_ZLIB (tests/CMakeLists.txt) is 1 when the library reads gzip through zlib; without it the
// gzip files below are not written, and the IOError of a gzip file is checked instead.
#if TG_TEST_HAVE_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <type_traits>

#include "testing.h"

namespace fs = std::filesystem;
using tg::Tensor;
using tg::data::Batch;
using tg::data::DataLoader;
using tg::data::LoaderOptions;

namespace {

/// A fresh folder under the system temp dir, removed with everything in it at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path = fs::temp_directory_path() /
           ("tg_data_test_" + std::to_string(rd()) + "_" + std::to_string(counter.fetch_add(1)));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

/// IDX bytes: magic, dims (big-endian uint32), then data.
std::vector<uint8_t> idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  put_be32(out, magic);
  for (uint32_t d : dims) put_be32(out, d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// The file kinds the IDX reader of this build reads: plain, and gzip when built with zlib.
const std::vector<bool> kGzipModes = TG_TEST_HAVE_ZLIB ? std::vector<bool>{false, true} : std::vector<bool>{false};
/// gzip where this build reads it, else plain: for tests about something other than the compression.
constexpr bool kGzip = TG_TEST_HAVE_ZLIB;

void write_file(const std::string& path, const std::vector<uint8_t>& bytes, bool gzip) {
  if (gzip) {
#if TG_TEST_HAVE_ZLIB
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == int(bytes.size()));
    REQUIRE(gzclose(f) == Z_OK);
#else
    FAIL("write_file: gzip needs zlib, which this build lacks (use kGzipModes / kGzip)");
#endif
  } else {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(f.good());
  }
}

std::vector<uint8_t> pattern(std::size_t n, unsigned mul = 37) {
  std::vector<uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * mul + 11) % 256);
  return v;
}

/// Writes an MNIST-layout pair (images n x 28 x 28, labels) for `prefix` ("train" or "t10k") into dir.
void write_mnist_pair(const TempDir& dir, const std::string& prefix, uint32_t n_images, uint32_t n_labels, bool gzip) {
  const std::string ext = gzip ? ".gz" : "";
  write_file(dir.file(prefix + "-images-idx3-ubyte" + ext), idx_bytes(0x803, {n_images, 28, 28}, pattern(n_images * 784)),
             gzip);
  std::vector<uint8_t> labels(n_labels);
  for (uint32_t i = 0; i < n_labels; ++i) labels[i] = static_cast<uint8_t>((i * 7) % 10);
  write_file(dir.file(prefix + "-labels-idx1-ubyte" + ext), idx_bytes(0x801, {n_labels}, labels), gzip);
}

/// n samples: data (n, 2) = [i, -i] float32, targets (n) = i int64, so a batch shows which samples it holds.
tg::data::TensorDataset numbered(int64_t n) {
  std::vector<float> d;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) {
    d.push_back(float(i));
    d.push_back(-float(i));
    t.push_back(i);
  }
  return tg::data::TensorDataset(tg::from_vector(d, {n, 2}), tg::from_vector(t, {n}));
}

/// The sample ids (targets) of every batch of one epoch, checking each batch's data against its targets.
std::vector<int64_t> one_epoch(DataLoader& loader) {
  std::vector<int64_t> seen;
  for (auto& batch : loader) {
    const auto t = batch.target.to_vector<int64_t>();
    const auto d = batch.data.to_vector<float>();
    REQUIRE(d.size() == 2 * t.size());
    for (std::size_t k = 0; k < t.size(); ++k) {
      CHECK(d[2 * k] == float(t[k]));
      CHECK(d[2 * k + 1] == -float(t[k]));
    }
    seen.insert(seen.end(), t.begin(), t.end());
  }
  return seen;
}

/// Samples through get() only (so batches use Dataset's default get_batch); index 13 throws ShapeError.
struct ThrowingDataset : tg::data::Dataset {
  int64_t size() const override { return 40; }
  tg::data::Example<> get(int64_t index) const override {
    if (index == 13) throw tg::ShapeError("ThrowingDataset: sample 13 is broken");
    return {tg::full({3}, double(index)), tg::full({}, double(index), tg::TensorOptions().dtype(tg::kInt64))};
  }
};

/// A dataset whose batches take a while, to catch the loader shutting down while one is being made.
struct SlowDataset : tg::data::Dataset {
  int64_t size() const override { return 1000; }
  tg::data::Example<> get(int64_t index) const override {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return {tg::full({2}, double(index)), tg::full({}, double(index), tg::TensorOptions().dtype(tg::kInt64))};
  }
};

}  // namespace

// ------------------------------------------------------------------------------------------------
// IDX reader

TEST_CASE("data: IDX images and labels round-trip exact values from plain and gzip files") {
  TempDir dir;
  const std::vector<uint8_t> pixels = pattern(3 * 2 * 5);   // 3 images of 2 x 5
  const std::vector<uint8_t> labels{0, 9, 5};
  for (bool gzip : kGzipModes) {
    const std::string img = dir.file(gzip ? "img.gz" : "img"), lab = dir.file(gzip ? "lab.gz" : "lab");
    write_file(img, idx_bytes(0x803, {3, 2, 5}, pixels), gzip);
    write_file(lab, idx_bytes(0x801, {3}, labels), gzip);

    Tensor x = tg::data::read_idx_images(img);
    CHECK(x.shape() == tg::Shape{3, 1, 2, 5});
    CHECK(x.dtype() == tg::kFloat32);
    const auto xv = x.to_vector<float>();
    REQUIRE(xv.size() == pixels.size());
    for (std::size_t i = 0; i < xv.size(); ++i) CHECK(xv[i] == float(pixels[i]) / 255.0f);

    Tensor y = tg::data::read_idx_labels(lab);
    CHECK(y.shape() == tg::Shape{3});
    CHECK(y.dtype() == tg::kInt64);
    CHECK(y.to_vector<int64_t>() == std::vector<int64_t>{0, 9, 5});

    const tg::data::IdxArray raw = tg::data::read_idx(img, 3);
    CHECK(raw.dims == std::vector<int64_t>{3, 2, 5});
    CHECK(raw.bytes == pixels);
  }
  // 0 and 255 map to exactly 0 and 1
  write_file(dir.file("ends"), idx_bytes(0x803, {1, 1, 2}, {0, 255}), false);
  CHECK(tg::data::read_idx_images(dir.file("ends")).to_vector<float>() == std::vector<float>{0.0f, 1.0f});
}

TEST_CASE("data: IDX wrong magic raises DataError with the path and the offset") {
  TempDir dir;
  const std::string labels_as_images = dir.file(kGzip ? "swapped.gz" : "swapped");
  write_file(labels_as_images, idx_bytes(0x801, {3}, {1, 2, 3}), kGzip);
  TG_CHECK_THROWS(tg::data::read_idx_images(labels_as_images), tg::DataError, labels_as_images);
  TG_CHECK_THROWS(tg::data::read_idx_images(labels_as_images), tg::DataError, "bad magic number 0x00000801 at byte offset 0");
  TG_CHECK_THROWS(tg::data::read_idx_images(labels_as_images), tg::DataError, "expected 0x00000803");
  TG_CHECK_THROWS(tg::data::read_idx_images(labels_as_images), tg::DataError, "swapped");

  const std::string junk = dir.file("junk.txt");
  write_file(junk, {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'}, false);
  TG_CHECK_THROWS(tg::data::read_idx_labels(junk), tg::DataError, junk);
  TG_CHECK_THROWS(tg::data::read_idx_labels(junk), tg::DataError, "at byte offset 0");

  const std::string floats = dir.file("floats");
  write_file(floats, idx_bytes(0x00000D01, {1}, {0, 0, 0, 0}), false);
  TG_CHECK_THROWS(tg::data::read_idx_labels(floats), tg::DataError, "element type 0x0d");

  const std::string tiny = dir.file("tiny");
  write_file(tiny, {0, 0}, false);
  TG_CHECK_THROWS(tg::data::read_idx_labels(tiny), tg::DataError, "ends at byte offset 2");
}

TEST_CASE("data: IDX truncated image file raises DataError with the path and the offset") {
  TempDir dir;
  for (bool gzip : kGzipModes) {
    const std::string path = dir.file(gzip ? "short.gz" : "short");
    std::vector<uint8_t> bytes = idx_bytes(0x803, {4, 2, 2}, pattern(16));
    bytes.resize(16 + 9);   // header + two whole images + one byte of the third
    write_file(path, bytes, gzip);
    TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, path);
    TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, "truncated");
    TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError,
                    std::string(gzip ? "byte offset 25 of the decompressed data" : "byte offset 25 but"));
    TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, "promises 32 bytes");
    TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, "record 2 of 4");

    bytes.resize(10);   // inside the dims
    write_file(path, bytes, gzip);
    TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, "ends at byte offset 10");
    TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, "inside dimension 1");
  }
#if TG_TEST_HAVE_ZLIB
  // a gzip stream cut in the middle
  const std::string cut = dir.file("cut.gz");
  write_file(cut, idx_bytes(0x803, {40, 28, 28}, pattern(40 * 784, 97)), true);
  fs::resize_file(cut, fs::file_size(cut) / 2);
  TG_CHECK_THROWS(tg::data::read_idx_images(cut), tg::DataError, cut);
  TG_CHECK_THROWS(tg::data::read_idx_images(cut), tg::DataError, "truncated");
#endif
}

TEST_CASE("data: IDX absurd or lying headers are refused without a large allocation") {
  TempDir dir;
  const std::string huge = dir.file("huge");
  write_file(huge, idx_bytes(0x803, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, {1, 2, 3}), false);
  TG_CHECK_THROWS(tg::data::read_idx_images(huge), tg::DataError, "refuses");
  TG_CHECK_THROWS(tg::data::read_idx_images(huge), tg::DataError, huge);
  TG_CHECK_THROWS(tg::data::read_idx_images(huge), tg::DataError, "at byte offset 8");
  // 4 GiB promised (just under the bound), a few bytes there: memory follows the bytes, not the header
  const std::string liar = dir.file(kGzip ? "liar.gz" : "liar");
  write_file(liar, idx_bytes(0x803, {65536, 256, 256}, pattern(1000)), kGzip);
  TG_CHECK_THROWS(tg::data::read_idx_images(liar), tg::DataError, "record 0 of 65536");
  // more data than the header says
  const std::string extra = dir.file("extra");
  write_file(extra, idx_bytes(0x801, {2}, {1, 2, 3}), false);
  TG_CHECK_THROWS(tg::data::read_idx_labels(extra), tg::DataError, "has data after the 2 records");
  TG_CHECK_THROWS(tg::data::read_idx_labels(extra), tg::DataError, "byte offset 10");
  // an empty but well-formed file is fine
  const std::string empty = dir.file("empty");
  write_file(empty, idx_bytes(0x801, {0}, {}), false);
  CHECK(tg::data::read_idx_labels(empty).shape() == tg::Shape{0});
}

TEST_CASE("data: IDX label out of range raises DataError naming the record") {
  TempDir dir;
  const std::string path = dir.file(kGzip ? "labels.gz" : "labels");
  write_file(path, idx_bytes(0x801, {4}, {1, 2, 10, 3}), kGzip);
  TG_CHECK_THROWS(tg::data::read_idx_labels(path), tg::DataError, "label 10 of record 2 (byte offset 10)");
  TG_CHECK_THROWS(tg::data::read_idx_labels(path), tg::DataError, path);
  TG_CHECK_THROWS(tg::data::read_idx_labels(path), tg::DataError, "out of range for 10 classes");
  CHECK(tg::data::read_idx_labels(path, 11).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 10, 3});
}

TEST_CASE("data: IDX missing file raises IOError with the path") {
  TempDir dir;
  const std::string path = dir.file("no-such-file.gz");
  TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::IOError, path);
  TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::IOError, "cannot open");
  TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::IOError, "No such file or directory");
  TG_CHECK_THROWS(tg::data::read_idx_images(dir.path.string()), tg::IOError, "Is a directory");
}

TEST_CASE("data: IDX without zlib: plain files read alike, a gzip file raises IOError saying what to do") {
  // The stdio reader of a build without zlib (tg::detail::read_idx_plain, in every build), against
  // read_idx; the gzip file is a fixed one, so that no zlib is needed to write it.
  CHECK(tg::detail::idx_reads_gzip() == bool(TG_TEST_HAVE_ZLIB));
  TempDir dir;
  const std::vector<uint8_t> pixels = pattern(4 * 3 * 2);
  const std::string img = dir.file("img");
  write_file(img, idx_bytes(0x803, {4, 3, 2}, pixels), false);
  const tg::data::IdxArray plain = tg::detail::read_idx_plain(img, 3);
  CHECK(plain.dims == std::vector<int64_t>{4, 3, 2});
  CHECK(plain.bytes == pixels);
  CHECK(tg::data::read_idx(img, 3).bytes == pixels);

  // gzip of idx_bytes(0x801, {3}, {1, 2, 3}) (Python's gzip.compress with mtime 0)
  const std::vector<uint8_t> gz{0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x63,
                                0x60, 0xe0, 0x60, 0x64, 0x60, 0x60, 0x60, 0x66, 0x64, 0x62, 0x06,
                                0x00, 0x8b, 0xe5, 0xbd, 0xa4, 0x0b, 0x00, 0x00, 0x00};
  const std::string labels = dir.file("labels.gz");
  write_file(labels, gz, false);
  TG_CHECK_THROWS(tg::detail::read_idx_plain(labels, 1), tg::IOError, labels);
  TG_CHECK_THROWS(tg::detail::read_idx_plain(labels, 1), tg::IOError,
                  "is gzip-compressed, and tensorgrad was built without zlib: gunzip the file or rebuild with zlib1g-dev");
  if (tg::detail::idx_reads_gzip()) {
    CHECK(tg::data::read_idx_labels(labels).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3});
  } else {
    TG_CHECK_THROWS(tg::data::read_idx_labels(labels), tg::IOError, "built without zlib: gunzip the file");
  }

  // the plain reader's errors carry the same path and offsets as read_idx's
  std::vector<uint8_t> cut = idx_bytes(0x803, {4, 3, 2}, pixels);
  cut.resize(16 + 7);
  write_file(img, cut, false);
  TG_CHECK_THROWS(tg::detail::read_idx_plain(img, 3), tg::DataError, "byte offset 23 but its header");
  TG_CHECK_THROWS(tg::detail::read_idx_plain(img, 3), tg::DataError, "record 1 of 4");
  write_file(img, {0x1f}, false);   // one byte: half a gzip magic is a short plain file
  TG_CHECK_THROWS(tg::detail::read_idx_plain(img, 3), tg::DataError, "ends at byte offset 1");
  TG_CHECK_THROWS(tg::detail::read_idx_plain(dir.file("absent"), 3), tg::IOError, "No such file or directory");
  TG_CHECK_THROWS(tg::detail::read_idx_plain(dir.path.string(), 3), tg::IOError, "Is a directory");
}

// ------------------------------------------------------------------------------------------------
// MNIST folder layout

TEST_CASE("data: MNIST reads a folder of gzip or plain files and pairs images with labels") {
  TempDir dir;
  write_mnist_pair(dir, "train", 5, 5, kGzip);
  write_mnist_pair(dir, "t10k", 3, 3, false);   // unzipped names work too
  tg::data::MNIST train(dir.path.string(), tg::data::Split::Train);
  tg::data::FashionMNIST test(dir.path.string(), tg::data::Split::Test);
  CHECK(train.size() == 5);
  CHECK(test.size() == 3);
  CHECK(train.split() == tg::data::Split::Train);
  CHECK(train.data().shape() == tg::Shape{5, 1, 28, 28});
  const tg::data::Example e = test.get(2);
  CHECK(e.data.shape() == tg::Shape{1, 28, 28});
  CHECK(e.target.shape() == tg::Shape{});
  CHECK(e.target.item<int64_t>() == 4);   // (2 * 7) % 10
  CHECK(e.data.to_vector<float>()[0] == float((2 * 784 * 37 + 11) % 256) / 255.0f);
  CHECK(tg::data::FashionMNIST::classes().size() == 10);
  CHECK(tg::data::FashionMNIST::classes()[9] == "Ankle boot");
}

TEST_CASE("data: MNIST images and labels count mismatch raises DataError naming both files") {
  TempDir dir;
  write_mnist_pair(dir, "train", 3, 2, kGzip);
  const std::string root = dir.path.string();
  TG_CHECK_THROWS(tg::data::MNIST(root, tg::data::Split::Train), tg::DataError, "holds 3 images");
  TG_CHECK_THROWS(tg::data::MNIST(root, tg::data::Split::Train), tg::DataError, "holds 2 labels");
  TG_CHECK_THROWS(tg::data::MNIST(root, tg::data::Split::Train), tg::DataError,
                  std::string(kGzip ? "train-labels-idx1-ubyte.gz" : "train-labels-idx1-ubyte'"));
  // the test split's files are absent: IOError naming the file
  TG_CHECK_THROWS(tg::data::MNIST(root, tg::data::Split::Test), tg::IOError, "t10k-images-idx3-ubyte.gz");
}

TEST_CASE("data: FashionMNIST with a missing folder says how to install it") {
  TempDir dir;
  const std::string root = (dir.path / "not-here").string();
  TG_CHECK_THROWS(tg::data::FashionMNIST(root, tg::data::Split::Train), tg::IOError, root);
  TG_CHECK_THROWS(tg::data::FashionMNIST(root, tg::data::Split::Train), tg::IOError, "does not exist");
  TG_CHECK_THROWS(tg::data::FashionMNIST(root, tg::data::Split::Train), tg::IOError,
                  "apt-get install dataset-fashion-mnist");
  TG_CHECK_THROWS(tg::data::MNIST(root, tg::data::Split::Test), tg::IOError, "train-images-idx3-ubyte.gz");
}

// ------------------------------------------------------------------------------------------------
// TensorDataset

TEST_CASE("data: TensorDataset get and get_batch and their errors") {
  auto ds = numbered(7);
  CHECK(ds.size() == 7);
  const tg::data::Example e = ds.get(3);
  CHECK(e.data.to_vector<float>() == std::vector<float>{3, -3});
  CHECK(e.target.item<int64_t>() == 3);
  const Batch b = ds.get_batch({6, 0, 6});
  CHECK(b.data.shape() == tg::Shape{3, 2});
  CHECK(b.data.to_vector<float>() == std::vector<float>{6, -6, 0, 0, 6, -6});
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{6, 0, 6});
  TG_CHECK_THROWS(ds.get(7), tg::IndexError, "index 7 is out of range for a dataset of 7 samples");
  TG_CHECK_THROWS(ds.get_batch({1, -1}), tg::IndexError, "index -1");
  TG_CHECK_THROWS(tg::data::TensorDataset(tg::zeros({5, 3}), tg::zeros({4})), tg::ShapeError,
                  "data has 5 samples but targets has 4");
  TG_CHECK_THROWS(tg::data::TensorDataset(tg::zeros({}), tg::zeros({4})), tg::ShapeError, "first (sample) dimension");
}

TEST_CASE("data: default get_batch stacks get() results") {
  ThrowingDataset ds;
  const Batch b = ds.get_batch({2, 5});
  CHECK(b.data.shape() == tg::Shape{2, 3});
  CHECK(b.data.to_vector<float>() == std::vector<float>{2, 2, 2, 5, 5, 5});
  CHECK(b.target.shape() == tg::Shape{2});
  CHECK(b.target.dtype() == tg::kInt64);
  CHECK(b.target.to_vector<int64_t>() == std::vector<int64_t>{2, 5});
  TG_CHECK_THROWS(ds.get_batch({40}), tg::IndexError, "out of range");
  TG_CHECK_THROWS(ds.get_batch({}), tg::IndexError, "empty");

  struct Ragged : tg::data::Dataset {
    int64_t size() const override { return 4; }
    tg::data::Example<> get(int64_t i) const override { return {tg::zeros({i + 1}), tg::zeros({})}; }
  } ragged;
  TG_CHECK_THROWS(ragged.get_batch({0, 1}), tg::DataError, "sample 1 (position 1 in the batch) has data");
}

// ------------------------------------------------------------------------------------------------
// DataLoader

// A loader keeps a reference to its dataset: a temporary dataset would dangle, so it does not compile.
static_assert(!std::is_constructible<DataLoader, tg::data::TensorDataset&&, LoaderOptions>::value,
              "DataLoader must reject temporary datasets");
static_assert(std::is_constructible<DataLoader, const tg::data::TensorDataset&, LoaderOptions>::value, "");

TEST_CASE("data: DataLoader visits every sample exactly once per epoch") {
  auto ds = numbered(103);
  for (bool shuffle : {false, true}) {
    for (bool drop_last : {false, true}) {
      for (int64_t prefetch : {0, 1, 3}) {
        CAPTURE(shuffle);
        CAPTURE(drop_last);
        CAPTURE(prefetch);
        DataLoader loader(ds, LoaderOptions().batch_size(10).shuffle(shuffle).drop_last(drop_last).prefetch(prefetch).seed(3));
        CHECK(loader.size() == (drop_last ? 10 : 11));
        for (int epoch = 0; epoch < 2; ++epoch) {
          std::vector<int64_t> seen = one_epoch(loader);
          CHECK(int64_t(seen.size()) == (drop_last ? 100 : 103));
          if (!shuffle) {
            for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == int64_t(i));
          }
          std::set<int64_t> unique(seen.begin(), seen.end());
          CHECK(unique.size() == seen.size());
          CHECK(*unique.begin() >= 0);
          CHECK(*unique.rbegin() <= 102);
          if (!drop_last) CHECK(*unique.rbegin() == 102);
        }
      }
    }
  }
  // batch counts at the edges
  auto small = numbered(3);
  CHECK(DataLoader(small, LoaderOptions().batch_size(5)).size() == 1);
  CHECK(DataLoader(small, LoaderOptions().batch_size(5).drop_last(true)).size() == 0);
  DataLoader none(small, LoaderOptions().batch_size(5).drop_last(true));
  CHECK(one_epoch(none).empty());
  TG_CHECK_THROWS(DataLoader(small, LoaderOptions().batch_size(0)), tg::Error, "batch_size must be positive");
  TG_CHECK_THROWS(DataLoader(small, LoaderOptions().prefetch(-1)), tg::Error, "prefetch must be non-negative");
}

TEST_CASE("data: DataLoader shuffle is reproducible from the seed and the epoch") {
  auto ds = numbered(50);
  DataLoader a(ds, LoaderOptions().batch_size(7).shuffle(true).seed(7));
  DataLoader b(ds, LoaderOptions().batch_size(7).shuffle(true).seed(7).prefetch(0));
  DataLoader c(ds, LoaderOptions().batch_size(7).shuffle(true).seed(8));
  const auto a0 = one_epoch(a), a1 = one_epoch(a);
  const auto b0 = one_epoch(b), b1 = one_epoch(b);
  const auto c0 = one_epoch(c);
  CHECK(a0 == b0);
  CHECK(a1 == b1);
  CHECK(a0 != a1);   // each epoch reshuffles
  CHECK(a0 != c0);   // another seed, another order
  CHECK(a0 == a.order(0));
  CHECK(a.epoch() == 2);
  a.set_epoch(0);
  CHECK(one_epoch(a) == a0);
  std::vector<int64_t> sorted = a0;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == DataLoader(ds).order(5));   // no shuffle: the identity, whatever the epoch
}

TEST_CASE("data: DataLoader batch shapes and dtypes") {
  tg::manual_seed(1);
  tg::data::TensorDataset ds(tg::rand({70, 1, 28, 28}), tg::randint(0, 10, {70}));
  DataLoader loader(ds, LoaderOptions().batch_size(32).shuffle(true).pin_memory(true).seed(0));
  REQUIRE(loader.size() == 3);
  std::vector<int64_t> sizes;
  for (auto& batch : loader) {
    const int64_t n = batch.data.size(0);
    sizes.push_back(n);
    CHECK(batch.data.shape() == tg::Shape{n, 1, 28, 28});
    CHECK(batch.data.dtype() == tg::kFloat32);
    CHECK(batch.data.is_contiguous());
    CHECK_FALSE(batch.data.requires_grad());
    CHECK(batch.target.shape() == tg::Shape{n});
    CHECK(batch.target.dtype() == tg::kInt64);
    CHECK(batch.data.device() == tg::Device::cpu());
  }
  CHECK(sizes == std::vector<int64_t>{32, 32, 6});
}

TEST_CASE("data: DataLoader rethrows an error from the prefetch thread in the consumer with its type") {
  ThrowingDataset ds;   // sample 13 throws ShapeError; batches of 4 -> batch 3 fails
  for (int64_t prefetch : {0, 1, 2, 8}) {
    CAPTURE(prefetch);
    DataLoader loader(ds, LoaderOptions().batch_size(4).prefetch(prefetch));
    int good = 0;
    bool thrown = false;
    try {
      for (auto& batch : loader) {
        CHECK(batch.data.shape() == tg::Shape{4, 3});
        ++good;
      }
    } catch (const tg::ShapeError& e) {
      thrown = true;
      CHECK(std::string(e.what()).find("sample 13 is broken") != std::string::npos);
    }
    CHECK(thrown);
    CHECK(good == 3);
    // skipping batches without dereferencing still reports the error, at the increment
    auto it = loader.begin();
    CHECK(it->data.shape() == tg::Shape{4, 3});
    for (int i = 0; i < 3; ++i) ++it;
    TG_CHECK_THROWS(++it, tg::ShapeError, "sample 13");
    CHECK(it == loader.end());   // the epoch ended with the error
  }
}

TEST_CASE("data: DataLoader breaking out early or destroying the loader stops the thread") {
  SlowDataset slow;
  auto fast = numbered(1000);
  for (int round = 0; round < 5; ++round) {
    {
      DataLoader loader(fast, LoaderOptions().batch_size(1).prefetch(2).shuffle(true));
      int n = 0;
      for (auto& batch : loader) {
        CHECK(batch.data.shape() == tg::Shape{1, 2});
        if (++n == 3) break;   // the thread waits on a full queue: the iterator's end must wake and join it
      }
      auto it = loader.begin();   // a second epoch started and dropped right away
      (void)it;
    }
    {
      DataLoader loader(slow, LoaderOptions().batch_size(8).prefetch(3));
      for (auto& batch : loader) {
        (void)batch;
        break;   // the thread is most likely inside get_batch now
      }
    }
    {
      // the loader goes first while an iterator still lives: the iterator then throws, not hang or crash
      DataLoader::Iterator it;
      {
        DataLoader loader(slow, LoaderOptions().batch_size(8).prefetch(2));
        it = loader.begin();
        CHECK((*it).data.shape() == tg::Shape{8, 2});
      }
      ++it;   // leaves the batch already fetched
      TG_CHECK_THROWS(*it, tg::DataError, "destroyed");
      CHECK(it == DataLoader::Iterator());
    }
  }
}

// ------------------------------------------------------------------------------------------------
// The real data set

TEST_CASE("data: Fashion-MNIST from the Debian package") {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::is_directory(root)) {
    MESSAGE("skipped: " << root << " is absent (apt-get install dataset-fashion-mnist)");
    return;
  }
  if (!tg::detail::idx_reads_gzip() && fs::exists(root + "/train-images-idx3-ubyte.gz")) {
    TG_CHECK_THROWS(tg::data::FashionMNIST(root, tg::data::Split::Train), tg::IOError, "built without zlib");
    return;
  }
  tg::data::FashionMNIST train(root, tg::data::Split::Train);
  tg::data::FashionMNIST test(root, tg::data::Split::Test);
  CHECK(train.size() == 60000);
  CHECK(test.size() == 10000);
  for (const tg::data::FashionMNIST* ds : {&train, &test}) {
    CHECK(ds->data().shape() == tg::Shape{ds->size(), 1, 28, 28});
    CHECK(ds->data().dtype() == tg::kFloat32);
    CHECK(ds->targets().shape() == tg::Shape{ds->size()});
    CHECK(ds->targets().dtype() == tg::kInt64);
    CHECK(ds->targets().min().item() == 0);
    CHECK(ds->targets().max().item() == 9);
    CHECK(ds->data().min().item() >= 0.0);
    CHECK(ds->data().max().item() <= 1.0);
    CHECK(ds->data().max().item() > 0.99);
  }
  DataLoader loader(test, LoaderOptions().batch_size(64).shuffle(true).pin_memory(true).seed(0));
  CHECK(loader.size() == 157);
  int64_t batches = 0, samples = 0;
  for (auto& batch : loader) {
    if (batches == 0) {
      CHECK(batch.data.shape() == tg::Shape{64, 1, 28, 28});
      CHECK(batch.target.shape() == tg::Shape{64});
    }
    ++batches;
    samples += batch.data.size(0);
  }
  CHECK(batches == 157);
  CHECK(samples == 10000);
}

TEST_CASE("data: DataLoader over a dataset too large to order raises OutOfMemoryError, epochs never overflow") {
  struct Huge : tg::data::Dataset {
    int64_t size() const override { return int64_t(1) << 40; }   // 2^40 samples: 8 TiB of sample order
    tg::data::Example<> get(int64_t) const override { return {tg::zeros({1}), tg::zeros({})}; }
  } huge;
  DataLoader loader(huge, LoaderOptions().batch_size(4).shuffle(false));
  CHECK(loader.size() == (int64_t(1) << 38));
  TG_CHECK_THROWS(loader.begin(), tg::OutOfMemoryError, "cannot allocate the sample order of 1099511627776 samples");

  struct Small : tg::data::Dataset {
    int64_t size() const override { return 5; }
    tg::data::Example<> get(int64_t i) const override { return {tg::full({1}, double(i)), tg::zeros({})}; }
  } small;
  DataLoader shuffled(small, LoaderOptions().batch_size(5).shuffle(true).seed(3));
  shuffled.set_epoch(std::numeric_limits<int64_t>::max());
  int64_t batches = 0;
  for (int round = 0; round < 2; ++round)   // epoch INT64_MAX, then the counter wraps to 0
    for (const auto& b : shuffled) {
      CHECK(b.data.shape() == tg::Shape{5, 1});
      ++batches;
    }
  CHECK(batches == 2);
}

// ------------------------------------------------------------------------------------------------
// Subset, ConcatDataset, random_split (data/utils.h) and WeightedRandomSampler (data/samplers.h)

namespace {

namespace tgds = tg::data::datasets;
namespace tgsm = tg::data::samplers;

/// A libtorch-style dataset of n samples: sample i is data {first + i} and the 0-d int64 target first + i.
struct Numbers : tgds::Dataset<Numbers> {
  explicit Numbers(size_t n, int64_t first = 0) : n(n), first(first) {}
  tg::data::Example<> get(size_t i) override {
    TG_CHECK(i < n, IndexError, "Numbers: index ", i, " is out of range for ", n, " samples");
    const auto v = first + static_cast<int64_t>(i);
    return {tg::full({1}, double(v)), tg::full({}, double(v), tg::TensorOptions().dtype(tg::kInt64))};
  }
  std::optional<size_t> size() const override { return n; }
  size_t n;
  int64_t first;
};

/// Numbers whose get_batch is its own: targets negated, so that a test sees which one ran.
struct NegatingBatches : tgds::Dataset<NegatingBatches> {
  tg::data::Example<> get(size_t i) override { return Numbers(8).get(i); }
  std::vector<tg::data::Example<>> get_batch(std::vector<size_t> indices) override {
    std::vector<tg::data::Example<>> out;
    for (const size_t i : indices) out.push_back({tg::zeros({1}), tg::full({}, -double(i), tg::TensorOptions().dtype(tg::kInt64))});
    return out;
  }
  std::optional<size_t> size() const override { return 8; }
};

struct NoSize : tgds::Dataset<NoSize> {
  tg::data::Example<> get(size_t) override { return {tg::zeros({1}), tg::zeros({})}; }
  std::optional<size_t> size() const override { return std::nullopt; }
};

/// The targets of get(0 .. size - 1).
template <class D>
std::vector<int64_t> all_targets(D& ds) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < ds.size().value(); ++i) out.push_back(ds.get(i).target.template item<int64_t>());
  return out;
}

/// The targets of one epoch of a make_data_loader loader of stacked Examples, in order.
template <class Loader>
std::vector<int64_t> loader_targets(Loader& loader) {
  std::vector<int64_t> seen;
  for (auto& batch : loader) {
    const auto t = batch.target.template to_vector<int64_t>();
    seen.insert(seen.end(), t.begin(), t.end());
  }
  return seen;
}

std::vector<size_t> split_sizes(const std::vector<tgds::Subset<Numbers>>& parts) {
  std::vector<size_t> sizes;
  for (const auto& p : parts) sizes.push_back(p.size().value());
  return sizes;
}

/// |count - n p| within 5 binomial standard deviations: a chance of about 6e-7 per check to fail.
void check_frequency(int64_t count, int64_t n, double p) {
  const double sigma = std::sqrt(double(n) * p * (1 - p));
  CAPTURE(count);
  CAPTURE(n);
  CAPTURE(p);
  CHECK(std::fabs(double(count) - double(n) * p) <= 5 * sigma);
}

}  // namespace

TEST_CASE("data utils: Subset reads the given indices of its dataset, in order, and refuses others") {
  tgds::Subset<Numbers> s(Numbers(10), {7, 2, 2, 9});
  CHECK(s.size().value() == 4);
  CHECK(all_targets(s) == std::vector<int64_t>{7, 2, 2, 9});
  CHECK(s.get(0).data.to_vector<float>() == std::vector<float>{7});
  CHECK(s.indices() == std::vector<size_t>{7, 2, 2, 9});
  CHECK(s.dataset().n == 10);
  const auto batch = s.get_batch({3, 0});
  REQUIRE(batch.size() == 2);
  CHECK(batch[0].target.item<int64_t>() == 9);
  CHECK(batch[1].target.item<int64_t>() == 7);
  TG_CHECK_THROWS(s.get(4), tg::IndexError, "Subset: index 4 is out of range for a subset of 4 samples");
  TG_CHECK_THROWS(s.get_batch({0, 4}), tg::IndexError, "index 4 is out of range for a subset of 4 samples");
  // an index beyond the dataset is the dataset's own error, when read
  tgds::Subset<Numbers> beyond(Numbers(3), {1, 5});
  CHECK(beyond.get(0).target.item<int64_t>() == 1);
  TG_CHECK_THROWS(beyond.get(1), tg::IndexError, "Numbers: index 5 is out of range");
  // the dataset's get_batch reads the mapped indices (PyTorch's __getitems__)
  tgds::Subset<NegatingBatches> neg(NegatingBatches(), {5, 3});
  const auto nb = neg.get_batch({1, 0});
  CHECK(nb[0].target.item<int64_t>() == -3);
  CHECK(nb[1].target.item<int64_t>() == -5);
  tgds::Subset<Numbers> empty(Numbers(3), {});
  CHECK(empty.size().value() == 0);
  TG_CHECK_THROWS(empty.get(0), tg::IndexError, "index 0 is out of range for a subset of 0 samples");

  // through make_data_loader, in order and shuffled, with worker copies
  for (size_t workers : {0, 2}) {
    CAPTURE(workers);
    auto loader = tg::data::make_data_loader<tgsm::SequentialSampler>(
        s.map(tg::data::transforms::Stack<>()), tg::data::DataLoaderOptions(3).workers(workers));
    CHECK(loader_targets(*loader) == std::vector<int64_t>{7, 2, 2, 9});
  }
  tgds::Subset<Numbers> odd(Numbers(20), {1, 3, 5, 7, 9, 11, 13});
  auto shuffled = tg::data::make_data_loader(odd.map(tg::data::transforms::Stack<>()), 2);
  std::vector<int64_t> seen = loader_targets(*shuffled);
  std::sort(seen.begin(), seen.end());
  CHECK(seen == std::vector<int64_t>{1, 3, 5, 7, 9, 11, 13});
}

TEST_CASE("data utils: ConcatDataset finds each sample by cumulative sizes and refuses what PyTorch refuses") {
  std::vector<Numbers> parts{Numbers(3, 0), Numbers(4, 100), Numbers(0, 500), Numbers(2, 200)};
  tgds::ConcatDataset cat(parts);   // ConcatDataset<Example<>>
  static_assert(std::is_same<decltype(cat), tgds::ConcatDataset<tg::data::Example<>>>::value, "");
  CHECK(cat.size().value() == 9);
  CHECK(cat.cumulative_sizes() == std::vector<size_t>{3, 7, 7, 9});
  CHECK(all_targets(cat) == std::vector<int64_t>{0, 1, 2, 100, 101, 102, 103, 200, 201});
  TG_CHECK_THROWS(cat.get(9), tg::IndexError, "ConcatDataset: index 9 is out of range for a dataset of 9 samples");
  TG_CHECK_THROWS(cat.get(static_cast<size_t>(-1)), tg::IndexError, "out of range for a dataset of 9 samples");
  TG_CHECK_THROWS(tgds::ConcatDataset(std::vector<Numbers>{}), tg::Error, "datasets should not be an empty iterable");
  TG_CHECK_THROWS(tgds::ConcatDataset<>(Numbers(2), NoSize()), tg::DataError, "ConcatDataset: dataset 1 has no size");

  // the binary search against a linear walk, over many datasets of sizes 0 .. 3
  std::vector<Numbers> many;
  std::vector<int64_t> expected;
  for (int k = 0; k < 40; ++k) {
    many.emplace_back(size_t(k % 4), 1000 * k);
    for (int i = 0; i < k % 4; ++i) expected.push_back(1000 * k + i);
  }
  tgds::ConcatDataset big(many);
  CHECK(all_targets(big) == expected);

  // datasets of different types with one example type; copies read their own datasets
  tgds::ConcatDataset mixed(Numbers(2, 10), tgds::Subset<Numbers>(Numbers(5, 20), {4, 0}), cat);
  CHECK(mixed.size().value() == 13);
  CHECK(all_targets(mixed) == std::vector<int64_t>{10, 11, 24, 20, 0, 1, 2, 100, 101, 102, 103, 200, 201});
  tgds::ConcatDataset<> copy = mixed;
  CHECK(all_targets(copy) == all_targets(mixed));
  tgds::ConcatDataset<> assigned(Numbers(1));
  assigned = copy;
  CHECK(assigned.cumulative_sizes() == mixed.cumulative_sizes());

  // through make_data_loader: every sample once per epoch, with workers reading copies
  auto loader = tg::data::make_data_loader(mixed.map(tg::data::transforms::Stack<>()),
                                           tg::data::DataLoaderOptions(4).workers(2));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<int64_t> seen = loader_targets(*loader);
    std::sort(seen.begin(), seen.end());
    CHECK(seen == std::vector<int64_t>{0, 1, 2, 10, 11, 20, 24, 100, 101, 102, 103, 200, 201});
  }
}

TEST_CASE("data utils: random_split sizes from counts and from fractions, as PyTorch 2.x") {
  using Sizes = std::vector<size_t>;
  // the fraction cases' sizes are PyTorch 2.x's (torch.utils.data.random_split)
  CHECK(split_sizes(tgds::random_split(Numbers(10), {0.3, 0.3, 0.4})) == Sizes{3, 3, 4});
  CHECK(split_sizes(tgds::random_split(Numbers(11), {0.5, 0.5})) == Sizes{6, 5});
  CHECK(split_sizes(tgds::random_split(Numbers(10), std::vector<double>(10, 0.1))) == Sizes(10, 1));
  CHECK(split_sizes(tgds::random_split(Numbers(7), {0.25, 0.25, 0.25, 0.25})) == Sizes{2, 2, 2, 1});
  CHECK(split_sizes(tgds::random_split(Numbers(3), {0.5, 0.5, 0.0})) == Sizes{2, 1, 0});
  CHECK(split_sizes(tgds::random_split(Numbers(10), {3, 7})) == Sizes{3, 7});
  CHECK(split_sizes(tgds::random_split(Numbers(10), std::vector<size_t>{0, 10, 0})) == Sizes{0, 10, 0});
  CHECK(split_sizes(tgds::random_split(Numbers(0), std::vector<int64_t>{0})) == Sizes{0});
  CHECK(tgds::random_split(Numbers(0), std::vector<int>{}).empty());

  const char* mismatch = "Sum of input lengths does not equal the length of the input dataset!";
  TG_CHECK_THROWS(tgds::random_split(Numbers(10), {0.5, 0.6}), tg::Error, mismatch);
  TG_CHECK_THROWS(tgds::random_split(Numbers(10), {0.5, 0.4}), tg::Error, mismatch);
  TG_CHECK_THROWS(tgds::random_split(Numbers(10), std::vector<double>{}), tg::Error, mismatch);
  TG_CHECK_THROWS(tgds::random_split(Numbers(10), {3, 3}), tg::Error, mismatch);
  TG_CHECK_THROWS(tgds::random_split(Numbers(10), {3, 3, 5}), tg::Error, mismatch);
  TG_CHECK_THROWS(tgds::random_split(Numbers(10), std::vector<uint64_t>{~uint64_t(0), 10}), tg::Error, mismatch);
  TG_CHECK_THROWS(tgds::random_split(Numbers(10), {1.5, -0.5}), tg::Error, "Fraction at index 0 is not between 0 and 1");
  TG_CHECK_THROWS(tgds::random_split(Numbers(10), {-1, 11}), tg::Error, "length at index 0 is negative (-1)");
  TG_CHECK_THROWS(tgds::random_split(NoSize(), {0.5, 0.5}), tg::DataError, "random_split: the dataset has no size");
}

TEST_CASE("data utils: random_split is a disjoint cover of the dataset, reproducible from manual_seed or a seed") {
  auto indices_of = [](const std::vector<tgds::Subset<Numbers>>& parts) {
    std::vector<std::vector<size_t>> out;
    for (const auto& p : parts) out.push_back(p.indices());
    return out;
  };
  tg::manual_seed(5);
  auto parts = tgds::random_split(Numbers(50), {20, 20, 10});
  std::vector<size_t> all;
  for (auto& p : parts) {
    all.insert(all.end(), p.indices().begin(), p.indices().end());
    std::vector<int64_t> expected(p.indices().begin(), p.indices().end());
    CHECK(all_targets(p) == expected);   // each subset reads its dataset's samples at its indices
  }
  std::sort(all.begin(), all.end());
  std::vector<size_t> iota(50);
  std::iota(iota.begin(), iota.end(), size_t(0));
  CHECK(all == iota);
  CHECK(indices_of(parts)[0] != std::vector<size_t>(iota.begin(), iota.begin() + 20));   // shuffled

  tg::manual_seed(5);
  CHECK(indices_of(tgds::random_split(Numbers(50), {20, 20, 10})) == indices_of(parts));
  // the same permutation cut into other lengths
  tg::manual_seed(5);
  auto halves = tgds::random_split(Numbers(50), {0.5, 0.5});
  std::vector<size_t> joined = halves[0].indices();
  joined.insert(joined.end(), halves[1].indices().begin(), halves[1].indices().end());
  std::vector<size_t> joined_parts = parts[0].indices();
  for (size_t k = 1; k < 3; ++k) joined_parts.insert(joined_parts.end(), parts[k].indices().begin(), parts[k].indices().end());
  CHECK(joined == joined_parts);
  tg::manual_seed(6);
  CHECK(indices_of(tgds::random_split(Numbers(50), {20, 20, 10})) != indices_of(parts));

  // an explicit seed (PyTorch's generator) ignores the stream
  tg::manual_seed(1);
  const auto a = indices_of(tgds::random_split(Numbers(50), {25, 25}, 42));
  tg::manual_seed(2);
  CHECK(indices_of(tgds::random_split(Numbers(50), {25, 25}, 42)) == a);
  CHECK(indices_of(tgds::random_split(Numbers(50), {25, 25}, 43)) != a);

  // a split part through make_data_loader
  auto loader = tg::data::make_data_loader<tgsm::SequentialSampler>(parts[2].map(tg::data::transforms::Stack<>()), 4);
  const std::vector<int64_t> expected(parts[2].indices().begin(), parts[2].indices().end());
  CHECK(loader_targets(*loader) == expected);
}

TEST_CASE("data utils: WeightedRandomSampler draws by weight, never a zero weight, without repeats when asked") {
  // with replacement: frequencies proportional to the weights, zero weights never drawn
  tg::manual_seed(11);
  const std::vector<double> w{1, 0, 3, 0, 6};
  const int64_t n = 100000;
  tgsm::WeightedRandomSampler sampler(w, n);
  CHECK(sampler.num_samples() == n);
  CHECK(sampler.replacement());
  CHECK(sampler.weights().dtype() == tg::kFloat64);
  std::vector<size_t> pass;
  std::vector<size_t> sizes;
  while (auto b = sampler.next(30000)) {
    sizes.push_back(b->size());
    pass.insert(pass.end(), b->begin(), b->end());
  }
  CHECK(sizes == std::vector<size_t>{30000, 30000, 30000, 10000});
  CHECK(sampler.index() == size_t(n));
  std::vector<int64_t> counts(5, 0);
  for (const size_t i : pass) {
    REQUIRE(i < 5);
    ++counts[i];
  }
  CHECK(counts[1] == 0);
  CHECK(counts[3] == 0);
  for (size_t i : {0, 2, 4}) check_frequency(counts[i], n, w[i] / 10);

  // reset draws a new pass; manual_seed fixes the passes
  sampler.reset();
  std::vector<size_t> again = *sampler.next(size_t(n));
  CHECK(again != pass);
  tg::manual_seed(11);
  tgsm::WeightedRandomSampler same(w, n);
  CHECK(*same.next(size_t(n)) == pass);
  sampler.reset(7);
  CHECK(sampler.num_samples() == 7);
  CHECK(sampler.next(100)->size() == 7);
  CHECK_FALSE(sampler.next(1).has_value());

  // without replacement: each pass a permutation of the nonzero-weight indices when it asks for all of them
  tgsm::WeightedRandomSampler all_nonzero(tg::from_vector(std::vector<float>{0, 2, 1, 0, 5, 1, 1, 0}), 5, false);
  for (int pass_no = 0; pass_no < 20; ++pass_no) {
    all_nonzero.reset();
    std::vector<size_t> got = *all_nonzero.next(10);
    std::sort(got.begin(), got.end());
    CHECK(got == std::vector<size_t>{1, 2, 4, 5, 6});
  }
  // the law of drawing without replacement: weights {1, 1, 2}, 2 draws hold index 2 with probability
  // 1 - (1/4 * 1/3 + 1/4 * 1/3) = 5/6
  tgsm::WeightedRandomSampler two(std::vector<double>{1, 1, 2}, 2, /*replacement=*/false);
  const int64_t passes = 3000;
  int64_t with_two = 0;
  for (int64_t p = 0; p < passes; ++p) {
    two.reset();
    const std::vector<size_t> got = *two.next(2);
    REQUIRE(got.size() == 2);
    CHECK(got[0] != got[1]);
    with_two += (got[0] == 2 || got[1] == 2);
  }
  check_frequency(with_two, passes, 5.0 / 6.0);

  // integer weights are taken as numbers
  tgsm::WeightedRandomSampler ints(tg::arange(4), 1000);
  const std::vector<size_t> drawn = *ints.next(1000);
  CHECK(drawn.size() == 1000);
  for (const size_t i : drawn) CHECK(i != 0);

  // as make_data_loader's sampler: each epoch num_samples samples of nonzero weight
  auto loader = tg::data::make_data_loader(Numbers(5).map(tg::data::transforms::Stack<>()),
                                           tgsm::WeightedRandomSampler(std::vector<double>{0, 1, 0, 1, 0}, 10),
                                           tg::data::DataLoaderOptions(4).workers(2));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<size_t> batch_sizes;
    for (auto& batch : *loader) {
      batch_sizes.push_back(size_t(batch.target.size(0)));
      for (const int64_t t : batch.target.to_vector<int64_t>()) CHECK((t == 1 || t == 3));
    }
    CHECK(batch_sizes == std::vector<size_t>{4, 4, 2});
  }
}

TEST_CASE("data utils: WeightedRandomSampler refuses what PyTorch refuses, with its messages") {
  using W = std::vector<double>;
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{1, 2}, 0), tg::Error,
                  "num_samples should be a positive integer value, but got num_samples=0");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{1, 2}, -3), tg::Error, "but got num_samples=-3");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(tg::ones({1, 2}), 2), tg::ShapeError,
                  "weights should be a 1d sequence but given weights have shape (1, 2)");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(tg::ones({}), 2), tg::ShapeError, "have shape ()");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{-1, 2}, 2), tg::Error,
                  "invalid multinomial distribution (encountering probability entry < 0)");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{1, std::numeric_limits<double>::infinity()}, 2), tg::Error,
                  "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{1, std::nan("")}, 2), tg::Error, "infinity or NaN");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{0, 0}, 2), tg::Error,
                  "invalid multinomial distribution (sum of probabilities <= 0)");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{}, 2), tg::Error, "sum of probabilities <= 0");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{1, 2}, 3, false), tg::Error,
                  "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(W{1, 0, 0}, 2, false), tg::Error,
                  "without replacement num_samples (2) must not exceed the number of nonzero weights (1)");
  TG_CHECK_THROWS(tgsm::WeightedRandomSampler(Tensor(), 2), tg::Error, "undefined");
  tgsm::WeightedRandomSampler ok(W{1, 0, 1}, 2, false);
  TG_CHECK_THROWS(ok.reset(4), tg::Error, "cannot sample n_sample > prob_dist.size(-1)");
  TG_CHECK_THROWS(ok.reset(3), tg::Error, "must not exceed the number of nonzero weights (2)");
  TG_CHECK_THROWS(ok.reset(0), tg::Error, "but got num_samples=0");
  CHECK(ok.num_samples() == 2);   // a refused size leaves the sampler as it was
  ok.reset();
  CHECK(ok.next(5)->size() == 2);
}
