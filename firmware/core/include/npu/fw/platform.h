#pragma once
// What firmware/core needs from the SoC it runs on. The host platform implements it over the
// hwsim simulator, the QEMU platform over the emulated SoC; a real SoC over its MMIO.
// firmware/core rules: no OS headers, no exceptions, no RTTI, no global heap.

#include <cstddef>
#include <cstdint>

namespace npu::fw {

// Why the running work must stop (Platform::stopRequested). A missed deadline carries the
// MISSED_DEADLINE_* status the scheduler's one rule chose (Scheduler::missedDeadlineCode).
enum class StopReason : uint8_t { kNone, kCancelled, kDeadlineTransient, kDeadlinePersistent };

// Where the running work is, at the checkpoint that asks stopRequested: what it does and how
// many of its steps are done. The platform may report it to the work's client (progress frames).
enum class WorkPhase : uint8_t { kExecute = 1, kCompile = 2, kTune = 3 };
struct WorkProgress {
    WorkPhase phase = WorkPhase::kExecute;
    uint32_t done = 0;   // steps done (operations run or planned, tuning rounds run)
    uint32_t total = 0;  // steps in all
};

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
    // Asked by the executor between two NPU operations, and by the compiler between two
    // operations it plans (the checkpoint of running work): why the work running now must stop
    // there (a Cancel, its deadline passed), or kNone. A platform may serve its transports here
    // (a Cancel arriving while the NPU runs) and report `progress` to the work's client. Once it
    // says stop, it says so at every later checkpoint of the same work (a Cancel or a passed
    // deadline stays): work that failed inside a step asks again to tell a stop from a failure.
    virtual StopReason stopRequested(const WorkProgress& progress) {
        (void)progress;
        return StopReason::kNone;
    }
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
