// tests/fuzz/make_corpus.cpp: writes the committed seed corpora under tests/fuzz/corpus/<target>/:
// valid checkpoints saved by tensorgrad itself (a Linear, every dtype, SGD state, a file without
// checksums as another tool writes it, one in the tensorgrad-1 layout, one whose checksums are stale), valid IDX files (plain and gzip), one fuzz_shapes input per op,
// and a few broken files of each kind. Usage: fuzz_make_corpus <corpus folder>. Rerun it (and commit
// the result) when an input format changes.
#include <tensorgrad.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string g_root;

void put(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = fs::path(g_root) / target;
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + (dir / name).string());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((v >> (8 * i)) & 0xFF);
  return out;
}

std::string be32(uint32_t v) {
  return std::string{char(v >> 24), char((v >> 16) & 0xFF), char((v >> 8) & 0xFF), char(v & 0xFF)};
}

std::string gzip(const std::string& bytes, const std::string& scratch) {
  gzFile f = gzopen(scratch.c_str(), "wb");
  if (!f || gzwrite(f, bytes.data(), unsigned(bytes.size())) != int(bytes.size()) || gzclose(f) != Z_OK)
    throw std::runtime_error("gzip failed");
  return slurp(scratch);
}

struct Net : tg::nn::Module {   // the module fuzz_checkpoint loads into
  tg::nn::Linear fc{3, 2};
  Net() { register_module("fc", fc); }
};

// Named *.safetensors.seed: .gitignore keeps *.safetensors out of the repository.
void checkpoints(const std::string& scratch) {
  const std::string T = "fuzz_checkpoint";
  tg::manual_seed(7);
  Net net;
  tg::save(net, scratch);
  const std::string linear = slurp(scratch);
  put(T, "linear_3x2.safetensors.seed", linear);

  tg::save_tensors({{"f32", tg::randn({2, 3}).data()},
                    {"f64", tg::randn({}, tg::TensorOptions().dtype(tg::kFloat64)).data()},
                    {"i64", tg::randint(-5, 5, {4}).data()},
                    {"empty", tg::zeros({0, 5}).data()}},
                   scratch, {{"note", "every dtype, 0-d and zero-size"}});
  put(T, "all_dtypes.safetensors.seed", slurp(scratch));

  tg::optim::SGD sgd(net.parameters(), tg::optim::SGDOptions(0.1).momentum(0.9));
  tg::nn::CrossEntropyLoss loss;
  loss(net.fc(tg::randn({4, 3})), tg::randint(0, 2, {4})).backward();
  sgd.step();
  tg::save(sgd, scratch);
  put(T, "sgd_momentum.safetensors.seed", slurp(scratch));

  // As the reference writer does it: no metadata, no checksums.
  const std::string header = "{\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                             "\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}}";
  put(T, "foreign_no_crc.safetensors.seed", le64(header.size()) + header + std::string(32, '\x01'));
  put(T, "empty_object.safetensors.seed", le64(8) + "{}      ");

  // The tensorgrad-1 layout (format tensorgrad-1, SGD state named velocity.<i>), checksums by hand.
  const std::string w(24, '\x02'), b(8, '\x03'), v(24, '\x04');
  auto crc = [](const std::string& s) {
    char buf[9];
    std::snprintf(buf, sizeof buf, "%08x", tg::detail::crc32c(s.data(), s.size()));
    return std::string(buf);
  };
  const std::string old = "{\"__metadata__\":{\"format\":\"tensorgrad-1\",\"crc32c.fc.weight\":\"" + crc(w) +
                          "\",\"crc32c.fc.bias\":\"" + crc(b) + "\"},\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                          "\"data_offsets\":[0,24]},\"fc.bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}}";
  put(T, "tensorgrad1_linear.safetensors.seed", le64(old.size()) + old + w + b);
  const std::string old_sgd = "{\"__metadata__\":{\"format\":\"tensorgrad-1\",\"crc32c.velocity.0\":\"" + crc(v) +
                              "\"},\"velocity.0\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}";
  put(T, "tensorgrad1_sgd.safetensors.seed", le64(old_sgd.size()) + old_sgd + v);
  // Re-saved by another tool that changed a tensor and kept the metadata: stale checksums.
  std::string stale = linear;
  stale.replace(stale.size() - 8, 8, std::string(8, '\x05'));
  put(T, "stale_checksum.safetensors.seed", stale);

  // Broken ones.
  put(T, "broken_truncated.safetensors.seed", linear.substr(0, linear.size() / 2));
  std::string flipped = linear;
  flipped[flipped.size() - 3] = char(flipped[flipped.size() - 3] ^ 0x10);
  put(T, "broken_bitflip.safetensors.seed", flipped);
  put(T, "broken_header_length.safetensors.seed", le64(uint64_t(1) << 60) + "{}");
  put(T, "broken_short.safetensors.seed", "\x05\x00\x00");
  const std::string bad = "{\"x\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,16]}}";
  put(T, "broken_huge_shape.safetensors.seed", le64(bad.size()) + bad + std::string(16, '\0'));
}

void idx_files(const std::string& scratch) {
  const std::string T = "fuzz_idx";
  std::string images = be32(0x00000803) + be32(2) + be32(3) + be32(4);
  for (int i = 0; i < 24; ++i) images += char(i * 10);
  std::string labels = be32(0x00000801) + be32(5);
  for (int i = 0; i < 5; ++i) labels += char(i * 2);
  put(T, "images_2x3x4.idx", images);
  put(T, "images_2x3x4.idx.gz", gzip(images, scratch));
  put(T, "labels_5.idx", labels);
  put(T, "labels_5.idx.gz", gzip(labels, scratch));
  put(T, "images_empty.idx", be32(0x00000803) + be32(0) + be32(28) + be32(28));
  put(T, "broken_images_truncated.idx", images.substr(0, 20));
  put(T, "broken_labels_out_of_range.idx", be32(0x00000801) + be32(2) + std::string{char(3), char(12)});
  put(T, "broken_trailing.idx", labels + "x");
  put(T, "broken_huge_dims.idx", be32(0x00000803) + be32(0xffffffffu) + be32(0xffffffffu) + be32(2));
  const std::string gz = gzip(images, scratch);
  put(T, "broken_gzip_truncated.idx.gz", gz.substr(0, gz.size() - 6));
}

// fuzz_shapes inputs (format: tests/fuzz/fuzz_shapes.cpp). Operand header h = rank | layout << 3 |
// dtype << 5 | grad << 7; size bytes index {0, 1, 2, 3, 5, 1, 2^31, 2^62}; then a mask byte.
// Target sizes index {0, 1, 2, 3, 5, 2^31, -1, 2^62, -2, 4, 6, 1, 2^32, max, min, -1}.
void shapes() {
  const std::string T = "fuzz_shapes";
  using B = std::vector<int>;
  auto seed = [&](const std::string& name, const B& bytes) {
    std::string s;
    for (int b : bytes) s += char(b & 0xFF);
    put(T, name, s);
  };
  const int G = 0x80, TR = 1 << 3, EX = 2 << 3, SL = 3 << 3, F64 = 2 << 5, I64 = 3 << 5;
  seed("add_broadcast", {0, G | 2, 2, 3, 0, G | 1, 3, 0});
  seed("mul_transposed_expanded", {1, G | TR | 2, 3, 2, 0, G | EX | 2, 3, 2, 1});
  seed("matmul_2d", {2, G | 2, 2, 3, 0, G | TR | 2, 3, 4, 0});
  seed("matmul_batched_f64", {2, G | F64 | 3, 2, 2, 3, 0, G | F64 | 2, 3, 4, 0});
  seed("sum_all_slice", {3, SL | 3, 3, 2, 4, 0});
  seed("sum_dim_keepdim", {4, G | 3, 2, 3, 4, 0, 1, 1});
  seed("mean_dim_negative", {5, G | F64 | 2, 4, 3, 0, 0xff, 0});
  seed("max_all_int64", {6, I64 | 2, 3, 3, 0});
  seed("max_dim_zero_size", {7, G | 2, 0, 3, 0, 1, 0});
  seed("reshape_infer", {8, G | 2, 2, 3, 0, 2, 3, 6});
  seed("reshape_huge", {8, 2, 2, 3, 0, 3, 7, 7, 6});
  seed("view_transposed", {9, G | TR | 2, 2, 3, 0, 1, 6});
  seed("transpose", {10, G | 3, 2, 3, 4, 0, 0, 2});
  seed("permute", {11, G | 3, 2, 3, 4, 0, 3, 2, 0, 1});
  seed("expand_new_dims", {12, G | 2, 1, 3, 0, 3, 2, 6, 3});
  seed("expand_huge_overflow", {12, 2, 1, 3, 0, 3, 7, 7, 3});
  seed("squeeze", {13, G | 3, 1, 3, 1, 0});
  seed("squeeze_dim", {14, G | 3, 1, 3, 1, 0, 0xfd});
  seed("unsqueeze", {15, G | 2, 2, 3, 0, 2});
  seed("cat_two", {16, 1, G | 2, 2, 3, 0, G | 2, 3, 3, 0, 0});
  seed("cat_huge_views", {16, 1, EX | 2, 7, 1, 3, EX | 2, 7, 1, 3, 0});
  seed("index_select", {17, G | 2, 3, 2, 0, 0, 1 | (2 << 2), 0, 2});
  seed("gather", {18, G | 2, 3, 2, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 0});
  seed("softmax", {19, G | 2, 2, 4, 0, 1});
  seed("log_softmax_f64", {20, G | F64 | 3, 2, 2, 3, 0, 0xff});
  seed("cross_entropy", {21, G | 2, 3, 4, 0, 1 << 2, 0, 1, 4});
  seed("zeros_negative", {22, 2, 3, 8, 0});
  seed("zeros_overflow", {22, 3, 7, 7, 4, 1});
  seed("flatten", {23, G | 4, 2, 1, 3, 2, 0, 1, 2});
  seed("add_huge_expanded", {0, EX | 2, 6, 2, 0, EX | 2, 1, 2, 0});
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  const std::string scratch = (fs::temp_directory_path() / ("tg_make_corpus_" + std::to_string(::getpid()))).string();
  try {
    checkpoints(scratch);
    idx_files(scratch);
    shapes();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_corpus: %s\n", e.what());
    std::remove(scratch.c_str());
    return 1;
  }
  std::remove(scratch.c_str());
  std::printf("seed corpora written under %s\n", g_root.c_str());
  return 0;
}
