// The CI half of a fuzz target (tests/fuzz/README.md): replays the target's seeds, then
// deterministic mutations of them (bit flips, byte sets, truncation, duplication, splicing,
// interesting integers). Any crash, trap (a broken invariant), abort or hang fails the test.
// NPU_FUZZ_INPUT=FILE|DIR replays that input (a finding of scripts/fuzz.sh) or every file of DIR
// (a corpus, in name order) instead, without clang.
// NPU_FUZZ_WRITE_SEEDS=DIR also writes the seeds to DIR for libFuzzer (scripts/fuzz.sh);
// NPU_FUZZ_ITERATIONS=N changes the number of mutations (default: NPU_FUZZ_MUTATIONS, the
// target's count in meson.build, chosen so that the whole set stays within its time budget).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "fuzz_target.h"

#ifndef NPU_FUZZ_MUTATIONS
#define NPU_FUZZ_MUTATIONS 10000
#endif

namespace {

std::vector<uint8_t> mutate(const std::vector<std::vector<uint8_t>>& seeds, std::mt19937& rng) {
    std::vector<uint8_t> v = seeds[rng() % seeds.size()];
    const int steps = 1 + int(rng() % 4);
    for (int s = 0; s < steps; ++s) {
        const size_t n = v.size();
        switch (rng() % 7) {
            case 0:
                if (n) v[rng() % n] ^= uint8_t(1u << (rng() % 8));
                break;
            case 1:
                if (n) v[rng() % n] = uint8_t(rng());
                break;
            case 2:
                if (n) v.resize(rng() % n);
                break;
            case 3:
                if (n) {
                    const size_t at = rng() % n, len = 1 + rng() % std::min<size_t>(n - at, 64);
                    v.insert(v.begin() + long(rng() % (n + 1)), v.begin() + long(at),
                             v.begin() + long(at + len));
                }
                break;
            case 4: {
                const auto& other = seeds[rng() % seeds.size()];
                if (!other.empty()) {
                    const size_t cut = n ? rng() % n : 0, from = rng() % other.size();
                    v.resize(cut);
                    v.insert(v.end(), other.begin() + long(from), other.end());
                }
                break;
            }
            case 5:
                if (n >= 4) {
                    static const uint32_t interesting[] = {0,          1,          0x7F,    0x80,
                                                           0xFF,       0x7FFF,     0xFFFF,  0x7FFFFFFF,
                                                           0x80000000, 0xFFFFFFFF, 0x10000, 1u << 20};
                    const uint32_t x = interesting[rng() % std::size(interesting)];
                    const size_t at = rng() % (n - 3);
                    for (int b = 0; b < 4; ++b) v[at + size_t(b)] = uint8_t(x >> (8 * b));
                }
                break;
            default:
                if (n) v.erase(v.begin() + long(rng() % n));
                break;
        }
    }
    return v;
}

}  // namespace

TEST_CASE("fuzz target: seeds and deterministic mutations never crash", "[fuzz]") {
    if (const char* path = std::getenv("NPU_FUZZ_INPUT")) {  // replay inputs (findings, a corpus)
        std::vector<std::filesystem::path> files;
        if (std::filesystem::is_directory(path)) {
            for (const auto& e : std::filesystem::directory_iterator(path)) files.push_back(e.path());
            std::sort(files.begin(), files.end());
        } else {
            files.emplace_back(path);
        }
        for (const auto& file : files) {
            std::ifstream f(file, std::ios::binary);
            REQUIRE(f.good());
            const std::vector<uint8_t> input((std::istreambuf_iterator<char>(f)),
                                             std::istreambuf_iterator<char>());
            INFO(file.string());
            CHECK(LLVMFuzzerTestOneInput(input.data(), input.size()) == 0);
        }
        return;
    }
    const auto seeds = npu::fuzz::seeds();
    REQUIRE(!seeds.empty());
    if (const char* dir = std::getenv("NPU_FUZZ_WRITE_SEEDS")) {
        std::filesystem::create_directories(dir);
        for (size_t i = 0; i < seeds.size(); ++i) {
            std::ofstream(std::filesystem::path(dir) / ("seed-" + std::to_string(i)), std::ios::binary)
                .write(reinterpret_cast<const char*>(seeds[i].data()), std::streamsize(seeds[i].size()));
        }
    }
    for (const auto& s : seeds) CHECK(LLVMFuzzerTestOneInput(s.data(), s.size()) == 0);
    LLVMFuzzerTestOneInput(nullptr, 0);
    const char* env = std::getenv("NPU_FUZZ_ITERATIONS");
    const int iterations = env != nullptr ? std::atoi(env) : NPU_FUZZ_MUTATIONS;
    std::mt19937 rng(20261122);
    for (int i = 0; i < iterations; ++i) {
        const auto input = mutate(seeds, rng);
        LLVMFuzzerTestOneInput(input.data(), input.size());
    }
    SUCCEED(iterations << " mutations");
}
