#include "op_plan.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "op_check.h"

namespace npu::fw {

namespace {

constexpr uint32_t kMax16 = 0xFFFF;
constexpr uint64_t kMaxMacsPerCommand = uint64_t{1} << 30;  // well inside hwsim's per-command cap
constexpr int32_t kAddLeftShift = 20;

// The next narrower channel tile the planner tries: halved while wider than the array, then one
// channel less.
uint64_t narrowerTile(const CompileTarget& t, uint64_t tile) {
    return tile > t.arrayCols ? tile / 2 : tile - 1;
}

// Largest weight tile (output channels) whose weights + biases take at most half the
// scratchpad: all channels in one tile, else the widest double-buffered tiles
// (doubleBufferedWeights), else single-buffered ones.
uint32_t chooseCoutTile(const CompileTarget& t, uint64_t k, uint32_t cout) {
    if (uint64_t{cout} * (k + 4) <= t.scratchpadBytes / 2) return cout;
    for (uint64_t tile = narrowerTile(t, cout); tile > 0; tile = narrowerTile(t, tile)) {
        if (doubleBufferedWeights(t, tile, k, cout)) return static_cast<uint32_t>(tile);
    }
    uint64_t tile = cout;
    while (tile > 0 && tile * (k + 4) > t.scratchpadBytes / 2) tile = narrowerTile(t, tile);
    return static_cast<uint32_t>(tile);
}

uint64_t alignUp(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

// Whether a row tile of `rowTile` rows covers the whole output of a CONV_2D (not depthwise: its
// input tile holds the channel tile's channels) or FULLY_CONNECTED: then the input is loaded
// once and stays resident for every channel tile (compiler.cpp emitMacOp).
bool residentInput(const OpPlan& plan, uint32_t rowTile) {
    if (hal::isConvOp(plan.type))
        return !plan.conv.depthwise && plan.conv.batch == 1 && rowTile >= plan.conv.outH;
    return rowTile >= plan.fc.batch;
}

uint32_t maxRowTile(const CompileTarget& t, const OpPlan& plan, uint32_t coutTile);

// A DMA command's fixed cost in bytes' worth of transfer: the default config's DRAM latency
// (200 cycles) at its 16 B/cycle. A planner estimate; the autotuner measures the candidates.
constexpr double kDmaLatencyBytes = 200.0 * 16.0;

// A layer whose weights outweigh its input loads them while it computes: its channels are split
// into n tiles of whole array columns (double-buffered weights, compiler.cpp emitMacOp), so only
// the first tile's weights are waited for. The split maximises the load time saved, W (1 - 1/n),
// less the input read again by each further tile ((n - 1) I, none when the input stays
// resident: residentInput) and each tile's DMA latency; `cout` if no split gains.
uint32_t overlapCoutTile(const CompileTarget& t, const OpPlan& plan, uint32_t cout, uint64_t weightBytes,
                         uint64_t inputBytes) {
    uint32_t best = cout;
    double bestGain = 0;
    for (uint32_t n = 2; n <= cout / t.arrayCols; n *= 2) {
        const uint32_t tile = static_cast<uint32_t>(alignUp((cout + n - 1) / n, t.arrayCols));
        const uint32_t tiles = (cout + tile - 1) / tile;
        const uint32_t rows = maxRowTile(t, plan, tile);
        if (tile >= cout || rows == 0 || !doubleBufferedWeights(t, tile, weightBytes / cout, cout)) continue;
        const double reread =
            residentInput(plan, rows) ? 0.0 : (tiles - 1.0) * static_cast<double>(inputBytes);
        const double gain = static_cast<double>(weightBytes) * (1.0 - 1.0 / tiles) - reread -
                            (tiles - 1.0) * kDmaLatencyBytes;
        if (gain > bestGain) {
            best = tile;
            bestGain = gain;
        }
    }
    return best;
}

// The most rows (CONV_2D output rows, FULLY_CONNECTED batch rows) a tile of `coutTile` output
// channels can stream with double-buffered input and output tiles beside the weights, within the
// accumulator's half and the per-command MAC cap; 0 if not even one fits. (plan: shapes set.)
uint32_t maxRowTile(const CompileTarget& t, const OpPlan& plan, uint32_t coutTile) {
    const uint64_t accHalf = t.accumulatorBytes / 4 / 2;
    if (coutTile == 0) return 0;
    if (hal::isConvOp(plan.type)) {
        const ConvPlan& p = plan.conv;
        if (p.depthwise && coutTile % p.multiplier != 0) return 0;
        // Depthwise: the input tile holds the tile's channels (input channels repeated).
        const uint64_t k = p.taps();
        const uint64_t inDepth = p.depthwise ? coutTile : p.cinGroup();
        const uint64_t effH = uint64_t{p.kh - 1} * p.dilY + 1;
        const uint64_t weights = weightBufferBytes(t, coutTile, k, p.coutGroup());
        if (weights > t.scratchpadBytes) return 0;
        const uint64_t free = t.scratchpadBytes - weights;
        for (uint32_t m = p.outH; m > 0; --m) {
            const uint64_t inRows = std::min<uint64_t>(uint64_t{m - 1} * p.strideY + effH, p.inH);
            const uint64_t inBytes = alignUp(inRows * p.inW * inDepth, 64),
                           outBytes = alignUp(uint64_t{m} * p.outW * coutTile, 64);
            const uint64_t accEntries = uint64_t{m} * p.outW * coutTile;
            if (2 * (inBytes + outBytes) <= free && accEntries <= accHalf &&
                accEntries * k <= kMaxMacsPerCommand)
                return m;
        }
        return 0;
    }
    const FcPlan& p = plan.fc;
    const uint64_t weights = weightBufferBytes(t, coutTile, p.inputSize, p.units);
    if (weights > t.scratchpadBytes) return 0;
    const uint64_t free = t.scratchpadBytes - weights;
    const uint64_t m = std::min<uint64_t>({free / (2 * (alignUp(p.inputSize, 64) + alignUp(coutTile, 64))),
                                           accHalf / coutTile, p.batch,
                                           kMaxMacsPerCommand / (uint64_t{coutTile} * p.inputSize)});
    return static_cast<uint32_t>(m);
}

// The greedy tiling of `cout` output channels (`k` weights each; plan: shapes set): the widest
// channel tile (chooseCoutTile) narrowed until one row tile fits (maxRowTile takes only whole
// depth-multiplier groups), {0, 0} if none does. A single channel tile is then split for
// weight/compute overlap (overlapCoutTile, `inputBytes`: what each channel tile reads) when a
// double-buffered split fits; `inputBytes` 0 keeps it whole.
MacTiling greedyTiling(const CompileTarget& t, const OpPlan& plan, uint64_t k, uint32_t cout,
                       uint64_t inputBytes) {
    uint32_t cT = chooseCoutTile(t, k, cout), m = 0;
    for (; cT > 0; cT = static_cast<uint32_t>(narrowerTile(t, cT))) {
        if ((m = maxRowTile(t, plan, cT)) > 0) break;
    }
    if (m == 0) return {};
    if (cT == cout && inputBytes > 0) {
        const uint32_t split = overlapCoutTile(t, plan, cout, k * cout, inputBytes);
        const uint32_t rows = doubleBufferedWeights(t, split, k, cout) ? maxRowTile(t, plan, split) : 0;
        if (rows > 0) return {split, rows};
    }
    return {cT, m};
}

// The reference accumulates in 64 bits and saturates accumulator + bias to int32 before it
// requantizes; the NPU's accumulator and REQUANT's bias add are 32-bit and wrap. They agree
// exactly when no partial sum can leave int32, which holds if, for every output channel,
// sum_k |w_k - zpW| * max|x - zpIn| + |bias| <= INT32_MAX. Otherwise the operation is refused
// (never a wrong answer). Weights are [channel][k] (`channelStride` 1 ... k) or, for depthwise,
// [k][channel]: element (ch, kk) at ch * channelStride + kk * tapStride.
FwStatus accumulatorFits(const Checker& c, const uint8_t* weights, const uint8_t* bias, uint32_t channels,
                         uint64_t taps, uint64_t channelStride, uint64_t tapStride, int32_t zpW, bool signedW,
                         int32_t zpIn, bool signedIn) {
    const int32_t lo = signedIn ? -128 : 0;
    const uint64_t maxX = static_cast<uint64_t>(std::max(zpIn - lo, lo + 255 - zpIn));
    for (uint32_t ch = 0; ch < channels; ++ch) {
        uint64_t sum = 0;
        for (uint64_t kk = 0; kk < taps; ++kk) {
            const uint8_t raw = weights[ch * channelStride + kk * tapStride];
            const int32_t w = (signedW ? static_cast<int32_t>(static_cast<int8_t>(raw)) : raw) - zpW;
            sum += static_cast<uint64_t>(w < 0 ? -w : w);
        }
        const int64_t b = readI32(bias, ch);
        const uint64_t worst = sum * maxX + static_cast<uint64_t>(b < 0 ? -b : b);
        if (worst > static_cast<uint64_t>(INT32_MAX))
            return c.fail(
                "output channel %" PRIu32 ": worst-case accumulator %llu (sum |w| x %llu + |bias %" PRId64
                "|) exceeds int32; the NPU's 32-bit accumulator would wrap where the reference saturates",
                ch, static_cast<unsigned long long>(worst), static_cast<unsigned long long>(maxX), b);
    }
    return FwStatus::okStatus();
}

// The requantization of a MAC operation with per-tensor weights: input x weights / output scale.
FwStatus perTensorRequant(const Checker& c, OpPlan* plan, const OperandDesc& input,
                          const OperandDesc& weights, const OperandDesc& output) {
    QuantizedMultiplier qm;
    const double real = static_cast<double>(input.scale) * static_cast<double>(weights.scale) /
                        static_cast<double>(output.scale);
    if (!quantizeMultiplier(real, &qm)) return c.fail("requantization multiplier %g not representable", real);
    plan->vec.outMult = qm.multiplier;
    plan->vec.outShift = qm.shift;
    plan->vec.outOffset = output.zeroPoint;
    plan->zpIn = input.zeroPoint;
    plan->zpWeights = weights.zeroPoint;
    return FwStatus::okStatus();
}

// A convolution's operand indexes and the shapes read straight off its input (image height and
// width into *inH / *inW) and filter. (p.nchw: set.)
void convShapes(const Checker& c, ConvPlan& p, uint32_t* inH, uint32_t* inW) {
    const OperandDesc& input = c.in(0);
    p.input = c.op.inputs[0];
    p.filter = c.op.inputs[1];
    p.bias = c.op.inputs[2];
    p.output = c.op.outputs[0];
    p.batch = input.dims[0];
    *inH = p.nchw ? input.dims[2] : input.dims[1];
    *inW = p.nchw ? input.dims[3] : input.dims[2];
    p.cin = p.nchw ? input.dims[1] : input.dims[3];
    p.kh = c.in(1).dims[1];
    p.kw = c.in(1).dims[2];
}

// The operands every convolution shares: a rank-4 quant8 input and output, a constant filter
// (per-tensor of the same type, or per-channel along `perChannelDim`) and an INT32 bias;
// records signedness and, for per-channel filters, the scales.
FwStatus convOperands(const Checker& c, OpPlan* plan, uint32_t perChannelDim) {
    FwStatus st = c.dataTensor(0, "input", 4, 4);
    if (!st.ok()) return st;
    if (!(st = c.constantTensor(1, "filter", hal::kTensorQuant8Asymm, 4, perChannelDim)).ok()) return st;
    if (!(st = c.constantTensor(2, "bias", hal::kTensorInt32, 1)).ok()) return st;
    if (!(st = c.outputTensor(4)).ok()) return st;
    const OperandDesc& input = c.in(0);
    const OperandDesc& filter = c.in(1);
    const OperandDesc& output = c.out(0);
    if (output.rank != 4) return c.fail("output has rank %" PRIu32 ", expected 4", output.rank);
    if (filter.type == hal::kTensorQuant8SymmPerChannel) {
        if (!(st = sameDataType(c, "input and output", {&input, &output}, plan)).ok()) return st;
        plan->signedWeights = true;
        plan->channelScales = filter.channelScales;
        plan->inputScale = input.scale;
        plan->outputScale = output.scale;
        return FwStatus::okStatus();
    }
    if (!(st = sameDataType(c, "input, filter and output", {&input, &filter, &output}, plan)).ok()) return st;
    plan->signedWeights = plan->signedIn;
    return FwStatus::okStatus();
}

// A planned convolution's tiling (channel and row tiles), the accumulator bound and the
// requantization parameters. (plan->conv: shapes set.)
FwStatus convTilingAndRequant(const Checker& c, OpPlan* plan) {
    ConvPlan& p = plan->conv;
    const OperandDesc& input = c.in(0);
    const OperandDesc& filter = c.in(1);
    const OperandDesc& bias = c.in(2);
    const OperandDesc& output = c.out(0);
    const bool dw = p.depthwise, perChannel = filter.type == hal::kTensorQuant8SymmPerChannel;
    FwStatus st;
    const uint64_t k = p.taps();
    const CompileTarget& t = c.target;
    if (chooseCoutTile(t, k, p.coutGroup()) == 0)
        return c.fail("filter of %llu taps per output channel does not fit the scratchpad",
                      static_cast<unsigned long long>(k));
    // Depthwise weights (kh x kw per channel) are never worth a split; each channel tile of the
    // others reads the group's whole input (TRANSPOSE_CONV_2D: counted upsampled).
    const uint64_t inputBytes = dw ? 0 : uint64_t{p.batch} * p.inH * p.inW * p.cinGroup();
    p.tiling = greedyTiling(t, *plan, k, p.coutGroup(), inputBytes);
    if (p.tiling.rowTile == 0)
        return c.fail("one output row (width %" PRIu32 ") does not fit the scratchpad/accumulator", p.outW);
    st = accumulatorFits(c, constantData(c.target, filter), constantData(c.target, bias), p.cout, k,
                         dw ? 1 : k, dw ? p.cout : 1, perChannel ? 0 : filter.zeroPoint, plan->signedWeights,
                         input.zeroPoint, plan->signedIn);
    if (!st.ok()) return st;

    if (perChannel) {
        for (uint32_t ch = 0; ch < p.cout; ++ch) {
            QuantizedMultiplier qc;
            if (!channelMultiplier(*plan, ch, &qc))
                return c.fail("requantization multiplier of channel %" PRIu32 " not representable", ch);
        }
        plan->zpIn = input.zeroPoint;
        plan->zpWeights = 0;
        plan->vec.outOffset = output.zeroPoint;
        return FwStatus::okStatus();
    }
    return perTensorRequant(c, plan, input, filter, output);
}

// The signature of a CONV_2D-like operation: implicit or explicit padding, and where its
// optional inputs start.
struct ConvSignature {
    bool dw = false, grouped = false, implicit = false;
    uint32_t d = 0;     // inputs after the strides shift by one (DEPTHWISE / GROUPED)
    uint32_t base = 0;  // index of the optional layout input
};

FwStatus convSignature(const Checker& c, ConvSignature* sig) {
    const OperationDesc& op = c.op;
    sig->dw = op.type == hal::kOpDepthwiseConv2d;
    sig->grouped = op.type == hal::kOpGroupedConv2d;
    const uint32_t d = sig->d = sig->dw || sig->grouped ? 1 : 0;
    if (op.inputCount < 7 + d || op.inputCount > 13 + d)
        return c.fail("has %" PRIu32 " inputs; %s takes %" PRIu32 "..%" PRIu32 "", op.inputCount,
                      operationName(op.type), 7 + d, 13 + d);
    sig->implicit = op.inputCount == 7 + d ||
                    (op.inputCount >= 8 + d && c.inputExists(7 + d) && c.in(7 + d).type == hal::kBool);
    const uint32_t base = sig->base = (sig->implicit ? 7 : 10) + d;
    if (sig->grouped && op.inputCount != base + 1)
        return c.fail("has %" PRIu32 " inputs; the %s padding signature of GROUPED_CONV_2D takes %" PRIu32,
                      op.inputCount, sig->implicit ? "implicit" : "explicit", base + 1);
    if (op.inputCount != base && op.inputCount != base + 1 && op.inputCount != base + 3) {
        return c.fail("has %" PRIu32 " inputs; the %s padding signature takes %" PRIu32 ", %" PRIu32
                      " or %" PRIu32 "",
                      op.inputCount, sig->implicit ? "implicit" : "explicit", base, base + 1, base + 3);
    }
    return FwStatus::okStatus();
}

// Layout, dilations, and the depth multiplier or group count; then the filter's shape against them.
FwStatus convChannels(const Checker& c, const ConvSignature& sig, ConvPlan& p, int32_t* dilW, int32_t* dilH) {
    const OperationDesc& op = c.op;
    const OperandDesc& filter = c.in(1);
    FwStatus st = FwStatus::okStatus();
    int32_t layout = 0, multiplier = 1;
    if (op.inputCount > sig.base && !(st = c.scalar(sig.base, hal::kBool, &layout)).ok()) return st;
    if (op.inputCount > sig.base + 1) {
        if (!(st = c.scalar(sig.base + 1, hal::kInt32, dilW)).ok() ||
            !(st = c.scalar(sig.base + 2, hal::kInt32, dilH)).ok())
            return st;
    }
    if ((sig.dw || sig.grouped) && !(st = c.scalar(sig.implicit ? 6 : 9, hal::kInt32, &multiplier)).ok())
        return st;
    if (multiplier < 1)
        return c.fail("%s %" PRId32 " must be >= 1", sig.grouped ? "group count" : "depth multiplier",
                      multiplier);
    p.nchw = layout != 0;
    p.depthwise = sig.dw;
    p.multiplier = sig.dw ? static_cast<uint32_t>(multiplier) : 1;
    p.groups = sig.grouped ? static_cast<uint32_t>(multiplier) : 1;
    convShapes(c, p, &p.inH, &p.inW);
    p.cout = sig.dw ? filter.dims[3] : filter.dims[0];
    if (sig.dw) {
        if (filter.dims[0] != 1)
            return c.fail("filter dimension 0 is %" PRIu32 ", must be 1", filter.dims[0]);
        if (uint64_t{p.cin} * p.multiplier != p.cout)
            return c.fail("filter depth %" PRIu32 " is not input depth %" PRIu32
                          " times depth multiplier %" PRIu32 "",
                          p.cout, p.cin, p.multiplier);
    } else if (sig.grouped) {
        if (p.cin % p.groups != 0 || p.cout % p.groups != 0 || uint64_t{filter.dims[3]} * p.groups != p.cin)
            return c.fail("input depth %" PRIu32 ", output depth %" PRIu32 " and filter depth %" PRIu32
                          " do not fit %" PRIu32 " groups",
                          p.cin, p.cout, filter.dims[3], p.groups);
    } else if (filter.dims[3] != p.cin) {
        return c.fail("filter depth %" PRIu32 " differs from input depth %" PRIu32 "", filter.dims[3], p.cin);
    }
    if (c.in(2).dims[0] != p.cout)
        return c.fail("bias has %" PRIu32 " elements for %" PRIu32 " output channels", c.in(2).dims[0],
                      p.cout);
    return FwStatus::okStatus();
}

// NNAPI calculateExplicitPadding (SAME) with dilation.
void sameDilatedPadding(int64_t in, int64_t stride, int64_t dil, int64_t k, int32_t* head, int32_t* tail) {
    const int64_t eff = (k - 1) * dil + 1;
    const int64_t outSize = (in + stride - 1) / stride;
    const int64_t tmp = (outSize - 1) * stride + eff;
    *head = *tail = 0;
    if (tmp > in) {
        *head = static_cast<int32_t>((tmp - in) / 2);
        *tail = static_cast<int32_t>((tmp - in) - *head);
    }
}

// Strides, paddings (implicit scheme or explicit) and the fused activation.
FwStatus convWindow(const Checker& c, const ConvSignature& sig, int32_t dilW, int32_t dilH, OpPlan* plan) {
    ConvPlan& p = plan->conv;
    const OperandDesc& output = c.out(0);
    FwStatus st = FwStatus::okStatus();
    int32_t strideW = 0, strideH = 0;
    int32_t pads[4] = {};  // left, right, top, bottom
    if (sig.implicit) {
        int32_t scheme = 0;
        if (!(st = c.scalar(3, hal::kInt32, &scheme)).ok() ||
            !(st = c.scalar(4, hal::kInt32, &strideW)).ok() ||
            !(st = c.scalar(5, hal::kInt32, &strideH)).ok())
            return st;
        if (scheme != 1 && scheme != 2)
            return c.fail("implicit padding scheme %" PRId32 "; expected 1 (SAME) or 2 (VALID)", scheme);
        if (strideW < 1 || strideH < 1 || dilW < 1 || dilH < 1)
            return c.fail("strides and dilations must be >= 1");
        if (scheme == 1) {
            sameDilatedPadding(p.inW, strideW, dilW, p.kw, &pads[0], &pads[1]);
            sameDilatedPadding(p.inH, strideH, dilH, p.kh, &pads[2], &pads[3]);
        }
        if (!(st = c.activation(6 + sig.d, output, &plan->vec)).ok()) return st;
    } else {
        for (uint32_t i = 0; i < 4; ++i)
            if (!(st = c.scalar(3 + i, hal::kInt32, &pads[i])).ok()) return st;
        if (!(st = c.scalar(7, hal::kInt32, &strideW)).ok() ||
            !(st = c.scalar(8, hal::kInt32, &strideH)).ok())
            return st;
        if (pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)
            return c.fail("negative explicit padding");
        if (strideW < 1 || strideH < 1 || dilW < 1 || dilH < 1)
            return c.fail("strides and dilations must be >= 1");
        if (!(st = c.activation(9 + sig.d, output, &plan->vec)).ok()) return st;
    }
    p.strideX = static_cast<uint32_t>(strideW);
    p.strideY = static_cast<uint32_t>(strideH);
    p.dilX = static_cast<uint32_t>(dilW);
    p.dilY = static_cast<uint32_t>(dilH);
    p.padLeft = static_cast<uint32_t>(pads[0]);
    p.padRight = static_cast<uint32_t>(pads[1]);
    p.padTop = static_cast<uint32_t>(pads[2]);
    p.padBottom = static_cast<uint32_t>(pads[3]);
    return FwStatus::okStatus();
}

// The output's shape against the window, and the NPU's 16-bit tile fields.
FwStatus convOutput(const Checker& c, ConvPlan& p) {
    const uint64_t effH = uint64_t{p.kh - 1} * p.dilY + 1, effW = uint64_t{p.kw - 1} * p.dilX + 1;
    const uint64_t spanH = uint64_t{p.inH} + p.padTop + p.padBottom,
                   spanW = uint64_t{p.inW} + p.padLeft + p.padRight;
    if (spanH < effH || spanW < effW) return c.fail("the (dilated) filter is larger than the padded input");
    const uint64_t outH = (spanH - effH) / p.strideY + 1, outW = (spanW - effW) / p.strideX + 1;
    if (FwStatus st =
            c.outputImage(p.nchw, p.batch, static_cast<uint32_t>(outH), static_cast<uint32_t>(outW), p.cout);
        !st.ok())
        return st;
    p.outH = static_cast<uint32_t>(outH);
    p.outW = static_cast<uint32_t>(outW);
    // NPU limits: 16-bit tile fields. (Output rows whose window lies wholly in the padding are
    // computed from a row of zero points: bias only, as the reference.)
    if (p.inH > kMax16 || p.inW > kMax16 || p.kh > kMax16 || p.kw > kMax16 || p.strideX > kMax16 ||
        p.strideY > kMax16 || p.dilX > kMax16 || p.dilY > kMax16 || p.padLeft > kMax16 || p.padTop > kMax16 ||
        p.outH > kMax16 || p.outW > kMax16) {
        return c.fail("a dimension, stride, dilation or padding exceeds the NPU's 16-bit tile fields");
    }
    return FwStatus::okStatus();
}

// CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D: the same signature but for DEPTHWISE's depth
// multiplier / GROUPED's group count (one input after the strides), DEPTHWISE's filter
// [1, kh, kw, cout] with per-channel dimension 3, and GROUPED's layout input being required and
// its lack of dilation.
FwStatus planConv(const Checker& c, OpPlan* plan) {
    ConvSignature sig;
    FwStatus st = convSignature(c, &sig);
    if (st.ok()) st = convOperands(c, plan, sig.dw ? 3 : 0);
    int32_t dilW = 1, dilH = 1;
    if (st.ok()) st = convChannels(c, sig, plan->conv, &dilW, &dilH);
    if (st.ok()) st = convWindow(c, sig, dilW, dilH, plan);
    if (st.ok()) st = convOutput(c, plan->conv);
    if (!st.ok()) return st;
    return convTilingAndRequant(c, plan);
}

void samePadding(uint32_t in, uint32_t stride, uint32_t filter, uint32_t* head, uint32_t* tail);

// TRANSPOSE_CONV_2D's output size and paddings (left, right, top, bottom).
struct TransposeGeometry {
    int32_t strideW = 0, strideH = 0;
    int64_t outH = 0, outW = 0;
    uint32_t pads[4] = {};
};

// Implicit padding: the output shape (input 3) and scheme (input 4); SAME pads as the reference,
// as a forward convolution whose input is the output.
FwStatus transposeImplicitOutput(const Checker& c, const ConvPlan& p, TransposeGeometry* g) {
    int32_t scheme = 0;
    FwStatus st;
    if (!(st = c.constantTensor(3, "output shape", hal::kTensorInt32, 1)).ok() ||
        !(st = c.scalar(4, hal::kInt32, &scheme)).ok())
        return st;
    if (c.in(3).dims[0] != 4)
        return c.fail("output shape has %" PRIu32 " elements, expected 4", c.in(3).dims[0]);
    if (scheme != 1 && scheme != 2)
        return c.fail("implicit padding scheme %" PRId32 "; expected 1 (SAME) or 2 (VALID)", scheme);
    const uint8_t* shape = constantData(c.target, c.in(3));
    g->outH = readI32(shape, p.nchw ? 2 : 1);
    g->outW = readI32(shape, p.nchw ? 3 : 2);
    if (g->outH < 1 || g->outW < 1 || g->outH > kMax16 || g->outW > kMax16)
        return c.fail("output shape %lld x %lld outside 1..65535", static_cast<long long>(g->outH),
                      static_cast<long long>(g->outW));
    if (scheme == 1) {
        samePadding(static_cast<uint32_t>(g->outW), static_cast<uint32_t>(g->strideW), p.kw, &g->pads[0],
                    &g->pads[1]);
        samePadding(static_cast<uint32_t>(g->outH), static_cast<uint32_t>(g->strideH), p.kh, &g->pads[2],
                    &g->pads[3]);
    }
    return FwStatus::okStatus();
}

// Explicit padding: inputs 3..6 (left, right, top, bottom); the output size follows.
FwStatus transposeExplicitOutput(const Checker& c, const ConvPlan& p, TransposeGeometry* g) {
    for (uint32_t i = 0; i < 4; ++i) {
        int32_t v = 0;
        if (FwStatus st = c.scalar(3 + i, hal::kInt32, &v); !st.ok()) return st;
        if (v < 0) return c.fail("negative explicit padding");
        g->pads[i] = static_cast<uint32_t>(v);
    }
    g->outH = (int64_t{p.realInH} - 1) * g->strideH + p.kh - g->pads[2] - g->pads[3];
    g->outW = (int64_t{p.realInW} - 1) * g->strideW + p.kw - g->pads[0] - g->pads[1];
    if (g->outH < 1 || g->outW < 1)
        return c.fail("output spatial size %lld x %lld is not positive", static_cast<long long>(g->outH),
                      static_cast<long long>(g->outW));
    return FwStatus::okStatus();
}

// The equivalent CONV_2D's input (the real input upsampled by the strides), padding and output,
// checked against the model's output shape.
FwStatus transposeAsConv(const Checker& c, const TransposeGeometry& g, ConvPlan& p) {
    if (g.pads[0] >= p.kw || g.pads[2] >= p.kh)
        return c.fail("left/top padding %" PRIu32 "/%" PRIu32 " not below the filter %" PRIu32 "x%" PRIu32
                      " (the equivalent convolution would crop its input; not supported)",
                      g.pads[0], g.pads[2], p.kw, p.kh);
    const uint64_t upH = (uint64_t{p.realInH} - 1) * g.strideH + 1,
                   upW = (uint64_t{p.realInW} - 1) * g.strideW + 1;
    if (upH > kMax16 || upW > kMax16 || p.kh > kMax16 || p.kw > kMax16)
        return c.fail("the upsampled input %llu x %llu exceeds the NPU's 16-bit tile fields",
                      static_cast<unsigned long long>(upH), static_cast<unsigned long long>(upW));
    p.inH = static_cast<uint32_t>(upH);
    p.inW = static_cast<uint32_t>(upW);
    p.upStrideX = static_cast<uint32_t>(g.strideW);
    p.upStrideY = static_cast<uint32_t>(g.strideH);
    p.padLeft = p.kw - 1 - g.pads[0];
    p.padTop = p.kh - 1 - g.pads[2];
    p.outH = static_cast<uint32_t>(g.outH);
    p.outW = static_cast<uint32_t>(g.outW);
    return c.outputImage(p.nchw, p.batch, p.outH, p.outW, p.cout);
}

// TRANSPOSE_CONV_2D (explicit: input, filter, bias, 4 paddings, 2 strides, activation, layout;
// implicit: input, filter, bias, output shape, scheme, 2 strides, activation, layout) as the
// equivalent CONV_2D over the input upsampled by the strides (ConvPlan::transposed).
FwStatus planTransposeConv(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    ConvPlan& p = plan->conv;
    if (op.inputCount != 9 && op.inputCount != 11)
        return c.fail("has %" PRIu32 " inputs; TRANSPOSE_CONV_2D takes 9 (implicit) or 11 (explicit)",
                      op.inputCount);
    const bool implicit = op.inputCount == 9;
    FwStatus st = convOperands(c, plan, 0);
    if (!st.ok()) return st;
    const OperandDesc& filter = c.in(1);
    const uint32_t s0 = implicit ? 5 : 7;  // the strides
    TransposeGeometry g;
    int32_t layout = 0;
    if (!(st = c.scalar(s0, hal::kInt32, &g.strideW)).ok() ||
        !(st = c.scalar(s0 + 1, hal::kInt32, &g.strideH)).ok() ||
        !(st = c.activation(s0 + 2, c.out(0), &plan->vec)).ok() ||
        !(st = c.scalar(s0 + 3, hal::kBool, &layout)).ok())
        return st;
    if (g.strideW < 1 || g.strideH < 1) return c.fail("strides must be >= 1");
    p.nchw = layout != 0;
    p.transposed = true;
    convShapes(c, p, &p.realInH, &p.realInW);
    p.cout = filter.dims[0];
    if (filter.dims[3] != p.cin)
        return c.fail("filter depth %" PRIu32 " differs from input depth %" PRIu32, filter.dims[3], p.cin);
    if (c.in(2).dims[0] != p.cout)
        return c.fail("bias has %" PRIu32 " elements for %" PRIu32 " output channels", c.in(2).dims[0],
                      p.cout);
    st = implicit ? transposeImplicitOutput(c, p, &g) : transposeExplicitOutput(c, p, &g);
    if (st.ok()) st = transposeAsConv(c, g, p);
    if (!st.ok()) return st;
    return convTilingAndRequant(c, plan);
}

FwStatus planFc(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    FcPlan& p = plan->fc;
    if (op.inputCount != 4) return c.fail("has %" PRIu32 " inputs; FULLY_CONNECTED takes 4", op.inputCount);
    FwStatus st = c.dataTensor(0, "input", 2, 4);
    if (!st.ok()) return st;
    if (!(st = c.constantTensor(1, "weights", hal::kTensorQuant8Asymm, 2)).ok()) return st;
    if (!(st = c.constantTensor(2, "bias", hal::kTensorInt32, 1)).ok()) return st;
    if (!(st = c.outputTensor(2)).ok()) return st;
    const OperandDesc& input = c.in(0);
    const OperandDesc& weights = c.in(1);
    const OperandDesc& output = c.out(0);
    if (!(st = sameDataType(c, "input, weights and output", {&input, &weights, &output}, plan)).ok())
        return st;
    plan->signedWeights = plan->signedIn;
    if (!(st = c.activation(3, output, &plan->vec)).ok()) return st;
    p.input = op.inputs[0];
    p.weights = op.inputs[1];
    p.bias = op.inputs[2];
    p.output = op.outputs[0];
    p.units = weights.dims[0];
    p.inputSize = weights.dims[1];
    const uint64_t elements = tensorElements(input);
    if (elements % p.inputSize != 0)
        return c.fail("input has %llu elements, not a multiple of input_size %" PRIu32 "",
                      static_cast<unsigned long long>(elements), p.inputSize);
    p.batch = static_cast<uint32_t>(elements / p.inputSize);
    if (c.in(2).dims[0] != p.units)
        return c.fail("bias has %" PRIu32 " elements for %" PRIu32 " units", c.in(2).dims[0], p.units);
    if (output.rank != 2 || output.dims[0] != p.batch || output.dims[1] != p.units) {
        return c.fail("output must be [%" PRIu32 ", %" PRIu32 "]", p.batch, p.units);
    }
    const CompileTarget& t = c.target;
    if (chooseCoutTile(t, p.inputSize, p.units) == 0)
        return c.fail("input_size %" PRIu32 " does not fit the scratchpad", p.inputSize);
    p.tiling = greedyTiling(t, *plan, p.inputSize, p.units, uint64_t{p.batch} * p.inputSize);
    if (p.tiling.rowTile == 0) return c.fail("one batch row does not fit the scratchpad/accumulator");
    st = accumulatorFits(c, constantData(c.target, weights), constantData(c.target, c.in(2)), p.units,
                         p.inputSize, p.inputSize, 1, weights.zeroPoint, plan->signedWeights, input.zeroPoint,
                         plan->signedIn);
    if (!st.ok()) return st;

    return perTensorRequant(c, plan, input, weights, output);
}

FwStatus binaryParams(const Checker& c, const OperandDesc& a, const OperandDesc& b, const OperandDesc& out,
                      OpPlan* plan);

// NNAPI broadcasting: align trailing dimensions; each pair equal or one of them 1. Gives the
// output's dimensions and each input's, right-aligned in four.
FwStatus broadcastDims(const Checker& c, const OperandDesc& a, const OperandDesc& b, const OperandDesc& out,
                       uint32_t dims[4], uint32_t da[4], uint32_t db[4]) {
    const uint32_t rank = std::max(a.rank, b.rank);
    if (out.rank != rank)
        return c.fail("output rank %" PRIu32 ", broadcast rank %" PRIu32 "", out.rank, rank);
    for (uint32_t i = 0; i < 4; ++i) dims[i] = da[i] = db[i] = 1;
    for (uint32_t i = 0; i < rank; ++i) {
        const uint32_t slot = 4 - rank + i;
        da[slot] = i + a.rank >= rank ? a.dims[i + a.rank - rank] : 1;
        db[slot] = i + b.rank >= rank ? b.dims[i + b.rank - rank] : 1;
        if (da[slot] != db[slot] && da[slot] != 1 && db[slot] != 1)
            return c.fail("input dimensions %" PRIu32 " and %" PRIu32 " do not broadcast (axis %" PRIu32 ")",
                          da[slot], db[slot], i);
        dims[slot] = std::max(da[slot], db[slot]);
        if (out.dims[i] != dims[slot])
            return c.fail("output dimension %" PRIu32 " is %" PRIu32 ", broadcast gives %" PRIu32 "", i,
                          out.dims[i], dims[slot]);
    }
    return FwStatus::okStatus();
}

// The AddPlan's walk: row-major element strides, 0 where an input is broadcast, with each
// dimension collapsed into the next inner one where both inputs walk them as one.
void binaryWalk(const uint32_t dims[4], const uint32_t da[4], const uint32_t db[4], AddPlan& p) {
    uint32_t sa[4], sb[4];
    uint64_t ea = 1, eb = 1;
    for (int i = 3; i >= 0; --i) {
        sa[i] = da[i] == 1 ? 0 : static_cast<uint32_t>(ea);
        sb[i] = db[i] == 1 ? 0 : static_cast<uint32_t>(eb);
        ea *= da[i];
        eb *= db[i];
    }
    uint32_t n = 0, cd[4], ca[4], cb[4];
    for (uint32_t i = 0; i < 4; ++i) {
        if (dims[i] == 1) continue;
        if (n > 0 &&
            ((sa[i] == 0 && ca[n - 1] == 0) ||
             (sa[i] != 0 && uint64_t{ca[n - 1]} == uint64_t{sa[i]} * dims[i])) &&
            ((sb[i] == 0 && cb[n - 1] == 0) ||
             (sb[i] != 0 && uint64_t{cb[n - 1]} == uint64_t{sb[i]} * dims[i]))) {
            cd[n - 1] *= dims[i];
            ca[n - 1] = sa[i];
            cb[n - 1] = sb[i];
            continue;
        }
        cd[n] = dims[i];
        ca[n] = sa[i];
        cb[n] = sb[i];
        ++n;
    }
    for (uint32_t i = 0; i < 4; ++i) {
        const uint32_t src = i + n < 4 ? UINT32_MAX : i + n - 4;
        p.dims[i] = src == UINT32_MAX ? 1 : cd[src];
        p.strideA[i] = src == UINT32_MAX ? 0 : ca[src];
        p.strideB[i] = src == UINT32_MAX ? 0 : cb[src];
    }
}

// ADD, SUB, MUL (fused activation) and MAXIMUM, MINIMUM (none), with NNAPI broadcasting.
FwStatus planBinary(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    AddPlan& p = plan->add;
    // MAXIMUM, MINIMUM and PRELU have no fused activation.
    const bool minMax = op.type == hal::kOpMaximum || op.type == hal::kOpMinimum || op.type == hal::kOpPrelu;
    const uint32_t inputs = minMax ? 2 : 3;
    if (op.inputCount != inputs)
        return c.fail("has %" PRIu32 " inputs; %s takes %" PRIu32 "", op.inputCount, operationName(op.type),
                      inputs);
    FwStatus st = c.dataTensor(0, "input1", 1, 4);
    if (!st.ok() || !(st = c.dataTensor(1, "input2", 1, 4)).ok() || !(st = c.outputTensor(4)).ok()) return st;
    const OperandDesc& a = c.in(0);
    const OperandDesc& b = c.in(1);
    const OperandDesc& out = c.out(0);
    if (!(st = sameDataType(c, "input1, input2 and output", {&a, &b, &out}, plan)).ok()) return st;
    if (minMax) {
        activationRange8(0, out.scale, out.zeroPoint, plan->signedOut, &plan->vec.clampMin,
                         &plan->vec.clampMax);
    } else if (!(st = c.activation(2, out, &plan->vec)).ok()) {
        return st;
    }
    p.a = op.inputs[0];
    p.b = op.inputs[1];
    p.output = op.outputs[0];
    uint32_t dims[4], da[4], db[4];
    if (!(st = broadcastDims(c, a, b, out, dims, da, db)).ok()) return st;
    binaryWalk(dims, da, db, p);
    const uint64_t buffer = binaryBufferBytes(c.target);
    p.colTile = static_cast<uint32_t>(std::min<uint64_t>(p.dims[3], buffer));
    p.rowTile = static_cast<uint32_t>(std::min<uint64_t>(p.dims[2], buffer / p.colTile));
    return binaryParams(c, a, b, out, plan);
}

// PRELU (VEC_OP PRELU): x = input - zpIn; x >= 0: MBQM(x, sIn / sOut); else MBQM(x * (alpha -
// zpAlpha), sIn * sAlpha / sOut), + zpOut. The scale products in float, then double, as the
// reference takes them, so the multipliers are the same.
FwStatus preluParams(const Checker& c, const OperandDesc& in, const OperandDesc& alpha,
                     const OperandDesc& out, OpPlan* plan) {
    QuantizedMultiplier positive, negative;
    const double realPositive = static_cast<double>(in.scale / out.scale);
    const double realNegative = static_cast<double>(in.scale * alpha.scale) / static_cast<double>(out.scale);
    if (!quantizeMultiplier(realPositive, &positive) || !quantizeMultiplier(realNegative, &negative))
        return c.fail("requantization multipliers %g / %g not representable", realPositive, realNegative);
    plan->vec.in1Offset = -in.zeroPoint;
    plan->vec.in2Offset = -alpha.zeroPoint;
    plan->vec.outOffset = out.zeroPoint;
    plan->vec.in1Mult = positive.multiplier;
    plan->vec.in1Shift = positive.shift;
    plan->vec.outMult = negative.multiplier;
    plan->vec.outShift = negative.shift;
    return FwStatus::okStatus();
}

// The vector unit's parameters of a binary operation, as the reference derives them.
FwStatus binaryParams(const Checker& c, const OperandDesc& a, const OperandDesc& b, const OperandDesc& out,
                      OpPlan* plan) {
    const uint32_t type = c.op.type;
    if (type == hal::kOpPrelu) return preluParams(c, a, b, out, plan);
    if (type == hal::kOpMaximum || type == hal::kOpMinimum) {
        plan->add.requantA = a.scale != out.scale || a.zeroPoint != out.zeroPoint;
        plan->add.requantB = b.scale != out.scale || b.zeroPoint != out.zeroPoint;
        return FwStatus::okStatus();
    }
    plan->vec.in1Offset = -a.zeroPoint;
    plan->vec.in2Offset = -b.zeroPoint;
    plan->vec.outOffset = out.zeroPoint;
    if (type == hal::kOpMul) {  // MBQM((a - zpA) * (b - zpB), scaleA * scaleB / scaleOut)
        QuantizedMultiplier qm;
        const double real = static_cast<double>(a.scale) * b.scale / out.scale;
        if (!quantizeMultiplier(real, &qm))
            return c.fail("requantization multiplier %g not representable", real);
        plan->vec.outMult = qm.multiplier;
        plan->vec.outShift = qm.shift;
        return FwStatus::okStatus();
    }

    // TFLite's add.cc Prepare for uint8: inputs rescaled to twice the larger scale with a
    // 20-bit headroom shift, then the sum rescaled to the output.
    const double twiceMax = 2 * std::max(a.scale, b.scale);
    const double real1 = a.scale / twiceMax, real2 = b.scale / twiceMax;
    const double realOut = twiceMax / ((1 << kAddLeftShift) * out.scale);
    QuantizedMultiplier q1, q2, qo;
    if (!(realOut < 1.0) || !quantizeMultiplier(real1, &q1) || !quantizeMultiplier(real2, &q2) ||
        !quantizeMultiplier(realOut, &qo) || q1.shift > 0 || q2.shift > 0 || qo.shift > 0) {
        return c.fail("scales (%g, %g -> %g) need a rescale multiplier >= 1", a.scale, b.scale, out.scale);
    }
    plan->vec.in1Mult = q1.multiplier;
    plan->vec.in1Shift = q1.shift;
    // SUB is ADD with the second input's multiplier negated (TFLite's and the reference's way).
    plan->vec.in2Mult = type == hal::kOpSub ? -q2.multiplier : q2.multiplier;
    plan->vec.in2Shift = q2.shift;
    plan->vec.outMult = qo.multiplier;
    plan->vec.outShift = qo.shift;
    plan->vec.leftShift = kAddLeftShift;
    return FwStatus::okStatus();
}

// ---- Pooling ---------------------------------------------------------------------------------

// The double-buffered pooling tiles: a tile of `rows` output rows and `channels` channels needs
// its input rows (clipped to the image) and its output rows, twice each.
bool poolTileFits(const CompileTarget& t, const PoolPlan& p, uint32_t rows, uint32_t channels) {
    const uint64_t inRows = std::min<uint64_t>(uint64_t{rows - 1} * p.strideY + p.kh, p.inH);
    const uint64_t inBytes = alignUp(inRows * p.inW * channels, 64);
    const uint64_t outBytes = alignUp(uint64_t{rows} * p.outW * channels, 64);
    const uint64_t taps = uint64_t{rows} * p.outW * channels * p.kh * p.kw;
    return 2 * (inBytes + outBytes) + kPoolConstantBytes <= t.scratchpadBytes && taps <= kMaxMacsPerCommand;
}

// A window wholly in the padding: the reference's average is 0 and its maximum INT32_MIN, each
// then clamped; POOL yields 0 then clamps, and the compiler fills tiles with no input row with
// clamp(0). That is the reference's answer except for a MAX_POOL_2D whose clamp minimum is
// negative (int8 without RELU), which is refused.
FwStatus poolWindows(const Checker& c, const PoolPlan& p, int32_t clampMin, uint32_t padRight,
                     uint32_t padBottom) {
    const uint64_t lastY = uint64_t{p.outH - 1} * p.strideY, lastX = uint64_t{p.outW - 1} * p.strideX;
    const bool empty = p.padTop >= p.kh || p.padLeft >= p.kw || lastY >= uint64_t{p.inH} + p.padTop ||
                       lastX >= uint64_t{p.inW} + p.padLeft;
    if (empty && !p.average && clampMin < 0) {
        return c.fail("padding (left %" PRIu32 ", right %" PRIu32 ", top %" PRIu32 ", bottom %" PRIu32
                      ") leaves a %" PRIu32 "x%" PRIu32
                      " window with no input element, and the clamp minimum %" PRId32
                      " is negative (the NPU's empty maximum is clamp(0), the reference's the clamp minimum)",
                      p.padLeft, padRight, p.padTop, padBottom, p.kw, p.kh, clampMin);
    }
    return FwStatus::okStatus();
}

FwStatus poolTiling(const Checker& c, PoolPlan& p) {
    if (p.inH > kMax16 || p.inW > kMax16 || p.kh > kMax16 || p.kw > kMax16 || p.strideX > kMax16 ||
        p.strideY > kMax16 || p.padLeft > kMax16 || p.padTop > kMax16 || p.outH > kMax16 || p.outW > kMax16)
        return c.fail("a dimension, stride, filter size or padding exceeds the NPU's 16-bit tile fields");
    // The vector unit sums a window in 32 bits, as the reference does: at most 2^23 taps of 255.
    if (uint64_t{p.kh} * p.kw > (uint64_t{1} << 23))
        return c.fail("filter %" PRIu32 "x%" PRIu32 " has more than 2^23 taps (32-bit window sum)", p.kw,
                      p.kh);
    auto fits = [&](uint32_t rows, uint32_t channels) { return poolTileFits(c.target, p, rows, channels); };
    if (rowChannelTile(p.channels, p.outH, fits, &p.rowTile, &p.channelTile)) return FwStatus::okStatus();
    return c.fail("one output row (%" PRIu32 " wide, filter %" PRIu32 "x%" PRIu32
                  ") of one channel does not fit the %" PRIu32 "-byte scratchpad",
                  p.outW, p.kw, p.kh, c.target.scratchpadBytes);
}

// NNAPI calculateExplicitPadding for the SAME scheme (dilation 1).
void samePadding(uint32_t in, uint32_t stride, uint32_t filter, uint32_t* head, uint32_t* tail) {
    const int64_t out = (int64_t{in} + stride - 1) / stride;
    const int64_t total = std::max<int64_t>((out - 1) * stride + filter - in, 0);
    *head = static_cast<uint32_t>(total / 2);
    *tail = static_cast<uint32_t>(total - total / 2);
}

FwStatus planPool(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    PoolPlan& p = plan->pool;
    const bool explicitPad = op.inputCount >= 10;
    const uint32_t base = explicitPad ? 5 : 2;
    if (op.inputCount < 7 || op.inputCount > base + 6)
        return c.fail("has %" PRIu32 " inputs; expected 7 or 8 (implicit padding), 10 or 11 (explicit)",
                      op.inputCount);
    FwStatus st = c.dataTensor(0, "input", 4, 4);
    if (!st.ok() || !(st = c.outputTensor(4)).ok()) return st;
    const OperandDesc& input = c.in(0);
    const OperandDesc& output = c.out(0);
    if (!(st = sameDataType(c, "input and output", {&input, &output}, plan)).ok()) return st;
    if (!(st = sameQuantization(c, input, output, "quantized pooling")).ok()) return st;
    int32_t v[6] = {}, pads[4] = {}, scheme = 0, layout = 0;
    for (uint32_t i = 0; i < 4; ++i) {  // strideW, strideH, filterW, filterH
        if (!(st = c.scalar(base + i, hal::kInt32, &v[i])).ok()) return st;
    }
    if (explicitPad) {
        for (uint32_t i = 0; i < 4 && st.ok(); ++i) st = c.scalar(1 + i, hal::kInt32, &pads[i]);
    } else {
        st = c.scalar(1, hal::kInt32, &scheme);
    }
    if (!st.ok() || !(st = c.activation(base + 4, output, &plan->vec)).ok()) return st;
    if (op.inputCount > base + 5 && !(st = c.scalar(base + 5, hal::kBool, &layout)).ok()) return st;
    if (!explicitPad && scheme != 1 && scheme != 2)
        return c.fail("implicit padding scheme %" PRId32 "; expected 1 (SAME) or 2 (VALID)", scheme);
    if (v[0] < 1 || v[1] < 1 || v[2] < 1 || v[3] < 1) return c.fail("strides and filter sizes must be >= 1");
    if (pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0) return c.fail("negative explicit padding");
    p.input = op.inputs[0];
    p.output = op.outputs[0];
    p.average = op.type == hal::kOpAveragePool2d;
    p.nchw = layout != 0;
    p.batch = input.dims[0];
    p.inH = p.nchw ? input.dims[2] : input.dims[1];
    p.inW = p.nchw ? input.dims[3] : input.dims[2];
    p.channels = p.nchw ? input.dims[1] : input.dims[3];
    p.strideX = static_cast<uint32_t>(v[0]);
    p.strideY = static_cast<uint32_t>(v[1]);
    p.kw = static_cast<uint32_t>(v[2]);
    p.kh = static_cast<uint32_t>(v[3]);
    uint32_t padRight = static_cast<uint32_t>(pads[1]), padBottom = static_cast<uint32_t>(pads[3]);
    p.padLeft = static_cast<uint32_t>(pads[0]);
    p.padTop = static_cast<uint32_t>(pads[2]);
    if (scheme == 1) {
        samePadding(p.inW, p.strideX, p.kw, &p.padLeft, &padRight);
        samePadding(p.inH, p.strideY, p.kh, &p.padTop, &padBottom);
    }
    const uint64_t spanH = uint64_t{p.inH} + p.padTop + padBottom,
                   spanW = uint64_t{p.inW} + p.padLeft + padRight;
    if (spanH < p.kh || spanW < p.kw) return c.fail("the filter is larger than the padded input");
    p.outH = static_cast<uint32_t>((spanH - p.kh) / p.strideY + 1);
    p.outW = static_cast<uint32_t>((spanW - p.kw) / p.strideX + 1);
    if (!(st = c.outputImage(p.nchw, p.batch, p.outH, p.outW, p.channels)).ok()) return st;
    if (!(st = poolWindows(c, p, plan->vec.clampMin, padRight, padBottom)).ok()) return st;
    return poolTiling(c, p);
}

// ---- Byte mapping and copies (RELU*, LOGISTIC, TANH, HARD_SWISH, RESHAPE, SQUEEZE, CONCATENATION)

FwStatus sameShape(const Checker& c, const OperandDesc& input, const OperandDesc& output) {
    bool same = input.rank == output.rank;
    for (uint32_t k = 0; same && k < input.rank; ++k) same = input.dims[k] == output.dims[k];
    if (!same)
        return c.fail("output shape differs from the input shape (rank %" PRIu32 " vs %" PRIu32 ")",
                      output.rank, input.rank);
    return FwStatus::okStatus();
}

// One part covering the whole input, copied (lut kNone) or mapped through a table.
void singlePart(const Checker& c, OpPlan* plan, ByteMap map) {
    CopyPlan& p = plan->copy;
    p.output = c.op.outputs[0];
    p.rows = 1;
    p.outRowBytes = static_cast<uint32_t>(tensorElements(c.in(0)));
    p.partCount = 1;
    p.parts[0] = c.op.inputs[0];
    p.partBytes[0] = p.outRowBytes;
    p.dstColumn[0] = 0;
    p.map[0] = map;
}

FwStatus planLut(const Checker& c, OpPlan* plan) {
    if (c.op.inputCount != 1) return c.fail("has %" PRIu32 " inputs, expected 1", c.op.inputCount);
    FwStatus st = c.dataTensor(0, "input", 1, kMaxRank);
    if (!st.ok() || !(st = c.outputTensor(kMaxRank)).ok()) return st;
    if (!(st = sameDataType(c, "input and output", {&c.in(0), &c.out(0)}, plan)).ok()) return st;
    if (!(st = sameShape(c, c.in(0), c.out(0))).ok()) return st;
    singlePart(c, plan, byteMapOf(c.op.type));
    return FwStatus::okStatus();
}

// The reference's RESHAPE shape rule: at most one -1, inferred from the element count.
FwStatus reshapedShape(const Checker& c, const OperandDesc& input, const uint8_t* shape, uint32_t count,
                       uint32_t* dims, uint32_t* rank) {
    if (count > kMaxRank)
        return c.fail("shape has %" PRIu32 " dimensions (limit %" PRIu32 ")", count, kMaxRank);
    const uint64_t total = tensorElements(input);
    uint64_t known = 1;
    uint32_t unknownAt = UINT32_MAX;
    for (uint32_t i = 0; i < count; ++i) {
        const int32_t d = readI32(shape, i);
        if (d == -1 && unknownAt == UINT32_MAX) {
            unknownAt = i;
        } else if (d < 0) {
            return c.fail("shape dimension %" PRIu32 " is %" PRId32 "", i, d);
        } else {
            dims[i] = static_cast<uint32_t>(d);
            known *= static_cast<uint64_t>(d);
        }
    }
    if (unknownAt != UINT32_MAX) {
        if (known == 0 || total % known != 0) return c.fail("cannot infer the -1 dimension of the shape");
        dims[unknownAt] = static_cast<uint32_t>(total / known);
        known *= dims[unknownAt];
    }
    if (known != total)
        return c.fail("shape has %llu elements, the input %llu", static_cast<unsigned long long>(known),
                      static_cast<unsigned long long>(total));
    *rank = count;
    return FwStatus::okStatus();
}

// The reference's SQUEEZE rule: the named axes (each of size 1), or every axis of size 1.
FwStatus squeezedShape(const Checker& c, const OperandDesc& input, const uint8_t* axes, uint32_t count,
                       uint32_t* dims, uint32_t* rank) {
    bool drop[kMaxRank] = {};
    const int32_t r = static_cast<int32_t>(input.rank);
    for (uint32_t k = 0; axes == nullptr && k < input.rank; ++k) drop[k] = input.dims[k] == 1;
    for (uint32_t j = 0; axes != nullptr && j < count; ++j) {
        int32_t a = readI32(axes, j);
        if (a < -r || a >= r)
            return c.fail("squeeze axis %" PRId32 " out of range for rank %" PRId32 "", a, r);
        if (a < 0) a += r;
        if (input.dims[a] != 1)
            return c.fail("squeezed dimension %" PRId32 " has size %" PRIu32 "", a, input.dims[a]);
        drop[a] = true;
    }
    *rank = 0;
    for (uint32_t k = 0; k < input.rank; ++k) {
        if (!drop[k]) dims[(*rank)++] = input.dims[k];
    }
    if (*rank == 0) dims[(*rank)++] = 1;  // NNAPI: squeezing every dimension gives [1]
    return FwStatus::okStatus();
}

FwStatus planReshape(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    const bool squeeze = op.type == hal::kOpSqueeze;
    if (op.inputCount < (squeeze ? 1u : 2u) || op.inputCount > 2)
        return c.fail("has %" PRIu32 " inputs, expected %s", op.inputCount, squeeze ? "1 or 2" : "2");
    FwStatus st = c.dataTensor(0, "input", 1, squeeze ? 4 : kMaxRank);
    if (!st.ok() || !(st = c.outputTensor(kMaxRank)).ok()) return st;
    const OperandDesc& input = c.in(0);
    const OperandDesc& output = c.out(0);
    if (!(st = sameDataType(c, "input and output", {&input, &output}, plan)).ok()) return st;
    if (squeeze && (input.scale != output.scale || input.zeroPoint != output.zeroPoint))
        return c.fail("output scale and zero point must equal the input's");
    uint32_t dims[kMaxRank + 1] = {}, rank = 0;
    const bool hasShape = op.inputCount == 2 && c.inputExists(1);
    if (!squeeze && !hasShape) return c.fail("shape (input 1) has no value");
    const uint8_t* values = nullptr;
    uint32_t count = 0;
    if (hasShape) {
        const OperandDesc& s = c.in(1);
        if (!(st = c.constantTensor(1, squeeze ? "axes" : "shape", hal::kTensorInt32, 1)).ok()) return st;
        values = constantData(c.target, s);
        count = s.dims[0];
    }
    if (squeeze) {
        st = squeezedShape(c, input, values, count, dims, &rank);
    } else {
        st = reshapedShape(c, input, values, count, dims, &rank);
    }
    if (!st.ok()) return st;
    bool same = rank == output.rank;
    for (uint32_t k = 0; same && k < rank; ++k) same = dims[k] == output.dims[k];
    if (!same)
        return c.fail("output shape (rank %" PRIu32 ") is not the %s shape (rank %" PRIu32 ")", output.rank,
                      squeeze ? "squeezed" : "requested", rank);
    singlePart(c, plan, ByteMap::kCopy);
    return FwStatus::okStatus();
}

// CONCATENATION: each input is a [outer, its axis extent x inner] box placed side by side in the
// output rows; an input quantized differently from the output is requantized through a table.
FwStatus planConcat(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    CopyPlan& p = plan->copy;
    if (op.inputCount < 2)
        return c.fail("has %" PRIu32 " inputs; needs at least one tensor and the axis", op.inputCount);
    const uint32_t n = op.inputCount - 1;
    if (n > kMaxCopyParts)
        return c.fail("concatenates %" PRIu32 " tensors (NPU limit %" PRIu32 ")", n, kMaxCopyParts);
    FwStatus st = c.outputTensor(4);
    if (!st.ok()) return st;
    const OperandDesc& output = c.out(0);
    for (uint32_t i = 0; i < n; ++i) {
        char role[24];
        std::snprintf(role, sizeof(role), "input %" PRIu32, i);
        if (!(st = c.dataTensor(i, role, 1, 4)).ok()) return st;
        if (!(st = sameDataType(c, "inputs and output", {&c.in(i), &output}, plan)).ok()) return st;
    }
    int32_t axis = 0;
    if (!(st = c.scalar(n, hal::kInt32, &axis)).ok()) return st;
    const OperandDesc& first = c.in(0);
    const int32_t rank = static_cast<int32_t>(first.rank);
    if (axis < -rank || axis >= rank)
        return c.fail("axis %" PRId32 " out of range for rank %" PRId32 "", axis, rank);
    const uint32_t ax = static_cast<uint32_t>(axis < 0 ? axis + rank : axis);
    uint64_t axisTotal = 0, outer = 1, inner = 1;
    for (uint32_t k = 0; k < ax; ++k) outer *= first.dims[k];
    for (uint32_t k = ax + 1; k < first.rank; ++k) inner *= first.dims[k];
    for (uint32_t i = 0; i < n; ++i) {
        const OperandDesc& d = c.in(i);
        if (d.rank != first.rank)
            return c.fail("input %" PRIu32 " has rank %" PRIu32 ", input 0 %" PRIu32 "", i, d.rank,
                          first.rank);
        for (uint32_t k = 0; k < d.rank; ++k) {
            if (k != ax && d.dims[k] != first.dims[k])
                return c.fail("input %" PRIu32 " dimension %" PRIu32 " is %" PRIu32 ", input 0 has %" PRIu32
                              "",
                              i, k, d.dims[k], first.dims[k]);
        }
        p.parts[i] = op.inputs[i];
        p.partBytes[i] = static_cast<uint32_t>(uint64_t{d.dims[ax]} * inner);
        p.dstColumn[i] = static_cast<uint32_t>(axisTotal * inner);
        const bool same = d.scale == output.scale && d.zeroPoint == output.zeroPoint;
        p.map[i] = same ? ByteMap::kCopy : ByteMap::kRequant;
        axisTotal += d.dims[ax];
    }
    bool sameShape = output.rank == first.rank;
    for (uint32_t k = 0; sameShape && k < output.rank; ++k)
        sameShape = output.dims[k] == (k == ax ? axisTotal : first.dims[k]);
    if (!sameShape) return c.fail("output shape is not the inputs' shape joined along axis %" PRIu32 "", ax);
    p.output = op.outputs[0];
    p.rows = static_cast<uint32_t>(outer);
    p.outRowBytes = static_cast<uint32_t>(axisTotal * inner);
    p.partCount = n;
    return FwStatus::okStatus();
}

// PAD (the pad value is the zero point) and PAD_V2 (an INT32 pad value, saturated to the type,
// as the reference does).
FwStatus planPad(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    PadPlan& p = plan->pad;
    const bool v2 = op.type == hal::kOpPadV2;
    if (op.inputCount != (v2 ? 3u : 2u))
        return c.fail("has %" PRIu32 " inputs; %s takes %u", op.inputCount, operationName(op.type),
                      v2 ? 3u : 2u);
    FwStatus st = c.dataTensor(0, "input", 1, 4);
    if (!st.ok() || !(st = c.outputTensor(4)).ok()) return st;
    const OperandDesc& input = c.in(0);
    const OperandDesc& output = c.out(0);
    if (!(st = sameDataType(c, "input and output", {&input, &output}, plan)).ok()) return st;
    if (input.scale != output.scale || input.zeroPoint != output.zeroPoint)
        return c.fail("output scale and zero point must equal the input's");
    if (!(st = c.constantTensor(1, "paddings", hal::kTensorInt32, 2)).ok()) return st;
    const OperandDesc& pads = c.in(1);
    if (pads.dims[0] != input.rank || pads.dims[1] != 2)
        return c.fail("paddings are [%" PRIu32 ", %" PRIu32 "], expected [%" PRIu32 ", 2]", pads.dims[0],
                      pads.dims[1], input.rank);
    int32_t value = input.zeroPoint;
    if (v2 && !(st = c.scalar(2, hal::kInt32, &value)).ok()) return st;
    const int32_t lo = plan->signedIn ? -128 : 0;
    p.value = static_cast<uint8_t>(std::min(std::max(value, lo), lo + 255));
    if (output.rank != input.rank)
        return c.fail("output rank %" PRIu32 ", input rank %" PRIu32 "", output.rank, input.rank);
    const uint8_t* data = constantData(c.target, pads);
    const uint32_t shift = 4 - input.rank;
    for (uint32_t k = 0; k < input.rank; ++k) {
        const int32_t head = readI32(data, 2 * k), tail = readI32(data, 2 * k + 1);
        if (head < 0 || tail < 0) return c.fail("paddings of dimension %" PRIu32 " are negative", k);
        const uint64_t dim =
            uint64_t{input.dims[k]} + static_cast<uint32_t>(head) + static_cast<uint32_t>(tail);
        if (output.dims[k] != dim)
            return c.fail("output dimension %" PRIu32 " is %" PRIu32 ", the padding gives %llu", k,
                          output.dims[k], static_cast<unsigned long long>(dim));
        p.in[shift + k] = input.dims[k];
        p.out[shift + k] = output.dims[k];
        p.before[shift + k] = static_cast<uint32_t>(head);
    }
    p.input = op.inputs[0];
    p.output = op.outputs[0];
    return FwStatus::okStatus();
}

// ---- SOFTMAX -----------------------------------------------------------------------------------

// A constant FLOAT32 scalar.
FwStatus floatScalar(const Checker& c, uint32_t i, float* value) {
    if (!c.inputExists(i)) return c.fail("input %" PRIu32 " (scalar) has no value", i);
    const OperandDesc& d = c.in(i);
    if (d.type != hal::kFloat32)
        return c.fail("input %" PRIu32 " (operand %" PRIu32 ") has type %" PRIu32 ", expected FLOAT32", i,
                      c.op.inputs[i], d.type);
    const uint8_t* p = constantData(c.target, d);
    if ((d.lifetime != hal::kConstantCopy && d.lifetime != hal::kConstantReference) || p == nullptr ||
        d.dataLength != 4)
        return c.fail("input %" PRIu32 " (operand %" PRIu32 ") must be a 4-byte constant", i, c.op.inputs[i]);
    const uint32_t bits = static_cast<uint32_t>(readI32(p, 0));
    std::memcpy(value, &bits, 4);
    return FwStatus::okStatus();
}

// SOFTMAX (TENSOR_QUANT8_ASYMM / _SIGNED): the reference's integer algorithm (TFLite's), run by
// the vector unit's SOFTMAX command with the parameters computed here.
FwStatus planSoftmax(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    SoftmaxPlan& p = plan->softmax;
    if (op.inputCount != 2 && op.inputCount != 3)
        return c.fail("has %" PRIu32 " inputs; SOFTMAX takes 2 or 3", op.inputCount);
    FwStatus st = c.dataTensor(0, "input", 1, 4);
    if (!st.ok() || !(st = c.outputTensor(4)).ok()) return st;
    const OperandDesc& input = c.in(0);
    const OperandDesc& output = c.out(0);
    if (!(st = sameDataType(c, "input and output", {&input, &output}, plan)).ok()) return st;
    if (!(st = sameShape(c, input, output)).ok()) return st;
    const int32_t zp = plan->signedOut ? -128 : 0;
    if (output.scale != 1.0f / 256 || output.zeroPoint != zp)
        return c.fail("output scale %g / zero point %" PRId32
                      "; SOFTMAX outputs scale 1/256, zero point %" PRId32,
                      output.scale, output.zeroPoint, zp);
    float beta = 0;
    if (!(st = floatScalar(c, 1, &beta)).ok()) return st;
    int32_t axis = -1;
    if (op.inputCount == 3 && !(st = c.scalar(2, hal::kInt32, &axis)).ok()) return st;
    const int32_t rank = static_cast<int32_t>(input.rank);
    if (axis < -rank || axis >= rank)
        return c.fail("axis %" PRId32 " out of range for rank %" PRId32, axis, rank);
    const uint32_t ax = static_cast<uint32_t>(axis < 0 ? axis + rank : axis);
    SoftmaxParams sp;
    if (!(beta > 0) || !softmaxParams(beta, input.scale, &sp))
        return c.fail(
            "beta %g with input scale %g: beta * scale * 2^26 must lie in (1, 2^31) (TFLite's "
            "integer softmax; a left shift above 31 would overflow)",
            beta, input.scale);
    uint64_t outer = 1, inner = 1;
    for (uint32_t k = 0; k < ax; ++k) outer *= input.dims[k];
    for (uint32_t k = ax + 1; k < input.rank; ++k) inner *= input.dims[k];
    p.len = input.dims[ax];
    if (p.len > isa::softmax::kMaxRowLength)
        return c.fail("axis length %" PRIu32 " over %" PRIu32
                      " (the Q12.19 sum of exponentials could overflow)",
                      p.len, isa::softmax::kMaxRowLength);
    const uint64_t slab = uint64_t{p.len} * inner;
    const uint32_t buffer = softmaxBufferBytes(c.target);
    if (slab > buffer)
        return c.fail("one softmax slab (%" PRIu32 " x %llu bytes) does not fit a %" PRIu32
                      "-byte scratchpad tile",
                      p.len, static_cast<unsigned long long>(inner), buffer);
    p.input = op.inputs[0];
    p.output = op.outputs[0];
    p.outer = static_cast<uint32_t>(outer);
    p.inner = static_cast<uint32_t>(inner);
    p.slabTile = static_cast<uint32_t>(std::min<uint64_t>(outer, buffer / slab));
    p.multiplier = sp.multiplier;
    p.leftShift = sp.leftShift;
    p.diffMin = sp.diffMin;
    return FwStatus::okStatus();
}

}  // namespace

FwStatus sameDataType(const Checker& c, const char* what, std::initializer_list<const OperandDesc*> tensors,
                      OpPlan* plan) {
    const uint32_t type = (*tensors.begin())->type;
    for (const OperandDesc* d : tensors) {
        if (d->type != type)
            return c.fail("%s must all have the same type (%" PRIu32 " vs %" PRIu32 ")", what, type, d->type);
    }
    plan->signedIn = plan->signedOut = type == hal::kTensorQuant8AsymmSigned;
    return FwStatus::okStatus();
}

FwStatus sameQuantization(const Checker& c, const OperandDesc& input, const OperandDesc& output,
                          const char* what) {
    if (input.scale != output.scale || input.zeroPoint != output.zeroPoint)
        return c.fail("output scale %g / zero point %" PRId32 " differ from the input's %g / %" PRId32
                      " (%s does not requantize)",
                      output.scale, output.zeroPoint, input.scale, input.zeroPoint, what);
    return FwStatus::okStatus();
}

int32_t readI32(const uint8_t* p, uint32_t i) {
    return static_cast<int32_t>(p[4 * i] | (uint32_t{p[4 * i + 1]} << 8) | (uint32_t{p[4 * i + 2]} << 16) |
                                (uint32_t{p[4 * i + 3]} << 24));
}

const char* operationName(uint32_t type) {
    switch (type) {
        case hal::kOpAdd:
            return "ADD";
        case hal::kOpConv2d:
            return "CONV_2D";
        case hal::kOpDepthwiseConv2d:
            return "DEPTHWISE_CONV_2D";
        case hal::kOpGroupedConv2d:
            return "GROUPED_CONV_2D";
        case hal::kOpTransposeConv2d:
            return "TRANSPOSE_CONV_2D";
        case hal::kOpFullyConnected:
            return "FULLY_CONNECTED";
        case hal::kOpSub:
            return "SUB";
        case hal::kOpPad:
            return "PAD";
        case hal::kOpPadV2:
            return "PAD_V2";
        case hal::kOpMul:
            return "MUL";
        case hal::kOpMaximum:
            return "MAXIMUM";
        case hal::kOpMinimum:
            return "MINIMUM";
        case hal::kOpAveragePool2d:
            return "AVERAGE_POOL_2D";
        case hal::kOpMaxPool2d:
            return "MAX_POOL_2D";
        case hal::kOpConcatenation:
            return "CONCATENATION";
        case hal::kOpLogistic:
            return "LOGISTIC";
        case hal::kOpRelu:
            return "RELU";
        case hal::kOpRelu1:
            return "RELU1";
        case hal::kOpRelu6:
            return "RELU6";
        case hal::kOpReshape:
            return "RESHAPE";
        case hal::kOpTanh:
            return "TANH";
        case hal::kOpSqueeze:
            return "SQUEEZE";
        case hal::kOpHardSwish:
            return "HARD_SWISH";
        case hal::kOpSoftmax:
            return "SOFTMAX";
        case hal::kOpPrelu:
            return "PRELU";
        case hal::kOpTranspose:
            return "TRANSPOSE";
        case hal::kOpSpaceToDepth:
            return "SPACE_TO_DEPTH";
        case hal::kOpDepthToSpace:
            return "DEPTH_TO_SPACE";
        case hal::kOpStridedSlice:
            return "STRIDED_SLICE";
        case hal::kOpResizeBilinear:
            return "RESIZE_BILINEAR";
        case hal::kOpResizeNearest:
            return "RESIZE_NEAREST_NEIGHBOR";
        case hal::kOpMean:
            return "MEAN";
        case hal::kOpQuantize:
            return "QUANTIZE";
        case hal::kOpDequantize:
            return "DEQUANTIZE";
        default:
            return "operation";
    }
}

ByteMap byteMapOf(uint32_t operationType) {
    switch (operationType) {
        case hal::kOpLogistic:
            return ByteMap::kLogistic;
        case hal::kOpRelu:
            return ByteMap::kRelu;
        case hal::kOpRelu1:
            return ByteMap::kRelu1;
        case hal::kOpRelu6:
            return ByteMap::kRelu6;
        case hal::kOpTanh:
            return ByteMap::kTanh;
        case hal::kOpHardSwish:
            return ByteMap::kHardSwish;
        default:
            return ByteMap::kCopy;
    }
}

uint64_t tensorElements(const OperandDesc& d) {
    uint64_t n = 1;
    for (uint32_t i = 0; i < d.rank && i < kMaxRank; ++i) {
        if (__builtin_mul_overflow(n, uint64_t{d.dims[i]}, &n)) return UINT64_MAX;
    }
    return n;
}

uint64_t tensorBytes(const OperandDesc& d) {
    const uint64_t n = tensorElements(d);
    if (d.type != hal::kTensorFloat32) return n;
    return n > UINT64_MAX / 4 ? UINT64_MAX : n * 4;
}

const uint8_t* constantData(const CompileTarget& target, const OperandDesc& d) {
    if (d.value != nullptr) return d.value;  // came inside the message (model_decoder.cpp checked it)
    if (target.dram == nullptr || d.dataAddr < target.hostWindowBase || d.dataAddr > target.dramSize ||
        d.dataLength > target.dramSize - d.dataAddr) {
        return nullptr;
    }
    return target.dram + d.dataAddr;
}

FwStatus planOperation(const CompileTarget& target, const ModelDesc& model, uint32_t opIndex, OpPlan* plan) {
    if (opIndex >= model.operationCount)
        return FwStatus::make(Code::kInvalidArgument, "operation %" PRIu32 " of %" PRIu32 "", opIndex,
                              model.operationCount);
    const Checker c{target, model, opIndex, model.operations[opIndex]};
    FwStatus st = c.operandIndexes();
    if (!st.ok()) return st;
    *plan = OpPlan{};
    plan->type = c.op.type;
    switch (c.op.type) {
        case hal::kOpConv2d:
        case hal::kOpDepthwiseConv2d:
        case hal::kOpGroupedConv2d:
            return planConv(c, plan);
        case hal::kOpTransposeConv2d:
            return planTransposeConv(c, plan);
        case hal::kOpFullyConnected:
            return planFc(c, plan);
        case hal::kOpTranspose:
            return planTranspose(c, plan);
        case hal::kOpSpaceToDepth:
        case hal::kOpDepthToSpace:
            return planSpaceDepth(c, plan);
        case hal::kOpStridedSlice:
            return planStridedSlice(c, plan);
        case hal::kOpResizeBilinear:
        case hal::kOpResizeNearest:
            return planResize(c, plan);
        case hal::kOpMean:
            return planMean(c, plan);
        case hal::kOpQuantize:
        case hal::kOpDequantize:
            return planConvert(c, plan);
        case hal::kOpAveragePool2d:
        case hal::kOpMaxPool2d:
            return planPool(c, plan);
        case hal::kOpReshape:
        case hal::kOpSqueeze:
            return planReshape(c, plan);
        case hal::kOpConcatenation:
            return planConcat(c, plan);
        case hal::kOpPad:
        case hal::kOpPadV2:
            return planPad(c, plan);
        case hal::kOpSoftmax:
            return planSoftmax(c, plan);
        default:
            if (hal::isBinaryOp(c.op.type)) return planBinary(c, plan);
            if (hal::isLutOp(c.op.type)) return planLut(c, plan);
            return FwStatus::make(Code::kInvalidArgument,
                                  "operation %" PRIu32 ": operation type %" PRIu32
                                  " is not supported by the NPU",
                                  opIndex, c.op.type);
    }
}

uint32_t tilingCandidates(const CompileTarget& target, const OpPlan& plan, MacTiling* out) {
    if (!hal::isConvOp(plan.type) && plan.type != hal::kOpFullyConnected) return 0;
    const MacTiling greedy = hal::isConvOp(plan.type) ? plan.conv.tiling : plan.fc.tiling;
    const uint32_t cout = hal::isConvOp(plan.type) ? plan.conv.coutGroup() : plan.fc.units;
    uint32_t n = 0;
    auto add = [&](uint32_t cT, uint32_t m) {
        if (n == kMaxTilingCandidates || cT == 0 || m == 0 || m > maxRowTile(target, plan, cT)) return;
        for (uint32_t i = 0; i < n; ++i) {
            if (out[i].coutTile == cT && out[i].rowTile == m) return;
        }
        out[n++] = {cT, m};
    };
    add(greedy.coutTile, greedy.rowTile);
    // The planner's split for weight/compute overlap (greedyTiling) is a guess from byte counts:
    // the whole-width tile it split is measured too.
    const uint64_t k = hal::isConvOp(plan.type) ? plan.conv.taps() : plan.fc.inputSize;
    if (greedy.coutTile < cout && chooseCoutTile(target, k, cout) == cout) {
        const uint32_t rows = maxRowTile(target, plan, cout);
        add(cout, rows);
        add(cout, (rows + 1) / 2);  // its input load overlaps compute, unlike a resident input
        add(cout, (rows + 3) / 4);
        // and a split twice as wide (fewer tiles: less per-tile overhead, more of the first exposed)
        const uint32_t wider = static_cast<uint32_t>(alignUp(2ull * greedy.coutTile, target.arrayCols));
        if (wider < cout) add(wider, maxRowTile(target, plan, wider));
    }
    // Narrower channel tiles (more rows fit beside their weights), then shorter row tiles (a
    // shorter pipeline fill, more tiles to overlap): the trade-offs the greedy choice ignores.
    const uint32_t minWidth = std::min(greedy.coutTile, target.arrayCols);
    for (uint32_t cT : {greedy.coutTile, (greedy.coutTile + 1) / 2, (greedy.coutTile + 3) / 4}) {
        if (cT < minWidth) continue;
        cT = std::min(cT, cout);
        if (hal::isConvOp(plan.type) && plan.conv.depthwise) cT -= cT % plan.conv.multiplier;  // whole groups
        const uint32_t rows = maxRowTile(target, plan, cT);
        add(cT, rows);
        add(cT, (rows + 1) / 2);
        add(cT, (rows + 3) / 4);
    }
    return n;
}

void applyTiling(OpPlan* plan, const MacTiling& tiling) {
    if (hal::isConvOp(plan->type)) plan->conv.tiling = tiling;
    if (plan->type == hal::kOpFullyConnected) plan->fc.tiling = tiling;
}

bool channelMultiplier(const OpPlan& plan, uint32_t channel, QuantizedMultiplier* out) {
    if (plan.channelScales == nullptr) return false;
    const double real = static_cast<double>(plan.inputScale) *
                        static_cast<double>(plan.channelScales[channel]) /
                        static_cast<double>(plan.outputScale);
    return quantizeMultiplier(real, out);
}

FwStatus checkOperation(const CompileTarget& target, const ModelDesc& model, uint32_t opIndex) {
    OpPlan plan;
    return planOperation(target, model, opIndex, &plan);
}

}  // namespace npu::fw
