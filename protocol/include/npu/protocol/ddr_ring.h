#pragma once
// The host-to-firmware byte ring of the qemu transport, in the emulated SoC's DDR (a file both
// QEMU and the host map). Freestanding: the firmware image includes it too.
//
// An emulated UART delivers host-to-guest bytes one at a time (5-8 KB/s under QEMU 7.2), so
// the request bytes do not ride on it: the host copies them into this ring, advances `head` and
// sends one doorbell byte on UART0; the firmware, woken by the UART0 receive interrupt, feeds
// the bytes between `tail` and `head` to its RPC server and advances `tail`. Replies go the
// other way on UART0 itself (about 60 KB/s, and replies are small). head and tail are
// free-running byte counts (wrapping at 2^32); the host writes only head, the firmware only tail.

#include <cstdint>

namespace npu::proto {

inline constexpr uint32_t kDdrRingMagic = 0x474E5252u;  // "RRNG"
// Offsets from the start of DDR (= of the file): the header, then the data. The firmware's
// memory map (firmware/platform/qemu/soc.h) leaves this range to the ring.
inline constexpr uint64_t kQemuRingHeaderOffset = (256ull << 20) + (4u << 10);
inline constexpr uint64_t kQemuRingDataOffset = (256ull << 20) + (64u << 10);
inline constexpr uint32_t kQemuRingBytes = 4u << 20;  // a power of two

// DdrRingHeader::flags, set by the host before QEMU starts.
inline constexpr uint32_t kDdrRingFlagFirmwareLog = 1u << 0;  // NPU_VLOG=firmware: log lines on UART2

struct DdrRingHeader {
    uint32_t magic;     // kDdrRingMagic, written by the host before QEMU starts
    uint32_t capacity;  // bytes of data (a power of two)
    uint32_t head;      // bytes written so far (host)
    uint32_t tail;      // bytes consumed so far (firmware)
    uint32_t flags;     // kDdrRingFlag*
};

}  // namespace npu::proto
