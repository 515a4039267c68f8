#pragma once
// The simulated NPU's configuration. Every value is visible to the firmware through the
// HW_CONFIG registers (hwsim/isa/registers.h), so the compiler plans for the instance it runs on.

#include <cstdint>

#include "hwsim/isa/registers.h"

namespace npu::sim {

struct HwConfig {
    uint32_t clockMhz = 1000;
    uint32_t arrayRows = 32;
    uint32_t arrayCols = 32;
    isa::Dataflow dataflow = isa::Dataflow::kOutputStationary;
    uint32_t scratchpadBytes = 1u << 20;
    uint32_t accumulatorBytes = 256u << 10;
    uint32_t vectorLanes = 32;
    uint32_t dmaBytesPerCycle = 16;
    uint32_t dramLatencyCycles = 200;
    uint32_t tokenQueueDepth = 16;   // outstanding tokens per (from, to) queue pair
    uint32_t decodeCycles = 2;       // command processor front end, per command
    uint32_t vectorLatencyCycles = 4;  // vector pipeline fill per command
};

// Whether a configuration is one the register map can describe and the model can run.
inline bool isValid(const HwConfig& c) {
    auto fits16 = [](uint32_t v) { return v >= 1 && v <= 0xFFFF; };
    return fits16(c.arrayRows) && fits16(c.arrayCols) && fits16(c.vectorLanes) &&
           fits16(c.dmaBytesPerCycle) && c.dramLatencyCycles <= 0xFFFF && c.clockMhz >= 1 &&
           c.scratchpadBytes >= 1024 && c.scratchpadBytes % 1024 == 0 &&
           c.accumulatorBytes >= 1024 && c.accumulatorBytes % 1024 == 0 &&
           c.tokenQueueDepth >= 1 && c.tokenQueueDepth <= 255;
}

}  // namespace npu::sim
