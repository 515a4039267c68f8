// The vector unit's ISA 1.2 commands that read a window of a tile rather than one element:
// RESIZE (nearest / bilinear resampling) and MEAN (a float-path reduction). Both check the
// whole command before touching the scratchpad, as every unit does. CONVERT (ISA 1.3), the
// float32 <-> 8-bit conversion, shares MEAN's float rounding.
#include <cmath>
#include <cstring>
#include <vector>

#include "hwsim/isa/resample.h"
#include "units.h"

namespace npu::sim {

using isa::ErrorCode;

namespace {

int32_t loadValue(const uint8_t* p, bool isSigned) {
    return isSigned ? static_cast<int32_t>(static_cast<int8_t>(*p)) : static_cast<int32_t>(*p);
}

struct ResizeFields {
    uint32_t mode, ifmAddr, ifmH, c, rowStride, inH, inW, ofmFirst, ifmFirst, ofmH, outH, outW, outAddr;
    bool isSigned, align, half;
};

ResizeFields resizeFields(const isa::Command& c) {
    namespace r = isa::resize;
    const uint32_t flags = isa::flagsOf(c);
    return {c.w[r::kMode],
            c.w[r::kIfmAddr],
            c.w[r::kIfmRows],
            c.w[r::kIfmC],
            c.w[r::kIfmRowStride],
            isa::lo16(c.w[r::kFullIn]),
            isa::hi16(c.w[r::kFullIn]),
            isa::lo16(c.w[r::kFirstRows]),
            isa::hi16(c.w[r::kFirstRows]),
            c.w[r::kOfmRows],
            isa::lo16(c.w[r::kFullOut]),
            isa::hi16(c.w[r::kFullOut]),
            c.w[r::kOutAddr],
            (flags & r::kFlagSigned) != 0,
            (flags & r::kFlagAlignCorners) != 0,
            (flags & r::kFlagHalfPixel) != 0};
}

}  // namespace

UnitResult VectorUnit::resize(const isa::Command& c) {
    namespace r = isa::resize;
    if ((isa::flagsOf(c) & ~(r::kFlagSigned | r::kFlagAlignCorners | r::kFlagHalfPixel)) != 0)
        return fault(ErrorCode::kBadParameter);
    const ResizeFields f = resizeFields(c);
    if (f.ifmH == 0 || f.c == 0 || f.inH == 0 || f.inW == 0 || f.ofmH == 0 || f.outH == 0 || f.outW == 0)
        return fault(ErrorCode::kBadSize);
    const uint64_t outputs = uint64_t{f.ofmH} * f.outW * f.c;
    const uint64_t rowBytes = uint64_t{f.inW} * f.c;
    if (outputs * 4 > kMaxMacsPerCommand || rowBytes > UINT32_MAX) return fault(ErrorCode::kBadSize);
    if (f.mode > r::kModeBilinear || (f.align && f.half) || uint64_t{f.ofmFirst} + f.ofmH > f.outH ||
        uint64_t{f.ifmFirst} + f.ifmH > f.inH || (f.ifmH > 1 && f.rowStride < rowBytes))
        return fault(ErrorCode::kBadParameter);
    uint64_t ifmSpan = 0;
    if (!boxSpan(static_cast<uint32_t>(rowBytes), f.ifmH, 1, f.rowStride, 0, &ifmSpan) ||
        !inRange(f.ifmAddr, ifmSpan, s_.scratchpad.size()) ||
        !inRange(f.outAddr, outputs, s_.scratchpad.size()))
        return fault(ErrorCode::kSramOutOfRange);
    const bool bilinear = f.mode == r::kModeBilinear;
    const float scaleH = isa::resizeScale(f.inH, f.outH, f.align),
                scaleW = isa::resizeScale(f.inW, f.outW, f.align);
    auto tap = [&](uint32_t v, uint32_t size, float scale) {
        if (bilinear) return isa::bilinearSource(v, size, scale, f.half);
        const uint32_t n = isa::nearestSource(v, size, scale, f.align, f.half);
        return isa::BilinearTap{n, n, 0.0f};
    };
    std::vector<isa::BilinearTap> rows(f.ofmH), cols(f.outW);
    for (uint32_t y = 0; y < f.ofmH; ++y) {
        rows[y] = tap(f.ofmFirst + y, f.inH, scaleH);
        if (rows[y].lo < f.ifmFirst || rows[y].hi >= f.ifmFirst + f.ifmH)
            return fault(ErrorCode::kBadParameter);
    }
    for (uint32_t x = 0; x < f.outW; ++x) cols[x] = tap(x, f.inW, scaleW);
    const uint8_t* ifm = s_.scratchpad.data() + f.ifmAddr;
    const int32_t lo = f.isSigned ? -128 : 0, hi = f.isSigned ? 127 : 255;
    std::vector<uint8_t> result(outputs);
    for (uint32_t y = 0; y < f.ofmH; ++y) {
        const uint8_t* top = ifm + uint64_t{rows[y].lo - f.ifmFirst} * f.rowStride;
        const uint8_t* bottom = ifm + uint64_t{rows[y].hi - f.ifmFirst} * f.rowStride;
        const float fy = rows[y].frac;
        for (uint32_t x = 0; x < f.outW; ++x) {
            uint8_t* out = result.data() + (uint64_t{y} * f.outW + x) * f.c;
            const uint64_t left = uint64_t{cols[x].lo} * f.c, right = uint64_t{cols[x].hi} * f.c;
            if (!bilinear) {
                std::memcpy(out, top + left, f.c);
                continue;
            }
            const float fx = cols[x].frac;
            for (uint32_t ch = 0; ch < f.c; ++ch) {
                auto at = [&](const uint8_t* row, uint64_t px) {
                    return static_cast<float>(loadValue(row + px + ch, f.isSigned));
                };
                // The reference's expression, term by term in its order (float32).
                const float v = at(top, left) * (1 - fy) * (1 - fx) + at(bottom, left) * fy * (1 - fx) +
                                at(top, right) * (1 - fy) * fx + at(bottom, right) * fy * fx;
                int32_t q = static_cast<int32_t>(std::round(v));
                q = q < lo ? lo : (q > hi ? hi : q);
                out[ch] = static_cast<uint8_t>(q);
            }
        }
    }
    std::memcpy(s_.scratchpad.data() + f.outAddr, result.data(), result.size());
    UnitResult res;
    res.cycles = cost(outputs * (bilinear ? 4 : 1));
    return res;
}

UnitResult VectorUnit::mean(const isa::Command& c) {
    namespace m = isa::mean;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~m::kFlagSigned) != 0) return fault(ErrorCode::kBadParameter);
    const bool isSigned = (flags & m::kFlagSigned) != 0;
    const uint32_t outer = c.w[m::kOuter], inner = c.w[m::kInner], count1 = c.w[m::kCount1],
                   count2 = c.w[m::kCount2];
    if (outer == 0 || inner == 0 || count1 == 0 || count2 == 0) return fault(ErrorCode::kBadSize);
    const uint64_t outputs = uint64_t{outer} * inner, terms = uint64_t{count1} * count2;
    if (terms > m::kMaxTerms || outputs * terms > kMaxMacsPerCommand) return fault(ErrorCode::kBadSize);
    float scaleIn = 0, scaleOut = 0;
    std::memcpy(&scaleIn, &c.w[m::kScaleIn], 4);
    std::memcpy(&scaleOut, &c.w[m::kScaleOut], 4);
    const int32_t zpIn = static_cast<int32_t>(c.w[m::kZpIn]), zpOut = static_cast<int32_t>(c.w[m::kZpOut]);
    const int32_t lo = isSigned ? -128 : 0, hi = lo + 255;
    if (!(scaleIn > 0) || !std::isfinite(scaleIn) || !(scaleOut > 0) || !std::isfinite(scaleOut) ||
        zpIn < lo || zpIn > hi || zpOut < lo || zpOut > hi)
        return fault(ErrorCode::kBadParameter);
    const uint64_t span =
        uint64_t{outer - 1} * c.w[m::kOuterStride] + uint64_t{inner - 1} * c.w[m::kInnerStride] +
        uint64_t{count1 - 1} * c.w[m::kStride1] + uint64_t{count2 - 1} * c.w[m::kStride2] + 1;
    if (!inRange(c.w[m::kIfmAddr], span, s_.scratchpad.size()) ||
        !inRange(c.w[m::kOutAddr], outputs, s_.scratchpad.size()))
        return fault(ErrorCode::kSramOutOfRange);
    const uint8_t* ifm = s_.scratchpad.data() + c.w[m::kIfmAddr];
    std::vector<uint8_t> result(outputs);
    for (uint32_t o1 = 0; o1 < outer; ++o1) {
        for (uint32_t o2 = 0; o2 < inner; ++o2) {
            const uint8_t* base =
                ifm + uint64_t{o1} * c.w[m::kOuterStride] + uint64_t{o2} * c.w[m::kInnerStride];
            // Each dequantized term is a multiple of 2^(exponent(scaleIn) - 23) below 2^32 of it,
            // so with at most 2^21 terms every partial sum is exact in a double (in any order).
            double sum = 0;
            for (uint32_t r1 = 0; r1 < count1; ++r1) {
                for (uint32_t r2 = 0; r2 < count2; ++r2) {
                    const int32_t q = loadValue(
                        base + uint64_t{r1} * c.w[m::kStride1] + uint64_t{r2} * c.w[m::kStride2], isSigned);
                    sum += static_cast<double>(scaleIn * static_cast<float>(q - zpIn));
                }
            }
            const float meanValue = static_cast<float>(sum / static_cast<double>(terms));
            const float v = std::round(meanValue / scaleOut) + static_cast<float>(zpOut);
            int32_t q = hi;
            if (!(v >= static_cast<float>(lo))) {
                q = lo;  // NaN saturates low, as the reference's quantization does
            } else if (!(v > static_cast<float>(hi))) {
                q = static_cast<int32_t>(v);
            }
            result[uint64_t{o1} * inner + o2] = static_cast<uint8_t>(q);
        }
    }
    std::memcpy(s_.scratchpad.data() + c.w[m::kOutAddr], result.data(), result.size());
    UnitResult res;
    res.cycles = cost(outputs * terms);
    return res;
}

namespace {

// The reference's quantizeValue: round(x / scale) + zp in float32, half away from zero,
// saturated, NaN low.
uint8_t quantizeFloat(float x, float scale, int32_t zp, int32_t lo, int32_t hi) {
    const float v = std::round(x / scale) + static_cast<float>(zp);
    int32_t q = hi;
    if (!(v >= static_cast<float>(lo))) {
        q = lo;
    } else if (!(v > static_cast<float>(hi))) {
        q = static_cast<int32_t>(v);
    }
    return static_cast<uint8_t>(q);
}

}  // namespace

UnitResult VectorUnit::convert(const isa::Command& c) {
    namespace k = isa::convert;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~(k::kFlagSigned | k::kFlagToFloat)) != 0) return fault(ErrorCode::kBadParameter);
    const bool isSigned = (flags & k::kFlagSigned) != 0, toFloat = (flags & k::kFlagToFloat) != 0;
    const uint32_t count = c.w[k::kCount];
    if (count == 0 || count > kMaxMacsPerCommand) return fault(ErrorCode::kBadSize);
    float scale = 0;
    std::memcpy(&scale, &c.w[k::kScale], 4);
    const int32_t zp = static_cast<int32_t>(c.w[k::kZp]);
    const int32_t lo = isSigned ? -128 : 0, hi = lo + 255;
    if (!(scale > 0) || !std::isfinite(scale) || zp < lo || zp > hi) return fault(ErrorCode::kBadParameter);
    const uint64_t inBytes = uint64_t{count} * (toFloat ? 1 : 4),
                   outBytes = uint64_t{count} * (toFloat ? 4 : 1);
    const uint64_t in = c.w[k::kInAddr], out = c.w[k::kOutAddr];
    if (!inRange(c.w[k::kInAddr], inBytes, s_.scratchpad.size()) ||
        !inRange(c.w[k::kOutAddr], outBytes, s_.scratchpad.size()))
        return fault(ErrorCode::kSramOutOfRange);
    if (in < out + outBytes && out < in + inBytes) return fault(ErrorCode::kBadParameter);  // overlap
    const uint8_t* src = s_.scratchpad.data() + in;
    uint8_t* dst = s_.scratchpad.data() + out;
    for (uint32_t i = 0; i < count; ++i) {
        if (toFloat) {
            const float v = scale * static_cast<float>(loadValue(src + i, isSigned) - zp);
            std::memcpy(dst + uint64_t{i} * 4, &v, 4);
        } else {
            float x = 0;
            std::memcpy(&x, src + uint64_t{i} * 4, 4);
            dst[i] = quantizeFloat(x, scale, zp, lo, hi);
        }
    }
    UnitResult res;
    res.cycles = cost(count);
    return res;
}

}  // namespace npu::sim
