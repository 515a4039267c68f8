#include "sim_platform.h"

#include <chrono>

#include "hwsim/isa/registers.h"

namespace npu::fw::host {

SimPlatform::SimPlatform(const sim::HwConfig& config, uint8_t* dram, uint64_t dramSize)
    : dram_(dram), dramSize_(dramSize), device_(config, dram, dramSize) {}

uint32_t SimPlatform::readReg(uint32_t offset) {
    return device_.readReg(offset);
}
void SimPlatform::writeReg(uint32_t offset, uint32_t value) {
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

bool SimPlatform::waitForIrq(uint32_t /*timeoutUs*/) {
    return device_.irqPending();
}

uint64_t SimPlatform::nowUs() {
    using namespace std::chrono;
    return static_cast<uint64_t>(duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count());
}

}  // namespace npu::fw::host
