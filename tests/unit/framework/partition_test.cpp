// Partitioning with CPU fallback: placement by getSupportedOperations, partition models at
// each boundary (float -> quant8, quant8 -> quant8, quant8 -> float), and a quantized ONNX model
// split between the NPU (loopback firmware + simulator) and the reference, bit-exact against
// the reference alone.
#include "npu/framework/partition.h"

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
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

framework::OnnxTensor input() {
    framework::OnnxTensor t;
    t.name = "x";
    t.dims = {1, 4, 6, 6};
    std::vector<float> v(144);
    for (size_t i = 0; i < v.size(); ++i) v[i] = float(int(i * 7 % 23) - 11) * 0.1f;
    const auto* bytes = reinterpret_cast<const uint8_t*>(v.data());
    t.data.assign(bytes, bytes + v.size() * sizeof(float));
    return t;
}

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
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    auto firmware = std::move(loop->firmware);
    auto npuDevice = shim::createNpuDevice(std::move(loop->hostEnd), {});
    REQUIRE(npuDevice.has_value());
    ref::ReferenceDevice reference;
    const std::vector<framework::PartitionDevice> devices = {{"npu", npuDevice->get()},
                                                             {"reference", &reference}};
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
    npuDevice->reset();
}
