// The ONNX backend node tests on one device.
#include "npu/framework/onnx_node_test.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "npu/framework/onnx_import.h"
#include "npu/framework/onnx_run.h"

namespace npu::framework {
namespace {

namespace fs = std::filesystem;

// The graph's runtime inputs; an error naming the first input or output the runner cannot feed
// or compare (sequences, optionals, maps, element types without a host form).
Result<std::vector<std::string>> graphInputNames(const std::string& modelPath) {
    std::ifstream in(modelPath, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    onnx::ModelProto proto;
    if (!proto.ParseFromString(buffer.str())) return invalidArgument(modelPath + ": not an onnx.ModelProto");
    std::set<std::string> initialized;
    for (const auto& init : proto.graph().initializer()) initialized.insert(init.name());
    auto check = [&](const onnx::ValueInfoProto& vi, const char* role) -> Status {
        using TP = onnx::TensorProto;
        if (!vi.type().has_tensor_type())
            return fail(kOnnxUnsupported, std::string(role) + " '" + vi.name() + "' is not a tensor");
        const int32_t t = vi.type().tensor_type().elem_type();
        if (t != TP::FLOAT && t != TP::INT32 && t != TP::INT64 && t != TP::UINT8 && t != TP::INT8 &&
            t != TP::BOOL) {
            return fail(kOnnxUnsupported,
                        std::string(role) + " '" + vi.name() + "' has element type " + onnxTypeName(t));
        }
        return {};
    };
    std::vector<std::string> names;
    for (const auto& vi : proto.graph().input()) {
        if (initialized.count(vi.name()) != 0) continue;
        NPU_TRY(check(vi, "graph input"));
        names.push_back(vi.name());
    }
    for (const auto& vi : proto.graph().output()) NPU_TRY(check(vi, "graph output"));
    return names;
}

Result<std::vector<OnnxTensor>> loadSet(const fs::path& dir, const char* prefix) {
    std::vector<OnnxTensor> tensors;
    for (size_t i = 0;; ++i) {
        const fs::path file = dir / (std::string(prefix) + std::to_string(i) + ".pb");
        if (!fs::exists(file)) break;
        tensors.push_back(NPU_TRY(loadOnnxTensorFile(file.string())));
    }
    return tensors;
}

std::vector<fs::path> dataSets(const fs::path& dir) {
    std::vector<fs::path> sets;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
            sets.push_back(entry.path());
    }
    std::sort(sets.begin(), sets.end());
    return sets;
}

NodeTestOutcome verdictOf(std::string name, const Error& e) {
    const bool unsupported = e.status == kOnnxUnsupported;
    return {std::move(name), unsupported ? NodeTestVerdict::kUnsupported : NodeTestVerdict::kError,
            e.message};
}

}  // namespace

std::string_view toString(NodeTestVerdict verdict) {
    switch (verdict) {
        case NodeTestVerdict::kPass:
            return "pass";
        case NodeTestVerdict::kFail:
            return "fail";
        case NodeTestVerdict::kUnsupported:
            return "unsupported";
        case NodeTestVerdict::kError:
            return "error";
    }
    return "?";
}

std::string onnxNodeTestDir() {
    const char* env = std::getenv("NPU_ONNX_NODE_TESTS");
    return env != nullptr && *env != '\0' ? env : "/usr/share/libonnx-testdata/data/node";
}

std::vector<std::string> listOnnxNodeTests(const std::string& root) {
    std::vector<std::string> dirs;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        if (entry.is_directory() && fs::exists(entry.path() / "model.onnx"))
            dirs.push_back(entry.path().string());
    }
    std::sort(dirs.begin(), dirs.end());
    return dirs;
}

namespace {

// One data set: import with its fixed inputs and shapes, run, compare. Empty on pass.
std::optional<NodeTestOutcome> runDataSet(hal::IDevice& device, const std::string& name,
                                          const std::string& modelPath, const std::vector<std::string>& names,
                                          const fs::path& set) {
    auto inputs = loadSet(set, "input_");
    auto expected = loadSet(set, "output_");
    if (!inputs) return verdictOf(name, inputs.error());
    if (!expected) return verdictOf(name, expected.error());
    if (inputs->size() != names.size()) {
        return NodeTestOutcome{name, NodeTestVerdict::kError,
                               std::to_string(inputs->size()) + " input files for " +
                                   std::to_string(names.size()) + " graph inputs"};
    }
    OnnxImportOptions options;
    std::vector<OnnxTensor> runtime;
    for (size_t i = 0; i < names.size(); ++i) {
        OnnxTensor& t = (*inputs)[i];
        t.name = names[i];
        for (int64_t d : t.dims) {
            if (d == 0)
                return NodeTestOutcome{name, NodeTestVerdict::kUnsupported,
                                       "input '" + names[i] + "' is an empty tensor"};
        }
        // Rank-0 inputs (the HAL has no rank-0 tensors) and types the HAL does not carry (int64
        // shapes, axes, pads) are fixed at import, as constants.
        if (halTypeOfOnnx(t.elementType) && !t.dims.empty()) {
            options.inputShapes[names[i]] = t.dims;
            runtime.push_back(t);
        } else {
            options.fixedInputs[names[i]] = t;
        }
    }
    auto model = importOnnxModel(modelPath, options);
    if (!model) return verdictOf(name, model.error());
    auto run = runOnnxModel(device, *model, runtime);
    if (!run) return verdictOf(name, run.error());
    if (run->outputs.size() != expected->size()) {
        return NodeTestOutcome{
            name, NodeTestVerdict::kFail,
            std::to_string(run->outputs.size()) + " outputs, expected " + std::to_string(expected->size())};
    }
    for (size_t i = 0; i < expected->size(); ++i) {
        const std::string diff = compareOnnxTensors((*expected)[i], run->outputs[i]);
        if (!diff.empty()) {
            return NodeTestOutcome{name, NodeTestVerdict::kFail,
                                   set.filename().string() + " output " + std::to_string(i) + ": " + diff};
        }
    }
    return std::nullopt;
}

}  // namespace

NodeTestOutcome runOnnxNodeTest(hal::IDevice& device, const std::string& dir) {
    const std::string name = fs::path(dir).filename().string();
    const std::string modelPath = (fs::path(dir) / "model.onnx").string();
    const auto sets = dataSets(dir);
    if (sets.empty()) return {name, NodeTestVerdict::kError, "no test_data_set_* directory"};
    const auto names = graphInputNames(modelPath);
    if (!names) return verdictOf(name, names.error());
    for (const auto& set : sets) {
        if (auto outcome = runDataSet(device, name, modelPath, *names, set)) return *outcome;
    }
    return {name, NodeTestVerdict::kPass, {}};
}

}  // namespace npu::framework
