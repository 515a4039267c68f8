// npu run MODEL.onnx (see cmd_run_onnx.h).
#include "cmd_run_onnx.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>

#include "cmd_onnx.h"
#include "npu/framework/image.h"
#include "npu/framework/onnx_run.h"
#include "npu/hal/validation.h"

namespace npu::tools {
namespace {

using Json = nlohmann::ordered_json;

int fail(const Error& e, int code) {
    fmt::print(stderr, "npu run: {}\n", e.message);
    return code;
}

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A .raw file: the bytes of input i in its HAL type, shaped as the model says.
Result<framework::OnnxTensor> rawInput(const framework::OnnxImportedModel& m, size_t i,
                                       const std::string& path) {
    if (i >= m.inputNames.size())
        return invalidArgument(fmt::format("{}: the model has {} input(s)", path, m.inputNames.size()));
    framework::OnnxTensor t = syntheticInput(m, i);
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.eof() && !in.good()) return invalidArgument(path + ": cannot read");
    if (bytes.size() != t.data.size()) {
        return invalidArgument(fmt::format("{}: {} bytes, input '{}' [{}] of type {} takes {}", path,
                                           bytes.size(), m.inputNames[i], dimsText(t.dims),
                                           framework::onnxTypeName(t.elementType), t.data.size()));
    }
    t.data = std::move(bytes);
    return t;
}

// A .png file as input i: decoded, resized and normalized for the input's shape (float only).
Result<framework::OnnxTensor> pngInput(const framework::OnnxImportedModel& m, size_t i,
                                       const std::string& path, const OnnxRunOptions& o) {
    if (i >= m.inputNames.size())
        return invalidArgument(fmt::format("{}: the model has {} input(s)", path, m.inputNames.size()));
    const auto& operand = m.model.main.operands[m.model.main.inputIndexes[i]];
    const std::vector<int64_t> dims(operand.dimensions.begin(), operand.dimensions.end());
    if (operand.type != hal::OperandType::TENSOR_FLOAT32) {
        return invalidArgument(fmt::format("{}: input '{}' is {}; an image feeds a float input", path,
                                           m.inputNames[i], hal::toString(operand.type)));
    }
    framework::ImagePreprocess p;
    p.resize = o.resize == "nearest" ? framework::ImagePreprocess::Resize::kNearest
                                     : framework::ImagePreprocess::Resize::kBilinear;
    p.bgr = o.bgr;
    for (size_t c = 0; c < 3; ++c) {
        if (!o.mean.empty()) p.mean[c] = o.mean[o.mean.size() == 1 ? 0 : c];
        if (!o.std.empty()) p.std[c] = o.std[o.std.size() == 1 ? 0 : c];
    }
    const uint32_t channels =
        NPU_TRY(framework::imageChannels(dims, path + " (input '" + m.inputNames[i] + "')"));
    const framework::Image image = NPU_TRY(framework::loadPngFile(path, channels));
    auto t = NPU_TRY(framework::imageTensor(image, dims, p, path));
    t.name = m.inputNames[i];
    return t;
}

struct Loaded {
    framework::OnnxImportedModel model;
    std::vector<framework::OnnxTensor> inputs;
    double importMs = 0;
};

Result<Loaded> load(const std::string& path, const OnnxRunOptions& o) {
    framework::OnnxImportOptions options;
    options.inputShapes = NPU_TRY(parseInputShapes(o.inputShapes));
    std::vector<std::optional<framework::OnnxTensor>> files;
    for (const auto& f : o.inputs) {
        if (endsWith(f, ".raw") || endsWith(f, ".png")) {  // shaped as the model says
            files.emplace_back();
            options.orderedInputShapes.emplace_back();
            continue;
        }
        auto t = NPU_TRY(framework::loadOnnxTensorFile(f));
        t.name.clear();  // matched by order
        options.orderedInputShapes.push_back(t.dims);
        files.push_back(std::move(t));
    }
    Loaded l;
    const auto t0 = std::chrono::steady_clock::now();
    l.model = NPU_TRY(framework::importOnnxModel(path, options));
    l.importMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (size_t i = 0; i < files.size(); ++i) {
        if (files[i])
            l.inputs.push_back(std::move(*files[i]));
        else if (endsWith(o.inputs[i], ".png"))
            l.inputs.push_back(NPU_TRY(pngInput(l.model, i, o.inputs[i], o)));
        else
            l.inputs.push_back(NPU_TRY(rawInput(l.model, i, o.inputs[i])));
    }
    for (size_t i = l.inputs.size(); i < l.model.inputNames.size(); ++i)
        l.inputs.push_back(syntheticInput(l.model, i));
    return l;
}

// The classes with the highest scores of a [1, C] output (C > 1); empty otherwise.
std::vector<std::pair<size_t, double>> topK(const framework::OnnxTensor& t, size_t k) {
    if (t.dims.size() != 2 || t.dims[0] != 1 || t.dims[1] < 2) return {};
    const auto v = valuesOf(t);
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    k = std::min(k, order.size());
    std::partial_sort(order.begin(), order.begin() + long(k), order.end(),
                      [&](size_t a, size_t b) { return v[a] > v[b]; });
    std::vector<std::pair<size_t, double>> out;
    for (size_t i = 0; i < k; ++i) out.emplace_back(order[i], v[order[i]]);
    return out;
}

std::string valuesText(const framework::OnnxTensor& t) {
    const auto v = valuesOf(t);
    std::string text;
    for (size_t k = 0; k < v.size() && k < 16; ++k) text += fmt::format("{}{:g}", k ? ", " : "", v[k]);
    if (v.size() > 16) text += fmt::format(", ... ({} elements)", v.size());
    return text;
}

// Operations as boxes coloured by device (NPU green, CPU reference orange), joined by the tensors
// between them; the model's inputs and outputs as ellipses.
std::string deviceDot(const framework::OnnxImportedModel& m, const NetworkRun& run, const std::string& name) {
    const auto& sg = m.model.main;
    std::vector<int64_t> writer(sg.operands.size(), -1);
    for (size_t k = 0; k < sg.operations.size(); ++k)
        for (uint32_t o : sg.operations[k].outputs) writer[o] = int64_t(k);
    auto quote = [](std::string s) {
        std::string out;
        for (char c : s) out += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
        return out;
    };
    std::string dot = fmt::format(
        "digraph \"{}\" {{\n  rankdir=TB;\n  node [fontname=\"monospace\" fontsize=10];\n", quote(name));
    dot += "  legend [shape=note label=\"green: npu\\norange: reference (CPU fallback)\"];\n";
    for (size_t i = 0; i < sg.inputIndexes.size(); ++i)
        dot += fmt::format("  d{} [shape=ellipse style=filled fillcolor=\"#cde4ff\" label=\"{}\"];\n",
                           sg.inputIndexes[i], quote(m.inputNames[i]));
    for (size_t i = 0; i < sg.outputIndexes.size(); ++i)
        dot += fmt::format("  d{} [shape=ellipse style=filled fillcolor=\"#d5f5d5\" label=\"{}\"];\n",
                           sg.outputIndexes[i], quote(m.outputNames[i]));
    for (size_t k = 0; k < sg.operations.size(); ++k) {
        const bool npu = run.layers[k].device == "npu";
        dot += fmt::format("  op{} [shape=box style=filled fillcolor=\"{}\" label=\"{}: {}\\n{} ({})\"];\n",
                           k, npu ? "#9be59b" : "#ffc58a", k, hal::toString(sg.operations[k].type),
                           quote(m.origins[k].nodeName), quote(m.origins[k].opType));
        for (uint32_t in : sg.operations[k].inputs) {
            if (writer[in] >= 0) dot += fmt::format("  op{} -> op{};\n", writer[in], k);
            if (sg.operands[in].lifetime == hal::OperandLifeTime::SUBGRAPH_INPUT)
                dot += fmt::format("  d{} -> op{};\n", in, k);
        }
        for (uint32_t o : sg.operations[k].outputs) {
            if (sg.operands[o].lifetime == hal::OperandLifeTime::SUBGRAPH_OUTPUT)
                dot += fmt::format("  op{} -> d{};\n", k, o);
        }
    }
    return dot + "}\n";
}

void printExplain(const framework::OnnxImportedModel& m, const NetworkRun& run) {
    fmt::print("{:<4} {:<26} {:<40} {:<10} {}\n", "op", "HAL operation", "ONNX node (operator)", "device",
               "why");
    for (const auto& l : run.layers) {
        const auto& o = m.origins[l.index];
        fmt::print("{:<4} {:<26} {:<40} {:<10} {}\n", l.index, hal::toString(l.type),
                   o.nodeName + " (" + o.opType + ")", l.device,
                   l.index < run.reasons.size() ? run.reasons[l.index] : "");
    }
}

double simDeviceMs(const CheckedRun& c) {
    return c.hw.clockHz ? double(c.run.deviceCycles) * 1e3 / double(c.hw.clockHz) : 0.0;
}

Json runJson(const std::string& path, const DeviceChoice& choice, const Loaded& l, const CheckedRun& c,
             const std::vector<framework::OnnxTensor>& outputs, const OnnxRunOptions& o) {
    const auto& run = c.run;
    Json j = {{"model", path},
              {"device", choice.device},
              {"opset", l.model.opset},
              {"onnx_nodes", l.model.onnxNodes},
              {"ops_total", run.opsTotal},
              {"import_ms", l.importMs},
              {"host_ms", c.hostMs}};
    if (choice.device == "npu") {
        j["transport"] = choice.transport;
        j["ops_on_npu"] = run.opsOnFirstDevice;
        j["partitions"] = run.partitions;
        j["device_cycles"] = run.deviceCycles;
        j["sim_device_ms"] = simDeviceMs(c);
        j["roofline_cycles"] = rooflineTotal(run);
        j["match"] = c.difference.empty();
        if (!c.difference.empty()) j["mismatch"] = c.difference;
    }
    j["outputs"] = Json::array();
    for (const auto& t : outputs) {
        Json out = {{"name", t.name}, {"dims", t.dims}, {"values", valuesOf(t)}};
        const auto top = topK(t, o.topK);
        if (!top.empty()) {
            out["top_k"] = Json::array();
            for (const auto& [cls, score] : top) out["top_k"].push_back({{"class", cls}, {"score", score}});
        }
        j["outputs"].push_back(std::move(out));
    }
    j["operations"] = Json::array();
    for (const auto& layer : run.layers) {
        Json lj = layerProfileJson(layer);
        lj["onnx_node"] = l.model.origins[layer.index].nodeName;
        lj["onnx_op_type"] = l.model.origins[layer.index].opType;
        if (o.explain && layer.index < run.reasons.size()) lj["why"] = run.reasons[layer.index];
        j["operations"].push_back(std::move(lj));
    }
    return j;
}

void printText(const std::string& path, const DeviceChoice& choice, const Loaded& l, const CheckedRun& c,
               const std::vector<framework::OnnxTensor>& outputs, const OnnxRunOptions& o) {
    const auto& run = c.run;
    fmt::print("model   {}: opset {}, {} ONNX nodes -> {} HAL operations (import {:.1f} ms)\n", path,
               l.model.opset, l.model.onnxNodes, run.opsTotal, l.importMs);
    if (choice.device == "npu") {
        fmt::print("device  npu ({}): {} of {} operations on the NPU, {} partition(s)\n", choice.transport,
                   run.opsOnFirstDevice, run.opsTotal, run.partitions);
    } else {
        fmt::print("device  reference (CPU)\n");
    }
    for (const auto& t : outputs) {
        const auto top = topK(t, o.topK);
        if (top.empty()) {
            fmt::print("output  {} [{}]: [{}]\n", t.name, dimsText(t.dims), valuesText(t));
            continue;
        }
        std::string text;
        for (const auto& [cls, score] : top)
            text += fmt::format("{}class {} {:.4f}", text.empty() ? "" : ", ", cls, score);
        fmt::print("output  {} [{}]: top-{}: {}\n", t.name, dimsText(t.dims), top.size(), text);
    }
    if (c.compared) {
        fmt::print("result  {}\n", c.difference.empty() ? "bit-exact with the CPU reference"
                                                        : "MISMATCH with the CPU reference: " + c.difference);
    }
    fmt::print("time    host {:.2f} ms (partitioned run, prepares included)", c.hostMs);
    if (choice.device == "npu") {
        fmt::print("; NPU {} cycles = {:.3f} ms simulated at {:.0f} MHz (roofline {})", run.deviceCycles,
                   simDeviceMs(c), double(c.hw.clockHz) / 1e6, rooflineTotal(run));
    }
    fmt::print("\n");
    if (o.explain) {
        fmt::print("\n");
        printExplain(l.model, run);
    }
    fmt::print("\n{}", layerTable(run));
}

}  // namespace

void addImageOptions(CLI::App& run, OnnxRunOptions& o) {
    run.add_option("--resize", o.resize,
                   "MODEL.onnx, PNG input: how the image is resized to the input's H x W")
        ->check(CLI::IsMember({"bilinear", "nearest"}))
        ->capture_default_str();
    run.add_option("--mean", o.mean,
                   "MODEL.onnx, PNG input: subtracted from pixel / 255, one value or one per channel (R,G,B)")
        ->delimiter(',')
        ->expected(1, 3);
    run.add_option("--std", o.std,
                   "MODEL.onnx, PNG input: then divided by this, one value or one per channel")
        ->delimiter(',')
        ->expected(1, 3);
    run.add_flag("--bgr", o.bgr, "MODEL.onnx, PNG input: channels in B, G, R order (OpenCV-trained models)");
}

int cmdRunOnnx(const DeviceChoice& choice, const std::string& path, const OnnxRunOptions& o, bool json) {
    auto loaded = load(path, o);
    if (!loaded) return fail(loaded.error(), loaded.error().status == framework::kOnnxUnsupported ? 3 : 2);
    auto buffers = framework::onnxInputBuffers(loaded->model, loaded->inputs);
    if (!buffers) return fail(buffers.error(), 2);
    framework::TestCase testCase;
    testCase.name = std::filesystem::path(path).filename().string();
    testCase.model = loaded->model.model;
    testCase.inputs = std::move(*buffers);
    for (uint32_t o : testCase.model.main.outputIndexes) {  // sized: the reference run's buffers
        const auto& operand = testCase.model.main.operands[o];
        testCase.expectedOutputs.emplace_back(
            hal::tensorByteSize(operand.type, operand.dimensions).value_or(0), 0);
    }
    std::vector<std::string> names;
    for (const auto& origin : loaded->model.origins) names.push_back(origin.nodeName);
    auto checked = runNetworkChecked(choice, testCase, names);
    if (!checked) return fail(checked.error(), 1);
    if (!writeProfileFiles(o.files, checked->run, testCase.name, checked->hw.clockHz)) return 2;
    if (!o.dotFile.empty()) {
        std::ofstream dot(o.dotFile);
        dot << deviceDot(loaded->model, checked->run, testCase.name);
        if (!dot) return fmt::print(stderr, "npu run: cannot write the graph to {}\n", o.dotFile), 2;
    }
    const auto outputs = framework::onnxOutputTensors(loaded->model, checked->run.outputs);
    if (json) {
        fmt::print("{}\n", runJson(path, choice, *loaded, *checked, outputs, o).dump(2));
    } else {
        printText(path, choice, *loaded, *checked, outputs, o);
    }
    return checked->difference.empty() ? 0 : 1;
}

}  // namespace npu::tools
