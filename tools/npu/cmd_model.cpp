// npu run --builtin NAME and npu bench model (see cmd_model.h).
#include "cmd_model.h"

#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "builtin_networks.h"
#include "cli_checks.h"
#include "cmd_bench_onnx.h"
#include "runner.h"

namespace npu::tools {

namespace {

using Json = nlohmann::ordered_json;

int fail(const char* what, const Error& e) {
    fmt::print(stderr, "npu {}: {}: {}\n", what, hal::toString(e.status), e.message);
    return e.status == hal::ErrorStatus::INVALID_ARGUMENT ? 2 : 1;
}

// The chosen device first, then the CPU reference for what it does not claim (npu), or the
// reference alone.
struct Devices {
    OpenedDevice npu, reference;
    std::vector<framework::PartitionDevice> list;
    bool onNpu() const { return npu.device != nullptr; }
};

Result<Devices> openDevices(const DeviceChoice& choice) {
    Devices d;
    d.reference = NPU_TRY(openDevice({.device = "reference"}));
    if (choice.device == "npu") {
        d.npu = NPU_TRY(openDevice(choice));
        d.list.push_back(partitionDevice("npu", d.npu.device.get()));
    }
    d.list.push_back({"reference", d.reference.device.get()});
    return d;
}

Result<CheckedRun> runChecked(const Devices& devices, const framework::TestCase& testCase,
                              const std::vector<std::string>& names) {
    CheckedRun c;
    const auto t0 = std::chrono::steady_clock::now();
    c.run = NPU_TRY(runNetwork(testCase, names, devices.list));
    c.hostMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!devices.onNpu()) return c;
    c.hw = NPU_TRY(shim::queryNpuInfo(*devices.npu.device));
    addRoofline(c.run, testCase.model, c.hw);
    auto expected = NPU_TRY(runTestCase(*devices.reference.device, testCase));
    c.compared = true;
    c.difference = firstDifference(expected.outputs, c.run.outputs);
    return c;
}

// A built-in network, the devices it ran on and the checked run.
struct BuiltinRun {
    BuiltinNetwork net;
    Devices devices;
    CheckedRun checked;
};

Result<BuiltinRun> runBuiltin(const DeviceChoice& choice, const std::string& name, uint32_t inputSize) {
    BuiltinRun r;
    r.net = NPU_TRY(makeBuiltinNetwork(name, inputSize));
    r.devices = NPU_TRY(openDevices(choice));
    r.checked = NPU_TRY(runChecked(r.devices, r.net.testCase, r.net.operationNames));
    return r;
}

std::string inputLabel(const BuiltinNetwork& net) {
    const auto& dims = net.testCase.model.main.operands[net.testCase.model.main.inputIndexes[0]].dimensions;
    return fmt::format("{}x{}x{}", dims[1], dims[2], dims[3]);
}

void printRunText(const BuiltinNetwork& net, const CheckedRun& c, const DeviceChoice& choice) {
    const auto& run = c.run;
    const auto& model = net.testCase.model;
    fmt::print("model   {} ({} input), {} operations\n", net.testCase.name, inputLabel(net), run.opsTotal);
    if (choice.device == "npu") {
        fmt::print("device  npu ({}): {} of {} operations on the NPU, {} partition(s)\n", choice.transport,
                   run.opsOnFirstDevice, run.opsTotal, run.partitions);
        for (const auto& s : fallbackOperations(run, "npu"))
            fmt::print("        on the CPU reference: {}\n", s);
    }
    for (size_t i = 0; i < run.outputs.size(); ++i) {
        const auto type = model.main.operands[model.main.outputIndexes[i]].type;
        fmt::print("output {} ({}): {}\n", i, hal::toString(type), formatTensor(type, run.outputs[i]));
    }
    if (c.compared) {
        fmt::print("result  {}\n", c.difference.empty() ? "bit-exact with the CPU reference"
                                                        : "MISMATCH with the CPU reference: " + c.difference);
    }
    if (choice.device == "npu") {
        fmt::print("cycles  {} on the NPU = {:.1f} us at {:.0f} MHz (roofline {})\n", run.deviceCycles,
                   c.hw.clockHz
                       ? static_cast<double>(run.deviceCycles) * 1e6 / static_cast<double>(c.hw.clockHz)
                       : 0.0,
                   static_cast<double>(c.hw.clockHz) / 1e6, rooflineTotal(run));
    }
    fmt::print("\n{}", layerTable(run));
}

Json outputsJson(const BuiltinNetwork& net, const NetworkRun& run) {
    Json outs = Json::array();
    const auto& model = net.testCase.model;
    for (size_t i = 0; i < run.outputs.size(); ++i) {
        const auto type = model.main.operands[model.main.outputIndexes[i]].type;
        outs.push_back({{"index", i},
                        {"type", hal::toString(type)},
                        {"values", formatTensor(type, run.outputs[i], 1u << 20)}});
    }
    return outs;
}

Json layersJson(const NetworkRun& run) {
    Json layers = Json::array();
    for (const auto& l : run.layers) layers.push_back(layerProfileJson(l));
    return layers;
}

}  // namespace

// "65 SOFTMAX head/softmax, ..." of the operations not on the first device.
std::vector<std::string> fallbackOperations(const NetworkRun& run, const std::string& first) {
    std::vector<std::string> out;
    for (const auto& l : run.layers) {
        if (l.device != first) out.push_back(fmt::format("{} {} {}", l.index, hal::toString(l.type), l.name));
    }
    return out;
}

std::string layerTable(const NetworkRun& run) {
    std::string out = fmt::format("{:>4}  {:<30} {:<20} {:<9} {:>10} {:>6} {:>10} {:>10}\n", "op", "name",
                                  "type", "device", "cycles", "util%", "roofline", "dram bytes");
    for (const auto& l : run.layers) {
        out += fmt::format("{:>4}  {:<30} {:<20} {:<9}", l.index, l.name.substr(0, 30), hal::toString(l.type),
                           l.device);
        if (l.profiled) {
            out += fmt::format(" {:>10} {:>6.1f} {:>10} {:>10}", l.profile.cycles, 100 * l.utilization,
                               l.rooflineCycles, l.profile.dramReadBytes + l.profile.dramWriteBytes);
        }
        out += "\n";
    }
    return out;
}

uint64_t rooflineTotal(const NetworkRun& run) {
    uint64_t total = 0;
    for (const auto& l : run.layers) total += l.rooflineCycles;
    return total;
}

Result<CheckedRun> runNetworkChecked(const DeviceChoice& choice, const framework::TestCase& testCase,
                                     const std::vector<std::string>& names) {
    const Devices devices = NPU_TRY(openDevices(choice));
    return runChecked(devices, testCase, names);
}

bool writeProfileFiles(const ProfileFiles& files, const NetworkRun& run, const std::string& modelName,
                       uint64_t clockHz) {
    auto write = [](const std::string& path, const std::string& text) {
        std::ofstream f(path);
        if (f) f << text;
        if (!f) fmt::print(stderr, "npu run: cannot write {}\n", path);
        return static_cast<bool>(f);
    };
    if (!files.csv.empty() && !write(files.csv, layerCsv(run))) return false;
    return files.trace.empty() || write(files.trace, layerTrace(run, modelName, clockHz));
}

int cmdRunBuiltin(const DeviceChoice& choice, const BuiltinRunOptions& options, bool json) {
    auto built = runBuiltin(choice, options.name, options.inputSize);
    if (!built) return fail("run", built.error());
    const BuiltinNetwork* net = &built->net;
    const CheckedRun* checked = &built->checked;
    const NetworkRun& run = checked->run;
    if (!writeProfileFiles(options.files, run, net->testCase.name, checked->hw.clockHz)) return 2;
    if (json) {
        Json j;
        j["name"] = net->testCase.name;
        j["input"] = inputLabel(*net);
        j["device"] = choice.device == "npu" ? "npu (" + choice.transport + ")" : choice.device;
        if (checked->compared) j["match"] = checked->difference.empty();
        if (!checked->difference.empty()) j["mismatch"] = checked->difference;
        j["ops_total"] = run.opsTotal;
        if (choice.device == "npu") {
            j["ops_on_npu"] = run.opsOnFirstDevice;
            j["operations_on_cpu"] = fallbackOperations(run, "npu");
            j["partitions"] = run.partitions;
            j["device_cycles"] = run.deviceCycles;
            j["roofline_cycles"] = rooflineTotal(run);
        }
        j["outputs"] = outputsJson(*net, run);
        j["operations"] = layersJson(run);
        fmt::print("{}\n", j.dump(2));
    } else {
        printRunText(*net, *checked, choice);
    }
    return checked->difference.empty() ? 0 : 1;
}

BenchModelCli::BenchModelCli(CLI::App& bench) {
    cmd_ = bench.add_subcommand("model",
                                "A built-in network on the NPU: per-layer cycles, utilization and roofline "
                                "bound; total cycles, compile time and firmware memory");
    auto* builtin = cmd_->add_option("--builtin", name_, "the network: mobilenet_v2 or ssd_mobilenet_v1");
    cmd_->add_option("model", onnxModel_, "MODEL.onnx: an ONNX model instead (as npu bench onnx)")
        ->check(CLI::ExistingFile)
        ->excludes(builtin);
    cmd_->add_option("--input-shape", inputShapes_, "MODEL.onnx: NAME=1x3x48x192 for a dynamic input");
    cmd_->add_option("--runs", runs_, "MODEL.onnx: timed runs per device")->check(CLI::Range(1, 1000));
    cmd_->add_flag("--compare-onnxruntime", compareOnnxRuntime_,
                   "MODEL.onnx: also run ONNX Runtime (npm onnxruntime-node, one thread)");
    cmd_->add_option("--input-size", inputSize_, "image height and width (default: the network's own)")
        ->check(CLI::Range(32, 512));
    cmd_->add_flag("--json", json_, "print JSON");
    cmd_->add_option("--transport", choice_.transport, "loopback, unix, usb or qemu")
        ->check(CLI::IsMember({"loopback", "unix", "usb", "qemu"}))
        ->capture_default_str();
    cmd_->add_option("--hw-config", choice_.hwConfigPath,
                     "the simulated NPU's config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);
    cmd_->add_flag("--no-autotune{false}", choice_.autotune,
                   "compile with the planner's tilings, no autotuning trials (docs/firmware.md)");
    addTimeoutOptions(cmd_, choice_);
}

int BenchModelCli::run() {
    if (!onnxModel_.empty()) {
        return benchOnnx({.model = onnxModel_,
                          .inputShapes = inputShapes_,
                          .hwConfig = choice_.hwConfigPath,
                          .runs = runs_,
                          .json = json_,
                          .compareOnnxRuntime = compareOnnxRuntime_});
    }
    if (name_.empty()) return fmt::print(stderr, "npu bench model: give --builtin NAME or MODEL.onnx\n"), 2;
    auto built = runBuiltin(choice_, name_, inputSize_);
    if (!built) return fail("bench model", built.error());
    const BuiltinNetwork* net = &built->net;
    const Devices* devices = &built->devices;
    const CheckedRun* checked = &built->checked;
    const NetworkRun& run = checked->run;
    auto counterList = shim::queryCounters(*devices->npu.device);
    if (!counterList) return fail("bench model", counterList.error());
    std::map<std::string, uint64_t> counters(counterList->begin(), counterList->end());
    // The firmware's working memory for the model: the request arena's high-water mark during
    // compilation (autotuning included) without the blob images the compiler writes there
    // before the blob store copies them to firmware DRAM, above the platform's fixed RPC buffers
    // (frame, reassembly and queue buffers: sized by the platform, reported apart), plus the
    // runtime arena's high-water mark. Executions need far less than compiling (one ExecResult).
    uint64_t blob = 0;
    for (const auto& c : run.compiled) blob = std::max(blob, c.modelBlobBytes + c.dataBlobBytes);
    const uint64_t rpcPeak = counters["rpc.arena_peak_bytes"],
                   runtimePeak = counters["runtime.arena_peak_bytes"];
    const uint64_t fixed = counters["rpc.arena_fixed_bytes"];
    const uint64_t compilePeak = counters["runtime.compile_scratch_high_water_bytes"];
    const uint64_t fwPeak = (compilePeak > fixed ? compilePeak - fixed : 0) + runtimePeak;
    const uint64_t roofline = rooflineTotal(run);
    const double ratio =
        roofline > 0 ? static_cast<double>(run.deviceCycles) / static_cast<double>(roofline) : 0;
    const auto cpuOps = fallbackOperations(run, "npu");
    if (json_) {
        Json j;
        j["model"] = net->testCase.name;
        j["input"] = inputLabel(*net);
        j["autotune"] = choice_.autotune;
        j["array"] = fmt::format("{}x{}", checked->hw.arrayRows, checked->hw.arrayCols);
        j["dram_bytes_per_cycle"] = checked->hw.dramBytesPerCycle;
        j["layers"] = layersJson(run);
        j["total_cycles"] = run.deviceCycles;
        j["roofline_cycles"] = roofline;
        j["roofline_ratio"] = std::round(ratio * 1000) / 1000;
        j["compile_ms"] = std::round(run.prepareMs * 1000) / 1000;
        j["fw_peak_bytes"] = fwPeak;
        j["fw_memory"] = {{"rpc_arena_peak_bytes", rpcPeak},
                          {"rpc_arena_fixed_bytes", fixed},
                          {"compile_high_water_bytes", compilePeak},
                          {"runtime_arena_peak_bytes", runtimePeak},
                          {"blob_bytes", blob}};
        j["ops_on_npu"] = run.opsOnFirstDevice;
        j["ops_total"] = run.opsTotal;
        j["operations_on_cpu"] = cpuOps;
        j["match"] = checked->difference.empty();
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("{}", layerTable(run));
        fmt::print("model {} ({}), array {}x{}, {} B/cycle DRAM, autotune {}\n", net->testCase.name,
                   inputLabel(*net), checked->hw.arrayRows, checked->hw.arrayCols,
                   checked->hw.dramBytesPerCycle, choice_.autotune ? "on" : "off");
        fmt::print("  total_cycles    {:>12}\n  roofline_cycles {:>12}  (ratio {:.3f}, target <= 1.3)\n",
                   run.deviceCycles, roofline, ratio);
        fmt::print("  compile_ms      {:>12.1f}  (target < 500 without autotuning)\n", run.prepareMs);
        fmt::print(
            "  fw_peak_bytes   {:>12}  (target <= 524288: compile high-water {} less the fixed RPC buffers "
            "{}, "
            "+ runtime arena peak {}; the request arena's peak with blob images was {}, the largest blob "
            "{})\n",
            fwPeak, compilePeak, fixed, runtimePeak, rpcPeak, blob);
        fmt::print("  ops_on_npu      {:>12} of {}\n", run.opsOnFirstDevice, run.opsTotal);
        for (const auto& s : cpuOps) fmt::print("    on the CPU reference: {}\n", s);
        fmt::print("  outputs         {}\n", checked->difference.empty()
                                                 ? "bit-exact with the CPU reference"
                                                 : "MISMATCH: " + checked->difference);
    }
    return checked->difference.empty() ? 0 : 1;
}

}  // namespace npu::tools
