// tests/fuzz/fuzz_checkpoint.cpp: libFuzzer target for the safetensors loader (io/safetensors.h). The
// input bytes are a checkpoint file. Contract: load_tensors / load(module) / load(optimizer), with and
// without checksums, strict or not, either succeed or throw tg::SerializationError; a failed module
// load leaves the module bitwise unchanged; a successful load holds no more tensor bytes than the file
// and reports only keys that exist. Anything else aborts (a bug).
#include <tensorgrad.h>

#include <cstring>
#include <exception>
#include <string>

#include "fuzz_common.h"

namespace {

/// The module the seed corpus checkpoints were saved from (tests/fuzz/make_corpus.cpp): Linear(3, 2).
struct Net : tg::nn::Module {
  tg::nn::Linear fc{3, 2};
  Net() { register_module("fc", fc); }
};

std::string module_bytes(const tg::nn::Module& m) {
  std::string out;
  for (const auto& p : m.named_parameters()) {
    const tg::RawTensor c = p.second.data().contiguous();
    out += p.first + ":" + tg::shape_str(c.shape()) + ":";
    out.append(static_cast<const char*>(c.raw_data()), std::size_t(c.numel()) * tg::dtype_size(c.dtype()));
  }
  return out;
}

void check_tensors(const std::string& path, size_t file_size, const tg::LoadOptions& options) {
  std::map<std::string, std::string> metadata;
  const auto tensors = tg::load_tensors(path, &metadata, options);
  size_t total = 0;
  for (const auto& [name, t] : tensors) {
    if (!t.defined() || !t.is_contiguous()) fuzz::bug("load_tensors returned an undefined or strided tensor \"" + name + "\"");
    const size_t nbytes = size_t(t.numel()) * tg::dtype_size(t.dtype());
    if (nbytes > file_size || total + nbytes > file_size)
      fuzz::bug("load_tensors returned more tensor bytes than the file holds (" + std::to_string(file_size) + ")");
    total += nbytes;
    if (nbytes) {   // reads every byte: ASan flags a tensor whose storage is shorter than its shape
      volatile unsigned char sink = 0;
      const auto* p = static_cast<const unsigned char*>(t.raw_data());
      for (size_t i = 0; i < nbytes; ++i) sink = sink ^ p[i];
      (void)sink;
    }
  }
}

void check_module(const std::string& path, const tg::LoadOptions& options) {
  tg::manual_seed(1);
  Net net;
  const std::string before = module_bytes(net);
  tg::IncompatibleKeys keys;
  try {
    keys = tg::load(net, path, options);
  } catch (const tg::SerializationError&) {
    if (module_bytes(net) != before) fuzz::bug("a failed load(module) changed the module");
    throw;
  }
  for (const auto& k : keys.missing_keys)
    if (k != "fc.weight" && k != "fc.bias") fuzz::bug("load(module) reported a missing key the module lacks: " + k);
  if (options.strict_ && (!keys.missing_keys.empty() || !keys.unexpected_keys.empty()))
    fuzz::bug("a strict load(module) succeeded with missing or unexpected keys");
}

void check_optimizer(const std::string& path) {
  Net net;
  tg::optim::SGD sgd(net.parameters(), tg::optim::SGDOptions(0.1).momentum(0.9));
  tg::load(sgd, path);
}

template <class F>
void expect_serialization_error_or_success(const char* what, F&& f) {
  try {
    f();
  } catch (const tg::SerializationError&) {
    // the contract: a clean rejection
  } catch (const std::exception& e) {
    fuzz::bug(std::string(what) + " threw something other than tg::SerializationError: " + e.what());
  } catch (...) {
    fuzz::bug(std::string(what) + " threw a non-std exception");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_path(".safetensors");
  fuzz::write_file(path, data, size);
  const tg::LoadOptions strict, lenient = tg::LoadOptions().strict(false).verify_checksums(false);
  expect_serialization_error_or_success("load_tensors", [&] { check_tensors(path, size, strict); });
  expect_serialization_error_or_success("load_tensors without checksums", [&] { check_tensors(path, size, lenient); });
  expect_serialization_error_or_success("load(module)", [&] { check_module(path, strict); });
  expect_serialization_error_or_success("load(module) not strict", [&] { check_module(path, lenient); });
  expect_serialization_error_or_success("load(optimizer)", [&] { check_optimizer(path); });
  return 0;
}
