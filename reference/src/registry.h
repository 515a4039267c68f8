#pragma once
// OperationType -> {supports, prepare, execute}. One file per operation family in ops/ adds its
// entries; preparation runs `prepare` once (validation and shape inference), execution runs
// `execute` without checking again.

#include <vector>

#include "operation_context.h"

namespace npu::ref {

struct OperationRegistration {
    hal::OperationType type;
    // True iff the operand types of this operation are implemented (never looks at values).
    bool (*supports)(const hal::Subgraph& subgraph, const hal::Operation& operation);
    Status (*prepare)(OperationContext& context);
    Status (*execute)(OperationContext& context);
};

const OperationRegistration* findOperation(hal::OperationType type);
const std::vector<OperationRegistration>& allOperations();

// Families (ops/*.cpp).
namespace ops {
std::vector<OperationRegistration> elementwiseOperations();
std::vector<OperationRegistration> activationOperations();
std::vector<OperationRegistration> convOperations();
std::vector<OperationRegistration> fullyConnectedOperations();
std::vector<OperationRegistration> poolingOperations();
std::vector<OperationRegistration> shapeOperations();
std::vector<OperationRegistration> softmaxOperations();
std::vector<OperationRegistration> resizeOperations();
std::vector<OperationRegistration> normalizationOperations();
std::vector<OperationRegistration> spaceOperations();
std::vector<OperationRegistration> slicingOperations();
std::vector<OperationRegistration> quantizeOperations();
std::vector<OperationRegistration> lstmOperations();
std::vector<OperationRegistration> rnnOperations();
std::vector<OperationRegistration> lookupOperations();
std::vector<OperationRegistration> randomOperations();
std::vector<OperationRegistration> topkOperations();
std::vector<OperationRegistration> reductionOperations();
std::vector<OperationRegistration> gatherSplitTileOperations();
std::vector<OperationRegistration> comparisonOperations();
std::vector<OperationRegistration> unaryMathOperations();
std::vector<OperationRegistration> detectionOperations();
std::vector<OperationRegistration> controlFlowOperations();
std::vector<OperationRegistration> quantizedLstmOperations();
}  // namespace ops

// Helpers for `supports`: the type of operand `input` of the operation.
inline hal::OperandType operandType(const hal::Subgraph& sg, const hal::Operation& op, size_t input) {
    return input < op.inputs.size() && op.inputs[input] < sg.operands.size()
               ? sg.operands[op.inputs[input]].type
               : hal::OperandType::OEM;
}

}  // namespace npu::ref
