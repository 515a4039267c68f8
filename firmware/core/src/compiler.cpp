// Code generation: HAL model -> blob (see blob_format.h). Two passes over the same emitter: the
// first counts commands, relocations and data bytes, the second writes them into an image of
// exactly that size, so the compiler needs no growable buffers.
#include "compiler.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "blob_format.h"
#include "blob_writer.h"
#include "op_plan.h"

namespace npu::fw {

namespace {

constexpr uint32_t kLutBytes = 256;

// emitMacOp's layout: channel tiles of coutTile output channels; the scratchpad holds the
// weight buffer(s), two input tiles and two output tiles; the accumulators are split in two.
// Pair i (channel tile major, rowTiles pairs per channel tile) is one load / compute / store.
struct MacPair {
    uint32_t rowTile, c0, ct, wAddr;  // its row tile, channels [c0, c0 + ct), weight buffer
};
struct MacLayout {
    uint32_t k, cout, channelBase, rowTiles, coutTile, channelTiles;
    bool depthwise;  // DEPTHWISE_CONV_2D's filter [1][kh][kw][cout] is already K-major (k = kh*kw taps)
    // TRANSPOSE_CONV_2D runs the kernel flipped in both spatial dimensions: tap t of kh*kw reads
    // tap kh*kw - 1 - t (k = taps x cin).
    bool flip;
    uint32_t cin;
    bool doubleWeights;
    // One row tile (the whole output) and an input shared by every channel tile (not depthwise):
    // the input is loaded once, into buffer 0, and stays there for every channel tile.
    bool residentIn;
    uint64_t weightCap;
    uint32_t inBuf[2], outBuf[2], accHalf;

    MacLayout(const CompileTarget& t, const OpPlan& plan, uint32_t k_, uint32_t cout_, uint32_t channelBase_,
              uint32_t rowTiles_, uint64_t inCap, uint64_t outCap)
        : k(k_), cout(cout_), channelBase(channelBase_), rowTiles(rowTiles_) {
        coutTile = hal::isConvOp(plan.type) ? plan.conv.tiling.coutTile : plan.fc.tiling.coutTile;
        channelTiles = (cout + coutTile - 1) / coutTile;
        depthwise = hal::isConvOp(plan.type) && plan.conv.depthwise;
        flip = hal::isConvOp(plan.type) && plan.conv.transposed;
        cin = flip ? plan.conv.cin : 1;
        doubleWeights = doubleBufferedWeights(t, coutTile, k, cout);
        residentIn = rowTiles == 1 && !depthwise;
        weightCap = weightTileBytes(coutTile, k);
        const uint64_t weightsEnd = weightBufferBytes(t, coutTile, k, cout);
        inBuf[0] = static_cast<uint32_t>(weightsEnd);
        inBuf[1] = static_cast<uint32_t>(weightsEnd + inCap);
        outBuf[0] = static_cast<uint32_t>(weightsEnd + 2 * inCap);
        outBuf[1] = static_cast<uint32_t>(weightsEnd + 2 * inCap + outCap);
        accHalf = t.accumulatorBytes / 4 / 2;
    }
    // The filter tap a weight row kk reads (flipped for TRANSPOSE_CONV_2D).
    uint32_t source(uint32_t kk) const { return flip ? (k / cin - 1 - kk / cin) * cin + kk % cin : kk; }
    MacPair pair(uint32_t i) const {
        const uint32_t j = i / rowTiles;
        MacPair x;
        x.rowTile = i % rowTiles;
        x.c0 = j * coutTile;
        x.ct = std::min(coutTile, cout - x.c0);
        x.wAddr = doubleWeights ? static_cast<uint32_t>((j % 2) * weightCap) : 0;
        return x;
    }
};

struct BinaryTile;
struct PoolTiling;

// planMemory's working state. Per operand: the last operation that reads it, whether it has a
// value yet, and whose bytes it uses (an alias's root); and the temporaries whose bytes are live.
struct MemoryPlanState {
    uint32_t* lastUse = nullptr;
    bool* defined = nullptr;
    uint32_t* aliasRoot = nullptr;
    uint32_t* live = nullptr;
    uint32_t liveCount = 0;
    // Frees the bytes of every live tensor whose last reader is operation o or earlier.
    void retire(uint32_t o) {
        for (uint32_t l = 0; l < liveCount;) {
            if (lastUse[live[l]] <= o) {
                live[l] = live[--liveCount];
            } else {
                ++l;
            }
        }
    }
};

class ModelCompiler {
public:
    ModelCompiler(const CompileTarget& t, const ModelDesc& m, const MacTiling* tilings)
        : target_(t), model_(m), tilings_(tilings) {}

    FwStatus run(Arena& scratch, const uint8_t** image, uint64_t* size, size_t* usedBeforeImage);
    FwStatus measure(Arena& scratch, CompiledSize* size);

private:
    struct Layout {
        uint64_t cmdOffset = 0, metaOffset = 0, metaBytes = 0, dataOffset = 0, total = 0;
    };
    FwStatus planAll(Arena& scratch);
    Layout layoutOf(const BlobWriter& counter) const;
    FwStatus checkModel();
    FwStatus planMemory(Arena& scratch);
    FwStatus startMemoryPlan(Arena& scratch, MemoryPlanState* st);
    FwStatus checkInputsWritten(const MemoryPlanState& st, uint32_t o) const;
    FwStatus placeOutput(MemoryPlanState& st, uint32_t o);
    uint64_t firstFit(const MemoryPlanState& st, uint64_t bytes) const;
    FwStatus planFusion(Arena& scratch);
    bool fusableAdd(uint32_t convOp, uint32_t addOp, const uint32_t* producer) const;
    bool aliasesInput(uint32_t opIndex) const;
    void emitAll(BlobWriter& w, uint8_t* opTable);
    TensorRef ref(BlobWriter& w, uint32_t operand);
    template <typename LoadIn, typename Compute, typename StoreOut, typename Fused>
    void emitMacOp(BlobWriter& w, const OpPlan& plan, uint32_t k, uint32_t cout, uint32_t channelBase,
                   const OperandDesc& filter, const OperandDesc& bias, uint32_t rowTiles, uint64_t inCap,
                   uint64_t outCap, LoadIn loadIn, Compute compute, StoreOut storeOut, Fused fused);
    void emitMacWeights(BlobWriter& w, const MacLayout& L, const uint8_t* weights, const uint8_t* biases,
                        const MacPair& x);
    void emitMacRequant(BlobWriter& w, const OpPlan& plan, const MacLayout& L, const MacPair& x, uint32_t acc,
                        uint32_t rows, uint32_t outAddr);
    void emitConv(BlobWriter& w, const OpPlan& plan, uint32_t fusedAdd);
    void emitFusedAddTile(BlobWriter& w, const OpPlan& conv, uint32_t fusedAdd, uint32_t aAddr,
                          uint32_t bAddr, uint32_t outAddr, uint32_t rows, uint32_t ct);
    void emitFc(BlobWriter& w, const OpPlan& plan);
    void emitAdd(BlobWriter& w, const OpPlan& plan);
    void emitBinaryTile(BlobWriter& w, const OpPlan& plan, const BinaryTile& x, const isa::AddDesc& d,
                        uint32_t tableA, uint32_t tableB);
    void emitPool(BlobWriter& w, const OpPlan& plan);
    void emitPoolTile(BlobWriter& w, const OpPlan& plan, const PoolTiling& tiling, uint32_t t);
    void emitCopy(BlobWriter& w, const OpPlan& plan);
    void emitPad(BlobWriter& w, const OpPlan& plan);
    void emitSoftmax(BlobWriter& w, const OpPlan& plan);
    void emitTable(BlobWriter& w, ByteMap map, const OperandDesc& in, const OperandDesc& out,
                   uint32_t sramAddr);

    const CompileTarget& target_;
    const ModelDesc& model_;
    const MacTiling* tilings_;  // per operation, or null: the planner's choice (coutTile 0: too)
    OpPlan* plans_ = nullptr;
    // Per operation: the ADD fused into this CONV_2D's store (planFusion), or kNoFusion; and,
    // for that ADD, the CONV_2D that emits it (it emits nothing itself).
    static constexpr uint32_t kNoFusion = UINT32_MAX;
    uint32_t* fusedAdd_ = nullptr;
    uint32_t* fusedInto_ = nullptr;
    TensorRef* refs_ = nullptr;        // per operand: IO and activation placement
    uint64_t* constOffset_ = nullptr;  // per operand: data offset + 1 once copied (per pass)
    uint64_t activationBytes_ = 0;
};

FwStatus ModelCompiler::checkModel() {
    const ModelDesc& m = model_;
    if (m.operationCount == 0 || m.operationCount > kMaxOperations) {
        return FwStatus::make(Code::kInvalidArgument,
                              "model has %" PRIu32 " operations (supported 1..%" PRIu32 ")", m.operationCount,
                              kMaxOperations);
    }
    if (m.inputCount > kMaxIo || m.outputCount == 0 || m.outputCount > kMaxIo) {
        return FwStatus::make(Code::kInvalidArgument,
                              "model has %" PRIu32 " inputs and %" PRIu32 " outputs (limit %" PRIu32
                              " each, >= 1 output)",
                              m.inputCount, m.outputCount, kMaxIo);
    }
    if (m.referencedSubgraphCount != 0) {
        return FwStatus::make(Code::kInvalidArgument,
                              "model references %" PRIu32 " subgraphs (control flow is not supported)",
                              m.referencedSubgraphCount);
    }
    for (uint32_t io = 0; io < m.inputCount + m.outputCount; ++io) {
        const bool isOutput = io >= m.inputCount;
        const uint32_t index = isOutput ? m.outputIndexes[io - m.inputCount] : m.inputIndexes[io];
        const char* what = isOutput ? "output" : "input";
        if (index >= m.operandCount)
            return FwStatus::make(Code::kInvalidArgument,
                                  "model %s %" PRIu32 " names operand %" PRIu32 " of %" PRIu32 "", what, io,
                                  index, m.operandCount);
        const OperandDesc& d = m.operands[index];
        if (d.lifetime != (isOutput ? hal::kSubgraphOutput : hal::kSubgraphInput)) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "model %s operand %" PRIu32 " has lifetime %" PRIu32 "", what, index,
                                  d.lifetime);
        }
        // TENSOR_FLOAT32 only as QUANTIZE's input or DEQUANTIZE's output, TENSOR_QUANT8_SYMM only
        // as DEQUANTIZE's input (their planner checks it).
        const bool typeOk =
            hal::isQuant8Data(d.type) || d.type == hal::kTensorFloat32 || d.type == hal::kTensorQuant8Symm;
        if (!typeOk || d.rank == 0 || tensorElements(d) == 0 || tensorBytes(d) > UINT32_MAX) {
            return FwStatus::make(
                Code::kInvalidArgument,
                "model %s operand %" PRIu32
                ": only fully specified TENSOR_QUANT8_ASYMM(_SIGNED) inputs/outputs (TENSOR_FLOAT32 "
                "for QUANTIZE / DEQUANTIZE), under 4 GiB",
                what, index);
        }
    }
    return FwStatus::okStatus();
}

// Inputs and outputs live in the host window (relocated at execute); temporaries get offsets in
// the activation area, reused once their last reader has run (first fit over live tensors).
FwStatus ModelCompiler::planMemory(Arena& scratch) {
    MemoryPlanState st;
    if (FwStatus status = startMemoryPlan(scratch, &st); !status.ok()) return status;
    const ModelDesc& m = model_;
    for (uint32_t o = 0; o < m.operationCount; ++o) {
        FwStatus status = checkInputsWritten(st, o);
        if (status.ok() && fusedInto_[o] == kNoFusion)
            status = placeOutput(st, o);  // else with its convolution
        if (!status.ok()) return status;
        st.retire(o);
    }
    for (uint32_t i = 0; i < m.outputCount; ++i) {
        if (!st.defined[m.outputIndexes[i]])
            return FwStatus::make(Code::kInvalidArgument,
                                  "model output %" PRIu32 " (operand %" PRIu32 ") is written by no operation",
                                  i, m.outputIndexes[i]);
    }
    return FwStatus::okStatus();
}

// planMemory's scratch, the IO operands' places, and each operand's last reader.
FwStatus ModelCompiler::startMemoryPlan(Arena& scratch, MemoryPlanState* st) {
    const ModelDesc& m = model_;
    refs_ = scratch.allocateArray<TensorRef>(m.operandCount);
    constOffset_ = scratch.allocateArray<uint64_t>(m.operandCount);
    st->lastUse = scratch.allocateArray<uint32_t>(m.operandCount);
    st->defined = scratch.allocateArray<bool>(m.operandCount);
    st->live = scratch.allocateArray<uint32_t>(m.operandCount);
    st->aliasRoot = scratch.allocateArray<uint32_t>(m.operandCount);
    if (refs_ == nullptr || constOffset_ == nullptr || st->lastUse == nullptr || st->defined == nullptr ||
        st->live == nullptr || st->aliasRoot == nullptr) {
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "compiler scratch exhausted (%" PRIu32 " operands)", m.operandCount);
    }
    for (uint32_t i = 0; i < m.operandCount; ++i) st->aliasRoot[i] = i;
    for (uint32_t i = 0; i < m.inputCount; ++i) {
        refs_[m.inputIndexes[i]] = {kRegionIo, 0, false, i};
        st->defined[m.inputIndexes[i]] = true;
    }
    for (uint32_t i = 0; i < m.outputCount; ++i) refs_[m.outputIndexes[i]] = {kRegionIo, 0, true, i};
    for (uint32_t o = 0; o < m.operationCount; ++o) {
        const OperationDesc& op = m.operations[o];
        for (uint32_t i = 0; i < op.inputCount; ++i) st->lastUse[op.inputs[i]] = o;
        st->lastUse[op.outputs[0]] = std::max(st->lastUse[op.outputs[0]], o);
    }
    return FwStatus::okStatus();
}

// Operation o reads no tensor that no earlier operation (or the model's input) wrote.
FwStatus ModelCompiler::checkInputsWritten(const MemoryPlanState& st, uint32_t o) const {
    const OperationDesc& op = model_.operations[o];
    for (uint32_t i = 0; i < op.inputCount; ++i) {
        const OperandDesc& d = model_.operands[op.inputs[i]];
        const bool tensorData = d.lifetime == hal::kTemporary || d.lifetime == hal::kSubgraphOutput ||
                                d.lifetime == hal::kSubgraphInput;
        const bool data =
            hal::isQuant8Data(d.type) || d.type == hal::kTensorFloat32 || d.type == hal::kTensorQuant8Symm;
        if (tensorData && data && !st.defined[op.inputs[i]]) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "operation %" PRIu32 " reads operand %" PRIu32
                                  " before any operation writes it",
                                  o, op.inputs[i]);
        }
    }
    return FwStatus::okStatus();
}

// Places operation o's output: the bytes of its input (an alias), or the lowest offset of the
// activation area that overlaps no live tensor (a temporary); IO stays in the host window.
FwStatus ModelCompiler::placeOutput(MemoryPlanState& st, uint32_t o) {
    const ModelDesc& m = model_;
    const OperationDesc& op = m.operations[o];
    // A convolution with a fused ADD writes the ADD's output, not its own (which only the
    // ADD reads): that output is placed now, clear of every tensor live while the
    // convolution reads its input.
    uint32_t out = op.outputs[0];
    if (fusedAdd_[o] != kNoFusion) {
        st.defined[out] = true;
        out = m.operations[fusedAdd_[o]].outputs[0];
    }
    if (st.defined[out])
        return FwStatus::make(Code::kInvalidArgument,
                              "operation %" PRIu32 " writes operand %" PRIu32 ", which already has a value",
                              o, out);
    st.defined[out] = true;
    if (aliasesInput(o)) {  // RESHAPE / SQUEEZE of a temporary or input: the same bytes
        const uint32_t root = st.aliasRoot[op.inputs[0]];
        refs_[out] = refs_[op.inputs[0]];
        st.aliasRoot[out] = root;
        st.lastUse[root] =
            std::max(st.lastUse[root], st.lastUse[out]);  // keep the bytes while either is read
        plans_[o].copy.alias = true;
    } else if (m.operands[out].lifetime == hal::kTemporary) {
        const uint64_t bytes = align(tensorBytes(m.operands[out]), 64);
        const uint64_t offset = firstFit(st, bytes);
        refs_[out] = {kRegionActivation, offset, false, 0};
        activationBytes_ = std::max(activationBytes_, offset + bytes);
        st.live[st.liveCount++] = out;
    }
    return FwStatus::okStatus();
}

// The lowest activation offset where `bytes` overlap no live tensor.
uint64_t ModelCompiler::firstFit(const MemoryPlanState& st, uint64_t bytes) const {
    uint64_t offset = 0;
    bool moved = true;
    while (moved) {
        moved = false;
        for (uint32_t l = 0; l < st.liveCount; ++l) {
            const TensorRef& r = refs_[st.live[l]];
            const uint64_t end = r.offset + align(tensorBytes(model_.operands[st.live[l]]), 64);
            if (offset < end && r.offset < offset + bytes) {
                offset = end;
                moved = true;
            }
        }
    }
    return offset;
}

// What a fused operation adds to emitMacOp's pipeline: load(i, rowTile, c0, ct) in pair i's
// load phase, afterRequant(i, outAddr, rows, ct) after its REQUANT.
template <typename Load, typename After>
struct FusedHooks {
    Load load;
    After afterRequant;
};
template <typename Load, typename After>
FusedHooks<Load, After> makeFusedHooks(Load load, After after) {
    return {load, after};
}

// The scratchpad of a CONV_2D tile pipeline (emitMacOp): the weight buffers, two input tiles,
// two output tiles, and, with a fused ADD, two tiles of its other input.
struct ConvBuffers {
    uint64_t weights = 0, inCap = 0, outCap = 0;
    uint64_t fusedEnd() const { return weights + 2 * inCap + 4 * outCap; }
};
ConvBuffers convBuffers(const CompileTarget& t, const ConvPlan& p) {
    const uint32_t m = p.tiling.rowTile;
    const uint64_t effH = uint64_t{p.kh - 1} * p.dilY + 1;
    const uint32_t inDepth = p.depthwise ? p.tiling.coutTile : p.cinGroup();
    ConvBuffers b;
    b.weights = weightBufferBytes(t, p.tiling.coutTile, p.taps(), p.coutGroup());
    b.inCap = align(std::min<uint64_t>(uint64_t{m - 1} * p.strideY + effH, p.inH) * p.inW * inDepth, 64);
    b.outCap = align(uint64_t{m} * p.outW * p.tiling.coutTile, 64);
    return b;
}

bool sameDims(const OperandDesc& a, const OperandDesc& b) {
    if (a.rank != b.rank) return false;
    for (uint32_t i = 0; i < a.rank; ++i)
        if (a.dims[i] != b.dims[i]) return false;
    return true;
}

// Whether ADD `addOp` can run inside CONV_2D `convOp`'s tiles: the convolution (NHWC, one group,
// not depthwise or transposed) writes a temporary that only this ADD reads, the ADD adds it to a
// tensor of the same shape (no broadcasting) that exists before the convolution runs
// (`producer`: the operation writing each operand, or kNoFusion), and the scratchpad has room
// for two tiles of that tensor beside the convolution's buffers.
bool ModelCompiler::fusableAdd(uint32_t convOp, uint32_t addOp, const uint32_t* producer) const {
    const OpPlan& cp = plans_[convOp];
    const OpPlan& ap = plans_[addOp];
    if (cp.type != hal::kOpConv2d || ap.type != hal::kOpAdd || ap.add.requantA || ap.add.requantB)
        return false;
    const ConvPlan& p = cp.conv;
    if (p.depthwise || p.transposed || p.nchw || p.groups != 1) return false;
    const uint32_t convOut = p.output;
    if (model_.operands[convOut].lifetime != hal::kTemporary || ap.add.a == ap.add.b) return false;
    if (ap.add.a != convOut && ap.add.b != convOut) return false;
    const uint32_t other = ap.add.a == convOut ? ap.add.b : ap.add.a;
    if (producer[other] != kNoFusion && producer[other] >= convOp) return false;
    const OperandDesc& out = model_.operands[ap.add.output];
    if (!sameDims(model_.operands[convOut], out) || !sameDims(model_.operands[other], out)) return false;
    for (uint32_t o = 0; o < model_.operationCount; ++o) {  // the ADD is the only reader
        const OperationDesc& op = model_.operations[o];
        for (uint32_t i = 0; i < op.inputCount; ++i)
            if (op.inputs[i] == convOut && o != addOp) return false;
    }
    return convBuffers(target_, p).fusedEnd() <= target_.scratchpadBytes;
}

// Fuses each residual ADD into the CONV_2D that feeds it (fusableAdd): the convolution's tiles
// are added to the other input's tiles in the scratchpad and stored as the ADD's output, so the
// convolution's output never goes to DRAM and back. Same commands on the same bytes as unfused
// (REQUANT, then ADD), so the result is identical.
FwStatus ModelCompiler::planFusion(Arena& scratch) {
    const ModelDesc& m = model_;
    fusedAdd_ = scratch.allocateArray<uint32_t>(m.operationCount);
    fusedInto_ = scratch.allocateArray<uint32_t>(m.operationCount);
    uint32_t* producer = scratch.allocateArray<uint32_t>(m.operandCount);
    if (fusedAdd_ == nullptr || fusedInto_ == nullptr || producer == nullptr)
        return FwStatus::make(Code::kResourceExhaustedTransient, "compiler scratch exhausted (fusion)");
    for (uint32_t i = 0; i < m.operandCount; ++i) producer[i] = kNoFusion;
    for (uint32_t o = 0; o < m.operationCount; ++o) {
        fusedAdd_[o] = fusedInto_[o] = kNoFusion;
        producer[m.operations[o].outputs[0]] = o;
    }
    for (uint32_t a = 0; a < m.operationCount; ++a) {
        if (plans_[a].type != hal::kOpAdd) continue;
        for (uint32_t input : {plans_[a].add.a, plans_[a].add.b}) {
            const uint32_t c = producer[input];
            if (c == kNoFusion || fusedAdd_[c] != kNoFusion || fusedInto_[a] != kNoFusion) continue;
            if (!fusableAdd(c, a, producer)) continue;
            fusedAdd_[c] = a;
            fusedInto_[a] = c;
        }
    }
    return FwStatus::okStatus();
}

// A RESHAPE or SQUEEZE whose output is a temporary and whose input is a temporary or a model
// input needs no bytes moved: its output names the input's bytes (row-major either way).
bool ModelCompiler::aliasesInput(uint32_t opIndex) const {
    const OpPlan& plan = plans_[opIndex];
    if (plan.type != hal::kOpReshape && plan.type != hal::kOpSqueeze) return false;
    const uint32_t in = model_.operations[opIndex].inputs[0], out = model_.operations[opIndex].outputs[0];
    const uint32_t inLifetime = model_.operands[in].lifetime;
    return model_.operands[out].lifetime == hal::kTemporary &&
           (inLifetime == hal::kTemporary || inLifetime == hal::kSubgraphInput);
}

TensorRef ModelCompiler::ref(BlobWriter& w, uint32_t operand) {
    const OperandDesc& d = model_.operands[operand];
    if (d.lifetime != hal::kConstantCopy && d.lifetime != hal::kConstantReference) return refs_[operand];
    if (constOffset_[operand] == 0) {
        const uint64_t offset = w.reserveData(d.dataLength);
        if (uint8_t* dst = w.data(offset)) std::memcpy(dst, constantData(target_, d), d.dataLength);
        constOffset_[operand] = offset + 1;
    }
    return {kRegionData, constOffset_[operand] - 1, false, 0};
}

uint32_t macFlags(const OpPlan& plan) {
    return (plan.signedIn ? isa::kMacFlagSignedA : 0u) | (plan.signedWeights ? isa::kMacFlagSignedB : 0u);
}

// Output channels [channelBase, channelBase + cout) of the filter and bias (a GROUPED_CONV_2D
// group; 0 and all of them otherwise); loadIn / compute / storeOut see channels relative to it.
// Load / compute / store pipelines over (channel tile, row tile) pairs, channel tile major. With
// double-buffered weights (doubleBufferedWeights, op_plan.h) one pipeline covers every pair:
// channel tile j's weights go to buffer j % 2 with its first row tile's load, which (the
// pipeline's tokens) waits for the compute of two tiles earlier, so the buffer's previous user,
// channel tile j - 2, is done and tile j's weights load while tile j - 1 computes. With one
// weight buffer each channel tile is a pipeline of its own, after a fence; so is each group.
// With one row tile the input is loaded once per group and stays resident (residentInput,
// op_plan.cpp).
// `fused` (FusedHooks: a fused ADD) adds a load to each pair's load phase, after its input, and
// work after each tile's REQUANT on the compute queue (which must leave plan.vec in the vector
// unit); pair i uses buffers i % 2.
template <typename LoadIn, typename Compute, typename StoreOut, typename Fused>
void ModelCompiler::emitMacOp(BlobWriter& w, const OpPlan& plan, uint32_t k, uint32_t cout,
                              uint32_t channelBase, const OperandDesc& filter, const OperandDesc& bias,
                              uint32_t rowTiles, uint64_t inCap, uint64_t outCap, LoadIn loadIn,
                              Compute compute, StoreOut storeOut, Fused fused) {
    const MacLayout L(target_, plan, k, cout, channelBase, rowTiles, inCap, outCap);
    const uint8_t* weights = constantData(target_, filter);
    const uint8_t* biases = constantData(target_, bias);
    w.emit(isa::makeVecParams(plan.vec));
    const uint32_t perPipeline = L.doubleWeights ? L.channelTiles : 1;
    for (uint32_t firstTile = 0; firstTile < L.channelTiles; firstTile += perPipeline) {
        if (firstTile > 0 || channelBase > 0)
            w.emit(isa::makeFence());  // a weight buffer in use is about to be overwritten
        const uint32_t base = firstTile * rowTiles;
        emitPipeline(
            w, perPipeline * rowTiles,
            [&](uint32_t t) {
                const MacPair x = L.pair(base + t);
                if (x.rowTile == 0) emitMacWeights(w, L, weights, biases, x);
                if (!L.residentIn || base + t == 0) loadIn(x.rowTile, L.inBuf[(base + t) % 2], x.c0, x.ct);
                fused.load(base + t, x.rowTile, x.c0, x.ct);
            },
            [&](uint32_t t) {
                const uint32_t i = base + t;
                const MacPair x = L.pair(i);
                const uint32_t acc = (i % 2) * L.accHalf;
                const uint32_t rows =
                    compute(x.rowTile, L.inBuf[L.residentIn ? 0 : i % 2], x.wAddr, acc, x.ct);
                emitMacRequant(w, plan, L, x, acc, rows, L.outBuf[i % 2]);
                fused.afterRequant(i, L.outBuf[i % 2], rows, x.ct);
            },
            [&](uint32_t t) {
                const MacPair x = L.pair(base + t);
                storeOut(x.rowTile, L.outBuf[(base + t) % 2], x.c0, x.ct);
            });
    }
}

// Weights re-laid out K-major with the tile's output channels contiguous (the array's column
// order), followed by the tile's int32 biases, loaded to the pair's weight buffer.
void ModelCompiler::emitMacWeights(BlobWriter& w, const MacLayout& L, const uint8_t* weights,
                                   const uint8_t* biases, const MacPair& x) {
    const uint32_t k = L.k, c0 = x.c0, ct = x.ct;
    const uint64_t tileBytes = uint64_t{k} * ct + 4ull * ct;
    const uint64_t dataOffset = w.reserveData(tileBytes);
    if (uint8_t* dst = w.data(dataOffset)) {
        for (uint32_t kk = 0; kk < k; ++kk) {
            for (uint32_t co = 0; co < ct; ++co) {
                dst[uint64_t{kk} * ct + co] =
                    L.depthwise ? weights[uint64_t{kk} * L.cout + c0 + co]
                                : weights[uint64_t{L.channelBase + c0 + co} * k + L.source(kk)];
            }
        }
        std::memcpy(dst + uint64_t{k} * ct, biases + 4ull * (L.channelBase + c0), 4ull * ct);
    }
    isa::DmaBox box;
    box.dramOffset = dataOffset;
    box.sramAddr = x.wAddr;
    box.innerBytes = static_cast<uint32_t>(tileBytes);
    w.dma(Opcode::kDmaLoad, {kRegionData, 0, false, 0}, box);
}

// The REQUANT of a pair's accumulators (`rows` rows at `acc`) to `outAddr`, with the bias after
// the pair's weights.
void ModelCompiler::emitMacRequant(BlobWriter& w, const OpPlan& plan, const MacLayout& L, const MacPair& x,
                                   uint32_t acc, uint32_t rows, uint32_t outAddr) {
    const uint32_t ct = x.ct;
    isa::RequantDesc r;
    r.accAddr = acc;
    r.accRowStride = ct;
    r.rows = rows;
    r.cols = ct;
    r.biasAddr = x.wAddr + L.k * ct;
    r.outAddr = outAddr;
    r.outRowStride = ct;
    const uint32_t flags = isa::vec::kFlagHasBias | (plan.signedOut ? isa::vec::kFlagSignedOut : 0u);
    if (plan.channelScales == nullptr) {
        w.emit(isa::makeRequant(r, flags));
        return;
    }
    // Per-channel: the vector unit holds one multiplier, so each output channel is one column
    // requantized under its own VEC_PARAMS.
    for (uint32_t co = 0; co < ct; ++co) {
        isa::VecParams v = plan.vec;
        QuantizedMultiplier qm;
        channelMultiplier(plan, L.channelBase + x.c0 + co, &qm);  // checked by the planner
        v.outMult = qm.multiplier;
        v.outShift = qm.shift;
        w.emit(isa::makeVecParams(v));
        isa::RequantDesc rc = r;
        rc.accAddr = acc + co;
        rc.cols = 1;
        rc.biasAddr = r.biasAddr + 4 * co;
        rc.outAddr = outAddr + co;
        w.emit(isa::makeRequant(rc, flags));
    }
}

// The input tile of a depthwise channel tile [c0, c0 + ct) (whole depth-multiplier groups):
// input rows [first, end) of image b, HWC in the scratchpad with ct channels per pixel, input
// channel c0 / multiplier + i repeated at tile channels i * multiplier + j. Multiplier 1 in
// NHWC is one 2-D copy; otherwise one strided byte-wise copy per j (the DMA replicates, so the
// array runs depth multiplier 1).
void emitDepthwiseLoad(BlobWriter& w, const TensorRef& in, const ConvPlan& p, uint32_t b, uint32_t first,
                       uint32_t end, uint32_t c0, uint32_t ct, uint32_t sram) {
    const uint32_t mult = p.multiplier, ic0 = c0 / mult, ic = ct / mult, pixels = (end - first) * p.inW;
    isa::DmaBox box;
    if (!p.nchw && mult == 1) {
        box.dramOffset = (uint64_t{b} * p.inH + first) * p.inW * p.cin + ic0;
        box.sramAddr = sram;
        box.innerBytes = ct;
        box.rows = pixels;
        box.dramRowStride = p.cin;
        box.sramRowStride = ct;
        w.dma(Opcode::kDmaLoad, in, box);
        return;
    }
    for (uint32_t j = 0; j < mult; ++j) {
        box.sramAddr = sram + j;
        box.innerBytes = 1;
        if (!p.nchw) {  // rows: the tile's input channels of one pixel; planes: pixels
            box.dramOffset = (uint64_t{b} * p.inH + first) * p.inW * p.cin + ic0;
            box.rows = ic;
            box.dramRowStride = 1;
            box.sramRowStride = mult;
            box.planes = pixels;
            box.dramPlaneStride = p.cin;
            box.sramPlaneStride = ct;
        } else {  // rows: pixels of one input channel; planes: the tile's input channels
            box.dramOffset = (uint64_t{b} * p.cin + ic0) * p.inH * p.inW + uint64_t{first} * p.inW;
            box.rows = pixels;
            box.dramRowStride = 1;
            box.sramRowStride = ct;
            box.planes = ic;
            box.dramPlaneStride = p.inH * p.inW;
            box.sramPlaneStride = mult;
        }
        w.dma(Opcode::kDmaLoad, in, box);
    }
}

// The input tile of CONV_2D / GROUPED_CONV_2D group g: input rows [first, end) of image b, the
// group's channels, HWC in the scratchpad. NHWC with one group is one 2-D copy of whole rows; a
// group's channel slice is a box of pixels x channels; NCHW is transposed element by element
// (slow on purpose: narrow bursts).
isa::DmaBox convInputBox(const ConvPlan& p, uint32_t b, uint32_t first, uint32_t end, uint32_t g,
                         uint32_t sram) {
    const uint32_t cinG = p.cinGroup();
    isa::DmaBox box;
    box.sramAddr = sram;
    if (!p.nchw && p.groups == 1) {
        box.dramOffset = (uint64_t{b} * p.inH + first) * p.inW * p.cin;
        box.innerBytes = p.inW * p.cin;
        box.rows = end - first;
        box.dramRowStride = box.sramRowStride = p.inW * p.cin;
    } else if (!p.nchw) {
        box.dramOffset = (uint64_t{b} * p.inH + first) * p.inW * p.cin + uint64_t{g} * cinG;
        box.innerBytes = cinG;
        box.rows = (end - first) * p.inW;
        box.dramRowStride = p.cin;
        box.sramRowStride = cinG;
    } else {
        box.dramOffset = (uint64_t{b} * p.cin + uint64_t{g} * cinG) * p.inH * p.inW + uint64_t{first} * p.inW;
        box.innerBytes = 1;
        box.rows = (end - first) * p.inW;
        box.dramRowStride = 1;
        box.sramRowStride = cinG;
        box.planes = cinG;
        box.dramPlaneStride = p.inH * p.inW;
        box.sramPlaneStride = 1;
    }
    return box;
}

// TRANSPOSE_CONV_2D's input tile: upsampled rows [first, end) of image b (zero points between
// the real pixels, which are `upStride` apart), HWC in the scratchpad. One fill, then the real
// rows inside the tile scattered by the DMA's strides (NHWC: one box; NCHW: one per row).
void emitUpsampledLoad(BlobWriter& w, const TensorRef& in, const ConvPlan& p, uint32_t b, uint32_t first,
                       uint32_t end, int32_t zpIn, uint32_t sram) {
    const uint64_t rowBytes = uint64_t{p.inW} * p.cin;
    isa::DmaBox fill;
    fill.sramAddr = sram;
    fill.innerBytes = static_cast<uint32_t>((end - first) * rowBytes);
    w.emit(isa::makeDma(Opcode::kDmaLoad, fill, isa::dma::kFlagFill, static_cast<uint32_t>(zpIn) & 0xFF));
    const uint32_t sy = p.upStrideY, iy0 = (first + sy - 1) / sy, iy1 = (end - 1) / sy;
    if (iy0 > iy1) return;  // no real row in this tile
    isa::DmaBox box;
    box.rows = p.realInW;
    box.sramRowStride = p.upStrideX * p.cin;
    if (!p.nchw) {
        box.dramOffset = (uint64_t{b} * p.realInH + iy0) * p.realInW * p.cin;
        box.sramAddr = static_cast<uint32_t>(sram + (uint64_t{iy0} * sy - first) * rowBytes);
        box.innerBytes = p.cin;
        box.dramRowStride = p.cin;
        box.planes = iy1 - iy0 + 1;
        box.dramPlaneStride = p.realInW * p.cin;
        box.sramPlaneStride = static_cast<uint32_t>(sy * rowBytes);
        w.dma(Opcode::kDmaLoad, in, box);
        return;
    }
    for (uint32_t iy = iy0; iy <= iy1; ++iy) {
        box.dramOffset = uint64_t{b} * p.cin * p.realInH * p.realInW + uint64_t{iy} * p.realInW;
        box.sramAddr = static_cast<uint32_t>(sram + (uint64_t{iy} * sy - first) * rowBytes);
        box.innerBytes = 1;
        box.dramRowStride = 1;
        box.planes = p.cin;
        box.dramPlaneStride = p.realInH * p.realInW;
        box.sramPlaneStride = 1;
        w.dma(Opcode::kDmaLoad, in, box);
    }
}

// A CONV_2D's tiles: rowTile output rows of one image; tile t's window is the input rows it
// needs, clipped to the image (padding rows are never loaded). A tile whose windows all lie in
// the padding (end == first) gets one row of zero points instead: every tap then adds nothing,
// so its outputs are bias-only through the same REQUANT.
struct ConvWindow {
    uint32_t b, r0, mt, first, end, padTop;  // image, output rows [r0, r0 + mt), input rows
};
struct ConvTiling {
    const ConvPlan& p;
    uint32_t m, tilesPerImage;
    uint64_t effH;
    explicit ConvTiling(const ConvPlan& plan)
        : p(plan),
          m(plan.tiling.rowTile),
          tilesPerImage((plan.outH + plan.tiling.rowTile - 1) / plan.tiling.rowTile),
          effH(uint64_t{plan.kh - 1} * plan.dilY + 1) {}
    ConvWindow window(uint32_t t) const {
        ConvWindow x;
        x.b = t / tilesPerImage;
        x.r0 = (t % tilesPerImage) * m;
        x.mt = std::min(m, p.outH - x.r0);
        const int64_t y0 = int64_t{x.r0} * p.strideY - p.padTop;
        const int64_t y1 = int64_t{x.r0 + x.mt - 1} * p.strideY - p.padTop + static_cast<int64_t>(effH);
        x.first = static_cast<uint32_t>(std::clamp<int64_t>(y0, 0, p.inH));
        x.end = static_cast<uint32_t>(std::clamp<int64_t>(y1, 0, p.inH));
        x.padTop = x.end > x.first ? static_cast<uint32_t>(x.first - y0) : 0;
        return x;
    }
    // The output box of tile t (channels c0..c0+ct of group g) in DRAM, at scratchpad `sram`:
    // where the tile is stored, and where a fused ADD's other input is read.
    isa::DmaBox outputBox(uint32_t t, uint32_t g, uint32_t sram, uint32_t c0, uint32_t ct) const {
        const ConvWindow x = window(t);
        const uint32_t coutG = p.coutGroup();
        isa::DmaBox box;
        box.sramAddr = sram;
        box.rows = x.mt * p.outW;
        if (!p.nchw) {
            box.dramOffset = (uint64_t{x.b} * p.outH + x.r0) * p.outW * p.cout + g * coutG + c0;
            box.innerBytes = ct;
            box.dramRowStride = p.cout;
            box.sramRowStride = ct;
        } else {
            box.dramOffset =
                (uint64_t{x.b} * p.cout + g * coutG + c0) * p.outH * p.outW + uint64_t{x.r0} * p.outW;
            box.innerBytes = 1;
            box.dramRowStride = 1;
            box.sramRowStride = ct;
            box.planes = ct;
            box.dramPlaneStride = p.outH * p.outW;
            box.sramPlaneStride = 1;
        }
        return box;
    }
};

// The input tile of conv tile t (group g, channels [c0, c0 + ct) when depthwise) to `sram`.
void emitConvInput(BlobWriter& w, const OpPlan& plan, const ConvTiling& tiling, const TensorRef& in,
                   uint32_t t, uint32_t g, uint32_t sram, uint32_t c0, uint32_t ct) {
    const ConvPlan& p = plan.conv;
    const ConvWindow x = tiling.window(t);
    if (x.end == x.first) {  // all padding: one row of zero points (see ConvTiling)
        isa::DmaBox fill;
        fill.sramAddr = sram;
        fill.innerBytes = p.inW * (p.depthwise ? ct : p.cinGroup());
        w.emit(isa::makeDma(Opcode::kDmaLoad, fill, isa::dma::kFlagFill,
                            static_cast<uint32_t>(plan.zpIn) & 0xFF));
        return;
    }
    if (p.depthwise) {
        emitDepthwiseLoad(w, in, p, x.b, x.first, x.end, c0, ct, sram);
        return;
    }
    if (p.transposed) {
        emitUpsampledLoad(w, in, p, x.b, x.first, x.end, plan.zpIn, sram);
        return;
    }
    w.dma(Opcode::kDmaLoad, in, convInputBox(p, x.b, x.first, x.end, g, sram));
}

// Conv tile t's CONV (or DW_CONV) from the input at `sram` and the weights at `wAddr` into the
// accumulators at `acc`; returns the accumulator rows it wrote.
uint32_t emitConvTile(BlobWriter& w, const OpPlan& plan, const ConvTiling& tiling, uint32_t t, uint32_t sram,
                      uint32_t wAddr, uint32_t acc, uint32_t ct) {
    const ConvPlan& p = plan.conv;
    const ConvWindow x = tiling.window(t);
    isa::ConvDesc d;
    d.ifmAddr = sram;
    d.ifmH = std::max<uint32_t>(x.end - x.first, 1);
    d.ifmW = p.inW;
    d.ifmC = p.depthwise ? ct : p.cinGroup();
    d.ifmRowStride = p.inW * d.ifmC;
    d.wAddr = wAddr;
    d.kernelH = p.kh;
    d.kernelW = p.kw;
    d.strideY = p.strideY;
    d.strideX = p.strideX;
    d.dilY = p.dilY;
    d.dilX = p.dilX;
    d.padTop = x.padTop;
    d.padLeft = p.padLeft;
    d.ofmH = x.mt;
    d.ofmW = p.outW;
    d.cout = ct;
    d.accAddr = acc;
    d.zpIn = plan.zpIn;
    d.zpW = plan.zpWeights;
    w.emit(p.depthwise ? isa::makeDwConv(d, macFlags(plan)) : isa::makeConv(d, macFlags(plan)));
    return x.mt * p.outW;
}

void ModelCompiler::emitConv(BlobWriter& w, const OpPlan& plan, uint32_t fusedAdd) {
    const ConvPlan& p = plan.conv;
    const ConvTiling tiling(p);
    const ConvBuffers buffers = convBuffers(target_, p);
    const uint64_t inCap = buffers.inCap, outCap = buffers.outCap;
    const bool fused = fusedAdd != kNoFusion;
    const AddPlan* add = fused ? &plans_[fusedAdd].add : nullptr;
    const TensorRef in = ref(w, p.input), out = ref(w, fused ? add->output : p.output);
    // A fused ADD's other input, in two tiles after the output tiles; the convolution's tile is
    // ADD operand a or b as in the model.
    const bool convIsA = fused && add->a == p.output;
    const TensorRef other = fused ? ref(w, convIsA ? add->b : add->a) : TensorRef{};
    const uint64_t otherBuf = buffers.weights + 2 * inCap + 2 * outCap;
    const uint32_t k = static_cast<uint32_t>(p.taps()), coutG = p.coutGroup();
    for (uint32_t g = 0; g < p.groups; ++g)  // g: the group being emitted (GROUPED_CONV_2D; else 0)
        emitMacOp(
            w, plan, k, coutG, g * coutG, model_.operands[p.filter], model_.operands[p.bias],
            p.batch * tiling.tilesPerImage, inCap, outCap,
            [&](uint32_t t, uint32_t sram, uint32_t c0, uint32_t ct) {
                emitConvInput(w, plan, tiling, in, t, g, sram, c0, ct);
            },
            [&](uint32_t t, uint32_t sram, uint32_t wAddr, uint32_t acc, uint32_t ct) {
                return emitConvTile(w, plan, tiling, t, sram, wAddr, acc, ct);
            },
            [&](uint32_t t, uint32_t sram, uint32_t c0, uint32_t ct) {
                w.dma(Opcode::kDmaStore, out, tiling.outputBox(t, g, sram, c0, ct));
            },
            makeFusedHooks(
                [&](uint32_t i, uint32_t t, uint32_t c0, uint32_t ct) {
                    if (fused)
                        w.dma(Opcode::kDmaLoad, other,
                              tiling.outputBox(t, g, static_cast<uint32_t>(otherBuf + (i % 2) * outCap), c0,
                                               ct));
                },
                [&](uint32_t i, uint32_t outAddr, uint32_t rows, uint32_t ct) {
                    if (!fused) return;
                    const uint32_t otherAddr = static_cast<uint32_t>(otherBuf + (i % 2) * outCap);
                    emitFusedAddTile(w, plan, fusedAdd, convIsA ? outAddr : otherAddr,
                                     convIsA ? otherAddr : outAddr, outAddr, rows, ct);
                }));
}

// A fused ADD (planFusion) in place on a convolution's REQUANT output tile, under the ADD's
// parameters; then the convolution's parameters again.
void ModelCompiler::emitFusedAddTile(BlobWriter& w, const OpPlan& conv, uint32_t fusedAdd, uint32_t aAddr,
                                     uint32_t bAddr, uint32_t outAddr, uint32_t rows, uint32_t ct) {
    isa::AddDesc d;
    d.rows = rows;
    d.cols = ct;
    d.aAddr = aAddr;
    d.bAddr = bAddr;
    d.aRowStride = d.bRowStride = d.outRowStride = ct;
    d.aColStride = d.bColStride = 1;
    d.outAddr = outAddr;
    w.emit(isa::makeVecParams(plans_[fusedAdd].vec));
    w.emit(
        isa::makeAdd(d, plans_[fusedAdd].signedIn ? isa::vec::kFlagSignedIn | isa::vec::kFlagSignedOut : 0u));
    w.emit(isa::makeVecParams(conv.vec));
}

void ModelCompiler::emitFc(BlobWriter& w, const OpPlan& plan) {
    const FcPlan& p = plan.fc;
    const uint32_t m = p.tiling.rowTile, k = p.inputSize;
    const TensorRef in = ref(w, p.input), out = ref(w, p.output);
    emitMacOp(
        w, plan, k, p.units, 0, model_.operands[p.weights], model_.operands[p.bias], (p.batch + m - 1) / m,
        align(uint64_t{m} * k, 64), align(uint64_t{m} * p.tiling.coutTile, 64),
        [&](uint32_t t, uint32_t sram, uint32_t, uint32_t) {
            isa::DmaBox box;
            box.dramOffset = uint64_t{t} * m * k;
            box.sramAddr = sram;
            box.innerBytes = k;
            box.rows = std::min(m, p.batch - t * m);
            box.dramRowStride = box.sramRowStride = k;
            w.dma(Opcode::kDmaLoad, in, box);
        },
        [&](uint32_t t, uint32_t sram, uint32_t wAddr, uint32_t acc, uint32_t ct) {
            isa::GemmDesc g;
            g.aAddr = sram;
            g.aRowStride = k;
            g.bAddr = wAddr;
            g.bRowStride = ct;
            g.m = std::min(m, p.batch - t * m);
            g.k = k;
            g.n = ct;
            g.accAddr = acc;
            g.accRowStride = ct;
            g.zpA = plan.zpIn;
            g.zpB = plan.zpWeights;
            w.emit(isa::makeGemm(g, macFlags(plan)));
            return g.m;
        },
        [&](uint32_t t, uint32_t sram, uint32_t c0, uint32_t ct) {
            isa::DmaBox box;
            box.dramOffset = uint64_t{t} * m * p.units + c0;
            box.sramAddr = sram;
            box.innerBytes = ct;
            box.rows = std::min(m, p.batch - t * m);
            box.dramRowStride = p.units;
            box.sramRowStride = ct;
            w.dma(Opcode::kDmaStore, out, box);
        },
        makeFusedHooks([](uint32_t, uint32_t, uint32_t, uint32_t) {},
                       [](uint32_t, uint32_t, uint32_t, uint32_t) {}));
}

// The tiles of a binary elementwise operation (AddPlan): rows x columns of the inner two
// dimensions, for each index of the outer two.
struct BinaryTile {
    uint32_t i0, i1, r0, c0, rows, cols;
};
struct BinaryTiling {
    const AddPlan& p;
    uint32_t rowTiles, colTiles;
    explicit BinaryTiling(const AddPlan& plan)
        : p(plan),
          rowTiles((plan.dims[2] + plan.rowTile - 1) / plan.rowTile),
          colTiles((plan.dims[3] + plan.colTile - 1) / plan.colTile) {}
    uint32_t count() const { return p.dims[0] * p.dims[1] * rowTiles * colTiles; }
    BinaryTile tile(uint32_t t) const {
        BinaryTile x;
        x.c0 = (t % colTiles) * p.colTile;
        x.r0 = (t / colTiles % rowTiles) * p.rowTile;
        x.i1 = t / colTiles / rowTiles % p.dims[1];
        x.i0 = t / colTiles / rowTiles / p.dims[1];
        x.rows = std::min(p.rowTile, p.dims[2] - x.r0);
        x.cols = std::min(p.colTile, p.dims[3] - x.c0);
        return x;
    }
    // An input's box (strides s): broadcast axes collapse to one element in the scratchpad.
    static isa::DmaBox inputBox(const BinaryTile& x, const uint32_t* s, uint32_t sram) {
        isa::DmaBox box;
        box.dramOffset =
            uint64_t{x.i0} * s[0] + uint64_t{x.i1} * s[1] + uint64_t{x.r0} * s[2] + uint64_t{x.c0} * s[3];
        box.sramAddr = sram;
        box.innerBytes = s[3] != 0 ? x.cols : 1;
        box.rows = s[2] != 0 ? x.rows : 1;
        box.dramRowStride = s[2];
        box.sramRowStride = box.innerBytes;
        return box;
    }
    isa::DmaBox outputBox(const BinaryTile& x, uint32_t sram) const {
        isa::DmaBox box;
        box.dramOffset = ((uint64_t{x.i0} * p.dims[1] + x.i1) * p.dims[2] + x.r0) * p.dims[3] + x.c0;
        box.sramAddr = sram;
        box.innerBytes = x.cols;
        box.rows = x.rows;
        box.dramRowStride = p.dims[3];
        box.sramRowStride = x.cols;
        return box;
    }
    // Tile x's operation on the scratchpad: a at aAddr, b at bAddr, the result at outAddr.
    isa::AddDesc addDesc(const BinaryTile& x, uint32_t aAddr, uint32_t bAddr, uint32_t outAddr) const {
        isa::AddDesc d;
        d.rows = x.rows;
        d.cols = x.cols;
        d.aAddr = aAddr;
        d.aColStride = p.strideA[3] != 0 ? 1 : 0;
        d.aRowStride = p.strideA[2] != 0 ? (p.strideA[3] != 0 ? x.cols : 1) : 0;
        d.bAddr = bAddr;
        d.bColStride = p.strideB[3] != 0 ? 1 : 0;
        d.bRowStride = p.strideB[2] != 0 ? (p.strideB[3] != 0 ? x.cols : 1) : 0;
        d.outAddr = outAddr;
        d.outRowStride = x.cols;
        return d;
    }
};

// ADD / SUB, MUL, MAXIMUM, MINIMUM and PRELU in tiles: load a and b, compute, store. Scratchpad:
// two tiles each of a, b and the output, then the requantization tables of a and b.
void ModelCompiler::emitAdd(BlobWriter& w, const OpPlan& plan) {
    const AddPlan& p = plan.add;
    const uint32_t buffer = binaryBufferBytes(target_);
    const uint32_t tableA = 6 * buffer, tableB = tableA + kLutBytes;
    const TensorRef a = ref(w, p.a), b = ref(w, p.b), out = ref(w, p.output);
    const OperandDesc& outDesc = model_.operands[p.output];
    if (p.requantA) emitTable(w, ByteMap::kRequant, model_.operands[p.a], outDesc, tableA);
    if (p.requantB) emitTable(w, ByteMap::kRequant, model_.operands[p.b], outDesc, tableB);
    const BinaryTiling tiling(p);
    w.emit(isa::makeVecParams(plan.vec));
    emitPipeline(
        w, tiling.count(),
        [&](uint32_t t) {
            const BinaryTile x = tiling.tile(t);
            w.dma(Opcode::kDmaLoad, a, BinaryTiling::inputBox(x, p.strideA, (t % 2) * buffer));
            w.dma(Opcode::kDmaLoad, b, BinaryTiling::inputBox(x, p.strideB, (2 + t % 2) * buffer));
        },
        [&](uint32_t t) {
            const BinaryTile x = tiling.tile(t);
            const isa::AddDesc d =
                tiling.addDesc(x, (t % 2) * buffer, (2 + t % 2) * buffer, (4 + t % 2) * buffer);
            emitBinaryTile(w, plan, x, d, tableA, tableB);
        },
        [&](uint32_t t) {
            w.dma(Opcode::kDmaStore, out, tiling.outputBox(tiling.tile(t), (4 + t % 2) * buffer));
        });
}

// One tile's computation (emitAdd): ADD / SUB in one command; MUL, MAXIMUM, MINIMUM and PRELU as
// a VEC_OP, MAXIMUM / MINIMUM after mapping their inputs into the output's quantization.
void ModelCompiler::emitBinaryTile(BlobWriter& w, const OpPlan& plan, const BinaryTile& x,
                                   const isa::AddDesc& d, uint32_t tableA, uint32_t tableB) {
    const AddPlan& p = plan.add;
    const uint32_t flags = plan.signedIn ? isa::vec::kFlagSignedIn | isa::vec::kFlagSignedOut : 0u;
    if (plan.type == hal::kOpAdd || plan.type == hal::kOpSub) {
        w.emit(isa::makeAdd(d, flags));
        return;
    }
    // MAXIMUM / MINIMUM: inputs into the output's quantization first, in place.
    auto mapInPlace = [&](const isa::DmaBox& box, uint32_t table) {
        isa::VecOpDesc m;
        m.function = isa::VecFunction::kLut;
        m.rows = box.rows;
        m.cols = box.innerBytes;
        m.aAddr = m.outAddr = box.sramAddr;
        m.aRowStride = m.outRowStride = box.innerBytes;
        m.lutAddr = table;
        w.emit(isa::makeVecOp(m, flags));
    };
    if (p.requantA) mapInPlace(BinaryTiling::inputBox(x, p.strideA, d.aAddr), tableA);
    if (p.requantB) mapInPlace(BinaryTiling::inputBox(x, p.strideB, d.bAddr), tableB);
    isa::VecOpDesc v;
    v.function = plan.type == hal::kOpMul       ? isa::VecFunction::kMul
                 : plan.type == hal::kOpMaximum ? isa::VecFunction::kMax
                 : plan.type == hal::kOpPrelu   ? isa::VecFunction::kPrelu
                                                : isa::VecFunction::kMin;
    v.rows = d.rows;
    v.cols = d.cols;
    v.aAddr = d.aAddr;
    v.aRowStride = d.aRowStride;
    v.aColStride = d.aColStride;
    v.bAddr = d.bAddr;
    v.bRowStride = d.bRowStride;
    v.bColStride = d.bColStride;
    v.outAddr = d.outAddr;
    v.outRowStride = d.outRowStride;
    w.emit(isa::makeVecOp(v, flags));
}

// The tiles of a pooling (PoolPlan): image, output rows, channels, and the input rows each
// needs clipped to the image; and its scratchpad: two input and two output buffers, then one
// constant byte.
struct PoolTile : ImageTile {
    uint32_t first, end, padTop;
};
struct PoolTiling {
    const PoolPlan& p;
    uint32_t rowTiles, chanTiles;
    uint64_t inCap, outCap;
    explicit PoolTiling(const PoolPlan& plan)
        : p(plan),
          rowTiles((plan.outH + plan.rowTile - 1) / plan.rowTile),
          chanTiles((plan.channels + plan.channelTile - 1) / plan.channelTile),
          inCap(align(std::min<uint64_t>(uint64_t{plan.rowTile - 1} * plan.strideY + plan.kh, plan.inH) *
                          plan.inW * plan.channelTile,
                      64)),
          outCap(align(uint64_t{plan.rowTile} * plan.outW * plan.channelTile, 64)) {}
    uint32_t count() const { return p.batch * rowTiles * chanTiles; }
    uint32_t inBuf(uint32_t t) const { return static_cast<uint32_t>((t % 2) * inCap); }
    uint32_t outBuf(uint32_t t) const { return static_cast<uint32_t>(2 * inCap + (t % 2) * outCap); }
    uint32_t constant() const { return static_cast<uint32_t>(2 * (inCap + outCap)); }
    PoolTile tile(uint32_t t) const {
        PoolTile x;
        static_cast<ImageTile&>(x) = imageTile(t, p.rowTile, p.outH, p.channelTile, p.channels);
        const int64_t y0 = int64_t{x.r0} * p.strideY - p.padTop;
        const int64_t y1 = int64_t{x.r0 + x.rows - 1} * p.strideY - p.padTop + p.kh;
        x.first = static_cast<uint32_t>(std::min<int64_t>(p.inH, std::max<int64_t>(0, y0)));
        x.end = static_cast<uint32_t>(std::max<int64_t>(0, std::min<int64_t>(p.inH, y1)));
        x.padTop = x.end > x.first ? static_cast<uint32_t>(x.first - y0) : 0;
        return x;
    }
};

// AVERAGE_POOL_2D / MAX_POOL_2D in tiles of output rows and channels: load, POOL, store.
void ModelCompiler::emitPool(BlobWriter& w, const OpPlan& plan) {
    const PoolPlan& p = plan.pool;
    const PoolTiling tiling(p);
    const TensorRef in = ref(w, p.input), out = ref(w, p.output);
    // A tile whose windows all lie in the padding has no input row to load: its outputs are the
    // empty-window value clamp(0) (the planner admits only cases where that is the reference's),
    // broadcast from one byte filled once.
    const int32_t emptyValue = std::min(std::max<int32_t>(0, plan.vec.clampMin), plan.vec.clampMax);
    isa::DmaBox fill;
    fill.sramAddr = tiling.constant();
    fill.innerBytes = 1;
    w.emit(isa::makeDma(Opcode::kDmaLoad, fill, isa::dma::kFlagFill, static_cast<uint32_t>(emptyValue)));
    w.emit(isa::makeVecParams(plan.vec));
    emitPipeline(
        w, tiling.count(),
        [&](uint32_t t) {
            const PoolTile x = tiling.tile(t);
            if (x.end <= x.first) return;
            w.dma(Opcode::kDmaLoad, in,
                  imageTileBox(p.nchw, p.channels, x.b, x.c0, x.ct, x.first, x.end - x.first, p.inH, p.inW,
                               tiling.inBuf(t)));
        },
        [&](uint32_t t) { emitPoolTile(w, plan, tiling, t); },
        [&](uint32_t t) {
            const PoolTile x = tiling.tile(t);
            w.dma(Opcode::kDmaStore, out,
                  imageTileBox(p.nchw, p.channels, x.b, x.c0, x.ct, x.r0, x.rows, p.outH, p.outW,
                               tiling.outBuf(t)));
        });
}

// Pool tile t's computation: POOL, or for a tile all in the padding, the constant broadcast.
void ModelCompiler::emitPoolTile(BlobWriter& w, const OpPlan& plan, const PoolTiling& tiling, uint32_t t) {
    const PoolPlan& p = plan.pool;
    const PoolTile x = tiling.tile(t);
    if (x.end <= x.first) {
        isa::VecOpDesc v;
        v.function = isa::VecFunction::kClamp;
        v.rows = x.rows;
        v.cols = p.outW * x.ct;
        v.aAddr = tiling.constant();
        v.aRowStride = v.aColStride = 0;
        v.outAddr = tiling.outBuf(t);
        v.outRowStride = v.cols;
        w.emit(isa::makeVecOp(v, plan.signedIn ? isa::vec::kFlagSignedIn | isa::vec::kFlagSignedOut : 0u));
        return;
    }
    isa::PoolDesc d;
    d.mode = p.average ? isa::pool::kModeAverage : isa::pool::kModeMax;
    d.ifmAddr = tiling.inBuf(t);
    d.ifmH = x.end - x.first;
    d.ifmW = p.inW;
    d.ifmC = x.ct;
    d.ifmRowStride = p.inW * x.ct;
    d.kernelH = p.kh;
    d.kernelW = p.kw;
    d.strideY = p.strideY;
    d.strideX = p.strideX;
    d.padTop = x.padTop;
    d.padLeft = p.padLeft;
    d.ofmH = x.rows;
    d.ofmW = p.outW;
    d.outAddr = tiling.outBuf(t);
    w.emit(isa::makePool(d, plan.signedIn ? isa::pool::kFlagSigned : 0u));
}

// A part of a CopyPlan in tiles of at most `buffer` bytes: whole rows where they fit, else
// pieces of one row.
struct CopyTiling {
    uint32_t colTile = 0, rowTile = 0, colTiles = 0, rowTiles = 0;
    CopyTiling(uint32_t rows, uint32_t bytes, uint32_t buffer)
        : colTile(std::min(bytes, buffer)),
          rowTile(std::min(rows, buffer / colTile)),
          colTiles((bytes + colTile - 1) / colTile),
          rowTiles((rows + rowTile - 1) / rowTile) {}
    uint32_t count() const { return colTiles * rowTiles; }
};

// Copies or maps (VEC_OP LUT) each part into place. Scratchpad: the table, then two input and two
// output buffers. A plain copy stores straight from the input buffer (load -> store pipeline, the
// store queue handing buffers back to the load queue); a mapped part runs load -> LUT -> store.
void ModelCompiler::emitCopy(BlobWriter& w, const OpPlan& plan) {
    const CopyPlan& p = plan.copy;
    const uint32_t buffer = (target_.scratchpadBytes - kLutBytes) / 4 / 64 * 64;
    const uint32_t inBuf[2] = {kLutBytes, kLutBytes + buffer};
    const uint32_t outBuf[2] = {kLutBytes + 2 * buffer, kLutBytes + 3 * buffer};
    const TensorRef out = ref(w, p.output);
    const OperandDesc& outDesc = model_.operands[p.output];
    for (uint32_t i = 0; i < p.partCount; ++i) {
        if (i > 0) w.emit(isa::makeFence());  // buffers (and the table) are reused by the next part
        const TensorRef in = ref(w, p.parts[i]);
        const CopyTiling tiling(p.rows, p.partBytes[i], buffer);
        auto boxOf = [&](uint32_t t, uint32_t sram, bool store) {
            const uint32_t r0 = t / tiling.colTiles * tiling.rowTile,
                           c0 = t % tiling.colTiles * tiling.colTile;
            isa::DmaBox d;
            d.sramAddr = sram;
            d.innerBytes = std::min(tiling.colTile, p.partBytes[i] - c0);
            d.rows = std::min(tiling.rowTile, p.rows - r0);
            d.sramRowStride = d.innerBytes;
            d.dramRowStride = store ? p.outRowBytes : p.partBytes[i];
            d.dramOffset = store ? uint64_t{r0} * p.outRowBytes + p.dstColumn[i] + c0
                                 : uint64_t{r0} * p.partBytes[i] + c0;
            return d;
        };
        if (p.map[i] == ByteMap::kCopy) {
            emitCopyPipeline(
                w, tiling.count(),
                [&](uint32_t t) { w.dma(Opcode::kDmaLoad, in, boxOf(t, inBuf[t % 2], false)); },
                [&](uint32_t t) { w.dma(Opcode::kDmaStore, out, boxOf(t, inBuf[t % 2], true)); });
            continue;
        }
        emitTable(w, p.map[i], model_.operands[p.parts[i]], outDesc, 0);
        isa::VecParams range;  // LUT ignores the clamp, but VEC_OP checks it fits the output type
        range.clampMin = plan.signedOut ? -128 : 0;
        range.clampMax = plan.signedOut ? 127 : 255;
        w.emit(isa::makeVecParams(range));
        emitPipeline(
            w, tiling.count(),
            [&](uint32_t t) { w.dma(Opcode::kDmaLoad, in, boxOf(t, inBuf[t % 2], false)); },
            [&](uint32_t t) {
                const isa::DmaBox d = boxOf(t, inBuf[t % 2], false);
                isa::VecOpDesc v;
                v.function = isa::VecFunction::kLut;
                v.rows = d.rows;
                v.cols = d.innerBytes;
                v.aAddr = inBuf[t % 2];
                v.aRowStride = d.innerBytes;
                v.outAddr = outBuf[t % 2];
                v.outRowStride = d.innerBytes;
                v.lutAddr = 0;
                const uint32_t s = plan.signedIn ? isa::vec::kFlagSignedIn | isa::vec::kFlagSignedOut : 0u;
                w.emit(isa::makeVecOp(v, s));
            },
            [&](uint32_t t) { w.dma(Opcode::kDmaStore, out, boxOf(t, outBuf[t % 2], true)); });
    }
}

// The 256-byte table of `map` from `in`'s quantization to `out`'s, computed now (byteMapTable)
// into the blob's data and loaded to scratchpad `sramAddr` ahead of the operation's first tile.
void ModelCompiler::emitTable(BlobWriter& w, ByteMap map, const OperandDesc& in, const OperandDesc& out,
                              uint32_t sramAddr) {
    const uint64_t offset = w.reserveData(kLutBytes);
    if (uint8_t* table = w.data(offset)) {
        byteMapTable(map, {in.scale, in.zeroPoint, in.type == hal::kTensorQuant8AsymmSigned},
                     {out.scale, out.zeroPoint, out.type == hal::kTensorQuant8AsymmSigned}, table);
    }
    isa::DmaBox d;
    d.dramOffset = offset;
    d.sramAddr = sramAddr;
    d.innerBytes = kLutBytes;
    d.dramRowStride = d.sramRowStride = kLutBytes;
    w.dma(Opcode::kDmaLoad, {kRegionData, 0, false, 0}, d);
}

// PAD / PAD_V2: the whole output is stored from a scratchpad buffer filled with the pad value,
// then each [rows, bytes] slab of the input is copied into its box (store queue order keeps
// the copies after the fill).
void ModelCompiler::emitPad(BlobWriter& w, const OpPlan& plan) {
    const PadPlan& p = plan.pad;
    const uint32_t fillBytes = target_.scratchpadBytes / 4 / 64 * 64;
    const uint32_t buffer = (target_.scratchpadBytes - fillBytes) / 2 / 64 * 64;
    const uint32_t copyBuf[2] = {fillBytes, fillBytes + buffer};
    const TensorRef in = ref(w, p.input), out = ref(w, p.output);
    const uint64_t total = uint64_t{p.out[0]} * p.out[1] * p.out[2] * p.out[3];
    isa::DmaBox fill;
    fill.innerBytes = static_cast<uint32_t>(std::min<uint64_t>(fillBytes, total));
    w.emit(isa::makeDma(Opcode::kDmaLoad, fill, isa::dma::kFlagFill, p.value));
    w.emit(isa::makePush(Queue::kLoad, Queue::kStore));
    w.emit(isa::makePop(Queue::kLoad, Queue::kStore));
    for (uint64_t offset = 0; offset < total; offset += fillBytes) {
        isa::DmaBox box;
        box.dramOffset = offset;
        box.innerBytes = static_cast<uint32_t>(std::min<uint64_t>(fillBytes, total - offset));
        w.dma(Opcode::kDmaStore, out, box);
    }
    // Slab (i0, i1) of the input: p.in[2] rows of p.in[3] bytes.
    const CopyTiling tiling(p.in[2], p.in[3], buffer);
    const uint32_t slabs = p.in[0] * p.in[1];
    auto boxOf = [&](uint32_t t, bool store) {
        const uint32_t slab = t / tiling.count(), k = t % tiling.count();
        const uint32_t i0 = slab / p.in[1], i1 = slab % p.in[1];
        const uint32_t r0 = k / tiling.colTiles * tiling.rowTile, c0 = k % tiling.colTiles * tiling.colTile;
        isa::DmaBox d;
        d.sramAddr = copyBuf[t % 2];
        d.innerBytes = std::min(tiling.colTile, p.in[3] - c0);
        d.rows = std::min(tiling.rowTile, p.in[2] - r0);
        d.sramRowStride = d.innerBytes;
        if (store) {
            d.dramRowStride = p.out[3];
            d.dramOffset =
                ((uint64_t{i0 + p.before[0]} * p.out[1] + i1 + p.before[1]) * p.out[2] + r0 + p.before[2]) *
                    p.out[3] +
                p.before[3] + c0;
        } else {
            d.dramRowStride = p.in[3];
            d.dramOffset = ((uint64_t{i0} * p.in[1] + i1) * p.in[2] + r0) * p.in[3] + c0;
        }
        return d;
    };
    emitCopyPipeline(
        w, slabs * tiling.count(), [&](uint32_t t) { w.dma(Opcode::kDmaLoad, in, boxOf(t, false)); },
        [&](uint32_t t) { w.dma(Opcode::kDmaStore, out, boxOf(t, true)); });
}

// SOFTMAX: tiles of whole slabs (outer index) loaded, computed by SOFTMAX commands and stored in
// a double-buffered pipeline; the tensor is contiguous, so each tile is one 1-D copy each way.
void ModelCompiler::emitSoftmax(BlobWriter& w, const OpPlan& plan) {
    const SoftmaxPlan& p = plan.softmax;
    const uint32_t buffer = softmaxBufferBytes(target_);
    const uint32_t slab = p.len * p.inner;
    const TensorRef in = ref(w, p.input), out = ref(w, p.output);
    auto slabsOf = [&](uint32_t t) { return std::min(p.slabTile, p.outer - t * p.slabTile); };
    auto box = [&](uint32_t t, uint32_t sram) {
        isa::DmaBox d;
        d.dramOffset = uint64_t{t} * p.slabTile * slab;
        d.sramAddr = sram;
        d.innerBytes = slabsOf(t) * slab;
        return d;
    };
    emitPipeline(
        w, (p.outer + p.slabTile - 1) / p.slabTile,
        [&](uint32_t t) { w.dma(Opcode::kDmaLoad, in, box(t, (t % 2) * buffer)); },
        [&](uint32_t t) {
            isa::SoftmaxDesc d;
            d.cols = p.len;
            d.multiplier = p.multiplier;
            d.leftShift = p.leftShift;
            d.diffMin = p.diffMin;
            const uint32_t flags = plan.signedIn ? isa::softmax::kFlagSigned : 0u;
            if (p.inner == 1) {  // one row per slab: the whole tile in one command
                d.rows = slabsOf(t);
                d.inAddr = (t % 2) * buffer;
                d.outAddr = (2 + t % 2) * buffer;
                d.inRowStride = d.outRowStride = p.len;
                w.emit(isa::makeSoftmax(d, flags));
                return;
            }
            for (uint32_t k = 0; k < slabsOf(t); ++k) {  // `inner` rows, elements `inner` apart
                d.rows = p.inner;
                d.inAddr = (t % 2) * buffer + k * slab;
                d.outAddr = (2 + t % 2) * buffer + k * slab;
                d.inRowStride = d.outRowStride = 1;
                d.inColStride = d.outColStride = p.inner;
                w.emit(isa::makeSoftmax(d, flags));
            }
        },
        [&](uint32_t t) { w.dma(Opcode::kDmaStore, out, box(t, (2 + t % 2) * buffer)); });
}

void ModelCompiler::emitAll(BlobWriter& w, uint8_t* opTable) {
    for (uint32_t i = 0; i < model_.operandCount; ++i) constOffset_[i] = 0;
    for (uint32_t o = 0; o < model_.operationCount; ++o) {
        const uint32_t begin = w.commandCount();
        const OpPlan& plan = plans_[o];
        switch (plan.type) {
            case hal::kOpConv2d:
            case hal::kOpDepthwiseConv2d:
            case hal::kOpGroupedConv2d:
            case hal::kOpTransposeConv2d:
                emitConv(w, plan, fusedAdd_[o]);
                break;
            case hal::kOpFullyConnected:
                emitFc(w, plan);
                break;
            case hal::kOpTranspose:
            case hal::kOpSpaceToDepth:
            case hal::kOpDepthToSpace:
            case hal::kOpStridedSlice:
                emitGather(w, target_, plan.gather, ref(w, plan.gather.input), ref(w, plan.gather.output));
                break;
            case hal::kOpResizeBilinear:
            case hal::kOpResizeNearest:
                emitResize(w, target_, plan, ref(w, plan.resize.input), ref(w, plan.resize.output));
                break;
            case hal::kOpMean:
                emitMean(w, target_, plan, ref(w, plan.mean.input), ref(w, plan.mean.output));
                break;
            case hal::kOpQuantize:
            case hal::kOpDequantize:
                emitConvert(w, target_, plan, ref(w, plan.convert.input), ref(w, plan.convert.output));
                break;
            case hal::kOpAveragePool2d:
            case hal::kOpMaxPool2d:
                emitPool(w, plan);
                break;
            case hal::kOpPad:
            case hal::kOpPadV2:
                emitPad(w, plan);
                break;
            case hal::kOpSoftmax:
                emitSoftmax(w, plan);
                break;
            default:
                if (hal::isBinaryOp(plan.type)) {
                    if (fusedInto_[o] == kNoFusion) emitAdd(w, plan);  // else its convolution did it
                } else if ((hal::isCopyOp(plan.type) && !plan.copy.alias) || hal::isLutOp(plan.type)) {
                    emitCopy(w, plan);
                }
                break;
        }
        if (opTable != nullptr) {
            uint8_t* e = opTable + uint64_t{o} * blob::kOpDescWords * 4;
            writeU32(e, o);
            writeU32(e + 4, plan.type);
            writeU32(e + 8, begin);
            writeU32(e + 12, w.commandCount());
        }
    }
}

FwStatus ModelCompiler::measure(Arena& scratch, CompiledSize* size) {
    FwStatus st = planAll(scratch);
    if (!st.ok()) return st;
    BlobWriter counter(nullptr, nullptr, nullptr);
    emitAll(counter, nullptr);
    size->blobBytes = layoutOf(counter).total;
    size->activationBytes = activationBytes_;
    size->commandCount = counter.commandCount();
    return FwStatus::okStatus();
}

// Every operation planned (with the given tilings) and the activation memory placed.
FwStatus ModelCompiler::planAll(Arena& scratch) {
    FwStatus st = checkModel();
    if (!st.ok()) return st;
    plans_ = scratch.allocateArray<OpPlan>(model_.operationCount);
    if (plans_ == nullptr)
        return FwStatus::make(Code::kResourceExhaustedTransient, "compiler scratch exhausted (plans)");
    for (uint32_t o = 0; o < model_.operationCount; ++o) {
        if (target_.checkpoint != nullptr && o > 0) {
            const StopReason stop =
                target_.checkpoint->stopRequested({WorkPhase::kCompile, o, model_.operationCount});
            if (stop != StopReason::kNone)
                return stoppedStatus(stop, "prepare", "planning operation", o, o, model_.operationCount,
                                     "planned");
        }
        if (!(st = planOperation(target_, model_, o, &plans_[o])).ok()) return st;
        if (tilings_ == nullptr || tilings_[o].coutTile == 0) continue;
        MacTiling candidates[kMaxTilingCandidates];
        const uint32_t n = tilingCandidates(target_, plans_[o], candidates);
        bool known = false;
        for (uint32_t i = 0; i < n; ++i)
            known = known || (candidates[i].coutTile == tilings_[o].coutTile &&
                              candidates[i].rowTile == tilings_[o].rowTile);
        if (!known)
            return FwStatus::make(Code::kInvalidArgument,
                                  "operation %" PRIu32 ": tiling %" PRIu32 "x%" PRIu32
                                  " is not one of its candidates",
                                  o, tilings_[o].coutTile, tilings_[o].rowTile);
        applyTiling(&plans_[o], tilings_[o]);
    }
    if (!(st = planFusion(scratch)).ok()) return st;
    return planMemory(scratch);
}

ModelCompiler::Layout ModelCompiler::layoutOf(const BlobWriter& counter) const {
    Layout l;
    l.cmdOffset = align(blob::kHeaderBytesValue, kBlobAlign);
    l.metaOffset = l.cmdOffset + uint64_t{counter.commandCount()} * isa::kCommandBytes;
    l.metaBytes = expectedMetaBytes(model_.inputCount + model_.outputCount, model_.operationCount,
                                    counter.relocCount());
    l.dataOffset = align(l.metaOffset + l.metaBytes, kBlobAlign);
    l.total = l.dataOffset + counter.dataBytes();
    return l;
}

FwStatus ModelCompiler::run(Arena& scratch, const uint8_t** image, uint64_t* size, size_t* usedBeforeImage) {
    FwStatus st = planAll(scratch);
    if (!st.ok()) return st;
    BlobWriter counter(nullptr, nullptr, nullptr);
    emitAll(counter, nullptr);
    const uint32_t numIo = model_.inputCount + model_.outputCount;
    const Layout layout = layoutOf(counter);
    const uint64_t cmdOffset = layout.cmdOffset, metaOffset = layout.metaOffset, metaBytes = layout.metaBytes,
                   dataOffset = layout.dataOffset, total = layout.total;
    if (total > UINT32_MAX || activationBytes_ > UINT32_MAX) {
        return FwStatus::make(Code::kInvalidArgument, "compiled model too large (%llu bytes)",
                              static_cast<unsigned long long>(total));
    }
    if (usedBeforeImage != nullptr) *usedBeforeImage = scratch.used();
    uint8_t* out = static_cast<uint8_t*>(scratch.allocate(total, kBlobAlign));
    if (out == nullptr) {
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "compiler scratch exhausted: blob of %llu bytes",
                              static_cast<unsigned long long>(total));
    }
    std::memset(out, 0, total);
    uint8_t* meta = out + metaOffset;
    for (uint32_t io = 0; io < numIo; ++io) {
        const uint32_t index =
            io < model_.inputCount ? model_.inputIndexes[io] : model_.outputIndexes[io - model_.inputCount];
        const OperandDesc& d = model_.operands[index];
        uint8_t* e = meta + uint64_t{io} * blob::kIoDescWords * 4;
        writeU32(e, d.rank);
        for (uint32_t k = 0; k < d.rank; ++k) writeU32(e + 4 + 4 * k, d.dims[k]);
        writeU32(e + 28, static_cast<uint32_t>(tensorBytes(d)));
    }
    uint8_t* opTable = meta + uint64_t{numIo} * blob::kIoDescWords * 4;
    uint8_t* relocs = opTable + uint64_t{model_.operationCount} * blob::kOpDescWords * 4;
    BlobWriter writer(out + cmdOffset, relocs, out + dataOffset);
    emitAll(writer, opTable);

    uint32_t h[blob::kHeaderWords] = {};
    h[blob::kMagic] = kBlobMagic;
    h[blob::kVersion] = kBlobVersion;
    h[blob::kHeaderBytes] = blob::kHeaderBytesValue;
    h[blob::kTotalBytes] = static_cast<uint32_t>(total);
    h[blob::kCommandOffset] = static_cast<uint32_t>(cmdOffset);
    h[blob::kCommandCount] = writer.commandCount();
    h[blob::kMetaOffset] = static_cast<uint32_t>(metaOffset);
    h[blob::kMetaBytes] = static_cast<uint32_t>(metaBytes);
    h[blob::kDataOffset] = static_cast<uint32_t>(dataOffset);
    h[blob::kDataBytes] = static_cast<uint32_t>(writer.dataBytes());
    h[blob::kActivationBytes] = static_cast<uint32_t>(activationBytes_);
    h[blob::kNumInputs] = model_.inputCount;
    h[blob::kNumOutputs] = model_.outputCount;
    h[blob::kNumOps] = model_.operationCount;
    h[blob::kNumRelocs] = writer.relocCount();
    h[blob::kHwArray] = target_.arrayRows | (target_.arrayCols << 16);
    h[blob::kHwScratchpadKib] = target_.scratchpadBytes / 1024;
    h[blob::kHwAccumulatorKib] = target_.accumulatorBytes / 1024;
    for (uint32_t i = 0; i < blob::kHeaderWords; ++i) writeU32(out + 4 * i, h[i]);
    *image = out;
    *size = total;
    return FwStatus::okStatus();
}

}  // namespace

FwStatus compileModel(const CompileTarget& target, const ModelDesc& model, Arena& scratch,
                      const uint8_t** image, uint64_t* size, const MacTiling* tilings,
                      size_t* usedBeforeImage) {
    ModelCompiler compiler(target, model, tilings);
    return compiler.run(scratch, image, size, usedBeforeImage);
}

FwStatus measureModel(const CompileTarget& target, const ModelDesc& model, Arena& scratch,
                      CompiledSize* size) {
    ModelCompiler compiler(target, model, nullptr);
    return compiler.measure(scratch, size);
}

FwStatus modelTilingCandidates(const CompileTarget& target, const ModelDesc& model, uint32_t opIndex,
                               MacTiling* out, uint32_t* count) {
    OpPlan plan;
    FwStatus st = planOperation(target, model, opIndex, &plan);
    if (!st.ok()) return st;
    *count = tilingCandidates(target, plan, out);
    return FwStatus::okStatus();
}

}  // namespace npu::fw
