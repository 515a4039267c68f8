// Partitioning a HAL model across devices (see partition.h).
#include "npu/framework/partition.h"

#include <chrono>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace npu::framework {
namespace {

constexpr size_t kConstantAlignment = 8;
constexpr size_t kPoolAlignment = 64;

size_t alignUp(size_t x, size_t a) {
    return (x + a - 1) / a * a;
}

std::string opName(const hal::Model& model, uint32_t i) {
    return "operation " + std::to_string(i) + " (" +
           std::string(hal::toString(model.main.operations[i].type)) + ")";
}

// Builds one partition's model from the parent's operations [ops].
class SubModelBuilder {
public:
    SubModelBuilder(const hal::Model& parent, Partition& part,
                    const std::unordered_set<uint32_t>& neededOutside)
        : parent_(parent), part_(part), neededOutside_(neededOutside) {}

    Status build() {
        for (uint32_t opIndex : part_.operations) {
            const auto& op = parent_.main.operations[opIndex];
            hal::Operation sub{op.type, {}, {}};
            for (uint32_t in : op.inputs) sub.inputs.push_back(NPU_TRY(input(in, opIndex)));
            for (uint32_t out : op.outputs) sub.outputs.push_back(output(out));
            part_.model.main.operations.push_back(std::move(sub));
        }
        return {};
    }

private:
    hal::Operand copyOf(uint32_t parentIndex) const {
        const auto& src = parent_.main.operands[parentIndex];
        hal::Operand o;
        o.type = src.type;
        o.dimensions = src.dimensions;
        o.scale = src.scale;
        o.zeroPoint = src.zeroPoint;
        o.channelQuant = src.channelQuant;
        return o;
    }

    uint32_t add(hal::Operand o, uint32_t parentIndex) {
        part_.model.main.operands.push_back(std::move(o));
        const auto index = static_cast<uint32_t>(part_.model.main.operands.size() - 1);
        map_[parentIndex] = index;
        return index;
    }

    Result<uint32_t> input(uint32_t parentIndex, uint32_t opIndex) {
        if (auto it = map_.find(parentIndex); it != map_.end()) return it->second;
        const auto& src = parent_.main.operands[parentIndex];
        hal::Operand o = copyOf(parentIndex);
        const uint8_t* data = nullptr;
        switch (src.lifetime) {
            case hal::OperandLifeTime::CONSTANT_COPY:
                data = parent_.operandValues.data() + src.location.offset;
                break;
            case hal::OperandLifeTime::CONSTANT_REFERENCE:
                if (src.location.poolIndex >= parent_.pools.size() ||
                    !parent_.pools[src.location.poolIndex]) {
                    return invalidArgument(opName(parent_, opIndex) + ": constant operand " +
                                           std::to_string(parentIndex) + " names a missing pool");
                }
                data = parent_.pools[src.location.poolIndex]->data() + src.location.offset;
                break;
            case hal::OperandLifeTime::NO_VALUE:
                o.lifetime = hal::OperandLifeTime::NO_VALUE;
                return add(std::move(o), parentIndex);
            case hal::OperandLifeTime::SUBGRAPH:
                return invalidArgument(opName(parent_, opIndex) +
                                       ": control flow cannot be split across devices");
            default: {
                o.lifetime = hal::OperandLifeTime::SUBGRAPH_INPUT;
                const uint32_t index = add(std::move(o), parentIndex);
                part_.model.main.inputIndexes.push_back(index);
                part_.parentInputs.push_back(parentIndex);
                return index;
            }
        }
        auto& values = part_.model.operandValues;
        values.resize(alignUp(values.size(), kConstantAlignment));
        o.lifetime = hal::OperandLifeTime::CONSTANT_COPY;
        o.location = {0, static_cast<uint32_t>(values.size()), src.location.length, 0};
        values.insert(values.end(), data, data + src.location.length);
        return add(std::move(o), parentIndex);
    }

    uint32_t output(uint32_t parentIndex) {
        hal::Operand o = copyOf(parentIndex);
        const bool exported = neededOutside_.count(parentIndex) != 0;
        o.lifetime =
            exported ? hal::OperandLifeTime::SUBGRAPH_OUTPUT : hal::OperandLifeTime::TEMPORARY_VARIABLE;
        const uint32_t index = add(std::move(o), parentIndex);
        if (exported) {
            part_.model.main.outputIndexes.push_back(index);
            part_.parentOutputs.push_back(parentIndex);
        }
        return index;
    }

    const hal::Model& parent_;
    Partition& part_;
    const std::unordered_set<uint32_t>& neededOutside_;
    std::unordered_map<uint32_t, uint32_t> map_;
};

// Operands produced in partition `p` and read outside it (later partitions or model outputs).
std::unordered_set<uint32_t> exportedOperands(const hal::Model& model, const PartitionPlan& plan, size_t p) {
    std::unordered_set<uint32_t> produced, exported;
    for (uint32_t op : plan.partitions[p].operations) {
        for (uint32_t out : model.main.operations[op].outputs) produced.insert(out);
    }
    for (size_t q = 0; q < plan.partitions.size(); ++q) {
        if (q == p) continue;
        for (uint32_t op : plan.partitions[q].operations) {
            for (uint32_t in : model.main.operations[op].inputs) {
                if (produced.count(in) != 0) exported.insert(in);
            }
        }
    }
    for (uint32_t out : model.main.outputIndexes) {
        if (produced.count(out) != 0) exported.insert(out);
    }
    return exported;
}

Result<size_t> operandBytes(const hal::Operand& o, uint32_t index) {
    size_t n = hal::elementSize(o.type);
    for (uint32_t d : o.dimensions) {
        if (d == 0) return invalidArgument("operand " + std::to_string(index) + " has an unknown dimension");
        n *= d;
    }
    return n;
}

Result<hal::ExecutionResult> runOne(const Partition& part, hal::IDevice& device,
                                    std::shared_ptr<hal::IPreparedModel> reuse,
                                    std::unordered_map<uint32_t, std::vector<uint8_t>>& values,
                                    PartitionTiming& timing) {
    const auto& sg = part.model.main;
    size_t total = 0;
    std::vector<size_t> inBytes, outBytes;
    for (uint32_t parentIndex : part.parentInputs) {
        auto it = values.find(parentIndex);
        if (it == values.end())
            return generalFailure("partition input operand " + std::to_string(parentIndex) +
                                  " was never computed");
        inBytes.push_back(it->second.size());
        total = alignUp(total + it->second.size(), kPoolAlignment);
    }
    for (uint32_t index : sg.outputIndexes) {
        outBytes.push_back(NPU_TRY(operandBytes(sg.operands[index], index)));
        total = alignUp(total + outBytes.back(), kPoolAlignment);
    }
    std::shared_ptr<hal::Memory> pool = hal::Memory::create(std::max<size_t>(total, 1), "partition-request");
    if (!pool)
        return fail(hal::ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
                    "cannot create a " + std::to_string(total) + "-byte pool");
    hal::Request request;
    size_t offset = 0;
    for (size_t i = 0; i < part.parentInputs.size(); ++i) {
        std::memcpy(pool->data() + offset, values[part.parentInputs[i]].data(), inBytes[i]);
        request.inputs.push_back({false, {0, uint32_t(offset), uint32_t(inBytes[i]), 0}, {}});
        offset = alignUp(offset + inBytes[i], kPoolAlignment);
    }
    for (size_t n : outBytes) {
        request.outputs.push_back({false, {0, uint32_t(offset), uint32_t(n), 0}, {}});
        offset = alignUp(offset + n, kPoolAlignment);
    }
    request.pools.push_back(pool);
    const auto t0 = std::chrono::steady_clock::now();
    auto prepared = reuse ? std::move(reuse) : NPU_TRY(device.prepareModel(part.model));
    timing.prepareMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    timing.prepared = prepared;
    auto result =
        NPU_TRY(prepared->executeSynchronously(request, hal::MeasureTiming::YES, std::nullopt, std::nullopt));
    for (size_t i = 0; i < part.parentOutputs.size(); ++i) {
        const uint8_t* p = pool->data() + request.outputs[i].location.offset;
        values[part.parentOutputs[i]].assign(p, p + outBytes[i]);
    }
    return result;
}

Result<PartitionDevice::Claim> claimOf(const PartitionDevice& d, const hal::Model& model) {
    if (d.claim) return d.claim(model);
    return PartitionDevice::Claim{NPU_TRY(d.device->getSupportedOperations(model)), {}};
}

}  // namespace

Result<PartitionPlan> planPartitions(const hal::Model& model, const std::vector<PartitionDevice>& devices) {
    const size_t count = model.main.operations.size();
    std::vector<PartitionDevice::Claim> claims;
    for (const auto& d : devices) {
        auto claim = claimOf(d, model);
        if (!claim) {
            return fail(claim.error().status, d.name + ": getSupportedOperations: " + claim.error().message);
        }
        claims.push_back(std::move(*claim));
    }
    PartitionPlan plan;
    for (uint32_t i = 0; i < count; ++i) {
        size_t chosen = devices.size();
        std::string reason;
        for (size_t d = 0; d < devices.size() && chosen == devices.size(); ++d) {
            const auto& c = claims[d];
            if (c.supported.size() == count && c.supported[i])
                chosen = d;
            else if (i < c.reasons.size() && !c.reasons[i].empty())
                reason += devices[d].name + " does not support it (" + c.reasons[i] + "); ";
            else
                reason += devices[d].name + " does not support it; ";
        }
        if (chosen == devices.size())
            return invalidArgument(opName(model, i) + ": no device supports it (" + reason + ")");
        reason +=
            devices[chosen].name + (chosen == 0 ? " supports it (first choice)" : " supports it (fallback)");
        plan.deviceOfOperation.push_back(chosen);
        plan.reasonOfOperation.push_back(reason);
        if (plan.partitions.empty() || plan.partitions.back().device != chosen)
            plan.partitions.push_back({chosen, {}, {}, {}, {}});
        plan.partitions.back().operations.push_back(i);
    }
    if (plan.partitions.size() > 1 && !model.referenced.empty()) {
        return invalidArgument(
            "a model with referenced subgraphs (IF / WHILE) cannot be split across devices");
    }
    for (size_t p = 0; p < plan.partitions.size(); ++p) {
        const auto exported = exportedOperands(model, plan, p);
        if (plan.partitions.size() == 1) {
            plan.partitions[p].model = model;  // the whole model on one device, as given
            plan.partitions[p].parentInputs = model.main.inputIndexes;
            plan.partitions[p].parentOutputs = model.main.outputIndexes;
            continue;
        }
        NPU_TRY(SubModelBuilder(model, plan.partitions[p], exported).build());
    }
    return plan;
}

Result<PartitionedRun> runPartitions(const PartitionPlan& plan, const hal::Model& model,
                                     const std::vector<PartitionDevice>& devices,
                                     const std::vector<std::vector<uint8_t>>& inputs,
                                     const PreparedPartitions* prepared) {
    if (prepared != nullptr && prepared->size() != plan.partitions.size()) {
        return invalidArgument(std::to_string(prepared->size()) + " prepared models given for " +
                               std::to_string(plan.partitions.size()) + " partitions");
    }
    if (inputs.size() != model.main.inputIndexes.size()) {
        return invalidArgument(std::to_string(inputs.size()) + " inputs given, the model has " +
                               std::to_string(model.main.inputIndexes.size()));
    }
    std::unordered_map<uint32_t, std::vector<uint8_t>> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const uint32_t index = model.main.inputIndexes[i];
        const size_t need = NPU_TRY(operandBytes(model.main.operands[index], index));
        if (inputs[i].size() != need) {
            return invalidArgument("input " + std::to_string(i) + ": " + std::to_string(inputs[i].size()) +
                                   " bytes, the model takes " + std::to_string(need));
        }
        values[index] = inputs[i];
    }
    PartitionedRun run;
    for (size_t p = 0; p < plan.partitions.size(); ++p) {
        const auto& part = plan.partitions[p];
        PartitionTiming timing;
        timing.partition = p;
        auto result =
            runOne(part, *devices[part.device].device, prepared ? (*prepared)[p] : nullptr, values, timing);
        if (!result) {
            return fail(result.error().status, "partition " + std::to_string(p) + " on " +
                                                   devices[part.device].name + ": " + result.error().message);
        }
        timing.result = std::move(*result);
        run.timings.push_back(std::move(timing));
    }
    for (uint32_t index : model.main.outputIndexes) run.outputs.push_back(std::move(values[index]));
    return run;
}

Result<PreparedPartitions> preparePartitions(const PartitionPlan& plan,
                                             const std::vector<PartitionDevice>& devices) {
    PreparedPartitions prepared;
    for (size_t p = 0; p < plan.partitions.size(); ++p) {
        const auto& part = plan.partitions[p];
        auto one = devices[part.device].device->prepareModel(part.model);
        if (!one) {
            return fail(one.error().status, "partition " + std::to_string(p) + " on " +
                                                devices[part.device].name +
                                                ": prepare: " + one.error().message);
        }
        prepared.push_back(std::move(*one));
    }
    return prepared;
}

}  // namespace npu::framework
