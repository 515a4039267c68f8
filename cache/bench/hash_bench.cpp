// Prints, as JSON, the throughput of hashBuffers (keyed, framed, streamed BLAKE2b over a model
// part and a data part) and of one plain crypto_generichash call over the same bytes, measured in
// the same run. Usage: npu-cache-hash-bench [MiB] [rounds]
#include <sodium.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "npu/cache/hash.h"

namespace {

template <typename F>
double bestMbPerSecond(size_t bytes, int rounds, F&& run) {
    double best = 0;
    for (int i = 0; i < rounds; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        run();
        const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
        best = std::max(best, static_cast<double>(bytes) / (1024.0 * 1024.0) / dt.count());
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 16;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
    if (mib == 0 || rounds <= 0) {
        std::fprintf(stderr, "usage: npu-cache-hash-bench [MiB > 0] [rounds > 0]\n");
        return 2;
    }
    std::array<uint8_t, npu::cache::kSecretBytes> secret{};
    if (::sodium_init() < 0) return 1;
    ::randombytes_buf(secret.data(), secret.size());
    auto key = npu::cache::CacheKey::derive(secret, "bench-driver", "bench-firmware");
    if (!key) {
        std::fprintf(stderr, "npu-cache-hash-bench: %s\n", key.error().message.c_str());
        return 1;
    }
    std::vector<uint8_t> buffer(mib << 20);
    ::randombytes_buf(buffer.data(), buffer.size());
    const size_t modelBytes = buffer.size() * 3 / 4;  // model cache 3/4, data cache 1/4
    const npu::cache::ByteSpan model[] = {{buffer.data(), modelBytes}};
    const npu::cache::ByteSpan data[] = {{buffer.data() + modelBytes, buffer.size() - modelBytes}};

    volatile uint8_t sink = 0;
    // Alternate the two so neither gets a warmer cache or clock.
    double hashMb = 0, rawMb = 0;
    for (int r = 0; r < rounds; ++r) {
        hashMb = std::max(hashMb, bestMbPerSecond(buffer.size(), 1, [&] {
                              sink = sink ^ npu::cache::hashCacheBuffers(*key, model, data)[0];
                          }));
        rawMb = std::max(rawMb, bestMbPerSecond(buffer.size(), 1, [&] {
                             uint8_t out[32];
                             ::crypto_generichash(out, sizeof out, buffer.data(), buffer.size(),
                                                  key->bytes().data(), key->bytes().size());
                             sink = sink ^ out[0];
                         }));
    }
    std::printf(
        "{\"buffer_bytes\": %zu, \"model_bytes\": %zu, \"data_bytes\": %zu, \"rounds\": %d, "
        "\"hash_mb_s\": %.1f, \"raw_blake2b_mb_s\": %.1f, \"ratio\": %.3f}\n",
        buffer.size(), modelBytes, buffer.size() - modelBytes, rounds, hashMb, rawMb, hashMb / rawMb);
    return 0;
}
