// io/safetensors.cpp: the safetensors writer (atomic: a temporary file, fsync, rename) and the strict
// reader of io/safetensors.h. The JSON of the header is io/json.h's, the checksums io/crc32c.h's.
//
// Format (https://github.com/huggingface/safetensors): 8-byte little-endian uint64 N, N bytes of
// JSON header padded with spaces, then the raw little-endian row-major data. The header maps each
// tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data
// section) plus an optional "__metadata__" object of strings. tensorgrad writes "format": "pt" (the
// Hugging Face loaders refuse other values), "tensorgrad.checksums": "crc32c" (every tensor has a
// checksum) and one "crc32c.<name>": "<8 hex digits>" per tensor. Files marked "format":
// "tensorgrad-1" carry the same checksums and are read the same way.
#include "tensorgrad/io/safetensors.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include "tensorgrad/core/error.h"
#include "tensorgrad/io/json.h"

namespace tg {

namespace {

using json::HeaderParser;
using json::hex32;
using json::InnerObject;
using json::json_string;
using json::Leaf;
using json::printable;
using json::unsavable_string;

constexpr uint64_t kMaxHeaderBytes = 100000000;   // 100 MB, the reference implementation's bound
constexpr std::size_t kReadChunk = std::size_t(1) << 20;   // read, then checksummed while in the L2 cache
const char* const kFormat = "pt";
const char* const kFormatTensorgrad1 = "tensorgrad-1";   // same checksums, marked by the format alone
const char* const kChecksumsKey = "tensorgrad.checksums";
const char* const kChecksumsCrc32c = "crc32c";
const char* const kReservedPrefix = "tensorgrad.";
const char* const kCrcPrefix = "crc32c.";

bool host_is_little_endian() {
  const uint16_t one = 1;
  unsigned char first = 0;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

void swap_elements(void* data, std::size_t count, std::size_t elem_size) {
  auto* p = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < count; ++i, p += elem_size) std::reverse(p, p + elem_size);
}

const char* safetensors_dtype(DType t) {   // the dtype table's safetensors column
  switch (t) {
#define TG_DTYPE_ST(e, T, Acc, name, st, fl) \
  case DType::e:                             \
    return st;
    TG_FORALL_DTYPES(TG_DTYPE_ST)
#undef TG_DTYPE_ST
  }
  tg::detail::unknown_dtype(t);
}

bool parse_safetensors_dtype(const std::string& s, DType* out) {
#define TG_DTYPE_PARSE(e, T, Acc, name, st, fl) \
  if (s == st) {                                \
    *out = DType::e;                            \
    return true;                                \
  }
  TG_FORALL_DTYPES(TG_DTYPE_PARSE)
#undef TG_DTYPE_PARSE
  return false;
}

/// "F32, F64, ...": the dtype table's safetensors names, for error messages.
std::string safetensors_dtype_list() {
  std::string list;
#define TG_DTYPE_LIST(e, T, Acc, name, st, fl) list += std::string(list.empty() ? "" : ", ") + st;
  TG_FORALL_DTYPES(TG_DTYPE_LIST)
#undef TG_DTYPE_LIST
  return list;
}


bool parse_hex32(const std::string& s, uint32_t* out) {
  if (s.size() != 8) return false;
  uint32_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return false;
    v = (v << 4) | uint32_t(d);
  }
  *out = v;
  return true;
}

std::string errno_text(int err) { return err != 0 ? std::strerror(err) : "short write"; }

struct FileCloser {
  FILE* f = nullptr;
  ~FileCloser() {
    if (f) std::fclose(f);
  }
};

struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

/// Reads exactly n bytes at offset into dst (retrying interrupted and short reads). Returns 0, or the
/// errno of a failed read, or -1 when the file ends first.
int read_exactly(int fd, void* dst, std::size_t n, uint64_t offset) {
  auto* p = static_cast<unsigned char*>(dst);
  while (n != 0) {
    const ssize_t got = ::pread(fd, p, n, off_t(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return errno;
    if (got == 0) return -1;
    p += got;
    n -= std::size_t(got);
    offset += uint64_t(got);
  }
  return 0;
}

struct TensorInfo {
  std::string name;
  DType dtype = kFloat32;
  Shape shape;
  int64_t begin = 0, end = 0;
  int64_t nbytes = 0;
};

/// Checks one header entry on its own and turns it into a TensorInfo (offsets vs the file: by the caller).
TensorInfo tensor_info(const std::string& where, const std::string& name, const InnerObject& fields) {
  TensorInfo info;
  info.name = name;
  const Leaf* dtype = nullptr;
  const Leaf* shape = nullptr;
  const Leaf* offsets = nullptr;
  const std::string tensor = detail::cat(where, ": tensor \"", name, "\": ");
  for (const auto& f : fields) {
    if (f.first == "dtype") dtype = &f.second;
    else if (f.first == "shape") shape = &f.second;
    else if (f.first == "data_offsets") offsets = &f.second;
    else throw SerializationError(detail::cat(tensor, "unknown field \"", f.first, "\" (expected dtype, shape, data_offsets)"));
  }
  TG_CHECK(dtype && shape && offsets, SerializationError, tensor, "missing field \"",
           !dtype ? "dtype" : !shape ? "shape" : "data_offsets", "\"");
  TG_CHECK(dtype->kind == Leaf::String, SerializationError, tensor, "\"dtype\" must be a string");
  TG_CHECK(parse_safetensors_dtype(dtype->str, &info.dtype), SerializationError, tensor, "unsupported dtype \"",
           dtype->str, "\" (tensorgrad reads ", safetensors_dtype_list(), ")");
  TG_CHECK(shape->kind == Leaf::IntArray, SerializationError, tensor, "\"shape\" must be an array of integers");
  TG_CHECK(offsets->kind == Leaf::IntArray && offsets->arr.size() == 2, SerializationError, tensor,
           "\"data_offsets\" must be an array of two integers [begin, end]");
  info.shape = shape->arr;
  int64_t numel = 1;
  for (int64_t d : info.shape) {
    TG_CHECK(d >= 0, SerializationError, tensor, "negative dimension in shape ", shape_str(info.shape));
    TG_CHECK(d == 0 || numel <= std::numeric_limits<int64_t>::max() / d, SerializationError, tensor, "shape ",
             shape_str(info.shape), " has more elements than int64 can count");
    numel *= d;
  }
  const int64_t elem = int64_t(dtype_size(info.dtype));
  TG_CHECK(numel <= std::numeric_limits<int64_t>::max() / elem, SerializationError, tensor, "shape ",
           shape_str(info.shape), " needs more bytes than int64 can count");
  info.nbytes = numel * elem;
  info.begin = offsets->arr[0];
  info.end = offsets->arr[1];
  TG_CHECK(info.begin >= 0 && info.begin <= info.end, SerializationError, tensor, "invalid data_offsets [", info.begin,
           ", ", info.end, "] (need 0 <= begin <= end)");
  TG_CHECK(info.end - info.begin == info.nbytes, SerializationError, tensor, dtype->str, " ", shape_str(info.shape),
           " needs ", info.nbytes, " bytes but data_offsets [", info.begin, ", ", info.end, "] hold ",
           info.end - info.begin);
  return info;
}

}  // namespace

// save_tensors

namespace {
/// Removes `<name>.tmp.<pid>.<n>` files (and the older `<name>.tmp.<pid>`) in dir left by saves of the
/// same checkpoint that were killed: those whose process no longer exists. A live process's temporary
/// file (a save under way) is kept.
/// Best effort: a file that cannot be listed or removed is left alone.
void remove_stale_temp_files(const std::string& dir, const std::string& name) {
  const std::string prefix = name + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string file = e->d_name;
    if (file.size() <= prefix.size() || file.compare(0, prefix.size(), prefix) != 0) continue;
    std::string digits = file.substr(prefix.size());
    digits = digits.substr(0, digits.find('.'));   // the pid, before the per-save counter
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;   // alive, or not ours to judge (EPERM)
    (void)::unlink((dir + "/" + file).c_str());
  }
  ::closedir(d);
}
}  // namespace

void save_tensors(const std::vector<std::pair<std::string, RawTensor>>& tensors, const std::string& path,
                  const std::map<std::string, std::string>& metadata) {
  const std::string where = detail::cat("save: '", path, "'");
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    TG_CHECK(name != "__metadata__", SerializationError, where, ": \"__metadata__\" is reserved and cannot name a tensor");
    if (const char* why = unsavable_string(name))
      throw SerializationError(detail::cat(where, ": the tensor name ", printable(name), " ", why,
                                           ": safetensors readers could not load it"));
    TG_CHECK(names.insert(name).second, SerializationError, where, ": duplicate tensor name \"", name, "\"");
    TG_CHECK(t.defined(), SerializationError, where, ": tensor \"", name, "\" is undefined");
  }
  for (const auto& kv : metadata)
    for (const std::string* str : {&kv.first, &kv.second})
      if (const char* why = unsavable_string(*str))
        throw SerializationError(detail::cat(where, ": the metadata string ", printable(*str), " ", why,
                                             ": safetensors readers could not load it"));
  for (const auto& kv : metadata)
    TG_CHECK(kv.first != "format" && kv.first.rfind(kCrcPrefix, 0) != 0 && kv.first.rfind(kReservedPrefix, 0) != 0,
             SerializationError, where, ": metadata key \"", kv.first,
             "\" is reserved for tensorgrad (\"format\", \"tensorgrad.*\" and \"crc32c.*\")");

  // Host copies, contiguous and little-endian, then their checksums.
  const bool little = host_is_little_endian();
  std::vector<RawTensor> host;
  host.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    RawTensor h = t.to(Device::cpu()).contiguous();
    if (!little) {
      if (h.storage() == t.storage()) h = h.clone();   // never swap the caller's bytes in place
      swap_elements(h.raw_data(), std::size_t(h.numel()), dtype_size(h.dtype()));
    }
    host.push_back(h);
  }

  std::string header = "{\"__metadata__\":{";
  json_string(header, "format");
  header += ':';
  json_string(header, kFormat);
  header += ',';
  json_string(header, kChecksumsKey);
  header += ':';
  json_string(header, kChecksumsCrc32c);
  for (const auto& kv : metadata) {
    header += ',';
    json_string(header, kv.first);
    header += ':';
    json_string(header, kv.second);
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::size_t nbytes = std::size_t(host[i].numel()) * dtype_size(host[i].dtype());
    header += ',';
    json_string(header, kCrcPrefix + tensors[i].first);
    header += ':';
    json_string(header, hex32(detail::crc32c(nbytes ? host[i].raw_data() : "", nbytes)));
  }
  header += '}';
  uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t nbytes = uint64_t(host[i].numel()) * dtype_size(host[i].dtype());
    header += ',';
    json_string(header, tensors[i].first);
    header += detail::cat(":{\"dtype\":\"", safetensors_dtype(host[i].dtype()), "\",\"shape\":[");
    for (std::size_t d = 0; d < host[i].shape().size(); ++d) header += detail::cat(d ? "," : "", host[i].shape()[d]);
    header += detail::cat("],\"data_offsets\":[", offset, ",", offset + nbytes, "]}");
    offset += nbytes;
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');   // data starts 8-byte aligned
  TG_CHECK(header.size() <= kMaxHeaderBytes, SerializationError, where, ": the header would be ", header.size(),
           " bytes, over the format's limit of ", kMaxHeaderBytes, " (too many tensors or metadata)");
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(uint64_t(header.size()) >> (8 * i));

  // Temporary file in the same folder, then an atomic rename over the destination.
  // One temporary file per save, also between threads of one process saving to the same path: each
  // writes its own file and renames it whole, so the destination is always one complete checkpoint.
  static std::atomic<uint64_t> save_counter{0};
  const std::string tmp = detail::cat(path, ".tmp.", ::getpid(), ".", save_counter.fetch_add(1));
  FileCloser file;
  file.f = std::fopen(tmp.c_str(), "wb");
  if (!file.f)
    throw SerializationError(detail::cat(where, ": cannot create the temporary file '", tmp, "': ", errno_text(errno)));
  auto fail = [&](const char* step, int err) {
    if (file.f) std::fclose(file.f);
    file.f = nullptr;
    std::remove(tmp.c_str());
    throw SerializationError(detail::cat(where, ": ", step, " the temporary file '", tmp, "' failed: ", errno_text(err)));
  };
  errno = 0;
  if (std::fwrite(len, 1, 8, file.f) != 8) fail("writing", errno);
  if (std::fwrite(header.data(), 1, header.size(), file.f) != header.size()) fail("writing", errno);
  for (const RawTensor& h : host) {
    const std::size_t nbytes = std::size_t(h.numel()) * dtype_size(h.dtype());
    if (nbytes && std::fwrite(h.raw_data(), 1, nbytes, file.f) != nbytes) fail("writing", errno);
  }
  if (std::fflush(file.f) != 0) fail("flushing", errno);
  if (::fsync(::fileno(file.f)) != 0) fail("syncing", errno);
  FILE* f = file.f;
  file.f = nullptr;
  if (std::fclose(f) != 0) fail("closing", errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw SerializationError(detail::cat(where, ": renaming the temporary file '", tmp, "' to the destination failed: ",
                                         errno_text(err)));
  }
  // Make the rename itself durable (best effort: some file systems refuse to sync a folder).
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  remove_stale_temp_files(dir, slash == std::string::npos ? path : path.substr(slash + 1));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

// load_tensors

std::vector<std::pair<std::string, RawTensor>> load_tensors(const std::string& path,
                                                         std::map<std::string, std::string>* metadata_out,
                                                         const LoadOptions& options) {
  const std::string where = detail::cat("load: '", path, "'");
  FdCloser file;
  file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) throw SerializationError(detail::cat(where, ": cannot open the file: ", std::strerror(errno)));
  struct stat st {};
  TG_CHECK(::fstat(file.fd, &st) == 0, SerializationError, where, ": cannot stat the file: ", std::strerror(errno));
  TG_CHECK(S_ISREG(st.st_mode), SerializationError, where, ": not a regular file");
  const uint64_t file_size = uint64_t(st.st_size);
  TG_CHECK(file_size >= 8, SerializationError, where, ": the file is ", file_size,
           " bytes, too short for the 8-byte header length (truncated or not a safetensors file)");
  auto read_error = [&](int err, const std::string& what) {
    return SerializationError(err > 0 ? detail::cat(where, ": reading ", what, " failed: ", std::strerror(err))
                                      : detail::cat(where, ": unexpected end of file while reading ", what,
                                                    " (the file changed while reading?)"));
  };

  unsigned char len[8];
  if (const int err = read_exactly(file.fd, len, 8, 0)) throw read_error(err, "the header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len[i];
  TG_CHECK(header_len <= kMaxHeaderBytes, SerializationError, where, ": header length ", header_len,
           " exceeds the limit of ", kMaxHeaderBytes, " bytes (corrupted, or not a safetensors file)");
  TG_CHECK(header_len <= file_size - 8, SerializationError, where, ": header length ", header_len,
           " exceeds the ", file_size - 8, " bytes that follow it (truncated or corrupted file)");
  std::string header(std::size_t(header_len), '\0');
  if (header_len != 0)
    if (const int err = read_exactly(file.fd, &header[0], header.size(), 8))
      throw read_error(err, detail::cat("the ", header_len, "-byte header"));
  const uint64_t data_start = 8 + header_len;
  const int64_t data_size = int64_t(file_size - data_start);

  // Parse and check every entry.
  std::vector<TensorInfo> infos;
  std::map<std::string, std::string> metadata;
  HeaderParser(header, where).parse([&](const std::string& key, const InnerObject& fields) {
    if (key == "__metadata__") {
      for (const auto& f : fields) {
        TG_CHECK(f.second.kind == Leaf::String, SerializationError, where, ": __metadata__ value of \"", f.first,
                 "\" must be a string");
        metadata.emplace(f.first, f.second.str);
      }
    } else {
      infos.push_back(tensor_info(where, key, fields));
    }
  });

  // The offsets must exactly tile the data section: sorted by begin, no gap, no overlap, no tail.
  // Checked before anything is allocated, so allocations never exceed the file's size.
  for (const TensorInfo& t : infos)
    TG_CHECK(t.end <= data_size, SerializationError, where, ": tensor \"", t.name, "\": data_offsets [", t.begin, ", ",
             t.end, "] lie outside the data section of ", data_size, " bytes (truncated file?)");
  std::vector<std::size_t> order(infos.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return infos[a].begin != infos[b].begin ? infos[a].begin < infos[b].begin : infos[a].end < infos[b].end;
  });
  int64_t cursor = 0;
  const TensorInfo* prev = nullptr;
  for (std::size_t i : order) {
    const TensorInfo& t = infos[i];
    TG_CHECK(t.begin >= cursor, SerializationError, where, ": tensor \"", t.name, "\" (data_offsets [", t.begin, ", ",
             t.end, "]) overlaps tensor \"", prev ? prev->name : "", "\" (ending at ", cursor, ")");
    TG_CHECK(t.begin == cursor, SerializationError, where, ": gap of ", t.begin - cursor, " bytes in the data section before tensor \"",
             t.name, "\" (data_offsets [", t.begin, ", ", t.end, "])");
    cursor = t.end;
    prev = &t;
  }
  TG_CHECK(cursor == data_size, SerializationError, where, ": the tensors cover ", cursor, " bytes but the data section has ",
           data_size, " (", data_size - cursor, " trailing bytes)");

  // Checksums. Everything that does not fit (a value that is not hex, a checksum for a tensor that is
  // not in the file, a tensor without one in a file tensorgrad wrote, bytes that do not match) is
  // collected into one error: a tool that rewrote the tensors but kept the metadata causes each of them,
  // as does damage. verify_checksums(false) skips them all.
  std::map<std::string, uint32_t> crcs;
  std::vector<std::string> checksum_problems;
  if (options.verify_checksums_) {
    for (const auto& kv : metadata) {
      if (kv.first.rfind(kCrcPrefix, 0) != 0) continue;
      const std::string name = kv.first.substr(std::strlen(kCrcPrefix));
      uint32_t v = 0;
      if (std::none_of(infos.begin(), infos.end(), [&](const TensorInfo& t) { return t.name == name; }))
        checksum_problems.push_back(detail::cat("metadata has a checksum \"", kv.first, "\" for a tensor that is not in the file"));
      else if (!parse_hex32(kv.second, &v))
        checksum_problems.push_back(detail::cat("metadata \"", kv.first, "\" = \"", kv.second, "\" is not 8 hex digits"));
      else
        crcs.emplace(name, v);
    }
    const auto fmt = metadata.find("format");
    const auto kind = metadata.find(kChecksumsKey);
    if (kind != metadata.end() && kind->second != kChecksumsCrc32c)
      checksum_problems.push_back(detail::cat("metadata \"", kChecksumsKey, "\" = \"", kind->second,
                                              "\" names a checksum this tensorgrad does not know (it verifies ",
                                              kChecksumsCrc32c, ")"));
    const bool every_tensor = (kind != metadata.end() && kind->second == kChecksumsCrc32c) ||
                              (fmt != metadata.end() && fmt->second == kFormatTensorgrad1);
    if (every_tensor)
      for (const TensorInfo& t : infos)
        if (!crcs.count(t.name) && !metadata.count(kCrcPrefix + t.name))
          checksum_problems.push_back(detail::cat("tensor \"", t.name,
                                                  "\" has no crc32c checksum, which every file tensorgrad writes carries"));
  }

  // Read the data in file order straight into the tensors, a chunk at a time, each chunk checksummed
  // while it is still in the cache.
  const bool little = host_is_little_endian();
  std::vector<RawTensor> values(infos.size());
  for (std::size_t i : order) {
    const TensorInfo& t = infos[i];
    RawTensor v = RawTensor::empty(t.shape, t.dtype, Device::cpu());
    const std::size_t nbytes = std::size_t(t.nbytes);
    const auto crc = crcs.find(t.name);
    uint32_t actual = 0;
    for (std::size_t done = 0; done < nbytes;) {
      const std::size_t n = std::min(kReadChunk, nbytes - done);
      unsigned char* dst = static_cast<unsigned char*>(v.raw_data()) + done;
      if (const int err = read_exactly(file.fd, dst, n, data_start + uint64_t(t.begin) + done))
        throw read_error(err, detail::cat("tensor \"", t.name, "\""));
      if (crc != crcs.end()) actual = detail::crc32c(dst, n, actual);
      done += n;
    }
    if (crc != crcs.end() && actual != crc->second)
      checksum_problems.push_back(detail::cat("checksum mismatch for tensor \"", t.name, "\": the header says crc32c ",
                                              hex32(crc->second), ", the data has ", hex32(actual)));
    if (!little) swap_elements(v.raw_data(), std::size_t(v.numel()), dtype_size(v.dtype()));
    if (t.dtype == kBool) {   // a bool byte other than 0 or 1 is not a bool value in C++
      const unsigned char* b = static_cast<const unsigned char*>(v.raw_data());
      for (std::size_t k = 0; k < nbytes; ++k)
        TG_CHECK(b[k] <= 1, SerializationError, where, ": tensor \"", t.name, "\": BOOL byte ", k, " holds ",
                 int(b[k]), " (a bool is stored as 0 or 1)");
    }
    values[i] = v;
  }
  if (!checksum_problems.empty()) {
    std::string msg = detail::cat(where, ": the tensor data does not match the checksums in the header:");
    for (const auto& p : checksum_problems) msg += "\n  " + p + ".";
    msg += "\nEither another tool re-saved the tensors and kept tensorgrad's metadata (the checksums are then stale), "
           "or the file is corrupted. To load it anyway, pass tg::LoadOptions().verify_checksums(false).";
    throw SerializationError(msg);
  }

  std::vector<std::pair<std::string, RawTensor>> out;
  out.reserve(infos.size());
  for (std::size_t i = 0; i < infos.size(); ++i) out.emplace_back(infos[i].name, values[i]);
  if (metadata_out) *metadata_out = std::move(metadata);
  return out;
}

}  // namespace tg
