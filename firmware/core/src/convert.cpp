// QUANTIZE (float32 -> 8-bit) and DEQUANTIZE (8-bit -> float32) at a partition edge: CONVERT
// tiles (ISA 1.3), the vector unit's float path with the reference's rounding. The float side is
// a model input (QUANTIZE) or output (DEQUANTIZE): no NPU operation reads or writes float32.
#include <algorithm>
#include <cstring>

#include "blob_writer.h"
#include "data_ops.h"
#include "op_check.h"

namespace npu::fw {

namespace {

constexpr uint32_t kFloatBytes = 4;

// The float side: a fully specified TENSOR_FLOAT32 of rank 1..4 that is an input (QUANTIZE) or
// an output (DEQUANTIZE) of the NPU model; a temporary is accepted when claiming, where it
// becomes the partition's input or output.
FwStatus floatTensor(const Checker& c, const OperandDesc& d, uint32_t operand, const char* role,
                     bool isOutput) {
    if (d.type == hal::kTensorFloat16)
        return c.fail("%s (operand %" PRIu32
                      ") is TENSOR_FLOAT16; only TENSOR_FLOAT32 (the vector unit has no half-precision "
                      "conversion)",
                      role, operand);
    if (d.type != hal::kTensorFloat32)
        return c.fail("%s (operand %" PRIu32 ") has type %" PRIu32 "; only TENSOR_FLOAT32", role, operand,
                      d.type);
    const uint32_t edge = isOutput ? hal::kSubgraphOutput : hal::kSubgraphInput;
    if (d.lifetime != edge && d.lifetime != hal::kTemporary)
        return c.fail("%s (operand %" PRIu32 ") has lifetime %" PRIu32 "; the float side must be a model %s",
                      role, operand, d.lifetime, isOutput ? "output" : "input");
    if (d.rank < 1 || d.rank > 4)
        return c.fail("%s (operand %" PRIu32 ") has rank %" PRIu32 ", supported 1..4", role, operand, d.rank);
    for (uint32_t k = 0; k < d.rank; ++k)
        if (d.dims[k] == 0)
            return c.fail("%s (operand %" PRIu32 ") dimension %" PRIu32
                          " is unknown; fully specified shapes only",
                          role, operand, k);
    if (tensorBytes(d) > UINT32_MAX)
        return c.fail("%s (operand %" PRIu32 ") is larger than 4 GiB", role, operand);
    return FwStatus::okStatus();
}

// DEQUANTIZE's TENSOR_QUANT8_SYMM input: int8 with zero point 0, a model input (or, when
// claiming, a temporary that becomes one: no NPU operation writes this type).
FwStatus symmInput(const Checker& c, const OperandDesc& d, uint32_t operand) {
    if (d.lifetime != hal::kSubgraphInput && d.lifetime != hal::kTemporary)
        return c.fail("input (operand %" PRIu32 ") is TENSOR_QUANT8_SYMM with lifetime %" PRIu32
                      "; only a model input",
                      operand, d.lifetime);
    if (d.rank < 1 || d.rank > 4)
        return c.fail("input (operand %" PRIu32 ") has rank %" PRIu32 ", supported 1..4", operand, d.rank);
    for (uint32_t k = 0; k < d.rank; ++k)
        if (d.dims[k] == 0)
            return c.fail("input (operand %" PRIu32 ") dimension %" PRIu32
                          " is unknown; fully specified shapes only",
                          operand, k);
    if (!(d.scale > 0.0f) || !std::isfinite(d.scale) || d.zeroPoint != 0 || d.channelScaleCount != 0)
        return c.fail("input (operand %" PRIu32
                      ") TENSOR_QUANT8_SYMM needs a positive scale and zero point 0",
                      operand);
    return FwStatus::okStatus();
}

}  // namespace

FwStatus planConvert(const Checker& c, OpPlan* plan) {
    ConvertPlan& p = plan->convert;
    p.toFloat = c.op.type == hal::kOpDequantize;
    if (c.op.inputCount != 1) return c.fail("has %" PRIu32 " inputs, expected 1", c.op.inputCount);
    if (c.op.outputCount != 1) return c.fail("has %" PRIu32 " outputs, expected 1", c.op.outputCount);
    if (!c.inputExists(0)) return c.fail("input has no value");
    const OperandDesc& input = c.in(0);
    const OperandDesc& output = c.out(0);
    const bool symm = p.toFloat && input.type == hal::kTensorQuant8Symm;
    FwStatus st = symm        ? symmInput(c, input, c.op.inputs[0])
                  : p.toFloat ? c.dataTensor(0, "input", 1, 4)
                              : floatTensor(c, input, c.op.inputs[0], "input", false);
    if (st.ok()) st = p.toFloat ? floatTensor(c, output, c.op.outputs[0], "output", true) : c.outputTensor(4);
    if (!st.ok()) return st;
    bool same = input.rank == output.rank;
    for (uint32_t k = 0; same && k < input.rank; ++k) same = input.dims[k] == output.dims[k];
    if (!same) return c.fail("output shape differs from the input's");
    const OperandDesc& quant = p.toFloat ? input : output;
    plan->signedIn = quant.type == hal::kTensorQuant8AsymmSigned || symm;
    p.input = c.op.inputs[0];
    p.output = c.op.outputs[0];
    p.count = static_cast<uint32_t>(tensorElements(input));
    p.scale = quant.scale;
    p.zp = quant.zeroPoint;
    // Two buffers of one tile's float and byte runs (64-byte aligned) per scratchpad half.
    const uint32_t half = c.target.scratchpadBytes / 2 / 64 * 64;
    if (half < 128 + 5 * 64)
        return c.fail("the %" PRIu32 "-byte scratchpad is too small", c.target.scratchpadBytes);
    p.tile = std::min(p.count, (half - 128) / (kFloatBytes + 1) / 64 * 64);
    return FwStatus::okStatus();
}

void emitConvert(BlobWriter& w, const CompileTarget& target, const OpPlan& plan, const TensorRef& in,
                 const TensorRef& out) {
    const ConvertPlan& p = plan.convert;
    const uint32_t half = target.scratchpadBytes / 2 / 64 * 64;
    const uint32_t inSize = p.toFloat ? 1 : kFloatBytes, outSize = p.toFloat ? kFloatBytes : 1;
    const uint32_t inCap = static_cast<uint32_t>(align(uint64_t{p.tile} * inSize, 64));
    const uint32_t inBuf[2] = {0, half}, outBuf[2] = {inCap, half + inCap};
    isa::ConvertDesc d;
    std::memcpy(&d.scaleBits, &p.scale, 4);
    d.zp = p.zp;
    const uint32_t flags =
        (plan.signedIn ? isa::convert::kFlagSigned : 0u) | (p.toFloat ? isa::convert::kFlagToFloat : 0u);
    const uint32_t tiles = (p.count + p.tile - 1) / p.tile;
    auto countOf = [&](uint32_t t) { return std::min(p.tile, p.count - t * p.tile); };
    emitPipeline(
        w, tiles,
        [&](uint32_t t) {
            isa::DmaBox b;
            b.dramOffset = uint64_t{t} * p.tile * inSize;
            b.sramAddr = inBuf[t % 2];
            b.innerBytes = countOf(t) * inSize;
            w.dma(Opcode::kDmaLoad, in, b);
        },
        [&](uint32_t t) {
            isa::ConvertDesc x = d;
            x.inAddr = inBuf[t % 2];
            x.outAddr = outBuf[t % 2];
            x.count = countOf(t);
            w.emit(isa::makeConvert(x, flags));
        },
        [&](uint32_t t) {
            isa::DmaBox b;
            b.dramOffset = uint64_t{t} * p.tile * outSize;
            b.sramAddr = outBuf[t % 2];
            b.innerBytes = countOf(t) * outSize;
            w.dma(Opcode::kDmaStore, out, b);
        });
}

}  // namespace npu::fw
