// tests/test_limits.cpp: sizes near int64's limit in data/ and io/ (DistributedSampler, DataLoader's
// batching and queue, safetensors shapes and offsets, IDX headers) and the other places a std::
// exception could leave a public call. Each size either works exactly or raises a tg::Error subclass
// before anything is allocated; the sanitizer build (tools/sanitize_check.sh) runs these under UBSan,
// which reports any signed overflow on the way.
#include <cstdint>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "testing.h"

using tg::RawTensor;
using tg::Tensor;
using tg::data::DataLoader;
using tg::data::DistributedSampler;
using tg::data::LoaderOptions;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

/// A dataset that reports n samples and makes sample i on demand: [i] and target i.
struct Counted : tg::data::Dataset {
  int64_t n;
  explicit Counted(int64_t n) : n(n) {}
  int64_t size() const override { return n; }
  tg::data::Example<> get(int64_t i) const override {
    return {tg::full({1}, static_cast<double>(i)), tg::full(tg::Shape{}, static_cast<double>(i), tg::kInt64)};
  }
};

/// Every target the loader gives in one epoch, in order.
std::vector<int64_t> targets(DataLoader& loader) {
  std::vector<int64_t> out;
  for (auto& batch : loader)
    for (int64_t t : batch.target.to_vector<int64_t>()) out.push_back(t);
  return out;
}

/// PyTorch's DistributedSampler.__iter__ over a given order: pad by repeating the order (or cut it
/// with drop_last) to total_size, then take positions rank, rank + w, ...
std::vector<int64_t> torch_share(const std::vector<int64_t>& order, int64_t w, int64_t rank, bool drop_last) {
  const int64_t n = static_cast<int64_t>(order.size());
  const int64_t per_rank = drop_last && n % w != 0 ? (n < w ? 0 : (n - w + w - 1) / w) : (n + w - 1) / w;
  std::vector<int64_t> padded(order);
  for (int64_t p = n; p < per_rank * w; ++p) padded.push_back(order[static_cast<std::size_t>(p % n)]);
  padded.resize(static_cast<std::size_t>(per_rank * w));
  std::vector<int64_t> out;
  for (int64_t p = rank; p < per_rank * w; p += w) out.push_back(padded[static_cast<std::size_t>(p)]);
  return out;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// A safetensors file: the 8-byte little-endian header length, the header, the data section.
std::string safetensors_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  return out + header + data;
}

/// One tensor "t" with the given dtype, shape and offsets, and data_bytes zero bytes of data.
std::string one_tensor(const std::string& dtype, const std::string& shape, const std::string& offsets,
                       std::size_t data_bytes) {
  const std::string entry = "{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
  return safetensors_file("{\"t\":" + entry + "}", std::string(data_bytes, '\0'));
}

void put_be32(std::string& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((v >> s) & 0xFF);
}

}  // namespace

TEST_CASE("limits: DistributedSampler near int64's limit counts exactly and raises before allocating") {
  // n = 2^63 - 1 over 3 ranks: ceil(n / 3) per rank, whose total 3 * ceil(n / 3) = 2^63 + 1 is past int64
  DistributedSampler three(kMax, 3, 1, /*shuffle=*/false);
  CHECK(three.size() == 3074457345618258603);
  TG_CHECK_THROWS(three.total_size(), tg::DataError, "does not fit in int64");
  TG_CHECK_THROWS(three.total_size(), tg::DataError, "num_samples (3074457345618258603) * num_replicas (3)");
  TG_CHECK_THROWS(three.indices(), tg::OutOfMemoryError, "cannot allocate this rank's indices of 3074457345618258603");
  DistributedSampler shuffled(kMax, 3, 2, /*shuffle=*/true, 5);
  TG_CHECK_THROWS(shuffled.indices(), tg::OutOfMemoryError, "cannot allocate the sample order of 9223372036854775807");
  // drop_last over 2 ranks: floor(n / 2) each, and the total 2^63 - 2 fits
  DistributedSampler cut(kMax, 2, 0, false, 0, /*drop_last=*/true);
  CHECK(cut.size() == 4611686018427387903);
  CHECK(cut.total_size() == kMax - 1);
  // one index per rank: computed without the order of 2^63 - 1 samples (PyTorch: list(range(n))[r::w])
  DistributedSampler last(kMax, kMax, kMax - 1, false);
  CHECK(last.size() == 1);
  CHECK(last.total_size() == kMax);
  CHECK(last.indices() == std::vector<int64_t>{kMax - 1});
  // w = n - 2: positions 2 and 2 + w = n, which is the padding's repeat of position 0
  CHECK(DistributedSampler(kMax, kMax - 2, 2, false).indices() == std::vector<int64_t>{2, 0});
  // a DataLoader over it raises the sampler's OutOfMemoryError (no std::length_error)
  Counted huge(kMax);
  DataLoader loader(huge, LoaderOptions().batch_size(7).sampler(three));
  CHECK(loader.size() == (3074457345618258603 + 6) / 7);
  TG_CHECK_THROWS(loader.begin(), tg::OutOfMemoryError, "DistributedSampler: cannot allocate");
  Counted big(int64_t(1) << 40);   // an order of 8 TiB: refused before allocating
  DistributedSampler four(int64_t(1) << 40, 4, 3, true, 0);
  TG_CHECK_THROWS(DataLoader(big, LoaderOptions().sampler(four)).begin(), tg::OutOfMemoryError,
                  "cannot allocate the sample order of 1099511627776 samples");
}

TEST_CASE("limits: DistributedSampler's shares are PyTorch's padding of its permutation at odd sizes") {
  for (int64_t n : {0, 1, 2, 5, 7, 13}) {
    for (int64_t w : {1, 2, 3, 5, 11}) {
      for (bool drop_last : {false, true}) {
        for (bool shuffle : {false, true}) {
          CAPTURE(n);
          CAPTURE(w);
          CAPTURE(drop_last);
          CAPTURE(shuffle);
          // the order: identity, or the shuffle sampler.h documents (seed 9 + epoch 4)
          std::vector<int64_t> order(static_cast<std::size_t>(n));
          std::iota(order.begin(), order.end(), int64_t(0));
          if (shuffle) tg::data::detail::shuffle_in_place(order, tg::data::detail::splitmix64(9 + 4));
          for (int64_t r = 0; r < w; ++r) {
            DistributedSampler s(n, w, r, shuffle, 9, drop_last);
            s.set_epoch(4);
            const std::vector<int64_t> got = s.indices();
            CHECK(got == torch_share(order, w, r, drop_last));
            CHECK(static_cast<int64_t>(got.size()) == s.size());
            CHECK(s.total_size() == s.size() * w);
          }
        }
      }
    }
  }
}

TEST_CASE("limits: DataLoader with batch_size, prefetch and num_workers near int64's limit") {
  Counted seven(7);
  // one batch of everything
  DataLoader whole(seven, LoaderOptions().batch_size(kMax));
  CHECK(whole.size() == 1);
  CHECK(targets(whole) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
  // prefetch * num_workers overflows int64: the queue is unbounded, every batch still arrives in order
  for (int64_t workers : {int64_t(0), int64_t(2), int64_t(3)}) {
    CAPTURE(workers);
    DataLoader deep(seven, LoaderOptions().batch_size(3).prefetch(kMax).num_workers(workers));
    CHECK(deep.size() == 3);
    CHECK(targets(deep) == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6});
  }
  DataLoader dropped(seven, LoaderOptions().batch_size(kMax - 1).drop_last(true));
  CHECK(dropped.size() == 0);
  CHECK(targets(dropped).empty());
  // a sampler that reports a negative size is refused, not divided
  struct Negative : tg::data::Sampler {
    std::vector<int64_t> indices() const override { return {}; }
    int64_t size() const override { return -5; }
  } negative;
  DataLoader with_negative(seven, LoaderOptions().sampler(negative));
  TG_CHECK_THROWS(with_negative.size(), tg::DataError, "the sampler reports a negative size -5");
  TG_CHECK_THROWS(with_negative.begin(), tg::DataError, "negative size -5");
}

TEST_CASE("limits: safetensors shapes and offsets near int64's limit") {
  testing::TempDir dir("tg_limits");
  const std::string path = dir.file("t.safetensors");
  // a zero-size dimension beside 2^63 - 1: an empty tensor of that shape, as the format allows
  write_bytes(path, one_tensor("F32", "[0,9223372036854775807]", "[0,0]", 0));
  auto loaded = tg::load_tensors(path);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].second.shape() == tg::Shape{0, kMax});
  CHECK(loaded[0].second.numel() == 0);
  // printing it lists no index of its 2^63 - 1 columns; torch.empty((0, 2**63 - 1)) prints the same
  std::ostringstream printed;
  printed << loaded[0].second;
  CHECK(printed.str() == "tensor([], size=(0, 9223372036854775807))");
  write_bytes(path, one_tensor("U8", "[4611686018427387904,0,3]", "[0,0]", 0));
  const RawTensor wide = tg::load_tensors(path)[0].second;
  CHECK(wide.shape() == tg::Shape{int64_t(1) << 62, 0, 3});
  // torch.empty((2**62, 0, 3), dtype=torch.uint8) -> "tensor([], size=(4611686018427387904, 0, 3), dtype=torch.uint8)"
  std::ostringstream printed_wide;
  printed_wide << Tensor(wide);
  CHECK(printed_wide.str() == "tensor([], size=(4611686018427387904, 0, 3), dtype=uint8)");
  // elements past int64
  write_bytes(path, one_tensor("U8", "[4294967296,4294967296]", "[0,0]", 0));
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "has more elements than int64 can count");
  write_bytes(path, one_tensor("U8", "[3037000500,3037000500]", "[0,0]", 0));   // 3037000500^2 > 2^63
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "has more elements than int64 can count");
  // elements that fit, bytes that do not: 2^62 float32 values are 2^64 bytes
  write_bytes(path, one_tensor("F32", "[2305843009213693952,2]", "[0,0]", 0));
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "needs more bytes than int64 can count");
  // bytes that fit in int64 but not in the file
  write_bytes(path, one_tensor("U8", "[9223372036854775807]", "[0,9223372036854775807]", 5));
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "lie outside the data section of 5 bytes");
  write_bytes(path, one_tensor("F64", "[3]", "[9223372036854775807,9223372036854775807]", 24));
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "needs 24 bytes but data_offsets");
  write_bytes(path, one_tensor("U8", "[0]", "[9223372036854775807,9223372036854775807]", 0));
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "lie outside the data section of 0 bytes");
  write_bytes(path, one_tensor("U8", "[1]", "[-9223372036854775808,-9223372036854775807]", 1));
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "invalid data_offsets");
  write_bytes(path, one_tensor("U8", "[-9223372036854775808]", "[0,0]", 0));
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "negative dimension");
  write_bytes(path, one_tensor("U8", "[9223372036854775808]", "[0,0]", 0));   // 2^63: not an int64
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "integer out of the int64 range");
  // a header length of 2^64 - 1
  write_bytes(path, std::string(8, '\xff') + "{}");
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "header length 18446744073709551615 exceeds");
  // the same files through a module load: the same errors, no std:: exception
  tg::nn::Linear fc(3, 5);
  write_bytes(path, one_tensor("F32", "[0,9223372036854775807]", "[0,0]", 0));
  TG_CHECK_THROWS(tg::load(fc, path), tg::SerializationError, "Unexpected key(s) in checkpoint: \"t\"");
}

TEST_CASE("limits: IDX header dims at the reader's 4 GiB bound") {
  testing::TempDir dir("tg_limits");
  const std::string path = dir.file("idx");
  const auto write_idx = [&](uint32_t magic, const std::vector<uint32_t>& dims, const std::string& data) {
    std::string bytes;
    put_be32(bytes, magic);
    for (uint32_t d : dims) put_be32(bytes, d);
    write_bytes(path, bytes + data);
  };
  // 2^32 bytes exactly is allowed (and then missing); one byte more is refused from the header alone
  write_idx(0x803, {65536, 256, 256}, "");
  TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, "record 0 of 65536");
  write_idx(0x803, {65537, 256, 256}, "");
  TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, "promise more than 4294967296 bytes");
  write_idx(0x803, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, "");
  TG_CHECK_THROWS(tg::data::read_idx_images(path), tg::DataError, "dimension 1 = 4294967295");
  // no records: the largest dims of zero elements give an empty tensor of that shape
  write_idx(0x803, {0, 0xFFFFFFFFu, 0xFFFFFFFFu}, "");
  const Tensor empty = tg::data::read_idx_images(path);
  CHECK(empty.shape() == tg::Shape{0, 1, 4294967295, 4294967295});
  write_idx(0x801, {0xFFFFFFFFu}, "\x01\x02");
  TG_CHECK_THROWS(tg::data::read_idx_labels(path), tg::DataError, "record 2 of 4294967295");
}

TEST_CASE("limits: only tg::Error leaves a public call: LRScheduler::base_lr of a missing group") {
  tg::nn::Linear fc(3, 2);
  tg::optim::SGD sgd(fc.parameters(), 0.1);
  tg::optim::StepLR steps(sgd, 3, 0.5);
  CHECK(steps.base_lr(0) == 0.1);
  TG_CHECK_THROWS(steps.base_lr(1), tg::IndexError,
                  "list index out of range: parameter group 1 (the scheduler was built on 1 groups)");
  TG_CHECK_THROWS(steps.base_lr(std::size_t(-1)), tg::IndexError, "list index out of range");
}

TEST_CASE("limits: an Adam checkpoint's step near int64's limit loads exactly and steps without overflow") {
  testing::TempDir dir("tg_limits");
  const std::string path = dir.file("adam.safetensors");
  tg::manual_seed(3);
  tg::nn::Linear fc(5, 3);
  tg::optim::Adam adam(fc.parameters(), 0.01);
  const auto one_step = [&] {
    adam.zero_grad();
    tg::sum(fc(tg::randn({7, 5}))).backward();
    adam.step();
  };
  one_step();
  // the state with every step replaced by `step`, written and loaded back
  const auto load_with_step = [&](int64_t step) {
    auto state = adam.state();
    for (auto& [name, t] : state)
      if (name.rfind("step.", 0) == 0) t = tg::from_vector(std::vector<int64_t>{step}, {}).data();
    tg::save_tensors(state, path);
    tg::load(adam, path);
  };
  const auto steps = [&] {
    std::vector<int64_t> out;
    for (const auto& [name, t] : adam.state())
      if (name.rfind("step.", 0) == 0) out.push_back(Tensor(t).item<int64_t>());
    return out;
  };
  const int64_t beyond_double = (int64_t(1) << 53) + 1;   // a double would round it to 2^53
  load_with_step(beyond_double);
  CHECK(steps() == std::vector<int64_t>{beyond_double, beyond_double});
  load_with_step(kMax);
  CHECK(steps() == std::vector<int64_t>{kMax, kMax});
  const std::vector<float> before = fc.weight.to_vector<float>();
  one_step();   // the count stays at int64's limit instead of overflowing; the update is finite
  CHECK(steps() == std::vector<int64_t>{kMax, kMax});
  const std::vector<float> after = fc.weight.to_vector<float>();
  CHECK(after != before);
  for (float w : after) CHECK(std::isfinite(w));
}

TEST_CASE("limits: a quantized checkpoint with a floating-point zero point is refused, not converted") {
  testing::TempDir dir("tg_limits");
  const std::string path = dir.file("q.safetensors");
  const tg::QuantizedTensor q = tg::quantize_per_tensor(tg::from_vector(std::vector<float>{0.5f, -1.25f, 3.f}), 0.25, 3,
                                                        tg::kInt8);
  tg::save_quantized({{"w", q}}, path);
  CHECK(tg::load_quantized(path)[0].second.q_zero_point() == 3);
  // the same file with zero_point a float32 NaN: converting it to int64 would be undefined behaviour
  auto flat = tg::load_tensors(path);
  for (auto& [name, t] : flat)
    if (name == "w.zero_point") t = tg::full({}, std::numeric_limits<double>::quiet_NaN()).data();
  tg::save_tensors(flat, path);
  TG_CHECK_THROWS(tg::load_quantized(path), tg::SerializationError,
                  "the zero point must be an integer tensor, got float32");
}
