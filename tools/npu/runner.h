#pragma once
// Runs one test case on a device: support check, prepare, execute with timing, read back.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/framework/partition.h"
#include "npu/hal/device.h"

namespace npu::tools {

struct RunOutcome {
    bool supported = true;  // false: the device does not take every operation
    std::vector<bool> supportedOperations;
    std::vector<std::vector<uint8_t>> outputs;
    hal::ExecutionResult result;
    std::optional<bool> fromCache;  // NPU only: the prepared model came from a compilation cache
    double prepareMs = 0;           // host time of prepareModel (compile or cache load)
    size_t opsOnFirstDevice = 0;    // runPartitionedTestCase: operations on devices[0]
};

Result<RunOutcome> runTestCase(hal::IDevice& device, const framework::TestCase& testCase);
// The test case split across `devices` (framework/partition.h: each operation on the first device
// that claims it). Not supported: no device claims some operation (or the model cannot be split).
Result<RunOutcome> runPartitionedTestCase(const std::vector<framework::PartitionDevice>& devices,
                                          const framework::TestCase& testCase);

// Human-readable pieces shared by the commands.
std::string formatTensor(hal::OperandType type, const std::vector<uint8_t>& bytes, size_t maxElements = 32);
// Every element as a JSON number (booleans as 0/1); null for a type with no numeric reading.
nlohmann::json tensorJson(hal::OperandType type, const std::vector<uint8_t>& bytes);
std::string formatProfileTable(const hal::ExecutionResult& result, uint64_t clockHz);

}  // namespace npu::tools
