#include "quant.h"

#include <cmath>

namespace npu::fw {

bool quantizeMultiplier(double real, QuantizedMultiplier* out) {
    if (!(real >= 0.0) || !std::isfinite(real)) return false;
    if (real == 0.0) {
        *out = {};
        return true;
    }
    int exponent = 0;
    const double q = std::frexp(real, &exponent);
    int64_t fixed = static_cast<int64_t>(std::round(q * static_cast<double>(int64_t{1} << 31)));
    if (fixed == (int64_t{1} << 31)) {
        fixed /= 2;
        ++exponent;
    }
    if (fixed > INT32_MAX || exponent < -31 || exponent > 30) return false;
    out->multiplier = static_cast<int32_t>(fixed);
    out->shift = exponent;
    return true;
}

bool activationRange8(int32_t fusedActivation, float scale, int32_t zeroPoint, bool signedOutput, int32_t* min,
                      int32_t* max) {
    const int32_t kQmin = signedOutput ? -128 : 0, kQmax = signedOutput ? 127 : 255;
    // Float division and round-half-away, as TFLite's `quantize` lambda does.
    auto quantize = [scale, zeroPoint](float f) {
        return zeroPoint + static_cast<int32_t>(std::round(f / scale));
    };
    auto clampToType = [kQmin, kQmax](int32_t v) { return v < kQmin ? kQmin : (v > kQmax ? kQmax : v); };
    auto atLeast = [](int32_t a, int32_t b) { return a > b ? a : b; };
    auto atMost = [](int32_t a, int32_t b) { return a < b ? a : b; };
    switch (fusedActivation) {
        case 0: *min = kQmin; *max = kQmax; break;
        case 1: *min = atLeast(kQmin, quantize(0.0f)); *max = kQmax; break;
        case 2: *min = atLeast(kQmin, quantize(-1.0f)); *max = atMost(kQmax, quantize(1.0f)); break;
        case 3: *min = atLeast(kQmin, quantize(0.0f)); *max = atMost(kQmax, quantize(6.0f)); break;
        default: return false;
    }
    // A range outside the type (e.g. RELU with zero point 300) clamps everything; keep it sane.
    *min = clampToType(*min);
    *max = clampToType(*max);
    return *min <= *max;
}

}  // namespace npu::fw
