// ONNX -> HAL mappers of the quantized operators: QuantizeLinear -> QUANTIZE, DequantizeLinear
// -> DEQUANTIZE (folded at import when its input is a constant, as in QDQ models' weights),
// QLinearConv -> CONV_2D / DEPTHWISE_CONV_2D / GROUPED_CONV_2D on quant8 tensors, QLinearMatMul ->
// FULLY_CONNECTED.
// HAL quant8 operands carry their scale and zero point, so the importer checks that each
// quantized input's parameters equal those the consuming node names.
#include <cmath>

#include "onnx_builder.h"

namespace npu::framework::onnx_import {
namespace {

using hal::OperandType;
using hal::OperationType;

struct QuantParams {
    OperandType type = OperandType::TENSOR_QUANT8_ASYMM;
    std::vector<float> scales;  // one (per tensor) or one per channel
    int32_t zeroPoint = 0;
};

// scale input `s`, zero-point input `z` (optional: uint8 0).
Result<QuantParams> quantParams(NodeContext& ctx, size_t s, size_t z, bool perChannelAllowed) {
    QuantParams q;
    const HostTensor* scale = NPU_TRY(ctx.constant(s, "scale"));
    for (double v : scale->values) {
        if (!(v > 0) || !std::isfinite(v))
            return ctx.unsupported("scale " + std::to_string(v) + " is not positive and finite");
        q.scales.push_back(float(v));
    }
    if (q.scales.empty() || (q.scales.size() > 1 && !perChannelAllowed))
        return ctx.unsupported("per-axis quantization of an activation");
    if (ctx.hasInput(z)) {
        const HostTensor* zp = NPU_TRY(ctx.constant(z, "zero point"));
        if (zp->elementType == onnx::TensorProto::INT8)
            q.type = OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
        else if (zp->elementType != onnx::TensorProto::UINT8)
            return ctx.unsupported("zero point of type " + onnxTypeName(zp->elementType));
        for (double v : zp->values) {
            if (v != zp->values[0]) return ctx.unsupported("per-axis zero points");
        }
        q.zeroPoint = zp->values.empty() ? 0 : int32_t(zp->values[0]);
    }
    return q;
}

// The runtime quant8 operand of input i, checked against the node's parameters.
Result<uint32_t> quantOperand(NodeContext& ctx, size_t i, const QuantParams& q) {
    const uint32_t index = NPU_TRY(ctx.operand(i));
    const auto& o = ctx.builder().model().main.operands[index];
    if (o.type != q.type || std::fabs(o.scale - q.scales[0]) > 1e-6f * q.scales[0] ||
        o.zeroPoint != q.zeroPoint) {
        return ctx.unsupported("input " + std::to_string(i) + " is " + std::string(hal::toString(o.type)) +
                               " scale " + std::to_string(o.scale) + " zero point " +
                               std::to_string(o.zeroPoint) + ", the node says " +
                               std::string(hal::toString(q.type)) + " scale " + std::to_string(q.scales[0]) +
                               " zero point " + std::to_string(q.zeroPoint));
    }
    return index;
}

Status mapQuantizeLinear(NodeContext& ctx) {
    if (ctx.attrInt("axis", 1) != 1 && ctx.value(1) && ctx.value(1)->constant &&
        ctx.value(1)->constant->count() > 1) {
        return ctx.unsupported("per-axis quantization");
    }
    const QuantParams q = NPU_TRY(quantParams(ctx, 1, 2, false));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    if (ctx.builder().model().main.operands[x].type != OperandType::TENSOR_FLOAT32)
        return ctx.unsupported("input is not FLOAT");
    const uint32_t out = NPU_TRY(ctx.outputQuant(0, q.type, q.scales[0], q.zeroPoint));
    ctx.emit(OperationType::QUANTIZE, {x}, {out});
    return {};
}

Status mapDequantizeLinear(NodeContext& ctx) {
    const Value* v = ctx.value(0);
    if (v != nullptr && v->constant && !v->operand) {
        // A quantized constant (QDQ weights): dequantize here, per axis if need be.
        const QuantParams q = NPU_TRY(quantParams(ctx, 1, 2, true));
        HostTensor t = *v->constant;
        const int64_t axis = ctx.attrInt("axis", 1);
        const size_t channels = q.scales.size();
        size_t inner = 1;
        if (channels > 1) {
            NPU_TRY(checkAxis(ctx, axis, uint32_t(t.dims.size()), "axis"));
            inner = size_t(product(t.dims, normalizeAxis(axis, uint32_t(t.dims.size())) + 1));
        }
        for (size_t k = 0; k < t.values.size(); ++k)
            t.values[k] = (t.values[k] - q.zeroPoint) * q.scales[(k / inner) % channels];
        t.elementType = onnx::TensorProto::FLOAT;
        ctx.bindConstant(0, std::move(t));
        return {};
    }
    const QuantParams q = NPU_TRY(quantParams(ctx, 1, 2, false));
    const uint32_t x = NPU_TRY(quantOperand(ctx, 0, q));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::DEQUANTIZE, {x}, {out});
    return {};
}

// Quant8 weights: uint8 per tensor -> TENSOR_QUANT8_ASYMM; int8 (per tensor or per channel,
// zero point 0) -> TENSOR_QUANT8_SYMM_PER_CHANNEL along `channelDim`.
Result<uint32_t> quantWeights(NodeContext& ctx, const QuantParams& q, std::vector<int64_t> dims,
                              const std::vector<double>& values, uint32_t channelDim) {
    auto& b = ctx.builder();
    std::vector<uint8_t> bytes(values.size());
    for (size_t k = 0; k < values.size(); ++k) bytes[k] = uint8_t(int32_t(values[k]) & 0xff);
    if (q.type == OperandType::TENSOR_QUANT8_ASYMM) {
        if (q.scales.size() != 1) return ctx.unsupported("per-channel uint8 weights");
        const uint32_t w =
            b.addConstant(OperandType::TENSOR_QUANT8_ASYMM, toHalDims(dims), bytes.data(), bytes.size());
        b.model().main.operands[w].scale = q.scales[0];
        b.model().main.operands[w].zeroPoint = q.zeroPoint;
        return w;
    }
    if (q.zeroPoint != 0) return ctx.unsupported("int8 weights with a non-zero zero point");
    const size_t channels = size_t(dims[channelDim]);
    std::vector<float> scales = q.scales.size() == 1 ? std::vector<float>(channels, q.scales[0]) : q.scales;
    if (scales.size() != channels) return ctx.unsupported("weight scales do not match the output channels");
    const uint32_t w = b.addConstant(OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL, toHalDims(dims),
                                     bytes.data(), bytes.size());
    b.model().main.operands[w].channelQuant = hal::SymmPerChannelQuantParams{scales, channelDim};
    return w;
}

// int32 bias with scale input_scale * weight_scale (0 and per-channel for per-channel weights).
Result<uint32_t> quantBias(NodeContext& ctx, size_t input, int64_t channels, float scale) {
    std::vector<int32_t> bias(size_t(channels), 0);
    if (ctx.hasInput(input)) {
        const HostTensor* t = NPU_TRY(ctx.constant(input, "bias"));
        if (int64_t(t->count()) != channels)
            return ctx.unsupported("bias has " + std::to_string(t->count()) + " values");
        for (int64_t k = 0; k < channels; ++k) bias[size_t(k)] = int32_t(t->values[size_t(k)]);
    }
    const uint32_t op = ctx.builder().addConstant(OperandType::TENSOR_INT32, {uint32_t(channels)},
                                                  bias.data(), bias.size() * 4);
    ctx.builder().model().main.operands[op].scale = scale;
    return op;
}

Status mapQLinearConv(NodeContext& ctx) {
    const auto in = NPU_TRY(ctx.dims(0));
    const QuantParams xq = NPU_TRY(quantParams(ctx, 1, 2, false));
    const QuantParams wq = NPU_TRY(quantParams(ctx, 4, 5, true));
    const QuantParams yq = NPU_TRY(quantParams(ctx, 6, 7, false));
    const HostTensor* w = NPU_TRY(ctx.constant(3, "weights"));
    if (w->dims.size() != 4) return ctx.unsupported("only 2-D convolutions");
    const Window2d win = NPU_TRY(windowOf(ctx, in, {w->dims[2], w->dims[3]}));
    const int64_t group = ctx.attrInt("group", 1), outC = w->dims[0], inC = in[1];
    if (group <= 0 || w->dims[1] * group != inC || outC % group != 0)
        return ctx.unsupported("group " + std::to_string(group) + " does not divide the channels");
    const bool depthwise = group == inC && group > 1 && outC % inC == 0;
    const bool grouped = group > 1 && !depthwise;  // GROUPED_CONV_2D: one CONV_2D per channel slice
    if (grouped && (win.dilH != 1 || win.dilW != 1))
        return ctx.unsupported("grouped convolution with dilation (GROUPED_CONV_2D has none)");
    const uint32_t x = NPU_TRY(quantOperand(ctx, 0, xq));
    std::vector<int64_t> wDims = depthwise ? std::vector<int64_t>{1, w->dims[2], w->dims[3], outC}
                                           : std::vector<int64_t>{outC, w->dims[2], w->dims[3], w->dims[1]};
    const auto values = toOhwiValues(
        depthwise ? HostTensor{w->elementType, {1, outC, w->dims[2], w->dims[3]}, w->values} : *w);
    const uint32_t filter = NPU_TRY(quantWeights(ctx, wq, wDims, values, depthwise ? 3 : 0));
    const bool perChannel = ctx.builder().model().main.operands[filter].channelQuant.has_value();
    const uint32_t bias = NPU_TRY(quantBias(ctx, 8, outC, perChannel ? 0.0f : xq.scales[0] * wq.scales[0]));
    const uint32_t out = NPU_TRY(ctx.outputQuant(0, yq.type, yq.scales[0], yq.zeroPoint));
    auto& b = ctx.builder();
    auto i32 = [&](int64_t v) { return b.scalarInt(int32_t(v)); };
    std::vector<uint32_t> args = {x,
                                  filter,
                                  bias,
                                  i32(win.padL),
                                  i32(win.padR),
                                  i32(win.padT),
                                  i32(win.padB),
                                  i32(win.strideW),
                                  i32(win.strideH)};
    if (grouped) {
        args.insert(args.end(), {i32(group), b.scalarInt(0), b.scalarBool(true)});
        ctx.emit(OperationType::GROUPED_CONV_2D, args, {out});
        return {};
    }
    if (depthwise) args.push_back(i32(outC / inC));
    args.insert(args.end(), {b.scalarInt(0), b.scalarBool(true), i32(win.dilW), i32(win.dilH)});
    ctx.emit(depthwise ? OperationType::DEPTHWISE_CONV_2D : OperationType::CONV_2D, args, {out});
    return {};
}

Status mapQLinearMatMul(NodeContext& ctx) {
    const auto a = NPU_TRY(ctx.dims(0));
    const QuantParams aq = NPU_TRY(quantParams(ctx, 1, 2, false));
    const QuantParams bq = NPU_TRY(quantParams(ctx, 4, 5, true));
    const QuantParams yq = NPU_TRY(quantParams(ctx, 6, 7, false));
    const HostTensor* bT = NPU_TRY(ctx.constant(3, "B"));
    if (a.size() != 2 || bT->dims.size() != 2) return ctx.unsupported("A and B must be 2-D");
    if (bq.scales.size() != 1)
        return ctx.unsupported("B quantized per column (FULLY_CONNECTED has no per-channel weights)");
    if (yq.type != aq.type) return ctx.unsupported("Y's type differs from A's (FULLY_CONNECTED keeps it)");
    // B in A's type (FULLY_CONNECTED's rule): uint8 <-> int8 by 128 on values and zero point alike,
    // so every (b - zero point) and the result are unchanged.
    const int32_t shift = bq.type == aq.type ? 0 : aq.type == OperandType::TENSOR_QUANT8_ASYMM ? 128 : -128;
    const int64_t k = bT->dims[0], n = bT->dims[1];
    std::vector<uint8_t> weights(size_t(n * k));
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t i = 0; i < k; ++i)
            weights[size_t(j * k + i)] = uint8_t((int32_t(bT->values[size_t(i * n + j)]) + shift) & 0xff);
    }
    const uint32_t x = NPU_TRY(quantOperand(ctx, 0, aq));
    auto& b = ctx.builder();
    const uint32_t w = b.addConstant(aq.type, {uint32_t(n), uint32_t(k)}, weights.data(), weights.size());
    b.model().main.operands[w].scale = bq.scales[0];
    b.model().main.operands[w].zeroPoint = bq.zeroPoint + shift;
    const uint32_t bias = NPU_TRY(quantBias(ctx, 99, n, aq.scales[0] * bq.scales[0]));
    const uint32_t out = NPU_TRY(ctx.outputQuant(0, yq.type, yq.scales[0], yq.zeroPoint));
    ctx.emit(OperationType::FULLY_CONNECTED, {x, w, bias, ctx.builder().scalarInt(0)}, {out});
    return {};
}

}  // namespace

void registerQuantOps(std::unordered_map<std::string, Mapper>& table) {
    table["QuantizeLinear"] = mapQuantizeLinear;
    table["DequantizeLinear"] = mapDequantizeLinear;
    table["QLinearConv"] = mapQLinearConv;
    table["QLinearMatMul"] = mapQLinearMatMul;
}

}  // namespace npu::framework::onnx_import
