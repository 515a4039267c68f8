// TRANSPOSE, SPACE_TO_DEPTH, DEPTH_TO_SPACE and STRIDED_SLICE: each is one GatherPlan, a strided
// walk of the input in output order, run by the DMA alone (load a tile with the input's strides
// into the scratchpad, store it contiguously into the output), with no compute.
#include <algorithm>

#include "blob_writer.h"
#include "data_ops.h"
#include "op_check.h"

namespace npu::fw {

namespace {

// The common head of every gather operation: input of rank minRank..4, one output, the same
// type and quantization.
FwStatus copyOperands(const Checker& c, uint32_t minRank, OpPlan* plan) {
    FwStatus st = c.dataTensor(0, "input", minRank, 4);
    if (!st.ok() || !(st = c.outputTensor(4)).ok()) return st;
    if (!(st = sameDataType(c, "input and output", {&c.in(0), &c.out(0)}, plan)).ok()) return st;
    return sameQuantization(c, c.in(0), c.out(0), "a copy");
}

FwStatus expectOutputDims(const Checker& c, const uint32_t* dims, uint32_t rank) {
    const OperandDesc& out = c.out(0);
    if (out.rank != rank)
        return c.fail("output rank %" PRIu32 ", the operation produces %" PRIu32, out.rank, rank);
    for (uint32_t k = 0; k < rank; ++k) {
        if (out.dims[k] != dims[k])
            return c.fail("output dimension %" PRIu32 " is %" PRIu32 ", the operation produces %" PRIu32, k,
                          out.dims[k], dims[k]);
    }
    return FwStatus::okStatus();
}

// Row-major element strides of a tensor.
void stridesOf(const OperandDesc& d, uint64_t* strides) {
    uint64_t s = 1;
    for (uint32_t k = d.rank; k-- > 0;) {
        strides[k] = s;
        s *= d.dims[k];
    }
}

// Drops unit dimensions and merges a dimension into its inner neighbour where the input walks
// the two as one; a gather of one element keeps one dimension.
void collapse(GatherPlan& g) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < g.rank; ++k) {
        if (g.dims[k] == 1) continue;
        g.dims[n] = g.dims[k];
        g.stride[n] = g.stride[k];
        ++n;
    }
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; ++k) {
        if (m > 0 && g.stride[m - 1] == g.stride[k] * g.dims[k]) {
            g.dims[m - 1] *= g.dims[k];
            g.stride[m - 1] = g.stride[k];
            continue;
        }
        g.dims[m] = g.dims[k];
        g.stride[m] = g.stride[k];
        ++m;
    }
    if (m == 0) {
        g.dims[0] = 1;
        g.stride[0] = 1;
        m = 1;
    }
    g.rank = m;
}

// Two buffers; a tile's rows stay within the DMA's per-command row count.
uint32_t gatherBuffer(const CompileTarget& target) {
    return std::min<uint32_t>(target.scratchpadBytes / 2 / 64 * 64, 1u << 23);
}

// The gather in tiles of at most one buffer: the innermost run of E contiguous input bytes
// (E = 1 when the innermost dimension is strided) and the next two dimensions (levels 0 and 1,
// where the input walks them forwards) form one 3-D DMA box; the other dimensions are looped
// over. A tile is a contiguous piece of the output.
struct GatherTiling {
    uint32_t e = 1, levels = 0;
    uint32_t n[kMaxGatherDims + 2] = {};
    int64_t s[kMaxGatherDims + 2] = {};
    uint32_t colChunk = 1, rowChunk = 1, planeChunk = 1, colTiles = 1, rowTiles = 1, planeTiles = 1;
    uint64_t outerCount = 1;
    uint64_t perOuter() const { return uint64_t{colTiles} * rowTiles * planeTiles; }
    uint64_t tiles() const { return outerCount * perOuter(); }
};

GatherTiling gatherTiling(const GatherPlan& g, uint32_t buffer) {
    GatherTiling t;
    const bool contiguous = g.stride[g.rank - 1] == 1;
    t.e = contiguous ? g.dims[g.rank - 1] : 1;
    for (uint32_t k = g.rank - (contiguous ? 1 : 0); k-- > 0;) {  // innermost first
        t.n[t.levels] = g.dims[k];
        t.s[t.levels++] = g.stride[k];
    }
    for (; t.levels < 2; ++t.levels) {
        t.n[t.levels] = 1;
        t.s[t.levels] = 0;
    }
    const bool box0 = t.s[0] >= 0, box1 = box0 && t.s[1] >= 0;  // the DMA's strides are unsigned
    t.colChunk = std::min(t.e, buffer);
    t.rowChunk = t.e > buffer || !box0 ? 1 : std::min(t.n[0], buffer / t.e);
    t.planeChunk =
        t.e > buffer || t.rowChunk < t.n[0] || !box1 ? 1 : std::min(t.n[1], buffer / (t.e * t.n[0]));
    t.colTiles = (t.e + t.colChunk - 1) / t.colChunk;
    t.rowTiles = (t.n[0] + t.rowChunk - 1) / t.rowChunk;
    t.planeTiles = (t.n[1] + t.planeChunk - 1) / t.planeChunk;
    for (uint32_t l = 2; l < t.levels; ++l) t.outerCount *= t.n[l];
    return t;
}

FwStatus setGather(const Checker& c, OpPlan* plan, const uint32_t* dims, const int64_t* strides,
                   uint32_t rank, uint64_t base) {
    GatherPlan& g = plan->gather;
    g.input = c.op.inputs[0];
    g.output = c.op.outputs[0];
    g.rank = rank;
    g.base = base;
    for (uint32_t k = 0; k < rank; ++k) {
        g.dims[k] = dims[k];
        g.stride[k] = strides[k];
    }
    collapse(g);
    const uint64_t tiles = gatherTiling(g, gatherBuffer(c.target)).tiles();
    if (tiles > kMaxGatherTiles)
        return c.fail(
            "the copy takes %llu DMA tiles (limit %llu): its innermost dimension is walked backwards",
            static_cast<unsigned long long>(tiles), static_cast<unsigned long long>(kMaxGatherTiles));
    return FwStatus::okStatus();
}

}  // namespace

FwStatus planTranspose(const Checker& c, OpPlan* plan) {
    if (c.op.inputCount < 1 || c.op.inputCount > 2)
        return c.fail("has %" PRIu32 " inputs; TRANSPOSE takes 1 or 2", c.op.inputCount);
    FwStatus st = copyOperands(c, 1, plan);
    if (!st.ok()) return st;
    const OperandDesc& input = c.in(0);
    int32_t perm[4] = {};
    for (uint32_t k = 0; k < input.rank; ++k) perm[k] = static_cast<int32_t>(input.rank - 1 - k);
    if (c.op.inputCount == 2 && c.inputExists(1)) {
        if (!(st = c.constantTensor(1, "perm", hal::kTensorInt32, 1)).ok()) return st;
        if (c.in(1).dims[0] != input.rank)
            return c.fail("perm has %" PRIu32 " elements for an input of rank %" PRIu32, c.in(1).dims[0],
                          input.rank);
        const uint8_t* values = constantData(c.target, c.in(1));
        for (uint32_t k = 0; k < input.rank; ++k) perm[k] = readI32(values, k);
    }
    bool seen[4] = {};
    uint64_t inStride[4] = {};
    int64_t stride[4] = {};
    uint32_t dims[4] = {};
    stridesOf(input, inStride);
    for (uint32_t k = 0; k < input.rank; ++k) {
        const int32_t p = perm[k];
        if (p < 0 || p >= static_cast<int32_t>(input.rank) || seen[p])
            return c.fail("perm element %" PRIu32 " is %" PRId32 ": not a permutation of 0..%" PRIu32, k, p,
                          input.rank - 1);
        seen[p] = true;
        dims[k] = input.dims[p];
        stride[k] = static_cast<int64_t>(inStride[p]);
    }
    if (!(st = expectOutputDims(c, dims, input.rank)).ok()) return st;
    return setGather(c, plan, dims, stride, input.rank, 0);
}

// The reference's index map: deep channel (dy * block + dx) * wideC + wc of deep pixel (y, x) is
// wide pixel (y * block + dy, x * block + dx), channel wc. Written as six output dimensions in
// the output's memory order, each with its input stride.
FwStatus planSpaceDepth(const Checker& c, OpPlan* plan) {
    const bool toDepth = c.op.type == hal::kOpSpaceToDepth;
    if (c.op.inputCount < 2 || c.op.inputCount > 3)
        return c.fail("has %" PRIu32 " inputs; %s takes 2 or 3", c.op.inputCount, operationName(c.op.type));
    FwStatus st = copyOperands(c, 4, plan);
    if (!st.ok()) return st;
    int32_t block = 0, layout = 0;
    if (!(st = c.scalar(1, hal::kInt32, &block)).ok()) return st;
    if (c.op.inputCount == 3 && !(st = c.scalar(2, hal::kBool, &layout)).ok()) return st;
    if (block < 1) return c.fail("block size %" PRId32 " must be >= 1", block);
    const bool nchw = layout != 0;
    const OperandDesc& input = c.in(0);
    const uint64_t bs = static_cast<uint32_t>(block);
    const uint32_t n = input.dims[0], h = input.dims[nchw ? 2 : 1], w = input.dims[nchw ? 3 : 2],
                   ch = input.dims[nchw ? 1 : 3];
    if (toDepth && (h % bs != 0 || w % bs != 0))
        return c.fail("height %" PRIu32 " and width %" PRIu32 " must be multiples of the block size %" PRIu64,
                      h, w, bs);
    if (!toDepth && ch % (bs * bs) != 0)
        return c.fail("depth %" PRIu32 " must be a multiple of the block size squared (%" PRIu64 ")", ch,
                      bs * bs);
    // The deep and the wide tensor's shapes (n, h, w, c) and row-major strides (b, y, x, c).
    const uint64_t deep[4] = {n, toDepth ? h / bs : h, toDepth ? w / bs : w, toDepth ? ch * bs * bs : ch};
    const uint64_t wide[4] = {n, toDepth ? h : h * bs, toDepth ? w : w * bs, toDepth ? ch : ch / (bs * bs)};
    auto strides = [&](const uint64_t* s, uint64_t* out) {  // b, y, x, c
        out[3] = nchw ? s[1] * s[2] : 1;
        out[2] = nchw ? 1 : s[3];
        out[1] = nchw ? s[2] : s[2] * s[3];
        out[0] = s[1] * s[2] * s[3];
    };
    uint64_t ds[4], ws[4];
    strides(deep, ds);
    strides(wide, ws);
    const uint32_t outDims[4] = {
        static_cast<uint32_t>(toDepth ? deep[0] : wide[0]),
        static_cast<uint32_t>(nchw ? (toDepth ? deep[3] : wide[3]) : (toDepth ? deep[1] : wide[1])),
        static_cast<uint32_t>(nchw ? (toDepth ? deep[1] : wide[1]) : (toDepth ? deep[2] : wide[2])),
        static_cast<uint32_t>(nchw ? (toDepth ? deep[2] : wide[2]) : (toDepth ? deep[3] : wide[3]))};
    if (!(st = expectOutputDims(c, outDims, 4)).ok()) return st;
    const uint32_t b32 = static_cast<uint32_t>(bs), dy = b32, dx = b32;
    const uint32_t wc = static_cast<uint32_t>(wide[3]), dh = static_cast<uint32_t>(deep[1]),
                   dw = static_cast<uint32_t>(deep[2]);
    uint32_t dims[6];
    int64_t stride[6];
    if (toDepth) {  // output deep, input wide: (b, y, x, dy, dx, wc) of the deep side
        const uint64_t sy = bs * ws[1], sx = bs * ws[2];
        if (!nchw) {
            const uint32_t d[6] = {n, dh, dw, dy, dx, wc};
            const int64_t s[6] = {int64_t(ws[0]), int64_t(sy),    int64_t(sx),
                                  int64_t(ws[1]), int64_t(ws[2]), int64_t(ws[3])};
            std::copy(d, d + 6, dims);
            std::copy(s, s + 6, stride);
        } else {
            const uint32_t d[6] = {n, dy, dx, wc, dh, dw};
            const int64_t s[6] = {int64_t(ws[0]), int64_t(ws[1]), int64_t(ws[2]),
                                  int64_t(ws[3]), int64_t(sy),    int64_t(sx)};
            std::copy(d, d + 6, dims);
            std::copy(s, s + 6, stride);
        }
    } else {  // output wide, input deep: (b, y, dy, x, dx, wc) of the wide side
        const uint64_t sdy = bs * wc * ds[3], sdx = wc * ds[3];
        if (!nchw) {
            const uint32_t d[6] = {n, dh, dy, dw, dx, wc};
            const int64_t s[6] = {int64_t(ds[0]), int64_t(ds[1]), int64_t(sdy),
                                  int64_t(ds[2]), int64_t(sdx),   int64_t(ds[3])};
            std::copy(d, d + 6, dims);
            std::copy(s, s + 6, stride);
        } else {
            const uint32_t d[6] = {n, wc, dh, dy, dw, dx};
            const int64_t s[6] = {int64_t(ds[0]), int64_t(ds[3]), int64_t(ds[1]),
                                  int64_t(sdy),   int64_t(ds[2]), int64_t(sdx)};
            std::copy(d, d + 6, dims);
            std::copy(s, s + 6, stride);
        }
    }
    return setGather(c, plan, dims, stride, 6, 0);
}

// STRIDED_SLICE with the reference's (TFLite's) begin/end masks, negative indices and strides,
// and shrink axes.
FwStatus planStridedSlice(const Checker& c, OpPlan* plan) {
    if (c.op.inputCount != 7) return c.fail("has %" PRIu32 " inputs; STRIDED_SLICE takes 7", c.op.inputCount);
    FwStatus st = copyOperands(c, 1, plan);
    if (!st.ok()) return st;
    const OperandDesc& input = c.in(0);
    const char* roles[3] = {"begin", "end", "strides"};
    const uint8_t* values[3] = {};
    for (uint32_t i = 0; i < 3; ++i) {
        if (!(st = c.constantTensor(1 + i, roles[i], hal::kTensorInt32, 1)).ok()) return st;
        if (c.in(1 + i).dims[0] != input.rank)
            return c.fail("%s has %" PRIu32 " elements for an input of rank %" PRIu32, roles[i],
                          c.in(1 + i).dims[0], input.rank);
        values[i] = constantData(c.target, c.in(1 + i));
    }
    int32_t masks[3] = {};  // begin, end, shrink
    for (uint32_t i = 0; i < 3; ++i) {
        if (!(st = c.scalar(4 + i, hal::kInt32, &masks[i])).ok()) return st;
    }
    uint64_t inStride[4] = {}, base = 0;
    int64_t stride[4] = {};
    uint32_t dims[4] = {}, outDims[4] = {}, outRank = 0;
    stridesOf(input, inStride);
    for (uint32_t k = 0; k < input.rank; ++k) {
        const int64_t d = input.dims[k], s = readI32(values[2], k);
        const bool shrink = ((masks[2] >> k) & 1) != 0;
        if (s == 0) return c.fail("stride of dimension %" PRIu32 " is 0", k);
        if (shrink && s < 0) return c.fail("shrunk dimension %" PRIu32 " has a negative stride", k);
        // The reference's index rules: forwards clamp to [0, d], backwards to [-1, d - 1].
        auto clampIndex = [&](int64_t v) {
            return s > 0 ? std::clamp<int64_t>(v, 0, d) : std::clamp<int64_t>(v, -1, d - 1);
        };
        int64_t b = readI32(values[0], k), e = readI32(values[1], k);
        if (b < 0) b += d;
        b = ((masks[0] >> k) & 1) != 0 ? (s > 0 ? 0 : d - 1) : clampIndex(b);
        if (e < 0) e += d;
        e = ((masks[1] >> k) & 1) != 0 ? (s > 0 ? d : -1) : clampIndex(e);
        const int64_t count =
            s > 0 ? std::max<int64_t>(0, (e - b + s - 1) / s) : std::max<int64_t>(0, (b - e - s - 1) / -s);
        if (shrink && count != 1)
            return c.fail("shrunk dimension %" PRIu32 " selects %" PRId64 " elements, not 1", k, count);
        if (count == 0) return c.fail("dimension %" PRIu32 " selects no element (zero-sized output)", k);
        dims[k] = static_cast<uint32_t>(count);
        // A single element's stride is never used (and s may be as large as INT32_MAX).
        stride[k] = count > 1 ? s * static_cast<int64_t>(inStride[k]) : 0;
        base += static_cast<uint64_t>(b) * inStride[k];  // b >= 0 when anything is selected
        if (!shrink) outDims[outRank++] = dims[k];
    }
    if (outRank == 0) outDims[outRank++] = 1;  // NNAPI: a fully shrunk result has shape [1]
    if (!(st = expectOutputDims(c, outDims, outRank)).ok()) return st;
    return setGather(c, plan, dims, stride, input.rank, base);
}

void emitGather(BlobWriter& w, const CompileTarget& target, const GatherPlan& g, const TensorRef& in,
                const TensorRef& out) {
    const uint32_t buffer = gatherBuffer(target);
    const GatherTiling x = gatherTiling(g, buffer);
    const uint64_t perOuter = x.perOuter();
    struct Tile {
        isa::DmaBox load, store;
    };
    auto tileOf = [&](uint32_t t, uint32_t sram) {
        uint64_t rest = t / perOuter, outIndex = 0, outScale = 1;
        int64_t inOffset = static_cast<int64_t>(g.base);
        const uint64_t local = t % perOuter;
        for (uint32_t l = 2; l < x.levels; ++l) {  // outer index, innermost level first
            const uint64_t i = rest % x.n[l];
            rest /= x.n[l];
            inOffset += static_cast<int64_t>(i) * x.s[l];
            outIndex += i * outScale;
            outScale *= x.n[l];
        }
        const uint32_t c0 = static_cast<uint32_t>(local % x.colTiles) * x.colChunk;
        const uint32_t r0 = static_cast<uint32_t>(local / x.colTiles % x.rowTiles) * x.rowChunk;
        const uint32_t p0 = static_cast<uint32_t>(local / x.colTiles / x.rowTiles) * x.planeChunk;
        Tile tile;
        isa::DmaBox& ld = tile.load;
        ld.dramOffset = static_cast<uint64_t>(inOffset + int64_t{p0} * x.s[1] + int64_t{r0} * x.s[0] + c0);
        ld.sramAddr = sram;
        ld.innerBytes = std::min(x.colChunk, x.e - c0);
        ld.rows = std::min(x.rowChunk, x.n[0] - r0);
        ld.planes = std::min(x.planeChunk, x.n[1] - p0);
        ld.dramRowStride = ld.rows > 1 ? static_cast<uint32_t>(x.s[0]) : 0;  // forwards where rows > 1
        ld.dramPlaneStride = ld.planes > 1 ? static_cast<uint32_t>(x.s[1]) : 0;
        ld.sramRowStride = ld.innerBytes;
        ld.sramPlaneStride = ld.innerBytes * ld.rows;
        isa::DmaBox& st = tile.store;
        st.dramOffset = ((outIndex * x.n[1] + p0) * x.n[0] + r0) * x.e + c0;
        st.sramAddr = sram;
        st.innerBytes = ld.innerBytes * ld.rows * ld.planes;
        return tile;
    };
    emitCopyPipeline(
        w, static_cast<uint32_t>(x.tiles()),
        [&](uint32_t t) { w.dma(Opcode::kDmaLoad, in, tileOf(t, (t % 2) * buffer).load); },
        [&](uint32_t t) { w.dma(Opcode::kDmaStore, out, tileOf(t, (t % 2) * buffer).store); });
}

}  // namespace npu::fw
