// Data movement between space, depth and batch: CHANNEL_SHUFFLE, SPACE_TO_DEPTH, DEPTH_TO_SPACE,
// SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND (NHWC and NCHW). Bytes are copied; quantized outputs
// share the input's scale and zero point.
#include "common.h"

namespace npu::ref::ops {
namespace {

using hal::OperationType;

bool supportsMove(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_QUANT8_ASYMM,
                   OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Status expectSameQuant(OperationContext& ctx) {
    if (ctx.outputType(0) != ctx.inputType(0)) return ctx.error("output type differs from the input type");
    if (!isFloatType(ctx.inputType(0)) &&
        (ctx.input(0).scale != ctx.output(0).scale || ctx.input(0).zeroPoint != ctx.output(0).zeroPoint)) {
        return ctx.error("output scale and zero point must equal the input's");
    }
    return {};
}

void copyElement(const RuntimeOperand& in, size_t src, RuntimeOperand& out, size_t dst) {
    const size_t e = hal::elementSize(in.type);
    std::memcpy(out.buffer.data() + dst * e, in.data() + src * e, e);
}

// ---- CHANNEL_SHUFFLE: view the axis as [groups, size] and transpose it to [size, groups].
Result<std::pair<int32_t, uint32_t>> shuffleParams(OperationContext& ctx) {
    const int32_t groups = NPU_TRY(scalarInput<int32_t>(ctx, 1, OperandType::INT32));
    const int32_t rank = int32_t(ctx.inputRank(0));
    int32_t axis = NPU_TRY(scalarInput<int32_t>(ctx, 2, OperandType::INT32));
    if (axis < -rank || axis >= rank)
        return ctx.error("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    if (axis < 0) axis += rank;
    if (groups <= 0 || ctx.inputDims(0)[axis] % groups != 0) {
        return ctx.error("number of groups " + std::to_string(groups) + " does not divide dimension " +
                         std::to_string(ctx.inputDims(0)[axis]));
    }
    return std::pair<int32_t, uint32_t>{groups, uint32_t(axis)};
}

Status prepareShuffle(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRankAtMost(0, 4));
    NPU_TRY(expectSameQuant(ctx));
    NPU_TRY(shuffleParams(ctx));
    return ctx.setOutputShape(0, ctx.inputDims(0));
}

Status executeShuffle(OperationContext& ctx) {
    const auto [groups, axis] = *shuffleParams(ctx);
    const RuntimeOperand& in = ctx.input(0);
    RuntimeOperand& out = ctx.output(0);
    size_t outer = 1, inner = 1;
    const size_t len = in.dims[axis], size = len / groups;
    for (uint32_t d = 0; d < axis; ++d) outer *= in.dims[d];
    for (size_t d = axis + 1; d < in.dims.size(); ++d) inner *= in.dims[d];
    for (size_t o = 0; o < outer; ++o)
        for (size_t k = 0; k < len; ++k)
            for (size_t i = 0; i < inner; ++i) {
                const size_t g = k / size, j = k % size;
                copyElement(in, (o * len + k) * inner + i, out, (o * len + j * groups + g) * inner + i);
            }
    return {};
}

// ---- SPACE_TO_DEPTH / DEPTH_TO_SPACE
template <bool kToDepth>
Result<std::pair<uint32_t, bool>> blockParams(OperationContext& ctx) {
    const int32_t block = NPU_TRY(scalarInput<int32_t>(ctx, 1, OperandType::INT32));
    const bool nchw = ctx.inputCount() > 2 ? NPU_TRY(boolInput(ctx, 2)) : false;
    if (block < 1) return ctx.error("block size must be >= 1, got " + std::to_string(block));
    return std::pair<uint32_t, bool>{uint32_t(block), nchw};
}

template <bool kToDepth>
Status prepareBlock(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 3));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRank(0, 4));
    NPU_TRY(expectSameQuant(ctx));
    const auto [bs, nchw] = NPU_TRY(blockParams<kToDepth>(ctx));
    const Layout4 in = layoutOf(ctx.inputDims(0), nchw);
    if (kToDepth) {
        if (in.h % bs != 0 || in.w % bs != 0)
            return ctx.error("height and width must be multiples of the block size");
        return ctx.setOutputShape(0, Layout4{in.n, in.h / bs, in.w / bs, in.c * bs * bs, nchw}.dims());
    }
    if (in.c % (bs * bs) != 0) return ctx.error("depth must be a multiple of the block size squared");
    return ctx.setOutputShape(0, Layout4{in.n, in.h * bs, in.w * bs, in.c / (bs * bs), nchw}.dims());
}

template <bool kToDepth>
Status executeBlock(OperationContext& ctx) {
    const auto [bs, nchw] = *blockParams<kToDepth>(ctx);
    const RuntimeOperand& input = ctx.input(0);
    RuntimeOperand& output = ctx.output(0);
    const Layout4 in = layoutOf(input.dims, nchw), out = layoutOf(output.dims, nchw);
    // Iterate over the deep side: (b, y, x, c) of the depth tensor <-> the spatial one.
    const Layout4& deep = kToDepth ? out : in;
    const Layout4& wide = kToDepth ? in : out;
    for (uint32_t b = 0; b < deep.n; ++b)
        for (uint32_t y = 0; y < deep.h; ++y)
            for (uint32_t x = 0; x < deep.w; ++x)
                for (uint32_t c = 0; c < deep.c; ++c) {
                    const uint32_t wc = c % wide.c, offset = c / wide.c;
                    const uint32_t dy = offset / bs, dx = offset % bs;
                    const size_t deepIndex = deep.index(b, y, x, c),
                                 wideIndex = wide.index(b, y * bs + dy, x * bs + dx, wc);
                    if (kToDepth)
                        copyElement(input, wideIndex, output, deepIndex);
                    else
                        copyElement(input, deepIndex, output, wideIndex);
                }
    return {};
}

// ---- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND
struct BatchParams {
    int32_t blockH = 1, blockW = 1;
    int32_t padTop = 0, padBottom = 0, padLeft = 0, padRight = 0;
    bool nchw = false;
};

template <bool kToBatch>
Result<BatchParams> batchParams(OperationContext& ctx) {
    BatchParams p;
    NPU_TRY(ctx.expectType(1, OperandType::TENSOR_INT32));
    if (ctx.inputDims(1) != std::vector<uint32_t>{2}) return ctx.error("block shape must be a [2] tensor");
    if (!ctx.hasValue(1)) return ctx.deferred();
    p.blockH = ctx.inputData<int32_t>(1)[0];
    p.blockW = ctx.inputData<int32_t>(1)[1];
    size_t layoutIndex = 2;
    if (kToBatch) {
        NPU_TRY(ctx.expectType(2, OperandType::TENSOR_INT32));
        if (ctx.inputDims(2) != std::vector<uint32_t>{2, 2})
            return ctx.error("paddings must be a [2, 2] tensor");
        if (!ctx.hasValue(2)) return ctx.deferred();
        const int32_t* pad = ctx.inputData<int32_t>(2);
        p.padTop = pad[0];
        p.padBottom = pad[1];
        p.padLeft = pad[2];
        p.padRight = pad[3];
        layoutIndex = 3;
        if (p.padTop < 0 || p.padBottom < 0 || p.padLeft < 0 || p.padRight < 0)
            return ctx.error("paddings must not be negative");
    }
    if (ctx.inputCount() > layoutIndex) p.nchw = NPU_TRY(boolInput(ctx, layoutIndex));
    if (p.blockH < 1 || p.blockW < 1) return ctx.error("block sizes must be >= 1");
    return p;
}

template <bool kToBatch>
Status prepareBatch(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(kToBatch ? 3 : 2, kToBatch ? 4 : 3));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRank(0, 4));
    NPU_TRY(expectSameQuant(ctx));
    const BatchParams p = NPU_TRY(batchParams<kToBatch>(ctx));
    const Layout4 in = layoutOf(ctx.inputDims(0), p.nchw);
    if (kToBatch) {
        const uint32_t h = in.h + p.padTop + p.padBottom, w = in.w + p.padLeft + p.padRight;
        if (h % p.blockH != 0 || w % p.blockW != 0)
            return ctx.error("padded height and width must be multiples of the block");
        return ctx.setOutputShape(
            0, Layout4{in.n * p.blockH * p.blockW, h / p.blockH, w / p.blockW, in.c, p.nchw}.dims());
    }
    if (in.n % (p.blockH * p.blockW) != 0) return ctx.error("batch must be a multiple of the block area");
    return ctx.setOutputShape(
        0, Layout4{in.n / (p.blockH * p.blockW), in.h * p.blockH, in.w * p.blockW, in.c, p.nchw}.dims());
}

template <bool kToBatch>
Status executeBatch(OperationContext& ctx) {
    const BatchParams p = *batchParams<kToBatch>(ctx);
    const RuntimeOperand& input = ctx.input(0);
    RuntimeOperand& output = ctx.output(0);
    const Layout4 in = layoutOf(input.dims, p.nchw), out = layoutOf(output.dims, p.nchw);
    const Layout4& batched = kToBatch ? out : in;
    const Layout4& spatial = kToBatch ? in : out;
    const size_t elem = hal::elementSize(input.type);
    const int32_t padByte = isFloatType(input.type) ? 0 : input.zeroPoint;
    for (uint32_t b = 0; b < batched.n; ++b) {
        const uint32_t sb = b % spatial.n, shift = b / spatial.n;
        const int32_t shiftH = int32_t(shift) / p.blockW, shiftW = int32_t(shift) % p.blockW;
        for (uint32_t y = 0; y < batched.h; ++y)
            for (uint32_t x = 0; x < batched.w; ++x) {
                const int64_t sy = int64_t(y) * p.blockH + shiftH - p.padTop;
                const int64_t sx = int64_t(x) * p.blockW + shiftW - p.padLeft;
                const bool inside = sy >= 0 && sy < spatial.h && sx >= 0 && sx < spatial.w;
                for (uint32_t c = 0; c < batched.c; ++c) {
                    const size_t bi = batched.index(b, y, x, c);
                    if (kToBatch) {
                        if (inside)
                            copyElement(input, spatial.index(sb, uint32_t(sy), uint32_t(sx), c), output, bi);
                        else if (elem == 1)
                            output.buffer[bi] = static_cast<uint8_t>(padByte);
                        else
                            std::memset(output.buffer.data() + bi * elem, 0, elem);
                    } else if (inside) {
                        copyElement(input, bi, output, spatial.index(sb, uint32_t(sy), uint32_t(sx), c));
                    }
                }
            }
    }
    return {};
}

}  // namespace

std::vector<OperationRegistration> spaceOperations() {
    return {
        {OperationType::CHANNEL_SHUFFLE, supportsMove, prepareShuffle, executeShuffle},
        {OperationType::SPACE_TO_DEPTH, supportsMove, prepareBlock<true>, executeBlock<true>},
        {OperationType::DEPTH_TO_SPACE, supportsMove, prepareBlock<false>, executeBlock<false>},
        {OperationType::SPACE_TO_BATCH_ND, supportsMove, prepareBatch<true>, executeBatch<true>},
        {OperationType::BATCH_TO_SPACE_ND, supportsMove, prepareBatch<false>, executeBatch<false>},
    };
}

}  // namespace npu::ref::ops
