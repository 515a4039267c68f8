#pragma once
// FarmHash Fingerprint64 (farmhashna::Hash64), the hash LSH_PROJECTION uses; exposed for tests.
#include <cstddef>
#include <cstdint>

namespace npu::ref::ops {
uint64_t fingerprint64(const uint8_t* data, size_t length);
}  // namespace npu::ref::ops
