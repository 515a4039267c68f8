#include "blob_validator.h"

#include <cinttypes>

#include "compute_command_check.h"

namespace npu::fw {

namespace {

FwStatus bad(const char* what, uint32_t value, uint64_t limit) {
    return FwStatus::make(Code::kGeneralFailure, "blob rejected: %s (value %" PRIu32 ", limit %llu)", what,
                          value, static_cast<unsigned long long>(limit));
}

// Every operation's PUSHes and POPs balance per (from, to) queue pair, so that the token queues
// are empty when an operation ends: a blob that leaves tokens behind would fill the queues over
// executions until another client's model faults with TOKEN_OVERFLOW (found by fuzzing).
FwStatus checkTokenBalance(const BlobView& v) {
    for (uint32_t i = 0; i < v.numOps(); ++i) {
        const OpDesc o = v.op(i);
        int64_t balance[isa::kQueueCount * isa::kQueueCount] = {};
        for (uint32_t k = o.cmdBegin; k < o.cmdEnd; ++k) {
            const isa::Command c = v.command(k);
            const isa::Opcode op = isa::opcodeOf(c);
            if (op != isa::Opcode::kPush && op != isa::Opcode::kPop) continue;
            const uint32_t from = c.w[isa::token::kFrom], to = c.w[isa::token::kTo];
            if (from >= isa::kQueueCount || to >= isa::kQueueCount || from == to) {
                return bad("token command between invalid queues", k, isa::kQueueCount - 1);
            }
            balance[from * isa::kQueueCount + to] += op == isa::Opcode::kPush ? 1 : -1;
        }
        for (int64_t b : balance) {
            if (b != 0) return bad("operation's token pushes and pops do not balance", i, 0);
        }
    }
    return FwStatus::okStatus();
}

}  // namespace

bool dmaDramSpan(const isa::Command& c, uint64_t* end) {
    const isa::DmaBox b = isa::dmaBoxOf(c);
    if (b.innerBytes == 0 || b.rows == 0 || b.planes == 0) return false;
    uint64_t span = uint64_t{b.planes - 1} * b.dramPlaneStride;
    uint64_t rows = uint64_t{b.rows - 1} * b.dramRowStride;
    if (__builtin_add_overflow(span, rows, &span) ||
        __builtin_add_overflow(span, uint64_t{b.innerBytes}, &span) ||
        __builtin_add_overflow(span, b.dramOffset, &span)) {
        return false;
    }
    *end = span;
    return true;
}

namespace {

using namespace blob;

// The header: magic, version, sizes, reserved words, and the NPU configuration it was compiled for.
FwStatus checkHeader(const BlobView& v, uint64_t size, const BlobLimits& limits) {
    if (v.h(kMagic) != kBlobMagic) return bad("bad magic", v.h(kMagic), kBlobMagic);
    if (v.h(kVersion) != kBlobVersion) return bad("unsupported version", v.h(kVersion), kBlobVersion);
    if (v.h(kHeaderBytes) != kHeaderBytesValue)
        return bad("header size", v.h(kHeaderBytes), kHeaderBytesValue);
    if (v.h(kTotalBytes) != size)
        return bad("total size differs from the bytes given", v.h(kTotalBytes), size);
    if (v.h(kReserved0) != 0 || v.h(kReserved1) != 0)
        return bad("reserved header word set", v.h(kReserved0) | v.h(kReserved1), 0);
    const uint32_t hwArray = limits.arrayRows | (limits.arrayCols << 16);
    if (v.h(kHwArray) != hwArray || v.h(kHwScratchpadKib) != limits.scratchpadKib ||
        v.h(kHwAccumulatorKib) != limits.accumulatorKib) {
        return bad("compiled for another NPU configuration (array)", v.h(kHwArray), hwArray);
    }
    return FwStatus::okStatus();
}

// Sections: in order, aligned, inside the image, not overlapping.
FwStatus checkSections(const BlobView& v, uint64_t size, const BlobLimits& limits) {
    const uint64_t cmdOff = v.h(kCommandOffset), cmdBytes = uint64_t{v.h(kCommandCount)} * isa::kCommandBytes;
    const uint64_t metaOff = v.h(kMetaOffset), metaBytes = v.h(kMetaBytes);
    const uint64_t dataOff = v.h(kDataOffset), dataBytes = v.h(kDataBytes);
    if (cmdOff < kHeaderBytesValue || cmdOff % kBlobAlign != 0)
        return bad("command offset", v.h(kCommandOffset), kHeaderBytesValue);
    if (v.h(kCommandCount) == 0) return bad("empty command stream", 0, 1);
    if (metaOff < cmdOff + cmdBytes || metaOff > size) return bad("metadata offset", v.h(kMetaOffset), size);
    if (metaBytes > size - metaOff) return bad("metadata size", v.h(kMetaBytes), size - metaOff);
    if (dataOff < metaOff + metaBytes || dataOff % kBlobAlign != 0 || dataOff > size)
        return bad("data offset", v.h(kDataOffset), size);
    if (dataBytes > size - dataOff) return bad("data size", v.h(kDataBytes), size - dataOff);
    if (v.h(kActivationBytes) > limits.maxActivationBytes)
        return bad("activation area", v.h(kActivationBytes), limits.maxActivationBytes);
    return FwStatus::okStatus();
}

// Metadata tables: counts, the input/output descriptors (their byte sizes into ioBytes) and the
// operations' command ranges, which must tile the stream.
FwStatus checkTables(const BlobView& v, uint32_t* ioBytes) {
    if (v.numInputs() > kMaxIo || v.numOutputs() > kMaxIo || v.numOutputs() == 0)
        return bad("input/output count", v.numInputs() + v.numOutputs(), kMaxIo);
    if (v.numOps() == 0 || v.numOps() > kMaxOperations)
        return bad("operation count", v.numOps(), kMaxOperations);
    if (v.numRelocs() > v.commandCount()) return bad("relocation count", v.numRelocs(), v.commandCount());
    if (v.h(kMetaBytes) !=
        expectedMetaBytes(uint64_t{v.numInputs()} + v.numOutputs(), v.numOps(), v.numRelocs())) {
        return bad("metadata size does not match its tables", v.h(kMetaBytes), 0);
    }
    for (uint32_t i = 0; i < v.numInputs() + v.numOutputs(); ++i) {
        const IoDesc d = v.io(i);
        if (d.rank == 0 || d.rank > kMaxRank) return bad("io rank", d.rank, kMaxRank);
        uint64_t elements = 1;
        for (uint32_t k = 0; k < 6; ++k) {
            if (k < d.rank &&
                (d.dims[k] == 0 || __builtin_mul_overflow(elements, uint64_t{d.dims[k]}, &elements))) {
                return bad("io dimension", d.dims[k], UINT32_MAX);
            }
            if (k >= d.rank && d.dims[k] != 0) return bad("io dimension beyond rank", d.dims[k], 0);
        }
        // 8-bit elements, or float32 ones (QUANTIZE's input, DEQUANTIZE's output); every DMA
        // below is checked against these bytes.
        if (elements != d.bytes && elements * 4 != d.bytes)
            return bad("io byte size (1 or 4 bytes per element)", d.bytes, elements);
        ioBytes[i] = d.bytes;
    }
    uint32_t expectBegin = 0;
    for (uint32_t i = 0; i < v.numOps(); ++i) {
        const OpDesc o = v.op(i);
        if (o.cmdBegin != expectBegin || o.cmdEnd < o.cmdBegin || o.cmdEnd > v.commandCount()) {
            return bad("operation command range", o.cmdEnd, v.commandCount());
        }
        expectBegin = o.cmdEnd;
    }
    if (expectBegin != v.commandCount())
        return bad("operations do not cover the stream", expectBegin, v.commandCount());
    return FwStatus::okStatus();
}

// Region 0 (absolute) is reachable only through exactly one relocation. Relocations are sorted by
// command index, strictly, so each names a distinct command; with the count check of
// checkCommands that makes them a bijection onto the region-0 DMAs.
FwStatus checkRelocations(const BlobView& v, const uint32_t* ioBytes) {
    for (uint32_t r = 0; r < v.numRelocs(); ++r) {
        const Reloc rel = v.reloc(r);
        if (rel.cmdIndex >= v.commandCount())
            return bad("relocation command index", rel.cmdIndex, v.commandCount());
        if (r > 0 && rel.cmdIndex <= v.reloc(r - 1).cmdIndex)
            return bad("relocations not strictly ordered", rel.cmdIndex, 0);
        const isa::Command c = v.command(rel.cmdIndex);
        const isa::Opcode op = isa::opcodeOf(c);
        // Inputs are only read; an output is written, and read back by a later operation when
        // the model also consumes it (an NNAPI model output may feed another operation).
        const bool dmaOk = op == isa::Opcode::kDmaLoad || (rel.output && op == isa::Opcode::kDmaStore);
        if (!dmaOk || c.w[isa::dma::kRegion] != kRegionIo) {
            return bad("relocation does not name a DMA of the right direction", rel.cmdIndex, 0);
        }
        const uint32_t limit = rel.output ? v.numOutputs() : v.numInputs();
        if (rel.ioIndex >= limit) return bad("relocation io index", rel.ioIndex, limit);
        uint64_t end = 0;
        const uint32_t bytesAvail = ioBytes[(rel.output ? v.numInputs() : 0) + rel.ioIndex];
        if (!dmaDramSpan(c, &end) || end > bytesAvail)
            return bad("DMA outside its input/output tensor", rel.cmdIndex, bytesAvail);
    }
    return FwStatus::okStatus();
}

// A compute or vector command: its fields and its scratchpad / accumulator boxes in range.
FwStatus checkComputeCommand(const isa::Command& c, uint32_t i, const BlobLimits& limits) {
    const isa::Opcode op = isa::opcodeOf(c);
    const uint64_t sram = uint64_t{limits.scratchpadKib} * 1024,
                   accEntries = uint64_t{limits.accumulatorKib} * 1024 / 4;
    if (const char* what = computeCommandProblem(c, sram, accEntries)) {
        return FwStatus::make(Code::kGeneralFailure,
                              "blob rejected: command %" PRIu32
                              " (opcode 0x%02x): %s out of range (a field, an empty size, or a box "
                              "outside the %llu-byte scratchpad / %llu accumulator entries)",
                              i, static_cast<unsigned>(op), what, static_cast<unsigned long long>(sram),
                              static_cast<unsigned long long>(accEntries));
    }
    return FwStatus::okStatus();
}

// Commands: known opcodes only; no STOP/IRQ (the executor owns the queue); every DMA inside its
// region; as many absolute (region 0) DMAs as relocations.
FwStatus checkCommands(const BlobView& v, const BlobLimits& limits) {
    uint32_t absoluteDmas = 0;
    for (uint32_t i = 0; i < v.commandCount(); ++i) {
        const isa::Command c = v.command(i);
        const isa::Opcode op = isa::opcodeOf(c);
        if (!isa::isKnownOpcode(op) || isa::reservedOf(c) != 0 || op == isa::Opcode::kStop ||
            op == isa::Opcode::kIrq) {
            return bad("command not allowed in a blob", i, static_cast<uint32_t>(op));
        }
        if (commandClass(op) != CommandClass::kOther) {
            if (FwStatus st = checkComputeCommand(c, i, limits); !st.ok()) return st;
            continue;
        }
        if (!isa::isDma(op)) continue;  // tokens (checkTokenBalance), FENCE, NOP
        const bool fill = (isa::flagsOf(c) & isa::dma::kFlagFill) != 0;
        const uint32_t region = c.w[isa::dma::kRegion];
        if (fill) continue;  // no DRAM access
        if (region == kRegionIo) {
            ++absoluteDmas;
            continue;
        }
        uint64_t end = 0;
        const uint64_t limit = region == kRegionData         ? v.h(kDataBytes)
                               : region == kRegionActivation ? v.h(kActivationBytes)
                                                             : 0;
        if (region != kRegionData && region != kRegionActivation)
            return bad("DMA region", region, kRegionActivation);
        if (!dmaDramSpan(c, &end) || end > limit) return bad("DMA outside its region", i, limit);
    }
    if (absoluteDmas != v.numRelocs())
        return bad("absolute DMA without relocation", absoluteDmas, v.numRelocs());
    return FwStatus::okStatus();
}

}  // namespace

FwStatus validateBlob(const uint8_t* bytes, uint64_t size, const BlobLimits& limits, BlobView* view) {
    if (bytes == nullptr || size < kHeaderBytesValue) {
        return bad("shorter than its header", static_cast<uint32_t>(size), kHeaderBytesValue);
    }
    BlobView v;
    v.base = bytes;
    for (uint32_t i = 0; i < kHeaderWords; ++i) v.header[i] = readU32(bytes + 4 * i);
    uint32_t ioBytes[2 * kMaxIo] = {};
    FwStatus st = checkHeader(v, size, limits);
    if (st.ok()) st = checkSections(v, size, limits);
    if (st.ok()) st = checkTables(v, ioBytes);
    if (st.ok()) st = checkRelocations(v, ioBytes);
    if (st.ok()) st = checkCommands(v, limits);
    if (st.ok()) st = checkTokenBalance(v);
    if (!st.ok()) return st;
    *view = v;
    return FwStatus::okStatus();
}

}  // namespace npu::fw
