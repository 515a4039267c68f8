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
    // Findings of the libFuzzer runs (docs/reliability.md, "Fuzzing"), kept as regressions:
    // a RELU1 output of scale ~5e-11: its activation bounds overflowed int32 (UBSan, quant.cpp).
    all.push_back({0x01, 0x99, 0x73, 0x63, 0x63, 0x63, 0x63, 0x63, 0x63, 0x63, 0x63, 0x63, 0x63, 0x63, 0x63,
                   0x63, 0x63, 0x63, 0x63, 0x63, 0x01, 0x01, 0x63, 0x63, 0x5e, 0x5e, 0x48, 0x11, 0x3f, 0x64,
                   0x50, 0xa7, 0x08, 0x73, 0xcb, 0x00, 0x32, 0xac, 0xb4, 0x75, 0xc0, 0x97, 0xe6, 0x60, 0xad,
                   0x57, 0x9e, 0x74, 0x8e, 0xf9, 0xd7, 0x15, 0xbd, 0x53, 0x1d, 0xa7, 0x68, 0xab, 0x17, 0x34,
                   0x07, 0xbb, 0xc9, 0x55, 0xb4, 0x4b, 0x31, 0x38, 0x84, 0xb7, 0xb9, 0x5a, 0x3a, 0x79, 0x55,
                   0xf9, 0x86, 0xd8, 0xea, 0xfe, 0x6a, 0xcf, 0x57, 0x40, 0x44, 0x42, 0x2a, 0xaa});
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
