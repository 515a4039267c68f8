// Seeds of fuzz_token_map: serialized maps with zero, one and several entries.
#include "fuzz_target.h"
#include "npu/cache/token_map.h"

namespace npu::fuzz {

std::vector<std::vector<uint8_t>> seeds() {
    using cache::TokenMap;
    std::vector<std::vector<uint8_t>> all;
    TokenMap::Image image;
    all.push_back(TokenMap::serialize(image));
    for (uint8_t i = 0; i < 3; ++i) {
        cache::TokenMapEntry e;
        e.token.fill(uint8_t(0x10 + i));
        e.hash.fill(uint8_t(0xA0 + i));
        e.modelBytes = 1000u * (i + 1);
        e.dataBytes = 50000u * i;
        e.createdNs = 1'700'000'000'000'000'000ull + i;
        e.lastUsedNs = e.createdNs + 5;
        e.lastUseSeq = i + 1;
        e.driverVersion = "npu-stack 0.1." + std::to_string(i);
        e.firmwareVersion = i == 2 ? "" : "fw 1.0";
        image.entries.push_back(e);
        image.useCounter = i + 1;
        all.push_back(TokenMap::serialize(image));
    }
    return all;
}

}  // namespace npu::fuzz
