#include "mailbox_platform.h"

#include "board.h"

namespace npu::fw::qemu {

namespace {
void dataBarrier() {
    __asm volatile("dmb" ::: "memory");
}
}  // namespace

MailboxPlatform::MailboxPlatform(CmsdkUart& doorbell, isa::RegMailbox* mailbox, uint8_t* dram,
                                 uint64_t dramSize, uint32_t ackTimeoutUs)
    : MappedDramPlatform(dram, dramSize),
      doorbell_(doorbell),
      mailbox_(mailbox),
      ackTimeoutUs_(ackTimeoutUs) {
    mailbox_->sequence = 0;
    mailbox_->ackSequence = 0;
    mailbox_->op = static_cast<uint32_t>(isa::MailboxOp::kNone);
    mailbox_->version = isa::kMailboxVersion;
    dataBarrier();
    mailbox_->magic = isa::kMailboxMagic;
}

uint32_t MailboxPlatform::readReg(uint32_t offset) {
    uint32_t value = 0;
    return request(isa::MailboxOp::kReadReg, offset, 0, &value) ? value : 0xFFFFFFFFu;
}

void MailboxPlatform::writeReg(uint32_t offset, uint32_t value) {
    uint32_t ignored = 0;
    (void)request(isa::MailboxOp::kWriteReg, offset, value, &ignored);
}

bool MailboxPlatform::waitForIrq(uint32_t /*timeoutUs*/) {
    uint32_t line = 0;
    return request(isa::MailboxOp::kIrqLine, 0, 0, &line) && line != 0;
}

uint64_t MailboxPlatform::nowUs() {
    return uptimeUs();
}

bool MailboxPlatform::request(isa::MailboxOp op, uint32_t offset, uint32_t value, uint32_t* response) {
    mailbox_->op = static_cast<uint32_t>(op);
    mailbox_->offset = offset;
    mailbox_->value = value;
    const uint32_t sequence = ++sequence_;
    dataBarrier();  // the request's fields before its sequence number
    mailbox_->sequence = sequence;
    __asm volatile("dsb" ::: "memory");  // in memory before the doorbell leaves
    const uint8_t bell = static_cast<uint8_t>(sequence);
    doorbell_.write(&bell, 1);
    ++roundTrips_;
    if (!awaitAck(sequence) || mailbox_->status != isa::kMailboxOk) {
        ++failures_;
        return false;
    }
    *response = mailbox_->response;
    return true;
}

bool MailboxPlatform::awaitAck(uint32_t sequence) {
    const uint64_t start = uptimeUs();
    for (;;) {
        uint8_t bytes[16];
        const size_t n = doorbell_.read(bytes, sizeof(bytes));
        // Bytes of an earlier request that timed out are stale: only this sequence counts.
        for (size_t i = 0; i < n; ++i) {
            if (bytes[i] != static_cast<uint8_t>(sequence)) continue;
            dataBarrier();
            if (mailbox_->ackSequence == sequence) return true;
        }
        if (uptimeUs() - start > ackTimeoutUs_) return false;
        sleepUnless([this] { return doorbell_.readable(); });
    }
}

}  // namespace npu::fw::qemu
