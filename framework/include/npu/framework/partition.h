#pragma once
// Partitioning a HAL model across devices with CPU fallback: each operation goes to the first
// device (in preference order, e.g. NPU then reference) whose getSupportedOperations claims it;
// consecutive operations on one device form a partition, which becomes a HAL model of its own.
// Tensors crossing a partition boundary travel through host memory in their HAL type (float32,
// int32, quant8 with its scale and zero point), so a quant8 tensor leaves the NPU as quant8 and
// the QUANTIZE / DEQUANTIZE operations of the model run wherever they are claimed.

#include <functional>
#include <string>
#include <vector>

#include "npu/hal/device.h"

namespace npu::framework {

struct PartitionDevice {
    std::string name;  // "npu", "reference", ...
    hal::IDevice* device = nullptr;
    // Optional: getSupportedOperations with the device's reason for each operation it does not
    // claim (the NPU shim's querySupportedOperations), asked instead when set; the reasons go
    // into PartitionPlan::reasonOfOperation.
    struct Claim {
        std::vector<bool> supported;
        std::vector<std::string> reasons;  // per operation; empty: none given
    };
    std::function<Result<Claim>(const hal::Model&)> claim;
};

struct Partition {
    size_t device = 0;                    // index into the devices given to planPartitions
    std::vector<uint32_t> operations;     // indexes into the parent model's main operations
    hal::Model model;                     // the partition as a model of its own
    std::vector<uint32_t> parentInputs;   // per model.main.inputIndexes: the parent operand
    std::vector<uint32_t> parentOutputs;  // per model.main.outputIndexes: the parent operand
};

struct PartitionPlan {
    std::vector<Partition> partitions;           // in execution order
    std::vector<size_t> deviceOfOperation;       // per parent operation
    std::vector<std::string> reasonOfOperation;  // why it went there
};

// INVALID_ARGUMENT when an operation is claimed by no device (naming it), or a model with
// referenced subgraphs would have to be split.
Result<PartitionPlan> planPartitions(const hal::Model& model, const std::vector<PartitionDevice>& devices);

struct PartitionTiming {
    size_t partition = 0;
    hal::ExecutionResult result;
    double prepareMs = 0;  // host time of the partition's prepareModel (compilation on the NPU)
    std::shared_ptr<hal::IPreparedModel> prepared;  // kept for the caller's queries
};

// Runs the partitions in order. inputs: one byte buffer per parent model input, in its HAL type;
// returns one per parent model output. Every tensor shape must be known (the importer's are).
struct PartitionedRun {
    std::vector<std::vector<uint8_t>> outputs;
    std::vector<PartitionTiming> timings;
};
// `prepared`: one prepared model per partition (preparePartitions) to execute again, so repeated
// runs compile nothing; null: each partition is prepared on this call.
using PreparedPartitions = std::vector<std::shared_ptr<hal::IPreparedModel>>;
Result<PartitionedRun> runPartitions(const PartitionPlan& plan, const hal::Model& model,
                                     const std::vector<PartitionDevice>& devices,
                                     const std::vector<std::vector<uint8_t>>& inputs,
                                     const PreparedPartitions* prepared = nullptr);

// Prepares every partition once on its device (the compile of an application's start-up).
Result<PreparedPartitions> preparePartitions(const PartitionPlan& plan,
                                             const std::vector<PartitionDevice>& devices);

}  // namespace npu::framework
