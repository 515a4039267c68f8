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

int OnnxCli::runModel() const {
    framework::OnnxImportOptions options;
    auto shapes = parseInputShapes(inputShapes_);
    if (!shapes) return std::fprintf(stderr, "npu onnx run: %s\n", shapes.error().message.c_str()), 2;
    options.inputShapes = std::move(*shapes);
    for (const auto& text : fixed_) {
        const size_t eq = text.find('=');
        if (eq == std::string::npos || eq == 0)
            return std::fprintf(stderr, "npu onnx run: --fix '%s': expected NAME=FILE\n", text.c_str()), 2;
        auto t = framework::loadOnnxTensorFile(text.substr(eq + 1));
        if (!t) return std::fprintf(stderr, "npu onnx run: %s\n", t.error().message.c_str()), 2;
        options.fixedInputs[text.substr(0, eq)] = std::move(*t);
    }
    std::vector<framework::OnnxTensor> inputs;
    for (const auto& path : inputs_) {
        auto t = framework::loadOnnxTensorFile(path);
        if (!t) return std::fprintf(stderr, "npu onnx run: %s\n", t.error().message.c_str()), 2;
        t->name.clear();  // matched by order
        options.orderedInputShapes.push_back(t->dims);
        inputs.push_back(std::move(*t));
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto model = framework::importOnnxModel(model_, options);
    const double importMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!model) {
        std::fprintf(stderr, "npu onnx run: %s\n", model.error().message.c_str());
        return model.error().status == framework::kOnnxUnsupported ? 3 : 2;
    }
    for (size_t i = inputs.size(); i < model->inputNames.size(); ++i)
        inputs.push_back(syntheticInput(*model, i));
    auto opened = openDevice(choice_);
    if (!opened) return std::fprintf(stderr, "npu onnx run: %s\n", opened.error().message.c_str()), 1;
    std::optional<OpenedDevice> fallback;
    std::vector<framework::PartitionDevice> devices = {partitionDevice(choice_.device, opened->device.get())};
    if (choice_.device != "reference") {
        auto ref = openDevice({.device = "reference"});
        if (!ref) return std::fprintf(stderr, "npu onnx run: %s\n", ref.error().message.c_str()), 1;
        fallback = std::move(*ref);
        devices.push_back({"reference", fallback->device.get()});
    }
    auto buffers = framework::onnxInputBuffers(*model, inputs);
    if (!buffers) return std::fprintf(stderr, "npu onnx run: %s\n", buffers.error().message.c_str()), 2;
    auto plan = framework::planPartitions(model->model, devices);
    if (!plan) return std::fprintf(stderr, "npu onnx run: %s\n", plan.error().message.c_str()), 3;
    const auto t1 = std::chrono::steady_clock::now();
    auto run = framework::runPartitions(*plan, model->model, devices, *buffers);
    const double runMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
    if (!run) return std::fprintf(stderr, "npu onnx run: %s\n", run.error().message.c_str()), 1;
    const auto outputs = framework::onnxOutputTensors(*model, std::move(run->outputs));
    std::vector<size_t> opsPerDevice(devices.size(), 0);
    for (size_t d : plan->deviceOfOperation) ++opsPerDevice[d];
    if (explain_ && !json_) printExplain(*model, *plan, devices);
    if (json_) {
        Json j = {{"model", model_},
                  {"device", choice_.device},
                  {"opset", model->opset},
                  {"onnx_nodes", model->onnxNodes},
                  {"hal_operations", model->model.main.operations.size()},
                  {"folded_constants", model->foldedConstants},
                  {"folded_batchnorms", model->foldedBatchNorms},
                  {"import_ms", importMs},
                  {"run_ms", runMs},
                  {"outputs", Json::array()}};
        j["partitions"] = plan->partitions.size();
        for (size_t d = 0; d < devices.size(); ++d) j["operations_on_" + devices[d].name] = opsPerDevice[d];
        if (explain_) j["placement"] = explainJson(*model, *plan, devices);
        for (const auto& o : outputs)
            j["outputs"].push_back({{"name", o.name}, {"dims", o.dims}, {"values", valuesOf(o)}});
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf(
        "model %s: opset %lld, %zu ONNX nodes -> %zu HAL operations (%zu constants folded, %zu "
        "BatchNormalization folded)\n",
        model_.c_str(), static_cast<long long>(model->opset), model->onnxNodes,
        model->model.main.operations.size(), model->foldedConstants, model->foldedBatchNorms);
    std::printf("device %s: import %.2f ms, run %.2f ms, %zu partition(s)", choice_.device.c_str(), importMs,
                runMs, plan->partitions.size());
    for (size_t d = 0; d < devices.size(); ++d)
        std::printf(", %zu operations on %s", opsPerDevice[d], devices[d].name.c_str());
    std::printf("\n");
    for (const auto& o : outputs) {
        const auto v = valuesOf(o);
        std::string text;
        for (size_t k = 0; k < v.size() && k < 16; ++k) text += fmt::format("{}{:g}", k ? ", " : "", v[k]);
        if (v.size() > 16) text += fmt::format(", ... ({} elements)", v.size());
        std::printf("output %s [%s]: [%s]\n", o.name.c_str(), dimsText(o.dims).c_str(), text.c_str());
    }
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
