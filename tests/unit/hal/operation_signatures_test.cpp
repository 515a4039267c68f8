// The signature table: it covers every NN HAL 1.3 operation, each row's example signature
// validates, and for every row (so every operation) adding an input or changing input 0's type
// is rejected. IF and WHILE are covered by validate_model_test.cpp.
#include "operation_signatures.h"

#include <catch2/catch.hpp>
#include <set>

#include "model_builder.h"
#include "npu/hal/validation.h"

using namespace npu;
using namespace npu::hal;
using namespace npu::hal::test;

namespace {

// A one-operation model whose inputs and outputs have the given types (tensors [1,1,1,1]).
Model singleOperationModel(OperationType type, const std::vector<OperandType>& inputs,
                           const std::vector<OperandType>& outputs) {
    Model m;
    SubgraphBuilder b(m, m.main);
    auto add = [&](OperandType t, bool isInput) {
        const bool scalar = isScalarType(t);
        const std::vector<uint32_t> dims =
            scalar ? std::vector<uint32_t>{} : std::vector<uint32_t>{1, 1, 1, 1};
        const float scale =
            isQuantizedType(t) && t != OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL ? 1.0f : 0.0f;
        const uint32_t i = isInput ? b.input(t, dims, scale) : b.output(t, dims, scale);
        if (t == OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL)
            m.main.operands[i].channelQuant = SymmPerChannelQuantParams{{1.0f}, 0};
        return i;
    };
    std::vector<uint32_t> in;
    std::vector<uint32_t> out;
    for (OperandType t : inputs) in.push_back(add(t, true));
    for (OperandType t : outputs) out.push_back(add(t, false));
    b.operation(type, in, out);
    return m;
}

std::string rowName(const SignatureRow& row) {
    std::string s(toString(row.type));
    if (!row.variant.empty()) s += " (" + std::string(row.variant) + ")";
    return s;
}

}  // namespace

TEST_CASE("the signature table covers every HAL 1.3 operation", "[signatures]") {
    std::set<int32_t> covered;
    for (const auto& row : signatureTable()) covered.insert(static_cast<int32_t>(row.type));
    covered.insert(static_cast<int32_t>(OperationType::IF));     // validation.cpp
    covered.insert(static_cast<int32_t>(OperationType::WHILE));  // validation.cpp
    CHECK(covered.size() == 102);
    for (int32_t i = 0; i <= kOperationTypeLast; ++i) {
        INFO("operation " << toString(static_cast<OperationType>(i)));
        CHECK(covered.count(i) == 1);
    }
}

TEST_CASE("every row's example signature validates", "[signatures]") {
    for (const auto& row : signatureTable()) {
        const ConcreteSignature sig = exampleSignature(row);
        INFO(rowName(row));
        requireValid(validateModel(singleOperationModel(row.type, sig.inputs, sig.outputs)));
    }
}

TEST_CASE("every operation rejects an extra input", "[signatures]") {
    for (const auto& row : signatureTable()) {
        ConcreteSignature sig = exampleSignature(row);
        sig.inputs.push_back(OperandType::INT32);  // as VTS addOperationInputTest
        INFO(rowName(row));
        requireInvalid(validateModel(singleOperationModel(row.type, sig.inputs, sig.outputs)),
                       {"main subgraph: operation 0 (" + std::string(toString(row.type)) + ")"});
    }
}

TEST_CASE("every operation rejects a missing input list", "[signatures]") {
    for (const auto& row : signatureTable()) {
        const ConcreteSignature sig = exampleSignature(row);
        INFO(rowName(row));
        requireInvalid(validateModel(singleOperationModel(row.type, {}, sig.outputs)),
                       {"operation 0 (" + std::string(toString(row.type)) + "): has 0 inputs"});
    }
}

TEST_CASE("every operation rejects a wrong type of input 0", "[signatures]") {
    for (const auto& row : signatureTable()) {
        ConcreteSignature sig = exampleSignature(row);
        OperandType& first = sig.inputs[0];
        if (row.type == OperationType::RANK)
            first = OperandType::INT32;  // RANK takes any tensor type
        else
            first =
                first == OperandType::TENSOR_BOOL8 ? OperandType::TENSOR_FLOAT32 : OperandType::TENSOR_BOOL8;
        INFO(rowName(row));
        requireInvalid(validateModel(singleOperationModel(row.type, sig.inputs, sig.outputs)),
                       {"operation 0 (" + std::string(toString(row.type)) + ")", "has type"});
    }
}

TEST_CASE("every operation rejects a wrong output type", "[signatures]") {
    for (const auto& row : signatureTable()) {
        ConcreteSignature sig = exampleSignature(row);
        // SUBGRAPH is never an operation output, so this is wrong for every signature.
        sig.outputs[0] = OperandType::FLOAT16;
        INFO(rowName(row));
        requireInvalid(validateModel(singleOperationModel(row.type, sig.inputs, sig.outputs)),
                       {"operation 0 (" + std::string(toString(row.type)) + ")", "output 0"});
    }
}

namespace {

// VTS ValidateModel's removeOperationInputSkip: the removals that leave a valid model because
// the input was an optional trailing parameter (layout, axis, align_corners...). Every other
// removal must be rejected.
bool vtsRemovalStaysValid(OperationType type, size_t count, size_t input) {
    switch (type) {
        case OperationType::CONCATENATION:
            return count > 2 && input != count - 1;
        case OperationType::DEPTHWISE_CONV_2D:
            return (count == 12 && input == 11) || (count == 9 && input == 8);
        case OperationType::CONV_2D:
        case OperationType::AVERAGE_POOL_2D:
        case OperationType::MAX_POOL_2D:
        case OperationType::L2_POOL_2D:
            return (count == 11 && input == 10) || (count == 8 && input == 7);
        case OperationType::RESIZE_BILINEAR:
            return count >= 4 && input >= 3;
        case OperationType::RESIZE_NEAREST_NEIGHBOR:
            return count >= 5 && input >= 3;
        case OperationType::SPACE_TO_DEPTH:
        case OperationType::DEPTH_TO_SPACE:
        case OperationType::BATCH_TO_SPACE_ND:
            return count == 3 && input == 2;
        case OperationType::SPACE_TO_BATCH_ND:
            return count == 4 && input == 3;
        case OperationType::L2_NORMALIZATION:
            return count == 2 && input == 1;
        case OperationType::LOCAL_RESPONSE_NORMALIZATION:
            return count == 6 && input == 5;
        case OperationType::SOFTMAX:
            return count == 3 && input == 2;
        default:
            return false;
    }
}

}  // namespace

TEST_CASE("removing any input is rejected unless VTS says the input was optional", "[signatures]") {
    // E.g. SQUEEZE and TRANSPOSE always have 2 inputs: their second may be omitted (NO_VALUE),
    // never removed.
    for (const auto& row : signatureTable()) {
        const ConcreteSignature full = exampleSignature(row);
        std::vector<uint32_t> counts = row.inputCounts;
        if (counts.empty()) counts = {static_cast<uint32_t>(full.inputs.size())};
        for (uint32_t count : counts) {
            if (count > full.inputs.size()) continue;
            for (size_t input = 0; input < count; ++input) {
                if (vtsRemovalStaysValid(row.type, count, input)) continue;
                std::vector<OperandType> inputs(full.inputs.begin(), full.inputs.begin() + count);
                inputs.erase(inputs.begin() + static_cast<std::ptrdiff_t>(input));
                INFO(rowName(row) << " with " << count << " inputs, input " << input << " removed");
                CHECK_FALSE(validateModel(singleOperationModel(row.type, inputs, full.outputs)).has_value());
            }
        }
    }
}

TEST_CASE("SQUEEZE with its second input removed is rejected naming the operation and the count",
          "[signatures]") {
    auto r = validateModel(singleOperationModel(OperationType::SQUEEZE, {OperandType::TENSOR_FLOAT32},
                                                {OperandType::TENSOR_FLOAT32}));
    requireInvalid(r, {"operation 0 (SQUEEZE)", "1 input"});
}

TEST_CASE("per-version variants", "[signatures]") {
    const auto F = OperandType::TENSOR_FLOAT32;
    const auto I = OperandType::INT32;
    const auto B = OperandType::BOOL;
    SECTION("LSTM has 23 or 27 inputs") {
        std::vector<OperandType> in(20, F);
        in.insert(in.end(), {I, OperandType::FLOAT32, OperandType::FLOAT32});
        const std::vector<OperandType> out(4, F);
        requireValid(validateModel(singleOperationModel(OperationType::LSTM, in, out)));
        in.insert(in.end(), {F, F, F, F});
        requireValid(validateModel(singleOperationModel(OperationType::LSTM, in, out)));
        in.pop_back();
        requireInvalid(validateModel(singleOperationModel(OperationType::LSTM, in, out)),
                       {"operation 0 (LSTM): has 26 inputs, expected 23 or 27"});
    }
    SECTION("BIDIRECTIONAL_SEQUENCE_LSTM has 61 inputs") {
        std::vector<OperandType> in(48, F);
        in.insert(in.end(), {I, OperandType::FLOAT32, OperandType::FLOAT32, B, B});
        in.insert(in.end(), 8, F);
        requireValid(
            validateModel(singleOperationModel(OperationType::BIDIRECTIONAL_SEQUENCE_LSTM, in, {F, F})));
        requireInvalid(
            validateModel(singleOperationModel(OperationType::BIDIRECTIONAL_SEQUENCE_LSTM, in, {F, F, F})),
            {"has 3 outputs, expected 1, 2, 5 or 6"});
    }
    SECTION("float16 tensors take float16 scalars") {
        const auto H = OperandType::TENSOR_FLOAT16;
        requireValid(validateModel(singleOperationModel(OperationType::ELU, {H, OperandType::FLOAT16}, {H})));
        requireInvalid(
            validateModel(singleOperationModel(OperationType::ELU, {H, OperandType::FLOAT32}, {H})),
            {"input 1 (operand 1) has type FLOAT32, expected FLOAT16"});
    }
    SECTION("quantized DEPTHWISE_CONV_2D with a per-channel filter on dimension 3") {
        const auto Q = OperandType::TENSOR_QUANT8_ASYMM;
        std::vector<OperandType> in{Q, OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL,
                                    OperandType::TENSOR_INT32};
        in.insert(in.end(), 8, I);
        Model m = singleOperationModel(OperationType::DEPTHWISE_CONV_2D, in, {Q});
        requireInvalid(validateModel(m), {"operation 0 (DEPTHWISE_CONV_2D)", "channelDim 0, expected 3"});
        m.main.operands[1].channelQuant = SymmPerChannelQuantParams{{1.0f}, 3};
        requireValid(validateModel(m));
    }
    SECTION("CONCATENATION takes any number of tensors") {
        requireValid(validateModel(singleOperationModel(OperationType::CONCATENATION, {F, I}, {F})));
        requireValid(validateModel(singleOperationModel(OperationType::CONCATENATION, {F, F, F, F, I}, {F})));
        requireInvalid(validateModel(singleOperationModel(OperationType::CONCATENATION,
                                                          {F, OperandType::TENSOR_FLOAT16, I}, {F})),
                       {"input 1 (operand 1) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32"});
    }
    SECTION("SPLIT has any number of outputs") {
        requireValid(validateModel(singleOperationModel(OperationType::SPLIT, {F, I, I}, {F, F, F})));
        requireInvalid(validateModel(singleOperationModel(OperationType::SPLIT, {F, I, I},
                                                          {F, OperandType::TENSOR_INT32})),
                       {"output 1 (operand 4) has type TENSOR_INT32"});
    }
}
