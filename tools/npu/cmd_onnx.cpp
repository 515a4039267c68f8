// npu onnx run / npu onnx conformance (see cmd_onnx.h and docs/onnx.md).
#include "cmd_onnx.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "npu/framework/onnx_import.h"
#include "npu/framework/onnx_node_test.h"
#include "npu/framework/onnx_run.h"
#include "npu/framework/partition.h"

namespace npu::tools {
namespace {

using Json = nlohmann::json;

void printExplain(const framework::OnnxImportedModel& m, const framework::PartitionPlan& plan,
                  const std::vector<framework::PartitionDevice>& devices) {
    std::printf("%-4s %-26s %-32s %-10s %s\n", "op", "HAL operation", "ONNX node (operator)", "device",
                "why");
    for (size_t i = 0; i < plan.deviceOfOperation.size(); ++i) {
        const auto& o = m.origins[i];
        std::printf("%-4zu %-26s %-32s %-10s %s\n", i,
                    std::string(hal::toString(m.model.main.operations[i].type)).c_str(),
                    (o.nodeName + " (" + o.opType + ")").c_str(),
                    devices[plan.deviceOfOperation[i]].name.c_str(), plan.reasonOfOperation[i].c_str());
    }
}

Json explainJson(const framework::OnnxImportedModel& m, const framework::PartitionPlan& plan,
                 const std::vector<framework::PartitionDevice>& devices) {
    Json j = Json::array();
    for (size_t i = 0; i < plan.deviceOfOperation.size(); ++i) {
        j.push_back({{"operation", i},
                     {"type", std::string(hal::toString(m.model.main.operations[i].type))},
                     {"node", m.origins[i].nodeName},
                     {"op_type", m.origins[i].opType},
                     {"device", devices[plan.deviceOfOperation[i]].name},
                     {"why", plan.reasonOfOperation[i]}});
    }
    return j;
}

}  // namespace

// "x=1x3x224x224" -> {"x", {1, 3, 224, 224}}.
Result<std::pair<std::string, std::vector<int64_t>>> parseInputShape(const std::string& text) {
    const size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0)
        return invalidArgument("--input-shape '" + text + "': expected NAME=DxDx...");
    std::vector<int64_t> dims;
    size_t pos = eq + 1;
    while (pos <= text.size()) {
        const size_t x = std::min(text.find('x', pos), text.size());
        const std::string item = text.substr(pos, x - pos);
        char* end = nullptr;
        const long long d = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || d <= 0 || d > (1LL << 31)) {
            return invalidArgument("--input-shape '" + text + "': dimension '" + item +
                                   "' is not a positive integer");
        }
        dims.push_back(d);
        pos = x + 1;
    }
    return std::pair{text.substr(0, eq), dims};
}

Result<std::map<std::string, std::vector<int64_t>>> parseInputShapes(const std::vector<std::string>& texts) {
    std::map<std::string, std::vector<int64_t>> shapes;
    for (const auto& text : texts) {
        auto shape = NPU_TRY(parseInputShape(text));
        shapes[shape.first] = std::move(shape.second);
    }
    return shapes;
}

// The elements as numbers: FLOAT, INT32, UINT8 or INT8.
std::vector<double> valuesOf(const framework::OnnxTensor& t) {
    std::vector<double> v;
    const size_t n = t.elementCount();
    for (size_t k = 0; k < n; ++k) {
        if (t.elementType == 1 || t.elementType == 6) {
            if ((k + 1) * 4 > t.data.size()) break;
            float f;
            int32_t i;
            std::memcpy(&f, t.data.data() + k * 4, 4);
            std::memcpy(&i, t.data.data() + k * 4, 4);
            v.push_back(t.elementType == 1 ? double(f) : double(i));
        } else if (k < t.data.size()) {
            v.push_back(t.elementType == 3 ? double(int8_t(t.data[k])) : double(t.data[k]));
        }
    }
    return v;
}

std::string dimsText(const std::vector<int64_t>& dims) {
    std::string s;
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
    return s;
}

// Deterministic input when the user gives none: a ramp in [-1, 1) (integers: 0..6, 0..255).
framework::OnnxTensor syntheticInput(const framework::OnnxImportedModel& m, size_t i) {
    const auto& operand = m.model.main.operands[m.model.main.inputIndexes[i]];
    framework::OnnxTensor t;
    t.name = m.inputNames[i];
    t.elementType = framework::onnxTypeOfHal(operand.type);
    t.dims.assign(operand.dimensions.begin(), operand.dimensions.end());
    const size_t n = t.elementCount(), size = hal::elementSize(operand.type);
    t.data.resize(n * size);
    for (size_t k = 0; k < n; ++k) {
        if (t.elementType == 1) {
            const float f = float(k % 256) / 128.0f - 1.0f;
            std::memcpy(t.data.data() + k * 4, &f, 4);
        } else if (t.elementType == 6) {
            const int32_t v = int32_t(k % 7);
            std::memcpy(t.data.data() + k * 4, &v, 4);
        } else {
            t.data[k] = uint8_t(k % 256);
        }
    }
    return t;
}

OnnxCli::OnnxCli(CLI::App& app) {
    cmd_ = app.add_subcommand("onnx", "ONNX models: run one, or the ONNX backend node tests (docs/onnx.md)");
    cmd_->require_subcommand(1);
    run_ = cmd_->add_subcommand("run", "Import MODEL.onnx, run it on a device and print its outputs");
    run_->add_option("model", model_, "MODEL.onnx")->required()->check(CLI::ExistingFile);
    run_->add_option("--input", inputs_,
                     "an input tensor (.pb TensorProto or .npy), in input order; repeatable")
        ->check(CLI::ExistingFile);
    run_->add_option("--input-shape", inputShapes_,
                     "NAME=1x3x224x224 for an input with dynamic dimensions; repeatable");
    run_->add_option(
        "--fix", fixed_,
        "NAME=FILE.pb: fix graph input NAME to the tensor in FILE at import (it becomes a constant: scales, "
        "weights, int64 shapes); repeatable");
    run_->add_option("--device", choice_.device, "reference (CPU) or npu")
        ->check(CLI::IsMember({"npu", "reference"}))
        ->capture_default_str();
    run_->add_option("--transport", choice_.transport, "npu: loopback or unix")
        ->check(CLI::IsMember({"loopback", "unix"}))
        ->capture_default_str();
    run_->add_option("--hw-config", choice_.hwConfigPath, "npu: the simulated NPU's config JSON")
        ->check(CLI::ExistingFile);
    run_->add_flag("--json", json_, "print JSON");
    run_->add_flag("--explain", explain_, "print the device of every HAL operation, its ONNX node and why");
    choice_.device = "reference";

    conformance_ = cmd_->add_subcommand("conformance", "The ONNX backend node tests on the reference device");
    conformance_->add_option("dir", dir_,
                             "the node-test root (default: libonnx-testdata's, or $NPU_ONNX_NODE_TESTS)");
    conformance_->add_option("--filter", filters_, "only tests whose name matches this glob; repeatable");
    conformance_->add_flag("--json", json_, "print JSON");
    conformance_->add_flag("-v,--verbose", verbose_, "print every test's verdict and reason");
}

bool OnnxCli::parsed() const {
    return cmd_->parsed();
}

int OnnxCli::run() const {
    return run_->parsed() ? runModel() : runConformance();
}

namespace {

int failWith(const Error& e, int code) {
    std::fprintf(stderr, "npu onnx run: %s\n", e.message.c_str());
    return code;
}

// The import options of --input-shape and --fix, and the --input tensors (matched by order).
struct RunInputs {
    framework::OnnxImportOptions options;
    std::vector<framework::OnnxTensor> tensors;
};

Result<RunInputs> readRunInputs(const std::vector<std::string>& shapes, const std::vector<std::string>& fixed,
                                const std::vector<std::string>& files) {
    RunInputs in;
    in.options.inputShapes = NPU_TRY(parseInputShapes(shapes));
    for (const auto& text : fixed) {
        const size_t eq = text.find('=');
        if (eq == std::string::npos || eq == 0)
            return invalidArgument("--fix '" + text + "': expected NAME=FILE");
        in.options.fixedInputs[text.substr(0, eq)] =
            NPU_TRY(framework::loadOnnxTensorFile(text.substr(eq + 1)));
    }
    for (const auto& path : files) {
        auto t = NPU_TRY(framework::loadOnnxTensorFile(path));
        t.name.clear();  // matched by order
        in.options.orderedInputShapes.push_back(t.dims);
        in.tensors.push_back(std::move(t));
    }
    return in;
}

// The chosen device first, the reference as fallback (unless it is the reference).
struct RunDevices {
    std::vector<OpenedDevice> opened;
    std::vector<framework::PartitionDevice> list;
};

Result<RunDevices> openRunDevices(const DeviceChoice& choice) {
    RunDevices d;
    d.opened.push_back(NPU_TRY(openDevice(choice)));
    if (choice.device != "reference") d.opened.push_back(NPU_TRY(openDevice({.device = "reference"})));
    d.list.push_back(partitionDevice(choice.device, d.opened[0].device.get()));  // with the NPU's reasons
    if (d.opened.size() > 1) d.list.push_back({"reference", d.opened[1].device.get()});
    return d;
}

struct RunReport {
    const std::string& path;
    const DeviceChoice& choice;
    const framework::OnnxImportedModel& model;
    const framework::PartitionPlan& plan;
    const std::vector<framework::PartitionDevice>& devices;
    const std::vector<framework::OnnxTensor>& outputs;
    double importMs, runMs;
    bool explain;
};

std::vector<size_t> opsPerDevice(const RunReport& r) {
    std::vector<size_t> ops(r.devices.size(), 0);
    for (size_t d : r.plan.deviceOfOperation) ++ops[d];
    return ops;
}

void printRunJson(const RunReport& r) {
    const auto& m = r.model;
    Json j = {{"model", r.path},
              {"device", r.choice.device},
              {"opset", m.opset},
              {"onnx_nodes", m.onnxNodes},
              {"hal_operations", m.model.main.operations.size()},
              {"folded_constants", m.foldedConstants},
              {"folded_batchnorms", m.foldedBatchNorms},
              {"import_ms", r.importMs},
              {"run_ms", r.runMs},
              {"outputs", Json::array()}};
    j["partitions"] = r.plan.partitions.size();
    const auto ops = opsPerDevice(r);
    for (size_t d = 0; d < r.devices.size(); ++d) j["operations_on_" + r.devices[d].name] = ops[d];
    if (r.explain) j["placement"] = explainJson(m, r.plan, r.devices);
    for (const auto& o : r.outputs)
        j["outputs"].push_back({{"name", o.name}, {"dims", o.dims}, {"values", valuesOf(o)}});
    std::printf("%s\n", j.dump(2).c_str());
}

void printRunText(const RunReport& r) {
    const auto& m = r.model;
    if (r.explain) printExplain(m, r.plan, r.devices);
    std::printf(
        "model %s: opset %lld, %zu ONNX nodes -> %zu HAL operations (%zu constants folded, %zu "
        "BatchNormalization folded)\n",
        r.path.c_str(), static_cast<long long>(m.opset), m.onnxNodes, m.model.main.operations.size(),
        m.foldedConstants, m.foldedBatchNorms);
    std::printf("device %s: import %.2f ms, run %.2f ms, %zu partition(s)", r.choice.device.c_str(),
                r.importMs, r.runMs, r.plan.partitions.size());
    const auto ops = opsPerDevice(r);
    for (size_t d = 0; d < r.devices.size(); ++d)
        std::printf(", %zu operations on %s", ops[d], r.devices[d].name.c_str());
    std::printf("\n");
    for (const auto& o : r.outputs) {
        const auto v = valuesOf(o);
        std::string text;
        for (size_t k = 0; k < v.size() && k < 16; ++k) text += fmt::format("{}{:g}", k ? ", " : "", v[k]);
        if (v.size() > 16) text += fmt::format(", ... ({} elements)", v.size());
        std::printf("output %s [%s]: [%s]\n", o.name.c_str(), dimsText(o.dims).c_str(), text.c_str());
    }
}

double msSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int OnnxCli::runModel() const {
    auto in = readRunInputs(inputShapes_, fixed_, inputs_);
    if (!in) return failWith(in.error(), 2);
    const auto t0 = std::chrono::steady_clock::now();
    auto model = framework::importOnnxModel(model_, in->options);
    const double importMs = msSince(t0);
    if (!model) return failWith(model.error(), model.error().status == framework::kOnnxUnsupported ? 3 : 2);
    for (size_t i = in->tensors.size(); i < model->inputNames.size(); ++i)
        in->tensors.push_back(syntheticInput(*model, i));
    auto devices = openRunDevices(choice_);
    if (!devices) return failWith(devices.error(), 1);
    auto buffers = framework::onnxInputBuffers(*model, in->tensors);
    if (!buffers) return failWith(buffers.error(), 2);
    auto plan = framework::planPartitions(model->model, devices->list);
    if (!plan) return failWith(plan.error(), 3);
    const auto t1 = std::chrono::steady_clock::now();
    auto run = framework::runPartitions(*plan, model->model, devices->list, *buffers);
    const double runMs = msSince(t1);
    if (!run) return failWith(run.error(), 1);
    const auto outputs = framework::onnxOutputTensors(*model, std::move(run->outputs));
    const RunReport report{model_, choice_, *model, *plan, devices->list, outputs, importMs, runMs, explain_};
    json_ ? printRunJson(report) : printRunText(report);
    return 0;
}

int OnnxCli::runConformance() const {
    const std::string root = dir_.empty() ? framework::onnxNodeTestDir() : dir_;
    auto dirs = framework::listOnnxNodeTests(root);
    if (dirs.empty())
        return std::fprintf(stderr, "npu onnx conformance: no node tests under %s\n", root.c_str()), 2;
    auto opened = openDevice({.device = "reference"});
    if (!opened) return std::fprintf(stderr, "npu onnx conformance: %s\n", opened.error().message.c_str()), 1;
    std::map<std::string, size_t> counts = {{"pass", 0}, {"fail", 0}, {"unsupported", 0}, {"error", 0}};
    Json tests = Json::array();
    for (const auto& dir : dirs) {
        const std::string name = std::filesystem::path(dir).filename().string();
        bool selected = filters_.empty();
        for (const auto& f : filters_) selected = selected || fnmatch(f.c_str(), name.c_str(), 0) == 0;
        if (!selected) continue;
        const auto outcome = framework::runOnnxNodeTest(*opened->device, dir);
        const std::string verdict(framework::toString(outcome.verdict));
        ++counts[verdict];
        tests.push_back({{"name", name}, {"verdict", verdict}, {"message", outcome.message}});
        const bool bad = outcome.verdict == framework::NodeTestVerdict::kFail ||
                         outcome.verdict == framework::NodeTestVerdict::kError;
        if (!json_ && (verbose_ || bad))
            std::printf("%-60s %-11s %s\n", name.c_str(), verdict.c_str(), outcome.message.c_str());
    }
    if (json_) {
        Json j = {{"root", root},
                  {"device", "reference"},
                  {"passed", counts["pass"]},
                  {"failed", counts["fail"]},
                  {"unsupported", counts["unsupported"]},
                  {"errors", counts["error"]},
                  {"tests", tests}};
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("onnx node tests (%s) on reference: %zu pass, %zu fail, %zu unsupported, %zu error\n",
                    root.c_str(), counts["pass"], counts["fail"], counts["unsupported"], counts["error"]);
    }
    return counts["fail"] + counts["error"] == 0 ? 0 : 1;
}

}  // namespace npu::tools
