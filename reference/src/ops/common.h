#pragma once
// Helpers shared by the operation families.
#include <initializer_list>
#include <vector>

#include "../operation_context.h"
#include "../quant_utils.h"
#include "../registry.h"

namespace npu::ref::ops {

using hal::OperandType;

inline bool typeIn(OperandType t, std::initializer_list<OperandType> set) {
    for (auto s : set) {
        if (s == t) return true;
    }
    return false;
}

// Input 0 is a FLOAT32, FLOAT16, INT32 or QUANT8_ASYMM(_SIGNED) tensor: the types of the
// operations that move or compare elements without arithmetic on their values.
bool supportsDataTypes(const hal::Subgraph& sg, const hal::Operation& op);

// Output 0 = input 0, byte for byte (RESHAPE, SQUEEZE, EXPAND_DIMS: only the shape changes).
Status executeCopy(OperationContext& ctx);

// The fused activation code of input i (NONE, RELU, RELU1, RELU6).
Result<int32_t> activationOf(OperationContext& ctx, size_t i);

// A scalar input that preparation needs: deferred when it is not a constant.
template <typename T>
Result<T> scalarInput(OperationContext& ctx, size_t i, OperandType type) {
    NPU_TRY(ctx.expectType(i, type));
    if (!ctx.hasValue(i)) return ctx.deferred();
    return ctx.scalar<T>(i);
}
// For operations without optional inputs: an omitted input (NO_VALUE, or a request input
// passed without a value) is an error, before any kernel reads its missing data.
inline Status expectAllPresent(const OperationContext& ctx) {
    for (size_t i = 0; i < ctx.inputCount(); ++i) {
        if (ctx.isOmitted(i)) return ctx.error("input " + std::to_string(i) + " is omitted but required");
    }
    return {};
}
// A FLOAT16 or FLOAT32 scalar input that preparation needs, FLOAT16 when input 0 is a
// TENSOR_FLOAT16; deferred when it is not a constant.
inline Result<float> floatScalarInput(OperationContext& ctx, size_t i) {
    const OperandType t =
        ctx.inputType(0) == OperandType::TENSOR_FLOAT16 ? OperandType::FLOAT16 : OperandType::FLOAT32;
    NPU_TRY(ctx.expectType(i, t));
    if (!ctx.hasValue(i)) return ctx.deferred();
    return loadFloat(t, ctx.input(i).data(), 0);
}
// A BOOL scalar (layout flags), false when the input is absent.
Result<bool> boolInput(OperationContext& ctx, size_t i);
// The INT32 axis input i (required) for input 0, in [-rank, rank); negative counts from the end.
Result<uint32_t> requiredAxis(OperationContext& ctx, size_t i);

// Numpy-style broadcast of two shapes; an error names both.
Result<std::vector<uint32_t>> broadcastShapes(OperationContext& ctx, const std::vector<uint32_t>& a,
                                              const std::vector<uint32_t>& b);
// Calls f(outIndex, aIndex, bIndex) for every element of the broadcast output.
template <typename F>
void forEachBroadcast(const std::vector<uint32_t>& out, const std::vector<uint32_t>& a,
                      const std::vector<uint32_t>& b, F&& f) {
    const size_t rank = out.size();
    std::vector<size_t> sa(rank, 0), sb(rank, 0);
    auto strides = [&](const std::vector<uint32_t>& d, std::vector<size_t>& s) {
        size_t stride = 1;
        for (size_t k = 0; k < d.size(); ++k) {
            const size_t dim = d.size() - 1 - k, o = rank - 1 - k;
            s[o] = d[dim] == 1 ? 0 : stride;
            stride *= d[dim];
        }
    };
    strides(a, sa);
    strides(b, sb);
    const size_t total = elementCount(out);
    std::vector<uint32_t> idx(rank, 0);
    size_t ia = 0, ib = 0;
    for (size_t n = 0; n < total; ++n) {
        f(n, ia, ib);
        for (size_t k = rank; k-- > 0;) {
            ++idx[k];
            ia += sa[k];
            ib += sb[k];
            if (idx[k] < out[k]) break;
            ia -= sa[k] * idx[k];
            ib -= sb[k] * idx[k];
            idx[k] = 0;
        }
    }
}

// Explicit or implicit (SAME/VALID) padding of one spatial dimension.
struct Padding {
    int32_t before = 0, after = 0;
};
// Output size for an explicit padding; negative means the configuration is impossible.
inline int64_t convOutputSize(int64_t in, int64_t filter, int64_t dilation, int64_t stride, Padding pad) {
    const int64_t effective = (filter - 1) * dilation + 1;
    return (in - effective + pad.before + pad.after) / stride + 1;
}
inline Padding implicitPadding(int32_t scheme, int64_t in, int64_t filter, int64_t dilation, int64_t stride) {
    Padding p;
    if (scheme == 1) {  // SAME
        const int64_t out = (in + stride - 1) / stride;
        const int64_t effective = (filter - 1) * dilation + 1;
        const int64_t total = std::max<int64_t>((out - 1) * stride + effective - in, 0);
        p.before = static_cast<int32_t>(total / 2);
        p.after = static_cast<int32_t>(total - total / 2);
    }
    return p;
}

// NHWC view of a 4-D tensor stored as NHWC or NCHW.
struct Layout4 {
    uint32_t n = 0, h = 0, w = 0, c = 0;
    bool nchw = false;
    size_t index(uint32_t b, uint32_t y, uint32_t x, uint32_t ch) const {
        return nchw ? ((size_t(b) * c + ch) * h + y) * w + x : ((size_t(b) * h + y) * w + x) * c + ch;
    }
    std::vector<uint32_t> dims() const {
        return nchw ? std::vector<uint32_t>{n, c, h, w} : std::vector<uint32_t>{n, h, w, c};
    }
};
inline Layout4 layoutOf(const std::vector<uint32_t>& d, bool nchw) {
    return nchw ? Layout4{d[0], d[2], d[3], d[1], true} : Layout4{d[0], d[1], d[2], d[3], false};
}

}  // namespace npu::ref::ops
