#include "executor.h"

#include <cinttypes>
#include <cstring>

#include "hwsim/isa/registers.h"

namespace npu::fw {

namespace {

struct PmuSnapshot {
    uint64_t cycles = 0, macs = 0, stalls = 0;
    // Detailed profile only.
    uint64_t dmaRead = 0, dmaWrite = 0, stallDma = 0, loadActive = 0, computeActive = 0, storeActive = 0;
};

uint64_t read64(Platform& p, uint32_t lo, uint32_t hi) {
    const uint32_t l = p.readReg(lo);  // latches HI
    return l | (uint64_t{p.readReg(hi)} << 32);
}

PmuSnapshot readPmu(Platform& p, bool detailed) {
    PmuSnapshot s{read64(p, isa::kRegPmuCyclesLo, isa::kRegPmuCyclesHi),
                  read64(p, isa::kRegPmuMacsLo, isa::kRegPmuMacsHi),
                  read64(p, isa::kRegPmuStallLo, isa::kRegPmuStallHi)};
    if (!detailed) return s;
    s.dmaRead = read64(p, isa::kRegPmuDmaReadLo, isa::kRegPmuDmaReadHi);
    s.dmaWrite = read64(p, isa::kRegPmuDmaWriteLo, isa::kRegPmuDmaWriteHi);
    s.stallDma = read64(p, isa::kRegPmuStallDmaLo, isa::kRegPmuStallDmaHi);
    s.loadActive = read64(p, isa::kRegPmuLoadActiveLo, isa::kRegPmuLoadActiveHi);
    s.computeActive = read64(p, isa::kRegPmuComputeActiveLo, isa::kRegPmuComputeActiveHi);
    s.storeActive = read64(p, isa::kRegPmuStoreActiveLo, isa::kRegPmuStoreActiveHi);
    return s;
}

// What one operation cost: the difference of two snapshots.
void fillProfile(const PmuSnapshot& before, const PmuSnapshot& after, OpProfile* prof) {
    prof->cycles = after.cycles - before.cycles;
    prof->macs = after.macs - before.macs;
    prof->stallCycles = after.stalls - before.stalls;
    prof->dramReadBytes = after.dmaRead - before.dmaRead;
    prof->dramWriteBytes = after.dmaWrite - before.dmaWrite;
    prof->stallDmaCycles = after.stallDma - before.stallDma;
    prof->loadActiveCycles = after.loadActive - before.loadActive;
    prof->computeActiveCycles = after.computeActive - before.computeActive;
    prof->storeActiveCycles = after.storeActive - before.storeActive;
}

void writeAddr(Platform& p, uint32_t lo, uint32_t hi, uint64_t v) {
    p.writeReg(lo, static_cast<uint32_t>(v));
    p.writeReg(hi, static_cast<uint32_t>(v >> 32));
}

FwStatus checkIo(const ExecutionContext& ctx, const IoDesc& d, const IoArg& a, const char* what,
                 uint32_t index, bool* sufficient) {
    if (a.hasNoValue)
        return FwStatus::make(Code::kInvalidArgument, "%s %" PRIu32 ": omitted, but the model needs it", what,
                              index);
    if (a.rank != 0) {
        bool same = a.rank == d.rank;
        for (uint32_t k = 0; same && k < d.rank; ++k) same = a.dims[k] == d.dims[k];
        if (!same)
            return FwStatus::make(Code::kInvalidArgument,
                                  "%s %" PRIu32 ": dimensions differ from the model's (rank %" PRIu32
                                  " vs %" PRIu32 ")",
                                  what, index, a.rank, d.rank);
    }
    if (a.bufferToken != 0 && !a.deviceBuffer) {
        return FwStatus::make(Code::kInvalidArgument,
                              "%s %" PRIu32 ": buffer token %" PRIu32 " was not bound (Runtime::bindBuffers)",
                              what, index, a.bufferToken);
    }
    // Only a bound driver-managed buffer lies in firmware DRAM; everything else in the window.
    const uint64_t size = ctx.platform.dramSize();
    const uint64_t lowest = a.deviceBuffer ? 0 : ctx.hostWindowBase;
    if (a.addr < lowest || a.addr > size || a.length > size - a.addr) {
        return FwStatus::make(Code::kInvalidArgument,
                              "%s %" PRIu32 ": [0x%llx, +%" PRIu32 ") is outside the host window", what,
                              index, static_cast<unsigned long long>(a.addr), a.length);
    }
    *sufficient = a.length >= d.bytes;
    return FwStatus::okStatus();
}

}  // namespace

void resetNpu(Platform& platform) {
    platform.writeReg(isa::kRegCtrl, isa::kCtrlSoftReset);
    platform.writeReg(isa::kRegCtrl, isa::kCtrlEnable | isa::kCtrlIrqEnable);
    platform.writeReg(isa::kRegIrqMask, isa::kIrqAll);
    platform.writeReg(isa::kRegIrqClear, isa::kIrqAll);
}

namespace {

// The request's inputs and outputs against the blob's: counts, ranges, sizes. Fills the output
// shapes of *result; OUTPUT_INSUFFICIENT_SIZE when an output buffer is too small.
FwStatus checkRequest(const ExecutionContext& ctx, const BlobView& v, const IoArg* inputs,
                      uint32_t inputCount, const IoArg* outputs, uint32_t outputCount, ExecResult* result) {
    if (inputCount != v.numInputs() || outputCount != v.numOutputs()) {
        return FwStatus::make(Code::kInvalidArgument,
                              "request has %" PRIu32 " inputs and %" PRIu32 " outputs; the model has %" PRIu32
                              " and %" PRIu32 "",
                              inputCount, outputCount, v.numInputs(), v.numOutputs());
    }
    if ((inputCount > 0 && inputs == nullptr) || outputs == nullptr || result == nullptr) {
        return FwStatus::make(Code::kInvalidArgument, "execute: missing argument arrays");
    }
    result->deviceFault = kDeviceFaultNone;
    result->deviceCycles = 0;
    result->profileCount = 0;
    result->outputCount = outputCount;
    for (uint32_t i = 0; i < inputCount; ++i) {
        bool sufficient = true;
        FwStatus st = checkIo(ctx, v.io(i), inputs[i], "input", i, &sufficient);
        if (!st.ok()) return st;
        if (!sufficient)
            return FwStatus::make(Code::kInvalidArgument,
                                  "input %" PRIu32 ": %" PRIu32 " bytes given, %" PRIu32 " needed", i,
                                  inputs[i].length, v.io(i).bytes);
    }
    bool allSufficient = true;
    for (uint32_t i = 0; i < outputCount; ++i) {
        const IoDesc d = v.io(inputCount + i);
        bool sufficient = true;
        FwStatus st = checkIo(ctx, d, outputs[i], "output", i, &sufficient);
        if (!st.ok()) return st;
        OutputShapeInfo& o = result->outputs[i];
        o.rank = d.rank;
        for (uint32_t k = 0; k < kMaxRank; ++k) o.dims[k] = d.dims[k];
        o.sufficient = sufficient;
        allSufficient = allSufficient && sufficient;
    }
    if (!allSufficient)
        return FwStatus::make(Code::kOutputInsufficientSize, "an output buffer is smaller than its tensor");
    return FwStatus::okStatus();
}

// The command queue at `queue` (the blob's stream with its relocations applied: each
// input/output DMA moved to the request's buffer).
void writeQueue(const BlobView& v, const IoArg* inputs, const IoArg* outputs, uint8_t* queue) {
    std::memcpy(queue, v.commands(), uint64_t{v.commandCount()} * isa::kCommandBytes);
    for (uint32_t r = 0; r < v.numRelocs(); ++r) {
        const Reloc rel = v.reloc(r);
        const IoArg& a = rel.output ? outputs[rel.ioIndex] : inputs[rel.ioIndex];
        isa::Command c = readCommand(queue + uint64_t{rel.cmdIndex} * isa::kCommandBytes);
        isa::DmaBox box = isa::dmaBoxOf(c);
        box.dramOffset += a.addr;  // validated: offset + span <= tensor bytes <= a.length
        c.w[isa::dma::kDramOffsetLo] = static_cast<uint32_t>(box.dramOffset);
        c.w[isa::dma::kDramOffsetHi] = static_cast<uint32_t>(box.dramOffset >> 32);
        writeCommand(queue + uint64_t{rel.cmdIndex} * isa::kCommandBytes, c);
    }
}

// The NPU's control, interrupt and region registers, and its command queue at `block`.
void programNpu(Platform& p, const LoadedBlob& blob, uint64_t block, uint64_t queueBytes) {
    if ((p.readReg(isa::kRegStatus) & isa::kStatusError) != 0) resetNpu(p);
    p.writeReg(isa::kRegCtrl, isa::kCtrlEnable | isa::kCtrlIrqEnable);
    p.writeReg(isa::kRegIrqMask, isa::kIrqAll);
    p.writeReg(isa::kRegIrqClear, isa::kIrqAll);
    p.writeReg(isa::kRegPmuCtrl, 0);
    writeAddr(p, isa::regRegionBaseLo(kRegionIo), isa::regRegionBaseHi(kRegionIo), 0);
    writeAddr(p, isa::regRegionBaseLo(kRegionData), isa::regRegionBaseHi(kRegionData),
              blob.dramAddr + blob.view.h(blob::kDataOffset));
    writeAddr(p, isa::regRegionBaseLo(kRegionActivation), isa::regRegionBaseHi(kRegionActivation),
              block + queueBytes);
    writeAddr(p, isa::kRegCmdqBaseLo, isa::kRegCmdqBaseHi, block);
    p.writeReg(isa::kRegCmdqSize, static_cast<uint32_t>(queueBytes));  // resets HEAD and TAIL
}

// Rings the doorbell for one operation's commands and waits for its interrupt. A hang or an NPU
// fault resets the NPU and says which operation, and sets result->deviceFault.
FwStatus runOperation(const ExecutionContext& ctx, const OpDesc& op, ExecResult* result) {
    Platform& p = ctx.platform;
    p.writeReg(isa::kRegCmdqTail, op.cmdEnd * isa::kCommandBytes);
    p.writeReg(isa::kRegDoorbell, 1);
    if (!p.waitForIrq(ctx.irqTimeoutUs)) {
        resetNpu(p);
        result->deviceFault = kDeviceFaultHang;
        return FwStatus::make(Code::kGeneralFailure,
                              "operation %" PRIu32 " (type %" PRIu32
                              "): NPU raised no interrupt within %" PRIu32 " us",
                              op.operationIndex, op.type, ctx.irqTimeoutUs);
    }
    const uint32_t irq = p.readReg(isa::kRegIrqStatus);
    p.writeReg(isa::kRegIrqClear, irq);
    if ((irq & isa::kIrqError) == 0) return FwStatus::okStatus();
    const uint32_t code = p.readReg(isa::kRegErrorCode);
    const uint32_t offset = p.readReg(isa::kRegErrorOffset);
    resetNpu(p);
    // A bus or memory error corrupts data; any other code is a malformed command stream.
    if (code == static_cast<uint32_t>(isa::ErrorCode::kDmaError) ||
        code == static_cast<uint32_t>(isa::ErrorCode::kSramEcc)) {
        result->deviceFault = kDeviceFaultData;
    }
    return FwStatus::make(Code::kGeneralFailure,
                          "operation %" PRIu32 " (type %" PRIu32 "): NPU fault %s (code %" PRIu32
                          ") at command offset 0x%" PRIx32 " (command %" PRIu32 ")",
                          op.operationIndex, op.type, isa::errorCodeName(static_cast<isa::ErrorCode>(code)),
                          code, offset, offset / isa::kCommandBytes);
}

}  // namespace

FwStatus executeBlob(const ExecutionContext& ctx, const LoadedBlob& blob, const IoArg* inputs,
                     uint32_t inputCount, const IoArg* outputs, uint32_t outputCount, ExecResult* result) {
    const BlobView& v = blob.view;
    Platform& p = ctx.platform;
    if (FwStatus st = checkRequest(ctx, v, inputs, inputCount, outputs, outputCount, result); !st.ok())
        return st;

    // Command queue (one spare slot: a full ring would look empty) and activation area.
    const uint64_t queueBytes = (uint64_t{v.commandCount()} + 1) * isa::kCommandBytes;
    const uint64_t activationBytes = v.h(blob::kActivationBytes);
    uint64_t block = 0;
    if (!ctx.dram.allocate(queueBytes + activationBytes, &block)) {
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "no firmware DRAM for an execution (%llu bytes)",
                              static_cast<unsigned long long>(queueBytes + activationBytes));
    }
    writeQueue(v, inputs, outputs, p.dram() + block);
    programNpu(p, blob, block, queueBytes);

    FwStatus status = FwStatus::okStatus();
    const PmuSnapshot start = readPmu(p, ctx.detailedProfile);
    PmuSnapshot before = start;
    for (uint32_t i = 0; i < v.numOps(); ++i) {
        const OpDesc op = v.op(i);
        OpProfile& prof = result->profile[i];
        prof = OpProfile{};
        prof.operationIndex = op.operationIndex;
        prof.type = op.type;
        result->profileCount = i + 1;
        if (op.cmdEnd == op.cmdBegin) continue;
        if (i > 0) {
            const StopReason stop = p.stopRequested({WorkPhase::kExecute, i, v.numOps()});
            if (stop != StopReason::kNone) {
                status =
                    stoppedStatus(stop, "execution", "operation", op.operationIndex, i, v.numOps(), "ran");
                break;
            }
        }
        if (!(status = runOperation(ctx, op, result)).ok()) break;
        const PmuSnapshot after = readPmu(p, ctx.detailedProfile);
        fillProfile(before, after, &prof);
        before = after;
    }
    result->deviceCycles = before.cycles - start.cycles;
    ctx.dram.free(block);
    return status;
}

}  // namespace npu::fw
