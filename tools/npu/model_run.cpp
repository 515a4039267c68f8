#include "model_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

namespace npu::tools {

namespace {

uint64_t operandBytes(const hal::Operand& o) {
    if (hal::isScalarType(o.type)) return 0;
    uint64_t n = hal::elementSize(o.type);
    for (uint32_t d : o.dimensions) n *= d;
    return n;
}

// The bytes an ideal schedule of this operation alone must move: each tensor it reads (inputs,
// weights, biases) and writes, once. RESHAPE and SQUEEZE only rename bytes.
uint64_t minimumBytes(const hal::Model& model, uint32_t index) {
    const auto& op = model.main.operations[index];
    if (op.type == hal::OperationType::RESHAPE || op.type == hal::OperationType::SQUEEZE) return 0;
    uint64_t bytes = 0;
    for (uint32_t i : op.inputs) bytes += operandBytes(model.main.operands[i]);
    for (uint32_t o : op.outputs) bytes += operandBytes(model.main.operands[o]);
    return bytes;
}

}  // namespace

namespace {

// One row per operation, on the device `deviceOf` names, no profile yet.
NetworkRun layout(const hal::Model& model, const std::vector<std::string>& names,
                  const std::function<std::string(size_t)>& deviceOf) {
    NetworkRun run;
    run.opsTotal = model.main.operations.size();
    for (size_t i = 0; i < run.opsTotal; ++i) {
        LayerRow row;
        row.index = static_cast<uint32_t>(i);
        row.name = i < names.size() ? names[i] : fmt::format("op{}", i);
        row.type = model.main.operations[i].type;
        row.device = deviceOf(i);
        row.profile.operationIndex = row.index;
        row.profile.type = row.type;
        run.layers.push_back(std::move(row));
    }
    return run;
}

// The profile of one execution of the operations `parentOps` (a partition; the whole model
// when null) into their rows.
Status addProfile(NetworkRun& run, const std::vector<uint32_t>* parentOps,
                  const hal::ExecutionResult& result) {
    run.deviceCycles += result.deviceCycles;
    for (const auto& p : result.profile) {
        const size_t count = parentOps != nullptr ? parentOps->size() : run.layers.size();
        if (p.operationIndex >= count) {
            return generalFailure(fmt::format("the device profiled operation {} of a {}-operation model",
                                              p.operationIndex, count));
        }
        LayerRow& row = run.layers[parentOps != nullptr ? (*parentOps)[p.operationIndex] : p.operationIndex];
        row.profiled = true;
        row.profile = p;
        row.profile.operationIndex = row.index;
    }
    return {};
}

// Operations run one after another: each starts where the profiled ones before it ended.
void addStartCycles(NetworkRun& run) {
    uint64_t clock = 0;
    for (LayerRow& row : run.layers) {
        row.startCycle = clock;
        if (row.profiled) clock += row.profile.cycles;
    }
}

}  // namespace

Result<NetworkRun> runNetwork(const framework::TestCase& testCase, const std::vector<std::string>& names,
                              const std::vector<framework::PartitionDevice>& devices) {
    const hal::Model& model = testCase.model;
    auto plan = NPU_TRY(framework::planPartitions(model, devices));
    auto partitioned = NPU_TRY(framework::runPartitions(plan, model, devices, testCase.inputs));
    NetworkRun run = layout(model, names, [&](size_t i) { return devices[plan.deviceOfOperation[i]].name; });
    run.outputs = std::move(partitioned.outputs);
    run.partitions = plan.partitions.size();
    run.reasons = std::move(plan.reasonOfOperation);
    for (size_t device : plan.deviceOfOperation) run.opsOnFirstDevice += device == 0 ? 1 : 0;
    for (const auto& timing : partitioned.timings) {
        const auto& part = plan.partitions[timing.partition];
        if (part.device != 0) continue;
        NPU_TRY(addProfile(run, &part.operations, timing.result));
        run.prepareMs += timing.prepareMs;
        if (timing.prepared) {
            if (auto info = shim::queryCompileInfo(*timing.prepared)) run.compiled.push_back(*info);
        }
    }
    addStartCycles(run);
    return run;
}

NetworkRun layersOf(const hal::Model& model, const hal::ExecutionResult& result, const std::string& device) {
    NetworkRun run = layout(model, {}, [&](size_t) { return device; });
    run.opsOnFirstDevice = run.opsTotal;
    run.partitions = 1;
    (void)addProfile(run, nullptr, result);  // a profile of another model is left out, not fatal
    addStartCycles(run);
    return run;
}

void addRoofline(NetworkRun& run, const hal::Model& model, const shim::NpuInfo& hw) {
    const double pes = static_cast<double>(hw.arrayRows) * hw.arrayCols;
    const double bandwidth = std::max<double>(1, hw.dramBytesPerCycle);
    for (LayerRow& row : run.layers) {
        row.minBytes = minimumBytes(model, row.index);
        if (!row.profiled) continue;
        const double compute = pes > 0 ? static_cast<double>(row.profile.macs) / pes : 0;
        const double memory = static_cast<double>(row.minBytes) / bandwidth;
        row.rooflineCycles = static_cast<uint64_t>(std::ceil(std::max(compute, memory)));
        row.utilization = row.profile.cycles > 0 && pes > 0
                              ? static_cast<double>(row.profile.macs) / (pes * row.profile.cycles)
                              : 0;
    }
}

std::string firstDifference(const std::vector<std::vector<uint8_t>>& expected,
                            const std::vector<std::vector<uint8_t>>& actual) {
    if (expected.size() != actual.size())
        return fmt::format("{} outputs expected, {} given", expected.size(), actual.size());
    for (size_t o = 0; o < expected.size(); ++o) {
        if (expected[o].size() != actual[o].size())
            return fmt::format("output {}: {} bytes expected, got {}", o, expected[o].size(),
                               actual[o].size());
        for (size_t i = 0; i < expected[o].size(); ++i) {
            if (expected[o][i] != actual[o][i])
                return fmt::format("output {} byte {}: expected {}, got {}", o, i, expected[o][i],
                                   actual[o][i]);
        }
    }
    return {};
}

nlohmann::ordered_json layerProfileJson(const LayerRow& l) {
    nlohmann::ordered_json j = {
        {"operation", l.index}, {"name", l.name}, {"type", hal::toString(l.type)}, {"device", l.device}};
    if (!l.profiled) return j;
    const auto& p = l.profile;
    j["start_cycle"] = l.startCycle;
    j["cycles"] = p.cycles;
    j["utilization"] = std::round(l.utilization * 1e4) / 1e4;
    j["roofline_cycles"] = l.rooflineCycles;
    j["macs"] = p.macs;
    j["bytes"] = p.dramReadBytes + p.dramWriteBytes;
    j["min_bytes"] = l.minBytes;
    j["dram_read_bytes"] = p.dramReadBytes;
    j["dram_write_bytes"] = p.dramWriteBytes;
    j["stall_cycles"] = p.stallCycles;
    j["stall_dma_cycles"] = p.stallDmaCycles;
    j["load_active_cycles"] = p.loadActiveCycles;
    j["compute_active_cycles"] = p.computeActiveCycles;
    j["store_active_cycles"] = p.storeActiveCycles;
    return j;
}

std::string layerCsv(const NetworkRun& run) {
    std::string out =
        "index,name,type,device,start_cycle,cycles,macs,utilization_pct,roofline_cycles,stall_cycles,"
        "stall_dma_cycles,load_active_cycles,compute_active_cycles,store_active_cycles,dram_read_bytes,"
        "dram_write_bytes,min_bytes\n";
    for (const LayerRow& r : run.layers) {
        std::string name = r.name;
        for (char& ch : name) {
            if (ch == ',' || ch == '\n' || ch == '"') ch = '_';
        }
        out += fmt::format("{},{},{},{}", r.index, name, hal::toString(r.type), r.device);
        if (!r.profiled) {
            out += fmt::format(",,,,,,,,,,,,,{}\n", r.minBytes);
            continue;
        }
        const auto& p = r.profile;
        out += fmt::format(",{},{},{},{:.4f},{},{},{},{},{},{},{},{},{}\n", r.startCycle, p.cycles, p.macs,
                           100 * r.utilization, r.rooflineCycles, p.stallCycles, p.stallDmaCycles,
                           p.loadActiveCycles, p.computeActiveCycles, p.storeActiveCycles, p.dramReadBytes,
                           p.dramWriteBytes, r.minBytes);
    }
    return out;
}

std::string layerTrace(const NetworkRun& run, const std::string& modelName, uint64_t clockHz) {
    using Json = nlohmann::ordered_json;
    const double mhz = clockHz > 0 ? static_cast<double>(clockHz) / 1e6 : 1000.0;
    // Microseconds rounded to 1 ns, so the same run gives the same bytes.
    auto micros = [&](uint64_t cycles) {
        return std::round(static_cast<double>(cycles) / mhz * 1000) / 1000;
    };
    auto meta = [](const char* what, int tid, Json args) {
        return Json{{"name", what}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", std::move(args)}};
    };
    Json events = Json::array();
    events.push_back(meta("process_name", 0, {{"name", "NPU: " + modelName}}));
    events.push_back(meta("thread_name", 1, {{"name", "operations (npu)"}}));
    events.push_back(meta("thread_name", 2, {{"name", "operations on another device"}}));
    for (const LayerRow& r : run.layers) {
        const std::string label = fmt::format("{} {}", r.index, r.name);
        Json args = layerProfileJson(r);
        if (!r.profiled) {
            events.push_back(Json{{"name", label},
                                  {"cat", "cpu"},
                                  {"ph", "i"},
                                  {"s", "t"},
                                  {"pid", 1},
                                  {"tid", 2},
                                  {"ts", micros(r.startCycle)},
                                  {"args", std::move(args)}});
            continue;
        }
        const auto& p = r.profile;
        events.push_back(Json{{"name", label},
                              {"cat", "operation"},
                              {"ph", "X"},
                              {"pid", 1},
                              {"tid", 1},
                              {"ts", micros(r.startCycle)},
                              {"dur", micros(p.cycles)},
                              {"args", std::move(args)}});
        // Counter tracks as in `npu sim --trace`: DRAM bytes per cycle over the operation.
        const double cycles = std::max<double>(1, p.cycles);
        events.push_back(
            Json{{"name", "dram_bandwidth"},
                 {"ph", "C"},
                 {"pid", 1},
                 {"ts", micros(r.startCycle)},
                 {"args",
                  {{"read_bytes_per_cycle", std::round(p.dramReadBytes / cycles * 1000) / 1000},
                   {"write_bytes_per_cycle", std::round(p.dramWriteBytes / cycles * 1000) / 1000}}}});
    }
    return Json{{"displayTimeUnit", "ns"}, {"traceEvents", std::move(events)}}.dump() + "\n";
}

}  // namespace npu::tools
