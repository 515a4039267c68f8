// Unit tests of the reference device: the HAL contract (claims, errors as values, output shapes)
// and the quantized arithmetic on hand-checked values.
#include "npu/ref/reference_device.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "npu/framework/cts_loader.h"

using namespace npu;

namespace {

framework::TestCase findVector(const std::string& file, const std::string& name) {
    auto tc = framework::findTestCase(framework::ctsDataDir() + "/" + file, name);
    REQUIRE(tc.has_value());
    return std::move(*tc);
}

Result<hal::ExecutionResult> run(hal::IDevice& device, const framework::TestCase& tc,
                                 framework::PreparedRequest& request) {
    auto prepared = NPU_TRY(device.prepareModel(tc.model));
    request = NPU_TRY(framework::makeRequest(tc));
    return prepared->executeSynchronously(request.request, hal::MeasureTiming::YES, std::nullopt,
                                          std::nullopt);
}

}  // namespace

TEST_CASE("reference device identifies itself as a CPU with capabilities", "[reference]") {
    ref::ReferenceDevice device;
    CHECK(device.getType() == hal::DeviceType::CPU);
    CHECK_THAT(device.getVersionString(), Catch::Contains("reference"));
    auto caps = device.getCapabilities();
    REQUIRE(caps.has_value());
    CHECK_FALSE(caps->operandPerformance.empty());
    CHECK_FALSE(ref::describeSupportedOperations().empty());
}

TEST_CASE("quantized ADD, CONV_2D and FULLY_CONNECTED vectors pass with timing", "[reference]") {
    ref::ReferenceDevice device;
    for (const auto& [file, name] :
         {std::pair{"V1_0.jsonl.gz", "conv_quant8"}, std::pair{"V1_0.jsonl.gz", "fully_connected_quant8"}}) {
        INFO(name);
        auto tc = findVector(file, name);
        framework::PreparedRequest request;
        auto result = run(device, tc, request);
        REQUIRE(result.has_value());
        CHECK(result->timing.timeOnDeviceUs != hal::kNoTiming);
        CHECK_FALSE(
            framework::compareOutputs(tc, framework::readOutputs(request), result->outputShapes).has_value());
    }
}

TEST_CASE("quantized ADD rescales both inputs and applies the fused activation", "[reference]") {
    // The corpus has no visible quant8-only ADD vector, so the values are checked by hand:
    // a = 0.1 * (q - 128), b = 0.2 * (q - 100), out = 0.3 * (q - 50).
    ref::ReferenceDevice device;
    auto tc = findVector("V1_0.jsonl.gz", "add");  // float [2] + [2], activation NONE
    auto& ops = tc.model.main.operands;
    const float scales[] = {0.1f, 0.2f, 0.0f, 0.3f};
    const int32_t zeroPoints[] = {128, 100, 0, 50};
    for (uint32_t i : {0u, 1u, 3u}) {
        ops[i].type = hal::OperandType::TENSOR_QUANT8_ASYMM;
        ops[i].scale = scales[i];
        ops[i].zeroPoint = zeroPoints[i];
    }
    tc.inputs = {{138, 118}, {110, 90}};  // a = {1.0, -1.0}, b = {2.0, -2.0}
    tc.expectedOutputs = {{60, 40}};      // {3.0, -3.0}
    framework::PreparedRequest request;
    auto result = run(device, tc, request);
    REQUIRE(result.has_value());
    CHECK(framework::readOutputs(request)[0] == std::vector<uint8_t>{60, 40});
    // RELU1 clamps to [50 + round(-1/0.3), 50 + round(1/0.3)] = [47, 53].
    const uint32_t act = tc.model.main.operations[0].inputs[2];
    const int32_t relu1 = 2;
    std::memcpy(tc.model.operandValues.data() + ops[act].location.offset, &relu1, 4);
    result = run(device, tc, request);
    REQUIRE(result.has_value());
    CHECK(framework::readOutputs(request)[0] == std::vector<uint8_t>{53, 47});
    // SUB of the same operands: {-1.0, 1.0} -> {47, 53} (RELU1 does not bite).
    tc.model.main.operations[0].type = hal::OperationType::SUB;
    result = run(device, tc, request);
    REQUIRE(result.has_value());
    CHECK(framework::readOutputs(request)[0] == std::vector<uint8_t>{47, 53});
}

TEST_CASE("an OEM operation is invalid for the reference, as for the NPU, and not prepared", "[reference]") {
    ref::ReferenceDevice device;
    auto tc = findVector("V1_0.jsonl.gz", "add");
    // OEM_OPERATION is vendor-defined; no device of this driver accepts it (hal/validation.cpp).
    tc.model.main.operations[0].type = hal::OperationType::OEM_OPERATION;
    auto supported = device.getSupportedOperations(tc.model);
    REQUIRE_FALSE(supported.has_value());
    CHECK(supported.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    CHECK_THAT(supported.error().message, Catch::Contains("operation 0"));
    auto prepared = device.prepareModel(tc.model);
    REQUIRE_FALSE(prepared.has_value());
    CHECK_THAT(prepared.error().message, Catch::Contains("operation 0"));
}

TEST_CASE("getSupportedOperations validates first: an invalid model is INVALID_ARGUMENT, not unsupported",
          "[reference]") {
    ref::ReferenceDevice device;
    auto tc = findVector("V1_0.jsonl.gz", "add");
    // ADD has no TENSOR_BOOL8 signature in the HAL: an invalid model, not an unsupported one (the
    // reference used to answer {false}).
    for (auto& o : tc.model.main.operands) {
        if (o.type == hal::OperandType::TENSOR_FLOAT32) o.type = hal::OperandType::TENSOR_BOOL8;
    }
    auto supported = device.getSupportedOperations(tc.model);
    REQUIRE_FALSE(supported.has_value());
    CHECK(supported.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    CHECK_THAT(supported.error().message, Catch::Contains("operation 0 (ADD)"));
}

TEST_CASE("invalid models are rejected with a message, never a crash", "[reference]") {
    ref::ReferenceDevice device;
    auto tc = findVector("V1_0.jsonl.gz", "conv_float");
    SECTION("operand index out of range") {
        tc.model.main.operations[0].inputs[0] = 999;
        auto s = device.getSupportedOperations(tc.model);
        REQUIRE_FALSE(s.has_value());
        CHECK(s.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
        auto p = device.prepareModel(tc.model);
        REQUIRE_FALSE(p.has_value());
        CHECK(p.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    }
    SECTION("filter depth differs from input depth") {
        tc.model.main.operands[tc.model.main.operations[0].inputs[1]].dimensions[3] += 1;
        auto p = device.prepareModel(tc.model);
        REQUIRE_FALSE(p.has_value());
        CHECK(p.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    }
    SECTION("too few inputs") {
        tc.model.main.operations[0].inputs.resize(3);
        auto p = device.prepareModel(tc.model);
        REQUIRE_FALSE(p.has_value());
    }
}

TEST_CASE("an output buffer too small gives OUTPUT_INSUFFICIENT_SIZE with the needed shape", "[reference]") {
    ref::ReferenceDevice device;
    auto tc = findVector("V1_0.jsonl.gz", "add");
    auto prepared = device.prepareModel(tc.model);
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    request->request.outputs[0].location.length -= 1;
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                    std::nullopt);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().status == hal::ErrorStatus::OUTPUT_INSUFFICIENT_SIZE);
    REQUIRE(result.error().outputShapes.size() == 1);
    CHECK(result.error().outputShapes[0].dimensions == tc.expectedOutputDims[0]);
    CHECK_FALSE(result.error().outputShapes[0].isSufficient);
}

TEST_CASE("dynamic output shapes are resolved at execution", "[reference]") {
    ref::ReferenceDevice device;
    auto tc = findVector("V1_0.jsonl.gz", "conv_quant8");
    const uint32_t out = tc.model.main.outputIndexes[0];
    SECTION("unknown dimensions") {
        for (auto& d : tc.model.main.operands[out].dimensions) d = 0;
    }
    SECTION("unknown rank") {
        tc.model.main.operands[out].dimensions.clear();
    }
    framework::PreparedRequest request;
    auto result = run(device, tc, request);
    REQUIRE(result.has_value());
    REQUIRE(result->outputShapes.size() == 1);
    CHECK(result->outputShapes[0].dimensions == tc.expectedOutputDims[0]);
    CHECK_FALSE(
        framework::compareOutputs(tc, framework::readOutputs(request), result->outputShapes).has_value());
}

TEST_CASE("input shapes given by the request are used (unknown model input dims)", "[reference]") {
    ref::ReferenceDevice device;
    auto tc = findVector("V1_0.jsonl.gz", "add");
    const auto dims = tc.model.main.operands[0].dimensions;
    tc.model.main.operands[0].dimensions = {0};
    tc.model.main.operands[tc.model.main.outputIndexes[0]].dimensions = {0};
    auto prepared = device.prepareModel(tc.model);
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    auto missing = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                     std::nullopt);
    CHECK_FALSE(missing.has_value());  // the shape is not known anywhere
    request->request.inputs[0].dimensions = dims;
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                    std::nullopt);
    REQUIRE(result.has_value());
    CHECK(result->outputShapes[0].dimensions == dims);
    CHECK_FALSE(
        framework::compareOutputs(tc, framework::readOutputs(*request), result->outputShapes).has_value());
}

TEST_CASE("a wrong answer is caught by the comparison (the conformance test can fail)", "[reference]") {
    ref::ReferenceDevice device;
    auto tc = findVector("V1_0.jsonl.gz", "conv_quant8");
    tc.expectedOutputs[0][0] ^= 0x10;
    framework::PreparedRequest request;
    auto result = run(device, tc, request);
    REQUIRE(result.has_value());
    CHECK(framework::compareOutputs(tc, framework::readOutputs(request), result->outputShapes).has_value());
}
