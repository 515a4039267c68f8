#include "model_claim.h"

#include <cinttypes>
#include <cstring>

#include "blob_format.h"
#include "op_plan.h"

namespace npu::fw {

namespace {

uint64_t align64(uint64_t v) {
    return (v + 63) / 64 * 64;
}

bool isTensorData(const OperandDesc& d) {
    return d.lifetime == hal::kTemporary || d.lifetime == hal::kSubgraphInput ||
           d.lifetime == hal::kSubgraphOutput;
}

// The sub-model of the first `count` accepted operations (`order`, in model order): operands
// copied with the boundary ones turned into inputs (read, written outside) and outputs (written,
// then read outside or a model output).
class SubModel {
public:
    SubModel(const ModelDesc& m, const uint32_t* order, Arena& scratch)
        : m_(m), order_(order), scratch_(scratch) {}

    // False when the scratch arena cannot hold the tables.
    bool build(uint32_t count, ModelDesc* out) {
        operands_ = scratch_.allocateArray<OperandDesc>(m_.operandCount);
        ops_ = scratch_.allocateArray<OperationDesc>(count);
        inSet_ = scratch_.allocateArray<bool>(m_.operationCount);
        written_ = scratch_.allocateArray<bool>(m_.operandCount);
        isInput_ = scratch_.allocateArray<bool>(m_.operandCount);
        inputs_ = scratch_.allocateArray<uint32_t>(m_.operandCount);
        outputs_ = scratch_.allocateArray<uint32_t>(m_.operandCount);
        if (operands_ == nullptr || ops_ == nullptr || inSet_ == nullptr || written_ == nullptr ||
            isInput_ == nullptr || inputs_ == nullptr || outputs_ == nullptr)
            return false;
        std::memcpy(operands_, m_.operands, sizeof(OperandDesc) * m_.operandCount);
        for (uint32_t i = 0; i < count; ++i) {
            inSet_[order_[i]] = true;
            ops_[i] = m_.operations[order_[i]];
            written_[ops_[i].outputs[0]] = true;
        }
        uint32_t nIn = 0, nOut = 0;
        for (uint32_t i = 0; i < count; ++i) {  // boundary inputs: read here, written outside
            for (uint32_t k = 0; k < ops_[i].inputCount; ++k) {
                const uint32_t x = ops_[i].inputs[k];
                if (x >= m_.operandCount || written_[x] || isInput_[x] || !isTensorData(m_.operands[x]))
                    continue;
                isInput_[x] = true;
                operands_[x].lifetime = hal::kSubgraphInput;
                inputs_[nIn++] = x;
            }
        }
        for (uint32_t i = 0; i < count; ++i) {  // boundary outputs
            const uint32_t y = ops_[i].outputs[0];
            operands_[y].lifetime = readOutside(y) ? hal::kSubgraphOutput : hal::kTemporary;
            if (operands_[y].lifetime == hal::kSubgraphOutput) outputs_[nOut++] = y;
        }
        *out = {};
        out->operands = operands_;
        out->operandCount = m_.operandCount;
        out->operations = ops_;
        out->operationCount = count;
        out->inputIndexes = inputs_;
        out->inputCount = nIn;
        out->outputIndexes = outputs_;
        out->outputCount = nOut;
        return true;
    }

private:
    bool readOutside(uint32_t operand) const {
        if (m_.operands[operand].lifetime == hal::kSubgraphOutput) return true;
        for (uint32_t o = 0; o < m_.operationCount; ++o) {
            if (inSet_[o]) continue;
            const OperationDesc& op = m_.operations[o];
            for (uint32_t k = 0; k < op.inputCount; ++k)
                if (op.inputs[k] == operand) return true;
        }
        return false;
    }

    const ModelDesc& m_;
    const uint32_t* order_;
    Arena& scratch_;
    OperandDesc* operands_ = nullptr;
    OperationDesc* ops_ = nullptr;
    bool* inSet_ = nullptr;
    bool* written_ = nullptr;
    bool* isInput_ = nullptr;
    uint32_t* inputs_ = nullptr;
    uint32_t* outputs_ = nullptr;
};

// Whether the sub-model of the first `count` accepted operations prepares and runs: it compiles
// (which checks the operation and input / output counts) and its blob, command queue and
// activations fit the firmware DRAM and, if given, its blob the compiler's scratch arena.
bool fits(const CompileTarget& target, const ModelDesc& model, const uint32_t* order, uint32_t count,
          const ClaimLimits& limits, Arena& scratch) {
    // In the compile arena when given: the compile's tables as measured, then the blob itself.
    Arena& arena = limits.compileScratch != nullptr ? *limits.compileScratch : scratch;
    const size_t mark = arena.mark();
    ModelDesc sub;
    CompiledSize size;
    bool ok =
        SubModel(model, order, arena).build(count, &sub) && measureModel(target, sub, arena, &size).ok();
    if (ok) {
        const uint64_t queue = (uint64_t{size.commandCount} + 1) * isa::kCommandBytes;
        ok = align64(size.blobBytes) + align64(queue + size.activationBytes) <= limits.firmwareDramBytes;
    }
    if (ok && limits.compileScratch != nullptr) ok = arena.allocate(size.blobBytes, kBlobAlign) != nullptr;
    arena.release(mark);
    return ok;
}

}  // namespace

FwStatus claimOperations(const CompileTarget& target, const ModelDesc& model, const ClaimLimits& limits,
                         Arena& scratch, bool* supported) {
    uint32_t accepted = 0;
    for (uint32_t i = 0; i < model.operationCount; ++i) {
        supported[i] = checkOperation(target, model, i).ok();
        accepted += supported[i] ? 1 : 0;
    }
    if (accepted == 0) return FwStatus::okStatus();
    const size_t mark = scratch.mark();
    uint32_t* order = scratch.allocateArray<uint32_t>(accepted);
    if (order == nullptr)
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "supportedOperations: firmware arena exhausted (%" PRIu32 " operations)",
                              model.operationCount);
    for (uint32_t i = 0, n = 0; i < model.operationCount; ++i)
        if (supported[i]) order[n++] = i;
    // The largest claimable prefix: binary search over its length (the limits grow with it).
    uint32_t lo = 0, hi = accepted < kMaxOperations ? accepted : kMaxOperations;
    if (!fits(target, model, order, hi, limits, scratch)) {
        while (lo + 1 < hi) {
            const uint32_t mid = lo + (hi - lo) / 2;
            (fits(target, model, order, mid, limits, scratch) ? lo : hi) = mid;
        }
        hi = lo;
    }
    for (uint32_t n = hi; n < accepted; ++n) supported[order[n]] = false;
    scratch.release(mark);
    return FwStatus::okStatus();
}

FwStatus explainUnclaimed(const CompileTarget& target, const ModelDesc& model, const ClaimLimits& limits,
                          const bool* supported, uint32_t op) {
    if (op >= model.operationCount)
        return FwStatus::make(Code::kInvalidArgument,
                              "operation %" PRIu32 " does not exist (%" PRIu32 " operations)", op,
                              model.operationCount);
    if (supported[op]) return FwStatus::okStatus();
    if (FwStatus st = checkOperation(target, model, op); !st.ok()) return st;
    // It passed its own checks: the claimed prefix ended before it (claimOperations).
    uint32_t claimed = 0;
    for (uint32_t i = 0; i < op; ++i) claimed += supported[i] ? 1 : 0;
    const char* name = operationName(model.operations[op].type);
    if (claimed >= kMaxOperations)
        return FwStatus::make(Code::kGeneralFailure,
                              "operation %" PRIu32 " (%s): the firmware compiles at most %" PRIu32
                              " operations of a model; the first %" PRIu32 " it accepts are claimed",
                              op, name, kMaxOperations, kMaxOperations);
    return FwStatus::make(Code::kGeneralFailure,
                          "operation %" PRIu32 " (%s): the %" PRIu32
                          " claimed operations before it and it would exceed %" PRIu32
                          " model inputs or outputs or the firmware DRAM (%" PRIu64
                          " bytes for blob, queue and activations)%s",
                          op, name, claimed, kMaxIo, limits.firmwareDramBytes,
                          limits.compileScratch != nullptr ? " or the compile arena" : "");
}

}  // namespace npu::fw
