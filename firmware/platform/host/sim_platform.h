#pragma once
// The host platform of the portable firmware: npu::fw::Platform over a simulated NPU.
// The simulator runs a doorbell synchronously (see npu/hwsim/device.h), so waitForIrq never
// sleeps: the interrupt is pending already, shows after a few polls (the irq_delay_polls fault),
// or will not come; it polls at most once per microsecond of the timeout.

#include <cstdint>
#include <functional>

#include "npu/fw/platform.h"
#include "npu/hwsim/config.h"
#include "npu/hwsim/device.h"

namespace npu::fw::host {

class SimPlatform : public MappedDramPlatform {
public:
    // `dram` (device DRAM, e.g. a memfd mapping) must outlive the platform.
    SimPlatform(const sim::HwConfig& config, uint8_t* dram, uint64_t dramSize);

    uint32_t readReg(uint32_t offset) override;
    void writeReg(uint32_t offset, uint32_t value) override;
    bool waitForIrq(uint32_t timeoutUs) override;
    uint64_t nowUs() override;
    StopReason stopRequested(const WorkProgress& progress) override {
        return stopCheck_ ? stopCheck_(progress) : StopReason::kNone;
    }
    // What stopRequested asks (the firmware host: was the running item cancelled, is its deadline
    // past?), and where it may report the running item's progress.
    void setStopCheck(std::function<StopReason(const WorkProgress&)> check) { stopCheck_ = std::move(check); }

    sim::Device& device() { return device_; }
    // Arms `faults` once: the next NPU soft reset (the firmware's recovery from the fault they
    // cause) disarms them, so a replayed request does not meet the same fault again.
    void armFaultsOnce(const sim::FaultConfig& faults);

private:
    bool faultsArmed_ = false;
    std::function<StopReason(const WorkProgress&)> stopCheck_;
    sim::Device device_;
};

}  // namespace npu::fw::host
