// Fault injection: hang, DMA error, SRAM bit flip, delayed interrupt; PMU counters; determinism.
#include <catch2/catch.hpp>

#include "sim_fixture.h"

using namespace simtest;
using isa::ErrorCode;

TEST_CASE("hang: the N-th command never completes, no IRQ, soft reset recovers") {
    sim::HwConfig c;
    c.faults.hangAtCommand = 2;
    Sim s(c);
    CHECK(s.run({isa::makeNop(), isa::makeNop(), isa::makeNop()}) == 0);
    CHECK_FALSE(s.dev.irqPending());
    CHECK((s.dev.readReg(isa::kRegStatus) & isa::kStatusBusy) != 0);
    CHECK(s.dev.readReg(isa::kRegCmdqHead) == isa::kCommandBytes);  // stuck on command 2
    s.dev.writeReg(isa::kRegDoorbell, 1);                           // a doorbell does not unstick it
    CHECK_FALSE(s.dev.irqPending());
    s.dev.writeReg(isa::kRegCtrl, isa::kCtrlEnable | isa::kCtrlIrqEnable | isa::kCtrlSoftReset);
    s.dev.injectFaults({});
    CHECK(s.run({isa::makeNop()}) == isa::kIrqDone);
}

TEST_CASE("DMA error: the N-th transfer faults with DMA_ERROR at its offset") {
    sim::HwConfig c;
    c.faults.dmaErrorAtTransfer = 2;
    Sim s(c);
    CHECK(s.run({s.load(0, 0, 64), isa::makeNop(), s.load(0, 64, 64)}) == isa::kIrqError);
    CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(ErrorCode::kDmaError));
    CHECK(s.dev.readReg(isa::kRegErrorOffset) == 2 * isa::kCommandBytes);
    CHECK(std::string(isa::errorCodeName(ErrorCode::kDmaError)) == "DMA_ERROR");
}

TEST_CASE("SRAM bit flip after the N-th command, also through the API") {
    Sim s;
    s.dram[0] = 0x10;
    sim::FaultConfig f;
    f.sramFlipAfterCommand = 1;
    f.sramFlipAddress = 0;
    f.sramFlipBit = 2;
    s.dev.injectFaults(f);
    CHECK(s.run({s.load(0, 0, 1)}) == isa::kIrqDone);
    CHECK(s.dev.scratchpad()[0] == (0x10 ^ 0x04));
}

TEST_CASE("SRAM bit flip with ECC: detected, the command faults with SRAM_ECC at its offset") {
    auto c = sim::parseHwConfig(
        R"({"faults": {"sram_flip_after_command": 2, "sram_flip_address": 3, "sram_flip_bit": 1, "sram_ecc": true}})");
    REQUIRE(c.has_value());
    CHECK(c->faults.sramEcc);
    Sim s(*c);
    CHECK(s.run({isa::makeNop(), s.load(0, 0, 16), isa::makeNop()}) == isa::kIrqError);
    CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(ErrorCode::kSramEcc));
    CHECK(s.dev.readReg(isa::kRegErrorOffset) == isa::kCommandBytes);
    CHECK(std::string(isa::errorCodeName(ErrorCode::kSramEcc)) == "SRAM_ECC");
    CHECK_FALSE(sim::parseHwConfig(R"({"faults": {"sram_ecc": 1}})").has_value());
}

TEST_CASE("delayed interrupt: DONE appears only after N polls") {
    sim::HwConfig c;
    c.faults.irqDelayPolls = 3;
    Sim s(c);
    s.run({isa::makeNop()});          // run() reads IRQ_STATUS once: poll 1
    CHECK_FALSE(s.dev.irqPending());  // poll 2
    CHECK(s.dev.irqPending());        // poll 3: delivered
    CHECK((s.dev.readReg(isa::kRegIrqStatus) & isa::kIrqDone) != 0);
}

TEST_CASE("faults from a config file") {
    auto c = sim::parseHwConfig(R"({"faults": {"dma_error_at_transfer": 1}})");
    REQUIRE(c.has_value());
    Sim s(*c);
    CHECK(s.run({s.load(0, 0, 16)}) == isa::kIrqError);
}

TEST_CASE("PMU: per-unit active cycles, DMA stall attribution, transactions") {
    Sim s;
    const uint32_t irq =
        s.run({s.load(0, 0, 256), isa::makePush(isa::Queue::kLoad, isa::Queue::kCompute),
               isa::makePop(isa::Queue::kLoad, isa::Queue::kCompute), isa::makeNop(), s.store(4096, 0, 256)});
    CHECK(irq == isa::kIrqDone);
    CHECK(s.pmu(isa::kRegPmuLoadActiveLo) == 200 + 16);
    CHECK(s.pmu(isa::kRegPmuStoreActiveLo) == 200 + 16);
    CHECK(s.pmu(isa::kRegPmuDmaTransactionsLo) == 2);
    CHECK(s.pmu(isa::kRegPmuStallDmaLo) > 0);
    CHECK(s.pmu(isa::kRegPmuStallDmaLo) <= s.pmu(isa::kRegPmuStallLo));
}

TEST_CASE("determinism: the same stream and config give the same cycles and memory") {
    auto runOnce = [] {
        Sim s;
        for (uint32_t i = 0; i < 4096; ++i) s.dram[i] = uint8_t(i * 7);
        isa::GemmDesc g;
        g.aAddr = 0;
        g.aRowStride = 64;
        g.bAddr = 4096;
        g.bRowStride = 64;
        g.m = 64;
        g.k = 64;
        g.n = 64;
        g.accRowStride = 64;
        s.run({s.load(0, 0, 4096), s.load(0, 4096, 4096),
               isa::makePush(isa::Queue::kLoad, isa::Queue::kCompute),
               isa::makePop(isa::Queue::kLoad, isa::Queue::kCompute), isa::makeGemm(g)});
        return std::pair{s.dev.cycles(),
                         std::vector<int32_t>(s.dev.accumulator(), s.dev.accumulator() + 4096)};
    };
    CHECK(runOnce() == runOnce());
}
