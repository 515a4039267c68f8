#pragma once
// A simulated NPU with 1 MiB of DRAM and a helper to run a list of commands.
#include <cstring>
#include <vector>

#include "hwsim/isa/commands.h"
#include "hwsim/isa/registers.h"
#include "npu/hwsim/device.h"

namespace simtest {

using namespace npu;

struct Sim {
    static constexpr uint64_t kDram = 1 << 20;
    static constexpr uint64_t kQueue = 0x80000;
    std::vector<uint8_t> dram = std::vector<uint8_t>(kDram, 0);
    sim::Device dev;

    explicit Sim(sim::HwConfig c = {}) : dev(c, dram.data(), kDram) {
        dev.writeReg(isa::kRegCtrl, isa::kCtrlEnable | isa::kCtrlIrqEnable);
        dev.writeReg(isa::kRegIrqMask, isa::kIrqAll);
    }
    // Writes the commands at kQueue and runs them all; returns IRQ_STATUS.
    uint32_t run(const std::vector<isa::Command>& cmds) {
        std::memcpy(dram.data() + kQueue, cmds.data(), cmds.size() * isa::kCommandBytes);
        dev.writeReg(isa::kRegCmdqBaseLo, kQueue);
        dev.writeReg(isa::kRegCmdqBaseHi, 0);
        dev.writeReg(isa::kRegCmdqSize, uint32_t((cmds.size() + 1) * isa::kCommandBytes));
        dev.writeReg(isa::kRegCmdqTail, uint32_t(cmds.size() * isa::kCommandBytes));
        dev.writeReg(isa::kRegDoorbell, 1);
        return dev.readReg(isa::kRegIrqStatus);
    }
    uint64_t pmu(uint32_t lo) {
        uint32_t l = dev.readReg(lo);
        return l | (uint64_t(dev.readReg(lo + 4)) << 32);
    }
    isa::Command load(uint64_t dramAddr, uint32_t sram, uint32_t bytes, uint32_t rows = 1,
                      uint32_t dStride = 0, uint32_t sStride = 0) {
        isa::DmaBox b;
        b.dramOffset = dramAddr;
        b.sramAddr = sram;
        b.innerBytes = bytes;
        b.rows = rows;
        b.dramRowStride = dStride;
        b.sramRowStride = sStride;
        return isa::makeDma(isa::Opcode::kDmaLoad, b);
    }
    isa::Command store(uint64_t dramAddr, uint32_t sram, uint32_t bytes, uint32_t rows = 1,
                       uint32_t dStride = 0, uint32_t sStride = 0) {
        isa::Command c = load(dramAddr, sram, bytes, rows, dStride, sStride);
        c.w[0] = isa::header(isa::Opcode::kDmaStore);
        return c;
    }
};

}  // namespace simtest
