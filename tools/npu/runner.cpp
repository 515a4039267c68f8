#include "runner.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <variant>

#include "npu/shim/npu_device.h"

namespace npu::tools {

Result<RunOutcome> runTestCase(hal::IDevice& device, const framework::TestCase& testCase) {
    RunOutcome outcome;
    outcome.supportedOperations = NPU_TRY(device.getSupportedOperations(testCase.model));
    for (bool s : outcome.supportedOperations) outcome.supported = outcome.supported && s;
    if (!outcome.supported) return outcome;
    const auto start = std::chrono::steady_clock::now();
    auto prepared = NPU_TRY(device.prepareModel(testCase.model));
    outcome.prepareMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (auto info = shim::queryCompileInfo(*prepared)) outcome.fromCache = info->fromCache;
    auto request = NPU_TRY(framework::makeRequest(testCase));
    outcome.result = NPU_TRY(
        prepared->executeSynchronously(request.request, hal::MeasureTiming::YES, std::nullopt, std::nullopt));
    outcome.outputs = framework::readOutputs(request);
    return outcome;
}

Result<RunOutcome> runPartitionedTestCase(const std::vector<framework::PartitionDevice>& devices,
                                          const framework::TestCase& testCase) {
    RunOutcome outcome;
    auto plan = framework::planPartitions(testCase.model, devices);
    if (!plan) {
        if (plan.error().status != hal::ErrorStatus::INVALID_ARGUMENT) return std::unexpected(plan.error());
        outcome.supported = false;
        return outcome;
    }
    for (size_t d : plan->deviceOfOperation) {
        outcome.supportedOperations.push_back(true);
        if (d == 0) ++outcome.opsOnFirstDevice;
    }
    if (plan->partitions.size() == 1) {
        // One device takes it all: run the model as it is (runPartitions needs every shape known).
        const size_t ops = outcome.opsOnFirstDevice;
        outcome = NPU_TRY(runTestCase(*devices[plan->partitions[0].device].device, testCase));
        outcome.opsOnFirstDevice = ops;
        return outcome;
    }
    auto run = NPU_TRY(framework::runPartitions(*plan, testCase.model, devices, testCase.inputs));
    outcome.outputs = std::move(run.outputs);
    for (const auto& t : run.timings) outcome.prepareMs += t.prepareMs;
    return outcome;
}

namespace {

// One element of a tensor as a number: integers exactly, floating point as double.
std::variant<int64_t, double> readElement(hal::OperandType type, const uint8_t* p) {
    using T = hal::OperandType;
    auto load = [p]<typename V>(V) {
        V v;
        std::memcpy(&v, p, sizeof(V));
        return v;
    };
    switch (type) {
        case T::TENSOR_FLOAT32:
        case T::FLOAT32:
            return static_cast<double>(load(float{}));
        case T::TENSOR_FLOAT16:
        case T::FLOAT16:
            return static_cast<double>(load(_Float16{}));
        case T::TENSOR_INT32:
        case T::INT32:
            return int64_t{load(int32_t{})};
        case T::UINT32:
            return int64_t{load(uint32_t{})};
        case T::TENSOR_QUANT16_SYMM:
            return int64_t{load(int16_t{})};
        case T::TENSOR_QUANT16_ASYMM:
            return int64_t{load(uint16_t{})};
        case T::TENSOR_QUANT8_ASYMM_SIGNED:
        case T::TENSOR_QUANT8_SYMM:
        case T::TENSOR_QUANT8_SYMM_PER_CHANNEL:
            return int64_t{static_cast<int8_t>(*p)};
        default:
            return int64_t{*p};
    }
}

}  // namespace

std::string formatTensor(hal::OperandType type, const std::vector<uint8_t>& bytes, size_t maxElements) {
    const size_t size = hal::elementSize(type);
    if (size == 0) return "<opaque>";
    const size_t count = bytes.size() / size;
    std::string out = "[";
    for (size_t i = 0; i < count && i < maxElements; ++i) {
        if (i > 0) out += ", ";
        const auto v = readElement(type, bytes.data() + i * size);
        out += std::holds_alternative<double>(v) ? fmt::format("{:g}", std::get<double>(v))
                                                 : std::to_string(std::get<int64_t>(v));
    }
    if (count > maxElements) out += fmt::format(", ... ({} more)", count - maxElements);
    return out + "]";
}

nlohmann::json tensorJson(hal::OperandType type, const std::vector<uint8_t>& bytes) {
    const size_t size = hal::elementSize(type);
    if (size == 0) return nullptr;
    nlohmann::json values = nlohmann::json::array();
    for (size_t i = 0; i + size <= bytes.size(); i += size) {
        std::visit([&values](auto v) { values.push_back(v); }, readElement(type, bytes.data() + i));
    }
    return values;
}

std::string formatProfileTable(const hal::ExecutionResult& result, uint64_t clockHz) {
    std::string out = fmt::format("{:>3}  {:<18} {:>12} {:>12} {:>12} {:>7}\n", "op", "type", "cycles",
                                  "MACs", "wait cycles*", "share");
    uint64_t total = 0;
    for (const auto& p : result.profile) total += p.cycles;
    for (const auto& p : result.profile) {
        out += fmt::format(
            "{:>3}  {:<18} {:>12} {:>12} {:>12} {:>6.1f}%\n", p.operationIndex, hal::toString(p.type),
            p.cycles, p.macs, p.stallCycles,
            total == 0 ? 0.0 : 100.0 * static_cast<double>(p.cycles) / static_cast<double>(total));
    }
    out += fmt::format("     {:<18} {:>12}", "total (device)", result.deviceCycles);
    if (clockHz > 0) {
        out += fmt::format("  = {:.3f} us at {:.0f} MHz",
                           static_cast<double>(result.deviceCycles) * 1e6 / static_cast<double>(clockHz),
                           static_cast<double>(clockHz) / 1e6);
    }
    return out +
           "\n* cycles the load, compute and store queues spent waiting for one another's tokens, summed "
           "over the queues: they run in parallel, so this can exceed the operation's cycles\n";
}

}  // namespace npu::tools
