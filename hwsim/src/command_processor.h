#pragma once
// Reads commands from the queue in DRAM, dispatches them to the units, tracks dependency tokens
// and the event-driven timing, and updates the PMU (internal to hwsim).

#include <array>
#include <cstdint>

#include "device_state.h"
#include "npu/hwsim/device.h"
#include "units.h"

namespace npu::sim {

class CommandProcessor {
public:
    explicit CommandProcessor(DeviceState& s);
    // Runs HEAD..TAIL (or to STOP / a fault). Raises the matching IRQ.
    void process();
    void reset();
    uint64_t now() const { return now_; }
    const UnitStats& stats() const { return stats_; }
    void countDoorbell() { ++stats_.doorbells; }
    void setHostProfiling(bool on) { profiling_ = on; }

private:
    static constexpr uint32_t kMaxTokens = 255;
    struct TokenQueue {
        std::array<uint64_t, kMaxTokens> readyAt{};
        uint32_t head = 0;
        uint32_t count = 0;
    };
    enum class Step { kContinue, kStop, kFault };

    void processQueue();
    Step execute(const isa::Command& c, uint32_t offset);
    Step control(const isa::Command& c, isa::Opcode op, uint32_t offset);
    UnitResult runUnit(const isa::Command& c, isa::Opcode op, isa::Queue* q);
    isa::ErrorCode token(const isa::Command& c, bool push);
    void runOn(isa::Queue q, const UnitResult& r);
    void fail(isa::ErrorCode e, uint32_t offset);
    void settle();  // advance device time to the end of all issued work; charge the PMU
    bool queueConfigOk() const;

    DeviceState& s_;
    DmaEngine dma_;
    MacArray mac_;
    VectorUnit vector_;
    uint64_t now_ = 0;       // device time at which all issued work is complete
    uint64_t dispatch_ = 0;  // command processor front end
    std::array<uint64_t, isa::kQueueCount> unitFree_{};
    std::array<TokenQueue, isa::kQueueCount * isa::kQueueCount> tokens_{};
    UnitStats stats_;
    bool profiling_ = false;
};

}  // namespace npu::sim
