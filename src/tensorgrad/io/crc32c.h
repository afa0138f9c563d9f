/// \file
/// io/crc32c.h: CRC-32C (Castagnoli), the checksum tensorgrad records per tensor in its safetensors
/// files (io/safetensors.h). Implemented in io/crc32c.cpp.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tg {

namespace detail {
/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): crc32c("123456789") == 0xE3069283.
/// Pass the previous result as `crc` to continue a running checksum. Uses the SSE4.2 crc32
/// instruction when the CPU has it (checked at run time), else crc32c_portable.
uint32_t crc32c(const void* data, std::size_t size, uint32_t crc = 0);
/// The same checksum without special instructions (slicing by 8 bytes).
uint32_t crc32c_portable(const void* data, std::size_t size, uint32_t crc = 0);
}  // namespace detail

}  // namespace tg
