// io/crc32c.cpp: CRC-32C with the SSE4.2 crc32 instruction where the CPU has it (three interleaved
// streams), else slicing by 8 bytes. Declared in io/crc32c.h.
#include "tensorgrad/io/crc32c.h"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define TG_CRC32C_SSE42 1
#endif

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

}  // namespace tg
