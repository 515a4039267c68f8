#pragma once
// What an operation sees of the graph while it is prepared (shape inference and validation) or
// executed: its inputs (type, shape, quantization, data) and its outputs.

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::ref {

size_t elementCount(const std::vector<uint32_t>& dims);
std::string dimsToString(const std::vector<uint32_t>& dims);

// One operand during preparation or one execution.
struct RuntimeOperand {
    hal::OperandType type = hal::OperandType::TENSOR_FLOAT32;
    std::vector<uint32_t> declaredDims;  // as in the model (0 = unknown)
    std::vector<uint32_t> dims;          // actual (inferred or given by the request)
    float scale = 0.0f;
    int32_t zeroPoint = 0;
    const hal::SymmPerChannelQuantParams* channelQuant = nullptr;
    hal::OperandLifeTime lifetime = hal::OperandLifeTime::TEMPORARY_VARIABLE;
    const uint8_t* external = nullptr;  // constants and request inputs (read-only)
    size_t externalLength = 0;
    std::vector<uint8_t> buffer;  // values computed by an operation
    bool omitted = false;         // NO_VALUE operand or an input passed with hasNoValue
    bool shapeKnown = false;      // preparation: dims are final
    bool hasValue = false;        // data is readable (constants at preparation)
    uint32_t subgraph = 0;        // SUBGRAPH operands: the index into Model::referenced

    const uint8_t* data() const { return external != nullptr ? external : buffer.data(); }
    // Constants and request inputs are read in place, or from an aligned copy in `buffer` when
    // `p` is not aligned for the element type (a model may place an int32 constant at any
    // offset of operandValues; ops read their elements through typed pointers).
    void setExternal(const uint8_t* p, size_t length) {
        const size_t align = hal::elementSize(type);
        externalLength = length;
        if (align > 1 && reinterpret_cast<uintptr_t>(p) % align != 0) {
            buffer.assign(p, p + length);
            external = nullptr;
        } else {
            external = p;
        }
    }
    size_t byteSize() const { return elementCount(dims) * hal::elementSize(type); }
};

// What IF and WHILE see of the model beyond their own operands: the referenced subgraphs, a way
// to run one, and the loop timeout of the current execution. The prepared model provides one per
// preparation and per execution (the loop timeout is a property of the execution).
class SubgraphRunner {
public:
    virtual ~SubgraphRunner() = default;
    // Model::referenced[index], or nullptr when out of range.
    virtual const hal::Subgraph* referenced(uint32_t index) const = 0;
    // Runs Model::referenced[index] on `inputs` (one per subgraph input, in order) and returns its
    // outputs with their shapes and data. Only at execution.
    virtual Result<std::vector<RuntimeOperand>> run(
        uint32_t index, const std::vector<const RuntimeOperand*>& inputs) const = 0;
    // How long one WHILE operation may loop (the execution's loopTimeoutDuration, clamped).
    virtual std::chrono::nanoseconds loopTimeout() const = 0;
    // The execution's deadline, if any: a loop still running then ends the execution.
    virtual hal::Deadline deadline() const = 0;
};

class OperationContext {
public:
    enum class Mode { kPrepare, kExecute };

    OperationContext(std::vector<RuntimeOperand>& operands, const hal::Operation& operation, uint32_t index,
                     Mode mode, const SubgraphRunner* subgraphs = nullptr)
        : operands_(operands), operation_(operation), index_(index), mode_(mode), subgraphs_(subgraphs) {}

    Mode mode() const { return mode_; }
    // The referenced subgraphs (IF and WHILE); nullptr where the caller gives none.
    const SubgraphRunner* subgraphs() const { return subgraphs_; }
    size_t inputCount() const { return operation_.inputs.size(); }
    size_t outputCount() const { return operation_.outputs.size(); }

    const RuntimeOperand& input(size_t i) const { return operands_[operation_.inputs[i]]; }
    hal::OperandType inputType(size_t i) const { return input(i).type; }
    const std::vector<uint32_t>& inputDims(size_t i) const { return input(i).dims; }
    uint32_t inputRank(size_t i) const { return static_cast<uint32_t>(input(i).dims.size()); }
    bool isOmitted(size_t i) const { return i >= inputCount() || input(i).omitted; }
    // The value of input i is known (always at execution; for constants at preparation).
    bool hasValue(size_t i) const { return input(i).hasValue; }
    template <typename T>
    const T* inputData(size_t i) const {
        return reinterpret_cast<const T*>(input(i).data());
    }
    template <typename T>
    T scalar(size_t i) const {
        T v{};
        if (input(i).data() != nullptr) std::memcpy(&v, input(i).data(), sizeof(T));
        return v;
    }

    RuntimeOperand& output(size_t i) { return operands_[operation_.outputs[i]]; }
    hal::OperandType outputType(size_t i) const { return operands_[operation_.outputs[i]].type; }
    // Sets output i's shape; checks it against the model's declared shape; allocates at execution.
    Status setOutputShape(size_t i, std::vector<uint32_t> dims);
    template <typename T>
    T* outputData(size_t i) {
        return reinterpret_cast<T*>(output(i).buffer.data());
    }

    // An INVALID_ARGUMENT naming the operation: "operation 3 (CONV_2D): <what>".
    std::unexpected<Error> error(const std::string& what) const;
    // The output shape depends on a value that preparation does not know yet (a non-constant
    // input): preparation stops here and execution infers the shapes.
    std::unexpected<Error> deferred();
    bool wasDeferred() const { return deferred_; }

    // Checks shared by many operations; each names the input.
    Status expectInputCount(size_t lo, size_t hi) const;
    Status expectOutputCount(size_t n) const;
    Status expectType(size_t input, hal::OperandType type) const;
    Status expectSameType(size_t input, size_t like) const;
    Status expectRank(size_t input, uint32_t rank) const;
    Status expectRankAtMost(size_t input, uint32_t rank) const;
    Status expectValue(size_t input) const;  // an operand whose value preparation needs

private:
    std::vector<RuntimeOperand>& operands_;
    const hal::Operation& operation_;
    uint32_t index_;
    Mode mode_;
    const SubgraphRunner* subgraphs_;
    bool deferred_ = false;
};

// Bytes of a quantized/float tensor read and written as float (float16 converted).
float loadFloat(hal::OperandType type, const uint8_t* data, size_t i);
void storeFloat(hal::OperandType type, uint8_t* data, size_t i, float v);
inline bool isFloatType(hal::OperandType t) {
    return t == hal::OperandType::TENSOR_FLOAT32 || t == hal::OperandType::TENSOR_FLOAT16;
}
inline bool isQuant8Type(hal::OperandType t) {
    return t == hal::OperandType::TENSOR_QUANT8_ASYMM || t == hal::OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
}
// Reads element i of a quantized tensor as its integer value.
int32_t loadQuant(hal::OperandType type, const uint8_t* data, size_t i);
void storeQuant(hal::OperandType type, uint8_t* data, size_t i, int32_t v);
// Value of element i as a real number (dequantized for quantized types).
float loadReal(const RuntimeOperand& op, size_t i);
// Stores a real number (quantizing for quantized types, with round-half-away and saturation).
void storeReal(RuntimeOperand& op, size_t i, float v);

}  // namespace npu::ref
