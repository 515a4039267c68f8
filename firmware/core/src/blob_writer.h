#pragma once
// The code generator's building blocks, shared by compiler.cpp and the operation emitters in
// their own files: the blob writer (commands, relocations, data) and the double-buffered
// pipelines. Internal to firmware/core.

#include <algorithm>
#include <cstdint>

#include "blob_format.h"
#include "hwsim/isa/commands.h"

namespace npu::fw {

using isa::Opcode;
using isa::Queue;

inline uint64_t align(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

struct TensorRef {
    uint32_t region = kRegionActivation;
    uint64_t offset = 0;
    bool isOutput = false;
    uint32_t ioIndex = 0;
};

class BlobWriter {
public:
    // All pointers null: counting pass.
    BlobWriter(uint8_t* commands, uint8_t* relocs, uint8_t* data)
        : commands_(commands), relocs_(relocs), data_(data) {}

    uint32_t emit(const isa::Command& c) {
        if (commands_ != nullptr) writeCommand(commands_ + uint64_t{commandCount_} * isa::kCommandBytes, c);
        return commandCount_++;
    }
    void dma(Opcode op, const TensorRef& t, isa::DmaBox box) {
        box.region = t.region;
        box.dramOffset += t.offset;
        const uint32_t index = emit(isa::makeDma(op, box));
        if (t.region != kRegionIo) return;
        if (relocs_ != nullptr) {
            uint8_t* p = relocs_ + uint64_t{relocCount_} * blob::kRelocWords * 4;
            writeU32(p, index);
            writeU32(p + 4, t.ioIndex | (t.isOutput ? blob::kRelocOutputBit : 0));
        }
        ++relocCount_;
    }
    uint64_t reserveData(uint64_t bytes) {
        const uint64_t offset = align(dataBytes_, 16);
        dataBytes_ = offset + bytes;
        return offset;
    }
    uint8_t* data(uint64_t offset) { return data_ != nullptr ? data_ + offset : nullptr; }
    uint32_t commandCount() const { return commandCount_; }
    uint32_t relocCount() const { return relocCount_; }
    uint64_t dataBytes() const { return dataBytes_; }

private:
    uint8_t* commands_;
    uint8_t* relocs_;
    uint8_t* data_;
    uint32_t commandCount_ = 0;
    uint32_t relocCount_ = 0;
    uint64_t dataBytes_ = 0;
};

// Double-buffered load / compute / store over `tiles` tiles, synchronised with tokens:
// load(t) may overwrite buffer t%2 once compute(t-2) is done with it; compute(t) may overwrite
// output buffer t%2 once store(t-2) has drained it. Every PUSH has its POP.
template <typename Load, typename Compute, typename Store>
void emitPipeline(BlobWriter& w, uint32_t tiles, Load load, Compute compute, Store store) {
    for (uint32_t t = 0; t < tiles; ++t) {
        if (t >= 2) w.emit(isa::makePop(Queue::kCompute, Queue::kLoad));
        load(t);
        w.emit(isa::makePush(Queue::kLoad, Queue::kCompute));
        w.emit(isa::makePop(Queue::kLoad, Queue::kCompute));
        if (t >= 2) w.emit(isa::makePop(Queue::kStore, Queue::kCompute));
        compute(t);
        if (t + 2 < tiles) w.emit(isa::makePush(Queue::kCompute, Queue::kLoad));
        w.emit(isa::makePush(Queue::kCompute, Queue::kStore));
        w.emit(isa::makePop(Queue::kCompute, Queue::kStore));
        store(t);
        if (t + 2 < tiles) w.emit(isa::makePush(Queue::kStore, Queue::kCompute));
    }
}

// Two-stage load -> store pipeline over `tiles` tiles in two buffers (copies with no compute):
// load(t) may overwrite buffer t%2 once store(t-2) has drained it.
template <typename Load, typename Store>
void emitCopyPipeline(BlobWriter& w, uint32_t tiles, Load load, Store store) {
    for (uint32_t t = 0; t < tiles; ++t) {
        if (t >= 2) w.emit(isa::makePop(Queue::kStore, Queue::kLoad));
        load(t);
        w.emit(isa::makePush(Queue::kLoad, Queue::kStore));
        w.emit(isa::makePop(Queue::kLoad, Queue::kStore));
        store(t);
        if (t + 2 < tiles) w.emit(isa::makePush(Queue::kStore, Queue::kLoad));
    }
}

// Tile t of a pooling or resizing, tiled by rowTile output rows (of outH) and channelTile
// channels (of `channels`), channel tile fastest: image b, output rows [r0, r0 + rows),
// channels [c0, c0 + ct).
struct ImageTile {
    uint32_t b, r0, rows, c0, ct;
};
inline ImageTile imageTile(uint32_t t, uint32_t rowTile, uint32_t outH, uint32_t channelTile,
                           uint32_t channels) {
    const uint32_t rowTiles = (outH + rowTile - 1) / rowTile;
    const uint32_t chanTiles = (channels + channelTile - 1) / channelTile;
    ImageTile x;
    x.c0 = (t % chanTiles) * channelTile;
    x.ct = std::min(channelTile, channels - x.c0);
    x.r0 = (t / chanTiles % rowTiles) * rowTile;
    x.b = t / chanTiles / rowTiles;
    x.rows = std::min(rowTile, outH - x.r0);
    return x;
}

// The DMA box of rows [y, y + rows) of image b (h x wd pixels, `channels` deep, NHWC or NCHW),
// channels [c0, c0 + ct), at scratchpad `sram` as HWC: NHWC is a box of pixels x channels (one
// run per row when every channel is taken); NCHW is transposed element by element (as CONV_2D).
// Pooling and resizing tiles.
inline isa::DmaBox imageTileBox(bool nchw, uint32_t channels, uint32_t b, uint32_t c0, uint32_t ct,
                                uint32_t y, uint32_t rows, uint32_t h, uint32_t wd, uint32_t sram) {
    isa::DmaBox d;
    d.sramAddr = sram;
    if (!nchw) {
        d.dramOffset = ((uint64_t{b} * h + y) * wd) * channels + c0;
        d.innerBytes = ct;
        d.rows = rows * wd;
        d.dramRowStride = channels;
        d.sramRowStride = ct;
        if (ct == channels) {
            d.innerBytes = wd * ct;
            d.rows = rows;
            d.dramRowStride = d.sramRowStride = wd * ct;
        }
        return d;
    }
    d.dramOffset = (uint64_t{b} * channels + c0) * h * wd + uint64_t{y} * wd;
    d.innerBytes = 1;
    d.rows = rows * wd;
    d.dramRowStride = 1;
    d.sramRowStride = ct;
    d.planes = ct;
    d.dramPlaneStride = h * wd;
    d.sramPlaneStride = 1;
    return d;
}

}  // namespace npu::fw
