#pragma once
// The host side of the register mailbox (hwsim/isa/reg_mailbox.h): performs each request an
// emulated control core leaves in shared memory on a simulated NPU. The npu-qemu-bridge
// program wraps it with the doorbell socket; tests drive it directly.

#include <cstdint>

#include "hwsim/isa/reg_mailbox.h"
#include "npu/hwsim/device.h"

namespace npu::sim {

struct MailboxStats {
    uint64_t requests = 0;
    uint64_t reads = 0;
    uint64_t writes = 0;
    uint64_t irqPolls = 0;
    uint64_t rejected = 0;  // bad magic/version, unknown op, or a doorbell with no new request
};

class MailboxServer {
public:
    // `mailbox` points into memory shared with the core (the DDR file's mapping).
    MailboxServer(Device& device, isa::RegMailbox* mailbox) : device_(device), mailbox_(mailbox) {}

    // Serves the request the core rang for with doorbell byte `bell`. Returns the byte to send
    // back (the low byte of the request's sequence); the response and status are in the mailbox.
    uint8_t serve(uint8_t bell);
    const MailboxStats& stats() const { return stats_; }

private:
    uint32_t perform(isa::MailboxOp op, uint32_t offset, uint32_t value, uint32_t* status);

    Device& device_;
    volatile isa::RegMailbox* mailbox_;
    MailboxStats stats_;
};

}  // namespace npu::sim
