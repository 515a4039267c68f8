#pragma once
// A firmware peer that plays back a script instead of computing anything, so a fuzz input decides
// every byte and fd the driver receives (fuzz_hostile_firmware). The script is a list of records:
//
//   record := kind u8 | body
//   kind 0 (frame):     method u8 | flags u16 | call id delta i8 | length u32 | payload
//                       (header and CRC made here; the call id is the latest request's + delta)
//   kind 1 (raw):       length u32 | bytes, sent as they are (split frames, garbage, bad CRCs)
//   kind 2 (fd frame):  a frame record as kind 0, then fd kind u8 | size KiB u32: the frame
//                       carries an fd (0 a sealed memfd, 1 an unsealed one, 2 a pipe, 3 /dev/zero)
//   kind 3 (next):      what follows is sent only after the driver's next request
//
// Each record is one read() for the driver. When what the driver may read is used up, the peer
// hangs up (kDisconnected): the driver never waits on a timeout, so every input runs fast.

#include <cstdint>
#include <string>
#include <vector>

#include "npu/protocol/transport.h"

namespace npu::fuzz {

enum HostileRecord : uint8_t { kHostileFrame = 0, kHostileRaw = 1, kHostileFdFrame = 2, kHostileNext = 3 };
enum HostileFd : uint8_t { kFdSealedMemfd = 0, kFdUnsealedMemfd = 1, kFdPipe = 2, kFdDevZero = 3 };

// The transport the driver gets; it owns the parsed script.
std::unique_ptr<proto::Transport> makeHostileFirmware(const uint8_t* data, size_t size);

// What the driver does with a firmware on `transport`, the same for the fuzz target and for the
// seeds (recorded from the real firmware): the handshake, capabilities, supported operations,
// prepareModel and one execution of a small quant8 CONV_2D, then release. Every call either
// succeeds or fails with a message (else a trap). Returns the number of calls that succeeded.
int exerciseDriver(std::unique_ptr<proto::Transport> transport);

// Script building, for seeds.
struct HostileScript {
    std::vector<uint8_t> bytes;
    void frame(uint8_t method, uint16_t flags, int8_t callIdDelta, const std::string& payload);
    void fdFrame(uint8_t method, uint16_t flags, int8_t callIdDelta, const std::string& payload, HostileFd fd,
                 uint32_t sizeKib);
    void raw(const std::string& bytes);
    void next();
};

}  // namespace npu::fuzz
