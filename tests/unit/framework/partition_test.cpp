// Partitioning with CPU fallback: placement by getSupportedOperations, partition models at
// each boundary (float -> quant8, quant8 -> quant8, quant8 -> float), and a quantized ONNX model
// split between the NPU (loopback firmware + simulator) and the reference, bit-exact against
// the reference alone.
#include "npu/framework/partition.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <set>

#include "npu/framework/onnx_import.h"
#include "npu/framework/onnx_run.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/ref/reference_device.h"
#include "npu/shim/npu_device.h"

using namespace npu;
using hal::OperationType;

namespace {

// The reference device claiming only the operation types it is given: a stand-in accelerator
// whose coverage the test controls.
class RestrictedDevice : public ref::ReferenceDevice {
public:
    explicit RestrictedDevice(std::set<OperationType> types) : types_(std::move(types)) {}
    Result<std::vector<bool>> getSupportedOperations(const hal::Model& model) override {
        auto all = NPU_TRY(ReferenceDevice::getSupportedOperations(model));
        for (size_t i = 0; i < all.size(); ++i)
            all[i] = all[i] && types_.count(model.main.operations[i].type) != 0;
        return all;
    }

private:
    std::set<OperationType> types_;
};

void addTensor(onnx::GraphProto* g, const std::string& name, int32_t type, const std::vector<int64_t>& dims,
               const std::vector<double>& values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    for (double v : values) {
        if (type == onnx::TensorProto::FLOAT)
            t->add_float_data(float(v));
        else if (type == onnx::TensorProto::INT64)
            t->add_int64_data(int64_t(v));
        else
            t->add_int32_data(int32_t(v));
    }
}

onnx::NodeProto* addNode(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                         std::vector<std::string> out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(g->node_size()));
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
}

// x (float 1x4x6x6) -> QuantizeLinear -> QLinearConv 3x3 (8 channels) -> QLinearConv 1x1 ->
// DequantizeLinear -> Relu -> y (float). Weights uint8 per tensor. Imported NCHW (keepNchw): the
// placements below are of the operations as mapped, without the NHWC rewrite's transposes.
std::string quantizedModel() {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    auto* g = m.mutable_graph();
    g->set_name("qdq");
    auto io = [](onnx::ValueInfoProto* vi, const std::string& name, std::vector<int64_t> dims) {
        vi->set_name(name);
        auto* t = vi->mutable_type()->mutable_tensor_type();
        t->set_elem_type(onnx::TensorProto::FLOAT);
        for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    };
    io(g->add_input(), "x", {1, 4, 6, 6});
    io(g->add_output(), "y", {1, 8, 6, 6});
    addTensor(g, "xs", onnx::TensorProto::FLOAT, {}, {0.02});
    addTensor(g, "xz", onnx::TensorProto::UINT8, {}, {128});
    addTensor(g, "ws", onnx::TensorProto::FLOAT, {}, {0.01});
    addTensor(g, "wz", onnx::TensorProto::UINT8, {}, {120});
    addTensor(g, "ys", onnx::TensorProto::FLOAT, {}, {0.05});
    addTensor(g, "yz", onnx::TensorProto::UINT8, {}, {100});
    std::vector<double> w1(8 * 4 * 9), w2(8 * 8);
    for (size_t i = 0; i < w1.size(); ++i) w1[i] = double((i * 37) % 256);
    for (size_t i = 0; i < w2.size(); ++i) w2[i] = double((i * 53 + 11) % 256);
    addTensor(g, "w1", onnx::TensorProto::UINT8, {8, 4, 3, 3}, w1);
    addTensor(g, "w2", onnx::TensorProto::UINT8, {8, 8, 1, 1}, w2);
    addTensor(g, "b1", onnx::TensorProto::INT32, {8}, {100, -200, 300, -400, 500, -600, 700, -800});
    addNode(g, "QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
    auto* c1 = addNode(g, "QLinearConv", {"xq", "xs", "xz", "w1", "ws", "wz", "ys", "yz", "b1"}, {"c1"});
    auto* pads = c1->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int k = 0; k < 4; ++k) pads->add_ints(1);
    addNode(g, "QLinearConv", {"c1", "ys", "yz", "w2", "ws", "wz", "ys", "yz"}, {"c2"});
    addNode(g, "DequantizeLinear", {"c2", "ys", "yz"}, {"d"});
    addNode(g, "Relu", {"d"}, {"y"});
    return m.SerializeAsString();
}

framework::OnnxTensor rampInput(const std::vector<int64_t>& dims) {
    framework::OnnxTensor t;
    t.name = "x";
    t.dims = dims;
    std::vector<float> v(t.elementCount());
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i * 7 % 23) - 11) * 0.1f;
    const auto* bytes = reinterpret_cast<const uint8_t*>(v.data());
    t.data.assign(bytes, bytes + v.size() * sizeof(float));
    return t;
}

framework::OnnxTensor input() {
    return rampInput({1, 4, 6, 6});
}

// The NPU (loopback firmware + simulator) first, the reference as fallback.
struct NpuAndReference {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> npu;
    ref::ReferenceDevice reference;
    std::vector<framework::PartitionDevice> devices;
    NpuAndReference() {
        auto loop = fw::host::startLoopbackFirmware();
        REQUIRE(loop.has_value());
        firmware = std::move(loop->firmware);
        auto device = shim::createNpuDevice(std::move(loop->hostEnd), {});
        REQUIRE(device.has_value());
        npu = *device;
        devices = {{"npu", npu.get()}, {"reference", &reference}};
    }
    ~NpuAndReference() { npu.reset(); }  // before the firmware stops
};

}  // namespace

TEST_CASE("quantized ONNX operators import as QUANTIZE, quant8 CONV_2D and DEQUANTIZE") {
    auto m = framework::importOnnxModelBytes(quantizedModel(), {.keepNchw = true}, "qdq");
    REQUIRE(m.has_value());
    std::vector<OperationType> types;
    for (const auto& op : m->model.main.operations) types.push_back(op.type);
    CHECK(types == std::vector<OperationType>{OperationType::QUANTIZE, OperationType::CONV_2D,
                                              OperationType::CONV_2D, OperationType::DEQUANTIZE,
                                              OperationType::RELU});
    const auto& conv = m->model.main.operations[1];
    CHECK(m->model.main.operands[conv.inputs[0]].type == hal::OperandType::TENSOR_QUANT8_ASYMM);
    CHECK(m->model.main.operands[conv.inputs[0]].zeroPoint == 128);
    CHECK(m->model.main.operands[conv.outputs[0]].scale == Approx(0.05f));
}

TEST_CASE("partitions at every boundary type give the single-device result exactly") {
    auto m = framework::importOnnxModelBytes(quantizedModel(), {.keepNchw = true}, "qdq");
    REQUIRE(m.has_value());
    ref::ReferenceDevice reference;
    auto whole = framework::runOnnxModel(reference, *m, {input()});
    REQUIRE(whole.has_value());
    auto inputs = framework::onnxInputBuffers(*m, {input()});
    REQUIRE(inputs.has_value());

    // Accelerator coverage -> expected partition devices (0 = accelerator, 1 = reference).
    struct Case {
        std::set<OperationType> claims;
        std::vector<size_t> partitionDevices;
    };
    const std::vector<Case> cases = {
        {{OperationType::CONV_2D}, {1, 0, 1}},  // float->q8 ref, q8->q8 acc, q8->float ref
        {{OperationType::QUANTIZE, OperationType::CONV_2D}, {0, 1}},  // float input into the accelerator
        {{OperationType::DEQUANTIZE, OperationType::RELU},
         {1, 0}},  // q8 -> accelerator, float output from it
        {{OperationType::QUANTIZE, OperationType::DEQUANTIZE}, {0, 1, 0, 1}},  // q8 ref <-> acc both ways
        {{}, {1}},                                                             // all on the reference
    };
    for (const auto& c : cases) {
        RestrictedDevice accelerator(c.claims);
        const std::vector<framework::PartitionDevice> devices = {{"acc", &accelerator},
                                                                 {"reference", &reference}};
        auto plan = framework::planPartitions(m->model, devices);
        REQUIRE(plan.has_value());
        std::vector<size_t> got;
        for (const auto& p : plan->partitions) got.push_back(p.device);
        CHECK(got == c.partitionDevices);
        for (size_t i = 0; i < plan->deviceOfOperation.size(); ++i) {
            CHECK(plan->reasonOfOperation[i].find(devices[plan->deviceOfOperation[i]].name) !=
                  std::string::npos);
        }
        auto run = framework::runPartitions(*plan, m->model, devices, *inputs);
        REQUIRE(run.has_value());
        CHECK(run->timings.size() == c.partitionDevices.size());
        CHECK(run->outputs[0] == whole->outputs[0].data);
    }
}

TEST_CASE("an operation no device claims is an error naming it") {
    auto m = framework::importOnnxModelBytes(quantizedModel(), {.keepNchw = true}, "qdq");
    REQUIRE(m.has_value());
    RestrictedDevice none({});
    auto plan = framework::planPartitions(m->model, {{"acc", &none}});
    REQUIRE_FALSE(plan.has_value());
    CHECK_THAT(plan.error().message,
               Catch::Contains("operation 0 (QUANTIZE)") && Catch::Contains("acc does not support it"));
}

TEST_CASE("a quantized ONNX model split between the NPU and the reference matches the reference exactly") {
    auto m = framework::importOnnxModelBytes(quantizedModel(), {.keepNchw = true}, "qdq");
    REQUIRE(m.has_value());
    NpuAndReference both;
    const auto& devices = both.devices;
    auto& reference = both.reference;
    auto plan = framework::planPartitions(m->model, devices);
    REQUIRE(plan.has_value());
    // The NPU takes both quant8 convolutions (its coverage may grow; these it must keep).
    CHECK(plan->deviceOfOperation[1] == 0);
    CHECK(plan->deviceOfOperation[2] == 0);
    auto inputs = framework::onnxInputBuffers(*m, {input()});
    REQUIRE(inputs.has_value());
    auto run = framework::runPartitions(*plan, m->model, devices, *inputs);
    REQUIRE(run.has_value());
    auto whole = framework::runOnnxModel(reference, *m, {input()});
    REQUIRE(whole.has_value());
    CHECK(run->outputs[0] == whole->outputs[0].data);
}

namespace {

// One quantized operator between QuantizeLinear and DequantizeLinear: float x -> Q (uint8, scale
// 0.02, zero point 128) -> OP -> DQ (scale 0.05, zero point 100) -> float y.
struct QuantOpModel {
    onnx::ModelProto proto;
    onnx::GraphProto* g = nullptr;
    QuantOpModel(const std::vector<int64_t>& xDims, const std::vector<int64_t>& yDims) {
        proto.set_ir_version(8);
        proto.add_opset_import()->set_version(13);
        g = proto.mutable_graph();
        g->set_name("qop");
        auto io = [](onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& dims) {
            vi->set_name(name);
            auto* t = vi->mutable_type()->mutable_tensor_type();
            t->set_elem_type(onnx::TensorProto::FLOAT);
            for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
        };
        io(g->add_input(), "x", xDims);
        io(g->add_output(), "y", yDims);
        addTensor(g, "xs", onnx::TensorProto::FLOAT, {}, {0.02});
        addTensor(g, "xz", onnx::TensorProto::UINT8, {}, {128});
        addTensor(g, "ys", onnx::TensorProto::FLOAT, {}, {0.05});
        addTensor(g, "yz", onnx::TensorProto::UINT8, {}, {100});
        addNode(g, "QuantizeLinear", {"x", "xs", "xz"}, {"xq"});
    }
    // After the operator (nodes are in topological order).
    std::string bytes() {
        onnx::ModelProto m = proto;
        addNode(m.mutable_graph(), "DequantizeLinear", {"q", "ys", "yz"}, {"y"});
        return m.SerializeAsString();
    }
};

// The ONNX operator's own arithmetic: round(acc * scale) + zero point, saturated, dequantized.
float requantized(double acc, double scale) {
    const double q = std::clamp(std::nearbyint(acc * 0.02 * scale / 0.05) + 100, 0.0, 255.0);
    return float((q - 100) * 0.05);
}

// The model on the NPU (loopback firmware + simulator) with the reference as fallback: `npuOp`
// must run on the NPU, the outputs must equal the reference's byte for byte and be within one
// quantization step of `expected`.
void checkOnNpu(const framework::OnnxImportedModel& m, OperationType npuOp, const framework::OnnxTensor& x,
                const std::vector<float>& expected) {
    NpuAndReference both;
    const auto& devices = both.devices;
    auto& reference = both.reference;
    auto plan = framework::planPartitions(m.model, devices);
    REQUIRE(plan.has_value());
    bool onNpu = false;
    for (size_t i = 0; i < plan->deviceOfOperation.size(); ++i)
        onNpu = onNpu || (m.model.main.operations[i].type == npuOp && plan->deviceOfOperation[i] == 0);
    CHECK(onNpu);
    auto inputs = framework::onnxInputBuffers(m, {x});
    REQUIRE(inputs.has_value());
    auto run = framework::runPartitions(*plan, m.model, devices, *inputs);
    REQUIRE(run.has_value());
    auto whole = framework::runOnnxModel(reference, m, {x});
    REQUIRE(whole.has_value());
    CHECK(run->outputs[0] == whole->outputs[0].data);
    std::vector<float> got(expected.size());
    REQUIRE(run->outputs[0].size() == got.size() * 4);
    std::memcpy(got.data(), run->outputs[0].data(), run->outputs[0].size());
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i);
        CHECK(std::fabs(got[i] - expected[i]) <= 0.05f + 1e-6f);
    }
}

std::vector<uint8_t> quantizedInput(const framework::OnnxTensor& x) {
    std::vector<float> v(x.elementCount());
    std::memcpy(v.data(), x.data.data(), x.data.size());
    std::vector<uint8_t> q;
    for (float f : v) q.push_back(uint8_t(std::clamp(std::lround(f / 0.02f) + 128, 0L, 255L)));
    return q;
}

}  // namespace

TEST_CASE("a grouped QLinearConv (group 2, int8 weights per channel) runs as GROUPED_CONV_2D on the NPU") {
    QuantOpModel q({1, 4, 5, 5}, {1, 6, 5, 5});
    std::vector<double> w(6 * 2 * 3 * 3), ws;
    for (size_t i = 0; i < w.size(); ++i) w[i] = double(int(i * 37 % 255) - 127);
    for (int c = 0; c < 6; ++c) ws.push_back(0.002 + 0.001 * c);
    addTensor(q.g, "w", onnx::TensorProto::INT8, {6, 2, 3, 3}, w);
    addTensor(q.g, "ws", onnx::TensorProto::FLOAT, {6}, ws);
    addTensor(q.g, "wz", onnx::TensorProto::INT8, {6}, std::vector<double>(6, 0));
    addTensor(q.g, "b", onnx::TensorProto::INT32, {6}, {50, -60, 70, -80, 90, -100});
    auto* conv = addNode(q.g, "QLinearConv", {"xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"}, {"q"});
    auto* group = conv->add_attribute();
    group->set_name("group");
    group->set_type(onnx::AttributeProto::INT);
    group->set_i(2);
    auto* pads = conv->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int k = 0; k < 4; ++k) pads->add_ints(1);
    auto m = framework::importOnnxModelBytes(q.bytes(), {}, "grouped");
    if (!m) FAIL(m.error().message);
    const auto x = rampInput({1, 4, 5, 5});
    const auto xq = quantizedInput(x);
    std::vector<float> expected;
    for (int c = 0; c < 6; ++c) {
        const int g = c / 3;
        for (int y = 0; y < 5; ++y) {
            for (int xx = 0; xx < 5; ++xx) {
                double acc = 0;
                for (int ic = 0; ic < 2; ++ic)
                    for (int ky = 0; ky < 3; ++ky)
                        for (int kx = 0; kx < 3; ++kx) {
                            const int iy = y + ky - 1, ix = xx + kx - 1;
                            if (iy < 0 || iy >= 5 || ix < 0 || ix >= 5) continue;
                            acc += (xq[size_t(((g * 2 + ic) * 5 + iy) * 5 + ix)] - 128) *
                                   w[size_t(((c * 2 + ic) * 3 + ky) * 3 + kx)];
                        }
                acc += std::vector<double>{50, -60, 70, -80, 90, -100}[size_t(c)];
                expected.push_back(requantized(acc, ws[size_t(c)]));
            }
        }
    }
    checkOnNpu(*m, OperationType::GROUPED_CONV_2D, x, expected);

    // Dilation has no GROUPED_CONV_2D form: refused, naming the reason.
    auto* dil = conv->add_attribute();
    dil->set_name("dilations");
    dil->set_type(onnx::AttributeProto::INTS);
    dil->add_ints(2);
    dil->add_ints(2);
    for (auto& p : *pads->mutable_ints()) p = 2;  // the same 5 x 5 output
    auto refused = framework::importOnnxModelBytes(q.bytes(), {}, "grouped");
    REQUIRE_FALSE(refused.has_value());
    CHECK_THAT(refused.error().message, Catch::Contains("QLinearConv") && Catch::Contains("dilation"));
}

TEST_CASE("QLinearMatMul with uint8 A and int8 B runs as FULLY_CONNECTED on the NPU, exactly") {
    QuantOpModel q({2, 4}, {2, 3});
    std::vector<double> b(4 * 3);
    for (size_t i = 0; i < b.size(); ++i) b[i] = double(int(i * 41 % 255) - 127);
    addTensor(q.g, "b", onnx::TensorProto::INT8, {4, 3}, b);
    addTensor(q.g, "bs", onnx::TensorProto::FLOAT, {}, {0.004});
    addTensor(q.g, "bz", onnx::TensorProto::INT8, {}, {3});
    addNode(q.g, "QLinearMatMul", {"xq", "xs", "xz", "b", "bs", "bz", "ys", "yz"}, {"q"});
    auto m = framework::importOnnxModelBytes(q.bytes(), {}, "matmul");
    if (!m) FAIL(m.error().message);
    const auto x = rampInput({2, 4});
    const auto xq = quantizedInput(x);
    std::vector<float> expected;
    for (int r = 0; r < 2; ++r) {
        for (int n = 0; n < 3; ++n) {
            double acc = 0;
            for (int k = 0; k < 4; ++k) acc += (xq[size_t(r * 4 + k)] - 128) * (b[size_t(k * 3 + n)] - 3);
            expected.push_back(requantized(acc, 0.004));
        }
    }
    checkOnNpu(*m, OperationType::FULLY_CONNECTED, x, expected);

    // Per-column B scales: FULLY_CONNECTED has no per-channel weights; refused with the reason.
    for (auto& t : *q.g->mutable_initializer()) {
        if (t.name() != "bs") continue;
        t.add_dims(3);
        t.clear_float_data();
        for (float s : {0.004f, 0.005f, 0.006f}) t.add_float_data(s);
    }
    auto refused = framework::importOnnxModelBytes(q.bytes(), {}, "matmul");
    REQUIRE_FALSE(refused.has_value());
    CHECK_THAT(refused.error().message, Catch::Contains("QLinearMatMul") && Catch::Contains("per-channel"));
}

TEST_CASE("a QDQ Gemm (int8 weights, int32 bias) fuses to FULLY_CONNECTED with the model's own integers") {
    QuantOpModel q({2, 4}, {2, 3});
    std::vector<double> w(3 * 4);  // [N, K], transB = 1
    for (size_t i = 0; i < w.size(); ++i) w[i] = double(int(i * 41 % 255) - 127);
    addTensor(q.g, "w", onnx::TensorProto::INT8, {3, 4}, w);
    addTensor(q.g, "ws", onnx::TensorProto::FLOAT, {}, {0.004});
    addTensor(q.g, "wz", onnx::TensorProto::INT8, {}, {0});
    addTensor(q.g, "c", onnx::TensorProto::INT32, {3}, {40, -50, 60});
    addTensor(q.g, "cs", onnx::TensorProto::FLOAT, {}, {double(0.02f * 0.004f)});
    addNode(q.g, "DequantizeLinear", {"xq", "xs", "xz"}, {"xf"});
    addNode(q.g, "DequantizeLinear", {"w", "ws", "wz"}, {"wf"});
    addNode(q.g, "DequantizeLinear", {"c", "cs"}, {"cf"});
    auto* gemm = addNode(q.g, "Gemm", {"xf", "wf", "cf"}, {"g"});
    auto* transB = gemm->add_attribute();
    transB->set_name("transB");
    transB->set_type(onnx::AttributeProto::INT);
    transB->set_i(1);
    addNode(q.g, "QuantizeLinear", {"g", "ys", "yz"}, {"q"});
    auto m = framework::importOnnxModelBytes(q.bytes(), {}, "gemm");
    if (!m) FAIL(m.error().message);
    const hal::Operation* fc = nullptr;
    for (const auto& op : m->model.main.operations)
        if (op.type == OperationType::FULLY_CONNECTED) fc = &op;
    REQUIRE(fc != nullptr);
    const auto& weights = m->model.main.operands[fc->inputs[1]];
    CHECK(weights.type == hal::OperandType::TENSOR_QUANT8_ASYMM);  // the activations' type
    CHECK(weights.scale == Approx(0.004f).epsilon(1e-6));
    const uint8_t* stored = m->model.operandValues.data() + weights.location.offset;
    for (size_t i = 0; i < w.size(); ++i) CHECK(int(stored[i]) - weights.zeroPoint == int(w[i]));
    const auto x = rampInput({2, 4});
    const auto xq = quantizedInput(x);
    std::vector<float> expected;
    for (int r = 0; r < 2; ++r) {
        for (int n = 0; n < 3; ++n) {
            double acc = std::vector<double>{40, -50, 60}[size_t(n)];
            for (int k = 0; k < 4; ++k) acc += (xq[size_t(r * 4 + k)] - 128) * w[size_t(n * 4 + k)];
            expected.push_back(requantized(acc, 0.004));
        }
    }
    checkOnNpu(*m, OperationType::FULLY_CONNECTED, x, expected);
}
