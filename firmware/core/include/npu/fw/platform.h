#pragma once
// What firmware/core needs from the SoC it runs on. The host platform implements it over the
// hwsim simulator, the QEMU platform over the emulated SoC; a real SoC over its MMIO.
// firmware/core rules: no OS headers, no exceptions, no RTTI, no global heap.

#include <cstddef>
#include <cstdint>

namespace npu::fw {

class Platform {
public:
    virtual ~Platform() = default;
    // NPU registers (offsets from hwsim/isa/registers.h).
    virtual uint32_t readReg(uint32_t offset) = 0;
    virtual void writeReg(uint32_t offset, uint32_t value) = 0;
    // Waits until the NPU raises an interrupt or timeoutUs passes; false on timeout.
    virtual bool waitForIrq(uint32_t timeoutUs) = 0;
    // Device DRAM, as the control core sees it (device address 0 = dram()[0]).
    virtual uint8_t* dram() = 0;
    virtual uint64_t dramSize() const = 0;
    // A monotonic microsecond clock.
    virtual uint64_t nowUs() = 0;
    // Asked by the executor between two NPU operations: true when the work running now was
    // cancelled (Cancel of a running execution), so that it stops at that command boundary.
    // A platform may serve its transports here (a Cancel arriving while the NPU runs).
    virtual bool stopRequested() { return false; }
};

// A platform whose device DRAM is one range the control core addresses directly (the host's
// mapping, the emulated SoC's DDR): dram() and dramSize() for the platforms that have one.
class MappedDramPlatform : public Platform {
public:
    uint8_t* dram() override { return dram_; }
    uint64_t dramSize() const override { return dramSize_; }

protected:
    // `dram` must outlive the platform.
    MappedDramPlatform(uint8_t* dram, uint64_t dramSize) : dram_(dram), dramSize_(dramSize) {}

private:
    uint8_t* dram_;
    uint64_t dramSize_;
};

}  // namespace npu::fw
