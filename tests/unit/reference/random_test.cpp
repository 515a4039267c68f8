// RANDOM_MULTINOMIAL: determinism per seed and softmax frequencies; the Philox generator behind it.
#include "../../../reference/src/ops/random.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "cts_family.h"

using namespace npu;

TEST_CASE("Philox4x32-10 matches the published known-answer vectors", "[unit][reference]") {
    // Random123 kat_vectors: philox4x32 10 rounds, counter 0 and key 0.
    ref::ops::PhiloxRandom zero(0, 0);
    const auto block = zero.next();
    CHECK(block == std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u});
}

namespace {

hal::Model multinomialModel(std::vector<float> logits, int32_t samples) {
    hal::Model m;
    auto& sg = m.main;
    auto add = [&](hal::OperandType t, std::vector<uint32_t> dims, hal::OperandLifeTime lt) {
        hal::Operand o;
        o.type = t;
        o.dimensions = std::move(dims);
        o.lifetime = lt;
        sg.operands.push_back(o);
        return uint32_t(sg.operands.size() - 1);
    };
    const uint32_t in = add(hal::OperandType::TENSOR_FLOAT32, {1, uint32_t(logits.size())},
                            hal::OperandLifeTime::SUBGRAPH_INPUT);
    const uint32_t count = add(hal::OperandType::INT32, {}, hal::OperandLifeTime::CONSTANT_COPY);
    sg.operands[count].location = {0, 0, 4};
    m.operandValues.resize(4);
    std::memcpy(m.operandValues.data(), &samples, 4);
    const uint32_t seeds = add(hal::OperandType::TENSOR_INT32, {2}, hal::OperandLifeTime::SUBGRAPH_INPUT);
    const uint32_t out =
        add(hal::OperandType::TENSOR_INT32, {1, uint32_t(samples)}, hal::OperandLifeTime::SUBGRAPH_OUTPUT);
    sg.operations.push_back({hal::OperationType::RANDOM_MULTINOMIAL, {in, count, seeds}, {out}});
    sg.inputIndexes = {in, seeds};
    sg.outputIndexes = {out};
    return m;
}

std::vector<int32_t> sample(hal::IPreparedModel& prepared, const std::vector<float>& logits,
                            std::array<int32_t, 2> seeds, int32_t samples) {
    framework::TestCase tc;
    tc.inputs.resize(2);
    tc.inputs[0].resize(logits.size() * 4);
    std::memcpy(tc.inputs[0].data(), logits.data(), tc.inputs[0].size());
    tc.inputs[1].resize(8);
    std::memcpy(tc.inputs[1].data(), seeds.data(), 8);
    tc.expectedOutputs = {std::vector<uint8_t>(size_t(samples) * 4)};
    tc.expectedOutputDims = {{1, uint32_t(samples)}};
    tc.outputIgnored = {true};
    tc.model = multinomialModel(logits, samples);
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    auto result =
        prepared.executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    REQUIRE(result.has_value());
    const auto bytes = framework::readOutputs(*request)[0];
    std::vector<int32_t> out(static_cast<size_t>(samples));
    std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
}

}  // namespace

TEST_CASE("RANDOM_MULTINOMIAL is deterministic per seed and follows softmax", "[unit][reference]") {
    const std::vector<float> logits = {0.0f, std::log(3.0f)};  // probabilities 1/4, 3/4
    ref::ReferenceDevice device;
    auto prepared = device.prepareModel(multinomialModel(logits, 4000));
    REQUIRE(prepared.has_value());
    const auto a = sample(**prepared, logits, {1, 2}, 4000);
    const auto b = sample(**prepared, logits, {1, 2}, 4000);
    const auto c = sample(**prepared, logits, {3, 4}, 4000);
    CHECK(a == b);
    CHECK(a != c);
    const auto ones = std::count(a.begin(), a.end(), 1);
    CHECK(std::abs(double(ones) / 4000.0 - 0.75) < 0.03);
    CHECK(std::all_of(a.begin(), a.end(), [](int32_t v) { return v == 0 || v == 1; }));
}
