// Registers, command processor, dependency tokens, timing and every error path of the device.
#include <catch2/catch.hpp>

#include "sim_fixture.h"

using namespace simtest;
using isa::ErrorCode;

TEST_CASE("identification and configuration registers") {
    sim::HwConfig c;
    c.arrayRows = 16;
    c.arrayCols = 8;
    c.vectorLanes = 64;
    Sim s(c);
    CHECK(s.dev.readReg(isa::kRegId) == isa::kNpuId);
    CHECK(s.dev.readReg(isa::kRegVersion) == isa::kVersion);
    CHECK((s.dev.readReg(isa::kRegHwConfig0) & 0xFFFF) == 16);
    CHECK((s.dev.readReg(isa::kRegHwConfig0) >> 16) == 8);
    CHECK((s.dev.readReg(isa::kRegHwConfig1) & 0xFFFF) == 64);
    CHECK((s.dev.readReg(isa::kRegHwConfig1) & isa::kHwConfig1Fp16Mac) == 0);
    CHECK(s.dev.readReg(isa::kRegHwConfig2) == 1024);
    CHECK(s.dev.readReg(isa::kRegHwConfig3) == 256);
    CHECK(s.dev.readReg(isa::kRegHwConfig4) == 1000);
    CHECK(s.dev.readReg(isa::kRegHwConfig5) == (200u | (16u << 16)));
    CHECK(s.dev.readReg(isa::kRegStatus) == isa::kStatusIdle);
    CHECK(s.dev.readReg(0x1F0) == 0);  // unmapped reads as zero
    s.dev.writeReg(isa::kRegId, 5);    // read-only ignores writes
    CHECK(s.dev.readReg(isa::kRegId) == isa::kNpuId);
    s.dev.writeReg(isa::regRegionBaseHi(3), 0x12);
    s.dev.writeReg(isa::regRegionBaseLo(3), 0x345);
    CHECK(s.dev.readReg(isa::regRegionBaseLo(3)) == 0x345);
    CHECK(s.dev.readReg(isa::regRegionBaseHi(3)) == 0x12);
}

TEST_CASE("HW_CONFIG1.FP16_MAC reports the fp16_mac config flag") {
    sim::HwConfig c;
    c.fp16Mac = true;
    Sim s(c);
    CHECK((s.dev.readReg(isa::kRegHwConfig1) & isa::kHwConfig1Fp16Mac) != 0);
    CHECK(((s.dev.readReg(isa::kRegHwConfig1) >> isa::kHwConfig1DataflowShift) & 0x3) == 0);
}

TEST_CASE("an invalid configuration falls back to the defaults") {
    sim::HwConfig c;
    c.arrayRows = 0;
    Sim s(c);
    CHECK((s.dev.readReg(isa::kRegHwConfig0) & 0xFFFF) == 32);
}

TEST_CASE("queue drain raises DONE; IRQ mask, clear and enable") {
    Sim s;
    CHECK_FALSE(s.dev.irqPending());
    uint32_t irq = s.run({isa::makeNop(), isa::makeNop()});
    CHECK(irq == isa::kIrqDone);
    CHECK(s.dev.irqPending());
    CHECK(s.dev.readReg(isa::kRegCmdqHead) == 2 * isa::kCommandBytes);
    s.dev.writeReg(isa::kRegIrqMask, isa::kIrqError);
    CHECK_FALSE(s.dev.irqPending());
    s.dev.writeReg(isa::kRegIrqMask, isa::kIrqAll);
    s.dev.writeReg(isa::kRegCtrl, isa::kCtrlEnable);
    CHECK_FALSE(s.dev.irqPending());
    s.dev.writeReg(isa::kRegCtrl, isa::kCtrlEnable | isa::kCtrlIrqEnable);
    s.dev.writeReg(isa::kRegIrqClear, isa::kIrqDone);
    CHECK(s.dev.readReg(isa::kRegIrqStatus) == 0);
    CHECK_FALSE(s.dev.irqPending());
}

TEST_CASE("IRQ command, STOP halts and a doorbell resumes") {
    Sim s;
    uint32_t irq = s.run({isa::makeIrq(), isa::makeStop(), isa::makeNop()});
    CHECK(irq == (isa::kIrqCommand | isa::kIrqDone));
    CHECK((s.dev.readReg(isa::kRegStatus) & isa::kStatusHalted) != 0);
    CHECK(s.dev.readReg(isa::kRegCmdqHead) == 2 * isa::kCommandBytes);
    s.dev.writeReg(isa::kRegIrqClear, isa::kIrqAll);
    s.dev.writeReg(isa::kRegDoorbell, 1);
    CHECK(s.dev.readReg(isa::kRegCmdqHead) == 3 * isa::kCommandBytes);
    CHECK(s.dev.readReg(isa::kRegStatus) == isa::kStatusIdle);
    CHECK(s.pmu(isa::kRegPmuCommandsLo) == 3);
}

namespace {

void expectFault(Sim& s, const std::vector<isa::Command>& cmds, ErrorCode code, uint32_t index) {
    uint32_t irq = s.run(cmds);
    INFO("expected " << isa::errorCodeName(code) << " got "
                     << isa::errorCodeName(ErrorCode(s.dev.readReg(isa::kRegErrorCode))));
    CHECK((irq & isa::kIrqError) != 0);
    CHECK(s.dev.irqPending());
    CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(code));
    CHECK(s.dev.readReg(isa::kRegErrorOffset) == index * isa::kCommandBytes);
    CHECK((s.dev.readReg(isa::kRegStatus) & isa::kStatusError) != 0);
    // Sticky until soft reset: another doorbell does nothing.
    s.dev.writeReg(isa::kRegDoorbell, 1);
    CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(code));
    s.dev.writeReg(isa::kRegCtrl, isa::kCtrlSoftReset | isa::kCtrlEnable | isa::kCtrlIrqEnable);
    CHECK(s.dev.readReg(isa::kRegStatus) == isa::kStatusIdle);
    CHECK(s.dev.readReg(isa::kRegIrqStatus) == 0);
    CHECK(s.dev.readReg(isa::kRegErrorCode) == 0);
}

}  // namespace

TEST_CASE("every error code stops the NPU with ERROR_INFO and the error IRQ") {
    Sim s;
    isa::Command bad = isa::makeNop();
    bad.w[0] = 0x77;
    expectFault(s, {isa::makeNop(), bad}, ErrorCode::kBadOpcode, 1);
    isa::Command zero;
    expectFault(s, {zero}, ErrorCode::kBadOpcode, 0);
    isa::Command reserved = isa::makeNop();
    reserved.w[0] |= 1u << 20;
    expectFault(s, {reserved}, ErrorCode::kBadOpcode, 0);

    expectFault(s, {s.load(Sim::kDram - 8, 0, 16)}, ErrorCode::kDramOutOfRange, 0);
    expectFault(s, {s.load(UINT64_MAX - 4, 0, 16)}, ErrorCode::kDramOutOfRange, 0);
    isa::Command badRegion = s.load(0, 0, 16);
    badRegion.w[isa::dma::kRegion] = 9;
    expectFault(s, {badRegion}, ErrorCode::kDramOutOfRange, 0);
    expectFault(s, {s.store(0, (1 << 20) - 4, 16)}, ErrorCode::kSramOutOfRange, 0);
    expectFault(s, {s.load(0, 0, 16, 3, 16, 1u << 20)}, ErrorCode::kSramOutOfRange, 0);
    expectFault(s, {s.load(0, 0, 0)}, ErrorCode::kBadSize, 0);

    isa::GemmDesc g;
    g.m = g.k = g.n = 4;
    g.aRowStride = g.bRowStride = 4;
    g.accRowStride = 4;
    g.accAddr = (256 << 10) / 4 - 8;
    expectFault(s, {isa::makeGemm(g)}, ErrorCode::kAccumulatorOutOfRange, 0);
    g.accAddr = 0;
    g.m = 0;
    expectFault(s, {isa::makeGemm(g)}, ErrorCode::kBadSize, 0);
    g.m = 4;
    g.zpA = 100000;
    expectFault(s, {isa::makeGemm(g)}, ErrorCode::kBadParameter, 0);

    isa::VecParams p;
    p.outShift = 40;
    expectFault(s, {isa::makeVecParams(p)}, ErrorCode::kBadParameter, 0);
    expectFault(s, {isa::makePop(isa::Queue::kLoad, isa::Queue::kCompute)}, ErrorCode::kTokenUnderflow, 0);
    std::vector<isa::Command> pushes(17, isa::makePush(isa::Queue::kLoad, isa::Queue::kStore));
    expectFault(s, pushes, ErrorCode::kTokenOverflow, 16);
    expectFault(s, {isa::makePush(isa::Queue::kLoad, isa::Queue::kLoad)}, ErrorCode::kBadParameter, 0);

    // Queue configuration and a disabled NPU.
    s.dev.writeReg(isa::kRegCmdqBaseLo, 3);
    s.dev.writeReg(isa::kRegCmdqSize, 128);
    s.dev.writeReg(isa::kRegCmdqTail, 64);
    s.dev.writeReg(isa::kRegDoorbell, 1);
    CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(ErrorCode::kBadQueueConfig));
    s.dev.writeReg(isa::kRegCtrl, isa::kCtrlSoftReset);
    s.dev.writeReg(isa::kRegDoorbell, 1);
    CHECK(s.dev.readReg(isa::kRegErrorCode) == uint32_t(ErrorCode::kNotEnabled));
}

TEST_CASE("random command streams never crash") {
    Sim s;
    uint32_t seed = 12345;
    auto next = [&] {
        seed = seed * 1664525u + 1013904223u;
        return seed;
    };
    const isa::Opcode ops[] = {isa::Opcode::kDmaLoad, isa::Opcode::kDmaStore,  isa::Opcode::kGemm,
                               isa::Opcode::kConv,    isa::Opcode::kVecParams, isa::Opcode::kRequant,
                               isa::Opcode::kAdd,     isa::Opcode::kPush,      isa::Opcode::kPop};
    for (int round = 0; round < 300; ++round) {
        std::vector<isa::Command> cmds(4);
        for (auto& c : cmds) {
            for (auto& w : c.w) w = (next() % 4 == 0) ? next() : next() % 64;
            c.w[0] = isa::header(ops[next() % 9], next() % 4 == 0 ? next() : 0);
        }
        s.run(cmds);
        s.dev.writeReg(isa::kRegCtrl, isa::kCtrlSoftReset | isa::kCtrlEnable | isa::kCtrlIrqEnable);
    }
    SUCCEED();
}

TEST_CASE("timing: DMA cost, overlap through tokens, PMU counters, freeze and reset") {
    Sim s;
    // One 1600-byte load: latency 200 + 100 beats.
    s.run({s.load(0, 0, 1600)});
    CHECK(s.pmu(isa::kRegPmuCyclesLo) == 2 + 200 + 100);
    CHECK(s.pmu(isa::kRegPmuDmaReadLo) == 1600);
    s.dev.writeReg(isa::kRegPmuCtrl, isa::kPmuCtrlReset);
    CHECK(s.pmu(isa::kRegPmuCyclesLo) == 0);

    // A store waiting on a load via a token stalls; without it the queues overlap.
    s.run({s.load(0, 0, 1600), isa::makePush(isa::Queue::kLoad, isa::Queue::kStore),
           isa::makePop(isa::Queue::kLoad, isa::Queue::kStore), s.store(4096, 0, 16)});
    const uint64_t dependent = s.pmu(isa::kRegPmuCyclesLo);
    CHECK(s.pmu(isa::kRegPmuStallLo) > 0);
    s.dev.writeReg(isa::kRegPmuCtrl, isa::kPmuCtrlReset);
    s.run({s.load(0, 0, 1600), s.store(4096, 0, 16)});
    const uint64_t independent = s.pmu(isa::kRegPmuCyclesLo);
    CHECK(independent < dependent);
    CHECK(s.pmu(isa::kRegPmuStallLo) == 0);

    s.dev.writeReg(isa::kRegPmuCtrl, isa::kPmuCtrlFreeze);
    const uint64_t frozen = s.pmu(isa::kRegPmuCyclesLo);
    s.run({s.load(0, 0, 1600)});
    CHECK(s.pmu(isa::kRegPmuCyclesLo) == frozen);
    CHECK(s.dev.cycles() > frozen);
    s.dev.writeReg(isa::kRegPmuCtrl, 0);

    // FENCE waits for every unit.
    s.dev.writeReg(isa::kRegPmuCtrl, isa::kPmuCtrlReset);
    s.run({s.load(0, 0, 1600), isa::makeFence(), s.store(4096, 0, 16)});
    CHECK(s.pmu(isa::kRegPmuCyclesLo) >= 302 + 200);
    CHECK(s.pmu(isa::kRegPmuCommandsLo) == 3);
}
