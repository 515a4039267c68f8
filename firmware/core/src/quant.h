#pragma once
// Quantization parameters as TFLite's reference kernels derive them (quantization_util.cc,
// kernel_util.cc), so that the NPU's integer results are bit-exact with the CPU reference.

#include <cstdint>

#include "npu/base/fixed_point.h"

namespace npu::fw {

using base::QuantizedMultiplier;  // Q31 multiplier, shift (positive = left)

// base::quantizeMultiplier (TFLite's QuantizeMultiplier), limited to what the vector unit runs:
// false for a real that is negative, not finite, or whose shift falls outside [-31, 30]; a zero
// multiplier is {0, 0} as in TFLite.
bool quantizeMultiplier(double real, QuantizedMultiplier* out);

// TFLite CalculateActivationRangeQuantized for an 8-bit output: uint8 [0, 255] or, when
// `signedOutput`, int8 [-128, 127]. fusedActivation: 0 NONE, 1 RELU, 2 RELU1, 3 RELU6. False for
// other values.
bool activationRange8(int32_t fusedActivation, float scale, int32_t zeroPoint, bool signedOutput,
                      int32_t* min, int32_t* max);

// Element-wise 8-bit functions the vector unit runs as a 256-entry table (VEC_OP LUT).
enum class ByteMap : uint32_t { kCopy = 0, kRequant, kRelu, kRelu1, kRelu6, kLogistic, kTanh, kHardSwish };

struct ByteQuant {
    float scale = 0.0f;
    int32_t zeroPoint = 0;
    bool isSigned = false;  // int8 (TENSOR_QUANT8_ASYMM_SIGNED), else uint8
};

// table[b] = the output byte the CPU reference computes for input byte b: it dequantizes in
// float (scale * (q - zeroPoint)), applies the function in float, and requantizes with
// round-half-away and saturation (reference/src/operation_context.cpp loadReal / storeReal,
// quant_utils.h quantizeValue). The same float operations in the same order give the same bits,
// so the table is bit-exact with the reference by construction (given the same libm for
// LOGISTIC's expf and TANH's tanhf: docs/firmware.md).
void byteMapTable(ByteMap map, const ByteQuant& in, const ByteQuant& out, uint8_t* table);

// SOFTMAX's integer parameters as TFLite derives them (PreprocessSoftmaxScaling,
// CalculateInputRadius with 5 integer bits for the scaled difference): the multiplier and left
// shift of beta * inputScale * 2^26 (QuantizeMultiplierGreaterThanOne) and the smallest
// difference to the row maximum that still counts (-radius). False when that real is not above 1
// (TFLite refuses it) or needs a left shift above 31 (beta * inputScale >= 32).
struct SoftmaxParams {
    int32_t multiplier = 0, leftShift = 0, diffMin = 0;
};
bool softmaxParams(float beta, float inputScale, SoftmaxParams* out);

}  // namespace npu::fw
