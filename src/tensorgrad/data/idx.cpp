// data/idx.cpp: the IDX reader and the MNIST / Fashion-MNIST datasets. Every check happens before the
// memory it guards is allocated. With zlib (TENSORGRAD_HAVE_ZLIB, set by CMake when it finds zlib) files
// are read through zlib's gz* calls, which read gzip and plain files alike; without it, through stdio,
// which reads plain files and refuses a gzip file with an IOError that says what to do.
#include "tensorgrad/data/idx.h"

#if TENSORGRAD_HAVE_ZLIB
#include <zlib.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>

#include "tensorgrad/core/error.h"
#include "tensorgrad/core/raw_tensor.h"

namespace tg {
namespace data {

namespace {

constexpr int64_t kMaxIdxBytes = int64_t(1) << 32;      // 4 GiB of elements: far above any MNIST-like file
constexpr std::size_t kChunk = std::size_t(4) << 20;    // bytes asked of zlib per read

std::string hex(uint32_t v, int digits = 8) {   // "0x00000803"
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", digits, static_cast<unsigned>(v));
  return buf;
}

uint32_t big_endian32(const unsigned char* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

#if TENSORGRAD_HAVE_ZLIB
/// A file opened through zlib: gzip is decompressed, anything else is read as it is. Counts the bytes
/// delivered so that errors can name the byte offset (in the decompressed data for gzip files).
class GzReader {
 public:
  explicit GzReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      const int err = errno;
      throw IOError(detail::cat("read_idx: cannot open '", path, "': ", err ? std::strerror(err) : "out of memory"));
    }
    gzbuffer(file_, 1u << 17);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  /// Reads up to n bytes into dst; fewer only at the end of the data. Read and gzip errors throw.
  std::size_t read(void* dst, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const unsigned want = static_cast<unsigned>(std::min<std::size_t>(n - got, kChunk));
      errno = 0;
      const int r = gzread(file_, static_cast<unsigned char*>(dst) + got, want);
      if (r > 0) {
        got += static_cast<std::size_t>(r);
        offset_ += r;
        continue;
      }
      int code = Z_OK;
      const char* msg = gzerror(file_, &code);
      if (code == Z_ERRNO)
        throw IOError(detail::cat("read_idx: cannot read '", path_, "': ", std::strerror(errno ? errno : EIO)));
      if (code == Z_BUF_ERROR)   // zlib's "unexpected end of file": the gzip stream itself is cut short
        throw DataError(detail::cat("read_idx: '", path_, "' is truncated: its gzip stream ends unexpectedly near ",
                                    where()));
      if (code != Z_OK)
        throw DataError(detail::cat("read_idx: '", path_, "' holds corrupt gzip data near ", where(), ": ", msg));
      break;   // end of the data
    }
    return got;
  }

  int64_t offset() const { return offset_; }
  /// "byte offset 16", with "of the decompressed data" for gzip files.
  std::string where() const {
    return detail::cat("byte offset ", offset_, gzdirect(file_) ? "" : " of the decompressed data");
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  int64_t offset_ = 0;
};
#endif

/// A file opened through stdio, the reader of a build without zlib: plain files are read as they are,
/// and a file that starts with the gzip magic bytes (1f 8b) raises IOError at open. The same interface
/// and messages as GzReader for plain files.
class PlainReader {
 public:
  explicit PlainReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = std::fopen(path.c_str(), "rb");
    if (!file_) {
      const int err = errno;
      throw IOError(detail::cat("read_idx: cannot open '", path, "': ", err ? std::strerror(err) : "out of memory"));
    }
    // The first two bytes are kept in head_ and handed out by read() before the rest of the file, so
    // that pipes and other unseekable files work too.
    try {
      head_size_ = raw_read(head_, 2);
    } catch (...) {
      std::fclose(file_);
      throw;
    }
    if (head_size_ == 2 && head_[0] == 0x1f && head_[1] == 0x8b) {
      std::fclose(file_);
      throw IOError(detail::cat("read_idx: '", path,
                                "' is gzip-compressed, and tensorgrad was built without zlib: gunzip the file "
                                "or rebuild with zlib1g-dev"));
    }
  }
  ~PlainReader() { std::fclose(file_); }
  PlainReader(const PlainReader&) = delete;
  PlainReader& operator=(const PlainReader&) = delete;

  /// Reads up to n bytes into dst; fewer only at the end of the file. Read errors throw.
  std::size_t read(void* dst, std::size_t n) {
    auto* out = static_cast<unsigned char*>(dst);
    std::size_t got = 0;
    for (; got < n && head_used_ < head_size_; ++got) out[got] = head_[head_used_++];
    got += raw_read(out + got, n - got);
    offset_ += static_cast<int64_t>(got);
    return got;
  }

  int64_t offset() const { return offset_; }
  /// "byte offset 16".
  std::string where() const { return detail::cat("byte offset ", offset_); }

 private:
  std::size_t raw_read(unsigned char* dst, std::size_t n) {
    errno = 0;
    const std::size_t got = std::fread(dst, 1, n, file_);
    if (got < n && std::ferror(file_))
      throw IOError(detail::cat("read_idx: cannot read '", path_, "': ", std::strerror(errno ? errno : EIO)));
    return got;
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  unsigned char head_[2] = {0, 0};
  std::size_t head_size_ = 0, head_used_ = 0;
  int64_t offset_ = 0;
};

std::string what_magic(uint32_t magic) {
  if (magic == 0x00000803u) return "IDX images: unsigned bytes, 3 dimensions";
  if (magic == 0x00000801u) return "IDX labels: unsigned bytes, 1 dimension";
  return detail::cat("IDX unsigned bytes, ", magic & 0xffu, " dimensions");
}

/// read_idx over one of the readers above (GzReader or PlainReader).
template <class Reader>
IdxArray read_idx_with(const std::string& path, int rank) {
  TG_CHECK(rank >= 1 && rank <= 255, Error, "read_idx: rank must be in [1, 255], got ", rank);
  Reader in(path);
  const uint32_t expected = 0x00000800u | static_cast<uint32_t>(rank);

  unsigned char head[4];
  TG_CHECK(in.read(head, 4) == 4, DataError, "read_idx: '", path, "' is too short for an IDX file: it ends at ",
           in.where(), ", inside the 4-byte magic number (expected ", hex(expected), ")");
  const uint32_t magic = big_endian32(head);
  if (magic != expected) {
    std::string hint = "; is this the right file, and an IDX file (gzip or plain)?";
    if (magic == 0x00000803u || magic == 0x00000801u)
      hint = detail::cat("; this is ", what_magic(magic), ": images and labels files swapped?");
    else if (head[0] == 0 && head[1] == 0 && head[2] != 0x08)
      hint = detail::cat("; its element type ", hex(head[2], 2), " is not unsigned bytes (0x08)");
    throw DataError(detail::cat("read_idx: '", path, "': bad magic number ", hex(magic), " at byte offset 0, expected ",
                                hex(expected), " (", what_magic(expected), ")", hint));
  }

  IdxArray out;
  int64_t total = 1;   // elements; kept <= kMaxIdxBytes, so the products below cannot overflow
  for (int r = 0; r < rank; ++r) {
    unsigned char b[4];
    TG_CHECK(in.read(b, 4) == 4, DataError, "read_idx: '", path, "' is truncated: it ends at ", in.where(),
             ", inside dimension ", r, " of its header (a rank-", rank, " IDX header is ", 4 + 4 * rank, " bytes)");
    const int64_t d = big_endian32(b);
    out.dims.push_back(d);
    TG_CHECK(d == 0 || total <= kMaxIdxBytes / d, DataError, "read_idx: '", path, "': dimension ", r, " = ", d,
             " at byte offset ", 4 + 4 * r, " makes the header dims ", shape_str(out.dims),
             (r + 1 < rank ? " (and more)" : ""), " promise more than ", kMaxIdxBytes,
             " bytes, which this reader refuses; the header is corrupt");
    total *= d;
  }

  // Read in chunks that double from 64 KiB up to kChunk: memory grows with the bytes that are really
  // there (at most twice them plus 64 KiB), not with what the header says.
  const int64_t header = 4 + 4 * int64_t(rank);
  while (static_cast<int64_t>(out.bytes.size()) < total) {
    const std::size_t old = out.bytes.size();
    const int64_t step = std::min<int64_t>(int64_t(kChunk), std::max<int64_t>(int64_t(old), int64_t(1) << 16));
    const std::size_t want = static_cast<std::size_t>(std::min<int64_t>(total - int64_t(old), step));
    try {
      out.bytes.resize(old + want);
    } catch (const std::exception&) {   // std::bad_alloc: at most 4 GiB, but that may be more than there is
      throw OutOfMemoryError(detail::cat("read_idx: '", path, "': cannot allocate ", old + want, " bytes for the ",
                                         total, " bytes its header (dims ", shape_str(out.dims), ") promises"));
    }
    const std::size_t got = in.read(out.bytes.data() + old, want);
    out.bytes.resize(old + got);
    if (got < want) break;
  }
  const int64_t have = static_cast<int64_t>(out.bytes.size());
  if (have < total) {
    const int64_t record_size = total / out.dims[0];   // total > 0 here, so dims[0] > 0
    throw DataError(detail::cat("read_idx: '", path, "' is truncated: it ends at ", in.where(), " but its header (dims ",
                                shape_str(out.dims), ") promises ", header + total, " bytes; record ",
                                have / record_size, " of ", out.dims[0], " (counting from 0) is incomplete"));
  }
  unsigned char extra;
  TG_CHECK(in.read(&extra, 1) == 0, DataError, "read_idx: '", path, "' has data after the ", out.dims[0],
           " records its header (dims ", shape_str(out.dims), ") promises, at byte offset ", header + total,
           "; the header or the file is wrong");
  return out;
}

}  // namespace

IdxArray read_idx(const std::string& path, int rank) {
#if TENSORGRAD_HAVE_ZLIB
  return read_idx_with<GzReader>(path, rank);
#else
  return read_idx_with<PlainReader>(path, rank);
#endif
}

Tensor read_idx_images(const std::string& path) {
  const IdxArray a = read_idx(path, 3);
  // (N, rows, cols) bytes -> (N, 1, rows, cols) float32 = byte / 255 (a table: exactly float(v) / 255).
  float table[256];
  for (int v = 0; v < 256; ++v) table[v] = static_cast<float>(v) / 255.0f;
  RawTensor out = RawTensor::empty({a.dims[0], 1, a.dims[1], a.dims[2]}, kFloat32);   // set below
  float* p = out.data<float>();
  for (std::size_t i = 0; i < a.bytes.size(); ++i) p[i] = table[a.bytes[i]];
  return Tensor(out);
}

Tensor read_idx_labels(const std::string& path, int64_t num_classes) {
  TG_CHECK(num_classes >= 1, Error, "read_idx_labels: num_classes must be positive, got ", num_classes);
  const IdxArray a = read_idx(path, 1);
  RawTensor out = RawTensor::empty({a.dims[0]}, kInt64);   // (N), set below
  int64_t* p = out.data<int64_t>();
  for (std::size_t i = 0; i < a.bytes.size(); ++i) {
    TG_CHECK(a.bytes[i] < num_classes, DataError, "read_idx_labels: '", path, "': label ", int(a.bytes[i]),
             " of record ", i, " (byte offset ", 8 + i, ") is out of range for ", num_classes, " classes [0, ",
             num_classes, ")");
    p[i] = a.bytes[i];
  }
  return Tensor(out);
}

// ------------------------------------------------------------------------------------------------
// MNIST and Fashion-MNIST

namespace {

TensorDataset load_mnist(const std::string& root, Split split, const char* name, const char* missing_hint) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw IOError(detail::cat(name, ": dataset folder '", root, "' ",
                              fs::exists(root, ec) ? "is not a folder" : "does not exist", ". ", missing_hint,
                              "The folder must hold train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                              "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (plain, unzipped files work "
                              "too)."));
  // Prefer name.gz; fall back to an unzipped name; report the .gz path when neither exists.
  auto locate = [&](const std::string& stem) {
    const fs::path gz = fs::path(root) / (stem + ".gz"), plain = fs::path(root) / stem;
    return (!fs::exists(gz, ec) && fs::exists(plain, ec)) ? plain.string() : gz.string();
  };
  const std::string prefix = split == Split::Train ? "train" : "t10k";
  const std::string images_path = locate(prefix + "-images-idx3-ubyte");
  const std::string labels_path = locate(prefix + "-labels-idx1-ubyte");
  Tensor images = read_idx_images(images_path);        // (N, 1, 28, 28)
  Tensor labels = read_idx_labels(labels_path, 10);    // (N)
  TG_CHECK(images.size(0) == labels.size(0), DataError, name, ": '", images_path, "' holds ", images.size(0),
           " images but '", labels_path, "' holds ", labels.size(0), " labels; they must pair up one to one");
  return TensorDataset(images, labels);
}

}  // namespace

MNIST::MNIST(const std::string& root, Split split) : MNIST(root, split, "MNIST", "") {}

MNIST::MNIST(const std::string& root, Split split, const char* name, const char* missing_hint)
    : TensorDataset(load_mnist(root, split, name, missing_hint)), split_(split) {}

FashionMNIST::FashionMNIST(const std::string& root, Split split)
    : MNIST(root, split, "FashionMNIST",
            "Install Fashion-MNIST with `apt-get install dataset-fashion-mnist` (it puts the files in "
            "/usr/share/datasets/fashion-mnist). ") {}

const std::vector<std::string>& FashionMNIST::classes() {
  static const std::vector<std::string> names{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                              "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

}  // namespace data

namespace detail {

bool idx_reads_gzip() { return TENSORGRAD_HAVE_ZLIB != 0; }

data::IdxArray read_idx_plain(const std::string& path, int rank) {
  return data::read_idx_with<data::PlainReader>(path, rank);
}

}  // namespace detail
}  // namespace tg
