#pragma once
// Writes a HAL tensor as a NumPy .npy file (format 1.0: little-endian, C order), the format that
// `npu run --output` produces and `npu onnx run --input` reads.

#include <cstdint>
#include <string>
#include <vector>

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::framework {

// The .npy dtype of a HAL tensor type ("<f4", "|u1", ...); empty for types with no NumPy match
// (OEM and extension types).
std::string npyDescrOf(hal::OperandType type);

// The whole file: magic, version 1.0, the header dict padded to 64 bytes, then `bytes`.
// INVALID_ARGUMENT when the type has no dtype or `bytes` does not hold the shape's elements.
Result<std::string> encodeNpy(hal::OperandType type, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& bytes);

// encodeNpy written to `path` (created or truncated); an error names the path.
Status writeNpyFile(const std::string& path, hal::OperandType type, const std::vector<uint32_t>& dims,
                    const std::vector<uint8_t>& bytes);

}  // namespace npu::framework
