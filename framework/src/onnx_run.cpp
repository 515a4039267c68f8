// Running an imported ONNX model on one device.
#include "npu/framework/onnx_run.h"

#include <onnx/onnx_pb.h>

#include <cstring>

namespace npu::framework {
namespace {

constexpr size_t kAlign = 64;
size_t alignUp(size_t x) {
    return (x + kAlign - 1) / kAlign * kAlign;
}

std::string dimsText(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
}

// The given tensors in the model's input order.
Result<std::vector<const OnnxTensor*>> matchInputs(const OnnxImportedModel& model,
                                                   const std::vector<OnnxTensor>& inputs) {
    std::vector<const OnnxTensor*> ordered(model.inputNames.size(), nullptr);
    size_t next = 0;
    for (const auto& t : inputs) {
        size_t slot = model.inputNames.size();
        for (size_t i = 0; i < model.inputNames.size(); ++i) {
            if (!t.name.empty() && model.inputNames[i] == t.name) slot = i;
        }
        if (slot == model.inputNames.size()) {
            while (next < ordered.size() && ordered[next] != nullptr) ++next;
            slot = next;
        }
        if (slot >= ordered.size() || ordered[slot] != nullptr) {
            return invalidArgument("input tensor '" + t.name +
                                   "' matches no free model input (the model has " +
                                   std::to_string(model.inputNames.size()) + ")");
        }
        ordered[slot] = &t;
    }
    for (size_t i = 0; i < ordered.size(); ++i) {
        if (ordered[i] == nullptr)
            return invalidArgument("no tensor given for model input '" + model.inputNames[i] + "'");
        const auto& operand = model.model.main.operands[model.model.main.inputIndexes[i]];
        const std::vector<int64_t> want(operand.dimensions.begin(), operand.dimensions.end());
        if (ordered[i]->dims != want) {
            return invalidArgument("input '" + model.inputNames[i] + "': shape " +
                                   dimsText(ordered[i]->dims) + ", the model takes " + dimsText(want));
        }
        if (halTypeOfOnnx(ordered[i]->elementType) != operand.type) {
            return invalidArgument("input '" + model.inputNames[i] + "': element type " +
                                   onnxTypeName(ordered[i]->elementType) + ", the model takes " +
                                   std::string(hal::toString(operand.type)));
        }
    }
    return ordered;
}

}  // namespace

Result<std::vector<std::vector<uint8_t>>> onnxInputBuffers(const OnnxImportedModel& model,
                                                           const std::vector<OnnxTensor>& inputs) {
    const auto ordered = NPU_TRY(matchInputs(model, inputs));
    std::vector<std::vector<uint8_t>> buffers;
    for (const auto* t : ordered) buffers.push_back(t->data);
    return buffers;
}

std::vector<OnnxTensor> onnxOutputTensors(const OnnxImportedModel& model,
                                          std::vector<std::vector<uint8_t>> buffers) {
    std::vector<OnnxTensor> out;
    const auto& sg = model.model.main;
    for (size_t i = 0; i < buffers.size() && i < sg.outputIndexes.size(); ++i) {
        const auto& operand = sg.operands[sg.outputIndexes[i]];
        OnnxTensor t;
        t.name = model.outputNames[i];
        t.elementType = onnxTypeOfHal(operand.type);
        t.dims.assign(operand.dimensions.begin(), operand.dimensions.end());
        t.data = std::move(buffers[i]);
        out.push_back(std::move(t));
    }
    return out;
}

Result<OnnxRunResult> runOnnxModel(hal::IDevice& device, const OnnxImportedModel& model,
                                   const std::vector<OnnxTensor>& inputs) {
    const auto ordered = NPU_TRY(matchInputs(model, inputs));
    const auto supported = NPU_TRY(device.getSupportedOperations(model.model));
    for (size_t i = 0; i < supported.size(); ++i) {
        if (supported[i]) continue;
        const auto& o = model.origins[i];
        return fail(kOnnxUnsupported, "the device (" + device.getVersionString() +
                                          ") does not take operation " + std::to_string(i) + " (" +
                                          std::string(hal::toString(model.model.main.operations[i].type)) +
                                          ") of node '" + o.nodeName + "' (" + o.opType + ")");
    }
    const auto& sg = model.model.main;
    size_t total = 0;
    for (const auto* t : ordered) total = alignUp(total + t->data.size());
    std::vector<size_t> outBytes;
    for (uint32_t index : sg.outputIndexes) {
        size_t n = hal::elementSize(sg.operands[index].type);
        for (uint32_t d : sg.operands[index].dimensions) n *= d;
        outBytes.push_back(n);
        total = alignUp(total + n);
    }
    std::shared_ptr<hal::Memory> pool = hal::Memory::create(std::max<size_t>(total, 1), "onnx-request");
    if (!pool)
        return fail(hal::ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
                    "cannot create a " + std::to_string(total) + "-byte request pool");
    hal::Request request;
    size_t offset = 0;
    for (const auto* t : ordered) {
        std::memcpy(pool->data() + offset, t->data.data(), t->data.size());
        request.inputs.push_back({false, {0, uint32_t(offset), uint32_t(t->data.size()), 0}, {}});
        offset = alignUp(offset + t->data.size());
    }
    for (size_t n : outBytes) {
        request.outputs.push_back({false, {0, uint32_t(offset), uint32_t(n), 0}, {}});
        offset = alignUp(offset + n);
    }
    request.pools.push_back(pool);
    auto prepared = NPU_TRY(device.prepareModel(model.model));
    OnnxRunResult result;
    result.execution =
        NPU_TRY(prepared->executeSynchronously(request, hal::MeasureTiming::YES, std::nullopt, std::nullopt));
    for (size_t i = 0; i < sg.outputIndexes.size(); ++i) {
        const auto& operand = sg.operands[sg.outputIndexes[i]];
        OnnxTensor t;
        t.name = model.outputNames[i];
        t.elementType = onnxTypeOfHal(operand.type);
        t.dims.assign(operand.dimensions.begin(), operand.dimensions.end());
        const uint8_t* p = pool->data() + request.outputs[i].location.offset;
        t.data.assign(p, p + outBytes[i]);
        result.outputs.push_back(std::move(t));
    }
    return result;
}

}  // namespace npu::framework
