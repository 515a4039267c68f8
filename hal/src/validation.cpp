// Validation of models and requests against the NN HAL 1.3 rules (ValidateHal.cpp and the
// per-operation validation of the Android 11 runtime; the mutations of the 1.3 VTS
// ValidateModel.cpp / ValidateRequest.cpp). Every failure is INVALID_ARGUMENT with a message that
// names the subgraph, the operand or operation index, the field, the value and the rule.
// Everything is linear in the size of the model (plus the per-operation signature rows, a
// constant per operation).
#include "npu/hal/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "operation_signatures.h"

namespace npu::hal {
namespace {

std::string str(size_t v) {
    return std::to_string(v);
}

std::string dimsText(const std::vector<uint32_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(dims[i]);
    }
    return s + "]";
}

std::string floatText(float v) {
    std::string s = std::to_string(v);
    return s;
}

bool isValidOperandType(OperandType type) {
    const auto v = static_cast<int32_t>(type);
    return v >= 0 && v <= kOperandTypeLast;  // OEM types are not accepted by this driver
}

bool isValidOperationType(OperationType type) {
    const auto v = static_cast<int32_t>(type);
    return v >= 0 && v <= kOperationTypeLast;  // OEM_OPERATION is not accepted by this driver
}

bool isValidLifetime(OperandLifeTime lifetime) {
    const auto v = static_cast<int32_t>(lifetime);
    return v >= 0 && v <= static_cast<int32_t>(OperandLifeTime::SUBGRAPH);
}

std::string typeName(OperandType type) {
    if (isValidOperandType(type) || type == OperandType::OEM || type == OperandType::TENSOR_OEM_BYTE)
        return std::string(toString(type));
    return "type " + std::to_string(static_cast<int32_t>(type));
}

std::string lifetimeName(OperandLifeTime lifetime) {
    if (isValidLifetime(lifetime)) return std::string(toString(lifetime));
    return "lifetime " + std::to_string(static_cast<int32_t>(lifetime));
}

std::string operationName(OperationType type) {
    if (isValidOperationType(type)) return std::string(toString(type));
    return "type " + std::to_string(static_cast<int32_t>(type));
}

bool isTensorType(OperandType type) {
    return !isScalarType(type);
}

// Bytes of a fully specified operand; nullopt when a dimension is unknown or the size overflows.
std::optional<uint64_t> byteSize(const Operand& operand) {
    uint64_t size = elementSize(operand.type);
    if (isScalarType(operand.type)) return size;
    if (operand.dimensions.empty()) return std::nullopt;
    for (uint32_t d : operand.dimensions) {
        if (d == 0) return std::nullopt;
        if (size > std::numeric_limits<uint32_t>::max() / d) return std::nullopt;
        size *= d;
    }
    return size;
}

// Two operands that meet at an IF/WHILE boundary must agree on type, quantization and shape
// (a dimension of 0 or an unknown rank is compatible with any value).
std::optional<std::string> incompatibility(const Operand& a, const Operand& b) {
    if (a.type != b.type) return "type " + typeName(a.type) + " vs " + typeName(b.type);
    if (a.scale != b.scale) return "scale " + floatText(a.scale) + " vs " + floatText(b.scale);
    if (a.zeroPoint != b.zeroPoint)
        return "zeroPoint " + std::to_string(a.zeroPoint) + " vs " + std::to_string(b.zeroPoint);
    if (a.channelQuant.has_value() != b.channelQuant.has_value() ||
        (a.channelQuant && (a.channelQuant->channelDim != b.channelQuant->channelDim ||
                            a.channelQuant->scales != b.channelQuant->scales)))
        return std::string("per-channel quantization parameters differ");
    if (!a.dimensions.empty() && !b.dimensions.empty()) {
        if (a.dimensions.size() != b.dimensions.size())
            return "dimensions " + dimsText(a.dimensions) + " vs " + dimsText(b.dimensions);
        for (size_t i = 0; i < a.dimensions.size(); ++i) {
            if (a.dimensions[i] != 0 && b.dimensions[i] != 0 && a.dimensions[i] != b.dimensions[i])
                return "dimensions " + dimsText(a.dimensions) + " vs " + dimsText(b.dimensions);
        }
    }
    return std::nullopt;
}

class ModelValidator {
public:
    explicit ModelValidator(const Model& model) : model_(model) {}

    Status run() {
        if (model_.main.operations.empty())
            return invalidArgument("main subgraph: the model has no operations");
        if (model_.main.operands.empty()) return invalidArgument("main subgraph: the model has no operands");
        for (size_t i = 0; i < model_.pools.size(); ++i) {
            if (!model_.pools[i])
                return invalidArgument("model pool " + str(i) + " is null (expected a memory)");
        }
        NPU_TRY(validateSubgraph(model_.main, -1));
        for (size_t i = 0; i < model_.referenced.size(); ++i)
            NPU_TRY(validateSubgraph(model_.referenced[i], static_cast<int64_t>(i)));
        // Control flow needs every subgraph's own structure to be sound first.
        NPU_TRY(validateControlFlow(model_.main, -1));
        for (size_t i = 0; i < model_.referenced.size(); ++i)
            NPU_TRY(validateControlFlow(model_.referenced[i], static_cast<int64_t>(i)));
        return checkNoReferenceCycles();
    }

private:
    static std::string subgraphName(int64_t index) {
        return index < 0 ? "main subgraph" : "referenced subgraph " + std::to_string(index);
    }
    static std::string operandWhere(int64_t sg, size_t i) { return subgraphName(sg) + ": operand " + str(i); }
    static std::string operationWhere(int64_t sg, size_t i, OperationType type) {
        return subgraphName(sg) + ": operation " + str(i) + " (" + operationName(type) + ")";
    }

    Status validateSubgraph(const Subgraph& sg, int64_t sgIndex) {
        for (size_t i = 0; i < sg.operands.size(); ++i) NPU_TRY(validateOperand(sg.operands[i], sgIndex, i));
        NPU_TRY(validateOperations(sg, sgIndex));
        NPU_TRY(validateIoIndexes(sg, sgIndex, sg.inputIndexes, OperandLifeTime::SUBGRAPH_INPUT, "input"));
        NPU_TRY(validateIoIndexes(sg, sgIndex, sg.outputIndexes, OperandLifeTime::SUBGRAPH_OUTPUT, "output"));
        return validateExecutionOrder(sg, sgIndex);
    }

    Status validateOperand(const Operand& operand, int64_t sg, size_t index) {
        // Built only when there is something to report: validation runs on every prepare.
        const auto where = [&] { return operandWhere(sg, index); };
        const OperandType type = operand.type;
        if (!isValidOperandType(type))
            return invalidArgument(where() + ": operand type " + typeName(type) +
                                   " is not a HAL operand type (valid: 0.." +
                                   std::to_string(kOperandTypeLast) + ", OEM types are not supported)");

        // Rank.
        if (isScalarType(type) && !operand.dimensions.empty())
            return invalidArgument(where() + ": scalar type " + typeName(type) + " has rank " +
                                   str(operand.dimensions.size()) + " (dimensions " +
                                   dimsText(operand.dimensions) + "), expected rank 0");
        const bool constant = operand.lifetime == OperandLifeTime::CONSTANT_COPY ||
                              operand.lifetime == OperandLifeTime::CONSTANT_REFERENCE;
        if (constant && isTensorType(type) && operand.dimensions.empty())
            return invalidArgument(where() + ": constant tensor of type " + typeName(type) +
                                   " has unknown rank (a constant must have dimensions)");

        NPU_TRY(validateScale(operand, where));
        NPU_TRY(validateZeroPoint(operand, where));
        NPU_TRY(validateChannelQuant(operand, where));
        return validateLifetime(operand, where);
    }

    static Status validateScale(const Operand& operand, const auto& where) {
        const float scale = operand.scale;
        switch (operand.type) {
            case OperandType::TENSOR_INT32:
                // TENSOR_INT32 is used as a bias (scale = input scale * filter scale) or as plain
                // integers (scale 0): any non-negative scale is allowed.
                if (!(scale >= 0.0f) || std::isinf(scale))
                    return invalidArgument(where() + ": TENSOR_INT32 has scale " + floatText(scale) +
                                           ", expected a finite scale >= 0");
                return {};
            case OperandType::TENSOR_QUANT8_ASYMM:
            case OperandType::TENSOR_QUANT8_ASYMM_SIGNED:
            case OperandType::TENSOR_QUANT8_SYMM:
            case OperandType::TENSOR_QUANT16_ASYMM:
            case OperandType::TENSOR_QUANT16_SYMM:
                if (!(scale > 0.0f) || std::isinf(scale))
                    return invalidArgument(where() + ": quantized type " + typeName(operand.type) +
                                           " has scale " + floatText(scale) +
                                           ", expected a finite scale > 0");
                return {};
            default:
                // Floats, booleans, scalars, SUBGRAPH and TENSOR_QUANT8_SYMM_PER_CHANNEL (whose
                // scales live in the per-channel parameters).
                if (scale != 0.0f)
                    return invalidArgument(where() + ": type " + typeName(operand.type) + " has scale " +
                                           floatText(scale) + ", expected 0");
                return {};
        }
    }

    static Status validateZeroPoint(const Operand& operand, const auto& where) {
        const int32_t zp = operand.zeroPoint;
        int32_t lo = 0;
        int32_t hi = 0;
        switch (operand.type) {
            case OperandType::TENSOR_QUANT8_ASYMM:
                hi = 255;
                break;
            case OperandType::TENSOR_QUANT8_ASYMM_SIGNED:
                lo = -128;
                hi = 127;
                break;
            case OperandType::TENSOR_QUANT16_ASYMM:
                hi = 65535;
                break;
            default:
                break;  // every other type (including the symmetric ones) requires 0
        }
        if (zp < lo || zp > hi) {
            if (lo == hi)
                return invalidArgument(where() + ": type " + typeName(operand.type) + " has zeroPoint " +
                                       std::to_string(zp) + ", expected 0");
            return invalidArgument(where() + ": type " + typeName(operand.type) + " has zeroPoint " +
                                   std::to_string(zp) + ", expected a value in [" + std::to_string(lo) +
                                   ", " + std::to_string(hi) + "]");
        }
        return {};
    }

    static Status validateChannelQuant(const Operand& operand, const auto& where) {
        const bool perChannel = operand.type == OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL;
        if (!perChannel) {
            if (operand.channelQuant)
                return invalidArgument(where() + ": type " + typeName(operand.type) +
                                       " has per-channel quantization parameters (only "
                                       "TENSOR_QUANT8_SYMM_PER_CHANNEL may have them)");
            return {};
        }
        if (!operand.channelQuant)
            return invalidArgument(where() +
                                   ": TENSOR_QUANT8_SYMM_PER_CHANNEL has no per-channel "
                                   "quantization parameters");
        const auto& cq = *operand.channelQuant;
        const size_t rank = operand.dimensions.size();
        if (cq.channelDim >= rank)
            return invalidArgument(where() + ": per-channel channelDim " + std::to_string(cq.channelDim) +
                                   " is out of range for rank " + str(rank));
        const uint32_t channels = operand.dimensions[cq.channelDim];
        if (channels == 0)
            return invalidArgument(where() + ": per-channel dimension " + std::to_string(cq.channelDim) +
                                   " is unknown (0)");
        if (cq.scales.size() != channels)
            return invalidArgument(where() + ": per-channel scales has " + str(cq.scales.size()) +
                                   " entries, expected " + std::to_string(channels) + " (dimension " +
                                   std::to_string(cq.channelDim) + ")");
        for (size_t i = 0; i < cq.scales.size(); ++i) {
            if (!(cq.scales[i] > 0.0f) || std::isinf(cq.scales[i]))
                return invalidArgument(where() + ": per-channel scale " + str(i) + " is " +
                                       floatText(cq.scales[i]) + ", expected a finite scale > 0");
        }
        return {};
    }

    Status validateLifetime(const Operand& operand, const auto& where) {
        const DataLocation& loc = operand.location;
        const auto locText = [&] {
            return "{poolIndex " + std::to_string(loc.poolIndex) + ", offset " + std::to_string(loc.offset) +
                   ", length " + std::to_string(loc.length) + ", padding " + std::to_string(loc.padding) +
                   "}";
        };
        switch (operand.lifetime) {
            case OperandLifeTime::CONSTANT_COPY:
                if (loc.poolIndex != 0 || loc.padding != 0)
                    return invalidArgument(where() + ": CONSTANT_COPY location " + locText() +
                                           " must have poolIndex 0 and padding 0");
                if (uint64_t{loc.offset} + loc.length > model_.operandValues.size())
                    return invalidArgument(where() + ": CONSTANT_COPY location " + locText() +
                                           " is outside operandValues (" + str(model_.operandValues.size()) +
                                           " bytes)");
                break;
            case OperandLifeTime::CONSTANT_REFERENCE:
                if (loc.poolIndex >= model_.pools.size())
                    return invalidArgument(where() + ": CONSTANT_REFERENCE location " + locText() +
                                           " names pool " + std::to_string(loc.poolIndex) +
                                           " but the model has " + str(model_.pools.size()) + " pools");
                if (uint64_t{loc.offset} + loc.length + loc.padding > model_.pools[loc.poolIndex]->size())
                    return invalidArgument(where() + ": CONSTANT_REFERENCE location " + locText() +
                                           " is outside pool " + std::to_string(loc.poolIndex) + " (" +
                                           str(model_.pools[loc.poolIndex]->size()) + " bytes)");
                break;
            case OperandLifeTime::TEMPORARY_VARIABLE:
            case OperandLifeTime::SUBGRAPH_INPUT:
            case OperandLifeTime::SUBGRAPH_OUTPUT:
            case OperandLifeTime::NO_VALUE:
                if (loc.poolIndex != 0 || loc.offset != 0 || loc.length != 0 || loc.padding != 0)
                    return invalidArgument(where() + ": " + lifetimeName(operand.lifetime) +
                                           " has location " + locText() + ", expected none (all zero)");
                break;
            case OperandLifeTime::SUBGRAPH:
                if (loc.poolIndex != 0 || loc.length != 0 || loc.padding != 0)
                    return invalidArgument(where() + ": SUBGRAPH location " + locText() +
                                           " must have poolIndex 0, length 0 and padding 0 "
                                           "(offset is the subgraph index)");
                if (loc.offset >= model_.referenced.size())
                    return invalidArgument(where() + ": SUBGRAPH refers to referenced subgraph " +
                                           std::to_string(loc.offset) + " but the model has " +
                                           str(model_.referenced.size()));
                break;
            default:
                return invalidArgument(where() + ": " + lifetimeName(operand.lifetime) +
                                       " is not a valid operand lifetime");
        }
        if ((operand.type == OperandType::SUBGRAPH) != (operand.lifetime == OperandLifeTime::SUBGRAPH))
            return invalidArgument(where() + ": type " + typeName(operand.type) + " cannot have lifetime " +
                                   lifetimeName(operand.lifetime) +
                                   " (SUBGRAPH type and SUBGRAPH lifetime go together)");
        if (operand.lifetime == OperandLifeTime::CONSTANT_COPY ||
            operand.lifetime == OperandLifeTime::CONSTANT_REFERENCE) {
            const auto expected = byteSize(operand);
            if (expected && *expected != loc.length)
                return invalidArgument(where() + ": constant of type " + typeName(operand.type) +
                                       " and dimensions " + dimsText(operand.dimensions) + " has length " +
                                       std::to_string(loc.length) + ", expected " +
                                       std::to_string(*expected) + " bytes");
        }
        return {};
    }

    Status validateOperations(const Subgraph& sg, int64_t sgIndex) {
        const size_t operandCount = sg.operands.size();
        std::vector<uint8_t> written(operandCount, 0);
        for (size_t i = 0; i < sg.operations.size(); ++i) {
            const Operation& op = sg.operations[i];
            // Built only when there is something to report: validation runs on every prepare.
            const auto where = [&] { return operationWhere(sgIndex, i, op.type); };
            if (!isValidOperationType(op.type))
                return invalidArgument(
                    where() + ": operation type " + std::to_string(static_cast<int32_t>(op.type)) +
                    " is not a HAL operation type (valid: 0.." + std::to_string(kOperationTypeLast) +
                    ", OEM operations are not supported)");
            for (size_t k = 0; k < op.inputs.size(); ++k) {
                if (op.inputs[k] >= operandCount)
                    return invalidArgument(
                        where() + ": input " + str(k) + " is operand " + std::to_string(op.inputs[k]) +
                        ", out of range (the subgraph has " + str(operandCount) + " operands)");
            }
            for (size_t k = 0; k < op.outputs.size(); ++k) {
                if (op.outputs[k] >= operandCount)
                    return invalidArgument(
                        where() + ": output " + str(k) + " is operand " + std::to_string(op.outputs[k]) +
                        ", out of range (the subgraph has " + str(operandCount) + " operands)");
            }
            if (op.type == OperationType::IF || op.type == OperationType::WHILE) {
                // Counts and the condition here; the calls are checked in validateControlFlow.
                if (op.inputs.size() < 3 || op.outputs.empty())
                    return invalidArgument(where() + ": has " + str(op.inputs.size()) + " inputs and " +
                                           str(op.outputs.size()) +
                                           " outputs, expected at least 3 inputs and 1 output");
            } else {
                if (auto status = validateOperationSignature(op, sg.operands); !status)
                    return invalidArgument(where() + ": " + status.error().message);
                if (auto status = validateShapeRules(op, sg.operands); !status)
                    return invalidArgument(where() + ": " + status.error().message);
            }
            for (size_t k = 0; k < op.outputs.size(); ++k) {
                const uint32_t o = op.outputs[k];
                const Operand& operand = sg.operands[o];
                if (operand.lifetime != OperandLifeTime::TEMPORARY_VARIABLE &&
                    operand.lifetime != OperandLifeTime::SUBGRAPH_OUTPUT)
                    return invalidArgument(where() + ": output " + str(k) + " (operand " + std::to_string(o) +
                                           ") has lifetime " + lifetimeName(operand.lifetime) +
                                           ", expected TEMPORARY_VARIABLE or SUBGRAPH_OUTPUT");
                if (written[o])
                    return invalidArgument(where() + ": output " + str(k) + " (operand " + std::to_string(o) +
                                           ") is written a second time (an operand has one writer)");
                written[o] = 1;
            }
        }
        for (size_t i = 0; i < operandCount; ++i) {
            const auto lifetime = sg.operands[i].lifetime;
            if (!written[i] && (lifetime == OperandLifeTime::TEMPORARY_VARIABLE ||
                                lifetime == OperandLifeTime::SUBGRAPH_OUTPUT))
                return invalidArgument(operandWhere(sgIndex, i) + ": " + lifetimeName(lifetime) +
                                       " is never written by an operation");
        }
        return {};
    }

    // Shape rules that the HAL checks at model validation (beyond the signature's rank rules).
    static Status validateShapeRules(const Operation& op, const std::vector<Operand>& operands) {
        if (op.type == OperationType::CAST) {
            // CAST keeps the shape: known input and output dimensions must be equal.
            const auto& in = operands[op.inputs[0]].dimensions;
            const auto& out = operands[op.outputs[0]].dimensions;
            const bool outKnown = !out.empty() && std::ranges::find(out, 0u) == out.end();
            if (!in.empty() && outKnown && in != out)
                return invalidArgument("output 0 (operand " + std::to_string(op.outputs[0]) +
                                       ") has dimensions " + dimsText(out) + " but input 0 (operand " +
                                       std::to_string(op.inputs[0]) + ") has " + dimsText(in) +
                                       " (CAST keeps the shape)");
        }
        return {};
    }

    static Status validateIoIndexes(const Subgraph& sg, int64_t sgIndex, const std::vector<uint32_t>& indexes,
                                    OperandLifeTime lifetime, const char* what) {
        std::vector<uint8_t> listed(sg.operands.size(), 0);
        for (size_t k = 0; k < indexes.size(); ++k) {
            const uint32_t i = indexes[k];
            if (i >= sg.operands.size())
                return invalidArgument(subgraphName(sgIndex) + ": " + what + " " + str(k) + " is operand " +
                                       std::to_string(i) + ", out of range (the subgraph has " +
                                       str(sg.operands.size()) + " operands)");
            if (sg.operands[i].lifetime != lifetime)
                return invalidArgument(subgraphName(sgIndex) + ": " + what + " " + str(k) + " (operand " +
                                       std::to_string(i) + ") has lifetime " +
                                       lifetimeName(sg.operands[i].lifetime) + ", expected " +
                                       lifetimeName(lifetime));
            if (listed[i])
                return invalidArgument(subgraphName(sgIndex) + ": " + what + " " + str(k) + " (operand " +
                                       std::to_string(i) + ") is listed more than once");
            listed[i] = 1;
        }
        for (size_t i = 0; i < sg.operands.size(); ++i) {
            if (sg.operands[i].lifetime == lifetime && !listed[i])
                return invalidArgument(operandWhere(sgIndex, i) + ": has lifetime " + lifetimeName(lifetime) +
                                       " but is not listed in the subgraph's " + what + " indexes");
        }
        return {};
    }

    static Status validateExecutionOrder(const Subgraph& sg, int64_t sgIndex) {
        std::vector<uint8_t> known(sg.operands.size(), 0);
        for (size_t i = 0; i < sg.operands.size(); ++i) {
            const auto lifetime = sg.operands[i].lifetime;
            known[i] = lifetime != OperandLifeTime::TEMPORARY_VARIABLE &&
                       lifetime != OperandLifeTime::SUBGRAPH_OUTPUT;
        }
        for (size_t i = 0; i < sg.operations.size(); ++i) {
            const Operation& op = sg.operations[i];
            for (size_t k = 0; k < op.inputs.size(); ++k) {
                if (!known[op.inputs[k]])
                    return invalidArgument(operationWhere(sgIndex, i, op.type) + ": input " + str(k) +
                                           " (operand " + std::to_string(op.inputs[k]) +
                                           ") is read before any operation writes it "
                                           "(operations must be in execution order)");
            }
            for (uint32_t o : op.outputs) known[o] = 1;
        }
        return {};
    }

    const Subgraph* referencedBy(const Operand& operand) const {
        if (operand.type != OperandType::SUBGRAPH || operand.lifetime != OperandLifeTime::SUBGRAPH)
            return nullptr;
        if (operand.location.offset >= model_.referenced.size()) return nullptr;
        return &model_.referenced[operand.location.offset];
    }

    Status checkSubgraphOperand(const Subgraph& sg, const Operation& op, size_t k, const std::string& where,
                                const Subgraph** out) const {
        const Operand& operand = sg.operands[op.inputs[k]];
        *out = referencedBy(operand);
        if (!*out)
            return invalidArgument(where + ": input " + str(k) + " (operand " + std::to_string(op.inputs[k]) +
                                   ") has type " + typeName(operand.type) + " and lifetime " +
                                   lifetimeName(operand.lifetime) +
                                   ", expected a SUBGRAPH operand referring to a referenced subgraph");
        return {};
    }

    static Status checkCondition(const Operand& operand, const std::string& what) {
        if (operand.type != OperandType::TENSOR_BOOL8 || operand.dimensions.size() != 1 ||
            operand.dimensions[0] != 1)
            return invalidArgument(what + " has type " + typeName(operand.type) + " and dimensions " +
                                   dimsText(operand.dimensions) +
                                   ", expected TENSOR_BOOL8 of dimensions [1]");
        return {};
    }

    static Status checkCompatible(const Operand& inner, const Operand& outer, const std::string& what) {
        if (auto why = incompatibility(inner, outer)) return invalidArgument(what + " do not match: " + *why);
        return {};
    }

    Status validateControlFlow(const Subgraph& sg, int64_t sgIndex) const {
        for (size_t i = 0; i < sg.operations.size(); ++i) {
            const Operation& op = sg.operations[i];
            if (op.type == OperationType::IF) {
                NPU_TRY(validateIf(sg, op, operationWhere(sgIndex, i, op.type)));
            } else if (op.type == OperationType::WHILE) {
                NPU_TRY(validateWhile(sg, op, operationWhere(sgIndex, i, op.type)));
            }
        }
        return {};
    }

    Status validateIf(const Subgraph& sg, const Operation& op, const std::string& where) const {
        constexpr size_t kFirstInput = 3;
        if (sg.operands[op.inputs[0]].lifetime == OperandLifeTime::NO_VALUE)
            return invalidArgument(where + ": input 0 (operand " + std::to_string(op.inputs[0]) +
                                   ", the condition) is NO_VALUE; an IF needs a condition value");
        NPU_TRY(checkCondition(
            sg.operands[op.inputs[0]],
            where + ": input 0 (operand " + std::to_string(op.inputs[0]) + ", the condition)"));
        for (size_t b = 1; b <= 2; ++b) {
            const Subgraph* branch = nullptr;
            NPU_TRY(checkSubgraphOperand(sg, op, b, where, &branch));
            const std::string name = std::string(b == 1 ? "then" : "else") + " branch (referenced subgraph " +
                                     std::to_string(sg.operands[op.inputs[b]].location.offset) + ")";
            if (op.inputs.size() - kFirstInput != branch->inputIndexes.size())
                return invalidArgument(where + ": passes " + str(op.inputs.size() - kFirstInput) +
                                       " inputs but the " + name + " has " +
                                       str(branch->inputIndexes.size()));
            if (op.outputs.size() != branch->outputIndexes.size())
                return invalidArgument(where + ": has " + str(op.outputs.size()) + " outputs but the " +
                                       name + " has " + str(branch->outputIndexes.size()));
            for (size_t k = 0; k < branch->inputIndexes.size(); ++k)
                NPU_TRY(checkCompatible(
                    branch->operands[branch->inputIndexes[k]], sg.operands[op.inputs[kFirstInput + k]],
                    where + ": input " + str(kFirstInput + k) + " (operand " +
                        std::to_string(op.inputs[kFirstInput + k]) + ") and " + name + " input " + str(k)));
            for (size_t k = 0; k < branch->outputIndexes.size(); ++k)
                NPU_TRY(checkCompatible(
                    branch->operands[branch->outputIndexes[k]], sg.operands[op.outputs[k]],
                    where + ": output " + str(k) + " (operand " + std::to_string(op.outputs[k]) + ") and " +
                        name + " output " + str(k)));
        }
        return {};
    }

    Status validateWhile(const Subgraph& sg, const Operation& op, const std::string& where) const {
        constexpr size_t kFirstInput = 2;
        const size_t outerInputs = op.inputs.size() - kFirstInput;
        const Subgraph* cond = nullptr;
        NPU_TRY(checkSubgraphOperand(sg, op, 0, where, &cond));
        const std::string condName = "condition (referenced subgraph " +
                                     std::to_string(sg.operands[op.inputs[0]].location.offset) + ")";
        if (cond->inputIndexes.size() != outerInputs)
            return invalidArgument(where + ": passes " + str(outerInputs) + " inputs but the " + condName +
                                   " has " + str(cond->inputIndexes.size()));
        if (cond->outputIndexes.size() != 1)
            return invalidArgument(where + ": the " + condName + " has " + str(cond->outputIndexes.size()) +
                                   " outputs, expected 1");
        for (size_t k = 0; k < outerInputs; ++k)
            NPU_TRY(checkCompatible(
                cond->operands[cond->inputIndexes[k]], sg.operands[op.inputs[kFirstInput + k]],
                where + ": input " + str(kFirstInput + k) + " (operand " +
                    std::to_string(op.inputs[kFirstInput + k]) + ") and " + condName + " input " + str(k)));
        NPU_TRY(
            checkCondition(cond->operands[cond->outputIndexes[0]], where + ": the " + condName + " output"));

        const Subgraph* body = nullptr;
        NPU_TRY(checkSubgraphOperand(sg, op, 1, where, &body));
        const std::string bodyName =
            "body (referenced subgraph " + std::to_string(sg.operands[op.inputs[1]].location.offset) + ")";
        const size_t bodyInputs = body->inputIndexes.size();
        const size_t bodyOutputs = body->outputIndexes.size();
        if (bodyInputs != outerInputs)
            return invalidArgument(where + ": passes " + str(outerInputs) + " inputs but the " + bodyName +
                                   " has " + str(bodyInputs));
        if (bodyOutputs < op.outputs.size())
            return invalidArgument(where + ": has " + str(op.outputs.size()) + " outputs but the " +
                                   bodyName + " has only " + str(bodyOutputs));
        if (bodyOutputs > bodyInputs)
            return invalidArgument(where + ": the " + bodyName + " has " + str(bodyOutputs) +
                                   " outputs, more than its " + str(bodyInputs) + " inputs");
        for (size_t k = 0; k < bodyInputs; ++k)
            NPU_TRY(checkCompatible(
                body->operands[body->inputIndexes[k]], sg.operands[op.inputs[kFirstInput + k]],
                where + ": input " + str(kFirstInput + k) + " (operand " +
                    std::to_string(op.inputs[kFirstInput + k]) + ") and " + bodyName + " input " + str(k)));
        for (size_t k = 0; k < op.outputs.size(); ++k)
            NPU_TRY(checkCompatible(body->operands[body->outputIndexes[k]], sg.operands[op.outputs[k]],
                                    where + ": output " + str(k) + " (operand " +
                                        std::to_string(op.outputs[k]) + ") and " + bodyName + " output " +
                                        str(k)));
        for (size_t k = 0; k < bodyOutputs; ++k)
            NPU_TRY(
                checkCompatible(body->operands[body->inputIndexes[k]], body->operands[body->outputIndexes[k]],
                                where + ": the " + bodyName + " input " + str(k) + " and output " + str(k)));
        return {};
    }

    // Depth-first search over "referenced subgraph -> subgraphs its SUBGRAPH operands name",
    // iterative and linear. The main subgraph cannot be referenced (SUBGRAPH operands index
    // Model::referenced), so no cycle can pass through it.
    Status checkNoReferenceCycles() const {
        const size_t n = model_.referenced.size();
        enum : uint8_t { kUnvisited, kOnPath, kDone };
        std::vector<uint8_t> state(n, kUnvisited);
        struct Frame {
            size_t subgraph;
            size_t nextOperand;
        };
        std::vector<Frame> stack;
        for (size_t root = 0; root < n; ++root) {
            if (state[root] != kUnvisited) continue;
            state[root] = kOnPath;
            stack.push_back({root, 0});
            while (!stack.empty()) {
                Frame& f = stack.back();
                const auto& operands = model_.referenced[f.subgraph].operands;
                if (f.nextOperand == operands.size()) {
                    state[f.subgraph] = kDone;
                    stack.pop_back();
                    continue;
                }
                const size_t operandIndex = f.nextOperand++;
                const Operand& o = operands[operandIndex];
                if (o.lifetime != OperandLifeTime::SUBGRAPH) continue;
                const size_t next = o.location.offset;  // in range: checked with the operand
                if (state[next] == kOnPath)
                    return invalidArgument(
                        subgraphName(static_cast<int64_t>(f.subgraph)) + ": operand " + str(operandIndex) +
                        " refers to referenced subgraph " + str(next) +
                        ", which closes a reference cycle (a subgraph may not call itself)");
                if (state[next] == kUnvisited) {
                    state[next] = kOnPath;
                    stack.push_back({next, 0});
                }
            }
        }
        return {};
    }

    const Model& model_;
};

Status validateArguments(const std::vector<RequestArgument>& args, const Subgraph& main,
                         const std::vector<uint32_t>& indexes, const std::vector<uint64_t>& poolSizes,
                         const std::vector<uint8_t>& poolIsToken, bool isInput) {
    const char* what = isInput ? "input" : "output";
    if (args.size() != indexes.size())
        return invalidArgument(std::string("request has ") + str(args.size()) + " " + what +
                               "s but the model has " + str(indexes.size()));
    for (size_t k = 0; k < args.size(); ++k) {
        const RequestArgument& arg = args[k];
        const DataLocation& loc = arg.location;
        // The texts of an error, built only for one (not on every execution's way).
        auto where = [&] { return std::string("request ") + what + " " + str(k); };
        auto locText = [&] {
            return "{poolIndex " + std::to_string(loc.poolIndex) + ", offset " + std::to_string(loc.offset) +
                   ", length " + std::to_string(loc.length) + ", padding " + std::to_string(loc.padding) +
                   "}";
        };
        if (indexes[k] >= main.operands.size())
            return invalidArgument(where() + ": the model's " + what + " index " +
                                   std::to_string(indexes[k]) +
                                   " is out of range (validate the model first)");
        const Operand& operand = main.operands[indexes[k]];
        if (arg.hasNoValue) {
            if (loc.poolIndex != 0 || loc.offset != 0 || loc.length != 0 || loc.padding != 0 ||
                !arg.dimensions.empty())
                return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) +
                                       "): has no value but has location " + locText() + " and dimensions " +
                                       dimsText(arg.dimensions) + " (expected none)");
            continue;
        }
        if (loc.poolIndex >= poolSizes.size())
            return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) + "): location " +
                                   locText() + " names pool " + std::to_string(loc.poolIndex) +
                                   " but the request has " + str(poolSizes.size()) + " pools");
        if (poolIsToken[loc.poolIndex]) {
            if (loc.offset != 0 || loc.length != 0 || loc.padding != 0)
                return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) + "): location " +
                                       locText() + " in driver-managed buffer pool " +
                                       std::to_string(loc.poolIndex) +
                                       " must have offset, length and padding 0");
        } else if (uint64_t{loc.offset} + loc.length + loc.padding > poolSizes[loc.poolIndex]) {
            return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) + "): location " +
                                   locText() + " is outside pool " + std::to_string(loc.poolIndex) + " (" +
                                   std::to_string(poolSizes[loc.poolIndex]) + " bytes)");
        }

        const auto& modelDims = operand.dimensions;
        const auto& dims = arg.dimensions;
        if (dims.empty()) {
            // Outputs may stay unspecified (dynamic output shapes); inputs must be fully known.
            if (!isInput || isScalarType(operand.type)) continue;
            if (modelDims.empty())
                return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) +
                                       "): the model gives no rank and the request gives no dimensions");
            for (size_t d = 0; d < modelDims.size(); ++d) {
                if (modelDims[d] == 0)
                    return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) +
                                           "): model dimension " + str(d) +
                                           " is unknown (0) and the request gives no dimensions");
            }
            continue;
        }
        if (isScalarType(operand.type))
            return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) +
                                   "): has dimensions " + dimsText(dims) +
                                   " but the operand is a scalar of type " + typeName(operand.type));
        if (!modelDims.empty() && dims.size() != modelDims.size())
            return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) + "): has rank " +
                                   str(dims.size()) + " (dimensions " + dimsText(dims) +
                                   ") but the model has rank " + str(modelDims.size()) + " (dimensions " +
                                   dimsText(modelDims) + ")");
        for (size_t d = 0; d < dims.size(); ++d) {
            if (!modelDims.empty() && modelDims[d] != 0 && modelDims[d] != dims[d])
                return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) + "): dimension " +
                                       str(d) + " is " + std::to_string(dims[d]) +
                                       " but the model fixes it to " + std::to_string(modelDims[d]));
            if (isInput && dims[d] == 0)
                return invalidArgument(where() + " (operand " + std::to_string(indexes[k]) + "): dimension " +
                                       str(d) + " is 0 (an input must be fully specified)");
        }
    }
    return {};
}

}  // namespace

Status validateModel(const Model& model) {
    return ModelValidator(model).run();
}

Status validateRequest(const Request& request, const Model& model) {
    std::vector<uint64_t> poolSizes(request.pools.size(), 0);
    std::vector<uint8_t> poolIsToken(request.pools.size(), 0);
    for (size_t i = 0; i < request.pools.size(); ++i) {
        const auto& pool = request.pools[i];
        if (const auto* memory = std::get_if<std::shared_ptr<Memory>>(&pool)) {
            if (!*memory) return invalidArgument("request pool " + str(i) + " is a null memory");
            poolSizes[i] = (*memory)->size();
        } else {
            if (std::get<uint32_t>(pool) == 0)
                return invalidArgument("request pool " + str(i) + " is a buffer token 0 (tokens are > 0)");
            poolIsToken[i] = 1;
        }
    }
    NPU_TRY(
        validateArguments(request.inputs, model.main, model.main.inputIndexes, poolSizes, poolIsToken, true));
    return validateArguments(request.outputs, model.main, model.main.outputIndexes, poolSizes, poolIsToken,
                             false);
}

std::optional<std::vector<uint32_t>> combineDimensions(const std::vector<uint32_t>& a,
                                                       const std::vector<uint32_t>& b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    if (a.size() != b.size()) return std::nullopt;
    std::vector<uint32_t> out(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] != 0 && b[i] != 0 && a[i] != b[i]) return std::nullopt;
        out[i] = a[i] != 0 ? a[i] : b[i];
    }
    return out;
}

std::optional<uint64_t> tensorByteSize(OperandType type, const std::vector<uint32_t>& dimensions) {
    Operand o;
    o.type = type;
    o.dimensions = dimensions;
    return byteSize(o);
}

Result<Operand> validateBufferRoles(const BufferDesc& desc, const std::vector<const Model*>& models,
                                    const std::vector<BufferRole>& inputRoles,
                                    const std::vector<BufferRole>& outputRoles) {
    if (models.empty()) return invalidArgument("allocate: no prepared model given");
    if (inputRoles.empty() && outputRoles.empty())
        return invalidArgument("allocate: no input or output role");
    std::optional<Operand> first;
    std::string firstName;
    std::vector<uint32_t> dims = desc.dimensions;
    std::set<std::tuple<uint32_t, bool, uint32_t>> seen;
    for (const bool isInput : {true, false}) {
        const auto& roles = isInput ? inputRoles : outputRoles;
        for (size_t r = 0; r < roles.size(); ++r) {
            const BufferRole& role = roles[r];
            const std::string name = std::string(isInput ? "input" : "output") + " role " + str(r) +
                                     " {modelIndex " + std::to_string(role.modelIndex) + ", ioIndex " +
                                     std::to_string(role.ioIndex) + "}";
            if (role.modelIndex >= models.size() || models[role.modelIndex] == nullptr)
                return invalidArgument("allocate: " + name + ": model index out of range (" +
                                       str(models.size()) + " prepared models)");
            const Subgraph& main = models[role.modelIndex]->main;
            const auto& io = isInput ? main.inputIndexes : main.outputIndexes;
            if (role.ioIndex >= io.size() || io[role.ioIndex] >= main.operands.size())
                return invalidArgument("allocate: " + name + ": the model has " + str(io.size()) +
                                       (isInput ? " inputs" : " outputs"));
            if (!(role.probability > 0.0f && role.probability <= 1.0f))
                return invalidArgument("allocate: " + name + ": probability " + floatText(role.probability) +
                                       " is outside (0, 1]");
            if (!seen.insert({role.modelIndex, isInput, role.ioIndex}).second)
                return invalidArgument("allocate: " + name + " is given twice");
            const Operand& operand = main.operands[io[role.ioIndex]];
            if (isScalarType(operand.type))
                return invalidArgument("allocate: " + name + ": operand of scalar type " +
                                       typeName(operand.type) + " (a device buffer holds a tensor)");
            if (!first) {
                first = operand;
                firstName = name;
            } else {
                Operand shapeless = operand;
                shapeless.dimensions.clear();
                Operand reference = *first;
                reference.dimensions.clear();
                if (auto why = incompatibility(reference, shapeless))
                    return invalidArgument("allocate: " + name + " conflicts with " + firstName + ": " +
                                           *why);
            }
            auto combined = combineDimensions(dims, operand.dimensions);
            if (!combined)
                return invalidArgument("allocate: " + name + ": dimensions " + dimsText(operand.dimensions) +
                                       " conflict with " + dimsText(dims) +
                                       " (the descriptor's and earlier roles')");
            dims = std::move(*combined);
        }
    }
    Operand out = *first;
    out.dimensions = std::move(dims);
    out.lifetime = OperandLifeTime::TEMPORARY_VARIABLE;
    out.location = {};
    return out;
}

Status validateExecutionPreference(ExecutionPreference preference) {
    const auto v = static_cast<int32_t>(preference);
    if (v < static_cast<int32_t>(ExecutionPreference::LOW_POWER) ||
        v > static_cast<int32_t>(ExecutionPreference::SUSTAINED_SPEED))
        return invalidArgument("execution preference " + std::to_string(v) +
                               " is out of range [0, 2] (LOW_POWER, FAST_SINGLE_ANSWER, SUSTAINED_SPEED)");
    return {};
}

Status validatePriority(Priority priority) {
    const auto v = static_cast<int32_t>(priority);
    if (v < static_cast<int32_t>(Priority::LOW) || v > static_cast<int32_t>(Priority::HIGH))
        return invalidArgument("priority " + std::to_string(v) +
                               " is out of range [0, 2] (LOW, MEDIUM, HIGH)");
    return {};
}

}  // namespace npu::hal
