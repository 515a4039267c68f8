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

Result<onnx::ModelProto> readModelProto(const std::string& modelPath) {
    std::ifstream in(modelPath, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    onnx::ModelProto proto;
    if (!in || !proto.ParseFromString(buffer.str()))
        return invalidArgument(modelPath + ": not an onnx.ModelProto");
    return proto;
}

// The graph's runtime inputs, and those of them some node reads as its first (data) input.
struct GraphInputs {
    std::vector<std::string> names;
    std::set<std::string> dataInputs;
};

// An error names the first input or output the runner cannot feed or compare (sequences,
// optionals, maps, element types without a host form).
Result<GraphInputs> graphInputNames(const std::string& modelPath) {
    const onnx::ModelProto proto = NPU_TRY(readModelProto(modelPath));
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
    GraphInputs inputs;
    for (const auto& vi : proto.graph().input()) {
        if (initialized.count(vi.name()) != 0) continue;
        NPU_TRY(check(vi, "graph input"));
        inputs.names.push_back(vi.name());
    }
    for (const auto& vi : proto.graph().output()) NPU_TRY(check(vi, "graph output"));
    for (const auto& node : proto.graph().node()) {
        if (node.input_size() > 0) inputs.dataInputs.insert(node.input(0));
    }
    return inputs;
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

// One data set, imported with its inputs' shapes: the model, its run-time inputs and the
// expected outputs.
struct LoadedSet {
    OnnxImportedModel model;
    std::vector<OnnxTensor> runtime;
    std::vector<OnnxTensor> expected;
};

// `dataOnly`: only the graph inputs read as a node's first input stay run-time inputs.
Result<LoadedSet> importDataSet(const std::string& modelPath, const GraphInputs& graph,
                                std::vector<OnnxTensor> inputs, std::vector<OnnxTensor> expected,
                                bool dataOnly) {
    const auto& names = graph.names;
    LoadedSet loaded;
    loaded.expected = std::move(expected);
    OnnxImportOptions options;
    for (size_t i = 0; i < names.size(); ++i) {
        OnnxTensor& t = inputs[i];
        t.name = names[i];
        for (int64_t d : t.dims) {
            if (d == 0) return fail(kOnnxUnsupported, "input '" + names[i] + "' is an empty tensor");
        }
        // Rank-0 inputs (the HAL has no rank-0 tensors) and types the HAL does not carry (int64
        // shapes, axes, pads) are fixed at import, as constants.
        if (halTypeOfOnnx(t.elementType) && !t.dims.empty() &&
            (!dataOnly || graph.dataInputs.count(names[i]) != 0)) {
            options.inputShapes[names[i]] = t.dims;
            loaded.runtime.push_back(t);
        } else {
            options.fixedInputs[names[i]] = t;
        }
    }
    loaded.model = NPU_TRY(importOnnxModel(modelPath, options));
    return loaded;
}

// Imports with every input the HAL carries at run time; if the importer refuses that, once more
// with only the data inputs at run time (node tests give weights, scales and zero points as graph
// inputs, which QLinearConv and the like need as constants). The first refusal is reported.
Result<LoadedSet> loadDataSet(const std::string& modelPath, const GraphInputs& graph, const fs::path& set) {
    auto inputs = NPU_TRY(loadSet(set, "input_"));
    auto expected = NPU_TRY(loadSet(set, "output_"));
    if (inputs.size() != graph.names.size()) {
        return invalidArgument(set.filename().string() + ": " + std::to_string(inputs.size()) +
                               " input files for " + std::to_string(graph.names.size()) + " graph inputs");
    }
    auto loaded = importDataSet(modelPath, graph, inputs, expected, false);
    if (loaded || loaded.error().status != kOnnxUnsupported) return loaded;
    auto retried = importDataSet(modelPath, graph, std::move(inputs), std::move(expected), true);
    return retried ? std::move(retried) : loaded;
}

// One data set: import, run, compare. Empty on pass.
std::optional<NodeTestOutcome> runDataSet(hal::IDevice& device, const std::string& name,
                                          const std::string& modelPath, const GraphInputs& graph,
                                          const fs::path& set) {
    auto loaded = loadDataSet(modelPath, graph, set);
    if (!loaded) return verdictOf(name, loaded.error());
    const auto& expected = loaded->expected;
    auto run = runOnnxModel(device, loaded->model, loaded->runtime);
    if (!run) return verdictOf(name, run.error());
    if (run->outputs.size() != expected.size()) {
        return NodeTestOutcome{
            name, NodeTestVerdict::kFail,
            std::to_string(run->outputs.size()) + " outputs, expected " + std::to_string(expected.size())};
    }
    for (size_t i = 0; i < expected.size(); ++i) {
        const std::string diff = compareOnnxTensors(expected[i], run->outputs[i]);
        if (!diff.empty()) {
            return NodeTestOutcome{name, NodeTestVerdict::kFail,
                                   set.filename().string() + " output " + std::to_string(i) + ": " + diff};
        }
    }
    return std::nullopt;
}

// A loaded data set as a CTS test case.
Result<TestCase> toTestCase(LoadedSet loaded, const std::string& name) {
    TestCase tc;
    tc.name = name;
    tc.source = "onnx";
    tc.nanMatchesNan = true;
    tc.inputs = NPU_TRY(onnxInputBuffers(loaded.model, loaded.runtime));
    const auto& sg = loaded.model.model.main;
    if (loaded.expected.size() != sg.outputIndexes.size()) {
        return fail(kOnnxUnsupported, std::to_string(loaded.expected.size()) +
                                          " expected outputs, the model has " +
                                          std::to_string(sg.outputIndexes.size()));
    }
    for (size_t i = 0; i < loaded.expected.size(); ++i) {
        const OnnxTensor& e = loaded.expected[i];
        const auto& operand = sg.operands[sg.outputIndexes[i]];
        const std::vector<int64_t> dims(operand.dimensions.begin(), operand.dimensions.end());
        if (halTypeOfOnnx(e.elementType) != operand.type || e.dims != dims) {
            return fail(kOnnxUnsupported, "expected output " + std::to_string(i) + " is " +
                                              onnxTypeName(e.elementType) + ", the imported model's is " +
                                              std::string(hal::toString(operand.type)) +
                                              " (or its shape differs)");
        }
        tc.expectedOutputs.push_back(e.data);
        tc.expectedOutputDims.push_back(operand.dimensions);
    }
    tc.model = std::move(loaded.model.model);
    return tc;
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

Result<std::vector<TestCase>> loadOnnxTestCases(const std::string& dir) {
    const std::string name = fs::path(dir).filename().string();
    const std::string modelPath = (fs::path(dir) / "model.onnx").string();
    const auto sets = dataSets(dir);
    if (sets.empty()) return invalidArgument(dir + ": no test_data_set_* directory");
    const auto names = NPU_TRY(graphInputNames(modelPath));
    std::vector<TestCase> cases;
    for (const auto& set : sets) {
        auto loaded = NPU_TRY(loadDataSet(modelPath, names, set));
        cases.push_back(NPU_TRY(toTestCase(std::move(loaded), name + "/" + set.filename().string())));
    }
    return cases;
}

Result<std::pair<std::string, std::string>> onnxTestRow(const std::string& dir) {
    const onnx::ModelProto proto = NPU_TRY(readModelProto((fs::path(dir) / "model.onnx").string()));
    std::vector<std::string> ops;
    for (const auto& node : proto.graph().node()) {
        if (std::find(ops.begin(), ops.end(), node.op_type()) == ops.end()) ops.push_back(node.op_type());
    }
    std::string operators;
    for (const auto& op : ops) operators += (operators.empty() ? "" : "+") + op;
    std::string type = "-";
    if (proto.graph().input_size() > 0 && proto.graph().input(0).type().has_tensor_type())
        type = onnxTypeName(proto.graph().input(0).type().tensor_type().elem_type());
    return std::pair{operators.empty() ? std::string("(no node)") : operators, type};
}

}  // namespace npu::framework
