// One table-driven load-time check per compute opcode (compute_command_check.h).
#include "compute_command_check.h"

#include <cmath>
#include <cstring>
#include <initializer_list>

namespace npu::fw {

namespace {

using isa::Opcode;

struct Memories {
    uint64_t sram = 0, acc = 0;  // scratchpad bytes, accumulator entries
};

// [addr, addr + span) within [0, limit), for a box of `rows` rows `rowStride` apart and `cols`
// elements `colStride` apart; false on a zero size or overflow.
struct Box {
    uint64_t addr = 0, rows = 1, rowStride = 0, cols = 0, colStride = 1;
};
bool inside(const Box& b, uint64_t limit) {
    if (b.rows == 0 || b.cols == 0) return false;
    uint64_t a = 0, c = 0, end = 0;
    if (__builtin_mul_overflow(b.rows - 1, b.rowStride, &a) ||
        __builtin_mul_overflow(b.cols - 1, b.colStride, &c) || __builtin_add_overflow(a, c, &end) ||
        __builtin_add_overflow(end, b.addr + 1, &end))
        return false;
    return end <= limit;
}
// A contiguous run of a * b * c bytes (or entries) at addr; false when empty or overflowing.
bool run(uint64_t addr, uint64_t a, uint64_t b, uint64_t c, uint64_t limit) {
    uint64_t n = 0, end = 0;
    if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, c, &n) || n == 0 ||
        __builtin_add_overflow(addr, n, &end))
        return false;
    return end <= limit;
}

const char* gemm(const isa::Command& c, const Memories& m) {
    namespace g = isa::gemm;
    const uint32_t rows = c.w[g::kM], k = c.w[g::kK], n = c.w[g::kN];
    if (!inside({c.w[g::kAAddr], rows, c.w[g::kARowStride], k}, m.sram)) return "GEMM A matrix";
    if (!inside({c.w[g::kBAddr], k, c.w[g::kBRowStride], n}, m.sram)) return "GEMM B matrix";
    if (!inside({c.w[g::kAccAddr], rows, c.w[g::kAccRowStride], n}, m.acc)) return "GEMM accumulators";
    return nullptr;
}

const char* conv(const isa::Command& c, const Memories& m) {
    namespace v = isa::conv;
    const bool depthwise = isa::opcodeOf(c) == Opcode::kDwConv;
    const uint32_t ih = isa::lo16(c.w[v::kIfmHW]), iw = isa::hi16(c.w[v::kIfmHW]), ch = c.w[v::kIfmC];
    const uint32_t kh = isa::lo16(c.w[v::kKernelHW]), kw = isa::hi16(c.w[v::kKernelHW]);
    const uint32_t oh = isa::lo16(c.w[v::kOfmHW]), ow = isa::hi16(c.w[v::kOfmHW]), cout = c.w[v::kCout];
    if (!inside({c.w[v::kIfmAddr], ih, c.w[v::kIfmRowStride], uint64_t{iw} * ch}, m.sram))
        return "CONV input tile";
    uint64_t taps = 0;
    if (__builtin_mul_overflow(uint64_t{kh} * kw, ch, &taps) ||
        !run(c.w[v::kWAddr], taps, depthwise ? 1 : cout, 1, m.sram))
        return "CONV weights";
    if (!run(c.w[v::kAccAddr], uint64_t{oh} * ow, cout, 1, m.acc)) return "CONV accumulators";
    return nullptr;
}

const char* requant(const isa::Command& c, const Memories& m) {
    namespace q = isa::requant;
    const uint32_t rows = c.w[q::kRows], cols = c.w[q::kCols];
    if (!inside({c.w[q::kAccAddr], rows, c.w[q::kAccRowStride], cols}, m.acc)) return "REQUANT accumulators";
    if (!inside({c.w[q::kOutAddr], rows, c.w[q::kOutRowStride], cols}, m.sram)) return "REQUANT output";
    if ((isa::flagsOf(c) & isa::vec::kFlagHasBias) != 0 && !run(c.w[q::kBiasAddr], cols, 4, 1, m.sram))
        return "REQUANT bias";
    return nullptr;
}

// ADD and VEC_OP share their box words' meaning (at different indexes).
const char* elementwise(const isa::Command& c, uint64_t sram, uint32_t rowsWord, uint32_t aWord,
                        uint32_t bWord, uint32_t outWord, bool hasB, const char* name) {
    const uint32_t rows = c.w[rowsWord], cols = c.w[rowsWord + 1];
    if (!inside({c.w[aWord], rows, c.w[aWord + 1], cols, c.w[aWord + 2]}, sram)) return name;
    if (hasB && !inside({c.w[bWord], rows, c.w[bWord + 1], cols, c.w[bWord + 2]}, sram)) return name;
    if (!inside({c.w[outWord], rows, c.w[outWord + 1], cols}, sram)) return name;
    return nullptr;
}

const char* add(const isa::Command& c, const Memories& m) {
    namespace a = isa::add;
    return elementwise(c, m.sram, a::kRows, a::kAAddr, a::kBAddr, a::kOutAddr, true, "ADD boxes");
}

const char* vecOp(const isa::Command& c, const Memories& m) {
    namespace o = isa::vecop;
    if (c.w[o::kFunction] > static_cast<uint32_t>(isa::VecFunction::kPrelu)) return "VEC_OP function";
    const auto f = static_cast<isa::VecFunction>(c.w[o::kFunction]);
    const bool binary = f == isa::VecFunction::kMul || f == isa::VecFunction::kMax ||
                        f == isa::VecFunction::kMin || f == isa::VecFunction::kPrelu;
    if (const char* bad =
            elementwise(c, m.sram, o::kRows, o::kAAddr, o::kBAddr, o::kOutAddr, binary, "VEC_OP boxes"))
        return bad;
    if (f == isa::VecFunction::kLut && !run(c.w[o::kLutAddr], 256, 1, 1, m.sram)) return "VEC_OP table";
    return nullptr;
}

const char* pool(const isa::Command& c, const Memories& m) {
    namespace p = isa::pool;
    const uint32_t ih = isa::lo16(c.w[p::kIfmHW]), iw = isa::hi16(c.w[p::kIfmHW]), ch = c.w[p::kIfmC];
    const uint32_t oh = isa::lo16(c.w[p::kOfmHW]), ow = isa::hi16(c.w[p::kOfmHW]);
    if (!inside({c.w[p::kIfmAddr], ih, c.w[p::kIfmRowStride], uint64_t{iw} * ch}, m.sram))
        return "POOL input tile";
    if (!run(c.w[p::kOutAddr], uint64_t{oh} * ow, ch, 1, m.sram)) return "POOL output";
    return nullptr;
}

const char* softmax(const isa::Command& c, const Memories& m) {
    namespace s = isa::softmax;
    const uint32_t rows = c.w[s::kRows], cols = c.w[s::kCols];
    if (!inside({c.w[s::kInAddr], rows, c.w[s::kInRowStride], cols, c.w[s::kInColStride]}, m.sram))
        return "SOFTMAX input";
    if (!inside({c.w[s::kOutAddr], rows, c.w[s::kOutRowStride], cols, c.w[s::kOutColStride]}, m.sram))
        return "SOFTMAX output";
    return nullptr;
}

const char* resize(const isa::Command& c, const Memories& m) {
    namespace r = isa::resize;
    const uint32_t flags = isa::flagsOf(c), corners = r::kFlagAlignCorners | r::kFlagHalfPixel;
    if ((flags & ~(r::kFlagSigned | corners)) != 0 || (flags & corners) == corners ||
        c.w[r::kMode] > r::kModeBilinear)
        return "RESIZE mode or flags";
    const uint32_t ch = c.w[r::kIfmC], inW = isa::hi16(c.w[r::kFullIn]), outW = isa::hi16(c.w[r::kFullOut]);
    if (isa::lo16(c.w[r::kFullIn]) == 0 || isa::lo16(c.w[r::kFullOut]) == 0) return "RESIZE image size";
    if (!inside({c.w[r::kIfmAddr], c.w[r::kIfmRows], c.w[r::kIfmRowStride], uint64_t{inW} * ch}, m.sram))
        return "RESIZE input tile";
    if (!run(c.w[r::kOutAddr], c.w[r::kOfmRows], outW, ch, m.sram)) return "RESIZE output";
    return nullptr;
}

const char* mean(const isa::Command& c, const Memories& m) {
    namespace n = isa::mean;
    const uint64_t outer = c.w[n::kOuter], inner = c.w[n::kInner], n1 = c.w[n::kCount1], n2 = c.w[n::kCount2];
    if ((isa::flagsOf(c) & ~n::kFlagSigned) != 0) return "MEAN flags";
    if (outer == 0 || inner == 0 || n1 == 0 || n2 == 0 || n1 * n2 > n::kMaxTerms) return "MEAN counts";
    for (uint32_t word : {n::kScaleIn, n::kScaleOut}) {
        float s = 0;
        std::memcpy(&s, &c.w[word], 4);
        if (!(s > 0) || !std::isfinite(s)) return "MEAN scales";
    }
    const int32_t lo = (isa::flagsOf(c) & n::kFlagSigned) != 0 ? -128 : 0;
    for (uint32_t zp : {c.w[n::kZpIn], c.w[n::kZpOut]})
        if (static_cast<int32_t>(zp) < lo || static_cast<int32_t>(zp) > lo + 255) return "MEAN zero points";
    uint64_t span = 0, term = 0;
    const std::pair<uint64_t, uint64_t> axes[] = {{outer, c.w[n::kOuterStride]},
                                                  {inner, c.w[n::kInnerStride]},
                                                  {n1, c.w[n::kStride1]},
                                                  {n2, c.w[n::kStride2]}};
    for (const auto& [count, stride] : axes)
        if (__builtin_mul_overflow(count - 1, stride, &term) || __builtin_add_overflow(span, term, &span))
            return "MEAN input";
    if (!run(c.w[n::kIfmAddr], span + 1, 1, 1, m.sram)) return "MEAN input";
    if (!run(c.w[n::kOutAddr], outer, inner, 1, m.sram)) return "MEAN output";
    return nullptr;
}

// CONVERT (ISA 1.3): float32 <-> 8-bit; the input and output runs inside the scratchpad and
// apart, a positive finite scale, the zero point in the type's range.
const char* convert(const isa::Command& c, const Memories& m) {
    namespace k = isa::convert;
    const uint32_t flags = isa::flagsOf(c);
    if ((flags & ~(k::kFlagSigned | k::kFlagToFloat)) != 0) return "CONVERT flags";
    const uint64_t count = c.w[k::kCount];
    if (count == 0 || count > (uint64_t{1} << 31)) return "CONVERT count";
    float s = 0;
    std::memcpy(&s, &c.w[k::kScale], 4);
    if (!(s > 0) || !std::isfinite(s)) return "CONVERT scale";
    const int32_t lo = (flags & k::kFlagSigned) != 0 ? -128 : 0, zp = static_cast<int32_t>(c.w[k::kZp]);
    if (zp < lo || zp > lo + 255) return "CONVERT zero point";
    const bool toFloat = (flags & k::kFlagToFloat) != 0;
    const uint64_t in = c.w[k::kInAddr], out = c.w[k::kOutAddr];
    const uint64_t inBytes = count * (toFloat ? 1 : 4), outBytes = count * (toFloat ? 4 : 1);
    if (!run(in, inBytes, 1, 1, m.sram)) return "CONVERT input";
    if (!run(out, outBytes, 1, 1, m.sram)) return "CONVERT output";
    if (in < out + outBytes && out < in + inBytes) return "CONVERT input and output overlap";
    return nullptr;
}

// VEC_PARAMS only loads registers; the unit that uses them checks their ranges (shifts, clamps).
const char* vecParams(const isa::Command&, const Memories&) {
    return nullptr;
}

struct Entry {
    Opcode opcode;
    const char* (*check)(const isa::Command&, const Memories&);
};
constexpr Entry kTable[] = {
    {Opcode::kGemm, gemm},           {Opcode::kConv, conv},       {Opcode::kDwConv, conv},
    {Opcode::kVecParams, vecParams}, {Opcode::kRequant, requant}, {Opcode::kAdd, add},
    {Opcode::kVecOp, vecOp},         {Opcode::kPool, pool},       {Opcode::kSoftmax, softmax},
    {Opcode::kResize, resize},       {Opcode::kMean, mean},       {Opcode::kConvert, convert},
};

const Entry* entryOf(Opcode op) {
    for (const Entry& e : kTable)
        if (e.opcode == op) return &e;
    return nullptr;
}

}  // namespace

CommandClass commandClass(Opcode op) {
    if (entryOf(op) != nullptr) return CommandClass::kCompute;
    switch (op) {
        case Opcode::kDmaLoad:
        case Opcode::kDmaStore:
        case Opcode::kPush:
        case Opcode::kPop:
        case Opcode::kFence:
        case Opcode::kNop:
        case Opcode::kIrq:
        case Opcode::kStop:
        case Opcode::kInvalid:
            return CommandClass::kOther;
        default:
            return CommandClass::kUnknown;
    }
}

const char* computeCommandProblem(const isa::Command& c, uint64_t scratchpadBytes,
                                  uint64_t accumulatorEntries) {
    const Entry* e = entryOf(isa::opcodeOf(c));
    return e == nullptr ? "opcode without a load-time check"
                        : e->check(c, {scratchpadBytes, accumulatorEntries});
}

}  // namespace npu::fw
