// LSTM on the reference device: one step of a one-cell LSTM checked against the gate equations
// written out by hand (regular and CIFG), including the state outputs.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "npu/framework/cts_loader.h"
#include "npu/hal/model_builder.h"
#include "npu/ref/reference_device.h"

using namespace npu;

namespace {

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
    hal::ModelBuilder b;
    std::vector<uint32_t> in;
    in.push_back(b.input(T::TENSOR_FLOAT32, {1, 1}));
    for (int g = 0; g < 4; ++g)
        in.push_back(g == 0 && cifg ? b.noValue() : b.constant(T::TENSOR_FLOAT32, {1, 1}, std::vector{inW}));
    for (int g = 0; g < 4; ++g)
        in.push_back(g == 0 && cifg ? b.noValue() : b.constant(T::TENSOR_FLOAT32, {1, 1}, std::vector{recW}));
    for (int p = 0; p < 3; ++p) in.push_back(b.noValue());
    for (int g = 0; g < 4; ++g)
        in.push_back(g == 0 && cifg ? b.noValue() : b.constant(T::TENSOR_FLOAT32, {1}, std::vector{bias[g]}));
    in.push_back(b.noValue());
    in.push_back(b.noValue());
    in.push_back(b.constant(T::TENSOR_FLOAT32, {1, 1}, std::vector{h0}));
    in.push_back(b.constant(T::TENSOR_FLOAT32, {1, 1}, std::vector{c0}));
    in.push_back(b.constant(T::INT32, {}, std::vector{int32_t{4}}));  // tanh
    in.push_back(b.constant(T::FLOAT32, {}, std::vector{0.0f}));
    in.push_back(b.constant(T::FLOAT32, {}, std::vector{0.0f}));
    std::vector<uint32_t> out = {b.output(T::TENSOR_FLOAT32, {1, cifg ? 3u : 4u}),
                                 b.output(T::TENSOR_FLOAT32, {1, 1}), b.output(T::TENSOR_FLOAT32, {1, 1}),
                                 b.output(T::TENSOR_FLOAT32, {1, 1})};
    b.operation(hal::OperationType::LSTM, in, out);

    ref::ReferenceDevice device;
    auto prepared = device.prepareModel(b.model());
    REQUIRE(prepared.has_value());
    framework::TestCase tc;
    tc.model = b.model();
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
