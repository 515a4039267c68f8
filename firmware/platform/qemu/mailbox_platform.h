#pragma once
// npu::fw::Platform of the emulated SoC: device DRAM is the start of DDR; every NPU register
// access is a request in the register mailbox (hwsim/isa/reg_mailbox.h) that a host bridge
// performs on the simulated NPU, signalled by a one-byte doorbell on UART1 both ways.

#include <cstdint>

#include "cmsdk_uart.h"
#include "hwsim/isa/reg_mailbox.h"
#include "npu/fw/platform.h"

namespace npu::fw::qemu {

class MailboxPlatform final : public MappedDramPlatform {
public:
    // `ackTimeoutUs`: how long one access waits for the bridge before it counts as failed.
    MailboxPlatform(CmsdkUart& doorbell, isa::RegMailbox* mailbox, uint8_t* dram, uint64_t dramSize,
                    uint32_t ackTimeoutUs);

    // A failed access (bridge gone or too slow) reads as all ones, like a bus error, and the
    // NPU then looks faulted to the runtime; failures() counts them.
    uint32_t readReg(uint32_t offset) override;
    void writeReg(uint32_t offset, uint32_t value) override;
    // One poll of the NPU's interrupt line, as on the host platform: the simulated NPU runs a
    // doorbell to completion before the write is acknowledged.
    bool waitForIrq(uint32_t timeoutUs) override;
    uint64_t nowUs() override;

    uint64_t roundTrips() const { return roundTrips_; }
    uint64_t failures() const { return failures_; }

private:
    bool request(isa::MailboxOp op, uint32_t offset, uint32_t value, uint32_t* response);
    bool awaitAck(uint32_t sequence);

    CmsdkUart& doorbell_;
    volatile isa::RegMailbox* mailbox_;
    uint32_t ackTimeoutUs_;
    uint32_t sequence_ = 0;
    uint64_t roundTrips_ = 0;
    uint64_t failures_ = 0;
};

}  // namespace npu::fw::qemu
