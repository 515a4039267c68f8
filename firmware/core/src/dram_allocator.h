#pragma once
// First-fit allocator over the firmware's part of device DRAM, with a fixed-capacity table of
// live blocks (taken from the arena). The NPU sees these addresses; the firmware never
// dereferences a block except through Platform::dram().

#include <cstdint>

#include "npu/fw/arena.h"

namespace npu::fw {

class DramAllocator {
public:
    static constexpr uint32_t kMaxBlocks = 256;
    static constexpr uint64_t kAlign = 64;

    // Manages [base, limit). Returns false if the table cannot be allocated from `arena`.
    bool init(Arena& arena, uint64_t base, uint64_t limit);
    // 0 is never a valid block address (base > 0 or the first 64 bytes are reserved).
    bool allocate(uint64_t bytes, uint64_t* addr);
    void free(uint64_t addr);
    void clear() { count_ = 0; }
    uint64_t bytesInUse() const;
    uint32_t blocksInUse() const { return count_; }

private:
    struct Block {
        uint64_t addr;
        uint64_t bytes;
    };
    Block* blocks_ = nullptr;  // sorted by addr
    uint32_t count_ = 0;
    uint64_t base_ = 0;
    uint64_t limit_ = 0;
};

}  // namespace npu::fw
