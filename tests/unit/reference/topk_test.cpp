// TOPK_V2: hand-checked rows, including ties and quant8.
#include <catch2/catch.hpp>
#include <cstring>

#include "cts_family.h"

using namespace npu;

namespace {

template <typename T>
std::pair<std::vector<T>, std::vector<int32_t>> topk(hal::OperandType type, std::vector<uint32_t> dims,
                                                     const std::vector<T>& data, int32_t k) {
    hal::Model m;
    auto& sg = m.main;
    auto add = [&](hal::OperandType t, std::vector<uint32_t> d, hal::OperandLifeTime lt) {
        hal::Operand o;
        o.type = t;
        o.dimensions = std::move(d);
        o.lifetime = lt;
        if (t == hal::OperandType::TENSOR_QUANT8_ASYMM) o.scale = 0.5f, o.zeroPoint = 10;
        sg.operands.push_back(o);
        return uint32_t(sg.operands.size() - 1);
    };
    std::vector<uint32_t> outDims = dims;
    outDims.back() = uint32_t(k);
    const uint32_t in = add(type, dims, hal::OperandLifeTime::SUBGRAPH_INPUT);
    const uint32_t kk = add(hal::OperandType::INT32, {}, hal::OperandLifeTime::CONSTANT_COPY);
    sg.operands[kk].location = {0, 0, 4};
    m.operandValues.resize(4);
    std::memcpy(m.operandValues.data(), &k, 4);
    const uint32_t values = add(type, outDims, hal::OperandLifeTime::SUBGRAPH_OUTPUT);
    const uint32_t indices =
        add(hal::OperandType::TENSOR_INT32, outDims, hal::OperandLifeTime::SUBGRAPH_OUTPUT);
    sg.operations.push_back({hal::OperationType::TOPK_V2, {in, kk}, {values, indices}});
    sg.inputIndexes = {in};
    sg.outputIndexes = {values, indices};

    framework::TestCase tc;
    tc.model = m;
    tc.inputs = {std::vector<uint8_t>(data.size() * sizeof(T))};
    std::memcpy(tc.inputs[0].data(), data.data(), tc.inputs[0].size());
    size_t n = 1;
    for (uint32_t d : outDims) n *= d;
    tc.expectedOutputs = {std::vector<uint8_t>(n * sizeof(T)), std::vector<uint8_t>(n * 4)};
    tc.expectedOutputDims = {outDims, outDims};
    tc.outputIgnored = {false, false};
    ref::ReferenceDevice device;
    auto prepared = device.prepareModel(m);
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                    std::nullopt);
    REQUIRE(result.has_value());
    const auto out = framework::readOutputs(*request);
    std::vector<T> v(n);
    std::vector<int32_t> idx(n);
    std::memcpy(v.data(), out[0].data(), out[0].size());
    std::memcpy(idx.data(), out[1].data(), out[1].size());
    return {v, idx};
}

}  // namespace

TEST_CASE("TOPK_V2 orders by value, ties by descending index", "[unit][reference]") {
    const auto [v, idx] =
        topk<float>(hal::OperandType::TENSOR_FLOAT32, {2, 4}, {-2.0f, 0.2f, 0.8f, 0.2f, 5, 1, 5, 3}, 2);
    CHECK(v == std::vector<float>{0.8f, 0.2f, 5, 5});
    CHECK(idx == std::vector<int32_t>{2, 3, 2, 0});
}

TEST_CASE("TOPK_V2 on quant8 and int32 rows", "[unit][reference]") {
    const auto [q, qi] = topk<uint8_t>(hal::OperandType::TENSOR_QUANT8_ASYMM, {3}, {7, 250, 11}, 3);
    CHECK(q == std::vector<uint8_t>{250, 11, 7});
    CHECK(qi == std::vector<int32_t>{1, 2, 0});
    const auto [i, ii] = topk<int32_t>(hal::OperandType::TENSOR_INT32, {1, 1, 3}, {-5, 100, 7}, 1);
    CHECK(i == std::vector<int32_t>{100});
    CHECK(ii == std::vector<int32_t>{1});
}
