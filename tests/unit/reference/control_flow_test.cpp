// IF and WHILE on hand-built models: branch choice, loop counts, state-only and input-only loop
// values, dynamic output shapes and OUTPUT_INSUFFICIENT_SIZE through a loop, nested loops, the
// loop timeout, and models rejected at preparation.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>

#include "../../../reference/src/prepared_model.h"
#include "npu/framework/cts_loader.h"
#include "npu/hal/model_builder.h"
#include "npu/ref/reference_device.h"

using namespace npu;
using hal::OperandLifeTime;
using hal::OperandType;
using hal::OperationType;

namespace {

constexpr int kMain = -1;

// hal's SubgraphBuilder addressed by subgraph number; -1 is main.
class Builder {
public:
    int subgraph() {
        model.referenced.emplace_back();
        return static_cast<int>(model.referenced.size() - 1);
    }
    uint32_t input(int g, OperandType type, std::vector<uint32_t> dims) {
        return at(g).input(type, std::move(dims));
    }
    uint32_t output(int g, OperandType type, std::vector<uint32_t> dims) {
        return at(g).output(type, std::move(dims));
    }
    uint32_t temp(int g, OperandType type, std::vector<uint32_t> dims) {
        return at(g).temp(type, std::move(dims));
    }
    template <typename T>
    uint32_t constant(int g, OperandType type, std::vector<uint32_t> dims, std::vector<T> values) {
        return at(g).constant(type, std::move(dims), values);
    }
    uint32_t scalar(int g, int32_t v) { return at(g).scalar(v); }
    uint32_t ref(int g, int target) { return at(g).subgraph(static_cast<uint32_t>(target)); }
    void op(int g, OperationType type, std::vector<uint32_t> ins, std::vector<uint32_t> outs) {
        at(g).operation(type, std::move(ins), std::move(outs));
    }
    // out = a + b (ADD, activation NONE).
    void add2(int g, uint32_t a, uint32_t b, uint32_t out) {
        op(g, OperationType::ADD, {a, b, scalar(g, 0)}, {out});
    }
    hal::Subgraph& sg(int g) { return g < 0 ? model.main : model.referenced[g]; }

    hal::Model model;

private:
    hal::SubgraphBuilder at(int g) { return hal::SubgraphBuilder(model, sg(g)); }
};

template <typename T>
std::vector<uint8_t> bytes(std::vector<T> v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}
template <typename T>
std::vector<T> values(const std::vector<uint8_t>& b) {
    std::vector<T> v(b.size() / sizeof(T));
    std::memcpy(v.data(), b.data(), b.size());
    return v;
}

struct Run {
    std::vector<std::vector<uint8_t>> outputs;
    std::vector<hal::OutputShape> shapes;
};

// Prepares and executes `model`; each output buffer gets outputBytes[k] bytes.
Result<Run> run(const hal::Model& model, std::vector<std::vector<uint8_t>> inputs,
                std::vector<size_t> outputBytes,
                std::optional<std::chrono::nanoseconds> loopTimeout = std::nullopt,
                hal::Deadline deadline = std::nullopt) {
    framework::TestCase tc;
    tc.model = model;
    tc.inputs = std::move(inputs);
    for (size_t n : outputBytes) {
        tc.expectedOutputs.emplace_back(n);
        tc.expectedOutputDims.emplace_back();
        tc.outputIgnored.push_back(false);
    }
    ref::ReferenceDevice device;
    auto prepared = NPU_TRY(device.prepareModel(model));
    auto request = NPU_TRY(framework::makeRequest(tc));
    auto result = NPU_TRY(
        prepared->executeSynchronously(request.request, hal::MeasureTiming::NO, deadline, loopTimeout));
    return Run{framework::readOutputs(request), result.outputShapes};
}

// IF(cond, then: x + 1, else: x + 10) on float32 [2].
hal::Model ifModel() {
    Builder b;
    const int thenG = b.subgraph(), elseG = b.subgraph();
    for (auto [g, c] : {std::pair{thenG, 1.0f}, std::pair{elseG, 10.0f}}) {
        const uint32_t x = b.input(g, OperandType::TENSOR_FLOAT32, {2});
        const uint32_t y = b.output(g, OperandType::TENSOR_FLOAT32, {2});
        b.add2(g, x, b.constant<float>(g, OperandType::TENSOR_FLOAT32, {1}, {c}), y);
    }
    const uint32_t cond = b.input(kMain, OperandType::TENSOR_BOOL8, {1});
    const uint32_t x = b.input(kMain, OperandType::TENSOR_FLOAT32, {2});
    const uint32_t y = b.output(kMain, OperandType::TENSOR_FLOAT32, {2});
    b.op(kMain, OperationType::IF, {cond, b.ref(kMain, thenG), b.ref(kMain, elseG), x}, {y});
    return b.model;
}

// WHILE (i < n) { acc = acc + x; i = i + 1 } with acc input-output (float32 [2]), i state-only
// (int32 [1]), n and x input-only; returns acc. When `dynamicAcc`, the body appends x to acc
// (CONCATENATION) instead, so acc's length is known only at execution.
hal::Model sumLoop(bool dynamicAcc = false) {
    Builder b;
    const int condG = b.subgraph(), bodyG = b.subgraph();
    const std::vector<uint32_t> accDims = dynamicAcc ? std::vector<uint32_t>{0} : std::vector<uint32_t>{2};
    auto loopInputs = [&](int g) {
        return std::vector<uint32_t>{
            b.input(g, OperandType::TENSOR_FLOAT32, accDims), b.input(g, OperandType::TENSOR_INT32, {1}),
            b.input(g, OperandType::TENSOR_INT32, {1}), b.input(g, OperandType::TENSOR_FLOAT32, {2})};
    };
    {
        const auto in = loopInputs(condG);
        b.op(condG, OperationType::LESS, {in[1], in[2]}, {b.output(condG, OperandType::TENSOR_BOOL8, {1})});
    }
    {
        const auto in = loopInputs(bodyG);
        const uint32_t acc = b.output(bodyG, OperandType::TENSOR_FLOAT32, accDims);
        const uint32_t i = b.output(bodyG, OperandType::TENSOR_INT32, {1});
        if (dynamicAcc) {
            b.op(bodyG, OperationType::CONCATENATION, {in[0], in[3], b.scalar(bodyG, 0)}, {acc});
        } else {
            b.add2(bodyG, in[0], in[3], acc);
        }
        b.add2(bodyG, in[1], b.constant<int32_t>(bodyG, OperandType::TENSOR_INT32, {1}, {1}), i);
    }
    const uint32_t acc0 = b.input(kMain, OperandType::TENSOR_FLOAT32, {2});
    const uint32_t n = b.input(kMain, OperandType::TENSOR_INT32, {1});
    const uint32_t x = b.input(kMain, OperandType::TENSOR_FLOAT32, {2});
    const uint32_t i0 = b.constant<int32_t>(kMain, OperandType::TENSOR_INT32, {1}, {0});
    const uint32_t acc = b.output(kMain, OperandType::TENSOR_FLOAT32, accDims);
    b.op(kMain, OperationType::WHILE, {b.ref(kMain, condG), b.ref(kMain, bodyG), acc0, i0, n, x}, {acc});
    return b.model;
}

}  // namespace

TEST_CASE("IF runs the branch its condition chooses", "[reference][control_flow]") {
    const auto model = ifModel();
    for (auto [cond, expected] : {std::pair{uint8_t{1}, std::vector<float>{3, 5}},
                                  std::pair{uint8_t{0}, std::vector<float>{12, 14}}}) {
        auto r = run(model, {{cond}, bytes<float>({2, 4})}, {8});
        REQUIRE(r.has_value());
        CHECK(values<float>(r->outputs[0]) == expected);
        CHECK(r->shapes[0].dimensions == std::vector<uint32_t>{2});
    }
}

TEST_CASE("IF with an omitted condition fails at execution", "[reference][control_flow]") {
    auto r = run(ifModel(), {{}, bytes<float>({2, 4})}, {8});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
}

TEST_CASE("WHILE carries input-output, state-only and input-only values", "[reference][control_flow]") {
    const auto model = sumLoop();
    for (int32_t n : {0, 1, 5}) {
        INFO("n = " << n);
        auto r = run(model, {bytes<float>({1, 2}), bytes<int32_t>({n}), bytes<float>({0.5f, 10})}, {8});
        REQUIRE(r.has_value());
        CHECK(values<float>(r->outputs[0]) == std::vector<float>{1 + 0.5f * n, 2 + 10.0f * n});
    }
}

TEST_CASE("WHILE output shapes resolved at execution, and OUTPUT_INSUFFICIENT_SIZE",
          "[reference][control_flow]") {
    const auto model = sumLoop(/*dynamicAcc=*/true);
    auto r = run(model, {bytes<float>({1, 2}), bytes<int32_t>({2}), bytes<float>({3, 4})}, {6 * 4});
    REQUIRE(r.has_value());
    CHECK(r->shapes[0].dimensions == std::vector<uint32_t>{6});
    CHECK(values<float>(r->outputs[0]) == std::vector<float>{1, 2, 3, 4, 3, 4});

    auto small = run(model, {bytes<float>({1, 2}), bytes<int32_t>({3}), bytes<float>({3, 4})}, {6 * 4});
    REQUIRE_FALSE(small.has_value());
    CHECK(small.error().status == hal::ErrorStatus::OUTPUT_INSUFFICIENT_SIZE);
    REQUIRE(small.error().outputShapes.size() == 1);
    CHECK(small.error().outputShapes[0].dimensions == std::vector<uint32_t>{8});
    CHECK_FALSE(small.error().outputShapes[0].isSufficient);
}

TEST_CASE("nested WHILE loops and an IF inside a loop body", "[reference][control_flow]") {
    // for i < m: { for j < m: acc += 1 }; then IF(flag) acc + 100 else acc + 0: m * m (+ 100).
    // Both loops use the counter signature (acc input-output, counter state-only, limit
    // input-only); the outer body runs the inner loop.
    Builder b;
    const int innerCond = b.subgraph(), innerBody = b.subgraph(), outerCond = b.subgraph(),
              outerBody = b.subgraph();
    const int plus100 = b.subgraph(), same = b.subgraph();
    auto counterInputs = [&](int g) {  // acc, counter, limit
        return std::vector<uint32_t>{b.input(g, OperandType::TENSOR_INT32, {1}),
                                     b.input(g, OperandType::TENSOR_INT32, {1}),
                                     b.input(g, OperandType::TENSOR_INT32, {1})};
    };
    auto one = [&](int g) { return b.constant<int32_t>(g, OperandType::TENSOR_INT32, {1}, {1}); };
    for (int g : {innerCond, outerCond}) {
        const auto in = counterInputs(g);
        b.op(g, OperationType::LESS, {in[1], in[2]}, {b.output(g, OperandType::TENSOR_BOOL8, {1})});
    }
    {
        const auto in = counterInputs(innerBody);
        b.add2(innerBody, in[0], one(innerBody), b.output(innerBody, OperandType::TENSOR_INT32, {1}));
        b.add2(innerBody, in[1], one(innerBody), b.output(innerBody, OperandType::TENSOR_INT32, {1}));
    }
    {
        const auto in = counterInputs(outerBody);
        const uint32_t acc = b.output(outerBody, OperandType::TENSOR_INT32, {1});
        const uint32_t j0 = b.constant<int32_t>(outerBody, OperandType::TENSOR_INT32, {1}, {0});
        b.op(outerBody, OperationType::WHILE,
             {b.ref(outerBody, innerCond), b.ref(outerBody, innerBody), in[0], j0, in[2]}, {acc});
        b.add2(outerBody, in[1], one(outerBody), b.output(outerBody, OperandType::TENSOR_INT32, {1}));
    }
    {
        const uint32_t x = b.input(plus100, OperandType::TENSOR_INT32, {1});
        b.add2(plus100, x, b.constant<int32_t>(plus100, OperandType::TENSOR_INT32, {1}, {100}),
               b.output(plus100, OperandType::TENSOR_INT32, {1}));
        const uint32_t y = b.input(same, OperandType::TENSOR_INT32, {1});
        b.add2(same, y, b.constant<int32_t>(same, OperandType::TENSOR_INT32, {1}, {0}),
               b.output(same, OperandType::TENSOR_INT32, {1}));
    }
    const uint32_t m = b.input(kMain, OperandType::TENSOR_INT32, {1});
    const uint32_t flag = b.input(kMain, OperandType::TENSOR_BOOL8, {1});
    const uint32_t zero = b.constant<int32_t>(kMain, OperandType::TENSOR_INT32, {1}, {0});
    const uint32_t i0 = b.constant<int32_t>(kMain, OperandType::TENSOR_INT32, {1}, {0});
    const uint32_t loopOut = b.temp(kMain, OperandType::TENSOR_INT32, {1});
    b.op(kMain, OperationType::WHILE, {b.ref(kMain, outerCond), b.ref(kMain, outerBody), zero, i0, m},
         {loopOut});
    const uint32_t out = b.output(kMain, OperandType::TENSOR_INT32, {1});
    b.op(kMain, OperationType::IF, {flag, b.ref(kMain, plus100), b.ref(kMain, same), loopOut}, {out});

    for (auto [mValue, flagValue, expected] :
         {std::tuple{3, uint8_t{0}, 9}, std::tuple{4, uint8_t{1}, 116}, std::tuple{0, uint8_t{1}, 100}}) {
        auto r = run(b.model, {bytes<int32_t>({mValue}), {flagValue}}, {4});
        REQUIRE(r.has_value());
        CHECK(values<int32_t>(r->outputs[0]) == std::vector<int32_t>{expected});
    }
}

// WHILE (i < 1) { i = i + 0 }: never ends for i = 0, returns 1 for i = 1.
hal::Model stuckLoop() {
    Builder b;
    const int condG = b.subgraph(), bodyG = b.subgraph();
    {
        const uint32_t i = b.input(condG, OperandType::TENSOR_INT32, {1});
        b.op(condG, OperationType::LESS, {i, b.constant<int32_t>(condG, OperandType::TENSOR_INT32, {1}, {1})},
             {b.output(condG, OperandType::TENSOR_BOOL8, {1})});
        const uint32_t j = b.input(bodyG, OperandType::TENSOR_INT32, {1});
        b.add2(bodyG, j, b.constant<int32_t>(bodyG, OperandType::TENSOR_INT32, {1}, {0}),
               b.output(bodyG, OperandType::TENSOR_INT32, {1}));
    }
    const uint32_t i0 = b.input(kMain, OperandType::TENSOR_INT32, {1});
    const uint32_t out = b.output(kMain, OperandType::TENSOR_INT32, {1});
    b.op(kMain, OperationType::WHILE, {b.ref(kMain, condG), b.ref(kMain, bodyG), i0}, {out});
    return b.model;
}

TEST_CASE("a WHILE that never ends stops at the loop timeout", "[reference][control_flow]") {
    const hal::Model model = stuckLoop();
    auto r = run(model, {bytes<int32_t>({0})}, {4}, std::chrono::milliseconds(30));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT);
    CHECK(r.error().message.find("WHILE") != std::string::npos);

    // The same model ends normally when the loop does.
    auto ok = run(model, {bytes<int32_t>({1})}, {4}, std::chrono::milliseconds(30));
    REQUIRE(ok.has_value());
    CHECK(values<int32_t>(ok->outputs[0]) == std::vector<int32_t>{1});
}

TEST_CASE("a WHILE that never ends stops at the execution deadline", "[reference][control_flow]") {
    // The loop timeout (15 s) is far away; the deadline (50 ms from now) ends the loop.
    auto r = run(stuckLoop(), {bytes<int32_t>({0})}, {4}, std::chrono::seconds(15),
                 std::chrono::steady_clock::now() + std::chrono::milliseconds(50));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT);
    CHECK(r.error().message.find("deadline") != std::string::npos);
}

TEST_CASE("the loop timeout defaults to 2 s and is clamped to 15 s", "[reference][control_flow]") {
    using namespace std::chrono_literals;
    CHECK(ref::effectiveLoopTimeout(std::nullopt) == 2s);
    CHECK(ref::effectiveLoopTimeout(500ms) == 500ms);
    CHECK(ref::effectiveLoopTimeout(15s) == 15s);
    CHECK(ref::effectiveLoopTimeout(60s) == 15s);
    CHECK(ref::effectiveLoopTimeout(-1s) == 0s);
}

TEST_CASE("bad control flow is rejected at preparation", "[reference][control_flow]") {
    ref::ReferenceDevice device;
    SECTION("a SUBGRAPH operand naming no subgraph") {
        auto model = ifModel();
        model.main.operands[model.main.operations[0].inputs[2]].location.offset = 7;
        auto prepared = device.prepareModel(model);
        REQUIRE_FALSE(prepared.has_value());
        CHECK(prepared.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    }
    SECTION("a branch with another number of inputs") {
        auto model = ifModel();
        auto& thenBranch = model.referenced[0];
        hal::Operand extra = thenBranch.operands[thenBranch.inputIndexes[0]];
        thenBranch.operands.push_back(extra);
        thenBranch.inputIndexes.push_back(static_cast<uint32_t>(thenBranch.operands.size() - 1));
        auto prepared = device.prepareModel(model);
        REQUIRE_FALSE(prepared.has_value());
        CHECK(prepared.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    }
    SECTION("a branch output of another type") {
        auto model = ifModel();
        model.referenced[1].operands[model.referenced[1].outputIndexes[0]].type = OperandType::TENSOR_INT32;
        auto prepared = device.prepareModel(model);
        REQUIRE_FALSE(prepared.has_value());
    }
    SECTION("a WHILE condition that does not return TENSOR_BOOL8 [1]") {
        auto model = sumLoop();
        auto& cond = model.referenced[0];
        cond.operands[cond.outputIndexes[0]].dimensions = {2};
        auto prepared = device.prepareModel(model);
        REQUIRE_FALSE(prepared.has_value());
    }
    SECTION("an invalid operation inside a branch fails preparation, not execution") {
        auto model = ifModel();
        auto& elseBranch = model.referenced[1];
        // ADD's activation must be a constant in [0, 3].
        const uint32_t act = elseBranch.operations[0].inputs[2];
        const uint32_t offset = elseBranch.operands[act].location.offset;
        const int32_t bad = 9;
        std::memcpy(model.operandValues.data() + offset, &bad, 4);
        auto prepared = device.prepareModel(model);
        REQUIRE_FALSE(prepared.has_value());
        CHECK(prepared.error().message.find("referenced subgraph 1") != std::string::npos);
    }
    // Both models are invalid (hal::validateModel): the reference validates before it answers
    // getSupportedOperations, so they are INVALID_ARGUMENT, not "unsupported" (issue 14).
    SECTION("an OEM operation inside a branch makes the model invalid") {
        auto model = ifModel();
        model.referenced[0].operations[0].type = OperationType::OEM_OPERATION;
        auto supported = device.getSupportedOperations(model);
        REQUIRE_FALSE(supported.has_value());
        CHECK(supported.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
        CHECK_FALSE(device.prepareModel(model).has_value());
    }
    SECTION("an IF condition that is not TENSOR_BOOL8 makes the model invalid") {
        auto model = ifModel();
        model.main.operands[model.main.operations[0].inputs[0]].type = OperandType::TENSOR_INT32;
        auto supported = device.getSupportedOperations(model);
        REQUIRE_FALSE(supported.has_value());
        CHECK(supported.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
        CHECK_FALSE(device.prepareModel(model).has_value());
    }
}

TEST_CASE("zero-sized tensors pass through IF and WHILE", "[reference][control_flow]") {
    // z = SLICE(x, [0], [0]) is empty. IF(cond, then: x + 1 (z unused), else: z + z), and a WHILE
    // that carries z (z = z + z) while it counts to 3.
    Builder b;
    const int thenG = b.subgraph(), elseG = b.subgraph(), condG = b.subgraph(), bodyG = b.subgraph();
    for (int g : {thenG, elseG}) {
        const uint32_t z = b.input(g, OperandType::TENSOR_FLOAT32, {0});
        const uint32_t x = b.input(g, OperandType::TENSOR_FLOAT32, {2});
        const uint32_t out = b.output(g, OperandType::TENSOR_FLOAT32, {0});
        if (g == thenG) {
            b.add2(g, x, b.constant<float>(g, OperandType::TENSOR_FLOAT32, {1}, {1.0f}), out);
        } else {
            b.add2(g, z, z, out);
        }
    }
    {
        b.input(condG, OperandType::TENSOR_FLOAT32, {0});
        const uint32_t i = b.input(condG, OperandType::TENSOR_INT32, {1});
        b.op(condG, OperationType::LESS, {i, b.constant<int32_t>(condG, OperandType::TENSOR_INT32, {1}, {3})},
             {b.output(condG, OperandType::TENSOR_BOOL8, {1})});
        const uint32_t z = b.input(bodyG, OperandType::TENSOR_FLOAT32, {0});
        const uint32_t j = b.input(bodyG, OperandType::TENSOR_INT32, {1});
        b.add2(bodyG, z, z, b.output(bodyG, OperandType::TENSOR_FLOAT32, {0}));
        b.add2(bodyG, j, b.constant<int32_t>(bodyG, OperandType::TENSOR_INT32, {1}, {1}),
               b.output(bodyG, OperandType::TENSOR_INT32, {1}));
    }
    const uint32_t cond = b.input(kMain, OperandType::TENSOR_BOOL8, {1});
    const uint32_t x = b.input(kMain, OperandType::TENSOR_FLOAT32, {2});
    const uint32_t z = b.temp(kMain, OperandType::TENSOR_FLOAT32, {0});
    b.op(kMain, OperationType::SLICE,
         {x, b.constant<int32_t>(kMain, OperandType::TENSOR_INT32, {1}, {0}),
          b.constant<int32_t>(kMain, OperandType::TENSOR_INT32, {1}, {0})},
         {z});
    const uint32_t ifOut = b.output(kMain, OperandType::TENSOR_FLOAT32, {0});
    b.op(kMain, OperationType::IF, {cond, b.ref(kMain, thenG), b.ref(kMain, elseG), z, x}, {ifOut});
    const uint32_t loopOut = b.output(kMain, OperandType::TENSOR_FLOAT32, {0});
    const uint32_t loopCount = b.output(kMain, OperandType::TENSOR_INT32, {1});
    b.op(kMain, OperationType::WHILE,
         {b.ref(kMain, condG), b.ref(kMain, bodyG), z,
          b.constant<int32_t>(kMain, OperandType::TENSOR_INT32, {1}, {0})},
         {loopOut, loopCount});

    auto taken = run(b.model, {{1}, bytes<float>({2, 4})}, {8, 0, 4});
    REQUIRE(taken.has_value());
    CHECK(taken->shapes[0].dimensions == std::vector<uint32_t>{2});
    CHECK(values<float>(taken->outputs[0]) == std::vector<float>{3, 5});
    CHECK(taken->shapes[1].dimensions == std::vector<uint32_t>{0});
    CHECK(values<int32_t>(taken->outputs[2]) == std::vector<int32_t>{3});

    auto empty = run(b.model, {{0}, bytes<float>({2, 4})}, {8, 0, 4});
    REQUIRE(empty.has_value());
    CHECK(empty->shapes[0].dimensions == std::vector<uint32_t>{0});
}
