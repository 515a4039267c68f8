#pragma once
// Runs a whole model across the NPU and the CPU reference (framework/partition: each operation on
// the first device that claims it) and lays the per-operation profile out per layer of the
// parent model, with its name, device, start cycle and roofline bound.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/framework/partition.h"
#include "npu/shim/npu_device.h"

namespace npu::tools {

struct LayerRow {
    uint32_t index = 0;  // operation index in the model
    std::string name;
    hal::OperationType type = hal::OperationType::ADD;
    std::string device;     // the device it ran on
    bool profiled = false;  // the device reported cycles for it (the NPU does)
    hal::OperationProfile profile;
    uint64_t startCycle = 0;      // device cycles before it (operations run one after another)
    uint64_t minBytes = 0;        // every tensor it reads or writes, once (0 for RESHAPE / SQUEEZE)
    uint64_t rooflineCycles = 0;  // max(MACs / (R * C), minBytes / DRAM bytes per cycle)
    double utilization = 0;       // MACs / (R * C * cycles)
};

struct NetworkRun {
    std::vector<std::vector<uint8_t>> outputs;
    std::vector<LayerRow> layers;
    size_t opsOnFirstDevice = 0, opsTotal = 0, partitions = 0;
    uint64_t deviceCycles = 0;                   // sum over the first device's partitions
    double prepareMs = 0;                        // sum of the first device's prepareModel host times
    std::vector<shim::NpuCompileInfo> compiled;  // per partition of the first device, if an NPU
    std::vector<std::string> reasons;            // per operation: why it went to its device
};

// `names`: one per operation (empty: "op<i>"). The first device is the preferred one.
Result<NetworkRun> runNetwork(const framework::TestCase& testCase, const std::vector<std::string>& names,
                              const std::vector<framework::PartitionDevice>& devices);

// The rows of a whole-model execution on one device (names "op<i>").
NetworkRun layersOf(const hal::Model& model, const hal::ExecutionResult& result, const std::string& device);

// Fills minBytes, rooflineCycles and utilization of every profiled layer from the NPU's
// configuration.
void addRoofline(NetworkRun& run, const hal::Model& model, const shim::NpuInfo& hw);

// The first output byte that differs: "output O element E: expected X, got Y"; empty if equal.
std::string firstDifference(const std::vector<std::vector<uint8_t>>& expected,
                            const std::vector<std::vector<uint8_t>>& actual);

// One layer as JSON (`npu run --json`, `npu bench model --json`, the trace's arguments).
nlohmann::ordered_json layerProfileJson(const LayerRow& layer);

// Per-layer CSV (one row per operation, CPU operations with empty cycle columns) and a
// Chrome/Perfetto trace (Trace Event Format, as `npu sim --trace`: NPU operations as spans on the
// device timeline, operations on another device as instant events at their place in the order).
std::string layerCsv(const NetworkRun& run);
std::string layerTrace(const NetworkRun& run, const std::string& modelName, uint64_t clockHz);

}  // namespace npu::tools
