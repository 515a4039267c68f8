#pragma once
// The simulated NPU's configuration. Every architectural value is visible to the firmware through
// the HW_CONFIG registers (hwsim/isa/registers.h), so the compiler plans for the instance it runs
// on. docs/hw-config.md describes every field, its JSON key, default and legal range.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

#include "hwsim/isa/registers.h"

namespace npu::sim {

// hwsim may use nothing else in the project (docs/architecture.md), so it carries its own
// error-as-value type: the message names the field, the value and the limit.
template <class T>
using Result = std::expected<T, std::string>;

// Faults a test or a reliability run asks the device to suffer (docs/hw-config.md, "faults").
struct FaultConfig {
    // The N-th command (1-based, counted since reset) never completes: the device stays BUSY and
    // raises no IRQ. 0 = off.
    uint64_t hangAtCommand = 0;
    // The N-th DMA command (1-based) fails with ERROR_CODE DMA_ERROR. 0 = off.
    uint64_t dmaErrorAtTransfer = 0;
    // After the N-th command (1-based) one bit of the scratchpad flips: byte sramFlipAddress,
    // bit sramFlipBit. 0 = off.
    uint64_t sramFlipAfterCommand = 0;
    uint32_t sramFlipAddress = 0;
    uint32_t sramFlipBit = 0;
    // The scratchpad has ECC: the flip above is detected when it happens and the command
    // faults with ERROR_CODE SRAM_ECC instead of leaving silently corrupted data.
    bool sramEcc = false;
    // Completion IRQs (DONE, ERROR) become visible only after this many further register reads
    // of IRQ_STATUS / irqPending() polls. 0 = off.
    uint32_t irqDelayPolls = 0;
};

struct HwConfig {
    uint32_t clockMhz = 1000;
    uint32_t arrayRows = 32;
    uint32_t arrayCols = 32;
    isa::Dataflow dataflow = isa::Dataflow::kOutputStationary;
    uint32_t scratchpadBytes = 1u << 20;
    uint32_t scratchpadBanks = 8;
    uint32_t accumulatorBytes = 256u << 10;
    uint32_t accumulatorBanks = 4;
    uint32_t vectorLanes = 32;
    uint32_t vectorLatencyCycles = 4;  // vector pipeline depth: fill per command
    uint32_t dmaBytesPerCycle = 16;    // DMA bus width (bytes per beat)
    uint32_t dmaMaxOutstanding = 16;   // outstanding DRAM requests (bursts) in flight
    uint32_t dramBytesPerCycle = 16;   // DRAM bandwidth
    uint32_t dramLatencyCycles = 200;
    uint32_t tokenQueueDepth = 16;    // outstanding tokens per (from, to) queue pair
    uint32_t commandQueueDepth = 32;  // commands buffered per unit queue (load/compute/store)
    uint32_t decodeCycles = 2;        // command processor front end, per command
    bool fp16Mac = false;             // the array also takes fp16 x fp16 -> fp32
    FaultConfig faults;
};

// Checks every field against its legal range. The message names the field, its value and the
// limit ("arrayRows = 0: must be in [1, 65535]").
Result<void> validate(const HwConfig& c);
// Whether a configuration is one the register map can describe and the model can run.
inline bool isValid(const HwConfig& c) {
    return validate(c).has_value();
}

// Parses a JSON object; absent keys keep their defaults, unknown keys are errors (a typo must not
// silently run the defaults). `where` names the source in messages (a file name).
Result<HwConfig> parseHwConfig(std::string_view json, std::string_view where = "hw-config");
// The largest hardware config file read (a real one is well under 4 KiB).
inline constexpr uint64_t kMaxHwConfigBytes = 1u << 20;
// Reads and parses a JSON file: a regular file of at most kMaxHwConfigBytes (a FIFO, a device
// such as /dev/zero or a larger file is refused with a message, never read without bound).
Result<HwConfig> loadHwConfig(const std::string& path);
// The configuration as JSON (every key, the form parseHwConfig reads).
std::string toJson(const HwConfig& c);

const char* dataflowName(isa::Dataflow d);  // "os", "ws", "is"
Result<isa::Dataflow> parseDataflow(std::string_view name);

}  // namespace npu::sim
