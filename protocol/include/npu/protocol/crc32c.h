#pragma once
// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the frame checksum. Freestanding: no OS
// headers, no allocation; the tables are constexpr (read-only data, no start-up code).

#include <cstddef>
#include <cstdint>

namespace npu::proto {

// Extends a finished CRC32C `crc` (0 for a fresh one) over `length` bytes:
// crc32c(a + b) == crc32cExtend(crc32c(a), b). crc32c("123456789") == 0xE3069283.
uint32_t crc32cExtend(uint32_t crc, const void* data, size_t length);

// The same with the portable table code whatever the CPU (crc32cExtend picks the crc32
// instruction where it is the faster): for tests and comparisons.
uint32_t crc32cExtendTables(uint32_t crc, const void* data, size_t length);

inline uint32_t crc32c(const void* data, size_t length) {
    return crc32cExtend(0, data, length);
}

}  // namespace npu::proto
