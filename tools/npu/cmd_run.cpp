// npu run / npu demo
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cmd_model.h"
#include "commands.h"
#include "demo_network.h"
#include "npu/framework/graph_dump.h"
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

// The outputs, the verdict, device time and the per-operation cycles, as text or JSON.
void report(const framework::TestCase& tc, const RunOutcome& outcome,
            const std::optional<framework::Mismatch>& mismatch, uint64_t clockHz, bool json,
            const std::string& deviceName) {
    const auto& outputs = tc.model.main.outputIndexes;
    if (json) {
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
            const auto type = tc.model.main.operands[outputs[i]].type;
            outs.push_back({{"index", i},
                            {"type", hal::toString(type)},
                            {"values", formatTensor(type, outcome.outputs[i], 1u << 20)}});
        }
        j["outputs"] = outs;
        j["device_cycles"] = outcome.result.deviceCycles;
        j["timing"] = timingJson(outcome.result.timing);
        j["operations"] = profileJson(outcome.result);
        fmt::print("{}\n", j.dump(2));
        return;
    }
    fmt::print("model   {} on {}\n", tc.name, deviceName);
    for (size_t i = 0; i < outcome.outputs.size(); ++i) {
        const auto type = tc.model.main.operands[outputs[i]].type;
        fmt::print("output {} ({}): {}\n", i, hal::toString(type), formatTensor(type, outcome.outputs[i]));
    }
    if (mismatch) {
        fmt::print("result  MISMATCH: output {} element {}: expected {}, got {} (tolerance {})\n",
                   mismatch->output, mismatch->element, mismatch->expected, mismatch->actual,
                   mismatch->tolerance);
    } else {
        fmt::print("result  match (expected outputs within the CTS tolerance)\n");
    }
    const auto& t = outcome.result.timing;
    if (t.timeOnDeviceUs != hal::kNoTiming) {
        fmt::print("device  {} cycles = {} us simulated device time\n", outcome.result.deviceCycles,
                   t.timeOnDeviceUs);
    } else {
        fmt::print("device  time unavailable (the device does not measure it)\n");
    }
    if (t.timeInDriverUs != hal::kNoTiming) fmt::print("driver  {} us\n", t.timeInDriverUs);
    if (!outcome.result.profile.empty()) fmt::print("\n{}", formatProfileTable(outcome.result, clockHz));
}

std::string deviceLabel(const DeviceChoice& c) {
    return c.device == "npu" ? "npu (" + c.transport + ")" : c.device;
}

}  // namespace

int cmdRun(const DeviceChoice& choice, const std::string& file, const std::string& name, bool json,
           const std::string& dotFile, const ProfileFiles& files) {
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
        std::string ops;
        for (size_t i = 0; i < outcome->supportedOperations.size(); ++i) {
            if (!outcome->supportedOperations[i]) {
                ops += fmt::format("{}{} ({})", ops.empty() ? "" : ", ", i,
                                   hal::toString(found->model.main.operations[i].type));
            }
        }
        fmt::print(stderr, "npu run: {} does not support operation(s) {} of '{}'\n", deviceLabel(choice), ops,
                   name);
        // The device's own reason: preparing the model anyway makes its compiler say what it
        // cannot do (the planner's message names the operation and the cause).
        auto why = opened->device->prepareModel(found->model);
        if (!why) fmt::print(stderr, "npu run: why: {}\n", why.error().message);
        return 3;
    }
    if (found->expectFailure) {
        fmt::print(stderr, "npu run: '{}' is expected to fail, but it ran\n", name);
        return 1;
    }
    auto mismatch = framework::compareOutputs(*found, outcome->outputs, outcome->result.outputShapes);
    const uint64_t clockHz = clockOf(*opened->device);
    NetworkRun layers = layersOf(found->model, outcome->result, choice.device);
    if (auto hw = shim::queryNpuInfo(*opened->device)) addRoofline(layers, found->model, *hw);
    if (!writeProfileFiles(files, layers, name, clockHz)) return 2;
    report(*found, *outcome, mismatch, clockHz, json, deviceLabel(choice));
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
