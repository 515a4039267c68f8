// Built-in networks (see builtin_networks.h).
#include "builtin_networks.h"

#include <algorithm>
#include <cmath>

#include "npu/hwsim/mobilenet_workload.h"

namespace npu::tools {

namespace {

// Uniform random bytes around zero point 128 have this standard deviation (256 / sqrt(12)).
constexpr float kUniformByteStd = 73.9f;
// Expected spread of a pre-activation: RELU6 layers use about a third of the [0, 6] range.
constexpr float kReluSpread = 2.0f;
constexpr float kLinearSpread = 1.0f;
// Root mean square of RELU6(N(0, 2^2)): half the variance survives the rectifier.
constexpr float kRelu6Rms = 1.41f;

uint32_t sameOut(uint32_t in, uint32_t stride) {
    return (in + stride - 1) / stride;
}

size_t elements(const std::vector<uint32_t>& dims) {
    size_t n = 1;
    for (uint32_t d : dims) n *= d;
    return n;
}

}  // namespace

QuantNetBuilder::QuantNetBuilder(std::vector<uint32_t> inputDims, uint32_t seed) : state_(seed) {
    // An image in [-1, 1): scale 1/128 around 128, uniform (rms 0.577).
    input_.dims = inputDims;
    input_.scale = 1.0f / 128;
    input_.zeroPoint = 128;
    input_.rms = 0.577f;
    input_.operand = b_.input(kQ8, std::move(inputDims), input_.scale, input_.zeroPoint);
}

uint8_t QuantNetBuilder::byte() {
    state_ = state_ * 1664525u + 1013904223u;
    return static_cast<uint8_t>(state_ >> 24);
}

QuantTensor QuantNetBuilder::temporary(std::vector<uint32_t> dims, float scale, int32_t zeroPoint,
                                       float rms) {
    QuantTensor t;
    t.operand = b_.temp(kQ8, dims, scale, zeroPoint);
    t.dims = std::move(dims);
    t.scale = scale;
    t.zeroPoint = zeroPoint;
    t.rms = rms;
    return t;
}

// RELU6 outputs cover [0, 6] with zero point 0; linear outputs cover +-4 sigma around 128.
QuantTensor QuantNetBuilder::activated(std::vector<uint32_t> dims, Activation act, float spread) {
    if (act == Activation::kRelu6) return temporary(std::move(dims), 6.0f / 255, 0, kRelu6Rms);
    return temporary(std::move(dims), spread / 32, 128, spread);
}

uint32_t QuantNetBuilder::weights(std::vector<uint32_t> dims, float scale) {
    std::vector<uint8_t> w(elements(dims));
    for (auto& v : w) v = byte();
    return b_.constant<uint8_t>(kQ8, std::move(dims), w, scale, 128);
}

// Biases uniform in [-spread / 2, spread / 2] (real), at the accumulator's scale.
uint32_t QuantNetBuilder::biases(uint32_t n, float scale, float spread) {
    std::vector<int32_t> b(n);
    for (auto& v : b) {
        const float real = (static_cast<float>(byte()) / 255.0f - 0.5f) * spread;
        v = static_cast<int32_t>(std::lround(real / scale));
    }
    return b_.constant<int32_t>(hal::OperandType::TENSOR_INT32, {n}, b, scale, 0);
}

void QuantNetBuilder::operation(hal::OperationType type, std::vector<uint32_t> inputs,
                                std::vector<uint32_t> outputs, const std::string& name) {
    b_.operation(type, std::move(inputs), std::move(outputs));
    names_.push_back(name);
}

QuantTensor QuantNetBuilder::conv(const QuantTensor& in, uint32_t out, uint32_t kernel, uint32_t stride,
                                  Activation act, const std::string& name) {
    const float spread = act == Activation::kRelu6 ? kReluSpread : kLinearSpread;
    const float taps = static_cast<float>(kernel * kernel * in.c());
    const float wScale = spread / (std::sqrt(taps) * in.rms * kUniformByteStd);
    const uint32_t f = weights({out, kernel, kernel, in.c()}, wScale);
    const uint32_t bias = biases(out, in.scale * wScale, spread);
    QuantTensor y = activated({1, sameOut(in.h(), stride), sameOut(in.w(), stride), out}, act, spread);
    operation(hal::OperationType::CONV_2D,
              {in.operand, f, bias, b_.scalar(1), b_.scalar(int32_t(stride)), b_.scalar(int32_t(stride)),
               b_.scalar(static_cast<int32_t>(act))},
              {y.operand}, name);
    return y;
}

QuantTensor QuantNetBuilder::depthwise(const QuantTensor& in, uint32_t kernel, uint32_t stride,
                                       Activation act, const std::string& name) {
    const float spread = act == Activation::kRelu6 ? kReluSpread : kLinearSpread;
    const float wScale = spread / (static_cast<float>(kernel) * in.rms * kUniformByteStd);
    const uint32_t f = weights({1, kernel, kernel, in.c()}, wScale);
    const uint32_t bias = biases(in.c(), in.scale * wScale, spread);
    QuantTensor y = activated({1, sameOut(in.h(), stride), sameOut(in.w(), stride), in.c()}, act, spread);
    operation(hal::OperationType::DEPTHWISE_CONV_2D,
              {in.operand, f, bias, b_.scalar(1), b_.scalar(int32_t(stride)), b_.scalar(int32_t(stride)),
               b_.scalar(1), b_.scalar(static_cast<int32_t>(act))},
              {y.operand}, name);
    return y;
}

QuantTensor QuantNetBuilder::add(const QuantTensor& a, const QuantTensor& b, const std::string& name) {
    const float rms = std::sqrt(a.rms * a.rms + b.rms * b.rms);
    QuantTensor y = temporary(a.dims, rms / 32, 128, rms);
    operation(hal::OperationType::ADD, {a.operand, b.operand, b_.scalar(0)}, {y.operand}, name);
    return y;
}

// A whole-image VALID pool keeps the input's quantization (NNAPI requires it); the spread of a
// channel's mean is mostly its mean.
QuantTensor QuantNetBuilder::globalAveragePool(const QuantTensor& in, const std::string& name) {
    QuantTensor y = temporary({1, 1, 1, in.c()}, in.scale, in.zeroPoint, in.rms * 0.6f);
    operation(hal::OperationType::AVERAGE_POOL_2D,
              {in.operand, b_.scalar(2), b_.scalar(1), b_.scalar(1), b_.scalar(int32_t(in.w())),
               b_.scalar(int32_t(in.h())), b_.scalar(0)},
              {y.operand}, name);
    return y;
}

QuantTensor QuantNetBuilder::fullyConnected(const QuantTensor& in, uint32_t units, float logitSpread,
                                            const std::string& name) {
    const uint32_t features = static_cast<uint32_t>(elements(in.dims));
    const float wScale = logitSpread / (std::sqrt(static_cast<float>(features)) * in.rms * kUniformByteStd);
    const uint32_t f = weights({units, features}, wScale);
    const uint32_t bias = biases(units, in.scale * wScale, logitSpread);
    QuantTensor y = temporary({1, units}, logitSpread / 32, 128, logitSpread);
    operation(hal::OperationType::FULLY_CONNECTED, {in.operand, f, bias, b_.scalar(0)}, {y.operand}, name);
    return y;
}

// SOFTMAX and LOGISTIC: quant8 outputs have scale 1/256 and zero point 0 (NNAPI).
QuantTensor QuantNetBuilder::softmax(const QuantTensor& in, const std::string& name) {
    QuantTensor y = temporary(in.dims, 1.0f / 256, 0, 0.1f);
    operation(hal::OperationType::SOFTMAX,
              {in.operand, b_.constant<float>(hal::OperandType::FLOAT32, {}, {1.0f})}, {y.operand}, name);
    return y;
}

QuantTensor QuantNetBuilder::logistic(const QuantTensor& in, const std::string& name) {
    QuantTensor y = temporary(in.dims, 1.0f / 256, 0, 0.5f);
    operation(hal::OperationType::LOGISTIC, {in.operand}, {y.operand}, name);
    return y;
}

QuantTensor QuantNetBuilder::reshape(const QuantTensor& in, std::vector<uint32_t> dims,
                                     const std::string& name) {
    std::vector<int32_t> shape(dims.begin(), dims.end());
    const uint32_t shapeOperand =
        b_.constant<int32_t>(hal::OperandType::TENSOR_INT32, {static_cast<uint32_t>(shape.size())}, shape);
    QuantTensor y = temporary(std::move(dims), in.scale, in.zeroPoint, in.rms);
    operation(hal::OperationType::RESHAPE, {in.operand, shapeOperand}, {y.operand}, name);
    return y;
}

// The parts must share one quantization (the heads' outputs all do: linear, same spread).
QuantTensor QuantNetBuilder::concatenation(const std::vector<QuantTensor>& parts, uint32_t axis,
                                           const std::string& name) {
    std::vector<uint32_t> dims = parts.front().dims, inputs;
    dims[axis] = 0;
    for (const auto& p : parts) {
        dims[axis] += p.dims[axis];
        inputs.push_back(p.operand);
    }
    inputs.push_back(b_.scalar(static_cast<int32_t>(axis)));
    const QuantTensor& first = parts.front();
    QuantTensor y = temporary(std::move(dims), first.scale, first.zeroPoint, first.rms);
    operation(hal::OperationType::CONCATENATION, std::move(inputs), {y.operand}, name);
    return y;
}

uint32_t QuantNetBuilder::dequantize(const QuantTensor& in, const std::string& name) {
    const uint32_t y = b_.temp(hal::OperandType::TENSOR_FLOAT32, in.dims);
    operation(hal::OperationType::DEQUANTIZE, {in.operand}, {y}, name);
    return y;
}

std::vector<uint32_t> QuantNetBuilder::detectionPostprocess(uint32_t scores, uint32_t boxes,
                                                            const std::vector<float>& anchors,
                                                            uint32_t maxDetections, const std::string& name) {
    using hal::OperandType;
    const uint32_t count = static_cast<uint32_t>(anchors.size() / 4);
    auto f = [&](float v) { return b_.constant<float>(OperandType::FLOAT32, {}, {v}); };
    auto flag = [&](bool v) { return b_.constant<uint8_t>(OperandType::BOOL, {}, {uint8_t(v)}); };
    const std::vector<uint32_t> inputs = {
        scores,       boxes,        b_.constant<float>(OperandType::TENSOR_FLOAT32, {count, 4}, anchors),
        f(10.0f),     f(10.0f),     f(5.0f),
        f(5.0f),      flag(false),  b_.scalar(int32_t(maxDetections)),
        b_.scalar(1), b_.scalar(1), f(0.3f),
        f(0.6f),      flag(false)};
    std::vector<uint32_t> outputs = {b_.temp(OperandType::TENSOR_FLOAT32, {1, maxDetections}),
                                     b_.temp(OperandType::TENSOR_FLOAT32, {1, maxDetections, 4}),
                                     b_.temp(OperandType::TENSOR_INT32, {1, maxDetections}),
                                     b_.temp(OperandType::TENSOR_INT32, {1})};
    operation(hal::OperationType::DETECTION_POSTPROCESSING, inputs, outputs, name);
    return outputs;
}

BuiltinNetwork QuantNetBuilder::finish(const std::string& name, const std::vector<uint32_t>& outputs) {
    BuiltinNetwork net;
    framework::TestCase& tc = net.testCase;
    tc.name = name;
    tc.model = b_.build();
    tc.model.main.outputIndexes = outputs;
    for (uint32_t o : outputs) {
        hal::Operand& operand = tc.model.main.operands[o];
        operand.lifetime = hal::OperandLifeTime::SUBGRAPH_OUTPUT;
        tc.expectedOutputs.push_back(
            std::vector<uint8_t>(elements(operand.dimensions) * hal::elementSize(operand.type)));
        tc.expectedOutputDims.push_back(operand.dimensions);
        tc.outputIgnored.push_back(false);
    }
    tc.inputs = {std::vector<uint8_t>(elements(input_.dims))};
    for (auto& v : tc.inputs[0]) v = byte();
    net.operationNames = names_;
    return net;
}

BuiltinNetwork mobilenetV2(uint32_t inputSize, bool classifier) {
    QuantNetBuilder n({1, inputSize, inputSize, 3}, 0x6d6f6232);
    using namespace sim::workload;
    QuantTensor x = n.conv(n.input(), kMobilenetV2StemChannels, 3, 2, Activation::kRelu6, "stem/conv3x3");
    uint32_t block = 0;
    for (const MobilenetV2Stage& s : kMobilenetV2Stages) {
        for (uint32_t r = 0; r < s.repeats; ++r, ++block) {
            const std::string b = "block" + std::to_string(block) + "/";
            const uint32_t stride = r == 0 ? s.firstStride : 1;
            const QuantTensor skip = x;
            if (s.expansion != 1)
                x = n.conv(x, x.c() * s.expansion, 1, 1, Activation::kRelu6, b + "expand1x1");
            x = n.depthwise(x, 3, stride, Activation::kRelu6, b + "depthwise3x3");
            x = n.conv(x, s.outChannels, 1, 1, Activation::kNone, b + "project1x1");
            if (stride == 1 && skip.c() == s.outChannels) x = n.add(x, skip, b + "residual_add");
        }
    }
    x = n.conv(x, kMobilenetV2HeadChannels, 1, 1, Activation::kRelu6, "head/conv1x1_1280");
    if (classifier) {
        x = n.globalAveragePool(x, "head/avgpool");
        x = n.fullyConnected(x, 1000, 4.0f, "head/fc1000");
        x = n.softmax(x, "head/softmax");
    }
    return n.finish(classifier ? "mobilenet_v2" : "bench_mobilenet_v2_" + std::to_string(inputSize),
                    {x.operand});
}

namespace {

// SSD anchors (ycenter, xcenter, h, w) of one feature map: scale s, and aspect ratios 1, 2, 1/2
// (3 anchors) or also 3, 1/3 and a square of scale sqrt(s * next) (6 anchors).
void appendAnchors(std::vector<float>& anchors, uint32_t h, uint32_t w, uint32_t count, float s, float next) {
    const float ratios[] = {1.0f, 2.0f, 0.5f, 3.0f, 1.0f / 3.0f};
    for (uint32_t y = 0; y < h; ++y) {
        for (uint32_t x = 0; x < w; ++x) {
            for (uint32_t a = 0; a < count; ++a) {
                const float scale = a == 5 ? std::sqrt(s * next) : s;
                const float r = a == 5 ? 1.0f : std::sqrt(ratios[a]);
                anchors.insert(anchors.end(), {(static_cast<float>(y) + 0.5f) / static_cast<float>(h),
                                               (static_cast<float>(x) + 0.5f) / static_cast<float>(w),
                                               scale / r, scale * r});
            }
        }
    }
}

// SSD with a MobileNet-v1 backbone (Liu et al.; the TFLite detection model's shape): the
// backbone's 19x19x512 and 10x10x1024 maps (at 300) and four extra stride-2 maps, a 1x1 box and
// class head on each, CONCATENATION of the boxes and of the class logits, LOGISTIC, and
// DETECTION_POSTPROCESSING on the dequantized tensors.
BuiltinNetwork ssdMobilenetV1(uint32_t inputSize) {
    constexpr uint32_t kClasses = 91;  // 90 + background
    QuantNetBuilder n({1, inputSize, inputSize, 3}, 0x73736431);
    QuantTensor x = n.conv(n.input(), 32, 3, 2, Activation::kRelu6, "backbone/conv0");
    const uint32_t blocks[13][2] = {{64, 1},  {128, 2}, {128, 1}, {256, 2}, {256, 1},  {512, 2}, {512, 1},
                                    {512, 1}, {512, 1}, {512, 1}, {512, 1}, {1024, 2}, {1024, 1}};
    std::vector<QuantTensor> maps;
    for (uint32_t i = 0; i < 13; ++i) {
        const std::string b = "backbone/block" + std::to_string(i + 1) + "/";
        x = n.depthwise(x, 3, blocks[i][1], Activation::kRelu6, b + "depthwise3x3");
        x = n.conv(x, blocks[i][0], 1, 1, Activation::kRelu6, b + "pointwise1x1");
        if (i == 10 || i == 12) maps.push_back(x);
    }
    const uint32_t extras[4][2] = {{256, 512}, {128, 256}, {128, 256}, {64, 128}};
    for (uint32_t i = 0; i < 4; ++i) {
        const std::string e = "extra" + std::to_string(i + 1) + "/";
        x = n.conv(x, extras[i][0], 1, 1, Activation::kRelu6, e + "conv1x1");
        x = n.conv(x, extras[i][1], 3, 2, Activation::kRelu6, e + "conv3x3_s2");
        maps.push_back(x);
    }
    std::vector<QuantTensor> boxes, classes;
    std::vector<float> anchors;
    for (uint32_t i = 0; i < maps.size(); ++i) {
        const QuantTensor& m = maps[i];
        const uint32_t count = i == 0 ? 3 : 6, cells = m.h() * m.w() * count;
        const std::string h = "head" + std::to_string(i) + "/";
        const QuantTensor box = n.conv(m, count * 4, 1, 1, Activation::kNone, h + "box_conv1x1");
        boxes.push_back(n.reshape(box, {1, cells, 4}, h + "box_reshape"));
        const QuantTensor cls = n.conv(m, count * kClasses, 1, 1, Activation::kNone, h + "class_conv1x1");
        classes.push_back(n.reshape(cls, {1, cells, kClasses}, h + "class_reshape"));
        const float s = 0.2f + 0.15f * static_cast<float>(i);
        appendAnchors(anchors, m.h(), m.w(), count, s, s + 0.15f);
    }
    const QuantTensor allBoxes = n.concatenation(boxes, 1, "boxes/concat");
    const QuantTensor logits = n.concatenation(classes, 1, "classes/concat");
    const QuantTensor scores = n.logistic(logits, "classes/logistic");
    const uint32_t boxesF = n.dequantize(allBoxes, "postprocess/dequantize_boxes");
    const uint32_t scoresF = n.dequantize(scores, "postprocess/dequantize_scores");
    const auto detections = n.detectionPostprocess(scoresF, boxesF, anchors, 10, "postprocess/detection");
    return n.finish("ssd_mobilenet_v1", detections);
}

}  // namespace

std::vector<std::string> builtinNetworkNames() {
    return {"mobilenet_v2", "ssd_mobilenet_v1"};
}

Result<BuiltinNetwork> makeBuiltinNetwork(const std::string& name, uint32_t inputSize) {
    if (inputSize != 0 && (inputSize < 32 || inputSize > 512)) {
        return invalidArgument("--input-size " + std::to_string(inputSize) + " is outside 32..512");
    }
    if (name == "mobilenet_v2") return mobilenetV2(inputSize == 0 ? 224 : inputSize, true);
    if (name == "ssd_mobilenet_v1") return ssdMobilenetV1(inputSize == 0 ? 300 : inputSize);
    std::string known;
    for (const auto& n : builtinNetworkNames()) known += (known.empty() ? "" : ", ") + n;
    return invalidArgument("unknown builtin network '" + name + "' (known: " + known + ")");
}

}  // namespace npu::tools
