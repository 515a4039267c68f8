// Seeds of fuzz_driver_model: random choice bytes (driver_model.h) for each element type and
// layout, most without edits (valid models the NPU claims), some with one to three edits. The
// test below checks that the unedited seeds are valid models, so mutations start from models
// that reach the firmware's compiler and the NPU.
#include <catch2/catch.hpp>
#include <random>

#include "driver_model.h"
#include "fuzz_target.h"
#include "npu/hal/validation.h"

namespace npu::fuzz {

std::vector<std::vector<uint8_t>> seeds() {
    std::mt19937 rng(20261125);
    std::vector<std::vector<uint8_t>> all;
    for (uint8_t i = 0; i < 48; ++i) {
        std::vector<uint8_t> s(96);
        for (auto& b : s) b = uint8_t(rng());
        s[0] = uint8_t((i % 4) | (i >= 36 ? (1 + i % 3) << 6 : 0));  // type, layout, edits
        all.push_back(std::move(s));
    }
    return all;
}

}  // namespace npu::fuzz

TEST_CASE("driver fuzz seeds without edits are valid models", "[fuzz]") {
    for (const auto& s : npu::fuzz::seeds()) {
        npu::fuzz::InputReader in(s.data(), s.size());
        const auto dm = npu::fuzz::buildDriverModel(in);
        if (dm.edited) continue;
        auto valid = npu::hal::validateModel(dm.testCase.model);
        INFO((valid ? std::string() : valid.error().message));
        CHECK(valid.has_value());
    }
}
