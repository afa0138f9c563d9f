// tests/fuzz/fuzz_idx.cpp: libFuzzer target for the IDX reader (data/idx.h). The input bytes are an
// IDX file (plain, or gzip when they start with 1f 8b). Contract: read_idx_images / read_idx_labels
// return a well-formed result or throw tg::data's IOError / DataError; anything else aborts (a bug).
#include <tensorgrad.h>

#include <cmath>
#include <exception>
#include <string>

#include "fuzz_common.h"

namespace {

void check_images(const std::string& path) {
  const tg::Tensor x = tg::data::read_idx_images(path);
  const tg::Shape& s = x.shape();
  if (s.size() != 4 || s[1] != 1 || x.dtype() != tg::kFloat32) fuzz::bug("read_idx_images: bad shape or dtype " + tg::shape_str(s));
  const float* p = x.data().data<float>();
  for (int64_t i = 0; i < x.numel(); ++i)
    if (!(p[i] >= 0.0f && p[i] <= 1.0f)) fuzz::bug("read_idx_images: pixel outside [0, 1]");
}

void check_labels(const std::string& path) {
  const tg::Tensor y = tg::data::read_idx_labels(path, 10);
  if (y.dim() != 1 || y.dtype() != tg::kInt64) fuzz::bug("read_idx_labels: bad shape or dtype " + tg::shape_str(y.shape()));
  const int64_t* p = y.data().data<int64_t>();
  for (int64_t i = 0; i < y.numel(); ++i)
    if (p[i] < 0 || p[i] >= 10) fuzz::bug("read_idx_labels: label outside [0, 10)");
}

template <class F>
void expect_data_error_or_success(const char* what, F&& f) {
  try {
    f();
  } catch (const tg::IOError&) {
  } catch (const tg::DataError&) {
  } catch (const std::exception& e) {
    fuzz::bug(std::string(what) + " threw something other than tg::IOError / tg::DataError: " + e.what());
  } catch (...) {
    fuzz::bug(std::string(what) + " threw a non-std exception");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_path(".idx");
  fuzz::write_file(path, data, size);
  expect_data_error_or_success("read_idx_images", [&] { check_images(path); });
  expect_data_error_or_success("read_idx_labels", [&] { check_labels(path); });
  return 0;
}
