/// \file
/// io/json.h: the small JSON writer and the strict JSON parser of the safetensors header
/// (io/safetensors.cpp), and nothing else: strings, integers, two levels of objects, and arrays of
/// integers. Internal to io/; the writer's functions are defined in io/json.cpp.
/// \cond INTERNAL
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/core/error.h"

namespace tg {
namespace json {

/// The longest JSON array accepted (a shape's rank).
constexpr std::size_t kMaxArrayLength = 64;

/// Names and metadata must reach any safetensors reader intact: UTF-8 (the format's JSON is UTF-8;
/// readers such as Hugging Face's refuse anything else) without NUL (C readers cut the name there).
/// Returns what is wrong with s, or nullptr.
const char* unsavable_string(const std::string& s);
/// Appends s to out as a JSON string (quoted, escaped).
void json_string(std::string& out, const std::string& s);
/// s quoted for an error message: control characters escaped as in JSON, other bytes >= 0x80 as \xNN
/// (the string may not be valid UTF-8), so that a NUL does not cut the message short.
std::string printable(const std::string& s);
/// v as 8 lowercase hex digits.
std::string hex32(uint32_t v);

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

}  // namespace json
}  // namespace tg
/// \endcond
