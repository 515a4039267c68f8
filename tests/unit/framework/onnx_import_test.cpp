// The ONNX importer on small models built here with libonnx's protobuf classes: the HAL
// operations it maps to, constant and BatchNormalization folding, input shapes, errors that name
// the node, and results on the reference device.
#include "npu/framework/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "npu/framework/onnx_run.h"
#include "npu/ref/reference_device.h"
#include "onnx_test_graph.h"

using namespace npu;
using framework::OnnxTensor;
using hal::OperationType;
using namespace onnx_test;

TEST_CASE("ONNX Conv maps to CONV_2D, DEPTHWISE_CONV_2D or GROUPED_CONV_2D by its group") {
    for (int64_t group : {1, 4, 2}) {
        GraphBuilder g;
        g.input("x", {1, 4, 5, 5});
        g.initializer("w", {4, 4 / group, 3, 3}, ramp(size_t(4 * (4 / group) * 9)));
        auto* n = g.node("Conv", {"x", "w"}, {"y"}, "conv");
        GraphBuilder::attr(n, "group", group);
        GraphBuilder::attr(n, "pads", {1, 1, 1, 1});
        g.output("y", {1, 4, 5, 5});
        auto m = g.import();
        REQUIRE(m.has_value());
        const OperationType want = group == 1   ? OperationType::CONV_2D
                                   : group == 4 ? OperationType::DEPTHWISE_CONV_2D
                                                : OperationType::GROUPED_CONV_2D;
        CHECK(opTypes(*m) == std::vector<OperationType>{want});
        // Check one output element against a direct computation.
        ref::ReferenceDevice device;
        const auto xv = ramp(100, 0.3f);
        auto run = framework::runOnnxModel(device, *m, {floatTensor({1, 4, 5, 5}, xv)});
        REQUIRE(run.has_value());
        const auto y = floats(run->outputs[0]);
        const auto w = ramp(size_t(4 * (4 / group) * 9));
        const int64_t perGroup = 4 / group;
        for (int64_t o : {0, 3}) {
            double expect = 0;
            const int64_t g0 = o / (4 / group) * perGroup;
            for (int64_t c = 0; c < perGroup; ++c)
                for (int64_t ky = 0; ky < 3; ++ky)
                    for (int64_t kx = 0; kx < 3; ++kx) {
                        const int64_t iy = 2 + ky - 1, ix = 2 + kx - 1;  // centre pixel (2, 2)
                        expect +=
                            w[((o * perGroup + c) * 3 + ky) * 3 + kx] * xv[((g0 + c) * 5 + iy) * 5 + ix];
                    }
            CHECK(y[size_t((o * 5 + 2) * 5 + 2)] == Approx(expect).epsilon(1e-5).margin(1e-6));
        }
    }
}

TEST_CASE("ONNX BatchNormalization after Conv is folded into its weights and bias") {
    GraphBuilder g;
    g.input("x", {1, 2, 3, 3});
    g.initializer("w", {2, 2, 1, 1}, {1, 2, 3, 4});
    g.initializer("b", {2}, {0.5f, -0.5f});
    g.initializer("scale", {2}, {2, 3});
    g.initializer("shift", {2}, {1, -1});
    g.initializer("mean", {2}, {0.25f, 0.75f});
    g.initializer("var", {2}, {4, 9});
    g.node("Conv", {"x", "w", "b"}, {"c"}, "conv");
    g.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"}, "bn");
    g.output("y", {1, 2, 3, 3});
    auto m = g.import();
    REQUIRE(m.has_value());
    CHECK(m->foldedBatchNorms == 1);
    CHECK(opTypes(*m) == std::vector<OperationType>{OperationType::CONV_2D});
    ref::ReferenceDevice device;
    const auto xv = ramp(18);
    auto run = framework::runOnnxModel(device, *m, {floatTensor({1, 2, 3, 3}, xv)});
    REQUIRE(run.has_value());
    const auto y = floats(run->outputs[0]);
    for (size_t p = 0; p < 9; ++p) {
        const double c0 = 1 * xv[p] + 2 * xv[9 + p] + 0.5, c1 = 3 * xv[p] + 4 * xv[9 + p] - 0.5;
        const double eps = 1e-5;
        CHECK(y[p] == Approx(2 * (c0 - 0.25) / std::sqrt(4 + eps) + 1).epsilon(1e-5));
        CHECK(y[9 + p] == Approx(3 * (c1 - 0.75) / std::sqrt(9 + eps) - 1).epsilon(1e-5));
    }
}

TEST_CASE("ONNX Constant nodes fold into constants; a dynamic input takes the given shape") {
    GraphBuilder g(13);
    g.input("x", {-1, 3});
    auto* c = g.node("Constant", {}, {"k"}, "const");
    auto* a = c->add_attribute();
    a->set_name("value_floats");
    a->set_type(onnx::AttributeProto::FLOATS);
    for (float v : {1.0f, 2.0f, 3.0f}) a->add_floats(v);
    g.node("Mul", {"x", "k"}, {"m"}, "mul");
    auto* clip = g.node("Clip", {"m", "", "hi"}, {"y"}, "clip");
    (void)clip;
    auto* hi = g.node("Constant", {}, {"hi"}, "hi_const");
    auto* ha = hi->add_attribute();
    ha->set_name("value_float");
    ha->set_type(onnx::AttributeProto::FLOAT);
    ha->set_f(2.5f);
    // Constant "hi" must come before its reader: move it to the front.
    auto* nodes = g.model.mutable_graph()->mutable_node();
    nodes->SwapElements(1, 3);
    nodes->SwapElements(2, 3);
    g.output("y", {-1, 3});
    CHECK_FALSE(g.import().has_value());  // N unknown
    auto m = g.import({.inputShapes = {{"x", {2, 3}}}});
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m.has_value());
    CHECK(m->foldedConstants == 2);
    CHECK(opTypes(*m) == std::vector<OperationType>{OperationType::MUL, OperationType::MINIMUM});
    ref::ReferenceDevice device;
    auto run = framework::runOnnxModel(device, *m, {floatTensor({2, 3}, {1, 1, 1, -1, 0.5f, 2})});
    REQUIRE(run.has_value());
    CHECK(floats(run->outputs[0]) == std::vector<float>{1, 2, 2.5f, -1, 1, 2.5f});
    CHECK(run->outputs[0].dims == std::vector<int64_t>{2, 3});
}

TEST_CASE("ONNX shape computations (Shape, Cast, Slice, Concat) fold so Reshape knows its shape") {
    // As PaddlePaddle exports a flatten (the PP-OCR classifier, opset 9): Reshape(x, Concat(
    // Cast(Slice(Cast(Shape(x)))), [-1])). ONNX 1.12's data propagation stops at the Cast.
    GraphBuilder g(9);
    g.input("x", {-1, 4, 1, 1});
    auto* minusOne = g.model.mutable_graph()->add_initializer();
    minusOne->set_name("minus_one");
    minusOne->set_data_type(onnx::TensorProto::INT64);
    minusOne->add_dims(1);
    minusOne->add_int64_data(-1);
    g.node("Shape", {"x"}, {"s"}, "shape");
    GraphBuilder::attr(g.node("Cast", {"s"}, {"s32"}, "cast32"), "to", int64_t{onnx::TensorProto::INT32});
    auto* slice = g.node("Slice", {"s32"}, {"n32"}, "slice");
    GraphBuilder::attr(slice, "axes", std::vector<int64_t>{0});
    GraphBuilder::attr(slice, "starts", std::vector<int64_t>{0});
    GraphBuilder::attr(slice, "ends", std::vector<int64_t>{1});
    GraphBuilder::attr(g.node("Cast", {"n32"}, {"n"}, "cast64"), "to", int64_t{onnx::TensorProto::INT64});
    GraphBuilder::attr(g.node("Concat", {"n", "minus_one"}, {"shape2"}, "concat"), "axis", int64_t{0});
    g.node("Reshape", {"x", "shape2"}, {"y"}, "reshape");
    g.output("y", {-1, -1});
    auto m = g.import({.inputShapes = {{"x", {2, 4, 1, 1}}}});
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m.has_value());
    CHECK(m->foldedConstants == 5);
    CHECK(m->onnxNodes == 1);
    CHECK(opTypes(*m) == std::vector<OperationType>{OperationType::RESHAPE});
    ref::ReferenceDevice device;
    auto run = framework::runOnnxModel(device, *m, {floatTensor({2, 4, 1, 1}, ramp(8))});
    REQUIRE(run.has_value());
    CHECK(run->outputs[0].dims == std::vector<int64_t>{2, 4});
    CHECK(floats(run->outputs[0]) == ramp(8));
}

TEST_CASE("ONNX shape computations with Gather and Unsqueeze (opset 13) fold too") {
    GraphBuilder g(13);
    g.input("x", {2, 3, 4});
    auto int64Init = [&](const std::string& name, std::vector<int64_t> dims, std::vector<int64_t> values) {
        auto* t = g.model.mutable_graph()->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::INT64);
        for (int64_t d : dims) t->add_dims(d);
        for (int64_t v : values) t->add_int64_data(v);
    };
    int64Init("one", {}, {1});  // a scalar index
    int64Init("axes", {1}, {0});
    int64Init("minus_one", {1}, {-1});
    g.node("Shape", {"x"}, {"s"}, "shape");
    g.node("Gather", {"s", "one"}, {"c"}, "gather");  // 3, a scalar
    g.node("Unsqueeze", {"c", "axes"}, {"c1"}, "unsqueeze");
    GraphBuilder::attr(g.node("Concat", {"minus_one", "c1"}, {"shape2"}, "concat"), "axis", int64_t{0});
    g.node("Reshape", {"x", "shape2"}, {"y"}, "reshape");
    g.output("y", {-1, -1});
    auto m = g.import();
    INFO((m ? std::string() : m.error().message));
    REQUIRE(m.has_value());
    CHECK(m->foldedConstants == 4);
    CHECK(opTypes(*m) == std::vector<OperationType>{OperationType::RESHAPE});
    CHECK(m->model.main.operands[m->model.main.outputIndexes[0]].dimensions == std::vector<uint32_t>{8, 3});
}

TEST_CASE("ONNX import errors name the node, its operator and the reason") {
    GraphBuilder g;
    g.input("x", {1, 4});
    g.node("Relu", {"x"}, {"r"}, "first");
    g.node("Erf", {"r"}, {"y"}, "the_erf");
    g.output("y", {1, 4});
    auto m = g.import();
    REQUIRE_FALSE(m.has_value());
    CHECK(m.error().status == framework::kOnnxUnsupported);
    CHECK_THAT(m.error().message,
               Catch::Contains("node 1 'the_erf' (Erf)") && Catch::Contains("no HAL mapping"));

    GraphBuilder mm;
    mm.input("a", {2, 2, 3});
    mm.input("b", {2, 3, 2});
    mm.node("MatMul", {"a", "b"}, {"y"}, "mm");
    mm.output("y", {2, 2, 2});
    auto m2 = mm.import();
    REQUIRE_FALSE(m2.has_value());
    CHECK_THAT(m2.error().message,
               Catch::Contains("'mm' (MatMul)") && Catch::Contains("no batched matrix product"));

    CHECK(framework::importOnnxModelBytes("not a model", {}, "junk").error().status ==
          hal::ErrorStatus::INVALID_ARGUMENT);
    GraphBuilder old(7);
    old.input("x", {1});
    old.node("Relu", {"x"}, {"y"});
    old.output("y", {1});
    // Before opset 9: upgraded by libonnx's version converter, then mapped.
    auto upgraded = old.import();
    REQUIRE(upgraded.has_value());
    CHECK(upgraded->originalOpset == 7);
    CHECK(upgraded->opset == 9);
    CHECK(opTypes(*upgraded) == std::vector<OperationType>{OperationType::RELU});
}

TEST_CASE("ONNX Gemm with transB, alpha and beta maps to FULLY_CONNECTED") {
    GraphBuilder g;
    g.input("a", {2, 3});
    g.initializer("b", {2, 3}, {1, 2, 3, 4, 5, 6});
    g.initializer("c", {2}, {10, 20});
    auto* n = g.node("Gemm", {"a", "b", "c"}, {"y"}, "fc");
    GraphBuilder::attr(n, "transB", 1);
    auto* alpha = n->add_attribute();
    alpha->set_name("alpha");
    alpha->set_type(onnx::AttributeProto::FLOAT);
    alpha->set_f(2.0f);
    g.output("y", {2, 2});
    auto m = g.import();
    REQUIRE(m.has_value());
    CHECK(opTypes(*m) == std::vector<OperationType>{OperationType::FULLY_CONNECTED});
    ref::ReferenceDevice device;
    auto run = framework::runOnnxModel(device, *m, {floatTensor({2, 3}, {1, 0, 1, 0, 1, 0})});
    REQUIRE(run.has_value());
    CHECK(floats(run->outputs[0]) == std::vector<float>{2 * 4 + 10, 2 * 10 + 20, 2 * 2 + 10, 2 * 5 + 20});
}

TEST_CASE("ONNX tensor files: .npy and .pb load, bad files fail with the path") {
    OnnxTensor t = floatTensor({2}, {1.5f, -2});
    onnx::TensorProto p;
    p.set_data_type(onnx::TensorProto::FLOAT);
    p.add_dims(2);
    p.set_raw_data(std::string(t.data.begin(), t.data.end()));
    auto parsed = framework::parseOnnxTensorProto(p.SerializeAsString(), "mem");
    REQUIRE(parsed.has_value());
    CHECK(floats(*parsed) == std::vector<float>{1.5f, -2});
    p.set_raw_data("abc");
    CHECK_THAT(framework::parseOnnxTensorProto(p.SerializeAsString(), "mem").error().message,
               Catch::Contains("raw_data"));
    CHECK_FALSE(framework::loadOnnxTensorFile("/nonexistent.npy").has_value());
    CHECK(framework::compareOnnxTensors(*parsed, t).empty());
    OnnxTensor off = floatTensor({2}, {1.5f, -2.01f});
    CHECK_THAT(framework::compareOnnxTensors(t, off), Catch::Contains("element 1"));
}
