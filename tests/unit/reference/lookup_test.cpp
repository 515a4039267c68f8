// FarmHash Fingerprint64 (the hash of LSH_PROJECTION) on each of its length classes.
#include "../../../reference/src/ops/lookup.h"

#include <catch2/catch.hpp>
#include <numeric>

#include "cts_family.h"

using namespace npu;

TEST_CASE("fingerprint64 of the empty string is farmhash's k2", "[unit][reference]") {
    CHECK(ref::ops::fingerprint64(nullptr, 0) == 0x9ae16a3b2f90404fULL);
}

TEST_CASE("fingerprint64 depends on every byte for every length class", "[unit][reference]") {
    std::vector<uint8_t> data(200);
    std::iota(data.begin(), data.end(), uint8_t{1});
    for (size_t len : {1, 3, 4, 7, 8, 12, 16, 17, 32, 33, 64, 65, 128, 130, 200}) {
        const uint64_t h = ref::ops::fingerprint64(data.data(), len);
        for (size_t i = 0; i < len; ++i) {
            auto changed = data;
            changed[i] ^= 0x40;
            INFO("length " << len << " byte " << i);
            CHECK(ref::ops::fingerprint64(changed.data(), len) != h);
        }
        CHECK(ref::ops::fingerprint64(data.data(), len) == h);  // deterministic
    }
}
