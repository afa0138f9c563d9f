// io/serialize.cpp: the safetensors writer and strict reader (with their own small JSON writer and
// parser, and CRC-32C), and the Module / Optimizer checkpoints built on them. The optimizers' state
// itself (names, shapes) is defined in optim/optimizer.cpp and optim/adam.cpp; nothing here knows a
// particular layer.
//
// Format (https://github.com/huggingface/safetensors): 8-byte little-endian uint64 N, N bytes of
// JSON header padded with spaces, then the raw little-endian row-major data. The header maps each
// tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data
// section) plus an optional "__metadata__" object of strings. tensorgrad writes "format": "pt" (the
// Hugging Face loaders refuse other values), "tensorgrad.checksums": "crc32c" (every tensor has a
// checksum) and one "crc32c.<name>": "<8 hex digits>" per tensor. Files marked "format":
// "tensorgrad-1" carry the same checksums and are read the same way.
#include "tensorgrad/io/serialize.h"

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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define TG_CRC32C_SSE42 1
#endif

#include "tensorgrad/core/error.h"
#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/nn/module.h"
#include "tensorgrad/optim/grad_scaler.h"
#include "tensorgrad/optim/optimizer.h"

namespace tg {

// ------------------------------------------------------------------------------------------------
// CRC-32C. The functions below work on the CRC register (the checksum without its initial and final
// inversion). The SSE4.2 crc32 instruction has a latency of 3 cycles and a throughput of 1 per cycle,
// so a long buffer is run as three independent streams over adjacent blocks A, B, C, joined with
// reg(A B) = reg(A) * x^(8 |B|) + reg(B) (mod P, over GF(2)). The library targets baseline x86-64, so
// the instruction is used only when the CPU reports it; elsewhere slicing by 8 bytes (tables).

namespace {

constexpr uint32_t kCrc32cPoly = 0x82F63B78u;   // P, reflected: bit 31 is x^0

/// a * b mod P, both reflected.
uint32_t multiply_mod_p(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kCrc32cPoly : b >> 1;   // b *= x
  }
  return product;
}

/// x^(8 * nbytes) mod P: multiplying a register by it appends nbytes zero bytes.
uint32_t x_pow_8n_mod_p(uint64_t nbytes) {
  uint32_t result = 1u << 31;   // x^0
  uint32_t square = 1u << 30;   // x^1, squared each round: x^(2^k)
  for (uint64_t e = 8 * nbytes; e != 0; e >>= 1) {
    if (e & 1) result = multiply_mod_p(square, result);
    square = multiply_mod_p(square, square);
  }
  return result;
}

struct SliceTables {
  uint32_t t[8][256];   // t[k][b]: the register after byte b followed by k zero bytes
};

const SliceTables& slice_tables() {
  static const SliceTables tables = [] {
    SliceTables s{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kCrc32cPoly : c >> 1;
      s.t[0][i] = c;
    }
    for (int k = 1; k < 8; ++k)
      for (uint32_t i = 0; i < 256; ++i) s.t[k][i] = (s.t[k - 1][i] >> 8) ^ s.t[0][s.t[k - 1][i] & 0xFFu];
    return s;
  }();
  return tables;
}

uint32_t load_le32(const unsigned char* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

uint32_t crc32c_register_portable(uint32_t reg, const unsigned char* p, std::size_t n) {
  const SliceTables& s = slice_tables();
  for (; n >= 8; p += 8, n -= 8) {
    const uint32_t lo = load_le32(p) ^ reg, hi = load_le32(p + 4);
    reg = s.t[7][lo & 0xFF] ^ s.t[6][(lo >> 8) & 0xFF] ^ s.t[5][(lo >> 16) & 0xFF] ^ s.t[4][lo >> 24] ^
          s.t[3][hi & 0xFF] ^ s.t[2][(hi >> 8) & 0xFF] ^ s.t[1][(hi >> 16) & 0xFF] ^ s.t[0][hi >> 24];
  }
  for (; n != 0; ++p, --n) reg = s.t[0][(reg ^ *p) & 0xFFu] ^ (reg >> 8);
  return reg;
}

#ifdef TG_CRC32C_SSE42
constexpr std::size_t kCrcStreamBlock = 8192;   // bytes per stream: joining costs ~1% of a 3-block round

__attribute__((target("sse4.2"))) uint32_t crc32c_register_sse42(uint32_t reg, const unsigned char* p, std::size_t n) {
  static const uint32_t shift1 = x_pow_8n_mod_p(kCrcStreamBlock), shift2 = x_pow_8n_mod_p(2 * kCrcStreamBlock);
  for (; n >= 3 * kCrcStreamBlock; p += 3 * kCrcStreamBlock, n -= 3 * kCrcStreamBlock) {
    uint64_t a = reg, b = 0, c = 0;
    for (std::size_t i = 0; i < kCrcStreamBlock; i += 8) {
      uint64_t va, vb, vc;
      std::memcpy(&va, p + i, 8);
      std::memcpy(&vb, p + kCrcStreamBlock + i, 8);
      std::memcpy(&vc, p + 2 * kCrcStreamBlock + i, 8);
      a = _mm_crc32_u64(a, va);
      b = _mm_crc32_u64(b, vb);
      c = _mm_crc32_u64(c, vc);
    }
    reg = multiply_mod_p(shift2, uint32_t(a)) ^ multiply_mod_p(shift1, uint32_t(b)) ^ uint32_t(c);
  }
  uint64_t r = reg;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    r = _mm_crc32_u64(r, v);
  }
  reg = uint32_t(r);
  for (; n != 0; ++p, --n) reg = _mm_crc32_u8(reg, *p);
  return reg;
}

bool cpu_has_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

namespace detail {
uint32_t crc32c_portable(const void* data, std::size_t size, uint32_t crc) {
  return ~crc32c_register_portable(~crc, static_cast<const unsigned char*>(data), size);
}

uint32_t crc32c(const void* data, std::size_t size, uint32_t crc) {
#ifdef TG_CRC32C_SSE42
  if (cpu_has_sse42()) return ~crc32c_register_sse42(~crc, static_cast<const unsigned char*>(data), size);
#endif
  return crc32c_portable(data, size, crc);
}
}  // namespace detail

namespace {

constexpr uint64_t kMaxHeaderBytes = 100000000;   // 100 MB, the reference implementation's bound
constexpr std::size_t kMaxArrayLength = 64;       // longest JSON array accepted (a shape's rank)
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

std::string hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
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

// ------------------------------------------------------------------------------------------------
// JSON writer: only what the header needs (strings, integers, objects, arrays).

/// Names and metadata must reach any safetensors reader intact: UTF-8 (the format's JSON is UTF-8;
/// readers such as Hugging Face's refuse anything else) without NUL (C readers cut the name there).
/// Returns what is wrong with s, or nullptr.
const char* unsavable_string(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned c = p[i];
    if (c == 0) return "contains a NUL character";
    if (c < 0x80) { ++i; continue; }
    const std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;   // 0x80-0xC1: never a lead byte
    if (len == 0 || c > 0xF4 || i + len > n) return "is not valid UTF-8";
    uint32_t cp = c & (0xFF >> (len + 1));
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return "is not valid UTF-8";
      cp = cp << 6 | (p[i + k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
      return "is not valid UTF-8";   // overlong, beyond Unicode, or a surrogate
    i += len;
  }
  return nullptr;
}

void json_string(std::string& out, const std::string& s);

/// s quoted for an error message: control characters escaped as in JSON, other bytes >= 0x80 as \xNN
/// (the string may not be valid UTF-8), so that a NUL does not cut the message short.
std::string printable(const std::string& s) {
  std::string ascii;
  for (unsigned char c : s) {
    if (c < 0x80) {
      ascii += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(c));
      ascii += buf;
    }
  }
  std::string out;
  json_string(out, ascii);
  return out;
}

void json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
          out += buf;
        } else {
          out += char(c);
        }
    }
  }
  out += '"';
}

// ------------------------------------------------------------------------------------------------
// Strict JSON parser for the header. Grammar accepted (anything else is rejected with its byte
// position): top = object of (string : inner); inner = object of (string : leaf);
// leaf = string | integer | array of at most 64 integers. No recursion: the two object levels are
// two functions, and a third level of nesting is an error.

struct Leaf {
  enum Kind { String, Integer, IntArray } kind = String;
  std::string str;
  int64_t num = 0;
  std::vector<int64_t> arr;
};
using InnerObject = std::vector<std::pair<std::string, Leaf>>;

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  /// Calls on_entry(key, inner object) for each top-level entry, in order.
  template <class OnEntry>
  void parse(OnEntry&& on_entry) {
    skip_ws();
    expect('{', "the header must be a JSON object starting with '{'");
    std::set<std::string> keys;
    skip_ws();
    if (peek() == '}') {
      ++pos_;
    } else {
      for (;;) {
        skip_ws();
        const std::size_t key_pos = pos_;
        std::string key = parse_string();
        if (!keys.insert(key).second) fail_at(key_pos, detail::cat("duplicate key \"", key, "\""));
        skip_ws();
        expect(':', "expected ':' after a key");
        skip_ws();
        InnerObject inner = parse_inner();
        on_entry(key, inner);
        skip_ws();
        if (peek() == ',') { ++pos_; continue; }
        expect('}', "expected ',' or '}' in the top-level object");
        break;
      }
    }
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected characters after the top-level object");
  }

 private:
  [[noreturn]] void fail_at(std::size_t pos, const std::string& what) const {
    throw SerializationError(detail::cat(where_, ": invalid JSON header at header byte ", pos, " (file offset ", pos + 8,
                                         "): ", what));
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  int peek() const { return pos_ < s_.size() ? static_cast<unsigned char>(s_[pos_]) : -1; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c, const char* what) {
    if (peek() != static_cast<unsigned char>(c)) fail(describe_here(what));
    ++pos_;
  }
  std::string describe_here(const char* what) const {
    if (pos_ >= s_.size()) return detail::cat(what, ", found the end of the header");
    const unsigned char c = static_cast<unsigned char>(s_[pos_]);
    if (c >= 0x20 && c < 0x7F) return detail::cat(what, ", found '", char(c), "'");
    return detail::cat(what, ", found byte 0x", hex32(c).substr(6));
  }

  InnerObject parse_inner() {
    expect('{', "expected an object as the value of a top-level key");
    InnerObject out;
    skip_ws();
    if (peek() == '}') { ++pos_; return out; }
    for (;;) {
      skip_ws();
      const std::size_t key_pos = pos_;
      std::string key = parse_string();
      for (const auto& f : out)
        if (f.first == key) fail_at(key_pos, detail::cat("duplicate key \"", key, "\""));
      skip_ws();
      expect(':', "expected ':' after a key");
      skip_ws();
      out.emplace_back(std::move(key), parse_leaf());
      skip_ws();
      if (peek() == ',') { ++pos_; continue; }
      expect('}', "expected ',' or '}' in an object");
      return out;
    }
  }

  Leaf parse_leaf() {
    Leaf leaf;
    const int c = peek();
    if (c == '"') {
      leaf.kind = Leaf::String;
      leaf.str = parse_string();
    } else if (c == '[') {
      leaf.kind = Leaf::IntArray;
      ++pos_;
      skip_ws();
      if (peek() == ']') { ++pos_; return leaf; }
      for (;;) {
        skip_ws();
        if (leaf.arr.size() == kMaxArrayLength) fail(detail::cat("arrays longer than ", kMaxArrayLength, " elements are not accepted"));
        if (peek() != '-' && (peek() < '0' || peek() > '9')) fail(describe_here("arrays may only hold integers"));
        leaf.arr.push_back(parse_int());
        skip_ws();
        if (peek() == ',') { ++pos_; continue; }
        expect(']', "expected ',' or ']' in an array");
        return leaf;
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      leaf.kind = Leaf::Integer;
      leaf.num = parse_int();
    } else if (c == '{') {
      fail("objects nested deeper than 2 levels are not accepted");
    } else {
      fail(describe_here("expected a string, an integer or an array of integers"));
    }
    return leaf;
  }

  int64_t parse_int() {
    const std::size_t start = pos_;
    const bool negative = peek() == '-';
    if (negative) ++pos_;
    if (peek() < '0' || peek() > '9') fail(describe_here("expected a digit"));
    if (peek() == '0' && pos_ + 1 < s_.size() && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9')
      fail("numbers may not have leading zeros");
    const uint64_t limit = negative ? uint64_t(std::numeric_limits<int64_t>::max()) + 1
                                    : uint64_t(std::numeric_limits<int64_t>::max());
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      const uint64_t d = uint64_t(peek() - '0');
      if (v > (limit - d) / 10) fail_at(start, "integer out of the int64 range");
      v = v * 10 + d;
      ++pos_;
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E') fail("only integers are accepted (no fraction or exponent)");
    if (!negative) return int64_t(v);
    return v == uint64_t(std::numeric_limits<int64_t>::max()) + 1 ? std::numeric_limits<int64_t>::min() : -int64_t(v);
  }

  unsigned hex_digit(std::size_t at) const {
    if (at >= s_.size()) fail_at(at, "truncated \\u escape");
    const char c = s_[at];
    if (c >= '0' && c <= '9') return unsigned(c - '0');
    if (c >= 'a' && c <= 'f') return unsigned(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return unsigned(c - 'A' + 10);
    fail_at(at, "invalid hex digit in a \\u escape");
  }
  unsigned parse_u4() {   // after "\u"
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 4) | hex_digit(pos_ + std::size_t(i));
    pos_ += 4;
    return v;
  }
  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  /// Length of the valid UTF-8 sequence at pos_ (a lead byte >= 0x80), or 0 when invalid.
  std::size_t utf8_length() const {
    const auto b = [this](std::size_t i) { return pos_ + i < s_.size() ? static_cast<unsigned char>(s_[pos_ + i]) : 0u; };
    const unsigned c = b(0);
    std::size_t n;
    unsigned lo = 0x80, hi = 0xBF;   // allowed range of the second byte (excludes overlongs, surrogates)
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return 0;
    if (b(1) < lo || b(1) > hi) return 0;
    for (std::size_t i = 2; i < n; ++i)
      if (b(i) < 0x80 || b(i) > 0xBF) return 0;
    return n;
  }

  std::string parse_string() {
    expect('"', "expected a string");
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') { ++pos_; return out; }
      if (c < 0x20) fail("control characters must be escaped in strings");
      if (c >= 0x80) {
        const std::size_t n = utf8_length();
        if (n == 0) fail("invalid UTF-8 in a string");
        out.append(s_, pos_, n);
        pos_ += n;
        continue;
      }
      if (c != '\\') { out += char(c); ++pos_; continue; }
      const std::size_t esc = pos_;
      ++pos_;
      if (pos_ >= s_.size()) fail("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = parse_u4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) fail_at(esc, "unpaired low surrogate in a \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (pos_ + 1 >= s_.size() || s_[pos_] != '\\' || s_[pos_ + 1] != 'u')
              fail_at(esc, "unpaired high surrogate in a \\u escape");
            pos_ += 2;
            const uint32_t low = parse_u4();
            if (low < 0xDC00 || low > 0xDFFF) fail_at(esc, "invalid surrogate pair in a \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          if (cp == 0) fail_at(esc, "\\u0000 is not accepted in strings");
          append_utf8(out, cp);
          break;
        }
        default: fail_at(esc, detail::cat("invalid escape '\\", e, "'"));
      }
    }
  }

  const std::string& s_;
  const std::string& where_;
  std::size_t pos_ = 0;
};

// ------------------------------------------------------------------------------------------------
// Files

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

// ------------------------------------------------------------------------------------------------
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

void save_tensors(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path,
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
  std::vector<Tensor> host;
  host.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    Tensor h = t.to(Device::cpu()).contiguous();
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
  for (const Tensor& h : host) {
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

// ------------------------------------------------------------------------------------------------
// load_tensors

std::vector<std::pair<std::string, Tensor>> load_tensors(const std::string& path,
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
  std::vector<Tensor> values(infos.size());
  for (std::size_t i : order) {
    const TensorInfo& t = infos[i];
    Tensor v = Tensor::empty(t.shape, t.dtype, Device::cpu());
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

  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(infos.size());
  for (std::size_t i = 0; i < infos.size(); ++i) out.emplace_back(infos[i].name, values[i]);
  if (metadata_out) *metadata_out = std::move(metadata);
  return out;
}

// ------------------------------------------------------------------------------------------------
// Modules and optimizers

namespace {
std::vector<std::pair<std::string, Variable>> module_entries(const nn::Module& module) {
  auto out = module.named_parameters();
  for (auto& b : module.named_buffers()) out.push_back(std::move(b));
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += detail::cat(i ? ", " : "", '"', names[i], '"');
  return s;
}
}  // namespace

void save(const nn::Module& module, const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& e : module_entries(module)) tensors.emplace_back(e.first, e.second.data());
  save_tensors(tensors, path);
}

IncompatibleKeys load(nn::Module& module, const std::string& path, const LoadOptions& options) {
  const auto loaded = load_tensors(path, nullptr, options);
  std::map<std::string, const Tensor*> by_name;   // names are unique: the parser rejects duplicates
  for (const auto& l : loaded) by_name.emplace(l.first, &l.second);
  const auto entries = module_entries(module);

  // Compare everything and report every problem at once, PyTorch's load_state_dict style.
  IncompatibleKeys keys;
  std::vector<std::string> mismatches;
  std::set<std::string> expected;
  std::vector<const Tensor*> sources(entries.size(), nullptr);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].first;
    const Tensor& dst = entries[i].second.data();
    expected.insert(name);
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      keys.missing_keys.push_back(name);
      continue;
    }
    const Tensor& src = *it->second;
    if (src.shape() != dst.shape())
      mismatches.push_back(detail::cat("size mismatch for ", name, ": copying a param with shape ", shape_str(src.shape()),
                                       " from checkpoint, the shape in current model is ", shape_str(dst.shape()), "."));
    if (src.dtype() != dst.dtype())
      mismatches.push_back(detail::cat("dtype mismatch for ", name, ": the checkpoint has ", dtype_name(src.dtype()),
                                       ", the current model has ", dtype_name(dst.dtype()), "."));
    sources[i] = &src;
  }
  for (const auto& l : loaded)
    if (!expected.count(l.first)) keys.unexpected_keys.push_back(l.first);
  const bool key_errors = options.strict_ && (!keys.missing_keys.empty() || !keys.unexpected_keys.empty());
  if (key_errors || !mismatches.empty()) {
    std::string msg = detail::cat("load: '", path, "': Error(s) in loading the checkpoint into the module (nothing was changed):");
    if (key_errors && !keys.missing_keys.empty())
      msg += detail::cat("\n  Missing key(s) in checkpoint: ", quoted_list(keys.missing_keys), ".");
    if (key_errors && !keys.unexpected_keys.empty())
      msg += detail::cat("\n  Unexpected key(s) in checkpoint: ", quoted_list(keys.unexpected_keys), ".");
    for (const auto& m : mismatches) msg += "\n  " + m;
    if (key_errors)
      msg += "\n  To load the keys that match and get the others back, pass tg::LoadOptions().strict(false).";
    throw SerializationError(msg);
  }

  // Everything matches: move the values to each parameter's device first, then put them in. A CPU
  // parameter that is its whole storage takes the freshly read bytes by exchange (the file's tensors
  // are private to this call), so a load copies each byte once; any other is copied into.
  std::vector<Tensor> ready(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (sources[i]) ready[i] = sources[i]->to(entries[i].second.device());
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!sources[i]) continue;
    const Tensor& dst = entries[i].second.data();
    const Tensor& src = ready[i];
    const auto whole = [](const Tensor& t) {
      return t.device() == Device::cpu() && t.is_contiguous() && t.offset() == 0 &&
             t.storage()->nbytes() == std::size_t(t.numel()) * dtype_size(t.dtype());
    };
    if (!(whole(dst) && whole(src) && dst.storage()->swap_bytes(*src.storage()))) prim::copy_(dst, src);
  }
  return keys;
}

void save(const optim::Optimizer& optimizer, const std::string& path) {
  std::vector<std::pair<std::string, Tensor>> state;
  try {
    state = optimizer.state();
  } catch (const SerializationError&) {
    throw;
  } catch (const Error& e) {
    throw SerializationError(detail::cat("save: '", path, "': ", e.what()));
  }
  save_tensors(state, path);
}

void load(optim::Optimizer& optimizer, const std::string& path, const LoadOptions& options) {
  TG_CHECK(options.strict_, SerializationError, "load: '", path,
           "': LoadOptions().strict(false) applies to modules; an optimizer's state loads whole or not at all "
           "(as PyTorch's Optimizer.load_state_dict)");
  const auto loaded = load_tensors(path, nullptr, options);
  try {
    optimizer.set_state(loaded);
  } catch (const SerializationError&) {
    throw;
  } catch (const Error& e) {
    throw SerializationError(detail::cat("load: '", path, "': the checkpoint does not fit the optimizer (nothing was changed): ",
                                         e.what()));
  }
}

void save(const amp::GradScaler& scaler, const std::string& path) { save_tensors(scaler.state_dict(), path); }

void load(amp::GradScaler& scaler, const std::string& path, const LoadOptions& options) {
  TG_CHECK(options.strict_, SerializationError, "load: '", path,
           "': LoadOptions().strict(false) applies to modules; a GradScaler's state loads whole or not at all");
  const auto loaded = load_tensors(path, nullptr, options);
  try {
    scaler.load_state_dict(loaded);
  } catch (const Error& e) {
    throw SerializationError(detail::cat("load: '", path, "': the checkpoint does not fit the GradScaler (nothing was "
                                         "changed): ", e.what()));
  }
}

}  // namespace tg
