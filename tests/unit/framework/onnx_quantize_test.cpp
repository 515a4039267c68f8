// Post-training quantization (framework/onnx_quantize.h) and QDQ fusion on a small
// MobileNetV3-style classifier built here: Conv + Relu, depthwise Conv, hard-swish written as
// x * Clip(x + 3, 0, 6) / 6, a squeeze-excite branch (GlobalAveragePool, Conv, HardSigmoid, Mul),
// then Flatten, MatMul, Add and Softmax. Checks the written model's form, its accuracy against
// the float model, that the importer fuses it into quant8 operations only (but the input's
// QUANTIZE and the output's DEQUANTIZE), and that the NPU runs those bit-exactly with the
// reference.
#include "npu/framework/onnx_quantize.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "npu/framework/onnx_run.h"
#include "npu/framework/partition.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/ref/reference_device.h"
#include "npu/shim/npu_device.h"
#include "onnx_test_graph.h"
#include "onnx_test_npu.h"

using namespace npu;
using namespace onnx_test;

namespace {

std::vector<float> wave(size_t n, float scale, int period) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(float(i % size_t(period)) * 0.7f + 0.3f);
    return v;
}

void scalar(GraphBuilder& g, const std::string& name, float v) {
    g.initializer(name, {}, {v});
}

// 1x3x8x8 -> 4 classes (opset 13).
std::string writeClassifier() {
    GraphBuilder g(13);
    g.input("x", {1, 3, 8, 8});
    g.initializer("w1", {8, 3, 3, 3}, wave(8 * 27, 0.4f, 23));
    g.initializer("b1", {8}, wave(8, 0.1f, 5));
    GraphBuilder::attr(g.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
    g.node("Relu", {"c1"}, {"r1"}, "relu1");
    g.initializer("w2", {8, 1, 3, 3}, wave(72, 0.5f, 13));
    auto* dw = g.node("Conv", {"r1", "w2"}, {"c2"}, "dw");
    GraphBuilder::attr(dw, "group", 8);
    GraphBuilder::attr(dw, "pads", {1, 1, 1, 1});
    // hard-swish: c2 * Clip(c2 + 3, 0, 6) / 6
    scalar(g, "three", 3), scalar(g, "zero", 0), scalar(g, "six", 6);
    g.node("Add", {"c2", "three"}, {"a3"}, "add3");
    g.node("Clip", {"a3", "zero", "six"}, {"cl"}, "clip");
    g.node("Mul", {"c2", "cl"}, {"m"}, "mul");
    g.node("Div", {"m", "six"}, {"hs"}, "div6");
    // squeeze-excite
    g.node("GlobalAveragePool", {"hs"}, {"gap"}, "gap");
    g.initializer("w3", {8, 8, 1, 1}, wave(64, 0.6f, 17));
    g.node("Conv", {"gap", "w3"}, {"c3"}, "se_conv");
    g.node("HardSigmoid", {"c3"}, {"hsig"}, "hsig");
    g.node("Mul", {"hs", "hsig"}, {"se"}, "se_mul");
    g.node("MaxPool", {"se"}, {"p"}, "pool");
    GraphBuilder::attr(g.model.mutable_graph()->mutable_node(g.model.graph().node_size() - 1), "kernel_shape",
                       {2, 2});
    GraphBuilder::attr(g.model.mutable_graph()->mutable_node(g.model.graph().node_size() - 1), "strides",
                       {2, 2});
    g.node("Flatten", {"p"}, {"f"}, "flatten");
    g.initializer("w4", {128, 4}, wave(512, 0.3f, 29));
    g.initializer("b4", {4}, {0.05f, -0.05f, 0.1f, 0.0f});
    g.node("MatMul", {"f", "w4"}, {"mm"}, "fc");
    g.node("Add", {"mm", "b4"}, {"logits"}, "fc_bias");
    g.node("Softmax", {"logits"}, {"y"}, "softmax");
    g.output("y", {1, 4});
    const auto path = std::filesystem::temp_directory_path() / "npu_quantize_test_classifier.onnx";
    std::ofstream(path, std::ios::binary) << g.model.SerializeAsString();
    return path.string();
}

std::vector<std::vector<OnnxTensor>> samples(const std::string& path, size_t n) {
    auto m = framework::importOnnxModel(path);
    REQUIRE(m.has_value());
    auto s = framework::randomCalibration(*m, n, 7);
    REQUIRE(s.has_value());
    return *s;
}

Result<framework::OnnxImportedModel> importBytes(const std::string& bytes, bool keepNchw = false) {
    framework::OnnxImportOptions options;
    options.keepNchw = keepNchw;
    return framework::importOnnxModelBytes(bytes, options, "quantized");
}

}  // namespace

TEST_CASE("npu quantize: a QDQ model with QLinearConv per-channel weights, close to the float model") {
    const auto path = writeClassifier();
    const auto calibration = samples(path, 16);
    ref::ReferenceDevice reference;
    framework::OnnxQuantizeReport report;
    auto bytes = framework::quantizeOnnxModel(path, calibration, reference, {}, &report);
    INFO((bytes ? std::string() : bytes.error().message));
    REQUIRE(bytes.has_value());
    CHECK(report.samples == 16);
    CHECK(report.quantizedConvs == 3);  // conv1, the depthwise conv, the squeeze-excite conv
    CHECK(report.rewrittenNodes == 2);  // Div by 6, HardSigmoid
    CHECK(report.floatNodes == 0);
    CHECK(report.classifier);
    CHECK(report.comparedOutput == "y");
    // The documented tolerance of a quantized classifier on its calibration set (docs/onnx.md).
    CHECK(report.top1Agreement >= 0.9);
    CHECK(report.maxAbsError < 0.05);

    onnx::ModelProto q;
    REQUIRE(q.ParseFromString(*bytes));
    size_t qlinear = 0;
    for (const auto& n : q.graph().node()) {
        if (n.op_type() != "QLinearConv") continue;
        ++qlinear;
        for (const auto& init : q.graph().initializer()) {
            if (init.name() == n.input(3)) CHECK(init.data_type() == onnx::TensorProto::INT8);
            if (init.name() == n.input(4)) CHECK(init.dims(0) == 8);  // a scale per output channel
        }
    }
    CHECK(qlinear == 3);

    // The importer fuses every QDQ pair: quant8 operations only, but at the model's edges (NCHW
    // kept here: the NHWC rewrite has its own test).
    auto m = importBytes(*bytes, true);
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m.has_value());
    const auto& ops = m->model.main.operations;
    REQUIRE(ops.size() >= 3);
    CHECK(ops.front().type == OperationType::QUANTIZE);
    CHECK(ops.back().type == OperationType::DEQUANTIZE);
    bool perChannel = false;
    for (size_t k = 1; k + 1 < ops.size(); ++k) {
        INFO("operation " << k << " " << hal::toString(ops[k].type));
        CHECK(hal::isQuantizedType(m->model.main.operands[ops[k].outputs[0]].type));
        CHECK(ops[k].type != OperationType::QUANTIZE);
        CHECK(ops[k].type != OperationType::DEQUANTIZE);
        if (ops[k].type == OperationType::CONV_2D)
            perChannel = perChannel || m->model.main.operands[ops[k].inputs[1]].type ==
                                           hal::OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL;
    }
    CHECK(perChannel);
    CHECK(m->fusedQdqOperations > 0);
    std::filesystem::remove(path);
}

TEST_CASE("npu quantize: percentile ranges, int8 activations, calibration files") {
    const auto path = writeClassifier();
    const auto calibration = samples(path, 8);
    ref::ReferenceDevice reference;
    framework::OnnxQuantizeOptions options;
    auto minmax = framework::quantizeOnnxModel(path, calibration, reference, options, nullptr);
    REQUIRE(minmax.has_value());
    options.method = framework::OnnxQuantizeOptions::Method::Percentile;
    options.percentile = 100.0;  // the extreme values themselves: min/max
    auto p100 = framework::quantizeOnnxModel(path, calibration, reference, options, nullptr);
    REQUIRE(p100.has_value());
    CHECK(*p100 == *minmax);
    options.percentile = 90.0;
    auto p90 = framework::quantizeOnnxModel(path, calibration, reference, options, nullptr);
    REQUIRE(p90.has_value());
    CHECK(*p90 != *minmax);

    framework::OnnxQuantizeOptions signedOptions;
    signedOptions.signedActivations = true;
    framework::OnnxQuantizeReport report;
    auto s = framework::quantizeOnnxModel(path, calibration, reference, signedOptions, &report);
    REQUIRE(s.has_value());
    CHECK(report.top1Agreement >= 0.9);
    auto m = importBytes(*s);
    REQUIRE(m.has_value());
    CHECK(m->model.main.operands[m->model.main.operations[1].outputs[0]].type ==
          hal::OperandType::TENSOR_QUANT8_ASYMM_SIGNED);

    // A directory of .npy files: one sample each; a bad directory names itself.
    const auto dir = std::filesystem::temp_directory_path() / "npu_quantize_test_calibration";
    std::filesystem::create_directories(dir);
    auto loaded = framework::loadCalibrationDir(dir.string(), 1);
    REQUIRE_FALSE(loaded.has_value());
    CHECK(loaded.error().message.find(dir.string()) != std::string::npos);
    std::filesystem::remove_all(dir);
    std::filesystem::remove(path);
    CHECK_FALSE(framework::quantizeOnnxModel(path, {}, reference, {}, nullptr).has_value());
}

TEST_CASE("a quantized model runs on the NPU but its edges, bit-exactly with the reference") {
    const auto path = writeClassifier();
    const auto calibration = samples(path, 8);
    ref::ReferenceDevice reference;
    auto bytes = framework::quantizeOnnxModel(path, calibration, reference, {}, nullptr);
    REQUIRE(bytes.has_value());
    auto m = importBytes(*bytes);
    REQUIRE(m.has_value());
    const auto r = runOnLoopbackNpu(*m, reference, calibration);
    // All but the input's QUANTIZE and the output's DEQUANTIZE (the NPU's coverage may grow).
    CHECK(m->layoutTransposes == 2);
    CHECK(r.onNpu + 2 >= m->model.main.operations.size());
    CHECK(r.firstOutputs == r.referenceOutputs);
    std::filesystem::remove(path);
}

TEST_CASE("a quantized model becomes NHWC with transposes only at its NCHW edges, same outputs") {
    const auto path = writeClassifier();
    const auto calibration = samples(path, 8);
    ref::ReferenceDevice reference;
    auto bytes = framework::quantizeOnnxModel(path, calibration, reference, {}, nullptr);
    REQUIRE(bytes.has_value());
    auto nhwc = importBytes(*bytes);
    framework::OnnxImportOptions keep;
    keep.keepNchw = true;
    auto nchw = framework::importOnnxModelBytes(*bytes, keep, "quantized NCHW");
    REQUIRE(nhwc.has_value());
    REQUIRE(nchw.has_value());
    CHECK(nchw->layoutTransposes == 0);
    // One into NHWC after the input's QUANTIZE, one back to NCHW before Flatten's RESHAPE.
    CHECK(nhwc->layoutTransposes == 2);
    const auto& ops = nhwc->model.main.operations;
    size_t transposes = 0;
    for (size_t k = 0; k < ops.size(); ++k) {
        if (ops[k].type == OperationType::TRANSPOSE) {
            ++transposes;
            INFO("operation " << k);
            // After the input's QUANTIZE, before the first convolution (quant8, on the NPU), and
            // before Flatten's RESHAPE.
            CHECK((
                (k == 1 && ops[0].type == OperationType::QUANTIZE && ops[2].type == OperationType::CONV_2D) ||
                ops[k + 1].type == OperationType::RESHAPE));
        }
        if (ops[k].type == OperationType::CONV_2D || ops[k].type == OperationType::DEPTHWISE_CONV_2D) {
            const auto& in = nhwc->model.main.operands[ops[k].inputs[0]];
            CHECK(in.dimensions[3] == (k < 4 ? 3u : 8u));  // channels last
        }
    }
    CHECK(transposes == 2);
    for (const auto& sample : calibration) {
        auto a = framework::runOnnxModel(reference, *nhwc, sample);
        auto b = framework::runOnnxModel(reference, *nchw, sample);
        REQUIRE(a.has_value());
        REQUIRE(b.has_value());
        CHECK(a->outputs[0].data == b->outputs[0].data);
    }
    std::filesystem::remove(path);
}
