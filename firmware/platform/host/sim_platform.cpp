#include "sim_platform.h"

#include <chrono>

#include "hwsim/isa/registers.h"
#include "npu/protocol/vlog.h"

namespace npu::fw::host {

SimPlatform::SimPlatform(const sim::HwConfig& config, uint8_t* dram, uint64_t dramSize)
    : MappedDramPlatform(dram, dramSize), device_(config, dram, dramSize) {}

uint32_t SimPlatform::readReg(uint32_t offset) {
    return device_.readReg(offset);
}
void SimPlatform::writeReg(uint32_t offset, uint32_t value) {
    if (offset == isa::kRegDoorbell && proto::vlogEnabled("sim")) {
        // The simulator runs a doorbell synchronously: its cost is the device time it took.
        const uint64_t before = device_.cycles();
        device_.writeReg(offset, value);
        proto::vlog("sim", "doorbell: command queue tail 0x%x, %llu device cycles, IRQ_STATUS 0x%x",
                    device_.readReg(isa::kRegCmdqTail),
                    static_cast<unsigned long long>(device_.cycles() - before),
                    device_.readReg(isa::kRegIrqStatus));
        return;
    }
    device_.writeReg(offset, value);
    if (faultsArmed_ && offset == isa::kRegCtrl && (value & isa::kCtrlSoftReset) != 0) {
        device_.injectFaults({});
        faultsArmed_ = false;
    }
}

void SimPlatform::armFaultsOnce(const sim::FaultConfig& faults) {
    device_.injectFaults(faults);
    faultsArmed_ = true;
}

bool SimPlatform::waitForIrq(uint32_t timeoutUs) {
    // The doorbell ran synchronously, but an IRQ may become visible only after some polls (the
    // irq_delay_polls fault, a slow interrupt line): poll until it shows, as a firmware on
    // silicon would. The simulated device answers a poll at once, so the timeout counts polls
    // (one per microsecond) rather than wall time: a hung device fails in milliseconds, not
    // after the whole timeout. Checking once made every delayed IRQ a lost one.
    for (uint64_t polls = 0; polls <= timeoutUs; ++polls) {
        if (device_.irqPending()) return true;
    }
    proto::vlog("sim", "no interrupt within %u polls (the NPU hung)", timeoutUs);
    return false;
}

uint64_t SimPlatform::nowUs() {
    using namespace std::chrono;
    return static_cast<uint64_t>(duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count());
}

}  // namespace npu::fw::host
