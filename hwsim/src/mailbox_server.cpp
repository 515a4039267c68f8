#include "npu/hwsim/mailbox_server.h"

#include <atomic>

namespace npu::sim {

uint8_t MailboxServer::serve(uint8_t bell) {
    ++stats_.requests;
    // The core wrote the request's fields before its sequence and rang after both.
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint32_t sequence = mailbox_->sequence;
    uint32_t status = isa::kMailboxOk;
    uint32_t response = 0;
    if (mailbox_->magic != isa::kMailboxMagic || mailbox_->version != isa::kMailboxVersion) {
        status = isa::kMailboxBadHeader;
    } else if (static_cast<uint8_t>(sequence) != bell || sequence == mailbox_->ackSequence) {
        // A stale or duplicated doorbell: never perform a request twice (registers have side
        // effects); answer with the byte so a waiting core is not left hanging.
        ++stats_.rejected;
        return bell;
    } else {
        response =
            perform(static_cast<isa::MailboxOp>(mailbox_->op), mailbox_->offset, mailbox_->value, &status);
    }
    if (status != isa::kMailboxOk) ++stats_.rejected;
    mailbox_->response = response;
    mailbox_->status = status;
    std::atomic_thread_fence(std::memory_order_release);
    mailbox_->ackSequence = sequence;
    return static_cast<uint8_t>(sequence);
}

uint32_t MailboxServer::perform(isa::MailboxOp op, uint32_t offset, uint32_t value, uint32_t* status) {
    switch (op) {
        case isa::MailboxOp::kReadReg:
            ++stats_.reads;
            return device_.readReg(offset);
        case isa::MailboxOp::kWriteReg:
            ++stats_.writes;
            device_.writeReg(offset, value);
            return 0;
        case isa::MailboxOp::kIrqLine:
            ++stats_.irqPolls;
            return device_.irqPending() ? 1 : 0;
        default:
            *status = isa::kMailboxBadOp;
            return 0;
    }
}

}  // namespace npu::sim
