// RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR: RESIZE tiles (ISA 1.2) of output rows x channels;
// each tile loads the input rows its output rows sample (hwsim/isa/resample.h, the same index
// arithmetic the unit uses), all columns, double-buffered.
#include <algorithm>
#include <cstring>

#include "blob_writer.h"
#include "data_ops.h"
#include "hwsim/isa/resample.h"
#include "op_check.h"

namespace npu::fw {

namespace {

constexpr uint32_t kMax16 = 0xFFFF;

// An upper bound of the input rows m consecutive output rows sample: their source coordinates
// span at most (m - 1) * scale, plus the bilinear neighbour, rounding, and one row of margin on
// each side (the compiler loads that margin, so a control core whose float rounding differs in
// the last place still covers every row the unit reads).
uint32_t inputRowsBound(const ResizePlan& p, uint32_t m) {
    double scale = static_cast<double>(p.inH) / p.outH;
    if (p.outH > 1) scale = std::max(scale, static_cast<double>(p.inH - 1) / (p.outH - 1));
    const uint64_t rows = static_cast<uint64_t>(static_cast<double>(m - 1) * scale) + 5;
    return static_cast<uint32_t>(std::min<uint64_t>(rows, p.inH));
}

bool resizeTileFits(const CompileTarget& t, const ResizePlan& p, uint32_t rows, uint32_t channels) {
    const uint64_t in = align(uint64_t{inputRowsBound(p, rows)} * p.inW * channels, 64);
    const uint64_t out = align(uint64_t{rows} * p.outW * channels, 64);
    return 2 * (in + out) <= t.scratchpadBytes;
}

// The output size from INT32 sizes or FLOAT32 scales (floor(in * scale), as the reference).
FwStatus outputSize(const Checker& c, uint32_t inW, uint32_t inH, uint32_t* outW, uint32_t* outH) {
    if (c.inputExists(1) && c.in(1).type == hal::kFloat32) {
        float scale[2] = {};
        for (uint32_t i = 0; i < 2; ++i) {
            const OperandDesc& d = c.in(1 + i);
            const uint8_t* p = constantData(c.target, d);
            if (d.type != hal::kFloat32 || p == nullptr || d.dataLength != 4 ||
                (d.lifetime != hal::kConstantCopy && d.lifetime != hal::kConstantReference))
                return c.fail("input %" PRIu32 " (scale) must be a constant FLOAT32 like input 1", 1 + i);
            std::memcpy(&scale[i], p, 4);
            if (!(scale[i] > 0)) return c.fail("scale (input %" PRIu32 ") must be positive", 1 + i);
        }
        const double w = static_cast<double>(inW) * scale[0], h = static_cast<double>(inH) * scale[1];
        if (!(w >= 1 && h >= 1 && w <= kMax16 + 1.0 && h <= kMax16 + 1.0))
            return c.fail("scaled output size %gx%g outside 1..%" PRIu32, w, h, kMax16);
        *outW = static_cast<uint32_t>(w);
        *outH = static_cast<uint32_t>(h);
        return FwStatus::okStatus();
    }
    int32_t w = 0, h = 0;
    FwStatus st = c.scalar(1, hal::kInt32, &w);
    if (!st.ok() || !(st = c.scalar(2, hal::kInt32, &h)).ok()) return st;
    if (w <= 0 || h <= 0) return c.fail("output size %" PRId32 "x%" PRId32 " is not positive", w, h);
    *outW = static_cast<uint32_t>(w);
    *outH = static_cast<uint32_t>(h);
    return FwStatus::okStatus();
}

}  // namespace

FwStatus planResize(const Checker& c, OpPlan* plan) {
    const OperationDesc& op = c.op;
    ResizePlan& p = plan->resize;
    if (op.inputCount < 3 || op.inputCount > 6)
        return c.fail("has %" PRIu32 " inputs; %s takes 3 to 6", op.inputCount, operationName(op.type));
    FwStatus st = c.dataTensor(0, "input", 4, 4);
    if (!st.ok() || !(st = c.outputTensor(4)).ok()) return st;
    const OperandDesc& input = c.in(0);
    const OperandDesc& output = c.out(0);
    if (!(st = sameDataType(c, "input and output", {&input, &output}, plan)).ok()) return st;
    if (!(st = sameQuantization(c, input, output, "resizing")).ok()) return st;
    int32_t flags[3] = {};  // layout, align_corners, half_pixel_centers
    for (uint32_t i = 3; i < op.inputCount; ++i) {
        if (!(st = c.scalar(i, hal::kBool, &flags[i - 3])).ok()) return st;
    }
    p.nchw = flags[0] != 0;
    p.alignCorners = flags[1] != 0;
    p.halfPixel = flags[2] != 0;
    if (p.alignCorners && p.halfPixel) return c.fail("align_corners and half_pixel_centers are both set");
    p.input = op.inputs[0];
    p.output = op.outputs[0];
    p.bilinear = op.type == hal::kOpResizeBilinear;
    p.batch = input.dims[0];
    p.inH = input.dims[p.nchw ? 2 : 1];
    p.inW = input.dims[p.nchw ? 3 : 2];
    p.channels = input.dims[p.nchw ? 1 : 3];
    if (!(st = outputSize(c, p.inW, p.inH, &p.outW, &p.outH)).ok()) return st;
    if (!(st = c.outputImage(p.nchw, p.batch, p.outH, p.outW, p.channels)).ok()) return st;
    if (p.inH > kMax16 || p.inW > kMax16 || p.outH > kMax16 || p.outW > kMax16)
        return c.fail("a dimension exceeds the RESIZE command's 16-bit fields (%" PRIu32 ")", kMax16);
    auto fits = [&](uint32_t rows, uint32_t channels) { return resizeTileFits(c.target, p, rows, channels); };
    if (rowChannelTile(p.channels, p.outH, fits, &p.rowTile, &p.channelTile)) return FwStatus::okStatus();
    return c.fail("one output row (%" PRIu32 " wide) of one channel and its input rows (%" PRIu32
                  " wide) do not fit the %" PRIu32 "-byte scratchpad",
                  p.outW, p.inW, c.target.scratchpadBytes);
}

void emitResize(BlobWriter& w, const CompileTarget& /*target*/, const OpPlan& plan, const TensorRef& in,
                const TensorRef& out) {
    const ResizePlan& p = plan.resize;
    const uint32_t m = p.rowTile, rowTiles = (p.outH + m - 1) / m;
    const uint32_t chanTiles = (p.channels + p.channelTile - 1) / p.channelTile;
    const uint32_t inCap =
        static_cast<uint32_t>(align(uint64_t{inputRowsBound(p, m)} * p.inW * p.channelTile, 64));
    const uint32_t outCap = static_cast<uint32_t>(align(uint64_t{m} * p.outW * p.channelTile, 64));
    const uint32_t inBuf[2] = {0, inCap}, outBuf[2] = {2 * inCap, 2 * inCap + outCap};
    const float scaleH = isa::resizeScale(p.inH, p.outH, p.alignCorners);
    struct Tile : ImageTile {
        uint32_t first, end;
    };
    auto tileOf = [&](uint32_t t) {
        Tile x;
        static_cast<ImageTile&>(x) = imageTile(t, m, p.outH, p.channelTile, p.channels);
        // Source coordinates are monotone in the output row: the first and last rows bound them.
        auto rowsOf = [&](uint32_t y, uint32_t* lo, uint32_t* hi) {
            if (p.bilinear) {
                const isa::BilinearTap tap = isa::bilinearSource(y, p.inH, scaleH, p.halfPixel);
                *lo = tap.lo;
                *hi = tap.hi;
            } else {
                *lo = *hi = isa::nearestSource(y, p.inH, scaleH, p.alignCorners, p.halfPixel);
            }
        };
        uint32_t lo0, hi0, lo1, hi1;
        rowsOf(x.r0, &lo0, &hi0);
        rowsOf(x.r0 + x.rows - 1, &lo1, &hi1);
        const uint32_t lo = std::min(lo0, lo1), hi = std::max(hi0, hi1);
        x.first = lo > 0 ? lo - 1 : 0;
        x.end = std::min(p.inH, hi + 2);
        x.end = std::min(x.end, x.first + inputRowsBound(p, m));
        return x;
    };
    const uint32_t flags = (plan.signedIn ? isa::resize::kFlagSigned : 0u) |
                           (p.alignCorners ? isa::resize::kFlagAlignCorners : 0u) |
                           (p.halfPixel ? isa::resize::kFlagHalfPixel : 0u);
    emitPipeline(
        w, p.batch * rowTiles * chanTiles,
        [&](uint32_t t) {
            const Tile x = tileOf(t);
            w.dma(Opcode::kDmaLoad, in,
                  imageTileBox(p.nchw, p.channels, x.b, x.c0, x.ct, x.first, x.end - x.first, p.inH, p.inW,
                               inBuf[t % 2]));
        },
        [&](uint32_t t) {
            const Tile x = tileOf(t);
            isa::ResizeDesc d;
            d.mode = p.bilinear ? isa::resize::kModeBilinear : isa::resize::kModeNearest;
            d.ifmAddr = inBuf[t % 2];
            d.ifmH = x.end - x.first;
            d.ifmC = x.ct;
            d.ifmRowStride = p.inW * x.ct;
            d.ifmFirstRow = x.first;
            d.fullInH = p.inH;
            d.fullInW = p.inW;
            d.fullOutH = p.outH;
            d.fullOutW = p.outW;
            d.ofmFirstRow = x.r0;
            d.ofmH = x.rows;
            d.outAddr = outBuf[t % 2];
            w.emit(isa::makeResize(d, flags));
        },
        [&](uint32_t t) {
            const Tile x = tileOf(t);
            w.dma(Opcode::kDmaStore, out,
                  imageTileBox(p.nchw, p.channels, x.b, x.c0, x.ct, x.r0, x.rows, p.outH, p.outW,
                               outBuf[t % 2]));
        });
}

}  // namespace npu::fw
