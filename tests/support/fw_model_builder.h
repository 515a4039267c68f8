#pragma once
// Test support: builds a model as the firmware sees it (fw::ModelDesc: operand and operation
// tables, constants staged in device DRAM), for the firmware unit tests (model_fixture.h) and the
// fuzz targets that drive the firmware runtime without the RPC layer (tests/fuzz/firmware_models).
// The HAL-side builder is hal's (npu/hal/model_builder.h); this one is below the wire.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "npu/fw/runtime.h"

namespace npu::fw::test {

struct FwModelBuilder {
    // HAL numeric values (the firmware takes them as they come off the wire).
    static constexpr uint32_t kTemporary = 0, kInput = 1, kOutput = 2, kConstant = 3;
    static constexpr uint32_t kInt32 = 1, kBool = 6;

    // Copies a constant's bytes into device DRAM; returns their address.
    std::function<uint64_t(const void* data, size_t n)> stage;

    std::vector<OperandDesc> operands;
    std::vector<std::vector<uint32_t>> opInputs, opOutputs;
    std::vector<uint32_t> types;
    std::vector<uint32_t> inputs, outputs;
    std::vector<OperationDesc> ops;
    ModelDesc desc;

    uint32_t tensor(uint32_t type, std::vector<uint32_t> dims, float scale, int32_t zp, uint32_t lifetime) {
        OperandDesc d;
        d.type = type;
        d.rank = static_cast<uint32_t>(dims.size());
        for (size_t i = 0; i < dims.size(); ++i) d.dims[i] = dims[i];
        d.scale = scale;
        d.zeroPoint = zp;
        d.lifetime = lifetime;
        operands.push_back(d);
        return static_cast<uint32_t>(operands.size() - 1);
    }
    // A tensor that is also one of the model's inputs / outputs (tensor() alone does not list it).
    uint32_t modelInput(uint32_t type, std::vector<uint32_t> dims, float scale, int32_t zp) {
        const uint32_t i = tensor(type, std::move(dims), scale, zp, kInput);
        inputs.push_back(i);
        return i;
    }
    uint32_t modelOutput(uint32_t type, std::vector<uint32_t> dims, float scale, int32_t zp) {
        const uint32_t i = tensor(type, std::move(dims), scale, zp, kOutput);
        outputs.push_back(i);
        return i;
    }
    uint32_t constant(uint32_t type, std::vector<uint32_t> dims, float scale, int32_t zp, const void* data,
                      size_t n) {
        const uint32_t i = tensor(type, std::move(dims), scale, zp, kConstant);
        operands[i].dataAddr = stage(data, n);
        operands[i].dataLength = static_cast<uint32_t>(n);
        return i;
    }
    uint32_t i32(int32_t v) { return constant(kInt32, {}, 0, 0, &v, 4); }
    uint32_t boolean(bool v) {
        const uint8_t b = v ? 1 : 0;
        return constant(kBool, {}, 0, 0, &b, 1);
    }
    void op(uint32_t type, std::vector<uint32_t> in, std::vector<uint32_t> out) {
        types.push_back(type);
        opInputs.push_back(std::move(in));
        opOutputs.push_back(std::move(out));
    }
    // The ModelDesc over the tables above (valid while they are not changed).
    const ModelDesc& build() {
        ops.clear();
        for (size_t i = 0; i < types.size(); ++i) {
            OperationDesc o;
            o.type = types[i];
            o.inputs = opInputs[i].data();
            o.inputCount = static_cast<uint32_t>(opInputs[i].size());
            o.outputs = opOutputs[i].data();
            o.outputCount = static_cast<uint32_t>(opOutputs[i].size());
            ops.push_back(o);
        }
        desc = {};
        desc.operands = operands.data();
        desc.operandCount = static_cast<uint32_t>(operands.size());
        desc.operations = ops.data();
        desc.operationCount = static_cast<uint32_t>(ops.size());
        desc.inputIndexes = inputs.data();
        desc.inputCount = static_cast<uint32_t>(inputs.size());
        desc.outputIndexes = outputs.data();
        desc.outputCount = static_cast<uint32_t>(outputs.size());
        return desc;
    }
};

}  // namespace npu::fw::test
