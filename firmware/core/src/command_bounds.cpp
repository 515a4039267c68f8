#include "command_bounds.h"

namespace npu::fw {

namespace {

using isa::Opcode;

// [addr, addr + span) within [0, limit), for a box of `rows` rows `rowStride` apart and `cols`
// elements `colStride` apart, `elementBytes` each; false on a zero size or overflow.
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
// A contiguous run of `count` bytes (or entries) at addr; count may be a product of fields.
bool run(uint64_t addr, uint64_t a, uint64_t b, uint64_t c, uint64_t limit) {
    uint64_t n = 0, end = 0;
    if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, c, &n) || n == 0 ||
        __builtin_add_overflow(addr, n, &end))
        return false;
    return end <= limit;
}

const char* gemm(const isa::Command& c, uint64_t sram, uint64_t acc) {
    namespace g = isa::gemm;
    const uint32_t m = c.w[g::kM], k = c.w[g::kK], n = c.w[g::kN];
    if (!inside({c.w[g::kAAddr], m, c.w[g::kARowStride], k}, sram)) return "GEMM A matrix";
    if (!inside({c.w[g::kBAddr], k, c.w[g::kBRowStride], n}, sram)) return "GEMM B matrix";
    if (!inside({c.w[g::kAccAddr], m, c.w[g::kAccRowStride], n}, acc)) return "GEMM accumulators";
    return nullptr;
}

const char* conv(const isa::Command& c, uint64_t sram, uint64_t acc, bool depthwise) {
    namespace v = isa::conv;
    const uint32_t ih = isa::lo16(c.w[v::kIfmHW]), iw = isa::hi16(c.w[v::kIfmHW]), ch = c.w[v::kIfmC];
    const uint32_t kh = isa::lo16(c.w[v::kKernelHW]), kw = isa::hi16(c.w[v::kKernelHW]);
    const uint32_t oh = isa::lo16(c.w[v::kOfmHW]), ow = isa::hi16(c.w[v::kOfmHW]), cout = c.w[v::kCout];
    if (!inside({c.w[v::kIfmAddr], ih, c.w[v::kIfmRowStride], uint64_t{iw} * ch}, sram))
        return "CONV input tile";
    uint64_t taps = 0;
    if (__builtin_mul_overflow(uint64_t{kh} * kw, ch, &taps) ||
        !run(c.w[v::kWAddr], taps, depthwise ? 1 : cout, 1, sram))
        return "CONV weights";
    if (!run(c.w[v::kAccAddr], uint64_t{oh} * ow, cout, 1, acc)) return "CONV accumulators";
    return nullptr;
}

const char* requant(const isa::Command& c, uint64_t sram, uint64_t acc) {
    namespace q = isa::requant;
    const uint32_t rows = c.w[q::kRows], cols = c.w[q::kCols];
    if (!inside({c.w[q::kAccAddr], rows, c.w[q::kAccRowStride], cols}, acc)) return "REQUANT accumulators";
    if (!inside({c.w[q::kOutAddr], rows, c.w[q::kOutRowStride], cols}, sram)) return "REQUANT output";
    if ((isa::flagsOf(c) & isa::vec::kFlagHasBias) != 0 && !run(c.w[q::kBiasAddr], cols, 4, 1, sram))
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

const char* vecOp(const isa::Command& c, uint64_t sram) {
    namespace o = isa::vecop;
    const auto f = static_cast<isa::VecFunction>(c.w[o::kFunction]);
    const bool binary =
        f == isa::VecFunction::kMul || f == isa::VecFunction::kMax || f == isa::VecFunction::kMin;
    if (const char* bad =
            elementwise(c, sram, o::kRows, o::kAAddr, o::kBAddr, o::kOutAddr, binary, "VEC_OP boxes"))
        return bad;
    if (f == isa::VecFunction::kLut && !run(c.w[o::kLutAddr], 256, 1, 1, sram)) return "VEC_OP table";
    return nullptr;
}

const char* pool(const isa::Command& c, uint64_t sram) {
    namespace p = isa::pool;
    const uint32_t ih = isa::lo16(c.w[p::kIfmHW]), iw = isa::hi16(c.w[p::kIfmHW]), ch = c.w[p::kIfmC];
    const uint32_t oh = isa::lo16(c.w[p::kOfmHW]), ow = isa::hi16(c.w[p::kOfmHW]);
    if (!inside({c.w[p::kIfmAddr], ih, c.w[p::kIfmRowStride], uint64_t{iw} * ch}, sram))
        return "POOL input tile";
    if (!run(c.w[p::kOutAddr], uint64_t{oh} * ow, ch, 1, sram)) return "POOL output";
    return nullptr;
}

const char* softmax(const isa::Command& c, uint64_t sram) {
    namespace s = isa::softmax;
    const uint32_t rows = c.w[s::kRows], cols = c.w[s::kCols];
    if (!inside({c.w[s::kInAddr], rows, c.w[s::kInRowStride], cols, c.w[s::kInColStride]}, sram))
        return "SOFTMAX input";
    if (!inside({c.w[s::kOutAddr], rows, c.w[s::kOutRowStride], cols, c.w[s::kOutColStride]}, sram))
        return "SOFTMAX output";
    return nullptr;
}

}  // namespace

const char* computeCommandOutOfBounds(const isa::Command& c, uint64_t scratchpadBytes,
                                      uint64_t accumulatorEntries) {
    switch (isa::opcodeOf(c)) {
        case Opcode::kGemm:
            return gemm(c, scratchpadBytes, accumulatorEntries);
        case Opcode::kConv:
        case Opcode::kDwConv:
            return conv(c, scratchpadBytes, accumulatorEntries, isa::opcodeOf(c) == Opcode::kDwConv);
        case Opcode::kRequant:
            return requant(c, scratchpadBytes, accumulatorEntries);
        case Opcode::kAdd:
            return elementwise(c, scratchpadBytes, isa::add::kRows, isa::add::kAAddr, isa::add::kBAddr,
                               isa::add::kOutAddr, true, "ADD boxes");
        case Opcode::kVecOp:
            return vecOp(c, scratchpadBytes);
        case Opcode::kPool:
            return pool(c, scratchpadBytes);
        case Opcode::kSoftmax:
            return softmax(c, scratchpadBytes);
        default:
            return nullptr;
    }
}

}  // namespace npu::fw
