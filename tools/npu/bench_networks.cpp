// The networks of `npu bench cache` (bench_networks.h).
#include "bench_networks.h"

#include "builtin_networks.h"
#include "npu/hal/model_builder.h"

namespace npu::tools {

// MobileNet-v2 at 224x224 without its pooling and classifier (builtin_networks.h): the stem,
// the 17 inverted-residual blocks and the final 1x1 convolution to 1280 channels: 62 operations,
// 2.26 MB of int8 weights.
framework::TestCase benchMobilenetV2() {
    return mobilenetV2(224, /*classifier=*/false).testCase;
}

// A ResNet-shaped plain CNN at 224x224 from CONV_2D, ADD and FULLY_CONNECTED only: 3x3
// convolutions down to 14x14x256 with a residual pair per stage, then a classifier layer.
framework::TestCase benchResnetShaped() {
    QuantNetBuilder n({1, 224, 224, 3}, 12345);
    QuantTensor x = n.conv(n.input(), 32, 3, 2, Activation::kRelu6, "stem");
    for (uint32_t out : {64u, 128u, 256u}) {
        const std::string s = "stage" + std::to_string(out) + "/";
        x = n.conv(x, out, 3, 2, Activation::kRelu6, s + "down");
        const QuantTensor skip = x;
        x = n.conv(x, out, 3, 1, Activation::kRelu6, s + "conv_a");
        x = n.conv(x, out, 3, 1, Activation::kNone, s + "conv_b");
        x = n.add(x, skip, s + "add");
    }
    x = n.conv(x, 256, 3, 2, Activation::kRelu6, "last");
    x = n.fullyConnected(x, 128, 4.0f, "fc");
    return n.finish("bench_resnet_shaped_224", {x.operand}).testCase;
}

// The first network of the benchmark: 5 CONV_2D, 4 FULLY_CONNECTED and an ADD on a 32x32x16
// input, about 1.3 MB of int8 weights (the FC 4096->256 alone is 1 MiB), mostly weights and little
// compute.
framework::TestCase benchSmallNetwork() {
    using hal::OperandType;
    using hal::OperationType;
    const auto q8 = OperandType::TENSOR_QUANT8_ASYMM;
    hal::ModelBuilder b;
    uint32_t state = 12345;
    auto byte = [&] {
        state = state * 1664525u + 1013904223u;
        return static_cast<uint8_t>(state >> 24);
    };
    float inScale = 0.5f;
    uint32_t x = b.input(q8, {1, 32, 32, 16}, inScale, 128);
    uint32_t h = 32, c = 16;
    struct Conv {
        uint32_t out, stride;
    };
    for (Conv conv : {Conv{32, 1}, Conv{64, 2}, Conv{64, 2}, Conv{64, 1}, Conv{64, 1}}) {
        std::vector<uint8_t> w(conv.out * 3 * 3 * c);
        for (auto& v : w) v = byte();
        std::vector<int32_t> bias(conv.out, 100);
        const float wScale = 0.01f, outScale = 0.2f;
        uint32_t f = b.constant<uint8_t>(q8, {conv.out, 3, 3, c}, w, wScale, 128);
        uint32_t bb = b.constant<int32_t>(OperandType::TENSOR_INT32, {conv.out}, bias, inScale * wScale, 0);
        h = (h + conv.stride - 1) / conv.stride;
        uint32_t y = b.temp(q8, {1, h, h, conv.out}, outScale, 0);
        b.operation(OperationType::CONV_2D,
                    {x, f, bb, b.scalar(1), b.scalar(static_cast<int32_t>(conv.stride)),
                     b.scalar(static_cast<int32_t>(conv.stride)), b.scalar(1)},
                    {y});
        x = y;
        c = conv.out;
        inScale = outScale;
    }
    uint32_t features = h * h * c;  // 8*8*64 = 4096
    for (uint32_t units : {256u, 256u, 128u, 64u}) {
        std::vector<uint8_t> w(units * features);
        for (auto& v : w) v = byte();
        std::vector<int32_t> bias(units, 50);
        const float wScale = 0.002f, outScale = 0.3f;
        uint32_t f = b.constant<uint8_t>(q8, {units, features}, w, wScale, 128);
        uint32_t bb = b.constant<int32_t>(OperandType::TENSOR_INT32, {units}, bias, inScale * wScale, 0);
        uint32_t y = b.temp(q8, {1, units}, outScale, 128);
        b.operation(OperationType::FULLY_CONNECTED, {x, f, bb, b.scalar(1)}, {y});
        x = y;
        features = units;
        inScale = outScale;
    }
    std::vector<uint8_t> prior(features, 130);
    uint32_t p = b.constant<uint8_t>(q8, {1, features}, prior, 0.1f, 128);
    uint32_t out = b.output(q8, {1, features}, 0.5f, 128);
    b.operation(OperationType::ADD, {x, p, b.scalar(0)}, {out});
    framework::TestCase tc;
    tc.name = "bench_cache_network";
    tc.model = b.build();
    tc.inputs = {std::vector<uint8_t>(32 * 32 * 16)};
    for (auto& v : tc.inputs[0]) v = byte();
    tc.expectedOutputs = {std::vector<uint8_t>(features)};
    tc.expectedOutputDims = {{1, features}};
    tc.outputIgnored = {false};
    return tc;
}

}  // namespace npu::tools
