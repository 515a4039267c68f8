#pragma once
// The random quantized model generator of the tests: the differential test (tests/unit/shim/
// npu_vs_reference_test.cpp) draws its choices from a seeded std::mt19937, the driver fuzz
// targets (tests/fuzz/driver_model.cpp) from the bytes of a fuzz input. Every model it makes is
// valid whatever the choices, and covers the space the NPU claims (layouts, implicit and
// explicit padding, strides, dilation, groups, activations, uint8 / int8 / per-channel filters,
// requantization multipliers above and below 1, depth multipliers, broadcasting).
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/hal/model_builder.h"

namespace npu::testing {

using hal::OperandLifeTime;
using hal::OperandType;

// Where a random model's choices come from. Structure (operations, shapes, scales) is drawn with
// uniform / uniformReal; data (weights, biases, inputs) with dataByte / dataInt.
class Choices {
public:
    virtual ~Choices() = default;
    virtual int uniform(int lo, int hi) = 0;  // in [lo, hi]
    virtual float uniformReal(float lo, float hi) = 0;
    virtual uint8_t dataByte() = 0;
    virtual int dataInt(int lo, int hi) = 0;
    // Puts `v` in a random order.
    virtual void shuffle(std::vector<int32_t>& v) = 0;
};

// Every choice from one std::mt19937.
class SeededChoices final : public Choices {
public:
    explicit SeededChoices(uint32_t seed) : rng_(seed) {}
    int uniform(int lo, int hi) override { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    float uniformReal(float lo, float hi) override {
        return std::uniform_real_distribution<float>(lo, hi)(rng_);
    }
    uint8_t dataByte() override { return static_cast<uint8_t>(uniform(0, 255)); }
    int dataInt(int lo, int hi) override { return uniform(lo, hi); }
    void shuffle(std::vector<int32_t>& v) override { std::shuffle(v.begin(), v.end(), rng_); }

private:
    std::mt19937 rng_;
};

// A model under construction (hal::SubgraphBuilder) and its test case: each model input gets
// random bytes, each marked output the size of its tensor; the generator functions below add
// operations to it.
class RandomModel {
public:
    // Choices from a std::mt19937 seeded with `seed`.
    explicit RandomModel(uint32_t seed) : owned_(std::make_unique<SeededChoices>(seed)), choices_(*owned_) {}
    // Choices from `choices` (which must outlive the model), e.g. a fuzz input's bytes.
    explicit RandomModel(Choices& choices) : choices_(choices) {}

    int uniform(int lo, int hi) { return choices_.uniform(lo, hi); }
    float uniformReal(float lo, float hi) { return choices_.uniformReal(lo, hi); }
    bool coin() { return uniform(0, 1) == 1; }
    // A random constant value (bias, PAD_V2 value): data, not structure.
    int dataInt(int lo, int hi) { return choices_.dataInt(lo, hi); }
    void shuffle(std::vector<int32_t>& v) { choices_.shuffle(v); }

    uint32_t operand(OperandType type, std::vector<uint32_t> dims, OperandLifeTime lifetime, float scale = 0,
                     int32_t zp = 0) {
        return b_.operand(type, std::move(dims), lifetime, scale, zp);
    }
    uint32_t constantBytes(OperandType type, std::vector<uint32_t> dims, const void* data, size_t size,
                           float scale = 0, int32_t zp = 0) {
        return b_.constantBytes(type, std::move(dims), {static_cast<const std::byte*>(data), size}, scale,
                                zp);
    }
    uint32_t i32(int32_t v) { return b_.scalar(v); }
    uint32_t boolean(bool v) { return b_.boolean(v); }
    // A quantized model input of random bytes.
    uint32_t input(OperandType type, std::vector<uint32_t> dims, float scale, int32_t zp) {
        const uint32_t i = b_.input(type, dims, scale, zp);
        tc_.inputs.push_back(randomBytes(elements(dims)));
        return i;
    }
    void markOutput(uint32_t i) {
        auto& o = tc_.model.main.operands[i];
        o.lifetime = OperandLifeTime::SUBGRAPH_OUTPUT;
        tc_.model.main.outputIndexes.push_back(i);
        tc_.expectedOutputs.emplace_back(elements(o.dimensions));
        tc_.expectedOutputDims.push_back(o.dimensions);
        tc_.outputIgnored.push_back(false);
    }
    void op(hal::OperationType type, std::vector<uint32_t> in, std::vector<uint32_t> out) {
        b_.operation(type, std::move(in), std::move(out));
    }
    // The first model input, `i`, computed instead by a QUANTIZE (inserted as the first operation)
    // of a TENSOR_FLOAT32 model input holding `floats`: the partition's edge.
    void quantizeInput(uint32_t i, const std::vector<float>& floats) {
        auto& g = tc_.model.main;
        g.operands[i].lifetime = OperandLifeTime::TEMPORARY_VARIABLE;
        const uint32_t f =
            operand(OperandType::TENSOR_FLOAT32, g.operands[i].dimensions, OperandLifeTime::SUBGRAPH_INPUT);
        g.inputIndexes.front() = f;
        tc_.inputs.front().resize(floats.size() * 4);
        std::memcpy(tc_.inputs.front().data(), floats.data(), floats.size() * 4);
        g.operations.insert(g.operations.begin(), {hal::OperationType::QUANTIZE, {f}, {i}});
    }
    // A DEQUANTIZE of `x` to a TENSOR_FLOAT32 model output.
    void dequantizeOutput(uint32_t x) {
        const uint32_t y =
            operand(OperandType::TENSOR_FLOAT32, at(x).dimensions, OperandLifeTime::TEMPORARY_VARIABLE);
        op(hal::OperationType::DEQUANTIZE, {x}, {y});
        markOutput(y);
        tc_.expectedOutputs.back().resize(elements(at(y).dimensions) * 4);
    }
    std::vector<uint8_t> randomBytes(size_t n) {
        std::vector<uint8_t> b(n);
        for (auto& x : b) x = choices_.dataByte();
        return b;
    }
    static size_t elements(const std::vector<uint32_t>& dims) {
        size_t n = 1;
        for (uint32_t d : dims) n *= d;
        return n;
    }
    const hal::Operand& at(uint32_t i) const { return tc_.model.main.operands[i]; }
    framework::TestCase& testCase() { return tc_; }

    int32_t zeroPoint(OperandType t) {
        return t == OperandType::TENSOR_QUANT8_ASYMM ? uniform(0, 255) : uniform(-128, 127);
    }

private:
    std::unique_ptr<Choices> owned_;
    Choices& choices_;
    framework::TestCase tc_;
    hal::SubgraphBuilder b_{tc_.model, tc_.model.main};
};

// The operations the generator adds to `x` (a temporary or input of `m`); each returns its output.
float outputScale(RandomModel& m, float productScale, uint32_t terms);
uint32_t outSize(uint32_t in, uint32_t k, uint32_t stride, uint32_t dil, uint32_t padHead, uint32_t padTail);
uint32_t randomBias(RandomModel& m, uint32_t count, float scale);
uint32_t addImageInput(RandomModel& m, bool* isNchw);
uint32_t addImageInputOf(RandomModel& m, OperandType type, bool nchw);
uint32_t addConvolution(RandomModel& m, uint32_t x, bool nchw, bool depthwise);
uint32_t addFullyConnected(RandomModel& m, uint32_t x);
uint32_t addAdd(RandomModel& m, uint32_t x);
uint32_t addTransposeConv(RandomModel& m, uint32_t x, bool nchw);
uint32_t addPool(RandomModel& m, uint32_t x, bool nchw);
uint32_t addUnary(RandomModel& m, uint32_t x);
uint32_t addConcat(RandomModel& m, uint32_t x);
uint32_t addReshape(RandomModel& m, uint32_t x);
uint32_t addBinary(RandomModel& m, uint32_t x);
uint32_t addPad(RandomModel& m, uint32_t x);
uint32_t addTranspose(RandomModel& m, uint32_t x);
uint32_t addSpaceDepth(RandomModel& m, uint32_t x, bool nchw);
uint32_t addStridedSlice(RandomModel& m, uint32_t x);
uint32_t addResize(RandomModel& m, uint32_t x, bool nchw);
uint32_t addMean(RandomModel& m, uint32_t x);
uint32_t addPrelu(RandomModel& m, uint32_t x);
uint32_t addSoftmax(RandomModel& m, uint32_t x);
uint32_t addSameConv(RandomModel& m, uint32_t x, uint32_t cout);

// Whole models from a seed: convolutions, FULLY_CONNECTED and ADD; the data-movement,
// resampling and reduction operations (with QUANTIZE / DEQUANTIZE edges); the vector-unit and
// copy operations; residual blocks.
framework::TestCase randomModel(uint32_t seed);
framework::TestCase randomDataModel(uint32_t seed);
framework::TestCase randomVectorModel(uint32_t seed);
framework::TestCase randomResidualModel(uint32_t seed);

}  // namespace npu::testing
