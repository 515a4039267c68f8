// npu run / npu demo
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cmd_model.h"
#include "commands.h"
#include "demo_network.h"
#include "npu/framework/graph_dump.h"
#include "npu/framework/npy.h"
#include "npu/shim/npu_device.h"
#include "runner.h"

namespace npu::tools {
namespace {

void printError(const char* what, const Error& e) {
    fmt::print(stderr, "npu {}: {}: {}\n", what, hal::toString(e.status), e.message);
}

uint64_t clockOf(hal::IDevice& device) {
    auto info = shim::queryNpuInfo(device);
    return info ? info->clockHz : 0;
}

nlohmann::json profileJson(const hal::ExecutionResult& r) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& p : r.profile) {
        ops.push_back({{"operation", p.operationIndex},
                       {"type", hal::toString(p.type)},
                       {"cycles", p.cycles},
                       {"macs", p.macs},
                       {"stall_cycles", p.stallCycles}});
    }
    return ops;
}

nlohmann::json timingJson(const hal::Timing& t) {
    auto v = [](uint64_t us) { return us == hal::kNoTiming ? nlohmann::json(nullptr) : nlohmann::json(us); };
    return {{"time_on_device_us", v(t.timeOnDeviceUs)}, {"time_in_driver_us", v(t.timeInDriverUs)}};
}

// Simulated device time from the cycle count and the NPU's clock, in microseconds (fractional:
// 683 cycles at 1 GHz are 0.683 us); nullopt where there is no clock (the reference device).
std::optional<double> deviceMicros(const RunOutcome& outcome, uint64_t clockHz) {
    if (clockHz == 0) return std::nullopt;
    return static_cast<double>(outcome.result.deviceCycles) * 1e6 / static_cast<double>(clockHz);
}

std::string compilationSource(const RunOutcome& outcome) {
    if (!outcome.fromCache) return "prepared";  // a device that does not say (the reference)
    return *outcome.fromCache ? "loaded from the compilation cache" : "compiled";
}

nlohmann::json reportJson(const framework::TestCase& tc, const RunOutcome& outcome,
                          const std::optional<framework::Mismatch>& mismatch, uint64_t clockHz,
                          const std::string& deviceName) {
    nlohmann::json j;
    j["name"] = tc.name;
    j["device"] = deviceName;
    j["match"] = !mismatch.has_value();
    if (mismatch) {
        j["mismatch"] = {{"output", mismatch->output},
                         {"element", mismatch->element},
                         {"expected", mismatch->expected},
                         {"actual", mismatch->actual},
                         {"tolerance", mismatch->tolerance}};
    }
    nlohmann::json outs = nlohmann::json::array();
    for (size_t i = 0; i < outcome.outputs.size(); ++i) {
        const auto type = tc.model.main.operands[tc.model.main.outputIndexes[i]].type;
        const auto& shapes = outcome.result.outputShapes;
        outs.push_back({{"index", i},
                        {"type", hal::toString(type)},
                        {"dims", i < shapes.size() ? nlohmann::json(shapes[i].dimensions) : nlohmann::json()},
                        {"values", tensorJson(type, outcome.outputs[i])}});
    }
    j["outputs"] = outs;
    j["device_cycles"] = outcome.result.deviceCycles;
    const auto micros = deviceMicros(outcome, clockHz);
    j["device_time_us"] = micros ? nlohmann::json(*micros) : nlohmann::json(nullptr);
    j["clock_hz"] = clockHz;
    j["timing"] = timingJson(outcome.result.timing);
    j["prepare_ms"] = outcome.prepareMs;
    j["from_cache"] = outcome.fromCache ? nlohmann::json(*outcome.fromCache) : nlohmann::json(nullptr);
    j["operations"] = profileJson(outcome.result);
    return j;
}

// Device time only where a device counted cycles; the reference's measured time is host time.
void printTiming(const RunOutcome& outcome, uint64_t clockHz) {
    const auto& t = outcome.result.timing;
    if (const auto micros = deviceMicros(outcome, clockHz)) {
        fmt::print("device  {} cycles = {:.3f} us simulated device time at {:.0f} MHz\n",
                   outcome.result.deviceCycles, *micros, static_cast<double>(clockHz) / 1e6);
        if (t.timeInDriverUs != hal::kNoTiming)
            fmt::print("driver  {} us host time in the driver\n", t.timeInDriverUs);
    } else if (t.timeInDriverUs != hal::kNoTiming) {
        fmt::print("host    {} us on the CPU (this device has no device clock)\n", t.timeInDriverUs);
    } else {
        fmt::print("time    unavailable (the device does not measure it)\n");
    }
    fmt::print("prepare {:.1f} ms, {}\n", outcome.prepareMs, compilationSource(outcome));
}

// The outputs, the verdict, device time and the per-operation cycles, as text or JSON.
void report(const framework::TestCase& tc, const RunOutcome& outcome,
            const std::optional<framework::Mismatch>& mismatch, uint64_t clockHz, bool json,
            const std::string& deviceName) {
    if (json) {
        fmt::print("{}\n", reportJson(tc, outcome, mismatch, clockHz, deviceName).dump(2));
        return;
    }
    fmt::print("model   {} on {}\n", tc.name, deviceName);
    for (size_t i = 0; i < outcome.outputs.size(); ++i) {
        const auto type = tc.model.main.operands[tc.model.main.outputIndexes[i]].type;
        fmt::print("output {} ({}): {}\n", i, hal::toString(type),
                   formatTensor(type, outcome.outputs[i], SIZE_MAX));
    }
    if (mismatch) {
        fmt::print("result  MISMATCH: output {} element {}: expected {}, got {} (tolerance {})\n",
                   mismatch->output, mismatch->element, mismatch->expected, mismatch->actual,
                   mismatch->tolerance);
    } else {
        fmt::print("result  match (expected outputs within the CTS tolerance)\n");
    }
    printTiming(outcome, clockHz);
    if (!outcome.result.profile.empty()) fmt::print("\n{}", formatProfileTable(outcome.result, clockHz));
}

// --output FILE.npy: output 0 to FILE.npy, output k > 0 to FILE_k.npy.
bool writeOutputs(const framework::TestCase& tc, const RunOutcome& outcome, const std::string& path) {
    for (size_t i = 0; i < outcome.outputs.size(); ++i) {
        std::string target = path;
        if (i > 0) {
            const auto dot = path.ends_with(".npy") ? path.size() - 4 : path.size();
            target = path.substr(0, dot) + "_" + std::to_string(i) + ".npy";
        }
        const auto type = tc.model.main.operands[tc.model.main.outputIndexes[i]].type;
        const auto& shapes = outcome.result.outputShapes;
        const auto dims = i < shapes.size() ? shapes[i].dimensions : std::vector<uint32_t>{};
        if (auto written = framework::writeNpyFile(target, type, dims, outcome.outputs[i]); !written) {
            fmt::print(stderr, "npu run: --output: {}\n", written.error().message);
            return false;
        }
    }
    return true;
}

std::string deviceLabel(const DeviceChoice& c) {
    return c.device == "npu" ? "npu (" + c.transport + ")" : c.device;
}

// --exact: the first byte that differs from the expected outputs (within the CTS tolerance,
// else compareOutputs would have reported it), or nothing when every output is identical.
std::optional<framework::Mismatch> firstDifference(const framework::TestCase& tc,
                                                   const std::vector<std::vector<uint8_t>>& outputs) {
    for (uint32_t o = 0; o < outputs.size() && o < tc.expectedOutputs.size(); ++o) {
        const auto& e = tc.expectedOutputs[o];
        const auto& a = outputs[o];
        for (size_t i = 0; i < std::min(a.size(), e.size()); ++i) {
            if (a[i] != e[i])
                return framework::Mismatch{
                    o,
                    i,
                    double(e[i]),
                    double(a[i]),
                    0,
                    fmt::format("output {} byte {}: expected {}, got {} (--exact)", o, i, e[i], a[i])};
        }
    }
    return std::nullopt;
}

}  // namespace

// The operations `device` does not take and why: the NPU's firmware says it per operation
// (SupportedOperationsReply.unsupported); for another device, preparing the model anyway makes
// its compiler say what it cannot do.
void printUnsupported(hal::IDevice& device, const framework::TestCase& tc, const RunOutcome& outcome,
                      const std::string& label) {
    std::string ops;
    for (size_t i = 0; i < outcome.supportedOperations.size(); ++i) {
        if (!outcome.supportedOperations[i])
            ops += fmt::format("{}{} ({})", ops.empty() ? "" : ", ", i,
                               hal::toString(tc.model.main.operations[i].type));
    }
    fmt::print(stderr, "npu run: {} does not support operation(s) {} of '{}'\n", label, ops, tc.name);
    if (auto support = shim::querySupportedOperations(device, tc.model)) {
        for (size_t i = 0; i < support->reasons.size(); ++i)
            if (!support->reasons[i].empty()) fmt::print(stderr, "npu run: why: {}\n", support->reasons[i]);
        if (std::any_of(support->reasons.begin(), support->reasons.end(), [](auto& r) { return !r.empty(); }))
            return;
    }
    auto why = device.prepareModel(tc.model);
    if (!why) fmt::print(stderr, "npu run: why: {}\n", why.error().message);
}

int cmdRun(const DeviceChoice& choice, const std::string& file, const std::string& name,
           const RunOptions& options) {
    const bool json = options.json;
    const std::string& dotFile = options.dotFile;
    auto found = framework::findTestCase(file, name);
    if (!found) {
        printError("run", found.error());
        return 2;
    }
    if (!dotFile.empty()) {
        std::ofstream dot(dotFile);
        if (dot) framework::graphDump(found->model, dot, name);
        if (!dot) {
            fmt::print(stderr, "npu run: cannot write the graph to {}\n", dotFile);
            return 2;
        }
    }
    auto opened = openDevice(choice);
    if (!opened) {
        printError("run", opened.error());
        return opened.error().status == hal::ErrorStatus::INVALID_ARGUMENT
                   ? 2
                   : 1;  // 2: bad input (e.g. --hw-config)
    }
    auto outcome = runTestCase(*opened->device, *found);
    if (!outcome) {
        if (found->expectFailure) {
            fmt::print("model   {}: failed as the vector expects ({})\n", name, outcome.error().message);
            return 0;
        }
        printError("run", outcome.error());
        // An invalid model is bad input (2) whichever validator (the loader's, the HAL's, the
        // device's) rejects it.
        return outcome.error().status == hal::ErrorStatus::INVALID_ARGUMENT ? 2 : 1;
    }
    if (!outcome->supported) {
        printUnsupported(*opened->device, *found, *outcome, deviceLabel(choice));
        return 3;
    }
    if (found->expectFailure) {
        fmt::print(stderr, "npu run: '{}' is expected to fail, but it ran\n", name);
        return 1;
    }
    auto mismatch = framework::compareOutputs(*found, outcome->outputs, outcome->result.outputShapes);
    if (!mismatch && options.exact) mismatch = firstDifference(*found, outcome->outputs);
    const uint64_t clockHz = clockOf(*opened->device);
    NetworkRun layers = layersOf(found->model, outcome->result, choice.device);
    if (auto hw = shim::queryNpuInfo(*opened->device)) addRoofline(layers, found->model, *hw);
    if (!writeProfileFiles({options.csvFile, options.traceFile}, layers, name, clockHz)) return 2;
    report(*found, *outcome, mismatch, clockHz, json, deviceLabel(choice));
    if (!options.outputFile.empty() && !writeOutputs(*found, *outcome, options.outputFile)) return 2;
    return mismatch ? 1 : 0;
}

int cmdDemo(const DeviceChoice& choice, bool json) {
    DemoNetwork demo = makeDemoNetwork();
    framework::TestCase tc;
    tc.name = "demo_quant8_cnn";
    tc.model = demo.model;
    tc.inputs = {demo.input};
    tc.expectedOutputs = {std::vector<uint8_t>(10)};
    tc.expectedOutputDims = {demo.outputDims};
    tc.outputIgnored = {false};

    // The CPU reference gives the expected outputs; the NPU must match them bit for bit.
    auto reference = openDevice({.device = "reference"});
    if (!reference) {
        printError("demo", reference.error());
        return 1;
    }
    auto expected = runTestCase(*reference->device, tc);
    if (!expected || !expected->supported) {
        printError("demo",
                   expected ? Error{hal::ErrorStatus::GENERAL_FAILURE, "reference does not support the demo"}
                            : expected.error());
        return 1;
    }
    tc.expectedOutputs = expected->outputs;

    DeviceChoice npu = choice;
    npu.device = "npu";
    auto opened = openDevice(npu);
    if (!opened) {
        printError("demo", opened.error());
        return opened.error().status == hal::ErrorStatus::INVALID_ARGUMENT ? 2 : 1;
    }
    auto outcome = runTestCase(*opened->device, tc);
    if (!outcome) {
        printError("demo", outcome.error());
        return 1;
    }
    if (!outcome->supported) {
        fmt::print(stderr, "npu demo: the NPU does not support every operation of the demo network\n");
        return 3;
    }
    std::optional<framework::Mismatch> mismatch;
    if (outcome->outputs != tc.expectedOutputs) {
        mismatch = framework::compareOutputs(tc, outcome->outputs, outcome->result.outputShapes);
        if (!mismatch) mismatch = framework::Mismatch{0, 0, 0, 0, 0, "not bit-exact (within tolerance)"};
    }
    report(tc, *outcome, mismatch, clockOf(*opened->device), json, deviceLabel(npu));
    if (!json)
        fmt::print("\nreference (CPU) outputs: {}\n",
                   formatTensor(hal::OperandType::TENSOR_QUANT8_ASYMM, tc.expectedOutputs[0]));
    return mismatch ? 1 : 0;
}

}  // namespace npu::tools
