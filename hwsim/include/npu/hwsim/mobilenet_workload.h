#pragma once
// The simulator benchmark's workload (`npu bench sim`, docs/simulator.md): MobileNet-v2's
// convolution layers (stem, 1x1 expand / project, 3x3 depthwise, final 1x1) in int8, chained
// through device memory, as a real command stream for the Device: DMA tiles into the
// scratchpad, CONV / DWCONV / GEMM tiles, REQUANT, DMA back, with dependency tokens so loads,
// compute and stores overlap (double-buffered scratchpad tiles).
//
// Quantization: every activation has scale 1/16 and zero point kActivationZeroPoint; weights are
// symmetric int8 (zero point 0, as XNNPACK's qs8 operators require), biases int32. A layer's
// requantization scale is chosen so its outputs keep a useful spread; it is given to the device
// as TFLite's fixed-point multiplier and shift.

#include <cstdint>
#include <vector>

#include "npu/hwsim/config.h"

namespace npu::sim {

class Device;

namespace workload {

enum class LayerKind { kConv, kDepthwise, kPointwise };

inline constexpr int32_t kActivationZeroPoint = 3;
inline constexpr float kActivationScale = 1.0f / 16;

struct Layer {
    LayerKind kind = LayerKind::kPointwise;
    uint32_t inH = 0, inW = 0, inC = 0, outC = 0, kernel = 1, stride = 1, pad = 0;
    uint32_t outH = 0, outW = 0;
    float weightScale = 0;   // requantization scale = this (activation scales cancel)
    int32_t multiplier = 0;  // TFLite QuantizeMultiplier of weightScale
    int32_t shift = 0;
    // Device-memory byte offsets.
    uint64_t weights = 0;  // conv/pointwise: [kh][kw][inC][outC]; depthwise: [kh][kw][C]
    uint64_t bias = 0;     // int32 little endian per output channel
    uint64_t input = 0;    // NHWC int8
    uint64_t output = 0;   // NHWC int8
    uint64_t macs() const;
    uint64_t outputBytes() const { return uint64_t{outH} * outW * outC; }
    uint64_t inputBytes() const { return uint64_t{inH} * inW * inC; }
    uint64_t weightBytes() const;
};

// MobileNet-v2's inverted-residual stages (Sandler et al., table 2), after the 3x3 stem to 32
// channels and before the 1x1 convolution to 1280: the one table of the simulator's workload and
// of the npu tool's built-in network (tools/npu/builtin_networks.cpp).
struct MobilenetV2Stage {
    uint32_t expansion, outChannels, repeats, firstStride;
};
inline constexpr MobilenetV2Stage kMobilenetV2Stages[7] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2},
                                                           {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2},
                                                           {6, 320, 1, 1}};
inline constexpr uint32_t kMobilenetV2StemChannels = 32;
inline constexpr uint32_t kMobilenetV2HeadChannels = 1280;

// MobileNet-v2 (width 1.0) convolution layers for an inputSize x inputSize x 3 image: 224 is the
// benchmark (about 300 M MACs), 32 a reduced size for tests.
std::vector<Layer> mobilenetV2Layers(uint32_t inputSize);

struct Workload {
    std::vector<Layer> layers;
    uint64_t commandOffset = 0;  // the command queue in device memory
    uint32_t commandCount = 0;
    uint64_t bytesUsed = 0;  // device memory the workload occupies from offset 0
    uint64_t totalMacs = 0;
};

// Lays out the layers in `dram` (random weights, biases and input image from `seed`; the
// activation of layer i is the input of layer i + 1) and writes the command stream. Fails when
// `dram` is too small or the config's scratchpad (< 1 MiB) / accumulator (< 256 KiB) cannot hold
// the tiles this stream uses.
Result<Workload> buildWorkload(std::vector<Layer> layers, const HwConfig& hw, uint32_t seed,
                               std::vector<uint8_t>& dram);

struct RunResult {
    uint64_t cycles = 0;
    uint64_t macs = 0;  // the PMU's MAC counter
    uint64_t commands = 0;
};

// Programs the queue registers and rings the doorbell; fails with the device's ERROR_CODE and
// ERROR_OFFSET if the NPU faults.
Result<RunResult> runOnDevice(Device& device, const Workload& w);

// The layer computed on the host the way reference/ does (TFLite's integer kernels): int32
// accumulation, bias, MultiplyByQuantizedMultiplier, zero point, clamp. Reads layer.input and
// writes the layer's output into `out` (outputBytes()).
void referenceLayer(const Layer& layer, const uint8_t* dram, int8_t* out);

}  // namespace workload
}  // namespace npu::sim
