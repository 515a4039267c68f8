// validateModel: each test starts from a valid base model, mutates one thing (as the NN HAL 1.3
// VTS ValidateModel.cpp mutations do) and expects INVALID_ARGUMENT naming the right index.
#include <catch2/catch.hpp>

#include "model_builder.h"
#include "npu/hal/validation.h"

using namespace npu;
using namespace npu::hal;
using namespace npu::hal::test;

TEST_CASE("valid base models pass", "[validate_model]") {
    requireValid(validateModel(convAddModel()));
    requireValid(validateModel(quantConvModel()));
    requireValid(validateModel(ifModel()));
    requireValid(validateModel(whileModel()));
}

TEST_CASE("empty model is rejected", "[validate_model]") {
    Model m;
    requireInvalid(validateModel(m), {"main subgraph", "no operations"});
}

TEST_CASE("operand type out of range or OEM is rejected", "[validate_model]") {
    for (int32_t bad : {-1, 16, 9999, 10000, 10001, 10002}) {
        Model m = convAddModel();
        m.main.operands[7].type = static_cast<OperandType>(bad);
        requireInvalid(validateModel(m), {"main subgraph: operand 7", "not a HAL operand type"});
    }
}

TEST_CASE("rank given to a scalar is rejected", "[validate_model]") {
    Model m = convAddModel();
    m.main.operands[3].dimensions = {1};
    requireInvalid(validateModel(m), {"operand 3", "scalar type INT32 has rank 1"});
}

TEST_CASE("constant tensor of unknown rank is rejected", "[validate_model]") {
    Model m = convAddModel();
    m.main.operands[2].dimensions = {};
    requireInvalid(validateModel(m), {"operand 2", "unknown rank"});
}

TEST_CASE("scale rules", "[validate_model]") {
    SECTION("non-zero scale on a float tensor") {
        Model m = convAddModel();
        m.main.operands[0].scale = 1.0f;
        requireInvalid(validateModel(m), {"operand 0", "scale 1", "expected 0"});
    }
    SECTION("non-zero scale on an INT32 scalar") {
        Model m = convAddModel();
        m.main.operands[4].scale = 1.0f;
        requireInvalid(validateModel(m), {"operand 4", "scale"});
    }
    SECTION("TENSOR_INT32 may carry a positive scale (bias) but not a negative one") {
        Model m = quantConvModel();
        requireValid(validateModel(m));
        m.main.operands[2].scale = -1.0f;
        requireInvalid(validateModel(m), {"operand 2", "TENSOR_INT32 has scale -1"});
    }
    SECTION("zero or negative scale on a quantized tensor") {
        for (float bad : {0.0f, -0.5f}) {
            Model m = quantConvModel();
            m.main.operands[7].scale = bad;
            requireInvalid(validateModel(m), {"operand 7", "quantized type TENSOR_QUANT8_ASYMM has scale"});
        }
    }
    SECTION("non-zero scale on a per-channel tensor") {
        Model m = quantConvModel();
        m.main.operands[1].scale = 1.0f;
        requireInvalid(validateModel(m), {"operand 1", "scale"});
    }
}

TEST_CASE("zero point rules", "[validate_model]") {
    struct Case {
        OperandType type;
        int32_t zeroPoint;
    };
    SECTION("non-zero zero point on float and scalar types") {
        for (uint32_t operand : {0u, 3u}) {
            Model m = convAddModel();
            m.main.operands[operand].zeroPoint = 1;
            requireInvalid(validateModel(m), {"operand " + std::to_string(operand), "zeroPoint 1"});
        }
    }
    SECTION("out of range for the quantized type") {
        const Case cases[] = {
            {OperandType::TENSOR_QUANT8_ASYMM, -1},
            {OperandType::TENSOR_QUANT8_ASYMM, 256},
            {OperandType::TENSOR_QUANT8_ASYMM_SIGNED, -129},
            {OperandType::TENSOR_QUANT8_ASYMM_SIGNED, 128},
            {OperandType::TENSOR_QUANT16_ASYMM, -1},
            {OperandType::TENSOR_QUANT16_ASYMM, 65536},
            {OperandType::TENSOR_QUANT8_SYMM, 1},
            {OperandType::TENSOR_QUANT16_SYMM, -1},
        };
        for (const Case& c : cases) {
            Model m = quantConvModel();
            // Operand 7 is only an output here, so changing its type keeps the rest valid.
            m.main.operands[7].type = c.type;
            m.main.operands[7].zeroPoint = c.zeroPoint;
            requireInvalid(validateModel(m), {"operand 7", "zeroPoint " + std::to_string(c.zeroPoint)});
        }
    }
    SECTION("limits themselves are accepted") {
        Model m = quantConvModel();
        m.main.operands[0].zeroPoint = 255;
        requireValid(validateModel(m));
        m.main.operands[0].zeroPoint = 0;
        requireValid(validateModel(m));
    }
    SECTION("per-channel tensor with a zero point") {
        Model m = quantConvModel();
        m.main.operands[1].zeroPoint = 1;
        requireInvalid(validateModel(m), {"operand 1", "zeroPoint 1"});
    }
}

TEST_CASE("per-channel quantization parameters", "[validate_model]") {
    SECTION("missing on TENSOR_QUANT8_SYMM_PER_CHANNEL") {
        Model m = quantConvModel();
        m.main.operands[1].channelQuant.reset();
        requireInvalid(validateModel(m), {"operand 1", "no per-channel"});
    }
    SECTION("present on another type") {
        Model m = convAddModel();
        m.main.operands[1].channelQuant = SymmPerChannelQuantParams{{1.0f}, 0};
        requireInvalid(validateModel(m), {"operand 1", "only TENSOR_QUANT8_SYMM_PER_CHANNEL"});
    }
    SECTION("channelDim out of range") {
        Model m = quantConvModel();
        m.main.operands[1].channelQuant->channelDim = 4;
        requireInvalid(validateModel(m), {"operand 1", "channelDim 4 is out of range for rank 4"});
    }
    SECTION("wrong number of scales") {
        Model m = quantConvModel();
        m.main.operands[1].channelQuant->scales = {0.5f};
        requireInvalid(validateModel(m), {"operand 1", "1 entries, expected 2"});
    }
    SECTION("non-positive scale") {
        Model m = quantConvModel();
        m.main.operands[1].channelQuant->scales[1] = 0.0f;
        requireInvalid(validateModel(m), {"operand 1", "per-channel scale 1"});
    }
    SECTION("channelDim that the operation does not allow") {
        Model m = quantConvModel();
        // [2,2,2,1] with channelDim 1 is a valid operand but CONV_2D wants channelDim 0.
        m.main.operands[1].channelQuant = SymmPerChannelQuantParams{{0.5f, 0.5f}, 1};
        requireInvalid(validateModel(m), {"operation 0 (CONV_2D)", "operand 1", "channelDim 1, expected 0"});
    }
}

TEST_CASE("lifetime and location rules", "[validate_model]") {
    SECTION("CONSTANT_COPY outside operandValues") {
        Model m = convAddModel();
        m.main.operands[2].location.offset = static_cast<uint32_t>(m.operandValues.size());
        requireInvalid(validateModel(m), {"operand 2", "outside operandValues"});
    }
    SECTION("CONSTANT_COPY with a pool index") {
        Model m = convAddModel();
        m.main.operands[2].location.poolIndex = 1;
        requireInvalid(validateModel(m), {"operand 2", "poolIndex 0"});
    }
    SECTION("constant length does not match the type and dimensions") {
        Model m = convAddModel();
        m.main.operands[1].location.length -= 4;
        requireInvalid(validateModel(m), {"operand 1", "has length 12, expected 16"});
    }
    SECTION("CONSTANT_REFERENCE with a pool index out of range") {
        Model m = convAddModel();
        m.main.operands[1].lifetime = OperandLifeTime::CONSTANT_REFERENCE;
        m.main.operands[1].location = {0, 0, 16};
        requireInvalid(validateModel(m), {"operand 1", "names pool 0 but the model has 0 pools"});
    }
    SECTION("CONSTANT_REFERENCE outside its pool") {
        Model m = convAddModel();
        m.pools.push_back(std::shared_ptr<Memory>(Memory::create(16)));
        m.main.operands[1].lifetime = OperandLifeTime::CONSTANT_REFERENCE;
        m.main.operands[1].location = {0, 0, 16};
        requireValid(validateModel(m));
        m.main.operands[1].location.offset = 4;
        requireInvalid(validateModel(m), {"operand 1", "outside pool 0"});
    }
    SECTION("NO_VALUE with a location") {
        Model m = convAddModel();
        // The bias of CONV_2D may be omitted structurally; give it a location.
        m.main.operands[2].lifetime = OperandLifeTime::NO_VALUE;
        m.main.operands[2].location = {0, 0, 0};
        requireValid(validateModel(m));
        m.main.operands[2].location.length = 4;
        requireInvalid(validateModel(m), {"operand 2", "NO_VALUE has location"});
    }
    SECTION("temporary or input with a location") {
        Model m = convAddModel();
        m.main.operands[7].location.offset = 4;
        requireInvalid(validateModel(m), {"operand 7", "TEMPORARY_VARIABLE has location"});
    }
    SECTION("invalid lifetime value") {
        Model m = convAddModel();
        m.main.operands[7].lifetime = static_cast<OperandLifeTime>(7);
        requireInvalid(validateModel(m), {"operand 7", "not a valid operand lifetime"});
    }
    SECTION("SUBGRAPH lifetime with a non-SUBGRAPH type") {
        Model m = ifModel();
        m.main.operands[1].type = OperandType::INT32;
        requireInvalid(validateModel(m), {"operand 1", "cannot have lifetime SUBGRAPH"});
    }
    SECTION("SUBGRAPH type with another lifetime") {
        Model m = ifModel();
        m.main.operands[1].lifetime = OperandLifeTime::CONSTANT_COPY;
        m.main.operands[1].location = {0, 0, 4};
        m.operandValues.resize(std::max<size_t>(m.operandValues.size(), 4));
        requireInvalid(validateModel(m), {"operand 1", "SUBGRAPH cannot have lifetime CONSTANT_COPY"});
    }
    SECTION("SUBGRAPH index out of range") {
        Model m = ifModel();
        m.main.operands[2].location.offset = 2;
        requireInvalid(validateModel(m), {"operand 2", "referenced subgraph 2 but the model has 2"});
    }
    SECTION("a written operand turned into a constant (VTS lifetime mutation)") {
        Model m = convAddModel();
        m.main.operands[7].lifetime = OperandLifeTime::CONSTANT_COPY;
        m.main.operands[7].location = {0, 0, 36};
        m.operandValues.resize(std::max<size_t>(m.operandValues.size(), 36));
        requireInvalid(validateModel(m), {"operation 0 (CONV_2D)", "operand 7", "lifetime CONSTANT_COPY"});
    }
    SECTION("a constant turned into a temporary is never written") {
        Model m = convAddModel();
        m.main.operands[1].lifetime = OperandLifeTime::TEMPORARY_VARIABLE;
        m.main.operands[1].location = {};
        requireInvalid(validateModel(m), {"operand 1", "never written"});
    }
    SECTION("an output never written") {
        Model m = convAddModel();
        m.main.operations.pop_back();
        requireInvalid(validateModel(m), {"operand 9", "SUBGRAPH_OUTPUT is never written"});
    }
}

TEST_CASE("subgraph input and output lists", "[validate_model]") {
    SECTION("a constant listed as a subgraph input") {
        Model m = convAddModel();
        m.main.inputIndexes.push_back(3);
        requireInvalid(validateModel(m),
                       {"input 2 (operand 3)", "lifetime CONSTANT_COPY, expected SUBGRAPH_INPUT"});
    }
    SECTION("a temporary listed as a subgraph output") {
        Model m = convAddModel();
        m.main.outputIndexes.push_back(7);
        requireInvalid(validateModel(m), {"output 1 (operand 7)", "expected SUBGRAPH_OUTPUT"});
    }
    SECTION("a SUBGRAPH_INPUT not listed") {
        Model m = convAddModel();
        m.main.inputIndexes.pop_back();
        requireInvalid(validateModel(m), {"operand 8", "not listed in the subgraph's input indexes"});
    }
    SECTION("an input listed twice") {
        Model m = convAddModel();
        m.main.inputIndexes.push_back(0);
        requireInvalid(validateModel(m), {"operand 0", "more than once"});
    }
    SECTION("an input index out of range") {
        Model m = convAddModel();
        m.main.inputIndexes.push_back(10);
        requireInvalid(validateModel(m), {"input 2 is operand 10, out of range"});
    }
}

TEST_CASE("operation operand indexes out of range", "[validate_model]") {
    SECTION("input") {
        Model m = convAddModel();
        m.main.operations[1].inputs[1] = 10;
        requireInvalid(validateModel(m), {"operation 1 (ADD)", "input 1 is operand 10, out of range"});
    }
    SECTION("output") {
        Model m = convAddModel();
        m.main.operations[0].outputs[0] = 42;
        requireInvalid(validateModel(m), {"operation 0 (CONV_2D)", "output 0 is operand 42, out of range"});
    }
}

TEST_CASE("an operand with two writers is rejected", "[validate_model]") {
    Model m = convAddModel();
    m.main.operations[1].outputs[0] = 7;  // ADD also writes the CONV_2D output
    requireInvalid(validateModel(m), {"operation 1 (ADD)", "operand 7", "written a second time"});
}

TEST_CASE("operations out of execution order are rejected", "[validate_model]") {
    Model m = convAddModel();
    std::swap(m.main.operations[0], m.main.operations[1]);
    requireInvalid(validateModel(m),
                   {"operation 0 (ADD)", "operand 7", "read before any operation writes it"});
}

TEST_CASE("invalid operation types are rejected", "[validate_model]") {
    for (int32_t bad : {-1, 102, 9999, 10000, 10001}) {
        Model m = convAddModel();
        m.main.operations[1].type = static_cast<OperationType>(bad);
        requireInvalid(validateModel(m), {"operation 1", "not a HAL operation type"});
    }
}

TEST_CASE("operation signatures", "[validate_model]") {
    SECTION("wrong input type") {
        Model m = convAddModel();
        m.main.operands[8].type = OperandType::TENSOR_FLOAT16;
        requireInvalid(
            validateModel(m),
            {"operation 1 (ADD): input 1 (operand 8) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32"});
    }
    SECTION("wrong output type") {
        Model m = convAddModel();
        m.main.operands[9].type = OperandType::TENSOR_INT32;
        requireInvalid(validateModel(m), {"operation 1 (ADD)", "output 0 (operand 9) has type TENSOR_INT32"});
    }
    SECTION("an input removed") {
        Model m = convAddModel();
        m.main.operations[1].inputs.pop_back();
        requireInvalid(validateModel(m), {"operation 1 (ADD): has 2 inputs, expected 3"});
    }
    SECTION("an INT32 input added (VTS addOperationInputTest)") {
        Model m = convAddModel();
        SubgraphBuilder b(m, m.main);
        const uint32_t extra = b.input(OperandType::INT32, {});
        m.main.operations[0].inputs.push_back(extra);  // 8 inputs: input 7 must be the BOOL layout
        requireInvalid(validateModel(m),
                       {"operation 0 (CONV_2D)", "input 7 (operand 10) has type INT32, expected BOOL"});
    }
    SECTION("an output added") {
        Model m = convAddModel();
        SubgraphBuilder b(m, m.main);
        const uint32_t extra = b.output(OperandType::TENSOR_FLOAT32, {1, 3, 3, 1});
        m.main.operations[1].outputs.push_back(extra);
        requireInvalid(validateModel(m), {"operation 1 (ADD): has 2 outputs, expected 1"});
    }
    SECTION("explicit padding variants are recognised") {
        Model m = convAddModel();
        SubgraphBuilder b(m, m.main);
        auto& conv = m.main.operations[0];
        conv.inputs = {0, 1, 2, 3, 3, 3, 3, 4, 5, 6};  // 4 paddings, 2 strides, activation
        requireValid(validateModel(m));
        conv.inputs.push_back(b.boolean(false));  // NCHW flag
        requireValid(validateModel(m));
        conv.inputs.push_back(b.scalar(1));  // dilation w only: 12 inputs is no variant
        requireInvalid(validateModel(m), {"operation 0 (CONV_2D): has 12 inputs"});
        conv.inputs.push_back(b.scalar(1));  // dilation h
        requireValid(validateModel(m));
    }
    SECTION("quantized filter must match the input or be per-channel") {
        Model m = quantConvModel();
        m.main.operands[1].type = OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
        m.main.operands[1].channelQuant.reset();
        m.main.operands[1].scale = 0.5f;
        requireInvalid(validateModel(m),
                       {"operation 0 (CONV_2D)", "input 1 (operand 1) has type TENSOR_QUANT8_ASYMM_SIGNED"});
    }
    SECTION("rank rules") {
        Model m = convAddModel();
        m.main.operands[0].dimensions = {1, 3, 3};
        requireInvalid(validateModel(m),
                       {"operation 0 (CONV_2D)", "input 0 (operand 0) has rank 3, expected 4"});
    }
}

TEST_CASE("IF and WHILE references", "[validate_model]") {
    SECTION("then branch with a different input count") {
        Model m = ifModel();
        SubgraphBuilder r(m, m.referenced[0]);
        r.input(OperandType::TENSOR_FLOAT32, {2});
        requireInvalid(validateModel(m), {"operation 0 (IF)", "then branch (referenced subgraph 0) has 2"});
    }
    SECTION("else branch output incompatible with the IF output") {
        Model m = ifModel();
        m.main.operands[4].dimensions = {3};
        requireInvalid(validateModel(m),
                       {"operation 0 (IF)", "output 0 (operand 4)", "dimensions [2] vs [3]"});
    }
    SECTION("unknown dimensions are compatible") {
        Model m = ifModel();
        m.referenced[1].operands[0].dimensions = {0};
        m.referenced[1].operands[2].dimensions = {};
        requireValid(validateModel(m));
    }
    SECTION("condition of the wrong type") {
        Model m = ifModel();
        m.main.operands[0].type = OperandType::TENSOR_INT32;
        requireInvalid(validateModel(m),
                       {"operation 0 (IF)", "input 0 (operand 0, the condition)", "TENSOR_BOOL8"});
    }
    SECTION("an input added to the IF (count mismatch)") {
        Model m = ifModel();
        SubgraphBuilder b(m, m.main);
        m.main.operations[0].inputs.push_back(b.input(OperandType::INT32, {}));
        requireInvalid(validateModel(m), {"operation 0 (IF): passes 2 inputs"});
    }
    SECTION("a branch operand that is not a SUBGRAPH") {
        Model m = ifModel();
        m.main.operations[0].inputs[2] = 3;
        requireInvalid(validateModel(m),
                       {"operation 0 (IF)", "input 2 (operand 3)", "expected a SUBGRAPH operand"});
    }
    SECTION("referenced subgraphs are validated too") {
        Model m = ifModel();
        m.referenced[1].operands[1].dimensions = {1};
        requireInvalid(validateModel(m), {"referenced subgraph 1: operand 1", "rank 1"});
    }
    SECTION("a reference cycle") {
        Model m = ifModel();
        SubgraphBuilder r(m, m.referenced[1]);
        r.subgraph(0);
        SubgraphBuilder r0(m, m.referenced[0]);
        r0.subgraph(1);
        requireInvalid(validateModel(m), {"reference cycle"});
    }
    SECTION("WHILE condition must produce a TENSOR_BOOL8 [1]") {
        Model m = whileModel();
        m.referenced[0].operands[2].dimensions = {2};
        requireInvalid(validateModel(m), {"operation 0 (WHILE)", "condition (referenced subgraph 0) output"});
    }
    SECTION("WHILE body with too few outputs") {
        Model m = whileModel();
        m.main.operations[0].outputs.push_back(
            SubgraphBuilder(m, m.main).output(OperandType::TENSOR_FLOAT32, {1}));
        requireInvalid(validateModel(m), {"operation 0 (WHILE): has 2 outputs but the body"});
    }
    SECTION("WHILE input type differs from the body input") {
        Model m = whileModel();
        m.referenced[1].operands[0].type = OperandType::TENSOR_FLOAT16;
        m.referenced[1].operands[2].type = OperandType::TENSOR_FLOAT16;
        requireInvalid(validateModel(m),
                       {"operation 0 (WHILE)", "body (referenced subgraph 1)", "TENSOR_FLOAT16"});
    }
    SECTION("WHILE with too few inputs") {
        Model m = whileModel();
        m.main.operations[0].inputs.pop_back();
        requireInvalid(validateModel(m), {"operation 0 (WHILE)", "expected at least 3 inputs"});
    }
}

TEST_CASE("execution preference and priority", "[validate_model]") {
    CHECK(validateExecutionPreference(ExecutionPreference::SUSTAINED_SPEED).has_value());
    requireInvalid(validateExecutionPreference(static_cast<ExecutionPreference>(3)),
                   {"execution preference 3"});
    requireInvalid(validateExecutionPreference(static_cast<ExecutionPreference>(-1)),
                   {"execution preference -1"});
    CHECK(validatePriority(Priority::HIGH).has_value());
    requireInvalid(validatePriority(static_cast<Priority>(3)), {"priority 3"});
    requireInvalid(validatePriority(static_cast<Priority>(-1)), {"priority -1"});
}
