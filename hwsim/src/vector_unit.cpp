#include <algorithm>
#include <cstring>
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

bool overlaps(uint64_t a, uint64_t aBytes, uint64_t b, uint64_t bBytes) {
    return a < b + bBytes && b < a + aBytes;
}

// REQUANT boxes narrower than this are gathered into contiguous runs of at most kGatherElements.
constexpr uint32_t kGatherColumnsBelow = 16;
constexpr uint32_t kGatherElements = 4096;

// Where ADD and VEC_OP keep a two-input command's fields (hwsim/isa/commands.h).
struct BinaryWords {
    uint32_t rows, cols, aAddr, aRowStride, aColStride, bAddr, bRowStride, bColStride, outAddr, outRowStride;
};
constexpr BinaryWords kAddWords{isa::add::kRows,        isa::add::kCols,       isa::add::kAAddr,
                                isa::add::kARowStride,  isa::add::kAColStride, isa::add::kBAddr,
                                isa::add::kBRowStride,  isa::add::kBColStride, isa::add::kOutAddr,
                                isa::add::kOutRowStride};
constexpr BinaryWords kVecOpWords{isa::vecop::kRows,        isa::vecop::kCols,       isa::vecop::kAAddr,
                                  isa::vecop::kARowStride,  isa::vecop::kAColStride, isa::vecop::kBAddr,
                                  isa::vecop::kBRowStride,  isa::vecop::kBColStride, isa::vecop::kOutAddr,
                                  isa::vecop::kOutRowStride};

BinaryCommand decodeBinary(const isa::Command& c, const BinaryWords& w) {
    BinaryCommand cmd;
    cmd.rows = c.w[w.rows];
    cmd.cols = c.w[w.cols];
    cmd.a = {c.w[w.aAddr], c.w[w.aRowStride], c.w[w.aColStride]};
    cmd.b = {c.w[w.bAddr], c.w[w.bRowStride], c.w[w.bColStride]};
    cmd.outAddr = c.w[w.outAddr];
    cmd.outRowStride = c.w[w.outRowStride];
    cmd.signedIn = (isa::flagsOf(c) & isa::vec::kFlagSignedIn) != 0;
    return cmd;
}

bool isBinary(isa::VecFunction f) {
    return f == isa::VecFunction::kMul || f == isa::VecFunction::kMax || f == isa::VecFunction::kMin ||
           f == isa::VecFunction::kPrelu;
}

uint64_t inputSpan(const BinaryCommand& cmd, const ElementBox& in) {
    return elementSpan(cmd.rows, cmd.cols, in.rowStride, in.colStride);
}

// The row kernels take contiguous (column stride 1) or broadcast (0) inputs.
bool rowKernelsFit(const BinaryCommand& cmd) {
    return cmd.a.colStride <= 1 && cmd.b.colStride <= 1;
}

// Whether no output element of an in-order ADD is an input of another element: the input is
// disjoint from the output box, or is the output box itself, element for element.
bool elementwiseAlias(const BinaryCommand& cmd, const ElementBox& in) {
    const uint64_t outSpan = elementSpan(cmd.rows, cmd.cols, cmd.outRowStride, 1);
    if (!overlaps(in.addr, inputSpan(cmd, in), cmd.outAddr, outSpan)) return true;
    return in.addr == cmd.outAddr && in.colStride == 1 && (cmd.rows == 1 || in.rowStride == cmd.outRowStride);
}

kernels::BinaryRow binaryRow(const uint8_t* sram, const BinaryCommand& cmd, uint32_t r) {
    kernels::BinaryRow row;
    row.a = sram + cmd.a.addr + uint64_t{r} * cmd.a.rowStride;
    row.b = sram + cmd.b.addr + uint64_t{r} * cmd.b.rowStride;
    row.aBroadcast = cmd.a.colStride == 0;
    row.bBroadcast = cmd.b.colStride == 0;
    row.n = cmd.cols;
    row.signedIn = cmd.signedIn;
    return row;
}

// dst[r * dstStride + col] = element(a, b) over the box, in order, at any strides; b is read only
// for a two-input function.
template <typename Element>
void stridedRows(const uint8_t* sram, const BinaryCommand& cmd, bool hasB, Element element, uint8_t* dst,
                 uint64_t dstStride) {
    auto value = [&cmd](uint8_t raw) {
        return cmd.signedIn ? static_cast<int32_t>(static_cast<int8_t>(raw)) : static_cast<int32_t>(raw);
    };
    for (uint32_t r = 0; r < cmd.rows; ++r) {
        const uint8_t* a = sram + cmd.a.addr + uint64_t{r} * cmd.a.rowStride;
        const uint8_t* b = hasB ? sram + cmd.b.addr + uint64_t{r} * cmd.b.rowStride : nullptr;
        uint8_t* out = dst + uint64_t{r} * dstStride;
        for (uint32_t col = 0; col < cmd.cols; ++col) {
            const int32_t x = value(a[uint64_t{col} * cmd.a.colStride]);
            const int32_t y = hasB ? value(b[uint64_t{col} * cmd.b.colStride]) : 0;
            out[col] = static_cast<uint8_t>(element(x, y));
        }
    }
}

// VEC_OP LUT: the input byte indexes a 256-entry table of output bytes (no clamp).
void lutRows(const uint8_t* sram, const BinaryCommand& cmd, const uint8_t* lut, uint8_t* dst) {
    const uint32_t cols = cmd.cols;
    const uint64_t colStride = cmd.a.colStride;
    for (uint32_t r = 0; r < cmd.rows; ++r) {
        const uint8_t* a = sram + cmd.a.addr + uint64_t{r} * cmd.a.rowStride;
        uint8_t* out = dst + uint64_t{r} * cols;
        if (colStride == 1) {
            for (uint32_t col = 0; col < cols; ++col) out[col] = lut[a[col]];
        } else {
            for (uint32_t col = 0; col < cols; ++col) out[col] = lut[a[col * colStride]];
        }
    }
}

int32_t shiftElement(int32_t a, const isa::VecParams& p) {
    const int32_t x = isa::wrapToInt32(int64_t{a + p.in1Offset} * (int64_t{1} << p.leftShift));
    return kernels::clampOutput(
        int64_t{isa::multiplyByQuantizedMultiplier(x, p.outMult, p.outShift)} + p.outOffset, p);
}

int32_t preluElement(int32_t a, int32_t b, const isa::VecParams& p) {
    const int32_t x = a + p.in1Offset;
    const int32_t scaled = x >= 0
                               ? isa::multiplyByQuantizedMultiplier(x, p.in1Mult, p.in1Shift)
                               : isa::multiplyByQuantizedMultiplier(
                                     isa::wrapToInt32(int64_t{x} * (b + p.in2Offset)), p.outMult, p.outShift);
    return kernels::clampOutput(int64_t{scaled} + p.outOffset, p);
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
    RequantBox box;
    box.rows = c.w[q::kRows];
    box.cols = c.w[q::kCols];
    box.accStride = c.w[q::kAccRowStride];
    box.outStride = c.w[q::kOutRowStride];
    if (box.rows == 0 || box.cols == 0 || uint64_t{box.rows} * box.cols > s_.accumulator.size()) {
        return fault(ErrorCode::kBadSize);
    }
    if ((box.rows > 1 && (box.accStride < box.cols || box.outStride < box.cols)) || !clampFits(signedOut)) {
        return fault(ErrorCode::kBadParameter);
    }
    uint64_t accSpan = 0, outSpan = 0;
    if (!boxSpan(box.cols, box.rows, 1, box.accStride, 0, &accSpan) ||
        !inRange(c.w[q::kAccAddr], accSpan, s_.accumulator.size())) {
        return fault(ErrorCode::kAccumulatorOutOfRange);
    }
    const uint64_t biasBytes = uint64_t{box.cols} * 4;
    if (!boxSpan(box.cols, box.rows, 1, box.outStride, 0, &outSpan) ||
        !inRange(c.w[q::kOutAddr], outSpan, s_.scratchpad.size()) ||
        (hasBias && !inRange(c.w[q::kBiasAddr], biasBytes, s_.scratchpad.size()))) {
        return fault(ErrorCode::kSramOutOfRange);
    }
    box.acc = s_.accumulator.data() + c.w[q::kAccAddr];
    box.bias = hasBias ? s_.scratchpad.data() + c.w[q::kBiasAddr] : nullptr;
    box.out = s_.scratchpad.data() + c.w[q::kOutAddr];
    // Gathering reads every bias before the first output is written: only where none is an output.
    if (box.cols < kGatherColumnsBelow && box.rows > 1 &&
        !(hasBias && overlaps(c.w[q::kBiasAddr], biasBytes, c.w[q::kOutAddr], outSpan))) {
        requantGathered(box);
    } else {
        requantRows(box);
    }
    UnitResult res;
    res.cycles = cost(uint64_t{box.rows} * box.cols);
    return res;
}

kernels::RequantParams VectorUnit::requantParams() const {
    return {params_.outMult, params_.outShift, params_.outOffset, params_.clampMin, params_.clampMax};
}

void VectorUnit::requantRows(const RequantBox& box) const {
    const kernels::RequantParams rp = requantParams();
    for (uint32_t r = 0; r < box.rows; ++r) {
        kernels::requantRow(box.acc + uint64_t{r} * box.accStride, box.bias, box.cols, rp,
                            box.out + uint64_t{r} * box.outStride);
    }
}

// Narrow boxes (a per-channel REQUANT is one column) give the row kernel too few elements per row:
// their rows are gathered into one contiguous run (bias added), requantized at once, scattered.
void VectorUnit::requantGathered(const RequantBox& box) {
    const kernels::RequantParams rp = requantParams();
    const uint32_t cols = box.cols;
    const uint64_t accStride = box.accStride, outStride = box.outStride;
    const uint32_t rowsPerPass = std::max<uint32_t>(1, kGatherElements / cols);
    gatheredAcc_.resize(uint64_t{rowsPerPass} * cols);
    gatheredOut_.resize(gatheredAcc_.size());
    int32_t* gathered = gatheredAcc_.data();
    const uint8_t* results = gatheredOut_.data();
    int32_t bias[kGatherColumnsBelow] = {};
    for (uint32_t j = 0; j < cols && box.bias != nullptr; ++j) bias[j] = kernels::biasAt(box.bias, j);
    for (uint32_t r0 = 0; r0 < box.rows; r0 += rowsPerPass) {
        const uint32_t rows = std::min(rowsPerPass, box.rows - r0);
        const int32_t* acc = box.acc + r0 * accStride;
        uint8_t* out = box.out + r0 * outStride;
        if (cols == 1) {  // one channel of a per-channel requantization: the common case
            for (uint32_t r = 0; r < rows; ++r) gathered[r] = isa::wrappingAdd(acc[r * accStride], bias[0]);
        } else {
            for (uint32_t r = 0; r < rows; ++r) {
                for (uint32_t j = 0; j < cols; ++j)
                    gathered[r * cols + j] = isa::wrappingAdd(acc[r * accStride + j], bias[j]);
            }
        }
        kernels::requantRow(gathered, nullptr, rows * cols, rp, gatheredOut_.data());
        if (cols == 1) {
            for (uint32_t r = 0; r < rows; ++r) out[r * outStride] = results[r];
        } else {
            for (uint32_t r = 0; r < rows; ++r) std::memcpy(out + r * outStride, results + r * cols, cols);
        }
    }
}

ErrorCode VectorUnit::checkBinary(const BinaryCommand& cmd, bool hasB, bool signedOut) const {
    if (cmd.rows == 0 || cmd.cols == 0 || uint64_t{cmd.rows} * cmd.cols > s_.scratchpad.size()) {
        return ErrorCode::kBadSize;
    }
    if ((cmd.rows > 1 && cmd.outRowStride < cmd.cols) || !clampFits(signedOut))
        return ErrorCode::kBadParameter;
    const uint64_t size = s_.scratchpad.size();
    uint64_t outSpan = 0;
    if (!inRange(cmd.a.addr, inputSpan(cmd, cmd.a), size) ||
        (hasB && !inRange(cmd.b.addr, inputSpan(cmd, cmd.b), size)) ||
        !boxSpan(cmd.cols, cmd.rows, 1, cmd.outRowStride, 0, &outSpan) ||
        !inRange(cmd.outAddr, outSpan, size)) {
        return ErrorCode::kSramOutOfRange;
    }
    return ErrorCode::kNone;
}

UnitResult VectorUnit::add(const isa::Command& c) {
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~(isa::vec::kFlagSignedIn | isa::vec::kFlagSignedOut)) != 0) {
        return fault(ErrorCode::kBadParameter);
    }
    const BinaryCommand cmd = decodeBinary(c, kAddWords);
    const ErrorCode e = checkBinary(cmd, true, (flags & isa::vec::kFlagSignedOut) != 0);
    if (e != ErrorCode::kNone) return fault(e);
    uint8_t* sram = s_.scratchpad.data();
    // ADD writes each element before it reads the next: the row kernels (which read several
    // elements before writing them) only run where no element's output is another's input.
    if (rowKernelsFit(cmd) && elementwiseAlias(cmd, cmd.a) && elementwiseAlias(cmd, cmd.b)) {
        for (uint32_t r = 0; r < cmd.rows; ++r) {
            kernels::addRow(binaryRow(sram, cmd, r), params_,
                            sram + cmd.outAddr + uint64_t{r} * cmd.outRowStride);
        }
    } else {
        const isa::VecParams& p = params_;
        stridedRows(
            sram, cmd, true, [&p](int32_t x, int32_t y) { return kernels::addElement(x, y, p); },
            sram + cmd.outAddr, cmd.outRowStride);
    }
    UnitResult res;
    res.cycles = cost(uint64_t{cmd.rows} * cmd.cols);
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
    const BinaryCommand cmd = decodeBinary(c, kVecOpWords);
    const uint32_t lutAddr = c.w[o::kLutAddr];
    ErrorCode e = checkBinary(cmd, isBinary(f), (flags & isa::vec::kFlagSignedOut) != 0);
    if (e == ErrorCode::kNone && f == isa::VecFunction::kLut &&
        !inRange(lutAddr, 256, s_.scratchpad.size())) {
        e = ErrorCode::kSramOutOfRange;
    }
    if (e != ErrorCode::kNone) return fault(e);
    // Inputs are read before any output is written, so an in-place op sees the old values.
    result_.resize(uint64_t{cmd.rows} * cmd.cols);
    vecOpRows(f, cmd, lutAddr, result_.data());
    uint8_t* out = s_.scratchpad.data() + cmd.outAddr;
    for (uint32_t r = 0; r < cmd.rows; ++r) {
        std::copy_n(result_.data() + uint64_t{r} * cmd.cols, cmd.cols, out + uint64_t{r} * cmd.outRowStride);
    }
    UnitResult res;
    res.cycles = cost(uint64_t{cmd.rows} * cmd.cols);
    return res;
}

// VEC_OP's functions on the whole box into dst (rows x cols, contiguous).
void VectorUnit::vecOpRows(isa::VecFunction f, const BinaryCommand& cmd, uint32_t lutAddr,
                           uint8_t* dst) const {
    const uint8_t* sram = s_.scratchpad.data();
    const isa::VecParams& p = params_;
    switch (f) {
        case isa::VecFunction::kMul:
            if (rowKernelsFit(cmd)) {
                for (uint32_t r = 0; r < cmd.rows; ++r)
                    kernels::mulRow(binaryRow(sram, cmd, r), p, dst + uint64_t{r} * cmd.cols);
                return;
            }
            return stridedRows(
                sram, cmd, true, [&p](int32_t a, int32_t b) { return kernels::mulElement(a, b, p); }, dst,
                cmd.cols);
        case isa::VecFunction::kLut:
            return lutRows(sram, cmd, sram + lutAddr, dst);
        case isa::VecFunction::kMax:
            return stridedRows(
                sram, cmd, true,
                [&p](int32_t a, int32_t b) { return kernels::clampOutput(a > b ? a : b, p); }, dst, cmd.cols);
        case isa::VecFunction::kMin:
            return stridedRows(
                sram, cmd, true,
                [&p](int32_t a, int32_t b) { return kernels::clampOutput(a < b ? a : b, p); }, dst, cmd.cols);
        case isa::VecFunction::kShift:
            return stridedRows(
                sram, cmd, false, [&p](int32_t a, int32_t) { return shiftElement(a, p); }, dst, cmd.cols);
        case isa::VecFunction::kClamp:
            return stridedRows(
                sram, cmd, false, [&p](int32_t a, int32_t) { return kernels::clampOutput(a, p); }, dst,
                cmd.cols);
        case isa::VecFunction::kPrelu:
            return stridedRows(
                sram, cmd, true, [&p](int32_t a, int32_t b) { return preluElement(a, b, p); }, dst, cmd.cols);
    }
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
    const uint64_t size = s_.scratchpad.size();
    if (!inRange(c.w[q::kInAddr], elementSpan(rows, cols, c.w[q::kInRowStride], c.w[q::kInColStride]),
                 size) ||
        !inRange(c.w[q::kOutAddr], elementSpan(rows, cols, c.w[q::kOutRowStride], c.w[q::kOutColStride]),
                 size)) {
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
