#pragma once
// Built-in quantized networks (`npu run --builtin`, `npu bench model`, `npu bench cache`): whole
// models built in code with deterministic pseudo-random weights. Quantization parameters are
// chosen layer by layer from the expected spread of the layer's input (the way a calibrated
// converter would), so activations keep a useful range instead of saturating to constants.

#include <string>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/hal/model_builder.h"

namespace npu::tools {

// A network's model and input, and a name for every operation (the profile's labels).
struct BuiltinNetwork {
    framework::TestCase testCase;             // inputs filled; expected outputs sized, all zero
    std::vector<std::string> operationNames;  // one per operation of testCase.model
};

// One quantized activation tensor of a network being built.
struct QuantTensor {
    uint32_t operand = 0;
    std::vector<uint32_t> dims;  // NHWC for images
    float scale = 0.0f;
    int32_t zeroPoint = 0;
    float rms = 0.0f;  // expected root mean square of the real values (drives the next layer's scales)
    uint32_t h() const { return dims.size() == 4 ? dims[1] : 1; }
    uint32_t w() const { return dims.size() == 4 ? dims[2] : 1; }
    uint32_t c() const { return dims.back(); }
};

enum class Activation : int32_t { kNone = 0, kRelu6 = 3 };

// Builds uint8 (TENSOR_QUANT8_ASYMM) networks operation by operation. Weights are uniform
// random bytes (zero point 128) whose scale gives each pre-activation a spread of about 2
// (RELU6 layers, output scale 6/255) or 1 (linear layers, output range +-4 sigma); biases are
// small random values. SAME padding throughout.
class QuantNetBuilder {
public:
    QuantNetBuilder(std::vector<uint32_t> inputDims, uint32_t seed);

    const QuantTensor& input() const { return input_; }
    QuantTensor conv(const QuantTensor& in, uint32_t out, uint32_t kernel, uint32_t stride, Activation act,
                     const std::string& name);
    QuantTensor depthwise(const QuantTensor& in, uint32_t kernel, uint32_t stride, Activation act,
                          const std::string& name);
    QuantTensor add(const QuantTensor& a, const QuantTensor& b, const std::string& name);
    QuantTensor globalAveragePool(const QuantTensor& in, const std::string& name);
    QuantTensor fullyConnected(const QuantTensor& in, uint32_t units, float logitSpread,
                               const std::string& name);
    QuantTensor softmax(const QuantTensor& in, const std::string& name);
    QuantTensor logistic(const QuantTensor& in, const std::string& name);
    QuantTensor reshape(const QuantTensor& in, std::vector<uint32_t> dims, const std::string& name);
    QuantTensor concatenation(const std::vector<QuantTensor>& parts, uint32_t axis, const std::string& name);
    // TENSOR_FLOAT32 operand of the same shape.
    uint32_t dequantize(const QuantTensor& in, const std::string& name);
    // SSD's DETECTION_POSTPROCESSING (fast NMS, one class per detection): float scores
    // [1, anchors, classes], box deltas [1, anchors, 4] and anchors [anchors, 4] in; returns the
    // four outputs (scores, boxes, classes, detection count).
    std::vector<uint32_t> detectionPostprocess(uint32_t scores, uint32_t boxes,
                                               const std::vector<float>& anchors, uint32_t maxDetections,
                                               const std::string& name);

    // The model with `outputs` as its outputs, the input filled with random bytes.
    BuiltinNetwork finish(const std::string& name, const std::vector<uint32_t>& outputs);

private:
    static constexpr hal::OperandType kQ8 = hal::OperandType::TENSOR_QUANT8_ASYMM;
    uint8_t byte();
    QuantTensor temporary(std::vector<uint32_t> dims, float scale, int32_t zeroPoint, float rms);
    QuantTensor activated(std::vector<uint32_t> dims, Activation act, float spread);
    uint32_t weights(std::vector<uint32_t> dims, float scale);
    uint32_t biases(uint32_t n, float scale, float spread);
    void operation(hal::OperationType type, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                   const std::string& name);

    hal::ModelBuilder b_;
    QuantTensor input_;
    std::vector<std::string> names_;
    uint32_t state_;
};

// The names `npu run --builtin` takes.
std::vector<std::string> builtinNetworkNames();

// inputSize 0: the network's own (mobilenet_v2 224, ssd_mobilenet_v1 300). INVALID_ARGUMENT for
// an unknown name (listing the known ones) or an input size below 32 or above 512.
Result<BuiltinNetwork> makeBuiltinNetwork(const std::string& name, uint32_t inputSize = 0);

// MobileNet-v2 (Sandler et al., table 2) at inputSize x inputSize x 3: the stem, the 17
// inverted-residual blocks and the final 1x1 convolution to 1280 channels; with `classifier`,
// also the average pool, FULLY_CONNECTED 1000 and SOFTMAX.
BuiltinNetwork mobilenetV2(uint32_t inputSize, bool classifier);

}  // namespace npu::tools
