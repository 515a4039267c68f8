// validateRequest: each test starts from a valid request for a valid model, mutates one thing
// (as the NN HAL 1.3 VTS ValidateRequest.cpp and the HAL request rules do) and expects
// INVALID_ARGUMENT naming the argument.
#include <catch2/catch.hpp>

#include "model_builder.h"
#include "npu/hal/validation.h"

using namespace npu;
using namespace npu::hal;
using namespace npu::hal::test;

namespace {

// convAddModel: inputs 0 and 8 ([1,3,3,1] float, 36 bytes each), output 9 (36 bytes).
Request convAddRequest() {
    Request r;
    r.pools.push_back(std::shared_ptr<Memory>(Memory::create(72)));
    r.pools.push_back(std::shared_ptr<Memory>(Memory::create(36)));
    RequestArgument in0;
    in0.location = {0, 0, 36};
    RequestArgument in1;
    in1.location = {0, 36, 36};
    RequestArgument out;
    out.location = {1, 0, 36};
    r.inputs = {in0, in1};
    r.outputs = {out};
    return r;
}

}  // namespace

TEST_CASE("a valid request passes", "[validate_request]") {
    requireValid(validateRequest(convAddRequest(), convAddModel()));
}

TEST_CASE("request argument counts must match the model", "[validate_request]") {
    SECTION("an input removed") {
        Request r = convAddRequest();
        r.inputs.pop_back();
        requireInvalid(validateRequest(r, convAddModel()), {"request has 1 inputs but the model has 2"});
    }
    SECTION("an output removed") {
        Request r = convAddRequest();
        r.outputs.clear();
        requireInvalid(validateRequest(r, convAddModel()), {"request has 0 outputs but the model has 1"});
    }
    SECTION("an output added") {
        Request r = convAddRequest();
        r.outputs.push_back(r.outputs[0]);
        requireInvalid(validateRequest(r, convAddModel()), {"request has 2 outputs"});
    }
}

TEST_CASE("request locations", "[validate_request]") {
    SECTION("outside the pool") {
        Request r = convAddRequest();
        r.inputs[1].location.offset = 40;
        requireInvalid(validateRequest(r, convAddModel()),
                       {"request input 1 (operand 8)", "outside pool 0 (72 bytes)"});
    }
    SECTION("padding counts against the pool") {
        Request r = convAddRequest();
        r.outputs[0].location.padding = 4;
        requireInvalid(validateRequest(r, convAddModel()),
                       {"request output 0 (operand 9)", "outside pool 1"});
    }
    SECTION("pool index out of range") {
        Request r = convAddRequest();
        r.outputs[0].location.poolIndex = 2;
        requireInvalid(validateRequest(r, convAddModel()),
                       {"request output 0", "names pool 2 but the request has 2 pools"});
    }
    SECTION("no value but a location") {
        Request r = convAddRequest();
        r.inputs[0].hasNoValue = true;
        requireInvalid(validateRequest(r, convAddModel()),
                       {"request input 0 (operand 0)", "has no value but has location"});
        r.inputs[0].location = {};
        requireValid(validateRequest(r, convAddModel()));
    }
    SECTION("a null memory pool") {
        Request r = convAddRequest();
        r.pools[1] = std::shared_ptr<Memory>();
        requireInvalid(validateRequest(r, convAddModel()), {"request pool 1 is a null memory"});
    }
    SECTION("a buffer-token pool is fine; its location must be the whole buffer") {
        Request r = convAddRequest();
        r.pools[1] = uint32_t{7};
        r.outputs[0].location = {1, 0, 0};
        requireValid(validateRequest(r, convAddModel()));
        r.outputs[0].location.length = 36;
        requireInvalid(validateRequest(r, convAddModel()),
                       {"request output 0", "driver-managed buffer pool 1"});
    }
    SECTION("token 0 is not a token") {
        Request r = convAddRequest();
        r.pools[1] = uint32_t{0};
        requireInvalid(validateRequest(r, convAddModel()), {"request pool 1", "token 0"});
    }
}

TEST_CASE("request dimensions", "[validate_request]") {
    SECTION("matching dimensions are fine") {
        Request r = convAddRequest();
        r.inputs[0].dimensions = {1, 3, 3, 1};
        requireValid(validateRequest(r, convAddModel()));
    }
    SECTION("a dimension that conflicts with the model") {
        Request r = convAddRequest();
        r.inputs[0].dimensions = {1, 3, 4, 1};
        requireInvalid(validateRequest(r, convAddModel()),
                       {"request input 0 (operand 0)", "dimension 2 is 4 but the model fixes it to 3"});
    }
    SECTION("a wrong rank") {
        Request r = convAddRequest();
        r.outputs[0].dimensions = {1, 9};
        requireInvalid(validateRequest(r, convAddModel()),
                       {"request output 0 (operand 9)", "has rank 2", "the model has rank 4"});
    }
    SECTION("an input left unspecified where the model does not know it") {
        Model m = convAddModel();
        m.main.operands[8].dimensions = {1, 0, 3, 1};
        Request r = convAddRequest();
        requireInvalid(validateRequest(r, m),
                       {"request input 1 (operand 8)", "model dimension 1 is unknown"});
        r.inputs[1].dimensions = {1, 3, 3, 1};
        requireValid(validateRequest(r, m));
        r.inputs[1].dimensions = {1, 0, 3, 1};
        requireInvalid(validateRequest(r, m), {"request input 1 (operand 8)", "dimension 1 is 0"});
    }
    SECTION("an output may stay unspecified") {
        Model m = convAddModel();
        m.main.operands[9].dimensions = {};
        requireValid(validateRequest(convAddRequest(), m));
    }
    SECTION("dimensions given for a scalar input") {
        Model m;
        SubgraphBuilder b(m, m.main);
        const uint32_t x = b.input(OperandType::TENSOR_FLOAT32, {2});
        const uint32_t act = b.input(OperandType::INT32, {});
        const uint32_t out = b.output(OperandType::TENSOR_FLOAT32, {2});
        b.operation(OperationType::ADD, {x, x, act}, {out});
        requireValid(validateModel(m));
        Request r;
        r.pools.push_back(std::shared_ptr<Memory>(Memory::create(64)));
        RequestArgument a;
        a.location = {0, 0, 8};
        RequestArgument s;
        s.location = {0, 8, 4};
        RequestArgument o;
        o.location = {0, 16, 8};
        r.inputs = {a, s};
        r.outputs = {o};
        requireValid(validateRequest(r, m));
        r.inputs[1].dimensions = {1};
        requireInvalid(validateRequest(r, m), {"request input 1 (operand 1)", "scalar of type INT32"});
    }
}
