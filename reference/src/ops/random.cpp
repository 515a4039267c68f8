// RANDOM_MULTINOMIAL: samples class indices from softmax(logits) per batch, with TensorFlow's
// Philox4x32-10 generator seeded by the seeds input, as the NNAPI reference does. The same seeds
// give the same samples (also seeds {0, 0}, which TensorFlow would replace by random ones).
#include "random.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common.h"

namespace npu::ref::ops {

PhiloxRandom::PhiloxRandom(uint64_t seedLo, uint64_t seedHi) {
    key_[0] = uint32_t(seedLo);
    key_[1] = uint32_t(seedLo >> 32);
    counter_[2] = uint32_t(seedHi);
    counter_[3] = uint32_t(seedHi >> 32);
}

std::array<uint32_t, 4> PhiloxRandom::next() {
    constexpr uint32_t kW32A = 0x9E3779B9, kW32B = 0xBB67AE85, kM4x32A = 0xD2511F53, kM4x32B = 0xCD9E8D57;
    std::array<uint32_t, 4> c = counter_;
    std::array<uint32_t, 2> k = key_;
    for (int round = 0; round < 10; ++round) {
        const uint64_t p0 = uint64_t(kM4x32A) * c[0], p1 = uint64_t(kM4x32B) * c[2];
        c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
        k[0] += kW32A;
        k[1] += kW32B;
    }
    for (auto& word : counter_) {  // 128-bit increment
        if (++word != 0) break;
    }
    return c;
}

uint32_t PhiloxRandom::nextUint32() {
    if (used_ == 4) {
        block_ = next();
        used_ = 0;
    }
    return block_[used_++];
}

double PhiloxRandom::nextDouble() {
    const uint32_t x0 = nextUint32(), x1 = nextUint32();
    // 52 random mantissa bits: a double in [1, 2), minus 1.
    const uint64_t bits = (uint64_t(1023) << 52) | (uint64_t(x0 & 0xfffffu) << 32) | x1;
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d - 1.0;
}

namespace {

bool supportsMultinomial(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0), {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16}) &&
           operandType(sg, op, 2) == OperandType::TENSOR_INT32;
}

Status prepareMultinomial(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRank(0, 2));
    NPU_TRY(ctx.expectType(2, OperandType::TENSOR_INT32));
    NPU_TRY(ctx.expectRank(2, 1));
    if (ctx.inputDims(2)[0] != 2)
        return ctx.error("input 2 (seeds) has " + std::to_string(ctx.inputDims(2)[0]) +
                         " elements, expected 2");
    if (ctx.inputDims(0)[1] == 0) return ctx.error("input 0 has no classes");
    const int32_t samples = NPU_TRY(scalarInput<int32_t>(ctx, 1, OperandType::INT32));
    if (samples < 0) return ctx.error("input 1 (sample_count) " + std::to_string(samples) + " is negative");
    if (ctx.outputType(0) != OperandType::TENSOR_INT32) return ctx.error("output 0 must be TENSOR_INT32");
    return ctx.setOutputShape(0, {ctx.inputDims(0)[0], uint32_t(samples)});
}

Status executeMultinomial(OperationContext& ctx) {
    const RuntimeOperand& logits = ctx.input(0);
    const uint32_t batches = logits.dims[0], classes = logits.dims[1];
    const uint32_t samples = uint32_t(ctx.scalar<int32_t>(1));
    const int32_t* seeds = ctx.inputData<int32_t>(2);
    PhiloxRandom random{static_cast<uint64_t>(int64_t{seeds[0]}), static_cast<uint64_t>(int64_t{seeds[1]})};
    int32_t* out = ctx.outputData<int32_t>(0);
    std::vector<double> cdf(classes);
    for (uint32_t b = 0; b < batches; ++b) {
        float max = std::numeric_limits<float>::lowest();
        for (uint32_t c = 0; c < classes; ++c) {
            const float v = loadFloat(logits.type, logits.data(), size_t(b) * classes + c);
            if (std::isfinite(v)) max = std::max(max, v);
        }
        double total = 0;
        for (uint32_t c = 0; c < classes; ++c) {
            const float v = loadFloat(logits.type, logits.data(), size_t(b) * classes + c);
            if (std::isfinite(v)) total += std::exp(double(v) - double(max));
            cdf[c] = total;
        }
        for (uint32_t s = 0; s < samples; ++s) {
            const double target = random.nextDouble() * total;
            const auto found = std::upper_bound(cdf.begin(), cdf.end(), target);
            out[size_t(b) * samples + s] = int32_t(std::min<ptrdiff_t>(found - cdf.begin(), classes - 1));
        }
    }
    return {};
}

}  // namespace

std::vector<OperationRegistration> randomOperations() {
    return {{hal::OperationType::RANDOM_MULTINOMIAL, supportsMultinomial, prepareMultinomial,
             executeMultinomial}};
}

}  // namespace npu::ref::ops
