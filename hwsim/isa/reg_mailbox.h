#pragma once
// The register mailbox of an emulated control core (firmware/platform/qemu) and the host bridge
// that owns the simulated NPU (hwsim/bridge). Headers only, freestanding.
//
// NPU registers have side effects (DOORBELL runs the command queue, IRQ_CLEAR is write-1-to-
// clear, CTRL resets), so they cannot be a block of shared memory. Instead each access is a
// request in a mailbox in the shared device DRAM (the emulated SoC's DDR, a file the bridge
// maps too) and a one-byte doorbell on a second UART:
//   core:   writes op/offset/value, then sequence (+1), then sends the low byte of sequence
//   bridge: on that byte, performs the access on its hwsim::Device, writes response, status
//           and then ackSequence = sequence, and sends the same byte back
//   core:   on the byte coming back, checks ackSequence == sequence and reads response.
// Every field is a little-endian 32-bit word so that both sides see the same layout.

#include <cstdint>

namespace npu::isa {

inline constexpr uint32_t kMailboxMagic = 0x4D42504Eu;  // "NPBM"
inline constexpr uint32_t kMailboxVersion = 1;

enum class MailboxOp : uint32_t {
    kNone = 0,
    kReadReg = 1,   // response = register value
    kWriteReg = 2,  // response = 0
    kIrqLine = 3,   // response = 1 if the NPU's interrupt line is raised. One request is one poll
                    // of the line, exactly as the host platform polls it, so that injected
                    // delayed interrupts behave the same on both platforms.
};

struct RegMailbox {
    uint32_t magic;        // kMailboxMagic, written by the core at boot
    uint32_t version;      // kMailboxVersion
    uint32_t sequence;     // incremented by the core for each request, written last
    uint32_t op;           // MailboxOp
    uint32_t offset;       // register offset (registers.h)
    uint32_t value;        // value to write
    uint32_t response;     // written by the bridge
    uint32_t ackSequence;  // = sequence once response is valid, written by the bridge last
    uint32_t status;       // 0 = done; 1 = unknown op; 2 = bad magic/version (bridge side)
    uint32_t reserved[7];
};
static_assert(sizeof(RegMailbox) == 64);

// Where the mailbox and the NPU's device DRAM sit in the emulated SoC's DDR (offsets from the
// start of DDR, which is also the start of the file the bridge maps): device DRAM at 0, the
// mailbox right after it. firmware/platform/qemu/soc.h builds the rest of its map on these.
inline constexpr uint64_t kQemuDeviceDramBytes = 256ull << 20;
inline constexpr uint64_t kQemuMailboxOffset = kQemuDeviceDramBytes;

inline constexpr uint32_t kMailboxOk = 0;
inline constexpr uint32_t kMailboxBadOp = 1;
inline constexpr uint32_t kMailboxBadHeader = 2;

}  // namespace npu::isa
