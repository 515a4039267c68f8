// MEAN over any axes: MEAN tiles (ISA 1.2), the vector unit's float path, which dequantizes,
// sums exactly, divides and requantizes as the reference does. The input is described as at most
// two kept and two reduced strided dimensions (the axes' runs after merging neighbours).
#include <algorithm>
#include <cstring>

#include "blob_writer.h"
#include "data_ops.h"
#include "op_check.h"

namespace npu::fw {

namespace {

struct Group {
    uint64_t count = 1, stride = 1;
    bool reduced = false;
};

// The input's dimensions (size-1 ones dropped) merged into runs of kept or reduced axes.
uint32_t groupsOf(const OperandDesc& input, const bool* reduced, Group* groups) {
    uint32_t n = 0;
    uint64_t stride = 1;
    Group g[kMaxRank];
    for (uint32_t k = input.rank; k-- > 0;) {  // innermost first
        if (input.dims[k] != 1) {
            if (n > 0 && g[n - 1].reduced == reduced[k]) {
                g[n - 1].count *= input.dims[k];
            } else {
                g[n++] = {input.dims[k], stride, reduced[k]};
            }
        }
        stride *= input.dims[k];
    }
    for (uint32_t i = 0; i < n; ++i) groups[i] = g[n - 1 - i];  // outermost first
    return n;
}

// Kept and reduced runs into the plan's (outer, inner) x (count1, count2); false if there are
// more than two of either.
bool assignGroups(const Group* groups, uint32_t n, MeanPlan& p) {
    uint32_t kept = 0, reduced = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const Group& g = groups[i];
        if (g.reduced) {
            if (reduced == 2) return false;
            (reduced++ == 0 ? p.count1 : p.count2) = static_cast<uint32_t>(g.count);
            (reduced == 1 ? p.stride1 : p.stride2) = static_cast<uint32_t>(g.stride);
        } else {
            if (kept == 2) return false;
            (kept++ == 0 ? p.outer : p.inner) = static_cast<uint32_t>(g.count);
            (kept == 1 ? p.outerStride : p.innerStride) = static_cast<uint32_t>(g.stride);
        }
    }
    if (kept == 1 && p.outerStride == 1) {  // a single innermost kept run is the inner one
        p.inner = p.outer;
        p.innerStride = p.outerStride;
        p.outer = 1;
        p.outerStride = 0;
    }
    return true;
}

// One reduced run ([outer] reduced [inner], inner contiguous): tiles of the box: `innerTile` kept inner
// elements (the contiguous ones) of `outerTile` outer ones, with all `count1` reduced elements of each;
// double-buffered.
FwStatus meanTiling(const Checker& c, MeanPlan& p) {
    const uint32_t half = c.target.scratchpadBytes / 2 / 64 * 64;
    const uint64_t outputs = uint64_t{p.outer} * p.inner;
    if (p.count2 > 1) {  // two reduced runs: the whole input in one tile
        if (align(p.inputBytes, 64) + outputs > c.target.scratchpadBytes)
            return c.fail(
                "the input (%llu bytes, reduced over two separate runs of axes) does not fit the %" PRIu32
                "-byte scratchpad",
                static_cast<unsigned long long>(p.inputBytes), c.target.scratchpadBytes);
        return FwStatus::okStatus();
    }
    const uint64_t window = uint64_t{p.count1} + 1;  // one output's inputs and the output byte
    if (window + 64 > half)
        return c.fail("%" PRIu32 " reduced elements per output do not fit half the %" PRIu32
                      "-byte scratchpad",
                      p.count1, c.target.scratchpadBytes);
    p.tiled = true;
    p.innerTile = static_cast<uint32_t>(std::min<uint64_t>(p.inner, (half - 64) / window));
    p.outerTile = p.innerTile < p.inner
                      ? 1
                      : static_cast<uint32_t>(std::min<uint64_t>(p.outer, (half - 64) / (window * p.inner)));
    return FwStatus::okStatus();
}

}  // namespace

FwStatus planMean(const Checker& c, OpPlan* plan) {
    MeanPlan& p = plan->mean;
    if (c.op.inputCount != 3) return c.fail("has %" PRIu32 " inputs; MEAN takes 3", c.op.inputCount);
    FwStatus st = c.dataTensor(0, "input", 1, 4);
    if (!st.ok() || !(st = c.outputTensor(4)).ok()) return st;
    const OperandDesc& input = c.in(0);
    const OperandDesc& output = c.out(0);
    if (!(st = sameDataType(c, "input and output", {&input, &output}, plan)).ok()) return st;
    if (!(st = c.constantTensor(1, "axes", hal::kTensorInt32, 1)).ok()) return st;
    int32_t keepDims = 0;
    if (!(st = c.scalar(2, hal::kInt32, &keepDims)).ok()) return st;
    bool reduced[kMaxRank] = {};
    const uint8_t* axes = constantData(c.target, c.in(1));
    const int32_t rank = static_cast<int32_t>(input.rank);
    for (uint32_t j = 0; j < c.in(1).dims[0]; ++j) {
        const int32_t a = readI32(axes, j);
        if (a < -rank || a >= rank) return c.fail("axis %" PRId32 " out of range for rank %" PRId32, a, rank);
        reduced[a < 0 ? a + rank : a] = true;
    }
    uint32_t dims[kMaxRank] = {}, outRank = 0;
    for (uint32_t k = 0; k < input.rank; ++k) {
        if (!reduced[k] || keepDims > 0) dims[outRank++] = reduced[k] ? 1 : input.dims[k];
    }
    if (outRank == 0) dims[outRank++] = 1;
    bool same = output.rank == outRank;
    for (uint32_t k = 0; same && k < outRank; ++k) same = output.dims[k] == dims[k];
    if (!same)
        return c.fail("output shape (rank %" PRIu32 ") is not the reduced shape (rank %" PRIu32 ")",
                      output.rank, outRank);
    Group groups[kMaxRank];
    const uint32_t n = groupsOf(input, reduced, groups);
    if (!assignGroups(groups, n, p))
        return c.fail("the reduced axes form more than two separate runs (the MEAN command takes two)");
    const uint64_t terms = uint64_t{p.count1} * p.count2;
    if (terms > isa::mean::kMaxTerms)
        return c.fail("%llu elements per mean; the exact float sum takes at most %llu",
                      static_cast<unsigned long long>(terms),
                      static_cast<unsigned long long>(isa::mean::kMaxTerms));
    p.input = c.op.inputs[0];
    p.output = c.op.outputs[0];
    p.inputBytes = tensorElements(input);
    p.scaleIn = input.scale;
    p.scaleOut = output.scale;
    p.zpIn = input.zeroPoint;
    p.zpOut = output.zeroPoint;
    return meanTiling(c, p);
}

namespace {

// The command's fixed fields: scales, zero points and the reduced axes' walk.
isa::MeanDesc meanDesc(const MeanPlan& p) {
    isa::MeanDesc d;
    std::memcpy(&d.scaleInBits, &p.scaleIn, 4);
    std::memcpy(&d.scaleOutBits, &p.scaleOut, 4);
    d.zpIn = p.zpIn;
    d.zpOut = p.zpOut;
    d.count1 = p.count1;
    d.stride1 = p.stride1;
    d.count2 = p.count2;
    d.stride2 = p.stride2;
    return d;
}

// The whole input in the scratchpad: load, one MEAN, store.
void emitWholeMean(BlobWriter& w, const MeanPlan& p, isa::MeanDesc d, uint32_t flags, const TensorRef& in,
                   const TensorRef& out) {
    isa::DmaBox load;
    load.innerBytes = static_cast<uint32_t>(p.inputBytes);
    w.dma(Opcode::kDmaLoad, in, load);
    d.outer = p.outer;
    d.outerStride = p.outerStride;
    d.inner = p.inner;
    d.innerStride = p.innerStride;
    d.outAddr = static_cast<uint32_t>(align(p.inputBytes, 64));
    w.emit(isa::makePush(Queue::kLoad, Queue::kCompute));
    w.emit(isa::makePop(Queue::kLoad, Queue::kCompute));
    w.emit(isa::makeMean(d, flags));
    w.emit(isa::makePush(Queue::kCompute, Queue::kStore));
    w.emit(isa::makePop(Queue::kCompute, Queue::kStore));
    isa::DmaBox store;
    store.sramAddr = d.outAddr;
    store.innerBytes = p.outer * p.inner;
    w.dma(Opcode::kDmaStore, out, store);
}

// A tiled MEAN's tiles (outerTile x innerTile outputs, inner tile major) and its scratchpad:
// each half holds an input tile, then its output tile.
struct MeanTile {
    uint32_t o0, ot, i0, it;
};
struct MeanTiling {
    const MeanPlan& p;
    uint32_t half, inCap, innerTiles, outerTiles;
    MeanTiling(const CompileTarget& target, const MeanPlan& plan)
        : p(plan),
          half(target.scratchpadBytes / 2 / 64 * 64),
          inCap(static_cast<uint32_t>(align(uint64_t{plan.outerTile} * plan.innerTile * plan.count1, 64))),
          innerTiles((plan.inner + plan.innerTile - 1) / plan.innerTile),
          outerTiles((plan.outer + plan.outerTile - 1) / plan.outerTile) {}
    uint32_t inBuf(uint32_t t) const { return t % 2 == 0 ? 0 : half; }
    uint32_t outBuf(uint32_t t) const { return inBuf(t) + inCap; }
    MeanTile tile(uint32_t t) const {
        MeanTile x;
        x.i0 = (t % innerTiles) * p.innerTile;
        x.it = std::min(p.innerTile, p.inner - x.i0);
        x.o0 = (t / innerTiles) * p.outerTile;
        x.ot = std::min(p.outerTile, p.outer - x.o0);
        return x;
    }
    // Tile t's input, [ot][count1][it] from the input's strides.
    isa::DmaBox inputBox(uint32_t t) const {
        const MeanTile x = tile(t);
        isa::DmaBox b;
        b.dramOffset = uint64_t{x.o0} * p.outerStride + x.i0;
        b.sramAddr = inBuf(t);
        b.innerBytes = p.inner > 1 ? x.it : p.count1;
        b.rows = p.inner > 1 ? p.count1 : x.ot;
        b.dramRowStride = p.inner > 1 ? p.stride1 : p.outerStride;
        b.sramRowStride = b.innerBytes;
        b.planes = p.inner > 1 ? x.ot : 1;
        b.dramPlaneStride = p.outerStride;
        b.sramPlaneStride = p.count1 * x.it;
        return b;
    }
    isa::DmaBox outputBox(uint32_t t) const {
        const MeanTile x = tile(t);
        isa::DmaBox b;
        b.dramOffset = uint64_t{x.o0} * p.inner + x.i0;
        b.sramAddr = outBuf(t);
        b.innerBytes = x.it;
        b.rows = x.ot;
        b.dramRowStride = p.inner;
        b.sramRowStride = x.it;
        return b;
    }
};

}  // namespace

void emitMean(BlobWriter& w, const CompileTarget& target, const OpPlan& plan, const TensorRef& in,
              const TensorRef& out) {
    const MeanPlan& p = plan.mean;
    const isa::MeanDesc d = meanDesc(p);
    const uint32_t flags = plan.signedIn ? isa::mean::kFlagSigned : 0u;
    if (!p.tiled) {
        emitWholeMean(w, p, d, flags, in, out);
        return;
    }
    const MeanTiling tiling(target, p);
    emitPipeline(
        w, tiling.outerTiles * tiling.innerTiles,
        [&](uint32_t t) { w.dma(Opcode::kDmaLoad, in, tiling.inputBox(t)); },
        [&](uint32_t t) {
            const MeanTile x = tiling.tile(t);
            isa::MeanDesc m = d;
            m.ifmAddr = tiling.inBuf(t);
            m.outer = x.ot;
            m.outerStride = p.count1 * x.it;
            m.inner = x.it;
            m.innerStride = 1;
            m.stride1 = p.inner > 1 ? x.it : 1;
            m.outAddr = tiling.outBuf(t);
            w.emit(isa::makeMean(m, flags));
        },
        [&](uint32_t t) { w.dma(Opcode::kDmaStore, out, tiling.outputBox(t)); });
}

}  // namespace npu::fw
