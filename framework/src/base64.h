#pragma once
// Strict RFC 4648 base64 (standard alphabet, '=' padding) for the test-vector "data" fields,
// decoded by libsodium.
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace npu::framework {

// The decoded bytes, or a message saying which character or length is wrong.
std::expected<std::vector<uint8_t>, std::string> decodeBase64(std::string_view text);
// The same encoding of `size` bytes (empty for none).
std::string encodeBase64(const uint8_t* data, size_t size);

}  // namespace npu::framework
