#pragma once
// The compiled-model blob: one contiguous little-endian byte image, so that it can be written to
// and read back from the compilation cache unchanged.
//
//   [header | commands (64-byte NPU commands) | metadata | data]
//   header   BlobHeader (kBlobHeaderWords 32-bit words)
//   commands the command stream template; DMAs address region 1 (data), region 2 (activations)
//            or region 0 + a relocation (a model input/output, patched at execute)
//   metadata IoDesc[numInputs + numOutputs], OpDesc[numOps], Reloc[numRelocs]
//   data     transformed constants: weights re-laid out for the array, biases, other constants
// commands + metadata are the "model cache", data is the "data cache". Every field is checked
// by validateBlob() before the firmware uses a blob, whoever produced it.

#include <cstdint>
#include <cstring>

#include "hwsim/isa/commands.h"

namespace npu::fw {

inline constexpr uint32_t kBlobMagic = 0x4255504E;  // "NPUB"
inline constexpr uint32_t kBlobVersion = 1;
inline constexpr uint32_t kBlobAlign = 64;

// DMA region convention of the firmware (REGION_BASE registers programmed by the executor).
inline constexpr uint32_t kRegionIo = 0;          // absolute; only through relocations
inline constexpr uint32_t kRegionData = 1;        // the blob's data section
inline constexpr uint32_t kRegionActivation = 2;  // the execution's activation area

namespace blob {
// Header word indexes.
inline constexpr uint32_t kMagic = 0, kVersion = 1, kHeaderBytes = 2, kTotalBytes = 3, kCommandOffset = 4,
                          kCommandCount = 5, kMetaOffset = 6, kMetaBytes = 7, kDataOffset = 8, kDataBytes = 9,
                          kActivationBytes = 10, kNumInputs = 11, kNumOutputs = 12, kNumOps = 13,
                          kNumRelocs = 14, kHwArray = 15, kHwScratchpadKib = 16, kHwAccumulatorKib = 17,
                          kReserved0 = 18, kReserved1 = 19;
inline constexpr uint32_t kHeaderWords = 20;
inline constexpr uint32_t kHeaderBytesValue = kHeaderWords * 4;
inline constexpr uint32_t kIoDescWords = 8;  // rank, dims[6], bytes
inline constexpr uint32_t kOpDescWords = 4;  // operationIndex, type, cmdBegin, cmdEnd
inline constexpr uint32_t kRelocWords = 2;   // cmdIndex, io (bit 31: output; low bits: index)
inline constexpr uint32_t kRelocOutputBit = 1u << 31;
}  // namespace blob

inline uint32_t readU32(const uint8_t* p) {
    return p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline void writeU32(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
    p[2] = static_cast<uint8_t>(v >> 16);
    p[3] = static_cast<uint8_t>(v >> 24);
}
inline isa::Command readCommand(const uint8_t* p) {
    isa::Command c;
    for (uint32_t i = 0; i < isa::kCommandWords; ++i) c.w[i] = readU32(p + 4 * i);
    return c;
}
inline void writeCommand(uint8_t* p, const isa::Command& c) {
    for (uint32_t i = 0; i < isa::kCommandWords; ++i) writeU32(p + 4 * i, c.w[i]);
}

struct IoDesc {
    uint32_t rank = 0;
    uint32_t dims[6] = {};
    uint32_t bytes = 0;
};
struct OpDesc {
    uint32_t operationIndex = 0, type = 0, cmdBegin = 0, cmdEnd = 0;
};
struct Reloc {
    uint32_t cmdIndex = 0;
    bool output = false;
    uint32_t ioIndex = 0;
};

// A validated blob, viewed in place (no copies).
struct BlobView {
    const uint8_t* base = nullptr;
    uint32_t header[blob::kHeaderWords] = {};

    uint32_t h(uint32_t word) const { return header[word]; }
    uint32_t commandCount() const { return header[blob::kCommandCount]; }
    uint32_t numInputs() const { return header[blob::kNumInputs]; }
    uint32_t numOutputs() const { return header[blob::kNumOutputs]; }
    uint32_t numOps() const { return header[blob::kNumOps]; }
    uint32_t numRelocs() const { return header[blob::kNumRelocs]; }
    const uint8_t* commands() const { return base + header[blob::kCommandOffset]; }
    isa::Command command(uint32_t i) const {
        return readCommand(commands() + uint64_t{i} * isa::kCommandBytes);
    }

    // io: inputs first, then outputs.
    IoDesc io(uint32_t i) const {
        const uint8_t* p = meta() + uint64_t{i} * blob::kIoDescWords * 4;
        IoDesc d;
        d.rank = readU32(p);
        for (uint32_t k = 0; k < 6; ++k) d.dims[k] = readU32(p + 4 + 4 * k);
        d.bytes = readU32(p + 28);
        return d;
    }
    OpDesc op(uint32_t i) const {
        const uint8_t* p = meta() + (uint64_t{numInputs() + numOutputs()} * blob::kIoDescWords +
                                     uint64_t{i} * blob::kOpDescWords) *
                                        4;
        return {readU32(p), readU32(p + 4), readU32(p + 8), readU32(p + 12)};
    }
    Reloc reloc(uint32_t i) const {
        const uint8_t* p =
            meta() + (uint64_t{numInputs() + numOutputs()} * blob::kIoDescWords +
                      uint64_t{numOps()} * blob::kOpDescWords + uint64_t{i} * blob::kRelocWords) *
                         4;
        const uint32_t io = readU32(p + 4);
        return {readU32(p), (io & blob::kRelocOutputBit) != 0, io & ~blob::kRelocOutputBit};
    }

private:
    const uint8_t* meta() const { return base + header[blob::kMetaOffset]; }
};

inline uint64_t expectedMetaBytes(uint64_t numIo, uint64_t numOps, uint64_t numRelocs) {
    return 4 * (numIo * blob::kIoDescWords + numOps * blob::kOpDescWords + numRelocs * blob::kRelocWords);
}

}  // namespace npu::fw
