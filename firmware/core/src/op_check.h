#pragma once
// The operation checker every planner uses (op_plan.cpp and the planners of the data-movement,
// resize and reduction operations): each refusal names the operation, the operand role, the
// value and the limit. Internal to firmware/core.

#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <initializer_list>

#include "op_plan.h"

namespace npu::fw {

// Collects the operation's identity so every message names it.
struct Checker {
    const CompileTarget& target;
    const ModelDesc& model;
    uint32_t opIndex;
    const OperationDesc& op;

    FwStatus fail(const char* fmt, ...) const __attribute__((format(printf, 2, 3))) {
        char rule[128];
        va_list args;
        va_start(args, fmt);
        std::vsnprintf(rule, sizeof(rule), fmt, args);
        va_end(args);
        return FwStatus::make(Code::kInvalidArgument, "operation %" PRIu32 " (%s): %s", opIndex,
                              operationName(op.type), rule);
    }
    bool inputExists(uint32_t i) const {
        return i < op.inputCount && op.inputs[i] < model.operandCount &&
               model.operands[op.inputs[i]].lifetime != hal::kNoValue;
    }
    const OperandDesc& in(uint32_t i) const { return model.operands[op.inputs[i]]; }
    const OperandDesc& out(uint32_t i) const { return model.operands[op.outputs[i]]; }
    // Output 0 is the image the operation produces: [batch, h, w, channels], or with `nchw`
    // [batch, channels, h, w].
    FwStatus outputImage(bool nchw, uint32_t batch, uint32_t h, uint32_t w, uint32_t channels) const {
        const uint32_t expect[4] = {batch, nchw ? channels : h, nchw ? h : w, nchw ? w : channels};
        for (uint32_t k = 0; k < 4; ++k) {
            if (out(0).dims[k] != expect[k])
                return fail("output dimension %" PRIu32 " is %" PRIu32 ", the operation produces %" PRIu32, k,
                            out(0).dims[k], expect[k]);
        }
        return FwStatus::okStatus();
    }

    FwStatus operandIndexes() const {
        for (uint32_t i = 0; i < op.inputCount; ++i) {
            if (op.inputs[i] >= model.operandCount)
                return fail("input %" PRIu32 " names operand %" PRIu32 " of %" PRIu32 "", i, op.inputs[i],
                            model.operandCount);
        }
        for (uint32_t i = 0; i < op.outputCount; ++i) {
            if (op.outputs[i] >= model.operandCount)
                return fail("output %" PRIu32 " names operand %" PRIu32 " of %" PRIu32 "", i, op.outputs[i],
                            model.operandCount);
        }
        return FwStatus::okStatus();
    }

    FwStatus scalar(uint32_t i, uint32_t type, int32_t* value) const {
        if (!inputExists(i)) return fail("input %" PRIu32 " (scalar) has no value", i);
        const OperandDesc& d = in(i);
        if (d.type != type)
            return fail("input %" PRIu32 " (operand %" PRIu32 ") has type %" PRIu32 ", expected %" PRIu32 "",
                        i, op.inputs[i], d.type, type);
        if (d.lifetime != hal::kConstantCopy && d.lifetime != hal::kConstantReference) {
            return fail("input %" PRIu32 " (operand %" PRIu32 ") must be a constant", i, op.inputs[i]);
        }
        const uint32_t bytes = type == hal::kBool ? 1 : 4;
        const uint8_t* p = constantData(target, d);
        if (p == nullptr || d.dataLength != bytes)
            return fail("input %" PRIu32 " (operand %" PRIu32 "): value not in the host window or %" PRIu32
                        " bytes long",
                        i, op.inputs[i], d.dataLength);
        *value = type == hal::kBool ? (p[0] != 0 ? 1 : 0)
                                    : static_cast<int32_t>(p[0] | (uint32_t{p[1]} << 8) |
                                                           (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24));
        return FwStatus::okStatus();
    }

    // A quantized 8-bit tensor: TENSOR_QUANT8_ASYMM, TENSOR_QUANT8_ASYMM_SIGNED, or (where
    // `perChannelDim` is not kNoPerChannel) TENSOR_QUANT8_SYMM_PER_CHANNEL along that dimension.
    static constexpr uint32_t kNoPerChannel = UINT32_MAX;
    FwStatus quantTensor(const OperandDesc& d, const char* role, uint32_t operand, uint32_t minRank,
                         uint32_t maxRank, uint32_t perChannelDim = kNoPerChannel) const {
        const bool perChannel = d.type == hal::kTensorQuant8SymmPerChannel && perChannelDim != kNoPerChannel;
        if (!hal::isQuant8Data(d.type) && !perChannel) {
            return fail("%s (operand %" PRIu32 ") has type %" PRIu32
                        "; only TENSOR_QUANT8_ASYMM or TENSOR_QUANT8_ASYMM_SIGNED%s",
                        role, operand, d.type,
                        perChannelDim != kNoPerChannel ? " or TENSOR_QUANT8_SYMM_PER_CHANNEL" : "");
        }
        if (d.rank < minRank || d.rank > maxRank)
            return fail("%s (operand %" PRIu32 ") has rank %" PRIu32 ", supported %" PRIu32 "..%" PRIu32 "",
                        role, operand, d.rank, minRank, maxRank);
        for (uint32_t k = 0; k < d.rank; ++k) {
            if (d.dims[k] == 0)
                return fail("%s (operand %" PRIu32 ") dimension %" PRIu32
                            " is unknown; fully specified shapes only",
                            role, operand, k);
        }
        if (tensorElements(d) > UINT32_MAX)
            return fail("%s (operand %" PRIu32 ") has more than 2^32 elements", role, operand);
        if (perChannel) {
            if (d.zeroPoint != 0)
                return fail("%s (operand %" PRIu32 ") per-channel zero point %" PRId32 ", must be 0", role,
                            operand, d.zeroPoint);
            if (d.channelDim != perChannelDim)
                return fail("%s (operand %" PRIu32 ") quantized along dimension %" PRIu32
                            "; the NPU takes dimension %" PRIu32 "",
                            role, operand, d.channelDim, perChannelDim);
            if (d.channelScaleCount != d.dims[perChannelDim] || d.channelScales == nullptr)
                return fail("%s (operand %" PRIu32 ") has %" PRIu32 " channel scales for %" PRIu32
                            " channels",
                            role, operand, d.channelScaleCount, d.dims[perChannelDim]);
            for (uint32_t ch = 0; ch < d.channelScaleCount; ++ch) {
                if (!(d.channelScales[ch] > 0.0f) || !std::isfinite(d.channelScales[ch]))
                    return fail("%s (operand %" PRIu32 ") channel %" PRIu32 " scale must be positive", role,
                                operand, ch);
            }
            return FwStatus::okStatus();
        }
        if (!(d.scale > 0.0f) || !std::isfinite(d.scale))
            return fail("%s (operand %" PRIu32 ") scale must be positive", role, operand);
        const int32_t zpMin = d.type == hal::kTensorQuant8AsymmSigned ? -128 : 0, zpMax = zpMin + 255;
        if (d.zeroPoint < zpMin || d.zeroPoint > zpMax)
            return fail("%s (operand %" PRIu32 ") zero point %" PRId32 " outside [%" PRId32 ", %" PRId32 "]",
                        role, operand, d.zeroPoint, zpMin, zpMax);
        if (d.channelScaleCount != 0)
            return fail("%s (operand %" PRIu32 "): per-channel quantization is not supported here", role,
                        operand);
        return FwStatus::okStatus();
    }

    FwStatus dataTensor(uint32_t i, const char* role, uint32_t minRank, uint32_t maxRank) const {
        if (!inputExists(i)) return fail("%s (input %" PRIu32 ") has no value", role, i);
        const OperandDesc& d = in(i);
        if (d.lifetime == hal::kConstantCopy || d.lifetime == hal::kConstantReference) {
            const uint8_t* p = constantData(target, d);
            if (p == nullptr || d.dataLength != tensorElements(d))
                return fail("%s (operand %" PRIu32
                            "): constant value not in the host window or of the wrong length",
                            role, op.inputs[i]);
        } else if (d.lifetime != hal::kTemporary && d.lifetime != hal::kSubgraphInput &&
                   d.lifetime != hal::kSubgraphOutput) {
            return fail("%s (operand %" PRIu32 ") has lifetime %" PRIu32 "", role, op.inputs[i], d.lifetime);
        }
        return quantTensor(d, role, op.inputs[i], minRank, maxRank);
    }

    // type: kTensorInt32, or kTensorQuant8Asymm for any 8-bit quantized type (per-channel along
    // `perChannelDim` when that is given).
    FwStatus constantTensor(uint32_t i, const char* role, uint32_t type, uint32_t rank,
                            uint32_t perChannelDim = kNoPerChannel) const {
        if (!inputExists(i)) return fail("%s (input %" PRIu32 ") has no value", role, i);
        const OperandDesc& d = in(i);
        if (d.lifetime != hal::kConstantCopy && d.lifetime != hal::kConstantReference)
            return fail("%s (operand %" PRIu32 ") must be constant", role, op.inputs[i]);
        if (type == hal::kTensorQuant8Asymm) {
            FwStatus st = quantTensor(d, role, op.inputs[i], rank, rank, perChannelDim);
            if (!st.ok()) return st;
        } else {
            if (d.type != hal::kTensorInt32 || d.rank != rank)
                return fail("%s (operand %" PRIu32 ") must be a rank-%" PRIu32 " TENSOR_INT32", role,
                            op.inputs[i], rank);
            for (uint32_t k = 0; k < rank; ++k)
                if (d.dims[k] == 0)
                    return fail("%s (operand %" PRIu32 ") has an unknown dimension", role, op.inputs[i]);
        }
        const uint64_t bytes = tensorElements(d) * (type == hal::kTensorInt32 ? 4 : 1);
        if (constantData(target, d) == nullptr || d.dataLength != bytes)
            return fail("%s (operand %" PRIu32 "): value not in the host window or %" PRIu32
                        " bytes instead of %llu",
                        role, op.inputs[i], d.dataLength, static_cast<unsigned long long>(bytes));
        return FwStatus::okStatus();
    }

    FwStatus outputTensor(uint32_t maxRank) const {
        if (op.outputCount != 1) return fail("has %" PRIu32 " outputs, expected 1", op.outputCount);
        const OperandDesc& d = out(0);
        if (d.lifetime != hal::kTemporary && d.lifetime != hal::kSubgraphOutput)
            return fail("output (operand %" PRIu32 ") has lifetime %" PRIu32 "", op.outputs[0], d.lifetime);
        return quantTensor(d, "output", op.outputs[0], 1, maxRank);
    }

    FwStatus activation(uint32_t i, const OperandDesc& output, isa::VecParams* vec) const {
        int32_t act = 0;
        FwStatus st = scalar(i, hal::kInt32, &act);
        if (!st.ok()) return st;
        if (!activationRange8(act, output.scale, output.zeroPoint,
                              output.type == hal::kTensorQuant8AsymmSigned, &vec->clampMin, &vec->clampMax)) {
            return fail("fused activation %" PRId32 "; supported NONE, RELU, RELU1, RELU6", act);
        }
        return FwStatus::okStatus();
    }
};

// Every data tensor of one operation shares its 8-bit type (NNAPI: input, output, and for
// per-tensor weights the filter too); records the signedness the commands need.
FwStatus sameDataType(const Checker& c, const char* what, std::initializer_list<const OperandDesc*> tensors,
                      OpPlan* plan);

// Tiles of output rows x channels (pooling, resizing): the widest channel tile (halved above 64
// channels, then one less) for which one output row fits(rows, channels), and the most output
// rows that fit beside it; false if not even one row of one channel fits.
template <typename Fits>
bool rowChannelTile(uint32_t channels, uint32_t rows, Fits fits, uint32_t* rowTile, uint32_t* channelTile) {
    for (uint32_t ct = channels; ct > 0; ct = ct > 64 ? (ct + 1) / 2 : ct - 1) {
        if (!fits(1, ct)) continue;
        uint32_t m = 1;
        while (m < rows && fits(m + 1, ct)) ++m;
        *rowTile = m;
        *channelTile = ct;
        return true;
    }
    return false;
}

// Input and output quantized alike (scale and zero point): `what` (pooling, a copy, ...) does
// not requantize, as the reference requires.
FwStatus sameQuantization(const Checker& c, const OperandDesc& input, const OperandDesc& output,
                          const char* what);

// Little-endian int32 element i of a constant's bytes.
int32_t readI32(const uint8_t* p, uint32_t i);

}  // namespace npu::fw
