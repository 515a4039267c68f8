// QUANTIZE (float32 model input -> 8-bit) and DEQUANTIZE (8-bit -> float32 model output) end to
// end on the simulator (CONVERT, ISA 1.3). Expected values are the reference's arithmetic
// written out here (reference/src/quant_utils.h quantizeValue, operation_context.cpp loadReal):
// round(x / scale) + zp in float32, half away from zero, saturated, NaN low; scale * (q - zp).
// Ties, infinities, NaN and saturation are in the inputs; a small scratchpad makes many tiles.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "blob_format.h"
#include "model_fixture.h"
#include "npu/hal/types.h"
#include "op_plan.h"

using namespace fwtest;
namespace isa = npu::isa;
namespace fwhal = npu::fw::hal;

namespace {

static_assert(fwhal::kOpQuantize == uint32_t(npu::hal::OperationType::QUANTIZE));
static_assert(fwhal::kOpDequantize == uint32_t(npu::hal::OperationType::DEQUANTIZE));
static_assert(fwhal::kTensorFloat32 == uint32_t(npu::hal::OperandType::TENSOR_FLOAT32));
static_assert(fwhal::kTensorFloat16 == uint32_t(npu::hal::OperandType::TENSOR_FLOAT16));
static_assert(fwhal::kTensorQuant8Symm == uint32_t(npu::hal::OperandType::TENSOR_QUANT8_SYMM));

constexpr uint32_t kU8 = 5, kI8 = 14;

size_t count(const std::vector<uint32_t>& dims) {
    size_t n = 1;
    for (uint32_t d : dims) n *= d;
    return n;
}

npu::sim::HwConfig hwWith(uint32_t scratchpadBytes) {
    npu::sim::HwConfig hw;
    if (scratchpadBytes != 0) hw.scratchpadBytes = scratchpadBytes;
    return hw;
}

// The reference's quantizeValue.
uint8_t quantizeRef(float x, Quant q, bool isSigned) {
    const int lo = isSigned ? -128 : 0, hi = lo + 255;
    const float v = std::round(x / q.scale) + float(q.zp);
    if (!(v >= float(lo))) return uint8_t(lo);
    if (v > float(hi)) return uint8_t(hi);
    return uint8_t(int32_t(v));
}

std::vector<uint8_t> floatBytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// Floats that exercise the rounding: exact ties (k + 1/2) * scale, both signs, far outside the
// range, infinities, NaN, denormals, and random values.
std::vector<float> testFloats(size_t n, Quant q, std::mt19937& rng) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<float> special = {0.0f,
                                  -0.0f,
                                  0.5f * q.scale,
                                  -0.5f * q.scale,
                                  1.5f * q.scale,
                                  -2.5f * q.scale,
                                  127.5f * q.scale,
                                  -128.5f * q.scale,
                                  1e30f,
                                  -1e30f,
                                  inf,
                                  -inf,
                                  std::numeric_limits<float>::quiet_NaN(),
                                  1e-40f,
                                  -1e-40f};
    std::uniform_real_distribution<float> dist(-300.0f * q.scale, 300.0f * q.scale);
    std::uniform_int_distribution<int> half(-300, 300);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        if (i < special.size()) {
            v[i] = special[i];
        } else {
            v[i] = i % 3 == 0 ? (float(half(rng)) + 0.5f) * q.scale : dist(rng);
        }
    }
    return v;
}

void runQuantize(std::vector<uint32_t> dims, Quant q, bool isSigned, uint32_t seed, uint32_t scratchpad = 0) {
    Harness h(hwWith(scratchpad), false);
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    std::mt19937 rng(seed);
    const std::vector<float> x = testFloats(count(dims), q, rng);
    const uint32_t in = mb.input(dims, {0.0f, 0}, fwhal::kTensorFloat32);
    mb.op(fwhal::kOpQuantize, {in}, {mb.output(dims, q, isSigned ? kI8 : kU8)});
    std::vector<uint8_t> expect(x.size());
    for (size_t i = 0; i < x.size(); ++i) expect[i] = quantizeRef(x[i], q, isSigned);
    const BlobInfo info = prepareClaimed(h, mb.build());
    Run r = execute(h, info, {floatBytes(x)}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
}

// type: TENSOR_QUANT8_ASYMM (uint8), TENSOR_QUANT8_ASYMM_SIGNED or TENSOR_QUANT8_SYMM (int8).
void runDequantize(std::vector<uint32_t> dims, Quant q, uint32_t type, uint32_t seed,
                   uint32_t scratchpad = 0) {
    const bool isSigned = type != kU8;
    Harness h(hwWith(scratchpad), false);
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    std::mt19937 rng(seed);
    const std::vector<uint8_t> x = randomBytes(rng, count(dims));
    const uint32_t in = mb.input(dims, q, type);
    mb.op(fwhal::kOpDequantize, {in}, {mb.output(dims, {0.0f, 0}, fwhal::kTensorFloat32)});
    std::vector<float> expect(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const int v = isSigned ? int(int8_t(x[i])) : int(x[i]);
        expect[i] = q.scale * float(v - q.zp);
    }
    const BlobInfo info = prepareClaimed(h, mb.build());
    Run r = execute(h, info, {x}, {expect.size() * 4});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == floatBytes(expect));  // bit for bit
}

}  // namespace

TEST_CASE("QUANTIZE float32 -> uint8 / int8: ties away from zero, saturation, infinities, NaN low, tiled") {
    runQuantize({15}, {0.5f, 7}, false, 1);
    runQuantize({2, 3, 5, 7}, {0.1f, 128}, false, 2);
    runQuantize({2, 3, 5, 7}, {0.1f, -3}, true, 3);
    runQuantize({1, 37, 41, 3}, {0.0625f, 0}, false, 4, 4 << 10);  // 4551 elements, 4 KiB scratchpad
    runQuantize({3, 1000}, {0.37f, -128}, true, 5, 4 << 10);
}

TEST_CASE("DEQUANTIZE uint8 / int8 / TENSOR_QUANT8_SYMM -> float32, bit for bit, tiled") {
    runDequantize({9}, {0.5f, 7}, kU8, 11);
    runDequantize({2, 3, 5, 7}, {0.1f, 128}, kU8, 12);
    runDequantize({2, 3, 5, 7}, {0.013f, -3}, kI8, 13);
    runDequantize({1, 37, 41, 3}, {3.7f, 255}, kU8, 14, 4 << 10);
    runDequantize({3, 1000}, {1e-3f, 127}, kI8, 15, 4 << 10);
    runDequantize({2, 3, 4, 5}, {0.21f, 0}, fwhal::kTensorQuant8Symm, 16);
    runDequantize({3, 1000}, {1.5f, 0}, fwhal::kTensorQuant8Symm, 17, 4 << 10);
}

TEST_CASE("QUANTIZE / DEQUANTIZE refusals name the operation and the rule") {
    SECTION("TENSOR_FLOAT16") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({4}, {0.0f, 0}, fwhal::kTensorFloat16);
        mb.op(fwhal::kOpQuantize, {x}, {mb.output({4}, {0.5f, 1})});
        expectRefused(h, mb, "QUANTIZE", "TENSOR_FLOAT16; only TENSOR_FLOAT32");
    }
    SECTION("DEQUANTIZE to float16") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({4}, {0.5f, 1});
        mb.op(fwhal::kOpDequantize, {x}, {mb.output({4}, {0.0f, 0}, fwhal::kTensorFloat16)});
        expectRefused(h, mb, "DEQUANTIZE", "no half-precision conversion");
    }
    SECTION("TENSOR_QUANT8_SYMM with a zero point") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({4}, {0.5f, 1}, fwhal::kTensorQuant8Symm);
        mb.op(fwhal::kOpDequantize, {x}, {mb.output({4}, {0.0f, 0}, fwhal::kTensorFloat32)});
        expectRefused(h, mb, "DEQUANTIZE", "zero point 0");
    }
    SECTION("a shape change") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({4}, {0.0f, 0}, fwhal::kTensorFloat32);
        mb.op(fwhal::kOpQuantize, {x}, {mb.output({2, 2}, {0.5f, 1})});
        expectRefused(h, mb, "QUANTIZE", "output shape differs");
    }
}

TEST_CASE("loadBlob refuses a CONVERT command with a field out of range") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    const uint32_t x = mb.input({3, 50}, {0.0f, 0}, fwhal::kTensorFloat32);
    const uint32_t q = mb.temp({3, 50}, {0.25f, 3});
    mb.op(fwhal::kOpQuantize, {x}, {q});
    mb.op(fwhal::kOpDequantize, {q}, {mb.output({3, 50}, {0.0f, 0}, fwhal::kTensorFloat32)});
    const BlobImage image(h, prepareClaimed(h, mb.build()));
    uint32_t seen = 0;
    for (size_t c = 0; c < image.commands; ++c) {
        const uint32_t header = image.word(c, 0);
        if (isa::Opcode(header & 0xFF) != isa::Opcode::kConvert) continue;
        ++seen;
        image.expectRefused(c, isa::convert::kScale, 0xBF800000u);  // -1.0f
        image.expectRefused(c, isa::convert::kScale, 0x7F800000u);  // +inf
        image.expectRefused(c, isa::convert::kZp, 256);
        image.expectRefused(c, isa::convert::kCount, 0);
        image.expectRefused(c, isa::convert::kInAddr, 0xFFFFFFF0u);
        image.expectRefused(c, isa::convert::kOutAddr, 0xFFFFFFF0u);
        image.expectRefused(c, isa::convert::kOutAddr, image.word(c, isa::convert::kInAddr));  // overlap
        image.expectRefused(c, 0, header | (1u << 10));                                        // unknown flag
    }
    CHECK(seen == 2);
    // The I/O table: a float32 input's byte size must be 1 or 4 per element.
    std::vector<uint8_t> v = image.image;
    const uint32_t metaOff = readU32(v.data() + 4 * blob::kMetaOffset);
    writeU32(v.data() + metaOff + 28, 150 * 2);
    BlobInfo bi;
    const FwStatus st = h.runtime.loadBlob(v.data(), v.size(), &bi);
    CHECK_FALSE(st.ok());
    CHECK(std::string(st.message).find("io byte size") != std::string::npos);
}
