// hashBuffers / hashCacheBuffers: keyed BLAKE2b over framed internal buffers.
#include "npu/cache/hash.h"

#include <sodium.h>

#include <catch2/catch.hpp>

#include "test_support.h"

using namespace npu::cache;

namespace {

CacheKey testKey(const char* driver = "d1") {
    auto k = CacheKey::derive(test::fixedSecret(3), driver, "f1");
    REQUIRE(k);
    return *k;
}

void appendLe(std::vector<uint8_t>& out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::vector<uint8_t> bytes(std::string_view s) {
    return {s.begin(), s.end()};
}

}  // namespace

TEST_CASE("hashBuffers equals one plain keyed BLAKE2b over the framed stream") {
    const CacheKey key = testKey();
    const auto a = bytes("model cache bytes");
    const auto b = bytes("data");
    const ByteSpan buffers[] = {a, b};

    std::vector<uint8_t> stream;
    const char domain[] = "npu-stack cache buffers v1";
    stream.insert(stream.end(), domain, domain + sizeof domain);
    appendLe(stream, 2);
    appendLe(stream, a.size());
    stream.insert(stream.end(), a.begin(), a.end());
    appendLe(stream, b.size());
    stream.insert(stream.end(), b.begin(), b.end());
    Hash expected{};
    REQUIRE(crypto_generichash(expected.data(), expected.size(), stream.data(), stream.size(),
                               key.bytes().data(), key.bytes().size()) == 0);
    CHECK(hashBuffers(key, buffers) == expected);
}

TEST_CASE("moving bytes between buffers or groups changes the hash") {
    const CacheKey key = testKey();
    const auto ab = bytes("ab"), c = bytes("c"), a = bytes("a"), bc = bytes("bc"), abc = bytes("abc");
    const ByteSpan split1[] = {ab, c};
    const ByteSpan split2[] = {a, bc};
    const ByteSpan merged[] = {abc};
    const ByteSpan withEmpty[] = {abc, {}};
    CHECK(hashBuffers(key, split1) != hashBuffers(key, split2));
    CHECK(hashBuffers(key, split1) != hashBuffers(key, merged));
    CHECK(hashBuffers(key, merged) != hashBuffers(key, withEmpty));
    const ByteSpan oneEmpty[] = {ByteSpan{}};
    CHECK(hashBuffers(key, std::span<const ByteSpan>{}) != hashBuffers(key, oneEmpty));

    // A buffer moved from the model-cache group to the data-cache group.
    const ByteSpan modelTwo[] = {ab, c};
    const ByteSpan modelOne[] = {ab};
    const ByteSpan dataNone[1] = {};
    const ByteSpan dataOne[] = {c};
    CHECK(hashCacheBuffers(key, modelTwo, std::span<const ByteSpan>(dataNone, 0)) !=
          hashCacheBuffers(key, modelOne, dataOne));
    // The grouped and the flat hash are domain-separated.
    CHECK(hashCacheBuffers(key, modelTwo, std::span<const ByteSpan>(dataNone, 0)) !=
          hashBuffers(key, modelTwo));
}

TEST_CASE("the hash depends on the key and on every byte") {
    const CacheKey k1 = testKey("d1");
    const CacheKey k2 = testKey("d2");
    auto data = bytes("compiled command stream");
    const ByteSpan buffers[] = {data};
    const Hash h = hashBuffers(k1, buffers);
    CHECK(hashBuffers(k1, buffers) == h);
    CHECK(hashBuffers(k2, buffers) != h);
    data[5] ^= 1;
    CHECK(hashBuffers(k1, buffers) != h);
}

TEST_CASE("hashesEqual and toHex") {
    Hash a{}, b{};
    a[31] = 1;
    CHECK_FALSE(hashesEqual(a, b));
    b[31] = 1;
    CHECK(hashesEqual(a, b));
    const uint8_t raw[] = {0x00, 0xAB, 0x7F};
    CHECK(toHex(raw) == "00ab7f");
}
