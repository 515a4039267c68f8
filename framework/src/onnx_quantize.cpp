// Post-training quantization (see onnx_quantize.h): rewrite for quantization, calibrate on the
// float model, write the QDQ / QLinearConv model, evaluate it against the float outputs.
#include "npu/framework/onnx_quantize.h"

#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "npu/framework/onnx_run.h"
#include "onnx_builder.h"

namespace npu::framework {
namespace {

using namespace onnx_import;
using TP = onnx::TensorProto;

constexpr size_t kSamplesPerTensor = 1 << 15;  // values kept per tensor for percentiles

struct Range {
    float lo = 0, hi = 0;
    std::vector<float> sample;
};

struct ActParams {
    float scale = 1;
    int32_t zeroPoint = 0;
};

std::vector<float> floatsOf(const OnnxTensor& t) {
    std::vector<float> v(t.data.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), t.data.data(), v.size() * 4);
    return v;
}

TP floatTensor(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& v) {
    TP p;
    p.set_name(name);
    p.set_data_type(TP::FLOAT);
    for (int64_t d : dims) p.add_dims(d);
    p.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
    return p;
}

TP bytesTensor(const std::string& name, int32_t type, const std::vector<int64_t>& dims, const void* data,
               size_t bytes) {
    TP p;
    p.set_name(name);
    p.set_data_type(type);
    for (int64_t d : dims) p.add_dims(d);
    p.set_raw_data(std::string(static_cast<const char*>(data), bytes));
    return p;
}

onnx::NodeProto makeNode(const std::string& type, std::vector<std::string> inputs,
                         std::vector<std::string> outputs, const std::string& name) {
    onnx::NodeProto n;
    n.set_op_type(type);
    n.set_name(name);
    for (auto& i : inputs) n.add_input(i);
    for (auto& o : outputs) n.add_output(o);
    return n;
}

// The model under quantization: the prepared proto, its initializers by name, its opset.
class Quantizer {
public:
    Quantizer(onnx::ModelProto& proto, const OnnxQuantizeOptions& options, std::string where)
        : proto_(proto), options_(options), where_(std::move(where)) {}

    Status upgradeOpset(int64_t opset);
    Status rewriteForQuantization();
    Status calibrate(hal::IDevice& device, const std::vector<std::vector<OnnxTensor>>& calibration,
                     std::vector<OnnxTensor>* floatOutputs);
    Status writeQdq(OnnxQuantizeReport& report);
    int64_t opset() const { return opset_; }

private:
    const TP* initializer(const std::string& name) const;
    std::string addInitializer(TP tensor);
    Status inferShapes();
    void record(const std::string& name, const std::vector<float>& values, size_t samples);
    std::optional<ActParams> paramsOf(const onnx::NodeProto& node, const std::string& out,
                                      const std::unordered_map<std::string, ActParams>& known) const;
    ActParams fromRange(const Range& r) const;
    bool qlinearConv(const onnx::NodeProto& n, const std::unordered_map<std::string, ActParams>& params,
                     const std::unordered_map<std::string, std::string>& qname,
                     std::vector<onnx::NodeProto>& out);
    void quantParams(const std::string& qName, const ActParams& p);
    void dequantize(const std::string& qName, const std::string& dqName, std::vector<onnx::NodeProto>& out);
    void quantize(const std::string& floatName, const std::string& qName, std::vector<onnx::NodeProto>& out);

    onnx::ModelProto& proto_;
    const OnnxQuantizeOptions& options_;
    std::string where_;
    int64_t opset_ = 0;
    std::unordered_map<std::string, Range> ranges_;
    // quantized tensor name -> its scale and zero-point initializers
    std::unordered_map<std::string, std::pair<std::string, std::string>> scaleOf_;
    size_t counter_ = 0;
    size_t rewritten_ = 0;

public:
    size_t rewritten() const { return rewritten_; }
};

const TP* Quantizer::initializer(const std::string& name) const {
    for (const auto& t : proto_.graph().initializer())
        if (t.name() == name) return &t;
    return nullptr;
}

std::string Quantizer::addInitializer(TP tensor) {
    tensor.set_name(tensor.name() + "__" + std::to_string(counter_++));
    *proto_.mutable_graph()->add_initializer() = tensor;
    return tensor.name();
}

Status Quantizer::inferShapes() {
    try {
        proto_.mutable_graph()->clear_value_info();
        onnx::shape_inference::InferShapes(proto_);
    } catch (const std::exception& e) {
        return fail(kOnnxUnsupported,
                    where_ + ": shape inference failed on the rewritten model: " + e.what());
    }
    return {};
}

// QuantizeLinear needs opset 10; older models go through libonnx's version converter.
Status Quantizer::upgradeOpset(int64_t opset) {
    opset_ = opset;
    if (opset >= 10) return {};
    try {
        proto_ = onnx::version_conversion::ConvertVersion(proto_, 10);
    } catch (const std::exception& e) {
        return fail(kOnnxUnsupported, where_ + ": opset " + std::to_string(opset) +
                                          " cannot be upgraded to 10 (QuantizeLinear) by the ONNX version "
                                          "converter: " +
                                          e.what());
    }
    opset_ = 10;
    return inferShapes();
}

// Div by a constant -> Mul by its reciprocal; HardSigmoid -> Mul, Add, Clip(0, 1).
Status Quantizer::rewriteForQuantization() {
    auto* graph = proto_.mutable_graph();
    std::vector<onnx::NodeProto> nodes;
    for (const auto& n : graph->node()) {
        const TP* divisor = n.op_type() == "Div" && n.input_size() == 2 ? initializer(n.input(1)) : nullptr;
        if (divisor != nullptr && divisor->data_type() == TP::FLOAT) {
            HostTensor d = NPU_TRY(hostTensorFromProto(*divisor, where_ + ": Div '" + n.name() + "'"));
            std::vector<float> inv;
            for (double v : d.values) inv.push_back(float(1.0 / v));
            const auto r = addInitializer(floatTensor(n.input(1) + "__reciprocal", d.dims, inv));
            nodes.push_back(makeNode("Mul", {n.input(0), r}, {n.output(0)}, n.name()));
            ++rewritten_;
            continue;
        }
        if (n.op_type() != "HardSigmoid") {
            nodes.push_back(n);
            continue;
        }
        float alpha = 0.2f, beta = 0.5f;
        for (const auto& a : n.attribute()) {
            if (a.name() == "alpha") alpha = a.f();
            if (a.name() == "beta") beta = a.f();
        }
        const std::string y = n.output(0), mul = y + "__mul", add = y + "__add";
        nodes.push_back(makeNode("Mul", {n.input(0), addInitializer(floatTensor(y + "__alpha", {}, {alpha}))},
                                 {mul}, n.name() + "__mul"));
        nodes.push_back(makeNode("Add", {mul, addInitializer(floatTensor(y + "__beta", {}, {beta}))}, {add},
                                 n.name() + "__add"));
        auto clip = makeNode("Clip", {add}, {y}, n.name());
        if (opset_ < 11) {
            auto* lo = clip.add_attribute();
            lo->set_name("min"), lo->set_type(onnx::AttributeProto::FLOAT), lo->set_f(0);
            auto* hi = clip.add_attribute();
            hi->set_name("max"), hi->set_type(onnx::AttributeProto::FLOAT), hi->set_f(1);
        } else {
            clip.add_input(addInitializer(floatTensor(y + "__min", {}, {0.0f})));
            clip.add_input(addInitializer(floatTensor(y + "__max", {}, {1.0f})));
        }
        nodes.push_back(clip);
        ++rewritten_;
    }
    graph->clear_node();
    for (auto& n : nodes) *graph->add_node() = std::move(n);
    return inferShapes();
}

void Quantizer::record(const std::string& name, const std::vector<float>& values, size_t samples) {
    Range& r = ranges_[name];
    const bool first = r.sample.empty() && r.lo == 0 && r.hi == 0;
    float lo = first && !values.empty() ? values[0] : r.lo, hi = first && !values.empty() ? values[0] : r.hi;
    for (float v : values) lo = std::min(lo, v), hi = std::max(hi, v);
    r.lo = lo, r.hi = hi;
    const size_t budget = std::max<size_t>(1, kSamplesPerTensor / std::max<size_t>(samples, 1));
    const size_t stride = std::max<size_t>(1, values.size() / budget);
    for (size_t k = 0; k < values.size(); k += stride) r.sample.push_back(values[k]);
}

// Runs the float model with every float node output added as a graph output.
Status Quantizer::calibrate(hal::IDevice& device, const std::vector<std::vector<OnnxTensor>>& calibration,
                            std::vector<OnnxTensor>* floatOutputs) {
    onnx::ModelProto probe = proto_;
    auto* graph = probe.mutable_graph();
    std::unordered_set<std::string> outputs;
    for (const auto& o : graph->output()) outputs.insert(o.name());
    for (const auto& vi : proto_.graph().value_info()) {
        if (vi.type().tensor_type().elem_type() != TP::FLOAT || outputs.count(vi.name()) != 0) continue;
        *graph->add_output() = vi;
    }
    std::string bytes;
    probe.SerializeToString(&bytes);
    const auto model = NPU_TRY(importOnnxModelBytes(bytes, {}, where_ + " (calibration)"));
    const size_t graphOutputs = proto_.graph().output_size();
    for (const auto& sample : calibration) {
        auto run = NPU_TRY(runOnnxModel(device, model, sample));
        for (size_t i = 0; i < sample.size() && i < model.inputNames.size(); ++i)
            record(model.inputNames[i], floatsOf(sample[i]), calibration.size());
        for (size_t i = 0; i < run.outputs.size(); ++i) {
            if (run.outputs[i].elementType != TP::FLOAT) continue;
            record(run.outputs[i].name, floatsOf(run.outputs[i]), calibration.size());
            if (i + 1 == graphOutputs) floatOutputs->push_back(run.outputs[i]);
        }
    }
    return {};
}

ActParams Quantizer::fromRange(const Range& r) const {
    float lo = r.lo, hi = r.hi;
    if (options_.method == OnnxQuantizeOptions::Method::Percentile && !r.sample.empty()) {
        std::vector<float> s = r.sample;
        std::sort(s.begin(), s.end());
        const double p = std::clamp(options_.percentile, 50.0, 100.0) / 100.0;
        lo = s[size_t(std::floor((1.0 - p) * double(s.size() - 1)))];
        hi = s[size_t(std::ceil(p * double(s.size() - 1)))];
    }
    lo = std::min(lo, 0.0f), hi = std::max(hi, 0.0f);
    const int32_t qmin = options_.signedActivations ? -128 : 0, qmax = qmin + 255;
    ActParams a;
    a.scale = hi > lo ? (hi - lo) / 255.0f : 1.0f / 255.0f;
    a.zeroPoint = std::clamp(int32_t(std::lround(qmin - lo / a.scale)), qmin, qmax);
    return a;
}

const std::set<std::string>& quantizedOperators() {
    static const std::set<std::string> ops = {
        "Conv",        "Add",       "Sub",       "Mul",       "Clip",    "Relu",      "GlobalAveragePool",
        "AveragePool", "MaxPool",   "MatMul",    "Reshape",   "Flatten", "Softmax",   "Sigmoid",
        "Tanh",        "Concat",    "HardSwish", "Transpose", "Squeeze", "Unsqueeze", "Max",
        "Min",         "ReduceMean"};
    return ops;
}

// Operators whose quantized output must keep the input's parameters (the HAL's rule).
bool keepsInputParams(const std::string& op) {
    return op == "MaxPool" || op == "Reshape" || op == "Flatten" || op == "Transpose" || op == "Squeeze" ||
           op == "Unsqueeze";
}

std::optional<ActParams> Quantizer::paramsOf(const onnx::NodeProto& node, const std::string& out,
                                             const std::unordered_map<std::string, ActParams>& known) const {
    const std::string& op = node.op_type();
    if (quantizedOperators().count(op) == 0) return std::nullopt;
    if (keepsInputParams(op) && node.input_size() > 0) {
        auto it = known.find(node.input(0));
        if (it != known.end()) return it->second;
    }
    const int32_t offset = options_.signedActivations ? -128 : 0;
    if (op == "Softmax" || op == "Sigmoid") return ActParams{1.0f / 256.0f, offset};
    if (op == "Tanh") return ActParams{1.0f / 128.0f, offset + 128};
    auto r = ranges_.find(out);
    if (r == ranges_.end()) return std::nullopt;
    return fromRange(r->second);
}

void Quantizer::quantParams(const std::string& qName, const ActParams& p) {
    const std::string s = addInitializer(floatTensor(qName + "_scale", {}, {p.scale}));
    const int32_t zpType = options_.signedActivations ? TP::INT8 : TP::UINT8;
    const uint8_t zp = uint8_t(p.zeroPoint & 0xff);
    const std::string z = addInitializer(bytesTensor(qName + "_zero_point", zpType, {}, &zp, 1));
    scaleOf_[qName] = {s, z};
}

void Quantizer::quantize(const std::string& floatName, const std::string& qName,
                         std::vector<onnx::NodeProto>& out) {
    const auto& [s, z] = scaleOf_.at(qName);
    out.push_back(makeNode("QuantizeLinear", {floatName, s, z}, {qName}, qName + "_Q"));
}

void Quantizer::dequantize(const std::string& qName, const std::string& dqName,
                           std::vector<onnx::NodeProto>& out) {
    const auto& [s, z] = scaleOf_.at(qName);
    out.push_back(makeNode("DequantizeLinear", {qName, s, z}, {dqName}, qName + "_DQ"));
}

// Conv (2-D, group 1 or depthwise, constant weights and bias) on a quantized input ->
// QLinearConv with int8 weights per output channel, symmetric, and an int32 bias.
bool Quantizer::qlinearConv(const onnx::NodeProto& n,
                            const std::unordered_map<std::string, ActParams>& params,
                            const std::unordered_map<std::string, std::string>& qname,
                            std::vector<onnx::NodeProto>& out) {
    if (n.input_size() < 2 || n.output_size() != 1) return false;
    const TP* wProto = initializer(n.input(1));
    const TP* bProto = n.input_size() > 2 && !n.input(2).empty() ? initializer(n.input(2)) : nullptr;
    auto xq = qname.find(n.input(0));
    if (wProto == nullptr || wProto->data_type() != TP::FLOAT || wProto->dims_size() != 4 ||
        xq == qname.end() || (n.input_size() > 2 && !n.input(2).empty() && bProto == nullptr))
        return false;
    auto w = hostTensorFromProto(*wProto, where_);
    if (!w) return false;
    int64_t group = 1;
    for (const auto& a : n.attribute())
        if (a.name() == "group") group = a.i();
    const int64_t outC = w->dims[0], inC = w->dims[1] * group;
    const bool depthwise = group == inC && group > 1 && outC % inC == 0;
    if (group != 1 && !depthwise) return false;
    std::vector<float> bias(size_t(outC), 0.0f);
    if (bProto != nullptr) {
        auto b = hostTensorFromProto(*bProto, where_);
        if (!b || int64_t(b->count()) != outC) return false;
        bias = b->asFloats();
    }
    const size_t inner = w->count() / size_t(outC);
    std::vector<float> scales(static_cast<size_t>(outC));
    std::vector<int8_t> wq(w->count()), zeros(size_t(outC), 0);
    std::vector<int32_t> bq(static_cast<size_t>(outC));
    const float xs = params.at(n.input(0)).scale;
    for (size_t c = 0; c < size_t(outC); ++c) {
        double maxAbs = 0;
        for (size_t k = 0; k < inner; ++k) maxAbs = std::max(maxAbs, std::fabs(w->values[c * inner + k]));
        scales[c] = maxAbs > 0 ? float(maxAbs / 127.0) : 1.0f;
        for (size_t k = 0; k < inner; ++k)
            wq[c * inner + k] =
                int8_t(std::clamp(std::lround(w->values[c * inner + k] / scales[c]), -127L, 127L));
        bq[c] = int32_t(std::clamp(std::llround(double(bias[c]) / (double(xs) * scales[c])), -(1LL << 31),
                                   (1LL << 31) - 1));
    }
    const std::string& y = n.output(0);
    const std::string yq = y + "__q";
    const auto& [xs_, xz] = scaleOf_.at(xq->second);
    const auto& [ys, yz] = scaleOf_.at(yq);
    const std::string wName =
        addInitializer(bytesTensor(n.input(1) + "__int8", TP::INT8, w->dims, wq.data(), wq.size()));
    const std::string wsName = addInitializer(floatTensor(n.input(1) + "__scale", {outC}, scales));
    const std::string wzName = addInitializer(
        bytesTensor(n.input(1) + "__zero_point", TP::INT8, {outC}, zeros.data(), zeros.size()));
    const std::string bName =
        addInitializer(bytesTensor(n.name() + "__bias_int32", TP::INT32, {outC}, bq.data(), bq.size() * 4));
    auto conv =
        makeNode("QLinearConv", {xq->second, xs_, xz, wName, wsName, wzName, ys, yz, bName}, {yq}, n.name());
    for (const auto& a : n.attribute()) *conv.add_attribute() = a;
    out.push_back(std::move(conv));
    dequantize(yq, y, out);
    return true;
}

Status Quantizer::writeQdq(OnnxQuantizeReport& report) {
    auto* graph = proto_.mutable_graph();
    std::unordered_map<std::string, ActParams> params;
    std::unordered_map<std::string, std::string> qname, rename;
    std::unordered_set<std::string> initialized;
    for (const auto& t : graph->initializer()) initialized.insert(t.name());
    std::vector<onnx::NodeProto> out;
    for (const auto& in : graph->input()) {
        auto r = ranges_.find(in.name());
        if (initialized.count(in.name()) != 0 || r == ranges_.end()) continue;
        const std::string q = in.name() + "__q", dq = in.name() + "__dq";
        params[in.name()] = fromRange(r->second);
        quantParams(q, params[in.name()]);
        quantize(in.name(), q, out);
        dequantize(q, dq, out);
        qname[in.name()] = q;
        rename[in.name()] = dq;
        ++report.quantizedTensors;
    }
    const auto nodes = graph->node();
    for (const auto& original : nodes) {
        onnx::NodeProto n = original;
        for (int k = 0; k < n.input_size(); ++k) {
            auto it = rename.find(n.input(k));
            if (it != rename.end()) n.set_input(k, it->second);
        }
        const auto p = n.output_size() == 1 ? paramsOf(n, n.output(0), params) : std::nullopt;
        if (!p) {
            out.push_back(std::move(n));
            ++report.floatNodes;
            continue;
        }
        const std::string y = n.output(0), yq = y + "__q";
        params[y] = *p;
        quantParams(yq, *p);
        ++report.quantizedTensors;
        if (n.op_type() == "Conv" && qlinearConv(original, params, qname, out)) {
            qname[y] = yq;
            ++report.quantizedConvs;
            continue;
        }
        n.set_output(0, y + "__f");
        out.push_back(std::move(n));
        quantize(y + "__f", yq, out);
        dequantize(yq, y, out);
        qname[y] = yq;
    }
    graph->clear_node();
    for (auto& n : out) *graph->add_node() = std::move(n);
    // Weights replaced by their int8 form are no longer read.
    std::unordered_set<std::string> read;
    for (const auto& n : graph->node())
        for (const auto& i : n.input()) read.insert(i);
    for (const auto& o : graph->output()) read.insert(o.name());
    auto* inits = graph->mutable_initializer();
    for (int k = inits->size() - 1; k >= 0; --k) {
        if (read.count(inits->Get(k).name()) == 0) inits->DeleteSubrange(k, 1);
    }
    for (int k = graph->input_size() - 1; k >= 0; --k) {
        if (read.count(graph->input(k).name()) == 0 && initialized.count(graph->input(k).name()) != 0)
            graph->mutable_input()->DeleteSubrange(k, 1);
    }
    graph->clear_value_info();
    // Opset 10 comes with IR version 5 (initializers need not be graph inputs any more).
    if (proto_.ir_version() < 5) proto_.set_ir_version(5);
    return {};
}

// The quantized model's last output against the float model's, per calibration sample.
Status evaluate(const std::string& bytes, const std::vector<std::vector<OnnxTensor>>& calibration,
                const std::vector<OnnxTensor>& floatOutputs, hal::IDevice& device, const std::string& where,
                OnnxQuantizeReport& r) {
    const auto model = NPU_TRY(importOnnxModelBytes(bytes, {}, where + " (quantized)"));
    if (model.outputNames.empty() || floatOutputs.size() != calibration.size())
        return fail(kOnnxUnsupported, where + ": the float run gave no output to compare");
    r.comparedOutput = model.outputNames.back();
    size_t agree = 0, rows = 0, elements = 0;
    double sum = 0;
    for (size_t s = 0; s < calibration.size(); ++s) {
        auto run = NPU_TRY(runOnnxModel(device, model, calibration[s]));
        const auto q = floatsOf(run.outputs.back()), f = floatsOf(floatOutputs[s]);
        if (q.size() != f.size()) return fail(kOnnxUnsupported, where + ": quantized output size differs");
        for (size_t k = 0; k < q.size(); ++k) {
            const double e = std::fabs(double(q[k]) - f[k]);
            r.maxAbsError = std::max(r.maxAbsError, e);
            sum += e;
        }
        elements += q.size();
        const auto& dims = floatOutputs[s].dims;
        r.classifier = dims.size() == 2 && dims[1] > 1;
        if (!r.classifier) continue;
        const size_t classes = size_t(dims[1]);
        for (size_t row = 0; row < size_t(dims[0]); ++row, ++rows) {
            auto fb = f.begin() + long(row * classes), qb = q.begin() + long(row * classes);
            agree += std::max_element(fb, fb + long(classes)) - fb ==
                     std::max_element(qb, qb + long(classes)) - qb;
        }
    }
    r.meanAbsError = elements ? sum / double(elements) : 0;
    if (r.classifier && rows > 0) r.top1Agreement = double(agree) / double(rows);
    return {};
}

}  // namespace

Result<std::string> quantizeOnnxModel(const std::string& path,
                                      const std::vector<std::vector<OnnxTensor>>& calibration,
                                      hal::IDevice& device, const OnnxQuantizeOptions& options,
                                      OnnxQuantizeReport* report) {
    if (calibration.empty()) return invalidArgument(path + ": no calibration samples");
    const std::string bytes = NPU_TRY(readFileBytes(path));
    onnx::ModelProto proto;
    if (bytes.size() > size_t(std::numeric_limits<int>::max()) ||
        !proto.ParseFromArray(bytes.data(), int(bytes.size())))
        return invalidArgument(path + ": not a serialized onnx.ModelProto");
    OnnxImportOptions io = options.import;
    if (io.orderedInputShapes.empty()) {
        for (const auto& t : calibration[0]) io.orderedInputShapes.push_back(t.dims);
    }
    OnnxImportedModel stats;
    NPU_TRY(prepareOnnxProto(proto, io, path, stats));
    Quantizer q(proto, options, path);
    NPU_TRY(q.upgradeOpset(stats.opset));
    NPU_TRY(q.rewriteForQuantization());
    std::vector<OnnxTensor> floatOutputs;
    NPU_TRY(q.calibrate(device, calibration, &floatOutputs));
    OnnxQuantizeReport r;
    r.samples = calibration.size();
    r.rewrittenNodes = q.rewritten();
    NPU_TRY(q.writeQdq(r));
    r.opset = q.opset();
    std::string out;
    if (!proto.SerializeToString(&out))
        return fail(kOnnxUnsupported, path + ": cannot serialize the quantized model");
    NPU_TRY(evaluate(out, calibration, floatOutputs, device, path, r));
    if (report != nullptr) *report = r;
    return out;
}

Result<std::vector<std::vector<OnnxTensor>>> loadCalibrationDir(const std::string& dir,
                                                                size_t inputsPerSample) {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::vector<std::string> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const auto ext = it->path().extension().string();
        if (it->is_regular_file() && (ext == ".npy" || ext == ".pb")) files.push_back(it->path().string());
    }
    if (ec) return invalidArgument(dir + ": cannot list the calibration directory: " + ec.message());
    std::sort(files.begin(), files.end());
    if (files.empty()) return invalidArgument(dir + ": no .npy or .pb files");
    if (inputsPerSample == 0 || files.size() % inputsPerSample != 0) {
        return invalidArgument(dir + ": " + std::to_string(files.size()) +
                               " files do not make whole samples of " + std::to_string(inputsPerSample) +
                               " inputs");
    }
    std::vector<std::vector<OnnxTensor>> samples;
    for (size_t k = 0; k < files.size(); k += inputsPerSample) {
        std::vector<OnnxTensor> sample;
        for (size_t i = 0; i < inputsPerSample; ++i)
            sample.push_back(NPU_TRY(loadOnnxTensorFile(files[k + i])));
        samples.push_back(std::move(sample));
    }
    return samples;
}

Result<std::vector<std::vector<OnnxTensor>>> randomCalibration(const OnnxImportedModel& model, size_t count,
                                                               uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<std::vector<OnnxTensor>> samples(count);
    for (auto& sample : samples) {
        for (size_t i = 0; i < model.inputNames.size(); ++i) {
            const auto& o = model.model.main.operands[model.model.main.inputIndexes[i]];
            if (o.type != hal::OperandType::TENSOR_FLOAT32)
                return invalidArgument("input '" + model.inputNames[i] +
                                       "' is not float: give calibration files");
            OnnxTensor t;
            t.name = model.inputNames[i];
            t.dims.assign(o.dimensions.begin(), o.dimensions.end());
            std::vector<float> v(t.elementCount());
            for (float& x : v) x = dist(gen);
            t.data.resize(v.size() * 4);
            std::memcpy(t.data.data(), v.data(), t.data.size());
            sample.push_back(std::move(t));
        }
    }
    return samples;
}

}  // namespace npu::framework
