#include "demo_network.h"

#include "npu/hal/model_builder.h"

namespace npu::tools {
namespace {

// A fixed linear congruential sequence, so the demo prints the same numbers everywhere.
class Lcg {
public:
    explicit Lcg(uint32_t seed) : state_(seed) {}
    uint32_t next() {
        state_ = state_ * 1664525u + 1013904223u;
        return state_ >> 8;
    }
    uint8_t byte() { return static_cast<uint8_t>(next() & 0xff); }
    int32_t range(int32_t lo, int32_t hi) {
        return lo + static_cast<int32_t>(next() % static_cast<uint32_t>(hi - lo + 1));
    }

private:
    uint32_t state_;
};

}  // namespace

DemoNetwork makeDemoNetwork() {
    using hal::OperandType;
    using hal::OperationType;
    Lcg rng(2026);
    hal::ModelBuilder b;
    const auto q8 = OperandType::TENSOR_QUANT8_ASYMM;

    const float inScale = 0.5f;
    uint32_t input = b.input(q8, {1, 8, 8, 3}, inScale, 128);

    // conv1: 3x3, 3 -> 8 channels, implicit SAME padding, stride 1, RELU6
    std::vector<uint8_t> w1(8 * 3 * 3 * 3);
    for (auto& w : w1) w = rng.byte();
    std::vector<int32_t> b1(8);
    for (auto& v : b1) v = rng.range(-500, 500);
    const float w1Scale = 0.02f;
    uint32_t f1 = b.constant<uint8_t>(q8, {8, 3, 3, 3}, w1, w1Scale, 120);
    uint32_t bias1 = b.constant<int32_t>(OperandType::TENSOR_INT32, {8}, b1, inScale * w1Scale, 0);
    const float a1Scale = 0.05f;
    uint32_t act1 = b.temp(q8, {1, 8, 8, 8}, a1Scale, 0);
    b.operation(OperationType::CONV_2D,
                {input, f1, bias1, b.scalar(1 /*SAME*/), b.scalar(1), b.scalar(1), b.scalar(3 /*RELU6*/)},
                {act1});

    // conv2: 3x3, 8 -> 16 channels, SAME padding, stride 2, RELU
    std::vector<uint8_t> w2(16 * 3 * 3 * 8);
    for (auto& w : w2) w = rng.byte();
    std::vector<int32_t> b2(16);
    for (auto& v : b2) v = rng.range(-300, 300);
    const float w2Scale = 0.01f;
    uint32_t f2 = b.constant<uint8_t>(q8, {16, 3, 3, 8}, w2, w2Scale, 128);
    uint32_t bias2 = b.constant<int32_t>(OperandType::TENSOR_INT32, {16}, b2, a1Scale * w2Scale, 0);
    const float a2Scale = 0.04f;
    uint32_t act2 = b.temp(q8, {1, 4, 4, 16}, a2Scale, 0);
    b.operation(OperationType::CONV_2D,
                {act1, f2, bias2, b.scalar(1), b.scalar(2), b.scalar(2), b.scalar(1 /*RELU*/)}, {act2});

    // fc: 256 -> 10
    std::vector<uint8_t> w3(10 * 256);
    for (auto& w : w3) w = rng.byte();
    std::vector<int32_t> b3(10);
    for (auto& v : b3) v = rng.range(-1000, 1000);
    const float w3Scale = 0.005f;
    uint32_t f3 = b.constant<uint8_t>(q8, {10, 256}, w3, w3Scale, 128);
    uint32_t bias3 = b.constant<int32_t>(OperandType::TENSOR_INT32, {10}, b3, a2Scale * w3Scale, 0);
    const float logitScale = 0.1f;
    uint32_t logits = b.temp(q8, {1, 10}, logitScale, 128);
    b.operation(OperationType::FULLY_CONNECTED, {act2, f3, bias3, b.scalar(0)}, {logits});

    // add: a constant per-class prior
    std::vector<uint8_t> prior(10);
    for (auto& p : prior) p = static_cast<uint8_t>(rng.range(100, 156));
    uint32_t priorOperand = b.constant<uint8_t>(q8, {1, 10}, prior, 0.05f, 128);
    uint32_t out = b.output(q8, {1, 10}, 0.12f, 128);
    b.operation(OperationType::ADD, {logits, priorOperand, b.scalar(0)}, {out});

    DemoNetwork demo;
    demo.model = b.build();
    demo.input.resize(8 * 8 * 3);
    for (auto& v : demo.input) v = rng.byte();
    demo.outputDims = {1, 10};
    return demo;
}

}  // namespace npu::tools
