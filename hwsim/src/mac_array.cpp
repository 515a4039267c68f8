#include <algorithm>
#include <cstring>

#include "int8_kernels.h"
#include "npu/hwsim/systolic_model.h"
#include "units.h"

namespace npu::sim {

using isa::ErrorCode;

namespace {

bool zeroPointOk(int32_t zp) {
    return zp >= -kMaxZeroPointMagnitude && zp <= kMaxZeroPointMagnitude;
}

// Taps that fall inside [0, extent) summed over the outputs of one dimension: the useful MACs of
// a convolution are the product of the two dimensions' sums times the channels.
uint64_t validTaps(uint32_t outputs, uint32_t stride, uint32_t kernel, uint32_t dilation, int64_t pad,
                   uint32_t extent) {
    uint64_t total = 0;
    for (uint32_t o = 0; o < outputs; ++o) {
        for (uint32_t t = 0; t < kernel; ++t) {
            const int64_t p = int64_t{o} * stride + int64_t{t} * dilation - pad;
            if (p >= 0 && p < extent) ++total;
        }
    }
    return total;
}

// Packed operands (int16 elements) per pass: 2 MiB each, whatever a command's shape.
constexpr uint64_t kPackedBudget = uint64_t{1} << 20;

// Reduction rows per pass so that the packed B (n padded to whole column blocks) fits the budget;
// even, so reduction pairs never straddle two passes.
uint32_t reductionChunk(uint32_t n) {
    const uint64_t perRow =
        uint64_t{(n + kernels::kBlockCols - 1) / kernels::kBlockCols} * kernels::kBlockCols;
    const uint64_t rows = std::max<uint64_t>(2, kPackedBudget / perRow) & ~uint64_t{1};
    return static_cast<uint32_t>(std::min<uint64_t>(rows, UINT32_MAX - 1));
}

// GEMM rows (output pixels) per pass of the packed A.
uint32_t rowChunk(uint32_t kPairs) {
    return static_cast<uint32_t>(std::clamp<uint64_t>(kPackedBudget / (uint64_t{kPairs} * 2), 1, 256));
}

constexpr uint32_t kKnownMacFlags = isa::kMacFlagAccumulate | isa::kMacFlagSignedA | isa::kMacFlagSignedB;

}  // namespace

// Each fold runs isolated (fill and drain not overlapped across commands' folds): the cost
// SCALE-Sim v2 charges, see npu/hwsim/systolic_model.h.
uint64_t MacArray::foldCycles(uint64_t m, uint64_t k, uint64_t n) const {
    const HwConfig& c = s_.config;
    const ArrayMapping a = mapGemm(c.dataflow, c.arrayRows, c.arrayCols, m, n, k);
    return a.folds() * isolatedFoldCycles(c.dataflow, c.arrayRows, c.arrayCols, a.t);
}

UnitResult MacArray::gemm(const isa::Command& c) {
    namespace g = isa::gemm;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~kKnownMacFlags) != 0) return fault(ErrorCode::kBadParameter);
    const uint32_t m = c.w[g::kM], k = c.w[g::kK], n = c.w[g::kN];
    if (m == 0 || k == 0 || n == 0 || uint64_t{m} * k * n > kMaxMacsPerCommand) {
        return fault(ErrorCode::kBadSize);
    }
    const uint32_t aStride = c.w[g::kARowStride], bStride = c.w[g::kBRowStride];
    const uint32_t accStride = c.w[g::kAccRowStride];
    const int32_t zpA = static_cast<int32_t>(c.w[g::kZpA]);
    const int32_t zpB = static_cast<int32_t>(c.w[g::kZpB]);
    // Rows may not overlap: an overlapping accumulator box would make the result order-dependent.
    if ((m > 1 && (aStride < k || accStride < n)) || (k > 1 && bStride < n) || !zeroPointOk(zpA) ||
        !zeroPointOk(zpB)) {
        return fault(ErrorCode::kBadParameter);
    }
    uint64_t spanA = 0, spanB = 0, spanAcc = 0;
    if (!boxSpan(k, m, 1, aStride, 0, &spanA) || !inRange(c.w[g::kAAddr], spanA, s_.scratchpad.size()) ||
        !boxSpan(n, k, 1, bStride, 0, &spanB) || !inRange(c.w[g::kBAddr], spanB, s_.scratchpad.size())) {
        return fault(ErrorCode::kSramOutOfRange);
    }
    if (!boxSpan(n, m, 1, accStride, 0, &spanAcc) ||
        !inRange(c.w[g::kAccAddr], spanAcc, s_.accumulator.size())) {
        return fault(ErrorCode::kAccumulatorOutOfRange);
    }

    const bool signedA = (flags & isa::kMacFlagSignedA) != 0;
    const bool signedB = (flags & isa::kMacFlagSignedB) != 0;
    const bool accumulate = (flags & isa::kMacFlagAccumulate) != 0;
    const uint8_t* a = s_.scratchpad.data() + c.w[g::kAAddr];
    const uint8_t* b = s_.scratchpad.data() + c.w[g::kBAddr];
    int32_t* acc = s_.accumulator.data() + c.w[g::kAccAddr];
    // Reduction chunks keep the packed operands within a fixed host budget whatever the
    // command; later chunks add to the first (wrapping addition: the same bits as one pass).
    const uint32_t kChunk = reductionChunk(n);
    for (uint32_t k0 = 0; k0 < k; k0 += kChunk) {
        const uint32_t kc = std::min(kChunk, k - k0);
        kernels::packB(b + uint64_t{k0} * bStride, kc, n, bStride, signedB, zpB, packedB_);
        const uint32_t kPairs = packedB_.kPairs;
        const uint32_t rowsPerChunk = rowChunk(kPairs);
        packedA_.resize(uint64_t{rowsPerChunk} * kPairs * 2);
        for (uint32_t i0 = 0; i0 < m; i0 += rowsPerChunk) {
            const uint32_t rows = std::min(rowsPerChunk, m - i0);
            kernels::packARows(a + uint64_t{i0} * aStride + k0, rows, kc, aStride, signedA, zpA, kPairs,
                               packedA_.data());
            kernels::gemmPacked(packedA_.data(), rows, packedB_, acc + uint64_t{i0} * accStride, accStride,
                                accumulate || k0 > 0);
        }
    }
    UnitResult r;
    r.macs = uint64_t{m} * k * n;
    r.cycles = foldCycles(m, k, n);
    return r;
}

// A CONV or DWCONV command's fields, decoded and checked once for both: sizes, strides, zero
// points, row stride, and the scratchpad and accumulator ranges.

// DWCONV: cout must equal the channels, the weights are [kh][kw][C] and each output reduces kh*kw
// taps; CONV: cout > 0, weights [kh][kw][C][cout], kh*kw*C taps per output.
ErrorCode decodeConv(const isa::Command& c, DeviceState& s, bool depthwise, ConvCommand* out) {
    namespace f = isa::conv;
    ConvCommand& v = *out;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~kKnownMacFlags) != 0) return ErrorCode::kBadParameter;
    v.ih = isa::lo16(c.w[f::kIfmHW]);
    v.iw = isa::hi16(c.w[f::kIfmHW]);
    v.channels = c.w[f::kIfmC];
    v.rowStride = c.w[f::kIfmRowStride];
    v.kh = isa::lo16(c.w[f::kKernelHW]);
    v.kw = isa::hi16(c.w[f::kKernelHW]);
    v.sy = isa::lo16(c.w[f::kStride]);
    v.sx = isa::hi16(c.w[f::kStride]);
    v.dy = isa::lo16(c.w[f::kDilation]);
    v.dx = isa::hi16(c.w[f::kDilation]);
    v.padTop = isa::lo16(c.w[f::kPad]);
    v.padLeft = isa::hi16(c.w[f::kPad]);
    v.oh = isa::lo16(c.w[f::kOfmHW]);
    v.ow = isa::hi16(c.w[f::kOfmHW]);
    v.cout = c.w[f::kCout];
    v.zpIn = static_cast<int32_t>(c.w[f::kZpIn]);
    v.zpW = static_cast<int32_t>(c.w[f::kZpW]);
    if (v.ih == 0 || v.iw == 0 || v.channels == 0 || v.kh == 0 || v.kw == 0 || v.oh == 0 || v.ow == 0 ||
        (!depthwise && v.cout == 0)) {
        return ErrorCode::kBadSize;
    }
    const uint64_t outChannels = depthwise ? v.channels : v.cout;
    const uint64_t taps = uint64_t{v.kh} * v.kw * (depthwise ? 1 : v.channels);
    const uint64_t outputs = uint64_t{v.oh} * v.ow * outChannels;
    if (outputs * taps > kMaxMacsPerCommand) return ErrorCode::kBadSize;
    if ((depthwise && v.cout != v.channels) || v.sy == 0 || v.sx == 0 || v.dy == 0 || v.dx == 0 ||
        (v.ih > 1 && v.rowStride < uint64_t{v.iw} * v.channels) || !zeroPointOk(v.zpIn) ||
        !zeroPointOk(v.zpW)) {
        return ErrorCode::kBadParameter;
    }
    uint64_t spanIfm = 0;
    if (uint64_t{v.iw} * v.channels > UINT32_MAX ||
        !boxSpan(static_cast<uint32_t>(uint64_t{v.iw} * v.channels), v.ih, 1, v.rowStride, 0, &spanIfm) ||
        !inRange(c.w[f::kIfmAddr], spanIfm, s.scratchpad.size()) ||
        !inRange(c.w[f::kWAddr], taps * outChannels, s.scratchpad.size())) {
        return ErrorCode::kSramOutOfRange;
    }
    if (!inRange(c.w[f::kAccAddr], outputs, s.accumulator.size())) return ErrorCode::kAccumulatorOutOfRange;
    v.signedIn = (flags & isa::kMacFlagSignedA) != 0;
    v.signedW = (flags & isa::kMacFlagSignedB) != 0;
    v.accumulate = (flags & isa::kMacFlagAccumulate) != 0;
    v.ifm = s.scratchpad.data() + c.w[f::kIfmAddr];
    v.weights = s.scratchpad.data() + c.w[f::kWAddr];
    v.acc = s.accumulator.data() + c.w[f::kAccAddr];
    return ErrorCode::kNone;
}

UnitResult MacArray::conv(const isa::Command& c) {
    ConvCommand v;
    if (const ErrorCode e = decodeConv(c, s_, /*depthwise=*/false, &v); e != ErrorCode::kNone)
        return fault(e);
    const uint32_t ih = v.ih, iw = v.iw, ic = v.channels, rowStride = v.rowStride, kw = v.kw;
    const uint32_t sy = v.sy, sx = v.sx, dy = v.dy, dx = v.dx, ow = v.ow, cout = v.cout;
    const int64_t padTop = v.padTop, padLeft = v.padLeft;
    const int32_t zpIn = v.zpIn, zpW = v.zpW;
    const bool signedIn = v.signedIn, signedW = v.signedW, accumulate = v.accumulate;
    const uint8_t* ifm = v.ifm;
    const uint8_t* weights = v.weights;
    int32_t* acc = v.acc;
    const uint32_t oh = v.oh, kh = v.kh;
    const uint64_t taps = uint64_t{kh} * kw * ic;
    // im2col in chunks of output pixels and of the reduction (bounded host memory), then the
    // packed GEMM: the weights [kh][kw][C][cout] are already the K x N matrix, K = (ky, kx, ci).
    const uint32_t pixels = oh * ow;
    // A 1x1 convolution at stride 1 without padding over contiguous rows of the same width.
    const bool pointwise = kh == 1 && kw == 1 && sy == 1 && sx == 1 && padTop == 0 && padLeft == 0 &&
                           ow == iw && oh <= ih && (ih == 1 || rowStride == uint64_t{iw} * ic);
    const uint32_t kTotal = static_cast<uint32_t>(taps);
    const uint32_t kChunk = reductionChunk(cout);
    for (uint32_t k0 = 0; k0 < kTotal; k0 += kChunk) {
        const uint32_t kc = std::min(kChunk, kTotal - k0);
        kernels::packB(weights + uint64_t{k0} * cout, kc, cout, cout, signedW, zpW, packedB_);
        const uint64_t rowLen = uint64_t{packedB_.kPairs} * 2;
        const uint32_t rowsPerChunk = rowChunk(packedB_.kPairs);
        packedA_.resize(rowsPerChunk * rowLen);
        const uint32_t tapFirst = k0 / ic, tapLast = (k0 + kc - 1) / ic;
        for (uint32_t p0 = 0; p0 < pixels; p0 += rowsPerChunk) {
            const uint32_t rows = std::min(rowsPerChunk, pixels - p0);
            if (pointwise && kc == ic) {
                // Output pixel p reads input pixel p, whose channels are the whole reduction.
                kernels::packARows(ifm + uint64_t{p0} * ic, rows, ic, ic, signedIn, zpIn, packedB_.kPairs,
                                   packedA_.data());
            } else {
                for (uint32_t i = 0; i < rows; ++i) {
                    const uint32_t oy = (p0 + i) / ow, ox = (p0 + i) % ow;
                    int16_t* dst = packedA_.data() + i * rowLen;
                    std::fill(dst, dst + rowLen, int16_t{0});  // padded taps: (zpIn - zpIn) == 0
                    for (uint32_t t = tapFirst; t <= tapLast; ++t) {
                        const uint32_t ky = t / kw, kx = t % kw;
                        const int64_t y = int64_t{oy} * sy + int64_t{ky} * dy - padTop;
                        const int64_t x = int64_t{ox} * sx + int64_t{kx} * dx - padLeft;
                        if (y < 0 || y >= ih || x < 0 || x >= iw) continue;
                        // The part of this tap's channels inside [k0, k0 + kc).
                        const uint64_t tapStart = uint64_t{t} * ic;
                        const uint32_t c0 =
                            static_cast<uint32_t>(std::max<uint64_t>(k0, tapStart) - tapStart);
                        const uint32_t c1 =
                            static_cast<uint32_t>(std::min<uint64_t>(k0 + kc, tapStart + ic) - tapStart);
                        kernels::widen(
                            ifm + static_cast<uint64_t>(y) * rowStride + static_cast<uint64_t>(x) * ic + c0,
                            c1 - c0, signedIn, zpIn, dst + (tapStart + c0 - k0));
                    }
                }
            }
            kernels::gemmPacked(packedA_.data(), rows, packedB_, acc + uint64_t{p0} * cout, cout,
                                accumulate || k0 > 0);
        }
    }
    const uint64_t macs =
        validTaps(oh, sy, kh, dy, padTop, ih) * validTaps(ow, sx, kw, dx, padLeft, iw) * ic * cout;
    UnitResult r;
    // The array does the padded taps too (its feeder injects zpIn), so cost uses the full K;
    // the MAC counter counts only useful work.
    r.macs = macs;
    r.cycles = foldCycles(uint64_t{oh} * ow, taps, cout);
    return r;
}

// Depthwise: each channel is its own 1-channel convolution. The array maps channels onto its
// columns and output pixels onto its rows, with a reduction of kh*kw taps per output.
UnitResult MacArray::dwconv(const isa::Command& c) {
    ConvCommand v;
    if (const ErrorCode e = decodeConv(c, s_, /*depthwise=*/true, &v); e != ErrorCode::kNone) return fault(e);
    const uint32_t ih = v.ih, iw = v.iw, ch = v.channels, rowStride = v.rowStride, kh = v.kh, kw = v.kw;
    const uint32_t sy = v.sy, sx = v.sx, dy = v.dy, dx = v.dx, oh = v.oh, ow = v.ow;
    const int64_t padTop = v.padTop, padLeft = v.padLeft;
    const int32_t zpIn = v.zpIn, zpW = v.zpW;
    const bool signedIn = v.signedIn, signedW = v.signedW, accumulate = v.accumulate;
    const uint8_t* ifm = v.ifm;
    const uint8_t* weights = v.weights;
    int32_t* acc = v.acc;
    // Channels innermost: every loop below is contiguous, so the compiler vectorizes it.
    const uint64_t taps = uint64_t{kh} * kw;
    // The weights and the tile are widened once when they fit the host budget (the usual case),
    // else tap by tap; then every tap is one vector multiply-add over the channels.
    const bool wholeWeights = taps * ch <= kPackedBudget;
    const bool wholeTile = uint64_t{ih} * iw * ch <= kPackedBudget;
    if (wholeWeights) {
        dwWeights_.resize(taps * ch);
        kernels::widen(weights, static_cast<uint32_t>(taps * ch), signedW, zpW, dwWeights_.data());
    }
    if (wholeTile) {
        dwInput_.resize(uint64_t{ih} * iw * ch);
        for (uint32_t y = 0; y < ih; ++y) {
            kernels::widen(ifm + uint64_t{y} * rowStride, iw * ch, signedIn, zpIn,
                           dwInput_.data() + uint64_t{y} * iw * ch);
        }
    }
    dwTap_.resize(wholeWeights && wholeTile ? 0 : 2 * uint64_t{ch});
    row_.resize(ch);
    for (uint32_t oy = 0; oy < oh; ++oy) {
        for (uint32_t ox = 0; ox < ow; ++ox) {
            int32_t* out = acc + (uint64_t{oy} * ow + ox) * ch;
            uint32_t* sum = row_.data();
            if (accumulate) {
                std::memcpy(sum, out, ch * sizeof(uint32_t));
            } else {
                std::fill(sum, sum + ch, 0u);
            }
            dwPixel(v, oy, ox, wholeTile, wholeWeights, sum);
            std::memcpy(out, sum, ch * sizeof(uint32_t));
        }
    }
    const uint64_t macs = validTaps(oh, sy, kh, dy, padTop, ih) * validTaps(ow, sx, kw, dx, padLeft, iw) * ch;
    UnitResult r;
    r.macs = macs;
    r.cycles = foldCycles(uint64_t{oh} * ow, uint64_t{kh} * kw, ch);
    return r;
}

// One depthwise output pixel's valid taps added to sum (channels innermost). With the tile and the
// weights widened beforehand all taps go to the kernel at once; else each tap is widened here.
void MacArray::dwPixel(const ConvCommand& v, uint32_t oy, uint32_t ox, bool wholeTile, bool wholeWeights,
                       uint32_t* sum) {
    const uint32_t ch = v.channels;
    const bool widened = wholeTile && wholeWeights;
    tapIn_.clear();
    tapW_.clear();
    for (uint32_t ky = 0; ky < v.kh; ++ky) {
        const int64_t y = int64_t{oy} * v.sy + int64_t{ky} * v.dy - v.padTop;
        if (y < 0 || y >= v.ih) continue;
        for (uint32_t kx = 0; kx < v.kw; ++kx) {
            const int64_t x = int64_t{ox} * v.sx + int64_t{kx} * v.dx - v.padLeft;
            if (x < 0 || x >= v.iw) continue;
            const uint64_t pixel = static_cast<uint64_t>(y) * v.iw + static_cast<uint64_t>(x);
            const uint64_t tap = uint64_t{ky} * v.kw + kx;
            if (widened) {
                tapIn_.push_back(dwInput_.data() + pixel * ch);
                tapW_.push_back(dwWeights_.data() + tap * ch);
                continue;
            }
            const int16_t* in = wholeTile ? dwInput_.data() + pixel * ch : dwTap_.data();
            const int16_t* w = wholeWeights ? dwWeights_.data() + tap * ch : dwTap_.data() + ch;
            if (!wholeTile) {
                kernels::widen(v.ifm + static_cast<uint64_t>(y) * v.rowStride + static_cast<uint64_t>(x) * ch,
                               ch, v.signedIn, v.zpIn, dwTap_.data());
            }
            if (!wholeWeights) kernels::widen(v.weights + tap * ch, ch, v.signedW, v.zpW, dwTap_.data() + ch);
            kernels::macRow(sum, in, w, ch);
        }
    }
    if (!tapIn_.empty()) {
        kernels::macTaps(sum, tapIn_.data(), tapW_.data(), static_cast<uint32_t>(tapIn_.size()), ch);
    }
}

}  // namespace npu::sim
