// tests/test_serialize.cpp: safetensors checkpoints (io/safetensors.h, io/checkpoint.h): the CRC-32C paths, bitwise round
// trips of tensors, modules and SGD state, the header layout and its metadata (read by a JSON reader of
// the test's own), a fixture from the reference safetensors writer (tests/data/make_fixtures.py), files
// in the tensorgrad-1 layout, stale checksums and LoadOptions, non-strict module loads, and every kind
// of damaged file, each rejected with the model unchanged.
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "testing.h"

namespace fs = std::filesystem;
using tg::Tensor;

namespace {

struct SmallNet : tg::nn::Module {
  tg::nn::Linear fc1, fc2;
  SmallNet(int64_t in = 4, int64_t hidden = 8, int64_t out = 3) : fc1(in, hidden), fc2(hidden, out) {
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  Tensor forward(const Tensor& x) override { return fc2(tg::relu(fc1(x))); }
};

/// A module with an int64 buffer next to its parameters.
struct WithBuffer : tg::nn::Module {
  tg::nn::Linear fc{33, 17};
  Tensor steps;
  explicit WithBuffer(int64_t n) {
    register_module("fc", fc);
    steps = tg::from_vector(std::vector<int64_t>{n, -n, 1LL << 40}, {3});
    register_buffer("steps", steps);
  }
};

struct TempDir : testing::TempDir {
  TempDir() : testing::TempDir("tg_serialize") {}
};

std::string read_bytes(const std::string& path) {
  REQUIRE(std::filesystem::exists(path));
  return testing::read_bytes(path);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(out.good());
}

uint64_t le64(const std::string& bytes, std::size_t at = 0) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[at + std::size_t(i)]);
  return v;
}

std::string le64_bytes(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[std::size_t(i)] = char((v >> (8 * i)) & 0xFF);
  return out;
}

/// A safetensors file from a header text and a data section.
std::string make_file(const std::string& header, const std::string& data) {
  return le64_bytes(header.size()) + header + data;
}

std::string float_bytes(const std::vector<float>& v) {
  std::string out(v.size() * 4, '\0');
  if (!v.empty()) std::memcpy(&out[0], v.data(), out.size());
  return out;
}

/// The raw bytes of a tensor, row-major.
std::string bytes_of(const tg::RawTensor& t) {
  const tg::RawTensor c = t.to(tg::Device::cpu()).contiguous();
  const std::size_t n = std::size_t(c.numel()) * tg::dtype_size(c.dtype());
  return n ? std::string(static_cast<const char*>(c.raw_data()), n) : std::string();
}

/// Every parameter's and buffer's bytes, to compare a module before and after.
std::vector<std::string> snapshot(const tg::nn::Module& m) {
  std::vector<std::string> out;
  for (const auto& p : m.named_parameters()) out.push_back(p.first + ":" + bytes_of(p.second.data()));
  for (const auto& b : m.named_buffers()) out.push_back(b.first + ":" + bytes_of(b.second.data()));
  return out;
}

/// Expects load(module, path, options) to throw SerializationError containing every substring, and
/// the module to be bitwise unchanged afterwards.
void check_rejected(tg::nn::Module& module, const std::string& path, const std::vector<std::string>& substrings,
                    const tg::LoadOptions& options = {}) {
  const auto before = snapshot(module);
  bool thrown = false;
  try {
    tg::load(module, path, options);
  } catch (const tg::SerializationError& e) {
    thrown = true;
    const std::string msg = e.what();
    for (const auto& s : substrings) CHECK_MESSAGE(msg.find(s) != std::string::npos, "message \"" << msg << "\" lacks \"" << s << "\"");
  }
  CHECK_MESSAGE(thrown, "load of " << path << " did not throw SerializationError");
  CHECK(snapshot(module) == before);
}

std::string hex8(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

std::string shape_json(const tg::Shape& shape) {
  std::string s = "[";
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? "," : "") + std::to_string(shape[d]);
  return s + "]";
}

/// A float32 checkpoint in the tensorgrad-1 layout, written by hand: "format": "tensorgrad-1" and one
/// "crc32c.<name>" per tensor (unless `skip_crc` names it), tensors in order.
std::string tensorgrad1_file(const std::vector<std::pair<std::string, tg::RawTensor>>& tensors,
                             const std::string& skip_crc = "") {
  std::string meta = "{\"__metadata__\":{\"format\":\"tensorgrad-1\"", entries, data;
  for (const auto& [name, t] : tensors) {
    REQUIRE(t.dtype() == tg::kFloat32);
    const std::string b = bytes_of(t);
    if (name != skip_crc) meta += ",\"crc32c." + name + "\":\"" + hex8(tg::detail::crc32c_portable(b.data(), b.size())) + "\"";
    entries += ",\"" + name + "\":{\"dtype\":\"F32\",\"shape\":" + shape_json(t.shape()) + ",\"data_offsets\":[" +
               std::to_string(data.size()) + "," + std::to_string(data.size() + b.size()) + "]}";
    data += b;
  }
  std::string header = meta + "}" + entries + "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  return make_file(header, data);
}

/// A small JSON reader of the test's own (objects, strings with escapes, integers, arrays), so that the
/// header tensorgrad writes is checked by other code than the one that reads it back.
struct Json {
  enum Kind { Object, Array, String, Number } kind = Object;
  std::vector<std::pair<std::string, Json>> members;   // Object
  std::vector<Json> items;                             // Array
  std::string str;                                     // String
  int64_t num = 0;                                     // Number
  const Json& at(const std::string& key) const {
    for (const auto& m : members)
      if (m.first == key) return m.second;
    FAIL("no key \"" << key << "\" in the JSON object");
    return *this;
  }
  bool has(const std::string& key) const {
    for (const auto& m : members)
      if (m.first == key) return true;
    return false;
  }
};

struct JsonReader {
  const std::string& s;
  std::size_t i = 0;
  void ws() {
    while (i < s.size() && std::strchr(" \t\r\n", s[i]) != nullptr) ++i;
  }
  void expect(char c) {
    ws();
    REQUIRE_MESSAGE(i < s.size(), "JSON ends early");
    REQUIRE_MESSAGE(s[i] == c, "expected '" << c << "' at " << i << " in " << s);
    ++i;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c == '\\') {
        REQUIRE(i < s.size());
        c = s[i++];
        if (c == 'n') c = '\n';
        else if (c == 't') c = '\t';
        else if (c == 'r') c = '\r';
        else if (c == 'b') c = '\b';
        else if (c == 'f') c = '\f';
        else if (c == 'u') {
          REQUIRE(i + 4 <= s.size());
          c = char(std::stoi(s.substr(i, 4), nullptr, 16));   // the test's names are ASCII
          i += 4;
        }
      }
      out += c;
    }
    expect('"');
    return out;
  }
  Json value() {
    ws();
    REQUIRE(i < s.size());
    Json v;
    if (s[i] == '{') {
      ++i;
      ws();
      if (s[i] == '}') {
        ++i;
        return v;
      }
      for (;;) {
        std::string key = string();
        expect(':');
        v.members.emplace_back(std::move(key), value());
        ws();
        if (s[i] == ',') { ++i; continue; }
        expect('}');
        return v;
      }
    }
    if (s[i] == '[') {
      ++i;
      v.kind = Json::Array;
      ws();
      if (s[i] == ']') {
        ++i;
        return v;
      }
      for (;;) {
        v.items.push_back(value());
        ws();
        if (s[i] == ',') { ++i; continue; }
        expect(']');
        return v;
      }
    }
    if (s[i] == '"') {
      v.kind = Json::String;
      v.str = string();
      return v;
    }
    v.kind = Json::Number;
    std::size_t used = 0;
    v.num = std::stoll(s.substr(i), &used);
    i += used;
    return v;
  }
};

/// The parsed JSON header of a safetensors file's bytes.
Json header_json(const std::string& bytes) {
  const std::string header = bytes.substr(8, std::size_t(le64(bytes)));
  JsonReader r{header};
  Json top = r.value();
  r.ws();
  CHECK(r.i == header.size());
  return top;
}

/// The header of a Linear(3, 2) checkpoint without checksums, as another tool would write it.
std::string linear_header(const std::string& weight_offsets, const std::string& bias_offsets) {
  return "{\"weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":" + weight_offsets +
         "},\"bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" + bias_offsets + "}}";
}

}  // namespace

TEST_CASE("checkpoint: crc32c gives the Castagnoli check value") {
  const char* digits = "123456789";
  for (auto crc : {&tg::detail::crc32c, &tg::detail::crc32c_portable}) {
    CHECK(crc(digits, 9, 0) == 0xE3069283u);
    CHECK(crc(digits + 4, 5, crc(digits, 4, 0)) == 0xE3069283u);   // running
    CHECK(crc("", 0, 0) == 0u);
  }
}

TEST_CASE("checkpoint: crc32c with the SSE4.2 instruction equals the portable one at every length and alignment") {
  // Lengths around the 8-byte steps and the three 8 KiB streams (24 KiB rounds) of the fast path.
  std::vector<unsigned char> buf(3 * 24576 + 300);
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (auto& b : buf) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<unsigned char>(x >> 24);
  }
  for (std::size_t len : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(8), std::size_t(9), std::size_t(257),
                          std::size_t(24575), std::size_t(24576), std::size_t(24577), std::size_t(2 * 24576 + 33),
                          std::size_t(3 * 24576 + 255)})
    for (std::size_t start : {0, 1, 3, 8}) {
      CAPTURE(len);
      CAPTURE(start);
      CHECK(tg::detail::crc32c(buf.data() + start, len) == tg::detail::crc32c_portable(buf.data() + start, len));
      const std::size_t half = len / 2;
      CHECK(tg::detail::crc32c(buf.data() + start + half, len - half, tg::detail::crc32c(buf.data() + start, half)) ==
            tg::detail::crc32c_portable(buf.data() + start, len));
    }
}

TEST_CASE("checkpoint: save_tensors round trip is bitwise for every dtype - odd sizes 0-d and zero-size") {
  TempDir dir;
  tg::manual_seed(7);
  const Tensor base = tg::randn({33, 7});
  std::vector<std::pair<std::string, tg::RawTensor>> tensors = {
      {"f32.odd", tg::randn({257}).data()},
      {"f64.matrix", tg::randn({33, 7}, tg::TensorOptions().dtype(tg::kFloat64)).data()},
      {"i64", tg::randint(-1000, 1000, {5, 3}).data()},
      {"scalar", tg::full({}, 3.25, tg::TensorOptions().dtype(tg::kFloat64)).data()},
      {"empty", tg::zeros({0, 5}).data()},
      {"transposed", base.data().transpose(0, 1)},                  // non-contiguous: stored row-major
      {"odd \"name\"\\ with\nescapes and \xc3\xa9", tg::ones({2}).data()},
  };
  const std::string path = dir.file("t.safetensors");
  tg::save_tensors(tensors, path, {{"note", "hello \"world\""}});

  std::map<std::string, std::string> meta;
  const auto loaded = tg::load_tensors(path, &meta);
  REQUIRE(loaded.size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    CAPTURE(tensors[i].first);
    CHECK(loaded[i].first == tensors[i].first);
    CHECK(loaded[i].second.shape() == tensors[i].second.shape());
    CHECK(loaded[i].second.dtype() == tensors[i].second.dtype());
    CHECK(loaded[i].second.is_contiguous());
    CHECK(bytes_of(loaded[i].second) == bytes_of(tensors[i].second));
  }
  CHECK(loaded[3].second.dim() == 0);
  CHECK(loaded[4].second.numel() == 0);
  CHECK(meta.at("note") == "hello \"world\"");
  CHECK(meta.at("format") == "pt");
  CHECK(meta.at("tensorgrad.checksums") == "crc32c");
  CHECK(meta.count("crc32c.f32.odd") == 1);
  CHECK(dir.temp_files().empty());

  // Names that would make the file ambiguous, and reserved metadata keys, are refused up front.
  TG_CHECK_THROWS(tg::save_tensors({{"a", tensors[0].second}, {"a", tensors[1].second}}, path), tg::SerializationError,
                  "duplicate tensor name \"a\"");
  TG_CHECK_THROWS(tg::save_tensors({{"__metadata__", tensors[0].second}}, path), tg::SerializationError, "reserved");
  TG_CHECK_THROWS(tg::save_tensors({}, path, {{"crc32c.x", "0"}}), tg::SerializationError, "reserved for tensorgrad");
  TG_CHECK_THROWS(tg::save_tensors({}, path, {{"format", "np"}}), tg::SerializationError, "reserved for tensorgrad");
  TG_CHECK_THROWS(tg::save_tensors({}, path, {{"tensorgrad.checksums", "none"}}), tg::SerializationError,
                  "reserved for tensorgrad");
  TG_CHECK_THROWS(tg::save_tensors({{"u", tg::RawTensor()}}, path), tg::SerializationError, "undefined");
}

TEST_CASE("checkpoint: module round trip is bitwise and reproduces outputs in float32 and float64") {
  for (tg::DType dtype : {tg::kFloat32, tg::kFloat64}) {
    CAPTURE(tg::dtype_name(dtype));
    TempDir dir;
    const std::string path = dir.file("net.safetensors");
    tg::manual_seed(1);
    SmallNet a(33, 17, 5);
    a.to(dtype);
    tg::save(a, path);
    CHECK(dir.temp_files().empty());

    tg::manual_seed(2);
    SmallNet b(33, 17, 5);
    b.to(dtype);
    REQUIRE(snapshot(a) != snapshot(b));
    const auto handle = b.fc1.weight.impl();
    const auto storage = b.fc1.weight.data().storage();
    tg::load(b, path);
    CHECK(snapshot(a) == snapshot(b));
    CHECK(b.fc1.weight.impl() == handle);                 // the same parameters, written in place
    CHECK(b.fc1.weight.data().storage() == storage);
    CHECK(b.fc1.weight.requires_grad());

    tg::manual_seed(3);
    const Tensor x = tg::randn({9, 33}, tg::TensorOptions().dtype(dtype));
    CHECK(bytes_of(a(x).data()) == bytes_of(b(x).data()));
  }
}

TEST_CASE("checkpoint: buffers are saved and loaded with the parameters") {
  TempDir dir;
  const std::string path = dir.file("buf.safetensors");
  WithBuffer a(5), b(9);
  tg::save(a, path);
  std::vector<std::string> names;
  for (const auto& t : tg::load_tensors(path)) names.push_back(t.first);
  CHECK(names == std::vector<std::string>{"fc.weight", "fc.bias", "steps"});
  tg::load(b, path);
  CHECK(snapshot(a) == snapshot(b));
  CHECK(b.steps.to_vector<int64_t>() == std::vector<int64_t>{5, -5, 1LL << 40});
}

TEST_CASE("checkpoint: header bytes follow the safetensors layout") {
  TempDir dir;
  const std::string path = dir.file("lin.safetensors");
  tg::nn::Linear lin(3, 2);
  tg::save(lin, path);
  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 8);
  const uint64_t n = le64(bytes);
  CHECK(n % 8 == 0);                                    // data section 8-byte aligned
  REQUIRE(8 + n + 32 == bytes.size());                  // weight 24 bytes + bias 8 bytes
  const std::string header = bytes.substr(8, std::size_t(n));
  CHECK(header.front() == '{');
  const std::size_t close = header.find_last_of('}');
  CHECK(header.find_first_not_of(' ', close + 1) == std::string::npos);   // padded with spaces only
  const std::string crc_w = [&] {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", tg::detail::crc32c(bytes_of(lin.weight.data()).data(), 24));
    return std::string(buf);
  }();
  CHECK(header.find("\"__metadata__\":{\"format\":\"pt\",\"tensorgrad.checksums\":\"crc32c\",\"crc32c.weight\":\"" +
                    crc_w + "\"") == 1);
  CHECK(header.find("\"weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}") != std::string::npos);
  CHECK(header.find("\"bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}") != std::string::npos);
  const std::string data = bytes.substr(8 + std::size_t(n));
  CHECK(data.substr(0, 24) == bytes_of(lin.weight.data()));   // little-endian row-major
  CHECK(data.substr(24) == bytes_of(lin.bias.data()));

  // The reference writer's fixture has the same layout (its keys sorted, no checksums).
  const std::string ref = read_bytes(TG_SOURCE_DIR "/tests/data/linear_2x3.safetensors");
  CHECK(le64(ref) % 8 == 0);
  CHECK(ref.substr(8, 1) == "{");
}

TEST_CASE("checkpoint: reads a fixture from the reference safetensors writer into Linear") {
  const std::string path = TG_SOURCE_DIR "/tests/data/linear_2x3.safetensors";
  std::map<std::string, std::string> meta;
  const auto tensors = tg::load_tensors(path, &meta);
  CHECK(tensors.size() == 2);
  CHECK(meta.at("format") == "np");
  CHECK(meta.count("crc32c.weight") == 0);   // another tool's file: no checksums, none checked

  tg::nn::Linear lin(3, 2);
  tg::load(lin, path);
  CHECK(lin.weight.to_vector<float>() == std::vector<float>{0.5f, -1.25f, 2.0f, 3.75f, -0.125f, 8.0f});
  CHECK(lin.bias.to_vector<float>() == std::vector<float>{1.5f, -2.25f});
  const Tensor y = lin(tg::from_vector(std::vector<float>{1, 2, 3}, {1, 3}));
  testing::check_values(y, {0.5 - 2.5 + 6 + 1.5, 3.75 - 0.25 + 24 - 2.25});
}

TEST_CASE("checkpoint: truncated file is rejected and the model is unchanged") {
  TempDir dir;
  const std::string good = dir.file("good.safetensors"), bad = dir.file("bad.safetensors");
  tg::manual_seed(4);
  SmallNet a;
  tg::save(a, good);
  const std::string bytes = read_bytes(good);
  SmallNet b;
  write_bytes(bad, bytes.substr(0, 5));
  check_rejected(b, bad, {bad, "too short"});
  write_bytes(bad, bytes.substr(0, 40));
  check_rejected(b, bad, {bad, "header length", "truncated"});
  write_bytes(bad, bytes.substr(0, bytes.size() - 3));
  check_rejected(b, bad, {bad, "outside the data section", "truncated"});
  write_bytes(bad, bytes + "xyz");
  check_rejected(b, bad, {bad, "3 trailing bytes"});
  write_bytes(bad, "");
  check_rejected(b, bad, {bad, "too short"});
  check_rejected(b, dir.file("missing.safetensors"), {"missing.safetensors", "cannot open"});
}

TEST_CASE("checkpoint: a flipped bit in the data fails the crc32c check") {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  SmallNet a;
  tg::save(a, path);
  std::string bytes = read_bytes(path);
  bytes[bytes.size() - 1] ^= 0x01;   // last byte: fc2.bias
  write_bytes(path, bytes);
  SmallNet b;
  check_rejected(b, path, {path, "checksum mismatch for tensor \"fc2.bias\""});
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "corrupted");
}

TEST_CASE("checkpoint: a flipped byte in the header is invalid JSON") {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  SmallNet a;
  tg::save(a, path);
  const std::string bytes = read_bytes(path);
  SmallNet b;

  std::string first = bytes;
  first[8] ^= 0x01;   // '{' -> 'z'
  write_bytes(path, first);
  check_rejected(b, path, {path, "invalid JSON header at header byte 0", "'z'"});

  std::string colon = bytes;
  const std::size_t at = colon.find("\"data_offsets\":") + std::strlen("\"data_offsets\"");
  colon[at] = ';';
  write_bytes(path, colon);
  check_rejected(b, path, {path, "header byte " + std::to_string(at - 8), "expected ':'"});
}

TEST_CASE("checkpoint: an oversized header length is rejected before allocating") {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  tg::nn::Linear a(3, 2), b(3, 2);
  tg::save(a, path);
  const std::string bytes = read_bytes(path);
  for (uint64_t n : {uint64_t(1) << 62, uint64_t(200000000), uint64_t(~0ULL)}) {
    write_bytes(path, le64_bytes(n) + bytes.substr(8));
    check_rejected(b, path, {path, "header length", "exceeds the limit"});
  }
  write_bytes(path, le64_bytes(le64(bytes) + 33) + bytes.substr(8));
  check_rejected(b, path, {path, "exceeds the " + std::to_string(bytes.size() - 8) + " bytes that follow it"});
}

TEST_CASE("checkpoint: offsets that overlap or leave a gap are rejected") {
  TempDir dir;
  const std::string path = dir.file("lin.safetensors");
  tg::nn::Linear b(3, 2);
  const std::string w = float_bytes({1, 2, 3, 4, 5, 6}), bias = float_bytes({7, 8});

  write_bytes(path, make_file(linear_header("[0,24]", "[24,32]"), w + bias));   // the valid baseline
  tg::load(b, path);
  CHECK(b.bias.to_vector<float>() == std::vector<float>{7, 8});

  tg::nn::Linear c(3, 2);
  write_bytes(path, make_file(linear_header("[0,24]", "[20,28]"), w.substr(0, 20) + bias));
  check_rejected(c, path, {path, "tensor \"bias\"", "overlaps tensor \"weight\""});
  write_bytes(path, make_file(linear_header("[0,24]", "[28,36]"), w + "gap!" + bias));
  check_rejected(c, path, {path, "gap of 4 bytes", "\"bias\""});
  write_bytes(path, make_file(linear_header("[8,32]", "[0,8]"), bias + w));   // out of order, still a tiling: fine
  tg::load(c, path);
  CHECK(c.weight.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(c.bias.to_vector<float>() == std::vector<float>{7, 8});
  write_bytes(path, make_file(linear_header("[0,24]", "[24,36]"), w + bias + "more"));
  check_rejected(c, path, {path, "needs 8 bytes but data_offsets [24, 36] hold 12"});
}

TEST_CASE("checkpoint: a mismatched module reports every key in one error") {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  SmallNet a(4, 8, 3);
  tg::save(a, path);

  struct Other : tg::nn::Module {
    tg::nn::Linear fc1{4, 7}, head{8, 3};
    Other() {
      register_module("fc1", fc1);
      register_module("head", head);
    }
  } other;
  check_rejected(other, path,
                 {path, "Missing key(s) in checkpoint: \"head.weight\", \"head.bias\".",
                  "Unexpected key(s) in checkpoint: \"fc2.weight\", \"fc2.bias\".",
                  "size mismatch for fc1.weight: copying a param with shape [8, 4] from checkpoint, the shape in current model is [7, 4]",
                  "size mismatch for fc1.bias", "nothing was changed"});

  SmallNet wide(4, 8, 3);
  wide.to(tg::kFloat64);
  check_rejected(wide, path,
                 {"dtype mismatch for fc1.weight: the checkpoint has float32, the current model has float64",
                  "dtype mismatch for fc1.bias", "dtype mismatch for fc2.weight", "dtype mismatch for fc2.bias"});
}

TEST_CASE("checkpoint: the strict JSON reader rejects malformed headers with a position") {
  TempDir dir;
  const std::string path = dir.file("h.safetensors");
  const std::string data = float_bytes({1, 2});
  const std::string ok = "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}";
  struct Case {
    std::string header, data, expect;
  };
  const std::vector<Case> cases = {
      {"", data, "must be a JSON object starting with '{', found the end of the header"},
      {"[1]", data, "must be a JSON object"},
      {"{" + ok, data, "expected ',' or '}' in the top-level object"},
      {"{" + ok + "} x", data, "unexpected characters after the top-level object"},
      {"{" + ok + "," + ok + "}", data, "duplicate key \"a\""},
      {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\"}}", data, "duplicate key \"dtype\""},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", data, "only integers"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1e1],\"data_offsets\":[0,8]}}", data, "only integers"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}", data, "leading zeros"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", data, "int64 range"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", data, "arrays may only hold integers"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[[2]],\"data_offsets\":[0,8]}}", data, "arrays may only hold integers"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":{\"y\":1}}}", data, "nested deeper than 2 levels"},
      {"{\"a\":{\"dtype\":true}}", data, "expected a string, an integer or an array of integers, found 't'"},
      {"{\"a\":{\"dtype\":null}}", data, "found 'n'"},
      {"{\"a\":1}", data, "expected an object as the value of a top-level key"},
      {"{\"a\\q\":{}}", data, "invalid escape '\\q'"},
      {"{\"a", data, "unterminated string"},
      {"{\"a\x01\":{}}", data, "control characters"},
      {"{\"a\xff\":{}}", data, "invalid UTF-8"},
      {"{\"\\ud800\":{}}", data, "unpaired high surrogate"},
      {"{\"\\u0000\":{}}", data, "\\u0000"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[" + [] { std::string s = "1"; for (int i = 0; i < 64; ++i) s += ",1"; return s; }() +
           "],\"data_offsets\":[0,4]}}", data, "arrays longer than 64"},
      {"{\"a\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[0,4]}}", data.substr(0, 4),
       "unsupported dtype \"I16\" (tensorgrad reads F32, F64, I64, F16, BF16, I32, I8, U8, BOOL)"},
      {"{\"a\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[0,2]}}", std::string("\x01\x02", 2),
       "BOOL byte 1 holds 2"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", data, "negative dimension"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", data, "more elements than int64"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2147483648,2147483648],\"data_offsets\":[0,8]}}", data, "more bytes than int64"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", data, "needs 12 bytes"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", data, "invalid data_offsets [8, 0]"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", data, "array of two integers"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", data, "missing field \"data_offsets\""},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":\"1\"}}", data, "unknown field \"extra\""},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", data, "\"shape\" must be an array"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1000000],\"data_offsets\":[0,4000000]}}", data, "outside the data section of 8 bytes"},
      {"{\"__metadata__\":{\"k\":[1]}," + ok + "}", data, "must be a string"},
      {"{\"__metadata__\":{\"crc32c.b\":\"00000000\"}," + ok + "}", data, "for a tensor that is not in the file"},
      {"{\"__metadata__\":{\"crc32c.a\":\"xyz\"}," + ok + "}", data, "is not 8 hex digits"},
      {"{\"__metadata__\":{\"crc32c.a\":\"00000000\"}," + ok + "}", data, "checksum mismatch for tensor \"a\""},
      {"{\"__metadata__\":{\"format\":\"tensorgrad-1\"}," + ok + "}", data, "has no crc32c checksum"},
      {"{" + ok + "}", data + "!", "1 trailing bytes"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.header);
    write_bytes(path, make_file(c.header, c.data));
    TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, c.expect);
    TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, path);
  }

  // What the grammar does accept: escapes, surrogate pairs, whitespace, empty metadata and files.
  write_bytes(path, make_file("{ \"__metadata__\" : { } ,\n\t\"\\u00e9\\ud83d\\ude00\\/\" : {\"dtype\":\"F32\",\"shape\":[ 2 ],"
                              "\"data_offsets\":[0, 8]}}   ",
                              data));
  const auto loaded = tg::load_tensors(path);
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].first == "\xc3\xa9\xf0\x9f\x98\x80/");
  write_bytes(path, make_file("{}      ", ""));
  CHECK(tg::load_tensors(path).empty());
}

TEST_CASE("checkpoint: no temporary file is left after a successful or a failed save") {
  TempDir dir;
  tg::manual_seed(5);
  SmallNet a(33, 17, 5);
  const std::string path = dir.file("net.safetensors");
  tg::save(a, path);
  tg::save(a, path);   // overwriting is atomic too
  CHECK(dir.temp_files().empty());
  CHECK(fs::exists(path));

  // A folder that does not exist: nothing can be created.
  const std::string nowhere = dir.file("no/such/folder/net.safetensors");
  TG_CHECK_THROWS(tg::save(a, nowhere), tg::SerializationError, nowhere);
  TG_CHECK_THROWS(tg::save(a, nowhere), tg::SerializationError, "No such file or directory");

  // The destination is a folder: the temporary file is written, the rename fails, it is removed.
  const std::string folder = dir.file("folder");
  fs::create_directory(folder);
  TG_CHECK_THROWS(tg::save(a, folder), tg::SerializationError, "renaming the temporary file");
  CHECK(dir.temp_files().empty());

  // A short write (the file-size limit stands in for a full disk): the error names errno's text.
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  struct rlimit small = old;
  small.rlim_cur = 100;
  if (old.rlim_max != RLIM_INFINITY && old.rlim_max < small.rlim_cur) {
    MESSAGE("skipping the short-write check: RLIMIT_FSIZE hard limit is below 100 bytes");
  } else {
    void (*prev)(int) = ::signal(SIGXFSZ, SIG_IGN);
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::string message;
    try {
      tg::save(a, dir.file("big.safetensors"));
    } catch (const tg::SerializationError& e) {
      message = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, prev);
    CHECK(message.find("big.safetensors") != std::string::npos);
    CHECK(message.find("File too large") != std::string::npos);
    CHECK(dir.temp_files().empty());
    CHECK_FALSE(fs::exists(dir.file("big.safetensors")));
  }
  CHECK(read_bytes(path).size() > 2000);   // the earlier checkpoint is intact
  SmallNet b(33, 17, 5);
  tg::load(b, path);
  CHECK(snapshot(a) == snapshot(b));
}

TEST_CASE("checkpoint: a CUDA module is saved through the CPU and loaded back onto its device") {
  if (!tg::cuda::is_available()) {
    const char* require = std::getenv("TG_REQUIRE_CUDA");
    CHECK_MESSAGE(!(require && std::string(require) == "1"), "TG_REQUIRE_CUDA=1 but no usable GPU");
    MESSAGE("skipped: no usable GPU");
    return;
  }
  TempDir dir;
  const std::string gpu_file = dir.file("gpu.safetensors"), cpu_file = dir.file("cpu.safetensors");
  tg::manual_seed(8);
  SmallNet a(33, 17, 5), b(33, 17, 5), c(33, 17, 5);
  a.to(tg::Device::cuda());
  b.to(tg::Device::cuda());
  tg::save(a, gpu_file);
  tg::load(b, gpu_file);          // GPU -> file -> GPU
  tg::load(c, gpu_file);          // GPU -> file -> CPU
  CHECK(b.fc1.weight.device() == tg::Device::cuda(0));
  CHECK(c.fc1.weight.device() == tg::Device::cpu());
  CHECK(snapshot(a) == snapshot(b));
  CHECK(snapshot(a) == snapshot(c));
  tg::save(c, cpu_file);
  CHECK(read_bytes(cpu_file) == read_bytes(gpu_file));   // the file does not depend on the device
}

TEST_CASE("checkpoint: SGD momentum state round trip gives bitwise identical steps") {
  TempDir dir;
  const std::string model_path = dir.file("model.safetensors"), opt_path = dir.file("opt.safetensors");
  const auto options = tg::optim::SGDOptions(0.05).momentum(0.9).nesterov().weight_decay(1e-3);
  tg::manual_seed(6);
  const Tensor x = tg::randn({7, 4});
  auto step = [&x](SmallNet& net, tg::optim::SGD& opt) {
    opt.zero_grad();
    net(x).pow(2.0).mean().backward();
    opt.step();
  };

  SmallNet a;
  tg::optim::SGD opt_a(a.parameters(), options);
  CHECK(opt_a.state().empty());   // no momentum buffers before the first step
  for (int i = 0; i < 3; ++i) step(a, opt_a);
  const auto state = opt_a.state();
  REQUIRE(state.size() == 4);
  CHECK(state[0].first == "momentum_buffer.0");   // PyTorch's name for SGD's state
  CHECK(state[3].first == "momentum_buffer.3");
  tg::save(a, model_path);
  tg::save(opt_a, opt_path);

  SmallNet b, c;
  tg::optim::SGD opt_b(b.parameters(), options), opt_c(c.parameters(), options);
  tg::load(b, model_path);
  tg::load(opt_b, opt_path);
  tg::load(c, model_path);   // c gets the weights but not the momentum
  step(a, opt_a);
  step(b, opt_b);
  step(c, opt_c);
  CHECK(snapshot(a) == snapshot(b));
  CHECK(snapshot(a) != snapshot(c));   // the state mattered

  // An optimizer over other shapes refuses the state and keeps its own.
  SmallNet other(4, 9, 3);
  tg::optim::SGD opt_o(other.parameters(), options);
  step(other, opt_o);
  const auto before = opt_o.state();
  TG_CHECK_THROWS(tg::load(opt_o, opt_path), tg::SerializationError, "has shape [8, 4] but parameter 0 has shape [9, 4]");
  TG_CHECK_THROWS(tg::load(opt_o, opt_path), tg::SerializationError, opt_path);
  const auto after = opt_o.state();
  REQUIRE(after.size() == before.size());
  for (std::size_t i = 0; i < after.size(); ++i) CHECK(after[i].second.storage() == before[i].second.storage());

  tg::optim::SGD few({a.fc1.weight}, options);
  TG_CHECK_THROWS(tg::load(few, opt_path), tg::SerializationError,
                  "parameter group 0 holds other parameters in the checkpoint ([4] indices) than in the optimizer (1 "
                  "parameters from index 0)");
  // the state alone (no param_groups entries) names the entry that does not fit
  tg::save_tensors(opt_a.state(), opt_path);
  TG_CHECK_THROWS(tg::load(few, opt_path), tg::SerializationError, "unexpected entry \"momentum_buffer.1\"");
  // A model checkpoint is not an optimizer checkpoint.
  TG_CHECK_THROWS(tg::load(opt_b, model_path), tg::SerializationError, "unexpected entry \"fc1.weight\"");
}

TEST_CASE("checkpoint: the header carries format pt, the checksum kind and one crc32c per tensor") {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  tg::manual_seed(9);
  WithBuffer a(3);
  tg::save_tensors({{"x", tg::randn({5}).data()}}, path, {{"note", "kept"}});
  tg::save(a, path);
  const std::string bytes = read_bytes(path);
  const Json top = header_json(bytes);
  const Json& meta = top.at("__metadata__");
  CHECK(meta.at("format").str == "pt");   // what the Hugging Face loaders require
  CHECK(meta.at("tensorgrad.checksums").str == "crc32c");
  const std::size_t data_start = 8 + std::size_t(le64(bytes));
  std::vector<std::string> names;
  for (const auto& member : top.members) {
    const std::string& name = member.first;   // not a structured binding: clang 14's CAPTURE cannot see those
    const Json& entry = member.second;
    if (name == "__metadata__") continue;
    CAPTURE(name);
    names.push_back(name);
    const Json& offsets = entry.at("data_offsets");
    REQUIRE(offsets.items.size() == 2);
    const std::string data = bytes.substr(data_start + std::size_t(offsets.items[0].num),
                                          std::size_t(offsets.items[1].num - offsets.items[0].num));
    CHECK(meta.at("crc32c." + name).str == hex8(tg::detail::crc32c_portable(data.data(), data.size())));
  }
  CHECK(names == std::vector<std::string>{"fc.weight", "fc.bias", "steps"});
  CHECK(top.at("steps").at("dtype").str == "I64");
  CHECK(meta.members.size() == 2 + names.size());   // nothing else: metadata belongs to the call that writes
}

TEST_CASE("checkpoint: files in the tensorgrad-1 layout still load, and are still checked") {
  TempDir dir;
  const std::string path = dir.file("old.safetensors");
  tg::manual_seed(10);
  tg::nn::Linear a(3, 2), b(3, 2);
  write_bytes(path, tensorgrad1_file({{"weight", a.weight.data()}, {"bias", a.bias.data()}}));
  std::map<std::string, std::string> meta;
  CHECK(tg::load_tensors(path, &meta).size() == 2);
  CHECK(meta.at("format") == "tensorgrad-1");
  tg::load(b, path);
  CHECK(snapshot(a) == snapshot(b));

  // Their checksums are verified ...
  std::string bytes = read_bytes(path);
  bytes[bytes.size() - 5] ^= 0x40;   // inside bias
  write_bytes(path, bytes);
  tg::nn::Linear c(3, 2);
  check_rejected(c, path, {path, "checksum mismatch for tensor \"bias\"", "verify_checksums(false)"});
  // ... and every tensor of such a file must have one.
  write_bytes(path, tensorgrad1_file({{"weight", a.weight.data()}, {"bias", a.bias.data()}}, "bias"));
  check_rejected(c, path, {path, "tensor \"bias\" has no crc32c checksum", "verify_checksums(false)"});
  tg::load(c, path, tg::LoadOptions().verify_checksums(false));
  CHECK(snapshot(a) == snapshot(c));

  // SGD state of that layout names its buffers velocity.<i>; it loads as momentum_buffer.<i>.
  tg::manual_seed(11);
  const tg::RawTensor v0 = tg::randn({2, 3}).data(), v1 = tg::randn({2}).data();
  write_bytes(path, tensorgrad1_file({{"velocity.0", v0}, {"velocity.1", v1}}));
  tg::optim::SGD opt(b.parameters(), tg::optim::SGDOptions(0.1).momentum(0.9));
  tg::load(opt, path);
  const auto state = opt.state();
  REQUIRE(state.size() == 2);
  CHECK(state[0].first == "momentum_buffer.0");
  CHECK(state[1].first == "momentum_buffer.1");
  CHECK(bytes_of(state[0].second) == bytes_of(v0));
  CHECK(bytes_of(state[1].second) == bytes_of(v1));
  tg::save_tensors({{"velocity.0", v0}, {"momentum_buffer.0", v0}}, path);
  TG_CHECK_THROWS(tg::load(opt, path), tg::SerializationError, "duplicate entry \"momentum_buffer.0\"");
}

TEST_CASE("checkpoint: tensors rewritten under kept metadata are a checksum mismatch that verify_checksums(false) loads") {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  tg::manual_seed(12);
  SmallNet a;
  tg::save(a, path);
  const std::string original = read_bytes(path);

  // Another tool changed fc2.bias (3 floats, the last 12 bytes) in place and kept the header as it was.
  const std::string new_bias = float_bytes({0.25f, -4.0f, 1.5f});
  const std::string rewritten = original.substr(0, original.size() - 12) + new_bias;
  write_bytes(path, rewritten);
  SmallNet b;
  check_rejected(b, path,
                 {path, "does not match the checksums in the header", "checksum mismatch for tensor \"fc2.bias\"",
                  "another tool re-saved the tensors and kept tensorgrad's metadata", "or the file is corrupted",
                  "pass tg::LoadOptions().verify_checksums(false)"});
  TG_CHECK_THROWS(tg::load_tensors(path), tg::SerializationError, "verify_checksums(false)");
  const auto keys = tg::load(b, path, tg::LoadOptions().verify_checksums(false));
  CHECK(keys.missing_keys.empty());
  CHECK(keys.unexpected_keys.empty());
  CHECK(b.fc2.bias.to_vector<float>() == std::vector<float>{0.25f, -4.0f, 1.5f});
  CHECK(bytes_of(b.fc1.weight.data()) == bytes_of(a.fc1.weight.data()));
  CHECK(tg::load_tensors(path, nullptr, tg::LoadOptions().verify_checksums(false)).size() == 4);

  // Another tool wrote only fc1, new values, and copied tensorgrad's metadata: every problem is listed.
  const Json top = header_json(original);
  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : top.at("__metadata__").members) {
    header += std::string(first ? "" : ",") + "\"" + k + "\":\"" + v.str + "\"";
    first = false;
  }
  tg::manual_seed(13);
  const tg::RawTensor w = tg::randn({8, 4}).data(), bias = tg::randn({8}).data();
  header += "},\"fc1.weight\":{\"dtype\":\"F32\",\"shape\":[8,4],\"data_offsets\":[0,128]},"
            "\"fc1.bias\":{\"dtype\":\"F32\",\"shape\":[8],\"data_offsets\":[128,160]}}";
  write_bytes(path, make_file(header, bytes_of(w) + bytes_of(bias)));
  SmallNet c;
  check_rejected(c, path,
                 {"metadata has a checksum \"crc32c.fc2.weight\" for a tensor that is not in the file",
                  "\"crc32c.fc2.bias\" for a tensor", "checksum mismatch for tensor \"fc1.weight\"",
                  "checksum mismatch for tensor \"fc1.bias\"", "verify_checksums(false)"});
  const auto loaded = tg::load(c, path, tg::LoadOptions().verify_checksums(false).strict(false));
  CHECK(loaded.missing_keys == std::vector<std::string>{"fc2.weight", "fc2.bias"});
  CHECK(bytes_of(c.fc1.weight.data()) == bytes_of(w));
}

TEST_CASE("checkpoint: strict(false) loads the keys both have and returns the missing and unexpected ones") {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  tg::manual_seed(14);
  SmallNet a(4, 8, 3);
  a.to(tg::kFloat64);
  tg::save(a, path);

  struct Other : tg::nn::Module {
    tg::nn::Linear fc1, head{8, 3};
    Tensor extra;
    explicit Other(int64_t hidden) : fc1(4, hidden) {
      register_module("fc1", fc1);
      register_module("head", head);
      extra = tg::randn({2});
      register_buffer("extra", extra);
    }
  };
  tg::manual_seed(15);
  Other other(8);
  other.to(tg::kFloat64);
  const auto before = snapshot(other);
  check_rejected(other, path, {"Missing key(s) in checkpoint: \"head.weight\", \"head.bias\", \"extra\".",
                               "Unexpected key(s) in checkpoint: \"fc2.weight\", \"fc2.bias\".",
                               "pass tg::LoadOptions().strict(false)"});

  const tg::IncompatibleKeys keys = tg::load(other, path, tg::LoadOptions().strict(false));
  CHECK(keys.missing_keys == std::vector<std::string>{"head.weight", "head.bias", "extra"});
  CHECK(keys.unexpected_keys == std::vector<std::string>{"fc2.weight", "fc2.bias"});
  CHECK(bytes_of(other.fc1.weight.data()) == bytes_of(a.fc1.weight.data()));   // loaded
  CHECK(bytes_of(other.fc1.bias.data()) == bytes_of(a.fc1.bias.data()));
  const auto after = snapshot(other);
  CHECK(after[2] == before[2]);   // head.weight, head.bias and extra are left as they were
  CHECK(after[3] == before[3]);
  CHECK(after[4] == before[4]);

  // Shapes and dtypes still have to match, and then nothing is loaded, not even the keys that fit.
  Other narrow(7);
  narrow.to(tg::kFloat64);
  check_rejected(narrow, path, {"size mismatch for fc1.weight", "nothing was changed"}, tg::LoadOptions().strict(false));
  Other single(8);
  check_rejected(single, path, {"dtype mismatch for fc1.weight"}, tg::LoadOptions().strict(false));
  std::string msg;
  try {
    tg::load(narrow, path, tg::LoadOptions().strict(false));
  } catch (const tg::SerializationError& e) {
    msg = e.what();
  }
  CHECK(msg.find("Missing key") == std::string::npos);   // not errors when not strict

  // A strict load that matches returns empty lists; an optimizer's state never loads partly.
  SmallNet same(4, 8, 3);
  same.to(tg::kFloat64);
  const auto none = tg::load(same, path);
  CHECK(none.missing_keys.empty());
  CHECK(none.unexpected_keys.empty());
  tg::optim::SGD opt(same.parameters(), tg::optim::SGDOptions(0.1).momentum(0.9));
  TG_CHECK_THROWS(tg::load(opt, path, tg::LoadOptions().strict(false)), tg::SerializationError,
                  "strict(false) applies to modules");
}

TEST_CASE("checkpoint: a load writes through the parameters' storages: earlier views see the values") {
  TempDir dir;
  const std::string path = dir.file("net.safetensors");
  tg::manual_seed(16);
  SmallNet a(33, 17, 5), b(33, 17, 5);
  tg::save(a, path);
  const tg::RawTensor row = b.fc1.weight.data().select(0, 3);   // a view taken before the load
  const uint64_t version = b.fc1.weight.data().version();
  tg::load(b, path);
  CHECK(bytes_of(row) == bytes_of(a.fc1.weight.data().select(0, 3)));
  CHECK(b.fc1.weight.data().version() > version);   // an in-place write, as autograd must see it

  // Parameters that are not their whole storage, or not in its order, are copied into: a row of a
  // larger block (its neighbours untouched) and a transposed block.
  struct Packed : tg::nn::Module {
    tg::RawTensor block, square;
    Tensor row, transposed;
    Packed() {
      block = tg::randn({3, 4}).data();
      square = tg::randn({5, 5}).data();
      row = Tensor(block.narrow(0, 1, 1), true);
      transposed = Tensor(square.transpose(0, 1), true);
      register_parameter("row", row);
      register_parameter("transposed", transposed);
    }
  };
  Packed p, q;
  tg::save(p, path);
  const std::string first = bytes_of(q.block.select(0, 0)), last = bytes_of(q.block.select(0, 2));
  tg::load(q, path);
  CHECK(bytes_of(q.row.data()) == bytes_of(p.row.data()));
  CHECK(bytes_of(q.transposed.data()) == bytes_of(p.transposed.data()));
  CHECK(bytes_of(q.block.select(0, 0)) == first);
  CHECK(bytes_of(q.block.select(0, 2)) == last);
}

TEST_CASE("checkpoint: names and metadata that safetensors readers cannot carry are refused at save time") {
  testing::TempDir dir;
  const std::string path = dir.path + "/bad.safetensors";
  const tg::RawTensor t = tg::zeros({2}).data();
  const std::string nul("a\0b", 3);
  TG_CHECK_THROWS(tg::save_tensors({{nul, t}}, path), tg::SerializationError, "contains a NUL character");
  TG_CHECK_THROWS(tg::save_tensors({{"w\xff", t}}, path), tg::SerializationError, "is not valid UTF-8");
  TG_CHECK_THROWS(tg::save_tensors({{"\xc0\xaf", t}}, path), tg::SerializationError, "not valid UTF-8");       // overlong '/'
  TG_CHECK_THROWS(tg::save_tensors({{"\xed\xa0\x80", t}}, path), tg::SerializationError, "not valid UTF-8");   // a surrogate
  TG_CHECK_THROWS(tg::save_tensors({{"\xe2\x82", t}}, path), tg::SerializationError, "not valid UTF-8");       // cut short
  TG_CHECK_THROWS(tg::save_tensors({{"w", t}}, path, {{"note", "bad\xfe"}}), tg::SerializationError, "metadata string");
  CHECK_FALSE(std::filesystem::exists(path));
  // valid UTF-8 beyond ASCII and escaped control characters round-trip
  const std::string name = "gewicht.\xc3\xa4\xe2\x82\xac\xf0\x9f\x98\x80\t";
  tg::save_tensors({{name, t}}, path, {{"note", "line\nbreak"}});
  std::map<std::string, std::string> meta;
  const auto back = tg::load_tensors(path, &meta);
  REQUIRE(back.size() == 1);
  CHECK(back[0].first == name);
  CHECK(meta.at("note") == "line\nbreak");
}
