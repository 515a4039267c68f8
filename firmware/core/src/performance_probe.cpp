#include "performance_probe.h"

#include <cinttypes>
#include <cstring>

#include "executor.h"
#include "op_plan.h"

namespace npu::fw {

namespace {

using namespace hal;  // HAL operand types and lifetimes (op_plan.h)

constexpr uint32_t kBatch = 16, kInputs = 256, kUnits = 64;
constexpr uint32_t kFullyConnected = 9, kAdd = 0;

// Operand indexes of the workload.
enum : uint32_t { kIn0, kWeights, kBias, kAct, kHidden, kIn1, kOut, kOperandCount };

struct Layout {
    uint64_t weights, bias, act, in0, in1, out, bytes;
};

Layout layout(uint64_t base) {
    auto next = [](uint64_t at, uint64_t n) { return at + (n + 63) / 64 * 64; };
    Layout l;
    l.weights = base;
    l.bias = next(l.weights, uint64_t{kUnits} * kInputs);
    l.act = next(l.bias, uint64_t{kUnits} * 4);
    l.in0 = next(l.act, 4);
    l.in1 = next(l.in0, uint64_t{kBatch} * kInputs);
    l.out = next(l.in1, uint64_t{kBatch} * kUnits);
    l.bytes = next(l.out, uint64_t{kBatch} * kUnits) - base;
    return l;
}

void tensor(OperandDesc& o, uint32_t type, uint32_t d0, uint32_t d1, float scale, int32_t zeroPoint,
            uint32_t lifetime) {
    o = OperandDesc{};
    o.type = type;
    o.rank = d1 == 0 ? 1 : 2;
    o.dims[0] = d0;
    o.dims[1] = d1;
    o.scale = scale;
    o.zeroPoint = zeroPoint;
    o.lifetime = lifetime;
}

// FULLY_CONNECTED [16, 256] x [64, 256] + bias -> [16, 64], then ADD of a second [16, 64] input.
void buildModel(uint32_t type, const Layout& l, OperandDesc* operands, OperationDesc* ops, uint32_t* io) {
    const int32_t zp = type == kTensorQuant8Asymm ? 128 : 0;
    tensor(operands[kIn0], type, kBatch, kInputs, 0.5f, zp, kSubgraphInput);
    tensor(operands[kWeights], type, kUnits, kInputs, 0.5f, zp, kConstantReference);
    operands[kWeights].dataAddr = l.weights;
    operands[kWeights].dataLength = kUnits * kInputs;
    tensor(operands[kBias], kTensorInt32, kUnits, 0, 0.25f, 0, kConstantReference);
    operands[kBias].dataAddr = l.bias;
    operands[kBias].dataLength = kUnits * 4;
    operands[kAct] = OperandDesc{};
    operands[kAct].type = kInt32;
    operands[kAct].lifetime = kConstantCopy;
    operands[kAct].dataAddr = l.act;
    operands[kAct].dataLength = 4;
    tensor(operands[kHidden], type, kBatch, kUnits, 64.0f, zp, kTemporary);
    tensor(operands[kIn1], type, kBatch, kUnits, 64.0f, zp, kSubgraphInput);
    tensor(operands[kOut], type, kBatch, kUnits, 128.0f, zp, kSubgraphOutput);
    // io: FC inputs, FC output, ADD inputs, ADD output, model inputs, model output.
    const uint32_t lists[] = {kIn0, kWeights, kBias, kAct, kHidden, kHidden,
                              kIn1, kAct,     kOut,  kIn0, kIn1,    kOut};
    std::memcpy(io, lists, sizeof(lists));
    ops[0] = {kFullyConnected, io, 4, io + 4, 1};
    ops[1] = {kAdd, io + 5, 3, io + 8, 1};
}

void figures(const ProbeContext& ctx, const ExecResult& result, WorkloadFigures* out) {
    out->cycles = result.deviceCycles;
    out->dramBytes = 0;
    for (uint32_t i = 0; i < result.profileCount; ++i) {
        out->dramBytes += result.profile[i].dramReadBytes + result.profile[i].dramWriteBytes;
    }
    out->cpuOps = uint64_t{kBatch} * kInputs * kUnits + uint64_t{kBatch} * kUnits;
    const double npuSeconds = double(out->cycles) / double(ctx.clockHz);
    const double cpuSeconds = double(out->cpuOps) / kCpuOpsPerSecond;
    const double dramJoules = double(out->dramBytes) * kDramJoulesPerByte;
    out->execTime = float(npuSeconds / cpuSeconds);
    out->powerUsage = float((npuSeconds * kNpuWatts + dramJoules) / (cpuSeconds * kCpuWatts + dramJoules));
}

}  // namespace

FwStatus probeWorkload(const ProbeContext& ctx, uint32_t type, Arena& scratch, WorkloadFigures* out) {
    if (ctx.clockHz == 0)
        return FwStatus::make(Code::kDeviceUnavailable, "performance probe: NPU clock unknown");
    auto* operands = scratch.allocateArray<OperandDesc>(kOperandCount);
    auto* ops = scratch.allocateArray<OperationDesc>(2);
    auto* io = scratch.allocateArray<uint32_t>(12);
    auto* result = scratch.allocateArray<ExecResult>(1);
    auto* args = scratch.allocateArray<IoArg>(3);
    if (operands == nullptr || ops == nullptr || io == nullptr || result == nullptr || args == nullptr) {
        return FwStatus::make(Code::kResourceExhaustedPersistent, "performance probe: arena exhausted");
    }
    uint64_t base = 0;
    const Layout probe = layout(0);
    if (!ctx.dram.allocate(probe.bytes, &base)) {
        return FwStatus::make(Code::kResourceExhaustedPersistent,
                              "performance probe: no firmware DRAM for %llu bytes",
                              static_cast<unsigned long long>(probe.bytes));
    }
    const Layout l = layout(base);
    std::memset(ctx.platform.dram() + base, 0, l.bytes);  // cycles do not depend on the values
    buildModel(type, l, operands, ops, io);
    ModelDesc model;
    model.operands = operands;
    model.operandCount = kOperandCount;
    model.operations = ops;
    model.operationCount = 2;
    model.inputIndexes = io + 9;
    model.inputCount = 2;
    model.outputIndexes = io + 11;
    model.outputCount = 1;
    const uint8_t* image = nullptr;
    uint64_t size = 0;
    uint32_t handle = 0;
    FwStatus st = compileModel(ctx.target, model, scratch, &image, &size);
    if (st.ok()) st = ctx.store.load(ctx.platform, ctx.dram, image, size, ctx.limits, &handle);
    if (st.ok()) {
        args[0] = {false, l.in0, kBatch * kInputs};
        args[1] = {false, l.in1, kBatch * kUnits};
        args[2] = {false, l.out, kBatch * kUnits};
        const ExecutionContext exec{ctx.platform, ctx.dram, 0, ctx.irqTimeoutUs, true};
        st = executeBlob(exec, *ctx.store.find(handle), args, 2, args + 2, 1, result);
        ctx.store.release(handle, ctx.dram);
    }
    ctx.dram.free(base);
    if (!st.ok()) {
        return FwStatus::make(st.code, "performance probe (operand type %" PRIu32 "): %s", type, st.message);
    }
    figures(ctx, *result, out);
    return FwStatus::okStatus();
}

}  // namespace npu::fw
