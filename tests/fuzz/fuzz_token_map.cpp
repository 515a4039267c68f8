// Fuzz target: the persistent {token -> hash} map's file parser (cache/). Any bytes either parse
// or give an error; an image that parses serializes to bytes that parse to the same image.
#include <span>

#include "fuzz_target.h"
#include "npu/cache/token_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using npu::cache::TokenMap;
    auto image = TokenMap::parse(std::span<const uint8_t>(data, size), "fuzz input");
    if (!image) {
        npu::fuzz::require(!image.error().message.empty());
        return 0;
    }
    const std::vector<uint8_t> bytes = TokenMap::serialize(*image);
    auto again = TokenMap::parse(bytes, "re-serialized");
    npu::fuzz::require(again.has_value());
    npu::fuzz::require(again->useCounter == image->useCounter &&
                       again->entries.size() == image->entries.size());
    npu::fuzz::require(TokenMap::serialize(*again) == bytes);
    return 0;
}
