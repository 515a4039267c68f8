#include "prepared_model.h"

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
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

Result<std::shared_ptr<ReferencePreparedModel>> ReferencePreparedModel::create(const hal::Model& model) {
    NPU_TRY(hal::validateModel(model));
    std::shared_ptr<ReferencePreparedModel> prepared(new ReferencePreparedModel(model));
    NPU_TRY(prepared->prepare());
    return prepared;
}

Status ReferencePreparedModel::bindConstants() {
    const auto& sg = model_.main;
    template_.resize(sg.operands.size());
    for (size_t i = 0; i < sg.operands.size(); ++i) {
        const hal::Operand& o = sg.operands[i];
        RuntimeOperand& r = template_[i];
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
                r.external = model_.operandValues.data() + loc.offset;
                r.externalLength = loc.length;
                r.hasValue = true;
                r.shapeKnown = true;
                break;
            case hal::OperandLifeTime::CONSTANT_REFERENCE:
                if (loc.poolIndex >= model_.pools.size() || !model_.pools[loc.poolIndex] ||
                    size_t{loc.offset} + loc.length > model_.pools[loc.poolIndex]->size()) {
                    return invalidArgument(where + "CONSTANT_REFERENCE location outside its pool");
                }
                r.external = model_.pools[loc.poolIndex]->data() + loc.offset;
                r.externalLength = loc.length;
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
            default:
                break;
        }
        if (r.external != nullptr && !hasUnknownShape(r) && r.byteSize() != r.externalLength) {
            return invalidArgument(where + "constant of " + std::to_string(r.externalLength) + " bytes, shape " +
                                   dimsToString(r.dims) + " needs " + std::to_string(r.byteSize()));
        }
    }
    return {};
}

Status ReferencePreparedModel::prepare() {
    NPU_TRY(bindConstants());
    const auto& sg = model_.main;
    for (uint32_t i = 0; i < sg.operations.size(); ++i) {
        const hal::Operation& op = sg.operations[i];
        const OperationRegistration* reg = findOperation(op.type);
        if (reg == nullptr || !reg->supports(sg, op)) {
            return invalidArgument("operation " + std::to_string(i) + " (" + std::string(hal::toString(op.type)) +
                                   "): not supported by the reference device for these operand types");
        }
        kernels_.push_back(reg);
    }
    // Static shape inference: every operation whose input shapes are known is prepared (and so
    // validated) now; the first one that is not makes the model dynamic.
    for (uint32_t i = 0; i < sg.operations.size() && static_; ++i) {
        const hal::Operation& op = sg.operations[i];
        bool known = true;
        for (uint32_t in : op.inputs) known = known && template_[in].shapeKnown;
        if (!known) {
            static_ = false;
            break;
        }
        OperationContext ctx(template_, op, i, OperationContext::Mode::kPrepare);
        auto status = kernels_[i]->prepare(ctx);
        if (!status) {
            if (ctx.wasDeferred()) {
                static_ = false;
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
    if (request.inputs.size() != sg.inputIndexes.size() || request.outputs.size() != sg.outputIndexes.size()) {
        return invalidArgument("request has " + std::to_string(request.inputs.size()) + " inputs and " +
                               std::to_string(request.outputs.size()) + " outputs, the model " +
                               std::to_string(sg.inputIndexes.size()) + " and " + std::to_string(sg.outputIndexes.size()));
    }
    for (size_t i = 0; i < request.inputs.size(); ++i) {
        const hal::RequestArgument& arg = request.inputs[i];
        RuntimeOperand& r = operands[sg.inputIndexes[i]];
        const std::string where = "request input " + std::to_string(i) + ": ";
        r.hasValue = true;
        r.shapeKnown = true;
        if (arg.hasNoValue) {
            r.omitted = true;
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
            return invalidArgument(where + "pool index " + std::to_string(arg.location.poolIndex) + " out of range");
        }
        const auto* memory = std::get_if<std::shared_ptr<hal::Memory>>(&request.pools[arg.location.poolIndex]);
        if (memory == nullptr || !*memory) {
            return invalidArgument(where + "driver-managed buffers are not supported by the reference device");
        }
        if (size_t{arg.location.offset} + arg.location.length > (*memory)->size()) {
            return invalidArgument(where + "location beyond the end of pool " + std::to_string(arg.location.poolIndex));
        }
        if (arg.location.length != r.byteSize()) {
            return invalidArgument(where + std::to_string(arg.location.length) + " bytes, shape " + dimsToString(r.dims) +
                                   " needs " + std::to_string(r.byteSize()));
        }
        r.external = (*memory)->data() + arg.location.offset;
        r.externalLength = arg.location.length;
    }
    return {};
}

Status ReferencePreparedModel::run(std::vector<RuntimeOperand>& operands, bool dynamic) const {
    const auto& sg = model_.main;
    for (uint32_t i = 0; i < sg.operations.size(); ++i) {
        const hal::Operation& op = sg.operations[i];
        OperationContext ctx(operands, op, i, OperationContext::Mode::kExecute);
        if (dynamic) {
            NPU_TRY(kernels_[i]->prepare(ctx));
        } else {
            for (size_t o = 0; o < op.outputs.size(); ++o) NPU_TRY(ctx.setOutputShape(o, operands[op.outputs[o]].dims));
        }
        // Zero-sized tensors: an operation with an empty input or output produces empty outputs.
        bool empty = false;
        for (uint32_t in : op.inputs) {
            const RuntimeOperand& r = operands[in];
            empty = empty || (!r.omitted && !hal::isScalarType(r.type) && elementCount(r.dims) == 0);
        }
        for (uint32_t out : op.outputs) empty = empty || elementCount(operands[out].dims) == 0;
        if (!empty) NPU_TRY(kernels_[i]->execute(ctx));
    }
    return {};
}

Result<hal::ExecutionResult> ReferencePreparedModel::executeSynchronously(const hal::Request& request,
                                                                          hal::MeasureTiming measure,
                                                                          const hal::Deadline& deadline,
                                                                          std::optional<std::chrono::nanoseconds>) {
    const auto start = std::chrono::steady_clock::now();
    if (deadline && start > *deadline) {
        return fail(hal::ErrorStatus::MISSED_DEADLINE_PERSISTENT, "execution: the deadline had passed before it started");
    }
    NPU_TRY(hal::validateRequest(request, model_));
    std::vector<RuntimeOperand> operands = template_;
    bool dynamic = !static_;
    NPU_TRY(bindInputs(request, operands, dynamic));
    if (dynamic) {
        // Shapes are inferred afresh from the request's shapes: forget the prepared ones.
        for (size_t i = 0; i < operands.size(); ++i) {
            auto lt = operands[i].lifetime;
            if (lt == hal::OperandLifeTime::TEMPORARY_VARIABLE || lt == hal::OperandLifeTime::SUBGRAPH_OUTPUT) {
                operands[i].dims = operands[i].declaredDims;
            }
        }
    }
    NPU_TRY(run(operands, dynamic));

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
        Error e{hal::ErrorStatus::OUTPUT_INSUFFICIENT_SIZE, "execution: an output buffer is too small for its shape", {}};
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
        const auto* memory = std::get_if<std::shared_ptr<hal::Memory>>(&request.pools[arg.location.poolIndex]);
        if (memory == nullptr || !*memory || size_t{arg.location.offset} + arg.location.length > (*memory)->size()) {
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
