// Load-time checks of the ISA 1.2 vector commands (RESIZE, MEAN, VEC_OP's function code): the
// fields a blob can get wrong without a DMA noticing (flags, modes, counts, scales, zero points)
// and every scratchpad extent, against the NPU's scratchpad size. The unit checks them again.
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "blob_validator.h"

namespace npu::fw {

namespace {

bool within(uint64_t addr, uint64_t extent, uint64_t size) {
    return addr <= size && extent <= size - addr;
}

bool resizeOk(const isa::Command& c, uint64_t sram) {
    namespace r = isa::resize;
    if ((isa::flagsOf(c) & ~(r::kFlagSigned | r::kFlagAlignCorners | r::kFlagHalfPixel)) != 0 ||
        (isa::flagsOf(c) & (r::kFlagAlignCorners | r::kFlagHalfPixel)) ==
            (r::kFlagAlignCorners | r::kFlagHalfPixel) ||
        c.w[r::kMode] > r::kModeBilinear)
        return false;
    const uint64_t rows = c.w[r::kIfmRows], ch = c.w[r::kIfmC], inW = isa::hi16(c.w[r::kFullIn]),
                   outW = isa::hi16(c.w[r::kFullOut]), ofmRows = c.w[r::kOfmRows];
    if (rows == 0 || ch == 0 || inW == 0 || outW == 0 || ofmRows == 0 || isa::lo16(c.w[r::kFullIn]) == 0 ||
        isa::lo16(c.w[r::kFullOut]) == 0)
        return false;
    const uint64_t ifmSpan = (rows - 1) * c.w[r::kIfmRowStride] + inW * ch;
    return within(c.w[r::kIfmAddr], ifmSpan, sram) && within(c.w[r::kOutAddr], ofmRows * outW * ch, sram);
}

bool meanOk(const isa::Command& c, uint64_t sram) {
    namespace m = isa::mean;
    const uint64_t outer = c.w[m::kOuter], inner = c.w[m::kInner], n1 = c.w[m::kCount1], n2 = c.w[m::kCount2];
    if ((isa::flagsOf(c) & ~m::kFlagSigned) != 0 || outer == 0 || inner == 0 || n1 == 0 || n2 == 0 ||
        n1 * n2 > m::kMaxTerms)
        return false;
    float scales[2] = {};
    std::memcpy(&scales[0], &c.w[m::kScaleIn], 4);
    std::memcpy(&scales[1], &c.w[m::kScaleOut], 4);
    const int32_t lo = (isa::flagsOf(c) & m::kFlagSigned) != 0 ? -128 : 0;
    for (float s : scales)
        if (!(s > 0) || !std::isfinite(s)) return false;
    for (uint32_t zp : {c.w[m::kZpIn], c.w[m::kZpOut]})
        if (static_cast<int32_t>(zp) < lo || static_cast<int32_t>(zp) > lo + 255) return false;
    const uint64_t span = (outer - 1) * c.w[m::kOuterStride] + (inner - 1) * c.w[m::kInnerStride] +
                          (n1 - 1) * c.w[m::kStride1] + (n2 - 1) * c.w[m::kStride2] + 1;
    return within(c.w[m::kIfmAddr], span, sram) && within(c.w[m::kOutAddr], outer * inner, sram);
}

}  // namespace

bool vectorCommandOk(const isa::Command& c, uint64_t scratchpadBytes) {
    switch (isa::opcodeOf(c)) {
        case isa::Opcode::kResize:
            return resizeOk(c, scratchpadBytes);
        case isa::Opcode::kMean:
            return meanOk(c, scratchpadBytes);
        case isa::Opcode::kVecOp:
            return c.w[isa::vecop::kFunction] <= static_cast<uint32_t>(isa::VecFunction::kPrelu);
        default:
            return true;
    }
}

}  // namespace npu::fw
