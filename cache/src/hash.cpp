#include "npu/cache/hash.h"

#include <sodium.h>

namespace npu::cache {

namespace {

constexpr char kBuffersDomain[] = "npu-stack cache buffers v1";
constexpr char kCacheDomain[] = "npu-stack cache model+data v1";

void putU64(crypto_generichash_state& st, uint64_t v) {
    uint8_t le[8];
    for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
    ::crypto_generichash_update(&st, le, sizeof le);
}

// Count, then (length, bytes) per buffer: streamed, nothing copied.
void putGroup(crypto_generichash_state& st, std::span<const ByteSpan> buffers) {
    putU64(st, buffers.size());
    for (ByteSpan b : buffers) {
        putU64(st, b.size());
        ::crypto_generichash_update(&st, b.data(), b.size());
    }
}

// The state is filled in place (never copied: it is 64-byte aligned and large).
void start(crypto_generichash_state& st, const CacheKey& key, std::string_view domain) {
    (void)initSodium();  // a CacheKey exists only after a successful initSodium()
    ::crypto_generichash_init(&st, key.bytes().data(), key.bytes().size(), kHashBytes);
    ::crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(domain.data()), domain.size() + 1);
}

Hash finish(crypto_generichash_state& st) {
    Hash h{};
    ::crypto_generichash_final(&st, h.data(), h.size());
    ::sodium_memzero(&st, sizeof st);
    return h;
}

}  // namespace

Hash hashBuffers(const CacheKey& key, std::span<const ByteSpan> buffers) {
    crypto_generichash_state st;
    start(st, key, kBuffersDomain);
    putGroup(st, buffers);
    return finish(st);
}

Hash hashCacheBuffers(const CacheKey& key, std::span<const ByteSpan> modelCache,
                      std::span<const ByteSpan> dataCache) {
    crypto_generichash_state st;
    start(st, key, kCacheDomain);
    putGroup(st, modelCache);
    putGroup(st, dataCache);
    return finish(st);
}

bool hashesEqual(const Hash& a, const Hash& b) {
    return ::sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string toHex(std::span<const uint8_t> bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string s;
    s.reserve(bytes.size() * 2);
    for (uint8_t b : bytes) {
        s += kDigits[b >> 4];
        s += kDigits[b & 15];
    }
    return s;
}

}  // namespace npu::cache
