#include "base64.h"

#include <sodium.h>

namespace npu::framework {

// libsodium's decoder, original alphabet with '=' padding: strict, constant-time, and it reports
// where the text stops being base64.
std::expected<std::vector<uint8_t>, std::string> decodeBase64(std::string_view text) {
    if (text.size() % 4 != 0) {
        return std::unexpected("length " + std::to_string(text.size()) + " is not a multiple of 4");
    }
    if (text.empty()) return std::vector<uint8_t>{};  // libsodium is not given a null buffer
    std::vector<uint8_t> out(text.size() / 4 * 3);
    size_t written = 0;
    const char* end = nullptr;
    const int rc = sodium_base642bin(out.data(), out.size(), text.data(), text.size(), nullptr, &written,
                                     &end, sodium_base64_VARIANT_ORIGINAL);
    if (rc != 0 || end != text.data() + text.size()) {
        const size_t at = end ? static_cast<size_t>(end - text.data()) : 0;
        return std::unexpected("unexpected character at offset " + std::to_string(at));
    }
    out.resize(written);
    return out;
}

std::string encodeBase64(const uint8_t* data, size_t size) {
    if (size == 0) return {};
    const size_t capacity = sodium_base64_encoded_len(size, sodium_base64_VARIANT_ORIGINAL);
    std::string out(capacity, '\0');
    sodium_bin2base64(out.data(), capacity, data, size, sodium_base64_VARIANT_ORIGINAL);
    out.resize(capacity - 1);  // without the terminating NUL
    return out;
}

}  // namespace npu::framework
