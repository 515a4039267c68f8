#include "quant.h"

#include <algorithm>
#include <cmath>

namespace npu::fw {

bool quantizeMultiplier(double real, QuantizedMultiplier* out) {
    if (!(real >= 0.0) || !std::isfinite(real)) return false;
    if (real == 0.0) {
        *out = {};
        return true;
    }
    // A zero multiplier for a real above zero: its shift would be below -31.
    const QuantizedMultiplier q = base::quantizeMultiplier(real);
    if (q.multiplier == 0 || q.shift > 30) return false;
    *out = q;
    return true;
}

bool activationRange8(int32_t fusedActivation, float scale, int32_t zeroPoint, bool signedOutput,
                      int32_t* min, int32_t* max) {
    const int32_t kQmin = signedOutput ? -128 : 0, kQmax = signedOutput ? 127 : 255;
    // Float division and round-half-away, as TFLite's `quantize` lambda does.
    auto quantize = [scale, zeroPoint](float f) {
        return base::quantizeToInt32Saturated(f, scale, zeroPoint);
    };
    auto clampToType = [kQmin, kQmax](int32_t v) { return v < kQmin ? kQmin : (v > kQmax ? kQmax : v); };
    auto atLeast = [](int32_t a, int32_t b) { return a > b ? a : b; };
    auto atMost = [](int32_t a, int32_t b) { return a < b ? a : b; };
    switch (fusedActivation) {
        case 0:
            *min = kQmin;
            *max = kQmax;
            break;
        case 1:
            *min = atLeast(kQmin, quantize(0.0f));
            *max = kQmax;
            break;
        case 2:
            *min = atLeast(kQmin, quantize(-1.0f));
            *max = atMost(kQmax, quantize(1.0f));
            break;
        case 3:
            *min = atLeast(kQmin, quantize(0.0f));
            *max = atMost(kQmax, quantize(6.0f));
            break;
        default:
            return false;
    }
    // A range outside the type (e.g. RELU with zero point 300) clamps everything; keep it sane.
    *min = clampToType(*min);
    *max = clampToType(*max);
    return *min <= *max;
}

namespace {

// reference/src/ops/activation.cpp `apply`, term for term.
float applyByteMap(ByteMap map, float x) {
    switch (map) {
        case ByteMap::kRelu:
            return std::max(x, 0.0f);
        case ByteMap::kRelu1:
            return std::clamp(x, -1.0f, 1.0f);
        case ByteMap::kRelu6:
            return std::clamp(x, 0.0f, 6.0f);
        case ByteMap::kLogistic:
            return 1.0f / (1.0f + std::exp(-x));
        case ByteMap::kTanh:
            return std::tanh(x);
        case ByteMap::kHardSwish:
            return x * std::clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f;
        case ByteMap::kCopy:
        case ByteMap::kRequant:
            return x;
    }
    return x;
}

}  // namespace

void byteMapTable(ByteMap map, const ByteQuant& in, const ByteQuant& out, uint8_t* table) {
    const int32_t lo = out.isSigned ? -128 : 0, hi = out.isSigned ? 127 : 255;
    for (uint32_t b = 0; b < 256; ++b) {
        const int32_t q =
            in.isSigned ? static_cast<int32_t>(static_cast<int8_t>(b)) : static_cast<int32_t>(b);
        const float x = in.scale * static_cast<float>(q - in.zeroPoint);
        const float v = std::round(applyByteMap(map, x) / out.scale) + static_cast<float>(out.zeroPoint);
        int32_t r = 0;
        if (!(v >= static_cast<float>(lo))) {
            r = lo;  // NaN saturates low, as in the reference
        } else if (v > static_cast<float>(hi)) {
            r = hi;
        } else {
            r = static_cast<int32_t>(v);
        }
        table[b] = static_cast<uint8_t>(r);
    }
}

bool softmaxParams(float beta, float inputScale, SoftmaxParams* out) {
    constexpr int kScaledDiffIntegerBits = 5;
    const double real = std::min(static_cast<double>(beta) * static_cast<double>(inputScale) *
                                     static_cast<double>(int64_t{1} << (31 - kScaledDiffIntegerBits)),
                                 static_cast<double>((int64_t{1} << 31) - 1));
    if (!(real > 1.0)) return false;
    const QuantizedMultiplier q = base::quantizeMultiplier(real);
    const int32_t exponent = q.shift;
    if (exponent > 31) return false;
    out->multiplier = q.multiplier;
    out->leftShift = exponent;
    const double radius = static_cast<double>((1 << kScaledDiffIntegerBits) - 1) *
                          static_cast<double>(int64_t{1} << (31 - kScaledDiffIntegerBits)) /
                          std::ldexp(1.0, exponent);
    out->diffMin = -static_cast<int32_t>(std::floor(radius));
    return true;
}

}  // namespace npu::fw
