#include <algorithm>
#include <vector>

#include "hwsim/isa/fixed_point.h"
#include "int8_kernels.h"
#include "units.h"

namespace npu::sim {

using isa::ErrorCode;

namespace {

bool shiftOk(int32_t s) {
    return s >= isa::vec::kMinShift && s <= isa::vec::kMaxShift;
}
bool offsetOk(int32_t o) {
    return o >= -kMaxOffsetMagnitude && o <= kMaxOffsetMagnitude;
}

}  // namespace

uint64_t VectorUnit::cost(uint64_t elements) const {
    const uint64_t lanes = s_.config.vectorLanes;
    return s_.config.vectorLatencyCycles + (elements + lanes - 1) / lanes;
}

bool VectorUnit::clampFits(bool signedOut) const {
    const int32_t lo = signedOut ? -128 : 0, hi = signedOut ? 127 : 255;
    return params_.clampMin >= lo && params_.clampMax <= hi && params_.clampMin <= params_.clampMax;
}

UnitResult VectorUnit::setParams(const isa::Command& c) {
    namespace v = isa::vec;
    if (isa::flagsOf(c) != 0) return fault(ErrorCode::kBadParameter);
    isa::VecParams p;
    p.in1Mult = static_cast<int32_t>(c.w[v::kIn1Mult]);
    p.in1Shift = static_cast<int32_t>(c.w[v::kIn1Shift]);
    p.in2Mult = static_cast<int32_t>(c.w[v::kIn2Mult]);
    p.in2Shift = static_cast<int32_t>(c.w[v::kIn2Shift]);
    p.outMult = static_cast<int32_t>(c.w[v::kOutMult]);
    p.outShift = static_cast<int32_t>(c.w[v::kOutShift]);
    p.in1Offset = static_cast<int32_t>(c.w[v::kIn1Offset]);
    p.in2Offset = static_cast<int32_t>(c.w[v::kIn2Offset]);
    p.outOffset = static_cast<int32_t>(c.w[v::kOutOffset]);
    p.leftShift = static_cast<int32_t>(c.w[v::kLeftShift]);
    p.clampMin = static_cast<int32_t>(c.w[v::kClampMin]);
    p.clampMax = static_cast<int32_t>(c.w[v::kClampMax]);
    if (!shiftOk(p.in1Shift) || !shiftOk(p.in2Shift) || !shiftOk(p.outShift) || p.leftShift < 0 ||
        p.leftShift > v::kMaxLeftShift || !offsetOk(p.in1Offset) || !offsetOk(p.in2Offset) ||
        !offsetOk(p.outOffset) || p.clampMin > p.clampMax) {
        return fault(ErrorCode::kBadParameter);
    }
    params_ = p;
    UnitResult r;
    r.cycles = 1;
    return r;
}

UnitResult VectorUnit::requant(const isa::Command& c) {
    namespace q = isa::requant;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~(isa::vec::kFlagHasBias | isa::vec::kFlagSignedOut)) != 0) {
        return fault(ErrorCode::kBadParameter);
    }
    const bool hasBias = (flags & isa::vec::kFlagHasBias) != 0;
    const bool signedOut = (flags & isa::vec::kFlagSignedOut) != 0;
    const uint32_t rows = c.w[q::kRows], cols = c.w[q::kCols];
    const uint32_t accStride = c.w[q::kAccRowStride], outStride = c.w[q::kOutRowStride];
    if (rows == 0 || cols == 0 || uint64_t{rows} * cols > s_.accumulator.size()) {
        return fault(ErrorCode::kBadSize);
    }
    if ((rows > 1 && (accStride < cols || outStride < cols)) || !clampFits(signedOut)) {
        return fault(ErrorCode::kBadParameter);
    }
    uint64_t accSpan = 0, outSpan = 0;
    if (!boxSpan(cols, rows, 1, accStride, 0, &accSpan) ||
        !inRange(c.w[q::kAccAddr], accSpan, s_.accumulator.size())) {
        return fault(ErrorCode::kAccumulatorOutOfRange);
    }
    if (!boxSpan(cols, rows, 1, outStride, 0, &outSpan) ||
        !inRange(c.w[q::kOutAddr], outSpan, s_.scratchpad.size()) ||
        (hasBias && !inRange(c.w[q::kBiasAddr], uint64_t{cols} * 4, s_.scratchpad.size()))) {
        return fault(ErrorCode::kSramOutOfRange);
    }
    const int32_t* acc = s_.accumulator.data() + c.w[q::kAccAddr];
    const uint8_t* bias = s_.scratchpad.data() + c.w[q::kBiasAddr];
    uint8_t* out = s_.scratchpad.data() + c.w[q::kOutAddr];
    const kernels::RequantParams rp{params_.outMult, params_.outShift, params_.outOffset, params_.clampMin,
                                    params_.clampMax};
    for (uint32_t r = 0; r < rows; ++r) {
        kernels::requantRow(acc + uint64_t{r} * accStride, hasBias ? bias : nullptr, cols, rp,
                            out + uint64_t{r} * outStride);
    }
    UnitResult res;
    res.cycles = cost(uint64_t{rows} * cols);
    return res;
}

UnitResult VectorUnit::add(const isa::Command& c) {
    namespace a = isa::add;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~(isa::vec::kFlagSignedIn | isa::vec::kFlagSignedOut)) != 0) {
        return fault(ErrorCode::kBadParameter);
    }
    const bool signedIn = (flags & isa::vec::kFlagSignedIn) != 0;
    const bool signedOut = (flags & isa::vec::kFlagSignedOut) != 0;
    const uint32_t rows = c.w[a::kRows], cols = c.w[a::kCols];
    if (rows == 0 || cols == 0 || uint64_t{rows} * cols > s_.scratchpad.size()) {
        return fault(ErrorCode::kBadSize);
    }
    const uint32_t outStride = c.w[a::kOutRowStride];
    if ((rows > 1 && outStride < cols) || !clampFits(signedOut)) {
        return fault(ErrorCode::kBadParameter);
    }
    // Input boxes: a stride of 0 broadcasts, so the span is computed per dimension.
    auto span = [](uint32_t rows, uint32_t cols, uint32_t rs, uint32_t cs) {
        return uint64_t{rows - 1} * rs + uint64_t{cols - 1} * cs + 1;
    };
    const uint64_t size = s_.scratchpad.size();
    uint64_t outSpan = 0;
    if (!inRange(c.w[a::kAAddr], span(rows, cols, c.w[a::kARowStride], c.w[a::kAColStride]), size) ||
        !inRange(c.w[a::kBAddr], span(rows, cols, c.w[a::kBRowStride], c.w[a::kBColStride]), size) ||
        !boxSpan(cols, rows, 1, outStride, 0, &outSpan) || !inRange(c.w[a::kOutAddr], outSpan, size)) {
        return fault(ErrorCode::kSramOutOfRange);
    }
    const uint8_t* sram = s_.scratchpad.data();
    uint8_t* out = s_.scratchpad.data() + c.w[a::kOutAddr];
    const isa::VecParams& p = params_;
    auto load = [&](uint64_t addr) {
        return signedIn ? static_cast<int32_t>(static_cast<int8_t>(sram[addr]))
                        : static_cast<int32_t>(sram[addr]);
    };
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t col = 0; col < cols; ++col) {
            const int32_t x1 = load(c.w[a::kAAddr] + uint64_t{r} * c.w[a::kARowStride] +
                                    uint64_t{col} * c.w[a::kAColStride]) +
                               p.in1Offset;
            const int32_t x2 = load(c.w[a::kBAddr] + uint64_t{r} * c.w[a::kBRowStride] +
                                    uint64_t{col} * c.w[a::kBColStride]) +
                               p.in2Offset;
            const int32_t s1 = isa::wrapToInt32(int64_t{x1} * (int64_t{1} << p.leftShift));
            const int32_t s2 = isa::wrapToInt32(int64_t{x2} * (int64_t{1} << p.leftShift));
            const int32_t scaled1 = isa::multiplyByQuantizedMultiplier(s1, p.in1Mult, p.in1Shift);
            const int32_t scaled2 = isa::multiplyByQuantizedMultiplier(s2, p.in2Mult, p.in2Shift);
            const int32_t sum = isa::wrapToInt32(int64_t{scaled1} + scaled2);
            int64_t o = int64_t{isa::multiplyByQuantizedMultiplier(sum, p.outMult, p.outShift)} + p.outOffset;
            if (o < p.clampMin) o = p.clampMin;
            if (o > p.clampMax) o = p.clampMax;
            out[uint64_t{r} * outStride + col] = static_cast<uint8_t>(o);
        }
    }
    UnitResult res;
    res.cycles = cost(uint64_t{rows} * cols);
    return res;
}

UnitResult VectorUnit::vecOp(const isa::Command& c) {
    namespace o = isa::vecop;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~(isa::vec::kFlagSignedIn | isa::vec::kFlagSignedOut)) != 0) {
        return fault(ErrorCode::kBadParameter);
    }
    const uint32_t fn = c.w[o::kFunction];
    if (fn > static_cast<uint32_t>(isa::VecFunction::kPrelu)) return fault(ErrorCode::kBadParameter);
    const auto f = static_cast<isa::VecFunction>(fn);
    const bool signedIn = (flags & isa::vec::kFlagSignedIn) != 0;
    const bool signedOut = (flags & isa::vec::kFlagSignedOut) != 0;
    const uint32_t rows = c.w[o::kRows], cols = c.w[o::kCols];
    if (rows == 0 || cols == 0 || uint64_t{rows} * cols > s_.scratchpad.size()) {
        return fault(ErrorCode::kBadSize);
    }
    const uint32_t outStride = c.w[o::kOutRowStride];
    if ((rows > 1 && outStride < cols) || !clampFits(signedOut)) return fault(ErrorCode::kBadParameter);
    const bool binary = f == isa::VecFunction::kMul || f == isa::VecFunction::kMax ||
                        f == isa::VecFunction::kMin || f == isa::VecFunction::kPrelu;
    auto span = [](uint32_t rows, uint32_t cols, uint32_t rs, uint32_t cs) {
        return uint64_t{rows - 1} * rs + uint64_t{cols - 1} * cs + 1;
    };
    const uint64_t size = s_.scratchpad.size();
    uint64_t outSpan = 0;
    if (!inRange(c.w[o::kAAddr], span(rows, cols, c.w[o::kARowStride], c.w[o::kAColStride]), size) ||
        (binary &&
         !inRange(c.w[o::kBAddr], span(rows, cols, c.w[o::kBRowStride], c.w[o::kBColStride]), size)) ||
        (f == isa::VecFunction::kLut && !inRange(c.w[o::kLutAddr], 256, size)) ||
        !boxSpan(cols, rows, 1, outStride, 0, &outSpan) || !inRange(c.w[o::kOutAddr], outSpan, size)) {
        return fault(ErrorCode::kSramOutOfRange);
    }
    const uint8_t* sram = s_.scratchpad.data();
    const isa::VecParams& p = params_;
    // Inputs are read before any output is written, so an in-place op sees the old values.
    std::vector<uint8_t> result(uint64_t{rows} * cols);
    auto load = [&](uint64_t addr) {
        return signedIn ? static_cast<int32_t>(static_cast<int8_t>(sram[addr]))
                        : static_cast<int32_t>(sram[addr]);
    };
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t col = 0; col < cols; ++col) {
            const uint64_t aAt =
                c.w[o::kAAddr] + uint64_t{r} * c.w[o::kARowStride] + uint64_t{col} * c.w[o::kAColStride];
            const int32_t a = load(aAt);
            const int32_t b = binary ? load(c.w[o::kBAddr] + uint64_t{r} * c.w[o::kBRowStride] +
                                            uint64_t{col} * c.w[o::kBColStride])
                                     : 0;
            int64_t v = 0;
            switch (f) {
                case isa::VecFunction::kMul:
                    v = int64_t{isa::multiplyByQuantizedMultiplier(
                            isa::wrapToInt32(int64_t{a + p.in1Offset} * (b + p.in2Offset)), p.outMult,
                            p.outShift)} +
                        p.outOffset;
                    break;
                case isa::VecFunction::kMax:
                    v = a > b ? a : b;
                    break;
                case isa::VecFunction::kMin:
                    v = a < b ? a : b;
                    break;
                case isa::VecFunction::kShift: {
                    const int32_t x =
                        isa::wrapToInt32(int64_t{a + p.in1Offset} * (int64_t{1} << p.leftShift));
                    v = int64_t{isa::multiplyByQuantizedMultiplier(x, p.outMult, p.outShift)} + p.outOffset;
                    break;
                }
                case isa::VecFunction::kClamp:
                    v = a;
                    break;
                case isa::VecFunction::kLut:
                    v = load(c.w[o::kLutAddr] + (sram[aAt]));
                    break;
                case isa::VecFunction::kPrelu: {
                    const int32_t x = a + p.in1Offset;
                    v = int64_t{x >= 0 ? isa::multiplyByQuantizedMultiplier(x, p.in1Mult, p.in1Shift)
                                       : isa::multiplyByQuantizedMultiplier(
                                             isa::wrapToInt32(int64_t{x} * (b + p.in2Offset)), p.outMult,
                                             p.outShift)} +
                        p.outOffset;
                    break;
                }
            }
            if (f != isa::VecFunction::kLut) {
                if (v < p.clampMin) v = p.clampMin;
                if (v > p.clampMax) v = p.clampMax;
            }
            result[uint64_t{r} * cols + col] = static_cast<uint8_t>(v);
        }
    }
    uint8_t* out = s_.scratchpad.data() + c.w[o::kOutAddr];
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t col = 0; col < cols; ++col)
            out[uint64_t{r} * outStride + col] = result[uint64_t{r} * cols + col];
    }
    UnitResult res;
    res.cycles = cost(uint64_t{rows} * cols);
    return res;
}

UnitResult VectorUnit::pool(const isa::Command& c) {
    namespace q = isa::pool;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~q::kFlagSigned) != 0) return fault(ErrorCode::kBadParameter);
    const bool isSigned = (flags & q::kFlagSigned) != 0;
    const uint32_t mode = c.w[q::kMode];
    const uint32_t ih = isa::lo16(c.w[q::kIfmHW]), iw = isa::hi16(c.w[q::kIfmHW]), ch = c.w[q::kIfmC];
    const uint32_t rowStride = c.w[q::kIfmRowStride];
    const uint32_t kh = isa::lo16(c.w[q::kKernelHW]), kw = isa::hi16(c.w[q::kKernelHW]);
    const uint32_t sy = isa::lo16(c.w[q::kStride]), sx = isa::hi16(c.w[q::kStride]);
    const int64_t padTop = isa::lo16(c.w[q::kPad]), padLeft = isa::hi16(c.w[q::kPad]);
    const uint32_t oh = isa::lo16(c.w[q::kOfmHW]), ow = isa::hi16(c.w[q::kOfmHW]);
    if (ih == 0 || iw == 0 || ch == 0 || kh == 0 || kw == 0 || oh == 0 || ow == 0)
        return fault(ErrorCode::kBadSize);
    const uint64_t outputs = uint64_t{oh} * ow * ch;
    if (outputs * kh * kw > kMaxMacsPerCommand) return fault(ErrorCode::kBadSize);
    if (mode > q::kModeAverage || sy == 0 || sx == 0 || (ih > 1 && rowStride < uint64_t{iw} * ch) ||
        !clampFits(isSigned)) {
        return fault(ErrorCode::kBadParameter);
    }
    uint64_t spanIfm = 0;
    if (uint64_t{iw} * ch > UINT32_MAX ||
        !boxSpan(static_cast<uint32_t>(uint64_t{iw} * ch), ih, 1, rowStride, 0, &spanIfm) ||
        !inRange(c.w[q::kIfmAddr], spanIfm, s_.scratchpad.size()) ||
        !inRange(c.w[q::kOutAddr], outputs, s_.scratchpad.size())) {
        return fault(ErrorCode::kSramOutOfRange);
    }
    const uint8_t* ifm = s_.scratchpad.data() + c.w[q::kIfmAddr];
    std::vector<uint8_t> result(outputs);
    for (uint32_t oy = 0; oy < oh; ++oy) {
        for (uint32_t ox = 0; ox < ow; ++ox) {
            for (uint32_t ci = 0; ci < ch; ++ci) {
                int32_t best = INT32_MIN, sum = 0, count = 0;
                for (uint32_t ky = 0; ky < kh; ++ky) {
                    const int64_t y = int64_t{oy} * sy + ky - padTop;
                    if (y < 0 || y >= ih) continue;
                    for (uint32_t kx = 0; kx < kw; ++kx) {
                        const int64_t x = int64_t{ox} * sx + kx - padLeft;
                        if (x < 0 || x >= iw) continue;
                        const uint8_t raw =
                            ifm[static_cast<uint64_t>(y) * rowStride + static_cast<uint64_t>(x) * ch + ci];
                        const int32_t v = isSigned ? static_cast<int8_t>(raw) : raw;
                        best = v > best ? v : best;
                        sum += v;
                        ++count;
                    }
                }
                int32_t v = 0;  // a window with no valid tap yields 0 (TFLite never builds one)
                if (count > 0) {
                    v = mode == q::kModeMax
                            ? best
                            : (sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count);
                }
                v = v < params_.clampMin ? params_.clampMin : v;
                v = v > params_.clampMax ? params_.clampMax : v;
                result[(uint64_t{oy} * ow + ox) * ch + ci] = static_cast<uint8_t>(v);
            }
        }
    }
    std::copy(result.begin(), result.end(), s_.scratchpad.data() + c.w[q::kOutAddr]);
    UnitResult res;
    res.cycles = cost(outputs * kh * kw);
    return res;
}

namespace {

// One SOFTMAX row (ISA 1.2, commands.h): `load` reads element c as a signed value.
template <typename Load>
void softmaxRow(Load load, uint32_t cols, int32_t multiplier, int32_t leftShift, int32_t diffMin,
                bool isSigned, uint8_t* out, uint64_t outColStride) {
    int32_t maxValue = isSigned ? -128 : 0;
    for (uint32_t c = 0; c < cols; ++c) maxValue = std::max(maxValue, load(c));
    int32_t sum = 0;  // Q12.19; the firmware keeps rows short enough not to overflow it
    for (uint32_t c = 0; c < cols; ++c) {
        const int32_t diff = load(c) - maxValue;
        if (diff < diffMin) continue;
        const int32_t e = isa::expOnNegativeValuesQ5(isa::softmaxScaledDiff(diff, multiplier, leftShift));
        sum = isa::wrappingAdd(sum, isa::roundingDivideByPot(e, isa::softmax::kAccumulationIntegerBits));
    }
    int32_t bitsOverUnit = 0;
    const int32_t scale = isa::softmaxReciprocal(sum, &bitsOverUnit);
    const int32_t lo = isSigned ? -128 : 0, hi = isSigned ? 127 : 255;
    for (uint32_t c = 0; c < cols; ++c) {
        const int32_t diff = load(c) - maxValue;
        int32_t v = lo;
        if (diff >= diffMin) {
            const int32_t e = isa::expOnNegativeValuesQ5(isa::softmaxScaledDiff(diff, multiplier, leftShift));
            v = isa::roundingDivideByPot(isa::saturatingRoundingDoublingHighMul(scale, e),
                                         bitsOverUnit + 31 - 8) +
                lo;
            v = std::min(std::max(v, lo), hi);
        }
        out[c * outColStride] = static_cast<uint8_t>(v);
    }
}

}  // namespace

UnitResult VectorUnit::softmax(const isa::Command& c) {
    namespace q = isa::softmax;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~q::kFlagSigned) != 0) return fault(ErrorCode::kBadParameter);
    const bool isSigned = (flags & q::kFlagSigned) != 0;
    const uint32_t rows = c.w[q::kRows], cols = c.w[q::kCols];
    if (rows == 0 || cols == 0 || cols > q::kMaxRowLength || uint64_t{rows} * cols > s_.scratchpad.size())
        return fault(ErrorCode::kBadSize);
    const int32_t multiplier = static_cast<int32_t>(c.w[q::kMultiplier]);
    const int32_t leftShift = static_cast<int32_t>(c.w[q::kLeftShift]);
    const int32_t diffMin = static_cast<int32_t>(c.w[q::kDiffMin]);
    if (multiplier <= 0 || leftShift < 0 || leftShift > q::kMaxLeftShift || diffMin > 0)
        return fault(ErrorCode::kBadParameter);
    auto span = [](uint32_t rows, uint32_t cols, uint32_t rs, uint32_t cs) {
        return uint64_t{rows - 1} * rs + uint64_t{cols - 1} * cs + 1;
    };
    const uint64_t size = s_.scratchpad.size();
    if (!inRange(c.w[q::kInAddr], span(rows, cols, c.w[q::kInRowStride], c.w[q::kInColStride]), size) ||
        !inRange(c.w[q::kOutAddr], span(rows, cols, c.w[q::kOutRowStride], c.w[q::kOutColStride]), size)) {
        return fault(ErrorCode::kSramOutOfRange);
    }
    // Rows are read before any output is written, so the output may overlap the input.
    std::vector<uint8_t> result(uint64_t{rows} * cols);
    const uint8_t* in = s_.scratchpad.data() + c.w[q::kInAddr];
    for (uint32_t r = 0; r < rows; ++r) {
        const uint8_t* row = in + uint64_t{r} * c.w[q::kInRowStride];
        const uint64_t colStride = c.w[q::kInColStride];
        auto load = [&](uint32_t col) {
            const uint8_t b = row[col * colStride];
            return isSigned ? static_cast<int32_t>(static_cast<int8_t>(b)) : static_cast<int32_t>(b);
        };
        softmaxRow(load, cols, multiplier, leftShift, diffMin, isSigned, result.data() + uint64_t{r} * cols,
                   1);
    }
    uint8_t* out = s_.scratchpad.data() + c.w[q::kOutAddr];
    for (uint32_t r = 0; r < rows; ++r) {
        for (uint32_t col = 0; col < cols; ++col)
            out[uint64_t{r} * c.w[q::kOutRowStride] + uint64_t{col} * c.w[q::kOutColStride]] =
                result[uint64_t{r} * cols + col];
    }
    // Three passes over each row (maximum, sum of exponentials, outputs) and one reciprocal
    // (three Newton-Raphson steps) per row.
    UnitResult res;
    res.cycles = cost(3 * uint64_t{rows} * cols) + uint64_t{rows} * kSoftmaxReciprocalCycles;
    return res;
}

}  // namespace npu::sim
