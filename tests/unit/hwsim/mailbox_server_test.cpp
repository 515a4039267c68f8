// The host side of the register mailbox (npu-qemu-bridge's core) against a real Device.
#include "npu/hwsim/mailbox_server.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "hwsim/isa/registers.h"

using namespace npu;

namespace {

struct Fixture {
    std::vector<uint8_t> dram = std::vector<uint8_t>(1 << 20);
    sim::Device device{sim::HwConfig{}, dram.data(), dram.size()};
    isa::RegMailbox mailbox{};
    sim::MailboxServer server{device, &mailbox};
    uint32_t sequence = 0;

    Fixture() {
        mailbox.magic = isa::kMailboxMagic;
        mailbox.version = isa::kMailboxVersion;
    }
    // What the core does for one access; returns the byte the bridge sends back.
    uint8_t ring(isa::MailboxOp op, uint32_t offset, uint32_t value = 0) {
        mailbox.op = static_cast<uint32_t>(op);
        mailbox.offset = offset;
        mailbox.value = value;
        mailbox.sequence = ++sequence;
        return server.serve(static_cast<uint8_t>(sequence));
    }
};

}  // namespace

TEST_CASE("mailbox requests read and write the device's registers and poll its interrupt line",
          "[hwsim][mailbox]") {
    Fixture f;
    CHECK(f.ring(isa::MailboxOp::kReadReg, isa::kRegId) == 1);
    CHECK(f.mailbox.ackSequence == 1);
    CHECK(f.mailbox.status == isa::kMailboxOk);
    CHECK(f.mailbox.response == isa::kNpuId);

    f.ring(isa::MailboxOp::kWriteReg, isa::kRegIrqMask, 0x5);
    CHECK(f.mailbox.status == isa::kMailboxOk);
    f.ring(isa::MailboxOp::kReadReg, isa::kRegIrqMask);
    CHECK(f.mailbox.response == f.device.readReg(isa::kRegIrqMask));
    CHECK(f.mailbox.response == 0x5);

    f.ring(isa::MailboxOp::kIrqLine, 0);
    CHECK(f.mailbox.response == (f.device.irqPending() ? 1u : 0u));
    CHECK(f.server.stats().reads == 2);
    CHECK(f.server.stats().writes == 1);
    CHECK(f.server.stats().irqPolls == 1);
}

TEST_CASE("the mailbox refuses a bad header or op and never performs a request twice", "[hwsim][mailbox]") {
    Fixture f;
    SECTION("unknown op") {
        f.ring(static_cast<isa::MailboxOp>(77), 0);
        CHECK(f.mailbox.status == isa::kMailboxBadOp);
        CHECK(f.mailbox.ackSequence == f.sequence);
    }
    SECTION("bad magic") {
        f.mailbox.magic = 0;
        f.ring(isa::MailboxOp::kReadReg, isa::kRegId);
        CHECK(f.mailbox.status == isa::kMailboxBadHeader);
        CHECK(f.mailbox.ackSequence == f.sequence);
    }
    SECTION("a repeated doorbell for an acknowledged request is answered but not performed") {
        f.ring(isa::MailboxOp::kWriteReg, isa::kRegIrqMask, 0x1);
        const uint64_t writes = f.server.stats().writes;
        f.mailbox.value = 0x7;  // even if the core scribbled on the request afterwards
        CHECK(f.server.serve(static_cast<uint8_t>(f.sequence)) == static_cast<uint8_t>(f.sequence));
        CHECK(f.server.stats().writes == writes);
        CHECK(f.server.stats().rejected == 1);
        CHECK(f.device.readReg(isa::kRegIrqMask) == 0x1);
    }
    SECTION("a doorbell byte that does not match the sequence is stale") {
        f.mailbox.op = static_cast<uint32_t>(isa::MailboxOp::kReadReg);
        f.mailbox.sequence = 5;
        CHECK(f.server.serve(4) == 4);
        CHECK(f.mailbox.ackSequence == 0);
        CHECK(f.server.stats().rejected == 1);
    }
}
