#include "prepared_model.h"

#include <algorithm>
#include <chrono>

#include "npu/hal/validation.h"

namespace npu::ref {
namespace {

bool hasUnknownShape(const RuntimeOperand& op) {
    if (hal::isScalarType(op.type)) return false;
    if (op.dims.empty()) return true;  // unknown rank
    for (uint32_t d : op.dims) {
        if (d == 0) return true;
    }
    return false;
}

uint64_t microsSince(std::chrono::steady_clock::time_point start) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
            .count());
}

// Execution infers shapes afresh from the actual input shapes: forget the prepared ones.
void forgetInferredShapes(std::vector<RuntimeOperand>& operands) {
    for (auto& r : operands) {
        if (r.lifetime == hal::OperandLifeTime::TEMPORARY_VARIABLE ||
            r.lifetime == hal::OperandLifeTime::SUBGRAPH_OUTPUT) {
            r.dims = r.declaredDims;
        }
    }
}

bool isControlFlow(hal::OperationType type) {
    return type == hal::OperationType::IF || type == hal::OperationType::WHILE;
}

bool operationSupported(const hal::Model& model, const hal::Subgraph& sg, const hal::Operation& op,
                        size_t depth) {
    for (uint32_t idx : op.inputs) {
        if (idx >= sg.operands.size()) return false;
    }
    for (uint32_t idx : op.outputs) {
        if (idx >= sg.operands.size()) return false;
    }
    const OperationRegistration* reg = findOperation(op.type);
    if (reg == nullptr || !reg->supports(sg, op)) return false;
    if (!isControlFlow(op.type)) return true;
    // Deeper than the number of subgraphs means a reference cycle, which validation rejects.
    if (depth > model.referenced.size()) return false;
    for (uint32_t idx : op.inputs) {
        const hal::Operand& o = sg.operands[idx];
        if (o.lifetime != hal::OperandLifeTime::SUBGRAPH) continue;
        if (o.location.offset >= model.referenced.size()) return false;
        const hal::Subgraph& callee = model.referenced[o.location.offset];
        for (const auto& inner : callee.operations) {
            if (!operationSupported(model, callee, inner, depth + 1)) return false;
        }
    }
    return true;
}

}  // namespace

std::chrono::nanoseconds effectiveLoopTimeout(std::optional<std::chrono::nanoseconds> requested) {
    if (!requested) return kDefaultLoopTimeout;
    return std::clamp(*requested, std::chrono::nanoseconds{0}, kMaxLoopTimeout);
}

bool isOperationSupported(const hal::Model& model, const hal::Subgraph& subgraph,
                          const hal::Operation& operation) {
    return operationSupported(model, subgraph, operation, 0);
}

class ReferencePreparedModel::Subgraphs final : public SubgraphRunner {
public:
    Subgraphs(const ReferencePreparedModel& model, std::chrono::nanoseconds loopTimeout,
              hal::Deadline deadline)
        : model_(model), loopTimeout_(loopTimeout), deadline_(deadline) {}
    const hal::Subgraph* referenced(uint32_t index) const override {
        return index < model_.model_.referenced.size() ? &model_.model_.referenced[index] : nullptr;
    }
    Result<std::vector<RuntimeOperand>> run(uint32_t index,
                                            const std::vector<const RuntimeOperand*>& inputs) const override {
        return model_.runReferenced(index, inputs, *this);
    }
    std::chrono::nanoseconds loopTimeout() const override { return loopTimeout_; }
    hal::Deadline deadline() const override { return deadline_; }

private:
    const ReferencePreparedModel& model_;
    std::chrono::nanoseconds loopTimeout_;
    hal::Deadline deadline_;
};

Result<std::shared_ptr<ReferencePreparedModel>> ReferencePreparedModel::create(
    const hal::Model& model, std::shared_ptr<hal::BufferRegistry> buffers) {
    NPU_TRY(hal::validateModel(model));
    std::shared_ptr<ReferencePreparedModel> prepared(new ReferencePreparedModel(model, std::move(buffers)));
    NPU_TRY(prepared->prepare());
    return prepared;
}

Status ReferencePreparedModel::bindConstants(Plan& plan) const {
    const auto& sg = *plan.subgraph;
    plan.operands.resize(sg.operands.size());
    for (size_t i = 0; i < sg.operands.size(); ++i) {
        const hal::Operand& o = sg.operands[i];
        RuntimeOperand& r = plan.operands[i];
        r.type = o.type;
        r.declaredDims = o.dimensions;
        r.dims = o.dimensions;
        r.scale = o.scale;
        r.zeroPoint = o.zeroPoint;
        r.channelQuant = o.channelQuant ? &*o.channelQuant : nullptr;
        r.lifetime = o.lifetime;
        const auto& loc = o.location;
        const std::string where = "operand " + std::to_string(i) + ": ";
        switch (o.lifetime) {
            case hal::OperandLifeTime::CONSTANT_COPY:
                if (size_t{loc.offset} + loc.length > model_.operandValues.size()) {
                    return invalidArgument(where + "CONSTANT_COPY location beyond operandValues");
                }
                r.setExternal(model_.operandValues.data() + loc.offset, loc.length);
                r.hasValue = true;
                r.shapeKnown = true;
                break;
            case hal::OperandLifeTime::CONSTANT_REFERENCE:
                if (loc.poolIndex >= model_.pools.size() || !model_.pools[loc.poolIndex] ||
                    size_t{loc.offset} + loc.length > model_.pools[loc.poolIndex]->size()) {
                    return invalidArgument(where + "CONSTANT_REFERENCE location outside its pool");
                }
                r.setExternal(model_.pools[loc.poolIndex]->data() + loc.offset, loc.length);
                r.hasValue = true;
                r.shapeKnown = true;
                break;
            case hal::OperandLifeTime::NO_VALUE:
                r.omitted = true;
                r.hasValue = true;
                r.shapeKnown = true;
                break;
            case hal::OperandLifeTime::SUBGRAPH_INPUT:
                r.shapeKnown = !hasUnknownShape(r);
                break;
            case hal::OperandLifeTime::SUBGRAPH:
                r.subgraph = loc.offset;  // in range: hal::validateModel checked it
                r.hasValue = true;
                r.shapeKnown = true;
                break;
            default:
                break;
        }
        const bool constant = o.lifetime == hal::OperandLifeTime::CONSTANT_COPY ||
                              o.lifetime == hal::OperandLifeTime::CONSTANT_REFERENCE;
        if (constant && !hasUnknownShape(r) && r.byteSize() != r.externalLength) {
            return invalidArgument(where + "constant of " + std::to_string(r.externalLength) +
                                   " bytes, shape " + dimsToString(r.dims) + " needs " +
                                   std::to_string(r.byteSize()));
        }
    }
    return {};
}

Status ReferencePreparedModel::prepare() {
    // Referenced subgraphs are prepared on their declared input shapes, so an unsupported or
    // invalid operation inside an IF or WHILE fails preparation, not a later execution.
    const Subgraphs subgraphs(*this, kDefaultLoopTimeout, std::nullopt);
    main_.subgraph = &model_.main;
    NPU_TRY(preparePlan(main_, subgraphs));
    referenced_.resize(model_.referenced.size());
    for (size_t i = 0; i < referenced_.size(); ++i) {
        referenced_[i].subgraph = &model_.referenced[i];
        auto status = preparePlan(referenced_[i], subgraphs);
        if (!status) {
            Error e = std::move(status).error();
            e.message = "referenced subgraph " + std::to_string(i) + ": " + e.message;
            return std::unexpected(std::move(e));
        }
    }
    return {};
}

Status ReferencePreparedModel::preparePlan(Plan& plan, const SubgraphRunner& subgraphs) const {
    NPU_TRY(bindConstants(plan));
    const auto& sg = *plan.subgraph;
    for (uint32_t i = 0; i < sg.operations.size(); ++i) {
        const hal::Operation& op = sg.operations[i];
        const OperationRegistration* reg = findOperation(op.type);
        if (reg == nullptr || !isOperationSupported(model_, sg, op)) {
            return invalidArgument("operation " + std::to_string(i) + " (" +
                                   std::string(hal::toString(op.type)) +
                                   "): not supported by the reference device for these operand types");
        }
        plan.kernels.push_back(reg);
    }
    // Static shape inference: every operation whose input shapes are known is prepared (and so
    // validated) now; the first one that is not makes the subgraph dynamic.
    for (uint32_t i = 0; i < sg.operations.size() && plan.isStatic; ++i) {
        const hal::Operation& op = sg.operations[i];
        bool known = true;
        for (uint32_t in : op.inputs) known = known && plan.operands[in].shapeKnown;
        if (!known) {
            plan.isStatic = false;
            break;
        }
        OperationContext ctx(plan.operands, op, i, OperationContext::Mode::kPrepare, &subgraphs);
        auto status = plan.kernels[i]->prepare(ctx);
        if (!status) {
            if (ctx.wasDeferred()) {
                plan.isStatic = false;
                break;
            }
            return status;
        }
    }
    return {};
}

Status ReferencePreparedModel::bindInputs(const hal::Request& request, std::vector<RuntimeOperand>& operands,
                                          bool& dynamic) const {
    const auto& sg = model_.main;
    if (request.inputs.size() != sg.inputIndexes.size() ||
        request.outputs.size() != sg.outputIndexes.size()) {
        return invalidArgument("request has " + std::to_string(request.inputs.size()) + " inputs and " +
                               std::to_string(request.outputs.size()) + " outputs, the model " +
                               std::to_string(sg.inputIndexes.size()) + " and " +
                               std::to_string(sg.outputIndexes.size()));
    }
    for (size_t i = 0; i < request.inputs.size(); ++i) {
        const hal::RequestArgument& arg = request.inputs[i];
        RuntimeOperand& r = operands[sg.inputIndexes[i]];
        const std::string where = "request input " + std::to_string(i) + ": ";
        r.hasValue = true;
        r.shapeKnown = true;
        if (arg.hasNoValue) {
            // Preparation assumed a value here: prepare again so the operation sees it omitted.
            r.omitted = true;
            dynamic = true;
            continue;
        }
        if (!arg.dimensions.empty() && arg.dimensions != r.dims) {
            r.dims = arg.dimensions;
            dynamic = true;
        }
        if (hasUnknownShape(r)) {
            return invalidArgument(where + "shape " + dimsToString(r.dims) + " is not fully specified");
        }
        if (arg.location.poolIndex >= request.pools.size()) {
            return invalidArgument(where + "pool index " + std::to_string(arg.location.poolIndex) +
                                   " out of range");
        }
        const auto* memory =
            std::get_if<std::shared_ptr<hal::Memory>>(&request.pools[arg.location.poolIndex]);
        if (memory == nullptr || !*memory) {
            // PreparedModelBase resolves driver-managed buffer tokens to their memory first.
            return generalFailure(where + "pool " + std::to_string(arg.location.poolIndex) +
                                  " is not shared memory (an unresolved buffer token)");
        }
        if (size_t{arg.location.offset} + arg.location.length > (*memory)->size()) {
            return invalidArgument(where + "location beyond the end of pool " +
                                   std::to_string(arg.location.poolIndex));
        }
        if (arg.location.length != r.byteSize()) {
            return invalidArgument(where + std::to_string(arg.location.length) + " bytes, shape " +
                                   dimsToString(r.dims) + " needs " + std::to_string(r.byteSize()));
        }
        r.setExternal((*memory)->data() + arg.location.offset, arg.location.length);
    }
    return {};
}

Status ReferencePreparedModel::run(const Plan& plan, std::vector<RuntimeOperand>& operands, bool dynamic,
                                   const SubgraphRunner& subgraphs) const {
    const auto& sg = *plan.subgraph;
    for (uint32_t i = 0; i < sg.operations.size(); ++i) {
        const hal::Operation& op = sg.operations[i];
        OperationContext ctx(operands, op, i, OperationContext::Mode::kExecute, &subgraphs);
        if (dynamic) {
            NPU_TRY(plan.kernels[i]->prepare(ctx));
        } else {
            for (size_t o = 0; o < op.outputs.size(); ++o)
                NPU_TRY(ctx.setOutputShape(o, operands[op.outputs[o]].dims));
        }
        // Zero-sized tensors: an operation with an empty input or output produces empty outputs.
        // IF and WHILE always run: their subgraphs decide what an empty tensor yields. An empty
        // input of CONCATENATION only contributes nothing to a possibly non-empty output.
        bool empty = false;
        for (uint32_t in : op.inputs) {
            const RuntimeOperand& r = operands[in];
            empty = empty || (!r.omitted && !hal::isScalarType(r.type) && elementCount(r.dims) == 0);
        }
        empty = empty && op.type != hal::OperationType::CONCATENATION;
        for (uint32_t out : op.outputs) empty = empty || elementCount(operands[out].dims) == 0;
        if (!empty || isControlFlow(op.type)) NPU_TRY(plan.kernels[i]->execute(ctx));
    }
    return {};
}

Result<std::vector<RuntimeOperand>> ReferencePreparedModel::runReferenced(
    uint32_t index, const std::vector<const RuntimeOperand*>& inputs, const SubgraphRunner& subgraphs) const {
    const std::string where = "referenced subgraph " + std::to_string(index) + ": ";
    if (index >= referenced_.size()) return invalidArgument(where + "no such subgraph");
    const Plan& plan = referenced_[index];
    const hal::Subgraph& sg = *plan.subgraph;
    if (inputs.size() != sg.inputIndexes.size()) {
        return invalidArgument(where + "called with " + std::to_string(inputs.size()) + " inputs, it has " +
                               std::to_string(sg.inputIndexes.size()));
    }
    std::vector<RuntimeOperand> operands = plan.operands;
    bool dynamic = !plan.isStatic;
    for (size_t k = 0; k < inputs.size(); ++k) {
        const RuntimeOperand& in = *inputs[k];
        RuntimeOperand& r = operands[sg.inputIndexes[k]];
        r.hasValue = true;
        r.shapeKnown = true;
        r.omitted = in.omitted;
        if (in.omitted) continue;
        const auto& declared = r.declaredDims;
        bool compatible = declared.empty() || declared.size() == in.dims.size();
        for (size_t d = 0; compatible && !declared.empty() && d < declared.size(); ++d) {
            compatible = declared[d] == 0 || declared[d] == in.dims[d];
        }
        if (!compatible) {
            return invalidArgument(where + "input " + std::to_string(k) + " has shape " +
                                   dimsToString(in.dims) + " but the subgraph declares " +
                                   dimsToString(declared));
        }
        if (in.dims != r.dims) {
            r.dims = in.dims;
            dynamic = true;
        }
        // The caller keeps its values alive until the call returns: read them in place.
        r.setExternal(in.data(), in.byteSize());
    }
    if (dynamic) forgetInferredShapes(operands);
    auto status = run(plan, operands, dynamic, subgraphs);
    if (!status) {
        Error e = std::move(status).error();
        e.message = where + e.message;
        return std::unexpected(std::move(e));
    }
    std::vector<RuntimeOperand> outputs;
    outputs.reserve(sg.outputIndexes.size());
    for (uint32_t idx : sg.outputIndexes) outputs.push_back(operands[idx]);
    return outputs;
}

Result<hal::ExecutionResult> ReferencePreparedModel::executeShared(
    const hal::Request& request, hal::MeasureTiming measure, const hal::Deadline& deadline,
    std::optional<std::chrono::nanoseconds> loopTimeout) {
    const auto start = std::chrono::steady_clock::now();
    if (deadline && start >= *deadline) {
        return fail(hal::ErrorStatus::MISSED_DEADLINE_PERSISTENT,
                    "execution: the deadline had passed before it started");
    }
    NPU_TRY(hal::validateRequest(request, model_));
    std::vector<RuntimeOperand> operands = main_.operands;
    bool dynamic = !main_.isStatic;
    NPU_TRY(bindInputs(request, operands, dynamic));
    if (dynamic) forgetInferredShapes(operands);
    const Subgraphs subgraphs(*this, effectiveLoopTimeout(loopTimeout), deadline);
    NPU_TRY(run(main_, operands, dynamic, subgraphs));

    const auto& sg = model_.main;
    hal::ExecutionResult result;
    bool sufficient = true;
    for (size_t i = 0; i < sg.outputIndexes.size(); ++i) {
        const RuntimeOperand& r = operands[sg.outputIndexes[i]];
        const hal::RequestArgument& arg = request.outputs[i];
        const bool fits = r.byteSize() <= arg.location.length;
        sufficient = sufficient && fits;
        result.outputShapes.push_back({r.dims, fits});
    }
    if (!sufficient) {
        Error e{hal::ErrorStatus::OUTPUT_INSUFFICIENT_SIZE,
                "execution: an output buffer is too small for its shape",
                {}};
        for (const auto& s : result.outputShapes) {
            e.outputShapes.push_back({s.dimensions, s.isSufficient});
            if (!s.isSufficient) e.message += " " + dimsToString(s.dimensions);
        }
        return std::unexpected(std::move(e));
    }
    for (size_t i = 0; i < sg.outputIndexes.size(); ++i) {
        const RuntimeOperand& r = operands[sg.outputIndexes[i]];
        const hal::RequestArgument& arg = request.outputs[i];
        if (arg.location.poolIndex >= request.pools.size()) {
            return invalidArgument("request output " + std::to_string(i) + ": pool index out of range");
        }
        const auto* memory =
            std::get_if<std::shared_ptr<hal::Memory>>(&request.pools[arg.location.poolIndex]);
        if (memory == nullptr || !*memory ||
            size_t{arg.location.offset} + arg.location.length > (*memory)->size()) {
            return invalidArgument("request output " + std::to_string(i) +
                                   ": not a shared-memory location inside its pool");
        }
        if (r.byteSize() > 0) std::memcpy((*memory)->data() + arg.location.offset, r.data(), r.byteSize());
    }
    if (measure == hal::MeasureTiming::YES) {
        result.timing.timeOnDeviceUs = microsSince(start);
        result.timing.timeInDriverUs = result.timing.timeOnDeviceUs;
    }
    return result;
}

}  // namespace npu::ref
