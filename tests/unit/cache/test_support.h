#pragma once
// Helpers shared by the cache tests: a private temporary directory and deterministic tokens.

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "npu/cache/hash.h"

namespace npu::cache::test {

class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "npu-cache-test-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::string& path() const { return path_; }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

inline Token tokenOf(uint32_t n, uint8_t tag = 0) {
    Token t{};
    t[0] = tag;
    for (int i = 0; i < 4; ++i) t[static_cast<size_t>(1 + i)] = static_cast<uint8_t>(n >> (8 * i));
    return t;
}

inline Hash hashOf(uint32_t n) {
    Hash h{};
    h.fill(0xA5);
    for (int i = 0; i < 4; ++i) h[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
    return h;
}

inline std::vector<uint8_t> readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::array<uint8_t, 32> fixedSecret(uint8_t seed) {
    std::array<uint8_t, 32> s{};
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(seed + i * 7);
    return s;
}

}  // namespace npu::cache::test
