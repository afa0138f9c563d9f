// tests/test_regressions.cpp: one case per bug the sanitizers or the fuzzers (tests/fuzz/) ever found,
// named "regression: ..." after what used to go wrong, so that each stays fixed in every build,
// sanitized or not. Most were undefined behaviour (UBSan) on zero-size tensors whose other sizes are
// huge, or shape arithmetic that overflowed int64; the fuzz inputs that found them are in the seed
// corpus too (tests/fuzz/corpus/*/regression_*).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "testing.h"

using tg::Shape;
using tg::Tensor;

namespace {
constexpr int64_t kHuge = int64_t(1) << 62;
}  // namespace

// UBSan, in the existing suite: p + base[o] offset a null pointer when x had no elements.
TEST_CASE("regression: a sum over an empty dim gives zeros without touching the empty storage") {
  const Tensor x = tg::zeros({3, 0}, tg::TensorOptions().requires_grad(true));
  const Tensor s = tg::sum(x, 1);
  CHECK(s.shape() == Shape{3});
  testing::check_values(s, {0, 0, 0});
  tg::sum(s).backward();
  CHECK(x.grad().shape() == Shape{3, 0});
}

// fuzz_shapes: the RawTensor constructor multiplied the sizes unchecked (signed overflow), and expand
// let a negative size through for a singleton dim.
TEST_CASE("regression: expand rejects views whose element count overflows int64 and negative sizes") {
  const Tensor x = tg::randn({1, 3});
  TG_CHECK_THROWS(tg::expand(x, {kHuge, kHuge, 3}), tg::ShapeError, "more elements than fit in int64");
  TG_CHECK_THROWS(tg::expand(x, {-2, 3}), tg::ShapeError, "negative dimension");
  const int64_t big = int64_t(1) << 61;   // 3 * 2^61 elements still fit: a valid view
  CHECK(tg::expand(x, {big, 1, 3}).shape() == Shape{big, 1, 3});
  CHECK(tg::expand(tg::randn({1, 1, 1}), {kHuge, kHuge, 0}).numel() == 0);
}

// fuzz_shapes: contiguous strides of {0, 2^62, 2^62} overflowed int64; so did numel when the 0 came last.
TEST_CASE("regression: zero-size tensors with huge other sizes are created and copied without overflow") {
  for (const Shape& s : {Shape{0, kHuge, kHuge}, Shape{kHuge, kHuge, 0}, Shape{kHuge, kHuge, 0, 0}}) {
    const Tensor z = tg::zeros(s);
    CHECK(z.numel() == 0);
    CHECK(z.shape() == s);
    CHECK((z + 1.0).shape() == s);   // the strided loops used to merge dims into an overflowing size
    CHECK(z.contiguous().to_vector<double>().empty());
    CHECK(z.unsqueeze(0).shape()[0] == 1);   // unsqueeze multiplied a saturated stride
  }
}

// fuzz_shapes: reshape/view multiplied the given sizes unchecked before inferring the -1.
TEST_CASE("regression: reshape with -1 and sizes whose product overflows is a ShapeError") {
  const Tensor x = tg::randn({2, 3});
  TG_CHECK_THROWS(tg::reshape(x, {kHuge, kHuge, -1}), tg::ShapeError, "is invalid for input of size 6");
  TG_CHECK_THROWS(tg::view(x, {4, kHuge, kHuge, -1}), tg::ShapeError, "is invalid for input of size 6");
  CHECK(tg::reshape(tg::zeros({0, 4}), {0, kHuge, kHuge}).numel() == 0);
}

// fuzz_shapes: cat added the sizes along dim unchecked.
TEST_CASE("regression: cat of views whose sizes along dim add past int64 is a ShapeError") {
  const Tensor big = tg::expand(tg::randn({1, 1}), {kHuge, 1});
  TG_CHECK_THROWS(tg::cat({big, big}, 0), tg::ShapeError, "add up to more than int64");
}

// fuzz_shapes: flatten multiplied the merged sizes unchecked.
TEST_CASE("regression: flatten of a zero-size tensor whose merged sizes overflow is a ShapeError") {
  const Tensor z = tg::zeros({2, kHuge, 0});
  TG_CHECK_THROWS(tg::flatten(z, 0, 1), tg::ShapeError, "more elements than fit in int64");
  CHECK(tg::flatten(z, 1, 2).shape() == Shape{2, 0});
}

// fuzz_shapes: as_blas_operand recursed forever (stack overflow) on a zero-size operand with odd
// strides, which matmul's backward builds when K = 0; and a batched product with K = 0 handed the
// BLAS pointers computed from null storages.
TEST_CASE("regression: matmul with an empty inner dimension gives zeros forward and backward") {
  const Tensor a = tg::zeros({0, 3}, tg::TensorOptions().requires_grad(true));
  const Tensor b = Tensor(tg::randn({5, 3}).data().transpose(0, 1), true);   // (3, 5), transposed
  const Tensor y = tg::matmul(a, b);
  CHECK(y.shape() == Shape{0, 5});
  tg::sum(y).backward();
  CHECK(b.grad().shape() == Shape{3, 5});
  testing::check_values(b.grad(), std::vector<double>(15, 0.0));
  const Tensor p = tg::matmul(tg::randn({2, 3, 0}), tg::randn({2, 0, 4}));
  CHECK(p.shape() == Shape{2, 3, 4});
  testing::check_values(p, std::vector<double>(24, 0.0));
}

// fuzz_shapes: the batch of (0, M, K) @ (K, N) was max(0, 1) = 1, so the BLAS read a batch that
// does not exist (SEGV inside OpenBLAS).
TEST_CASE("regression: matmul broadcasts a batch of 1 against a batch of 0 to 0") {
  CHECK(tg::matmul(tg::zeros({0, 2, 1}), tg::randn({1, 5})).shape() == Shape{0, 2, 5});
  CHECK(tg::matmul(tg::randn({1, 2, 3}), tg::zeros({0, 3, 4})).shape() == Shape{0, 2, 4});
  CHECK(tg::matmul(tg::randn({1, 2, 3}), tg::randn({4, 3, 5})).shape() == Shape{4, 2, 5});
}

// fuzz_shapes: on a 0-d input index_select kept the shape [] (one element) whatever the index held:
// two indices wrote past the output (ASan), none left it uninitialized.
TEST_CASE("regression: index_select on a 0-d tensor needs exactly one index") {
  const Tensor x = tg::full({}, 7.0);
  const auto index = [](std::vector<int64_t> v) { return tg::from_vector(v); };
  TG_CHECK_THROWS(tg::index_select(x, 0, index({0, 0})), tg::IndexError, "only 1 value, got 2");
  TG_CHECK_THROWS(tg::index_select(x, 0, tg::zeros({0}, tg::TensorOptions().dtype(tg::kInt64))), tg::IndexError,
                  "got 0");
  const Tensor y = tg::index_select(x, 0, index({0}));
  CHECK(y.shape() == Shape{});
  CHECK(y.item() == 7.0);
}

// fuzz_shapes: data() of a view with an offset into a zero-byte storage computed null + offset.
TEST_CASE("regression: a narrowed view of a zero-size tensor has no data pointer and copies cleanly") {
  const tg::RawTensor t = tg::zeros({7, 0}).data();
  const tg::RawTensor v = t.narrow(0, 1, 3);
  CHECK(v.data<float>() == nullptr);
  CHECK(v.raw_data() == nullptr);
  CHECK(v.clone().shape() == Shape{3, 0});
}

// fuzz_idx (with libFuzzer's -malloc_limit_mb=32): an 8-byte labels file whose header promised
// 2.6e9 records made the reader reserve 64 MiB up front. Memory must follow the bytes really read:
// a child with 24 MiB of data-segment headroom reads such files and gets DataError, not bad_alloc.
TEST_CASE("regression: an IDX header promising more than the file holds does not force a large allocation") {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  MESSAGE("skipped under a sanitizer: its allocator maps memory outside RLIMIT_DATA's accounting");
  return;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
  MESSAGE("skipped under a sanitizer: its allocator maps memory outside RLIMIT_DATA's accounting");
  return;
#endif
#endif
  namespace fs = std::filesystem;
  const std::string path = (fs::temp_directory_path() / ("tg_regression_idx_" + std::to_string(::getpid()))).string();
  {
    std::ofstream out(path, std::ios::binary);
    const unsigned char labels[] = {0, 0, 8, 1, 0x9d, 0, 0, 8};   // magic 0x801, 2634022920 labels, no data
    out.write(reinterpret_cast<const char*>(labels), sizeof labels);
  }
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::alarm(60);   // a hang fails the test (SIGALRM) instead of stalling the suite
    long data_kb = 0;   // the data segment now (VmData), plus 24 MiB
    if (FILE* f = std::fopen("/proc/self/status", "r")) {
      char line[256];
      while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "VmData: %ld kB", &data_kb) == 1) break;
      std::fclose(f);
    }
    if (data_kb <= 0) ::_exit(10);
    struct rlimit lim {};
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(data_kb + 24 * 1024) * 1024;
    if (::setrlimit(RLIMIT_DATA, &lim) != 0) ::_exit(11);
    int code = 0;
    try {
      (void)tg::data::read_idx_labels(path);
      code = 12;
    } catch (const tg::DataError&) {
    } catch (const std::bad_alloc&) {
      code = 13;   // the bug: an allocation sized by the header
    } catch (...) {
      code = 14;
    }
    ::_exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  std::remove(path.c_str());
  REQUIRE_MESSAGE(WIFEXITED(status), "the child died from signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
  CHECK(WEXITSTATUS(status) == 0);   // 13: bad_alloc, the header forced a large allocation
}
