#pragma once
// How a GEMM maps onto the R x C systolic array under each dataflow, and what one fold costs.
// The same formulas drive the MAC array's command cost and the layer simulator; the isolated-fold
// cost is the one SCALE-Sim v2 charges (docs/simulator.md derives it).
//
// GEMM naming: M = output rows (output pixels of a conv), N = output columns (filters),
// K = reduction (R*S*C of a conv).
//   dataflow  Sr (mapped on rows)  Sc (mapped on cols)  T (streamed in time)
//   os        M                    N                    K
//   ws        K                    N                    M
//   is        K                    M                    N

#include <cstdint>

#include "hwsim/isa/registers.h"

namespace npu::sim {

struct ArrayMapping {
    uint64_t sr = 0, sc = 0, t = 0;
    uint64_t rowFolds = 0, colFolds = 0;
    constexpr uint64_t folds() const { return rowFolds * colFolds; }
};

constexpr uint64_t ceilDiv(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

constexpr ArrayMapping mapGemm(isa::Dataflow d, uint64_t rows, uint64_t cols, uint64_t m, uint64_t n,
                               uint64_t k) {
    ArrayMapping a;
    switch (d) {
        case isa::Dataflow::kOutputStationary:
            a.sr = m;
            a.sc = n;
            a.t = k;
            break;
        case isa::Dataflow::kWeightStationary:
            a.sr = k;
            a.sc = n;
            a.t = m;
            break;
        case isa::Dataflow::kInputStationary:
            a.sr = k;
            a.sc = m;
            a.t = n;
            break;
    }
    a.rowFolds = ceilDiv(a.sr, rows);
    a.colFolds = ceilDiv(a.sc, cols);
    return a;
}

// One fold run on its own, including fill and drain. Output-stationary: T operand wavefronts,
// then R + C - 2 cycles of skew before the last PE has its result and it has drained.
// Weight- and input-stationary additionally spend R cycles shifting the stationary operand in:
// R + T + C - 1 demand rows, skewed over the R array rows (+ R - 1).
constexpr uint64_t isolatedFoldCycles(isa::Dataflow d, uint64_t rows, uint64_t cols, uint64_t t) {
    return d == isa::Dataflow::kOutputStationary ? t + rows + cols - 2 : 2 * rows + cols + t - 2;
}

// A fold whose fill and drain overlap its neighbours' (double-buffered PE registers): the array
// accepts a new wavefront every cycle, so a fold costs its stream length, but never less than the
// R cycles it takes to swap the stationary operand or drain the outputs.
constexpr uint64_t overlappedFoldCycles(uint64_t rows, uint64_t t) {
    return t > rows ? t : rows;
}

// SCALE-Sim v2's reported total cycles for a GEMM with no memory stalls: every fold runs in
// isolation and the count is the cycle index of the last output write (hence the - 1).
constexpr uint64_t scalesimCycles(isa::Dataflow d, uint64_t rows, uint64_t cols, uint64_t m, uint64_t n,
                                  uint64_t k) {
    const ArrayMapping a = mapGemm(d, rows, cols, m, n, k);
    return a.folds() * isolatedFoldCycles(d, rows, cols, a.t) - 1;
}

// SCALE-Sim's conv output size: no padding, ceil((H - R + S) / S).
constexpr uint64_t scalesimConvOut(uint64_t in, uint64_t kernel, uint64_t stride) {
    return in < kernel ? 0 : ceilDiv(in - kernel + stride, stride);
}

}  // namespace npu::sim
