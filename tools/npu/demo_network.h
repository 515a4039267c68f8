#pragma once
#include <cstdint>
#include <vector>

#include "npu/hal/types.h"

namespace npu::tools {

// The main job's network: a small quantized (TENSOR_QUANT8_ASYMM) CNN
//   input 1x8x8x3 -> CONV_2D 3x3x8 (same, RELU6) -> CONV_2D 3x3x16 stride 2 (valid... same, RELU)
//   -> FULLY_CONNECTED 256->10 -> ADD (constant per-class offset) -> output 1x10
// with deterministic pseudo-random weights, and a deterministic input image.
struct DemoNetwork {
    hal::Model model;
    std::vector<uint8_t> input;
    std::vector<uint32_t> outputDims;
};

DemoNetwork makeDemoNetwork();

}  // namespace npu::tools
