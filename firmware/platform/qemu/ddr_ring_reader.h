#pragma once
// The firmware's end of the host-to-firmware byte ring in DDR (npu/protocol/ddr_ring.h).

#include <cstddef>
#include <cstdint>

#include "npu/protocol/ddr_ring.h"

namespace npu::fw::qemu {

class DdrRingReader {
public:
    DdrRingReader(proto::DdrRingHeader* header, const uint8_t* data) : header_(header), data_(data) {}

    // The host set the ring up (magic and the capacity this image was built for).
    bool valid() const {
        return header_->magic == proto::kDdrRingMagic && header_->capacity == proto::kQemuRingBytes;
    }
    // The host's kDdrRingFlag* (0 until it set the ring up).
    uint32_t flags() const { return valid() ? header_->flags : 0; }
    bool pending() const { return valid() && header_->head != header_->tail; }
    uint64_t resyncs() const { return resyncs_; }
    uint64_t bytesConsumed() const { return consumed_; }

    // Hands every pending byte, in at most two contiguous runs, to consume(bytes, length), then
    // tells the host the space is free. Returns the number of bytes consumed.
    template <typename Consume>
    size_t drain(Consume consume) {
        if (!valid()) return 0;
        const uint32_t head = header_->head;
        __asm volatile("dmb" ::: "memory");  // the data the host wrote before it moved head
        uint32_t tail = header_->tail;
        const uint32_t available = head - tail;
        if (available > proto::kQemuRingBytes) {
            // A head the host cannot have written: drop everything rather than read garbage.
            ++resyncs_;
            header_->tail = head;
            return 0;
        }
        constexpr uint32_t kMask = proto::kQemuRingBytes - 1;
        const uint32_t first = available < proto::kQemuRingBytes - (tail & kMask)
                                   ? available
                                   : proto::kQemuRingBytes - (tail & kMask);
        if (first > 0) consume(data_ + (tail & kMask), first);
        if (available > first) consume(data_, available - first);
        tail += available;
        consumed_ += available;
        __asm volatile("dmb" ::: "memory");  // done with the bytes before the host may reuse them
        header_->tail = tail;
        return available;
    }

private:
    volatile proto::DdrRingHeader* header_;
    const uint8_t* data_;
    uint64_t resyncs_ = 0;
    uint64_t consumed_ = 0;
};

}  // namespace npu::fw::qemu
