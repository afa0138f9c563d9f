// tests/fuzz/make_corpus.cpp: writes the committed seed corpora under tests/fuzz/corpus/<target>/:
// valid checkpoints saved by tensorgrad itself (a Linear, every dtype, SGD state, a file without
// checksums as another tool writes it, one in the tensorgrad-1 layout, one whose checksums are stale), valid IDX files (plain and gzip), one fuzz_shapes input per op,
// a few broken files of each kind, and fuzz_ops programs, one per feature. Usage: fuzz_make_corpus <corpus folder>. Rerun it (and commit
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

/// put() of a seed written as a list of byte values (each taken modulo 256).
void put_bytes(const std::string& target, const std::string& name, const std::vector<int>& bytes) {
  std::string s;
  for (int b : bytes) s += char(b & 0xFF);
  put(target, name, s);
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
  auto seed = [&](const std::string& name, const B& bytes) { put_bytes(T, name, bytes); };
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
  // a product refused for its dtypes whose other operand, expanded to the batch, would hold 2^32 elements
  seed("matmul_huge_batch_dtypes", {2, 3, 2, 1, 1, 0, I64 | EX | 4, 6, 1, 1, 0, 0});
}

// fuzz_ops programs (format: Program::decode_step in tests/fuzz/fuzz_ops.cpp). Each step is a kind
// byte and its arguments (sizes 0-4); operand bytes index the live tensors t0, t1, ... in creation order (the
// pool holds six). Value bytes: 0..16 as themselves, -k as 16 + k, halves and quarters 33 and 66
// higher (V below); inf 0xF0, -inf 0xF4, NaN 0xF8, -0 0xFC.
void ops() {
  const std::string T = "fuzz_ops";
  using B = std::vector<int>;
  auto seed = [&](const std::string& name, const B& bytes) { put_bytes(T, name, bytes); };
  auto V = [](double v) {   // the value byte of v (an integer, half or quarter in [-16, 16])
    const int scale = v == int(v) ? 1 : 2 * v == int(2 * v) ? 2 : 4;
    const int k = int(v * scale);
    return (scale == 1 ? 0 : scale == 2 ? 33 : 66) + (k >= 0 ? k : 16 - k);
  };
  const int INF = 0xF0, NINF = 0xF4;
  // step kinds
  const int MAKE = 0, BINARY = 1, UNARY = 2, REDUCE = 3, MATMUL = 4, SOFTMAX = 5, VIEW = 7, INPLACE = 8, BACKWARD = 9;
  // make header: rank | F64 | GRAD
  const int F64 = 4, GRAD = 8;
  // sub-ops
  const int MUL = 2, EXP = 1, TANH = 3, SUM_DIM = 1, SUM = 0;
  const int TRANSPOSE = 0, EXPAND = 3, NARROW = 10;
  const int ADD_ = 0, ADD_S = 3, MUL_S = 4, FILL_ = 5, COPY_ = 7;
  const int NO_GRAD = 1;
  const int SIZE3 = 4, SIZE4 = 5;   // kTargetSizes indices

  // t1 = t0.transpose(0, 1); in-place ops on t1 write into t0; t0.add_(t1) (shapes that fit) overlaps
  // partially: refused.
  seed("inplace_through_transpose",
       {MAKE, 2, 2, 2, V(1), V(2), V(3), V(-6),
        VIEW, TRANSPOSE, 0, 0, 1,
        MAKE, 2, 2, 2, V(0.5), V(-1), V(0.25), V(-4),
        INPLACE, ADD_, 0, 1, 2,
        INPLACE, MUL_S, 0, 1, V(-0.5),
        INPLACE, ADD_, 0, 0, 1,
        REDUCE, SUM, 0});
  // t1 = t0.expand(4, 3): writing t1 would hit each element of t0 four times: refused; writing t0 is fine.
  seed("expanded_write_refused",
       {MAKE, 2, 1, 3, V(1), V(2), V(3),
        VIEW, EXPAND, 0, 2, SIZE4, SIZE3,
        INPLACE, ADD_S, 0, 1, V(1),
        INPLACE, FILL_, 0, 1, V(7),
        INPLACE, MUL_S, 0, 0, V(2),
        UNARY, EXP, 1});
  // t1 = t0[0:3], t2 = t0[1:4]: dense, overlapping, not the same view: t1.copy_(t2) is refused;
  // t1.copy_(t1) and t0.add_(t0) are fine.
  seed("partial_overlap_copy_refused",
       {MAKE, 1 | F64, 4, V(1), V(2), V(3), V(4),
        VIEW, NARROW, 0, 0, 0, 3,
        VIEW, NARROW, 0, 0, 1, 3,
        INPLACE, COPY_, 0, 1, 2,
        INPLACE, COPY_, 0, 1, 1,
        INPLACE, ADD_, 0, 0, 0});
  // matmul, tanh, mul, exp, sum over the last dim, backward, from a float32 leaf that requires grad.
  seed("chain_out_of_place",
       {MAKE, 2 | GRAD, 2, 3, V(0.5), V(-1), V(2), V(1.5), V(0), V(-0.25),
        MAKE, 2, 3, 2, V(1), V(2), V(-3), V(0.5), V(4), V(-1),
        MATMUL, 0, 1,
        UNARY, TANH, 2,
        BINARY, MUL, 3, 3,
        UNARY, EXP, 4,
        REDUCE, SUM_DIM, 5, 0xFF, 1,
        BACKWARD, 5});
  // Rows with -inf, of -inf only and with +inf (both NaN), softmax and log_softmax over both dims.
  seed("softmax_inf",
       {MAKE, 2, 2, 3, NINF, V(1), V(2), NINF, NINF, NINF,
        SOFTMAX, 0, 0, 1,
        SOFTMAX, 1, 0, 1,
        SOFTMAX, 0, 0, 0,
        MAKE, 1 | F64, 3, INF, V(0), V(1),
        SOFTMAX, 1, 4, 0});
  // In-place on a float64 leaf that requires grad is refused, allowed under NoGradGuard, refused on a
  // view of it; then backward twice (the second finds the graph freed).
  seed("grad_leaf_inplace_backward",
       {MAKE, 2 | F64 | GRAD, 2, 2, V(1), V(2), V(3), V(4),
        INPLACE, ADD_S, 0, 0, V(1),
        INPLACE, ADD_S, NO_GRAD, 0, V(1),
        VIEW, TRANSPOSE, 0, 0, 1,
        INPLACE, MUL_S, 0, 1, V(2),
        BINARY, MUL, 0, 1,
        BACKWARD, 2,
        BACKWARD, 2});
  // t1 = t0[:, 0:2], t2 = t0[:, 1:3] are not dense: tg cannot judge the overlap of t1.copy_(t2) and lets it through.
  seed("too_hard_overlap",
       {MAKE, 2, 3, 3, V(1), V(2), V(3), V(4), V(5), V(6), V(7), V(8), V(9),
        VIEW, NARROW, 0, 1, 0, 2,
        VIEW, NARROW, 0, 1, 1, 2,
        INPLACE, COPY_, 0, 1, 2,
        REDUCE, SUM, 0});
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
    ops();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_corpus: %s\n", e.what());
    std::remove(scratch.c_str());
    return 1;
  }
  std::remove(scratch.c_str());
  std::printf("seed corpora written under %s\n", g_root.c_str());
  return 0;
}
