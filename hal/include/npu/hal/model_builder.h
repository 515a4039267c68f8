#pragma once
// Builds HAL models in code, operand by operand: the one builder of the tools' built-in and
// benchmark networks and of the tests. A SubgraphBuilder adds to one subgraph of a model (main or
// a referenced one); a ModelBuilder owns a model and builds its main subgraph.

#include <cstddef>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "npu/hal/types.h"

namespace npu::hal {

class SubgraphBuilder {
public:
    SubgraphBuilder(Model& model, Subgraph& subgraph) : model_(&model), sg_(&subgraph) {}

    uint32_t operand(OperandType type, std::vector<uint32_t> dims, OperandLifeTime lifetime,
                     float scale = 0.0f, int32_t zeroPoint = 0) {
        Operand o;
        o.type = type;
        o.dimensions = std::move(dims);
        o.scale = scale;
        o.zeroPoint = zeroPoint;
        o.lifetime = lifetime;
        sg_->operands.push_back(std::move(o));
        return static_cast<uint32_t>(sg_->operands.size() - 1);
    }
    // A SUBGRAPH_INPUT / SUBGRAPH_OUTPUT, appended to the subgraph's inputs / outputs.
    uint32_t input(OperandType type, std::vector<uint32_t> dims, float scale = 0.0f, int32_t zeroPoint = 0) {
        const uint32_t i = operand(type, std::move(dims), OperandLifeTime::SUBGRAPH_INPUT, scale, zeroPoint);
        sg_->inputIndexes.push_back(i);
        return i;
    }
    uint32_t output(OperandType type, std::vector<uint32_t> dims, float scale = 0.0f, int32_t zeroPoint = 0) {
        const uint32_t i = operand(type, std::move(dims), OperandLifeTime::SUBGRAPH_OUTPUT, scale, zeroPoint);
        sg_->outputIndexes.push_back(i);
        return i;
    }
    uint32_t temp(OperandType type, std::vector<uint32_t> dims, float scale = 0.0f, int32_t zeroPoint = 0) {
        return operand(type, std::move(dims), OperandLifeTime::TEMPORARY_VARIABLE, scale, zeroPoint);
    }
    // An omitted optional input (NO_VALUE).
    uint32_t noValue(OperandType type = OperandType::TENSOR_FLOAT32, std::vector<uint32_t> dims = {0}) {
        return operand(type, std::move(dims), OperandLifeTime::NO_VALUE);
    }
    // A CONSTANT_COPY holding `bytes`, appended to the model's operandValues at an offset
    // aligned to 8 (the padding is zero).
    uint32_t constantBytes(OperandType type, std::vector<uint32_t> dims, std::span<const std::byte> bytes,
                           float scale = 0.0f, int32_t zeroPoint = 0) {
        const uint32_t i = operand(type, std::move(dims), OperandLifeTime::CONSTANT_COPY, scale, zeroPoint);
        auto& values = model_->operandValues;
        const size_t offset = (values.size() + 7) / 8 * 8;
        sg_->operands[i].location = {0, static_cast<uint32_t>(offset), static_cast<uint32_t>(bytes.size())};
        values.resize(offset + bytes.size());
        if (!bytes.empty()) std::memcpy(values.data() + offset, bytes.data(), bytes.size());
        return i;
    }
    template <typename T>
    uint32_t constant(OperandType type, std::vector<uint32_t> dims, const std::vector<T>& values,
                      float scale = 0.0f, int32_t zeroPoint = 0) {
        return constantBytes(type, std::move(dims), std::as_bytes(std::span(values)), scale, zeroPoint);
    }
    // A CONSTANT_COPY of the operand's size, all zero bytes (INT32 etc. of dims {}: one element).
    uint32_t constant(OperandType type, std::vector<uint32_t> dims, float scale = 0.0f,
                      int32_t zeroPoint = 0) {
        size_t bytes = elementSize(type);
        for (uint32_t d : dims) bytes *= d;
        return constantBytes(type, std::move(dims), std::vector<std::byte>(bytes), scale, zeroPoint);
    }
    uint32_t scalar(int32_t value) { return constant<int32_t>(OperandType::INT32, {}, {value}); }
    uint32_t floatScalar(float value) { return constant<float>(OperandType::FLOAT32, {}, {value}); }
    uint32_t boolean(bool value) {
        return constant<uint8_t>(OperandType::BOOL, {}, {value ? uint8_t{1} : uint8_t{0}});
    }
    // A SUBGRAPH operand naming model.referenced[referencedIndex].
    uint32_t subgraph(uint32_t referencedIndex) {
        const uint32_t i = operand(OperandType::SUBGRAPH, {}, OperandLifeTime::SUBGRAPH);
        sg_->operands[i].location = {0, referencedIndex, 0};
        return i;
    }
    void operation(OperationType type, std::vector<uint32_t> inputs, std::vector<uint32_t> outputs) {
        sg_->operations.push_back({type, std::move(inputs), std::move(outputs)});
    }

    Subgraph& subgraphRef() { return *sg_; }

private:
    Model* model_;
    Subgraph* sg_;
};

namespace detail {
struct ModelHolder {
    Model model;
};
}  // namespace detail

// Owns a model and builds its main subgraph; referenced(i) builds model().referenced[i].
class ModelBuilder : private detail::ModelHolder, public SubgraphBuilder {
public:
    ModelBuilder() : SubgraphBuilder(ModelHolder::model, ModelHolder::model.main) {}
    ModelBuilder(const ModelBuilder&) = delete;
    ModelBuilder& operator=(const ModelBuilder&) = delete;

    // Adds an empty referenced subgraph; returns its index.
    uint32_t addReferenced() {
        ModelHolder::model.referenced.emplace_back();
        return static_cast<uint32_t>(ModelHolder::model.referenced.size() - 1);
    }
    // A builder of referenced subgraph `index` (valid until the next addReferenced()).
    SubgraphBuilder referenced(uint32_t index) {
        return SubgraphBuilder(ModelHolder::model, ModelHolder::model.referenced.at(index));
    }
    Model& model() { return ModelHolder::model; }
    Model build() const { return ModelHolder::model; }
};

}  // namespace npu::hal
