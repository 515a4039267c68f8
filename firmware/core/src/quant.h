#pragma once
// Quantization parameters as TFLite's reference kernels derive them (quantization_util.cc,
// kernel_util.cc), so that the NPU's integer results are bit-exact with the CPU reference.

#include <cstdint>

namespace npu::fw {

struct QuantizedMultiplier {
    int32_t multiplier = 0;  // Q31
    int32_t shift = 0;       // positive = left
};

// TFLite QuantizeMultiplier: frexp, round(q * 2^31), renormalise 2^31. Returns false for values
// the vector unit cannot represent (negative, not finite, or a shift outside [-31, 30]); a zero
// multiplier is {0, 0} as in TFLite.
bool quantizeMultiplier(double real, QuantizedMultiplier* out);

// TFLite CalculateActivationRangeQuantized for an 8-bit output: uint8 [0, 255] or, when
// `signedOutput`, int8 [-128, 127]. fusedActivation: 0 NONE, 1 RELU, 2 RELU1, 3 RELU6. False for
// other values.
bool activationRange8(int32_t fusedActivation, float scale, int32_t zeroPoint, bool signedOutput, int32_t* min,
                      int32_t* max);

}  // namespace npu::fw
