// io/json.cpp: the JSON writer of io/json.h: only what the safetensors header needs (strings,
// integers, objects, arrays), with UTF-8 validation of names and metadata.
#include "tensorgrad/io/json.h"

#include <cstdio>

namespace tg {
namespace json {

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

std::string hex32(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

}  // namespace json
}  // namespace tg
