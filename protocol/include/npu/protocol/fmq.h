#pragma once
// The fast message queue (FMQ) of a burst (docs/protocol.md, "Burst channels"): a byte stream each
// way through shared memory, so that the back-to-back executions of one burst skip the socket and,
// while both ends are busy, the kernel's thread wake-ups. Android's bursts talk over FMQs for the
// same reason. Host side only.
//
// One sealed memfd that both ends map, its layout (little-endian, positions free-running byte
// counts that never wrap in practice: 2^64 bytes):
//
//   offset  size  field
//   0       4     magic       kFmqMagic ("NFMQ")
//   4       4     version     kFmqVersion
//   8       4     ring_bytes  data bytes of each ring: a power of two in [kFmqMinRingBytes, kFmqMaxRingBytes]
//   12      52    reserved    zero
//   64      192   ring 0 control (host -> firmware), kFmqControlBytes:
//                   +0    8  tail      bytes the producer has written so far (only it writes this)
//                   +64   8  head      bytes the consumer has read so far (only it writes this)
//                   +128  4  sleeping  1 while the consumer waits on its doorbell, else 0
//   256     192   ring 1 control (firmware -> host), as ring 0
//   4096    ring_bytes  ring 0 data (byte at position p lies at p mod ring_bytes)
//   4096 + ring_bytes   ring 1 data
//   total: kFmqDataOffset + 2 * ring_bytes (the file is exactly that long)
//
// Each end keeps its own positions privately and only publishes them: what the peer writes in the
// shared words is checked before use (a consumer never reads past the producer's tail, a tail
// more than ring_bytes ahead of the head is a broken peer: kIo naming both positions), and bytes
// are copied out of the ring before anyone parses them (the frame layer checks them again).
//
// Waiting: a reader first polls the ring for a bounded window (FmqOptions::pollWindow), then sets
// its `sleeping` word and sleeps on the doorbell, an AF_UNIX stream socketpair: a producer that
// finds the consumer's `sleeping` set sends it one byte. The socketpair also tells each end that
// the other has gone (end of stream), so a dead firmware is noticed without a timeout. A write
// that finds too little room waits for it (FmqOptions::writeTimeout; 0: fails at once, nothing
// written).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "npu/protocol/transport.h"

namespace npu::proto {

inline constexpr uint32_t kFmqMagic = 0x514D464Eu;  // "NFMQ" on the wire
inline constexpr uint32_t kFmqVersion = 1;
inline constexpr uint32_t kFmqMinRingBytes = 64u << 10;
inline constexpr uint32_t kFmqMaxRingBytes = 16u << 20;
inline constexpr size_t kFmqControlOffset = 64;
inline constexpr size_t kFmqControlBytes = 192;
inline constexpr size_t kFmqTailOffset = 0;   // in a ring's control block
inline constexpr size_t kFmqHeadOffset = 64;  // its own cache line
inline constexpr size_t kFmqSleepingOffset = 128;
inline constexpr size_t kFmqDataOffset = 4096;

// Bytes of the memfd for rings of `ringBytes` each.
constexpr uint64_t fmqFileBytes(uint32_t ringBytes) {
    return kFmqDataOffset + 2 * uint64_t{ringBytes};
}

struct FmqOptions {
    uint32_t ringBytes = 1u << 20;  // each way; createFmq only (attachFmq takes the file's)
    // How long a reader polls the ring before it sleeps on the doorbell: the latency of a burst
    // against the CPU a waiting end burns (0: sleep at once, a doorbell per message).
    std::chrono::microseconds pollWindow{50};
    // How long a write waits for room in the ring (the reader is behind); 0: a write that does
    // not fit fails at once with nothing written (kResourceExhausted): the firmware's end, whose
    // writes must not wait under its lock for a peer that does not read.
    std::chrono::milliseconds writeTimeout{10'000};
};

// A new queue, made by the host: the host's end, and the two fds for the firmware's end (the
// memfd, sealed against shrinking and growing, and the firmware's end of the doorbell), which the
// caller passes to the firmware (SCM_RIGHTS) and then closes. The host's end reads ring 1 and
// writes ring 0.
struct FmqHostEnd {
    std::unique_ptr<Transport> transport;
    UniqueFd memfd;
    UniqueFd doorbell;
};
Result<FmqHostEnd> createFmq(const FmqOptions& options = {}, const std::string& name = "burst channel");

// The firmware's end over the fds a host passed: refused (kInvalidArgument, naming what is wrong)
// unless `memfd` is a memfd (a regular file) sealed against shrinking (the seal is added when the
// file allows it) of exactly fmqFileBytes(ring_bytes) bytes with a valid header, and `doorbell`
// an AF_UNIX stream socket. Reads ring 0, writes ring 1.
Result<std::unique_ptr<Transport>> attachFmq(UniqueFd memfd, UniqueFd doorbell, const FmqOptions& options,
                                             const std::string& name = "burst channel");

}  // namespace npu::proto
