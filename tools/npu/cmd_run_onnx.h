#pragma once
// npu run MODEL.onnx: an ONNX model through the whole stack (import, partitioning with CPU
// fallback, the NPU over its transport), with the outputs (top-k for classifiers), simulated
// device time, host time and the per-layer table of `npu run --builtin` (docs/onnx.md).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cmd_model.h"
#include "device_factory.h"

namespace npu::tools {

struct OnnxRunOptions {
    std::vector<std::string> inputs;       // .npy / .pb / .raw (float32 little-endian) / .png, in input order
    std::vector<std::string> inputShapes;  // NAME=1x3x48x192
    bool explain = false;                  // where each operation ran and why
    std::string dotFile;                   // the graph, operations coloured by device
    ProfileFiles files;                    // --csv, --trace
    size_t topK = 5;
    // PNG inputs (framework/image.h): resized to the input's H x W, (pixel / 255 - mean) / std.
    std::string resize = "bilinear";
    std::vector<float> mean, std;  // 1 value (every channel) or one per channel
    bool bgr = false;
};

// The PNG preprocessing options of `npu run` (--resize, --mean, --std, --bgr).
void addImageOptions(CLI::App& run, OnnxRunOptions& options);

// Exit 0 ok (and bit-exact with the reference on the NPU), 1 failure or mismatch, 2 bad input,
// 3 the model is not supported.
int cmdRunOnnx(const DeviceChoice& choice, const std::string& model, const OnnxRunOptions& options,
               bool json);

}  // namespace npu::tools
