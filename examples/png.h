// examples/png.h: write_png_gray, a minimal PNG writer for 8-bit grayscale images (used by
// 19_dcgan_fashion_mnist.cpp for its sample grid). It needs no library: the image data goes into the
// zlib stream as stored (uncompressed) deflate blocks, which every PNG reader accepts, so the only
// arithmetic is the two checksums the format asks for (CRC-32 per chunk, Adler-32 of the stream).
// Files come out about as large as the raw pixels, which is small for the grids written here.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace png_detail {

inline uint32_t crc32(const uint8_t* data, std::size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline void put32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

/// A chunk: length, type, data, CRC-32 of the type and the data.
inline void chunk(std::vector<uint8_t>& out, const char type[4], const std::vector<uint8_t>& data) {
  put32(out, static_cast<uint32_t>(data.size()));
  const std::size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put32(out, crc32(out.data() + start, out.size() - start));
}

}  // namespace png_detail

/// Writes the width x height image `pixels` (row-major, one byte per pixel, 0 black) to path as an
/// 8-bit grayscale PNG. Returns false when the file cannot be written or the sizes do not match.
inline bool write_png_gray(const std::string& path, const std::vector<uint8_t>& pixels, uint32_t width,
                           uint32_t height) {
  using namespace png_detail;
  if (width == 0 || height == 0 || pixels.size() != static_cast<std::size_t>(width) * height) return false;
  // The filtered image: each row led by its filter type, 0 (none).
  std::vector<uint8_t> raw;
  raw.reserve((width + 1) * static_cast<std::size_t>(height));
  for (uint32_t y = 0; y < height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), pixels.begin() + static_cast<std::ptrdiff_t>(y) * width,
               pixels.begin() + static_cast<std::ptrdiff_t>(y + 1) * width);
  }
  // The zlib stream: header (deflate, 32K window, no dictionary), stored blocks of at most 65,535
  // bytes (each: final flag and type 00, LEN and its complement, little-endian), Adler-32 big-endian.
  std::vector<uint8_t> z{0x78, 0x01};
  uint32_t a = 1, b = 0;
  for (std::size_t at = 0;;) {   // raw is never empty: at least one block
    const std::size_t len = std::min<std::size_t>(65535, raw.size() - at);
    const bool last = at + len == raw.size();
    z.push_back(last ? 1 : 0);
    z.push_back(static_cast<uint8_t>(len & 0xFF));
    z.push_back(static_cast<uint8_t>(len >> 8));
    z.push_back(static_cast<uint8_t>(~len & 0xFF));
    z.push_back(static_cast<uint8_t>((~len >> 8) & 0xFF));
    for (std::size_t i = at; i < at + len; ++i) {
      z.push_back(raw[i]);
      a = (a + raw[i]) % 65521;
      b = (b + a) % 65521;
    }
    at += len;
    if (last) break;
  }
  put32(z, (b << 16) | a);

  std::vector<uint8_t> file{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> ihdr;
  put32(ihdr, width);
  put32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, 0, 0, 0, 0});   // 8 bits, grayscale, deflate, adaptive filters, no interlace
  chunk(file, "IHDR", ihdr);
  chunk(file, "IDAT", z);
  chunk(file, "IEND", {});
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(file.data(), 1, file.size(), f) == file.size();
  return std::fclose(f) == 0 && ok;
}
