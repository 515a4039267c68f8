#include "base64.h"

#include <array>

namespace npu::framework {
namespace {

constexpr std::array<int8_t, 256> makeTable() {
    std::array<int8_t, 256> t{};
    for (auto& v : t) v = -1;
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
    return t;
}
constexpr auto kDecode = makeTable();

}  // namespace

std::expected<std::vector<uint8_t>, std::string> decodeBase64(std::string_view text) {
    std::vector<uint8_t> out;
    if (text.size() % 4 != 0) {
        return std::unexpected("length " + std::to_string(text.size()) + " is not a multiple of 4");
    }
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        const bool last = i + 4 == text.size();
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = text[i + k];
            if (c == '=' && last && k >= 2) {
                v[k] = 0;
                ++pad;
                continue;
            }
            if (pad > 0 || kDecode[static_cast<uint8_t>(c)] < 0) {
                return std::unexpected("unexpected character at offset " + std::to_string(i + k));
            }
            v[k] = kDecode[static_cast<uint8_t>(c)];
        }
        const uint32_t triple =
            (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
        out.push_back(static_cast<uint8_t>(triple >> 16));
        if (pad < 2) out.push_back(static_cast<uint8_t>(triple >> 8));
        if (pad < 1) out.push_back(static_cast<uint8_t>(triple));
    }
    return out;
}

}  // namespace npu::framework
