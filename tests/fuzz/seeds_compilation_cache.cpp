// Seeds of fuzz_compilation_cache: the cache files the driver writes for its model, signed, and
// the same unsigned and under the wrong token. The test below checks that the signed seed loads
// and gives the bytes of a normal compilation, so mutations start past the integrity check.
#include <catch2/catch.hpp>

#include "cache_harness.h"
#include "fuzz_target.h"
#include "npu/protocol/frame.h"

namespace npu::fuzz {
namespace {

std::vector<uint8_t> input(uint8_t flags, const shim::CacheImages& images) {
    std::vector<uint8_t> s = {flags, 0, 0, 0, 0};
    proto::storeLe32(s.data() + 1, uint32_t(images.model.size()));
    s.insert(s.end(), images.model.begin(), images.model.end());
    s.insert(s.end(), images.data.begin(), images.data.end());
    return s;
}

}  // namespace

std::vector<std::vector<uint8_t>> seeds() {
    hal::CacheToken token{};
    token.fill(0x11);
    const shim::CacheImages images = CacheHarness::instance().savedImages(token);
    return {input(1, images), input(0, images), input(3, images)};
}

}  // namespace npu::fuzz

TEST_CASE("a signed seed of the cache fuzzer loads and runs like a fresh compilation", "[fuzz]") {
    using namespace npu;
    auto& h = fuzz::CacheHarness::instance();
    hal::CacheToken token{};
    token.fill(0x5A);
    const shim::CacheImages images = h.savedImages(token);
    const int modelFd = fuzz::memoryFile(images.model), dataFd = fuzz::memoryFile(images.data);
    auto prepared = h.device().prepareModelFromCache(std::nullopt, {modelFd}, {dataFd}, token);
    ::close(modelFd);
    ::close(dataFd);
    REQUIRE(prepared.has_value());
    auto fresh = h.device().prepareModel(h.model().model);
    REQUIRE(fresh.has_value());
    auto a = h.run(**prepared), b = h.run(**fresh);
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(*a == *b);
    CHECK(h.victimStillRuns());
}
