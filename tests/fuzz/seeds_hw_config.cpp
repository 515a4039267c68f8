// Seeds of fuzz_hw_config: the default configuration as toJson writes it, small and odd arrays
// and memories, each dataflow, fp16, and each injected fault.
#include <string>

#include "fuzz_target.h"
#include "npu/hwsim/config.h"

namespace npu::fuzz {

std::vector<std::vector<uint8_t>> seeds() {
    const std::string texts[] = {
        sim::toJson(sim::HwConfig{}),
        "{}",
        R"({"array_rows": 8, "array_cols": 8, "scratchpad_bytes": 16384, "accumulator_bytes": 4096})",
        R"({"array_rows": 1, "array_cols": 3, "vector_lanes": 1, "scratchpad_banks": 1, "accumulator_banks": 1})",
        R"({"dataflow": "ws", "clock_mhz": 250, "dram_bytes_per_cycle": 4, "dram_latency_cycles": 0})",
        R"({"dataflow": "is", "fp16_mac": true, "token_queue_depth": 1, "command_queue_depth": 1})",
        R"({"array_rows": 64, "array_cols": 16, "scratchpad_bytes": 2097152, "scratchpad_banks": 16})",
        R"({"faults": {"hang_at_command": 3}})",
        R"({"faults": {"dma_error_at_transfer": 2, "irq_delay_polls": 5}})",
        // A late IRQ is not a lost one: the host platform used to poll once and fail every
        // operation (fixed in firmware/platform/host/sim_platform.cpp).
        R"({"faults": {"irq_delay_polls": 5}})",
        R"({"faults": {"sram_flip_after_command": 4, "sram_flip_address": 100, "sram_flip_bit": 7}})",
    };
    std::vector<std::vector<uint8_t>> all;
    for (const auto& t : texts) all.emplace_back(t.begin(), t.end());
    return all;
}

}  // namespace npu::fuzz
