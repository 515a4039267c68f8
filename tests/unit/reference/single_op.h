#pragma once
// Builds and runs a one-operation model on the reference device: input 0 is a model input, the
// other inputs are constants, outputs are sized by the shapes the test expects.
#include <cstring>
#include <string>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/ref/reference_device.h"

namespace npu::test {

class SingleOp {
public:
    // The model input (operand 0).
    SingleOp(hal::OperandType type, std::vector<uint32_t> dims, std::vector<uint8_t> data, float scale = 0,
             int32_t zeroPoint = 0) {
        ins_.push_back(add(type, std::move(dims), hal::OperandLifeTime::SUBGRAPH_INPUT, scale, zeroPoint));
        inputData_ = std::move(data);
    }
    template <typename T>
    SingleOp& constant(hal::OperandType type, std::vector<uint32_t> dims, const std::vector<T>& values,
                       float scale = 0, int32_t zeroPoint = 0) {
        const uint32_t i = add(type, std::move(dims), hal::OperandLifeTime::CONSTANT_COPY, scale, zeroPoint);
        const size_t offset = model_.operandValues.size(), size = values.size() * sizeof(T);
        model_.operandValues.resize(offset + size);
        if (size > 0) std::memcpy(model_.operandValues.data() + offset, values.data(), size);
        model_.main.operands[i].location = {0, static_cast<uint32_t>(offset), static_cast<uint32_t>(size)};
        ins_.push_back(i);
        return *this;
    }
    SingleOp& output(hal::OperandType type, std::vector<uint32_t> dims, float scale = 0,
                     int32_t zeroPoint = 0) {
        outs_.push_back(add(type, dims, hal::OperandLifeTime::SUBGRAPH_OUTPUT, scale, zeroPoint));
        outDims_.push_back(std::move(dims));
        return *this;
    }
    // Prepares and executes; the outputs' bytes, or the error's message.
    Result<std::vector<std::vector<uint8_t>>> run(hal::OperationType type) {
        auto& sg = model_.main;
        sg.operations = {{type, ins_, outs_}};
        sg.inputIndexes = {ins_[0]};
        sg.outputIndexes = outs_;
        framework::TestCase tc;
        tc.model = model_;
        tc.inputs = {inputData_};
        for (size_t k = 0; k < outs_.size(); ++k) {
            size_t n = 1;
            for (uint32_t d : outDims_[k]) n *= d;
            tc.expectedOutputs.push_back(
                std::vector<uint8_t>(n * hal::elementSize(sg.operands[outs_[k]].type)));
            tc.expectedOutputDims.push_back(outDims_[k]);
            tc.outputIgnored.push_back(false);
        }
        ref::ReferenceDevice device;
        auto prepared = NPU_TRY(device.prepareModel(model_));
        auto request = NPU_TRY(framework::makeRequest(tc));
        NPU_TRY(prepared->executeSynchronously(request.request, hal::MeasureTiming::NO, std::nullopt,
                                               std::nullopt));
        return framework::readOutputs(request);
    }

private:
    uint32_t add(hal::OperandType type, std::vector<uint32_t> dims, hal::OperandLifeTime lifetime,
                 float scale, int32_t zeroPoint) {
        hal::Operand o;
        o.type = type;
        o.dimensions = std::move(dims);
        o.lifetime = lifetime;
        o.scale = scale;
        o.zeroPoint = zeroPoint;
        model_.main.operands.push_back(o);
        return static_cast<uint32_t>(model_.main.operands.size() - 1);
    }

    hal::Model model_;
    std::vector<uint32_t> ins_, outs_;
    std::vector<std::vector<uint32_t>> outDims_;
    std::vector<uint8_t> inputData_;
};

template <typename T>
std::vector<uint8_t> bytesOf(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}
template <typename T>
std::vector<T> valuesOf(const std::vector<uint8_t>& b) {
    std::vector<T> v(b.size() / sizeof(T));
    std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
    return v;
}

}  // namespace npu::test
