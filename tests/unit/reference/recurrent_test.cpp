// LSTM on the reference device: one step of a one-cell LSTM checked against the gate equations
// written out by hand (regular and CIFG), including the state outputs.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "npu/framework/cts_loader.h"
#include "npu/ref/reference_device.h"

using namespace npu;

namespace {

struct ModelBuilder {
    hal::Model model;
    uint32_t add(hal::OperandType type, std::vector<uint32_t> dims, hal::OperandLifeTime lifetime) {
        hal::Operand o;
        o.type = type;
        o.dimensions = std::move(dims);
        o.lifetime = lifetime;
        model.main.operands.push_back(o);
        return uint32_t(model.main.operands.size() - 1);
    }
    template <typename T>
    uint32_t constant(hal::OperandType type, std::vector<uint32_t> dims, T value) {
        const uint32_t i = add(type, std::move(dims), hal::OperandLifeTime::CONSTANT_COPY);
        auto& loc = model.main.operands[i].location;
        loc.offset = uint32_t(model.operandValues.size());
        loc.length = sizeof(T);
        model.operandValues.resize(model.operandValues.size() + sizeof(T));
        std::memcpy(model.operandValues.data() + loc.offset, &value, sizeof(T));
        return i;
    }
    uint32_t none() { return add(hal::OperandType::TENSOR_FLOAT32, {0}, hal::OperandLifeTime::NO_VALUE); }
};

double sigmoid(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}

}  // namespace

TEST_CASE("LSTM one step of a one-cell LSTM matches the gate equations", "[unit][reference]") {
    const bool cifg = GENERATE(false, true);
    INFO((cifg ? "CIFG" : "regular"));
    const float x = 2.0f, inW = 1.0f, recW = 0.5f, h0 = 0.25f, c0 = -0.5f;
    const float bias[4] = {0.1f, 0.2f, 0.3f, 0.4f};  // input, forget, cell, output
    using T = hal::OperandType;
    ModelBuilder b;
    std::vector<uint32_t> in;
    in.push_back(b.add(T::TENSOR_FLOAT32, {1, 1}, hal::OperandLifeTime::SUBGRAPH_INPUT));
    for (int g = 0; g < 4; ++g)
        in.push_back(g == 0 && cifg ? b.none() : b.constant(T::TENSOR_FLOAT32, {1, 1}, inW));
    for (int g = 0; g < 4; ++g)
        in.push_back(g == 0 && cifg ? b.none() : b.constant(T::TENSOR_FLOAT32, {1, 1}, recW));
    for (int p = 0; p < 3; ++p) in.push_back(b.none());
    for (int g = 0; g < 4; ++g)
        in.push_back(g == 0 && cifg ? b.none() : b.constant(T::TENSOR_FLOAT32, {1}, bias[g]));
    in.push_back(b.none());
    in.push_back(b.none());
    in.push_back(b.constant(T::TENSOR_FLOAT32, {1, 1}, h0));
    in.push_back(b.constant(T::TENSOR_FLOAT32, {1, 1}, c0));
    in.push_back(b.constant(T::INT32, {}, int32_t{4}));  // tanh
    in.push_back(b.constant(T::FLOAT32, {}, 0.0f));
    in.push_back(b.constant(T::FLOAT32, {}, 0.0f));
    std::vector<uint32_t> out = {
        b.add(T::TENSOR_FLOAT32, {1, cifg ? 3u : 4u}, hal::OperandLifeTime::SUBGRAPH_OUTPUT),
        b.add(T::TENSOR_FLOAT32, {1, 1}, hal::OperandLifeTime::SUBGRAPH_OUTPUT),
        b.add(T::TENSOR_FLOAT32, {1, 1}, hal::OperandLifeTime::SUBGRAPH_OUTPUT),
        b.add(T::TENSOR_FLOAT32, {1, 1}, hal::OperandLifeTime::SUBGRAPH_OUTPUT)};
    b.model.main.operations.push_back({hal::OperationType::LSTM, in, out});
    b.model.main.inputIndexes = {in[0]};
    b.model.main.outputIndexes = out;

    ref::ReferenceDevice device;
    auto prepared = device.prepareModel(b.model);
    REQUIRE(prepared.has_value());
    framework::TestCase tc;
    tc.model = b.model;
    tc.inputs = {std::vector<uint8_t>(4)};
    std::memcpy(tc.inputs[0].data(), &x, 4);
    tc.expectedOutputs = {std::vector<uint8_t>(cifg ? 12 : 16), std::vector<uint8_t>(4),
                          std::vector<uint8_t>(4), std::vector<uint8_t>(4)};
    tc.expectedOutputDims = {{1, cifg ? 3u : 4u}, {1, 1}, {1, 1}, {1, 1}};
    tc.outputIgnored = {true, false, false, false};
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                    std::nullopt);
    REQUIRE(result.has_value());
    const auto outputs = framework::readOutputs(*request);
    float h = 0, c = 0, y = 0;
    std::memcpy(&h, outputs[1].data(), 4);
    std::memcpy(&c, outputs[2].data(), 4);
    std::memcpy(&y, outputs[3].data(), 4);

    const double pre = double(x) * inW + double(h0) * recW;
    const double f = sigmoid(pre + bias[1]);
    const double i = cifg ? 1.0 - f : sigmoid(pre + bias[0]);
    const double g = std::tanh(pre + bias[2]);
    const double o = sigmoid(pre + bias[3]);
    const double cExpected = f * c0 + i * g;
    const double hExpected = o * std::tanh(cExpected);
    CHECK(c == Approx(cExpected).epsilon(1e-6));
    CHECK(h == Approx(hExpected).epsilon(1e-6));
    CHECK(y == h);
}
