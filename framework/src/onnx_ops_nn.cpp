// ONNX -> HAL mappers of the network operators: Conv, ConvTranspose, Gemm, MatMul, the pools,
// BatchNormalization (when not folded into a Conv), Resize/Upsample, Softmax/LogSoftmax.
// Tensors stay NCHW: every HAL operation with a layout flag gets layout = NCHW (true).
#include <cmath>

#include "onnx_builder.h"

namespace npu::framework::onnx_import {
namespace {

using hal::OperationType;

Status requireFloatInput(NodeContext& ctx, size_t i) {
    const Value* v = ctx.value(i);
    if (v != nullptr && v->elementType != 0 && v->elementType != onnx::TensorProto::FLOAT) {
        return ctx.unsupported("input " + std::to_string(i) + " has element type " +
                               onnxTypeName(v->elementType));
    }
    return {};
}

uint32_t i32(ModelBuilder& b, int64_t v) {
    return b.scalarInt(static_cast<int32_t>(v));
}

std::vector<float> toOhwi(const HostTensor& w) {
    const auto v = toOhwiValues(w);
    return std::vector<float>(v.begin(), v.end());
}

Result<uint32_t> biasOperand(NodeContext& ctx, size_t input, int64_t channels) {
    if (!ctx.hasInput(input))
        return ctx.builder().tensorFloat({uint32_t(channels)}, std::vector<float>(size_t(channels), 0.0f));
    const Value* v = ctx.value(input);
    if (v != nullptr && !v->constant) {
        if (NPU_TRY(ctx.dims(input)) != std::vector<int64_t>{channels})
            return ctx.unsupported("bias is not a [" + std::to_string(channels) + "] vector");
        return ctx.operand(input);
    }
    const HostTensor* b = NPU_TRY(ctx.constant(input, "bias"));
    if (static_cast<int64_t>(b->count()) != channels)
        return ctx.unsupported("bias has " + std::to_string(b->count()) + " values, expected " +
                               std::to_string(channels));
    return ctx.builder().tensorFloat({uint32_t(channels)}, b->asFloats());
}

// The conv filter in the HAL's layout (OHWI; depthwise [1, kh, kw, O]): constant weights are
// re-laid out here, runtime weights by a TRANSPOSE on the device.
Result<uint32_t> filterOperand(NodeContext& ctx, const std::vector<int64_t>& w, bool depthwise) {
    const std::vector<int64_t> halDims =
        depthwise ? std::vector<int64_t>{1, w[2], w[3], w[0]} : std::vector<int64_t>{w[0], w[2], w[3], w[1]};
    const Value* v = ctx.value(1);
    if (v != nullptr && v->constant) {
        const HostTensor& c = *v->constant;
        const auto values =
            toOhwi(depthwise ? HostTensor{c.elementType, {1, w[0], w[2], w[3]}, c.values} : c);
        return ctx.builder().tensorFloat(toHalDims(halDims), values);
    }
    NPU_TRY(requireFloatInput(ctx, 1));
    const uint32_t weights = NPU_TRY(ctx.operand(1));
    const uint32_t filter = ctx.temporary(halDims);
    const std::vector<int32_t> perm =
        depthwise ? std::vector<int32_t>{1, 2, 3, 0} : std::vector<int32_t>{0, 2, 3, 1};
    ctx.emit(OperationType::TRANSPOSE, {weights, ctx.builder().tensorInt(perm)}, {filter});
    return filter;
}

Status mapConv(NodeContext& ctx) {
    const auto in = NPU_TRY(ctx.dims(0));
    const auto w = NPU_TRY(ctx.dims(1));
    if (w.size() != 4)
        return ctx.unsupported("weights of rank " + std::to_string(w.size()) + " (only 2-D convolutions)");
    const Window2d win = NPU_TRY(windowOf(ctx, in, {w[2], w[3]}));
    const int64_t group = ctx.attrInt("group", 1), outC = w[0], inC = in[1];
    if (group <= 0 || inC % group != 0 || w[1] * group != inC)
        return ctx.unsupported("group " + std::to_string(group) + " does not divide the channels");
    const bool depthwise = group == inC && group > 1 && outC % inC == 0;
    if (group > 1 && !depthwise && (win.dilH != 1 || win.dilW != 1)) {
        return ctx.unsupported("grouped convolution with dilation (GROUPED_CONV_2D has none)");
    }
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t filter = NPU_TRY(filterOperand(ctx, w, depthwise));
    const uint32_t bias = NPU_TRY(biasOperand(ctx, 2, outC));
    const uint32_t out = NPU_TRY(ctx.output(0));
    std::vector<uint32_t> a = {x,
                               filter,
                               bias,
                               i32(b, win.padL),
                               i32(b, win.padR),
                               i32(b, win.padT),
                               i32(b, win.padB),
                               i32(b, win.strideW),
                               i32(b, win.strideH)};
    if (group == 1) {
        a.insert(a.end(), {b.scalarInt(0), b.scalarBool(true), i32(b, win.dilW), i32(b, win.dilH)});
        ctx.emit(OperationType::CONV_2D, a, {out});
    } else if (depthwise) {
        a.insert(a.end(), {i32(b, outC / inC), b.scalarInt(0), b.scalarBool(true), i32(b, win.dilW),
                           i32(b, win.dilH)});
        ctx.emit(OperationType::DEPTHWISE_CONV_2D, a, {out});
    } else {
        a.insert(a.end(), {i32(b, group), b.scalarInt(0), b.scalarBool(true)});
        ctx.emit(OperationType::GROUPED_CONV_2D, a, {out});
    }
    return {};
}

// ONNX ConvTranspose weights [I, O, kh, kw] -> HAL [O, kh, kw, I]: re-laid out here when
// constant, by a TRANSPOSE on the device otherwise.
Result<uint32_t> transposedFilter(NodeContext& ctx, const std::vector<int64_t>& w) {
    const int64_t inC = w[0], outC = w[1], kh = w[2], kw = w[3];
    const Value* v = ctx.value(1);
    if (v != nullptr && v->constant) {
        std::vector<float> filter(v->constant->count());
        for (int64_t i = 0; i < inC; ++i)
            for (int64_t o = 0; o < outC; ++o)
                for (int64_t y = 0; y < kh; ++y)
                    for (int64_t x = 0; x < kw; ++x)
                        filter[size_t(((o * kh + y) * kw + x) * inC + i)] =
                            float(v->constant->values[size_t(((i * outC + o) * kh + y) * kw + x)]);
        return ctx.builder().tensorFloat(toHalDims({outC, kh, kw, inC}), filter);
    }
    NPU_TRY(requireFloatInput(ctx, 1));
    const uint32_t weights = NPU_TRY(ctx.operand(1));
    const uint32_t filter = ctx.temporary({outC, kh, kw, inC});
    ctx.emit(OperationType::TRANSPOSE, {weights, ctx.builder().tensorInt({1, 2, 3, 0})}, {filter});
    return filter;
}

Status mapConvTranspose(NodeContext& ctx) {
    const auto in = NPU_TRY(ctx.dims(0));
    const auto w = NPU_TRY(ctx.dims(1));
    if (w.size() != 4) return ctx.unsupported("only 2-D transposed convolutions");
    if (ctx.attrInt("group", 1) != 1) return ctx.unsupported("group != 1");
    // windowOf's SAME rule is the convolution's; ONNX's transposed rule (and its SAME_UPPER /
    // SAME_LOWER split, which changed across ONNX releases) is not mapped.
    if (const auto autoPad = ctx.attrString("auto_pad", "NOTSET");
        autoPad != "NOTSET" && autoPad != "VALID") {
        return ctx.unsupported("auto_pad " + autoPad);
    }
    Window2d win = NPU_TRY(windowOf(ctx, in, {w[2], w[3]}));
    if (win.dilH != 1 || win.dilW != 1) return ctx.unsupported("dilations != 1");
    if (win.kh != w[2] || win.kw != w[3]) return ctx.unsupported("kernel_shape differs from the weights");
    const auto outDims = NPU_TRY(ctx.outputDims(0, 4));
    // HAL: out = (in - 1) * stride + k - padBegin - padEnd. Derive padEnd from ONNX's output size
    // (output_padding, output_shape, auto_pad all end up there).
    win.padB = (in[2] - 1) * win.strideH + win.kh - win.padT - outDims[2];
    win.padR = (in[3] - 1) * win.strideW + win.kw - win.padL - outDims[3];
    if (win.padB < 0 || win.padR < 0) return ctx.unsupported("output_padding larger than the end padding");
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t f = NPU_TRY(transposedFilter(ctx, w));
    const uint32_t bias = NPU_TRY(biasOperand(ctx, 2, w[1]));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::TRANSPOSE_CONV_2D,
             {x, f, bias, i32(b, win.padL), i32(b, win.padR), i32(b, win.padT), i32(b, win.padB),
              i32(b, win.strideW), i32(b, win.strideH), b.scalarInt(0), b.scalarBool(true)},
             {out});
    return {};
}

// FULLY_CONNECTED weights [N, K] from B = input `index` (Gemm, MatMul): [K, N] unless `bIsNK`.
// Constant B is re-laid out and scaled by alpha here; a runtime B is transposed and scaled on
// the device.
Result<uint32_t> fcWeights(NodeContext& ctx, size_t index, bool bIsNK, float alpha, int64_t k, int64_t& n) {
    const auto dims = NPU_TRY(ctx.dims(index));
    if (dims.size() != 2) return ctx.unsupported("B must be 2-D");
    n = bIsNK ? dims[0] : dims[1];
    if ((bIsNK ? dims[1] : dims[0]) != k)
        return ctx.unsupported("B does not match A's inner dimension " + std::to_string(k));
    auto& b = ctx.builder();
    const Value* v = ctx.value(index);
    if (v != nullptr && v->constant) {
        std::vector<float> weights(size_t(n * k));
        for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < k; ++i)
                weights[size_t(j * k + i)] =
                    alpha * float(v->constant->values[size_t(bIsNK ? j * k + i : i * n + j)]);
        return b.tensorFloat(toHalDims({n, k}), weights);
    }
    NPU_TRY(requireFloatInput(ctx, index));
    uint32_t w = NPU_TRY(ctx.operand(index));
    if (!bIsNK) {
        const uint32_t t = ctx.temporary({n, k});
        ctx.emit(OperationType::TRANSPOSE, {w, b.tensorInt({1, 0})}, {t});
        w = t;
    }
    if (alpha != 1.0f) {
        const uint32_t t = ctx.temporary({n, k});
        ctx.emit(OperationType::MUL, {w, b.tensorFloat({1}, {alpha}), b.scalarInt(0)}, {t});
        w = t;
    }
    return w;
}

void emitFullyConnected(NodeContext& ctx, uint32_t input, uint32_t weights, int64_t n,
                        std::vector<float> bias, uint32_t out) {
    auto& b = ctx.builder();
    if (bias.empty()) bias.assign(size_t(n), 0.0f);
    ctx.emit(OperationType::FULLY_CONNECTED,
             {input, weights, b.tensorFloat({uint32_t(n)}, bias), b.scalarInt(0)}, {out});
}

// Gemm's C: a constant along N becomes FULLY_CONNECTED's bias; anything else is added after.
Status gemmBias(NodeContext& ctx, int64_t n, float beta, std::vector<float>& bias,
                std::optional<uint32_t>& addend) {
    if (!ctx.hasInput(2)) return {};
    const Value* c = ctx.value(2);
    const auto cDims = NPU_TRY(ctx.dims(2));
    if (c != nullptr && c->constant && (product(cDims) == 1 || (product(cDims) == n && cDims.back() == n))) {
        for (int64_t j = 0; j < n; ++j)
            bias.push_back(beta * float(c->constant->values[c->constant->count() == 1 ? 0 : size_t(j)]));
        return {};
    }
    NPU_TRY(requireFloatInput(ctx, 2));
    uint32_t cOp = NPU_TRY(ctx.operand(2));
    if (beta != 1.0f) {
        const uint32_t scaled = ctx.temporary(cDims.empty() ? std::vector<int64_t>{1} : cDims);
        ctx.emit(OperationType::MUL,
                 {cOp, ctx.builder().tensorFloat({1}, {beta}), ctx.builder().scalarInt(0)}, {scaled});
        cOp = scaled;
    }
    addend = cOp;
    return {};
}

Status mapGemm(NodeContext& ctx) {
    NPU_TRY(requireFloatInput(ctx, 0));
    const auto a = NPU_TRY(ctx.dims(0));
    if (a.size() != 2) return ctx.unsupported("A must be 2-D");
    const bool transA = ctx.attrInt("transA", 0) != 0;
    const int64_t m = transA ? a[1] : a[0], k = transA ? a[0] : a[1];
    int64_t n = 0;
    const uint32_t weights =
        NPU_TRY(fcWeights(ctx, 1, ctx.attrInt("transB", 0) != 0, ctx.attrFloat("alpha", 1.0f), k, n));
    std::vector<float> bias;
    std::optional<uint32_t> addend;
    NPU_TRY(gemmBias(ctx, n, ctx.attrFloat("beta", 1.0f), bias, addend));
    uint32_t x = NPU_TRY(ctx.operand(0));
    if (transA) {
        const uint32_t t = ctx.temporary({m, k});
        ctx.emit(OperationType::TRANSPOSE, {x, ctx.builder().tensorInt({1, 0})}, {t});
        x = t;
    }
    const uint32_t out = NPU_TRY(ctx.output(0));
    if (!addend) {
        emitFullyConnected(ctx, x, weights, n, bias, out);
        return {};
    }
    const uint32_t fc = ctx.temporary({m, n});
    emitFullyConnected(ctx, x, weights, n, {}, fc);
    ctx.emit(OperationType::ADD, {fc, *addend, ctx.builder().scalarInt(0)}, {out});
    return {};
}

// MatMul with a 2-D B: FULLY_CONNECTED flattens A's leading dimensions; the [M, N] result is
// reshaped back to A's batch shape.
Status mapMatMul(NodeContext& ctx) {
    NPU_TRY(requireFloatInput(ctx, 0));
    const auto a = NPU_TRY(ctx.dims(0));
    if (NPU_TRY(ctx.dims(1)).size() != 2 || a.size() < 2) {
        return ctx.unsupported("B must be 2-D and A at least 2-D (HAL 1.3 has no batched matrix product)");
    }
    const int64_t k = a.back();
    int64_t n = 0;
    const uint32_t weights = NPU_TRY(fcWeights(ctx, 1, false, 1.0f, k, n));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    if (a.size() == 2) {
        emitFullyConnected(ctx, x, weights, n, {}, out);
        return {};
    }
    const uint32_t fc = ctx.temporary({product(a) / k, n});
    emitFullyConnected(ctx, x, weights, n, {}, fc);
    const auto outDims = NPU_TRY(ctx.outputDims(0));
    ctx.emit(OperationType::RESHAPE,
             {fc, ctx.builder().tensorInt(std::vector<int32_t>(outDims.begin(), outDims.end()))}, {out});
    return {};
}

// ceil_mode: extend the end padding so the HAL's floor rule gives ONNX's ceil size; padding is
// ignored by MAX_POOL_2D and excluded from AVERAGE_POOL_2D's count.
Status mapPool(NodeContext& ctx, OperationType type) {
    if (ctx.node().output_size() > 1 && !ctx.node().output(1).empty())
        return ctx.unsupported("the Indices output");
    const auto in = NPU_TRY(ctx.dims(0));
    Window2d win = NPU_TRY(windowOf(ctx, in, {}));
    if (win.dilH != 1 || win.dilW != 1) return ctx.unsupported("dilations != 1");
    if (type == OperationType::AVERAGE_POOL_2D && ctx.attrInt("count_include_pad", 0) != 0 &&
        (win.padT | win.padL | win.padB | win.padR) != 0) {
        return ctx.unsupported("count_include_pad = 1 with padding (AVERAGE_POOL_2D excludes padding)");
    }
    const auto outDims = NPU_TRY(ctx.outputDims(0, 4));
    win.padB += std::max<int64_t>(0, (outDims[2] - 1) * win.strideH + win.kh - (in[2] + win.padT + win.padB));
    win.padR += std::max<int64_t>(0, (outDims[3] - 1) * win.strideW + win.kw - (in[3] + win.padL + win.padR));
    if (win.padT >= win.kh || win.padB >= win.kh || win.padL >= win.kw || win.padR >= win.kw) {
        return ctx.unsupported("padding as large as the window (a window over padding only)");
    }
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(type,
             {x, i32(b, win.padL), i32(b, win.padR), i32(b, win.padT), i32(b, win.padB), i32(b, win.strideW),
              i32(b, win.strideH), i32(b, win.kw), i32(b, win.kh), b.scalarInt(0), b.scalarBool(true)},
             {out});
    return {};
}

Status mapMaxPool(NodeContext& ctx) {
    if (ctx.attrInt("storage_order", 0) != 0) return ctx.unsupported("storage_order = 1");
    return mapPool(ctx, OperationType::MAX_POOL_2D);
}
Status mapAveragePool(NodeContext& ctx) {
    return mapPool(ctx, OperationType::AVERAGE_POOL_2D);
}

// Global pools reduce the spatial axes with keepdims.
Status mapGlobalPool(NodeContext& ctx, OperationType type) {
    const uint32_t rank = NPU_TRY(ctx.rank(0));
    if (rank < 3) return ctx.unsupported("input of rank " + std::to_string(rank));
    std::vector<int32_t> axes;
    for (uint32_t a = 2; a < rank; ++a) axes.push_back(int32_t(a));
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    auto& b = ctx.builder();
    const uint32_t keep = type == OperationType::MEAN ? b.scalarInt(1) : b.scalarBool(true);
    ctx.emit(type, {x, b.tensorInt(axes), keep}, {out});
    return {};
}
Status mapGlobalAveragePool(NodeContext& ctx) {
    return mapGlobalPool(ctx, OperationType::MEAN);
}
Status mapGlobalMaxPool(NodeContext& ctx) {
    return mapGlobalPool(ctx, OperationType::REDUCE_MAX);
}

// A BatchNormalization not folded into a Conv: x * scale + shift per channel (axis 1).
Status mapBatchNorm(NodeContext& ctx) {
    if (ctx.node().output_size() > 1) return ctx.unsupported("training outputs (running mean / variance)");
    if (ctx.attrInt("training_mode", 0) != 0) return ctx.unsupported("training_mode = 1");
    const auto in = NPU_TRY(ctx.dims(0));
    if (in.size() < 2 || in.size() > 4)
        return ctx.unsupported("input of rank " + std::to_string(in.size()) + " (MUL and ADD take 1 to 4)");
    const HostTensor* p[4];
    const char* roles[4] = {"scale", "B", "mean", "var"};
    for (int k = 0; k < 4; ++k) p[k] = NPU_TRY(ctx.constant(size_t(k) + 1, roles[k]));
    const int64_t c = in[1];
    const double eps = ctx.attrFloat("epsilon", 1e-5f);
    std::vector<float> scale(static_cast<size_t>(c)), shift(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) {
        const double s = p[0]->values[i] / std::sqrt(p[3]->values[i] + eps);
        scale[i] = float(s);
        shift[i] = float(p[1]->values[i] - p[2]->values[i] * s);
    }
    std::vector<int64_t> paramDims = {c};
    for (size_t k = 2; k < in.size(); ++k) paramDims.push_back(1);
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t scaled = ctx.temporary(in);
    const uint32_t out = NPU_TRY(ctx.output(0));
    ctx.emit(OperationType::MUL, {x, b.tensorFloat(toHalDims(paramDims), scale), b.scalarInt(0)}, {scaled});
    ctx.emit(OperationType::ADD, {scaled, b.tensorFloat(toHalDims(paramDims), shift), b.scalarInt(0)}, {out});
    return {};
}

// Resize (opset 10+) and Upsample: 4-D NCHW with N and C unscaled, and the coordinate rules the
// HAL's RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR compute exactly.
Status mapResize(NodeContext& ctx) {
    const auto in = NPU_TRY(ctx.dims(0));
    const auto out = NPU_TRY(ctx.outputDims(0, 4));
    if (in.size() != 4 || out[0] != in[0] || out[1] != in[1])
        return ctx.unsupported("only 4-D NCHW resizes of H and W");
    const std::string mode = ctx.attrString("mode", "nearest");
    const bool upsample = ctx.node().op_type() == "Upsample" || ctx.opset() < 11;
    const std::string coord =
        upsample ? "asymmetric" : ctx.attrString("coordinate_transformation_mode", "half_pixel");
    const std::string nearestMode = upsample ? "floor" : ctx.attrString("nearest_mode", "round_prefer_floor");
    // The HAL derives its scale from the sizes: exact only when ONNX's scale is out / in.
    if (!upsample && ctx.hasInput(2) && !ctx.hasInput(3)) {
        const HostTensor* s = NPU_TRY(ctx.constant(2, "scales"));
        for (size_t k = 2; k < 4 && k < s->count(); ++k) {
            if (std::fabs(s->values[k] * double(in[k]) - double(out[k])) > 1e-6)
                return ctx.unsupported("a scale that is not output / input size");
        }
    }
    bool alignCorners = false, halfPixel = false;
    OperationType type;
    if (mode == "nearest") {
        if (coord != "asymmetric" || nearestMode != "floor")
            return ctx.unsupported("nearest with " + coord + " / " + nearestMode +
                                   " (only asymmetric / floor)");
        type = OperationType::RESIZE_NEAREST_NEIGHBOR;
    } else if (mode == "linear" || mode == "bilinear") {
        type = OperationType::RESIZE_BILINEAR;
        alignCorners = coord == "align_corners";
        halfPixel = coord == "half_pixel" || (coord == "pytorch_half_pixel" && out[2] > 1 && out[3] > 1);
        if (!alignCorners && !halfPixel && coord != "asymmetric")
            return ctx.unsupported("linear with " + coord);
    } else {
        return ctx.unsupported("mode '" + mode + "'");
    }
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t o = NPU_TRY(ctx.output(0));
    ctx.emit(type,
             {x, i32(b, out[3]), i32(b, out[2]), b.scalarBool(true), b.scalarBool(alignCorners),
              b.scalarBool(halfPixel)},
             {o});
    return {};
}

// Softmax / LogSoftmax. Before opset 13 the input is coerced to 2-D at `axis`: flatten, apply
// on the last axis, reshape back.
Status mapSoftmaxLike(NodeContext& ctx, OperationType type) {
    const auto in = NPU_TRY(ctx.dims(0));
    const uint32_t rank = static_cast<uint32_t>(in.size());
    const int64_t axis = ctx.attrInt("axis", ctx.opset() < 13 ? 1 : -1);
    NPU_TRY(checkAxis(ctx, axis, rank, "axis"));
    const uint32_t a = normalizeAxis(axis, rank);
    auto& b = ctx.builder();
    const uint32_t x = NPU_TRY(ctx.operand(0));
    const uint32_t out = NPU_TRY(ctx.output(0));
    auto emitOp = [&](uint32_t src, uint32_t dst, int32_t opAxis) {
        ctx.emit(type, {src, b.scalarFloat(1.0f), b.scalarInt(opAxis)}, {dst});
    };
    if (ctx.opset() >= 13 || a == rank - 1) {
        emitOp(x, out, static_cast<int32_t>(a));
        return {};
    }
    const std::vector<int64_t> flat = {product(in, 0, a), product(in, a)};
    const uint32_t x2 = ctx.temporary(flat), y2 = ctx.temporary(flat);
    ctx.emit(OperationType::RESHAPE, {x, b.tensorInt({int32_t(flat[0]), int32_t(flat[1])})}, {x2});
    emitOp(x2, y2, 1);
    std::vector<int32_t> shape(in.begin(), in.end());
    ctx.emit(OperationType::RESHAPE, {y2, b.tensorInt(shape)}, {out});
    return {};
}
Status mapSoftmax(NodeContext& ctx) {
    return mapSoftmaxLike(ctx, OperationType::SOFTMAX);
}
Status mapLogSoftmax(NodeContext& ctx) {
    return mapSoftmaxLike(ctx, OperationType::LOG_SOFTMAX);
}

}  // namespace

// kernel_shape (or the weights' spatial dims), strides, dilations, pads or auto_pad.
Result<Window2d> windowOf(NodeContext& ctx, const std::vector<int64_t>& in, std::vector<int64_t> kernel) {
    if (in.size() != 4)
        return ctx.unsupported("only 2-D spatial (rank-4 NCHW) inputs are mapped, got rank " +
                               std::to_string(in.size()));
    if (auto k = ctx.attrInts("kernel_shape"); !k.empty()) kernel = k;
    if (kernel.size() != 2) return ctx.unsupported("kernel_shape must have 2 values");
    Window2d w{kernel[0], kernel[1]};
    if (auto s = ctx.attrInts("strides"); !s.empty()) w.strideH = s[0], w.strideW = s[1];
    if (auto d = ctx.attrInts("dilations"); !d.empty()) w.dilH = d[0], w.dilW = d[1];
    const std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
    if (autoPad == "NOTSET") {
        if (auto p = ctx.attrInts("pads"); !p.empty()) {
            if (p.size() != 4) return ctx.unsupported("pads must have 4 values");
            w.padT = p[0], w.padL = p[1], w.padB = p[2], w.padR = p[3];
        }
    } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
        auto same = [&](int64_t size, int64_t k, int64_t s, int64_t d, int64_t& lo, int64_t& hi) {
            const int64_t out = (size + s - 1) / s;
            const int64_t total = std::max<int64_t>(0, (out - 1) * s + (k - 1) * d + 1 - size);
            lo = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
            hi = total - lo;
        };
        same(in[2], w.kh, w.strideH, w.dilH, w.padT, w.padB);
        same(in[3], w.kw, w.strideW, w.dilW, w.padL, w.padR);
    } else if (autoPad != "VALID") {
        return ctx.unsupported("auto_pad '" + autoPad + "'");
    }
    for (int64_t v : {w.kh, w.kw, w.strideH, w.strideW, w.dilH, w.dilW}) {
        if (v <= 0 || v > INT32_MAX)
            return ctx.unsupported("kernel, stride or dilation value " + std::to_string(v));
    }
    for (int64_t v : {w.padT, w.padL, w.padB, w.padR}) {
        if (v < 0 || v > INT32_MAX) return ctx.unsupported("padding value " + std::to_string(v));
    }
    return w;
}

std::vector<double> toOhwiValues(const HostTensor& w) {
    const int64_t o = w.dims[0], i = w.dims[1], h = w.dims[2], x = w.dims[3];
    std::vector<double> out(w.count());
    for (int64_t a = 0; a < o; ++a)
        for (int64_t c = 0; c < i; ++c)
            for (int64_t y = 0; y < h; ++y)
                for (int64_t z = 0; z < x; ++z)
                    out[((a * h + y) * x + z) * i + c] = w.values[((a * i + c) * h + y) * x + z];
    return out;
}

void registerNnOps(std::unordered_map<std::string, Mapper>& table) {
    table["Conv"] = mapConv;
    table["ConvTranspose"] = mapConvTranspose;
    table["Gemm"] = mapGemm;
    table["MatMul"] = mapMatMul;
    table["MaxPool"] = mapMaxPool;
    table["AveragePool"] = mapAveragePool;
    table["GlobalAveragePool"] = mapGlobalAveragePool;
    table["GlobalMaxPool"] = mapGlobalMaxPool;
    table["BatchNormalization"] = mapBatchNorm;
    table["Resize"] = mapResize;
    table["Upsample"] = mapResize;
    table["Softmax"] = mapSoftmax;
    table["LogSoftmax"] = mapLogSoftmax;
}

}  // namespace npu::framework::onnx_import
