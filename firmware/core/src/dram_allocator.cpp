#include "dram_allocator.h"

namespace npu::fw {

bool DramAllocator::init(Arena& arena, uint64_t base, uint64_t limit) {
    blocks_ = arena.allocateArray<Block>(kMaxBlocks);
    count_ = 0;
    base_ = (base + kAlign - 1) / kAlign * kAlign;
    if (base_ == 0) base_ = kAlign;  // keep address 0 out of circulation
    limit_ = limit;
    return blocks_ != nullptr;
}

bool DramAllocator::allocate(uint64_t bytes, uint64_t* addr) {
    if (bytes == 0 || count_ == kMaxBlocks || bytes > UINT64_MAX - kAlign) return false;
    const uint64_t size = (bytes + kAlign - 1) / kAlign * kAlign;
    uint64_t cursor = base_;
    uint32_t at = 0;
    for (; at <= count_; ++at) {
        const uint64_t gapEnd = at < count_ ? blocks_[at].addr : limit_;
        if (gapEnd >= cursor && gapEnd - cursor >= size) break;
        if (at < count_) cursor = blocks_[at].addr + blocks_[at].bytes;
    }
    if (at > count_) return false;
    for (uint32_t i = count_; i > at; --i) blocks_[i] = blocks_[i - 1];
    blocks_[at] = {cursor, size};
    ++count_;
    *addr = cursor;
    return true;
}

void DramAllocator::free(uint64_t addr) {
    for (uint32_t i = 0; i < count_; ++i) {
        if (blocks_[i].addr != addr) continue;
        for (uint32_t j = i + 1; j < count_; ++j) blocks_[j - 1] = blocks_[j];
        --count_;
        return;
    }
}

uint64_t DramAllocator::bytesInUse() const {
    uint64_t sum = 0;
    for (uint32_t i = 0; i < count_; ++i) sum += blocks_[i].bytes;
    return sum;
}

}  // namespace npu::fw
