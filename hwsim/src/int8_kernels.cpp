#include "int8_kernels.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include "hwsim/isa/fixed_point.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NPU_SIM_X86 1
// GCC 12's AVX-512 headers build masked intrinsics on _mm512_undefined_*(), which its flow
// analysis reports as uninitialized (a false positive), and -Wpsabi notes an ABI detail of
// functions this file never exports.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace npu::sim::kernels {

namespace {

constexpr uint32_t kRowsPerTile = 4;

template <bool kSigned>
int16_t widenOne(uint8_t v, int32_t zp) {
    const int32_t x = kSigned ? static_cast<int32_t>(static_cast<int8_t>(v)) : static_cast<int32_t>(v);
    return static_cast<int16_t>(x - zp);
}

template <bool kSigned>
void packBImpl(const uint8_t* b, uint32_t k, uint32_t n, uint64_t rowStride, int32_t zp, PackedB& out) {
    int16_t* d = out.data.data();
    for (uint32_t blk = 0; blk < out.blocks; ++blk) {
        const uint32_t j0 = blk * kBlockCols;
        const uint32_t cols = std::min(kBlockCols, n - j0);
        for (uint32_t kp = 0; kp < out.kPairs; ++kp) {
            int16_t* dst = d + (uint64_t{blk} * out.kPairs + kp) * 2 * kBlockCols;
            for (uint32_t t = 0; t < 2; ++t) {
                const uint32_t kk = 2 * kp + t;
                if (kk >= k) continue;  // the padded reduction row stays zero
                const uint8_t* src = b + kk * rowStride + j0;
                for (uint32_t j = 0; j < cols; ++j) dst[2 * j + t] = widenOne<kSigned>(src[j], zp);
            }
        }
    }
}

int32_t loadPair(const int16_t* p) {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Writes a rows x cols tile of results, adding to what is there when accumulating (wrapping).
void writeTile(const int32_t* tile, uint32_t tileStride, uint32_t rows, uint32_t cols, int32_t* acc,
               uint64_t accStride, bool accumulate) {
    for (uint32_t r = 0; r < rows; ++r) {
        int32_t* dst = acc + r * accStride;
        const int32_t* src = tile + r * tileStride;
        if (accumulate) {
            for (uint32_t j = 0; j < cols; ++j) {
                dst[j] = static_cast<int32_t>(static_cast<uint32_t>(dst[j]) + static_cast<uint32_t>(src[j]));
            }
        } else {
            std::memcpy(dst, src, cols * sizeof(int32_t));
        }
    }
}

void gemmPortable(const int16_t* a, uint32_t rows, const PackedB& b, int32_t* acc, uint64_t accStride,
                  bool accumulate) {
    uint32_t tile[kBlockCols];
    for (uint32_t i = 0; i < rows; ++i) {
        const int16_t* ar = a + uint64_t{i} * b.kPairs * 2;
        for (uint32_t blk = 0; blk < b.blocks; ++blk) {
            const int16_t* bb = b.data.data() + uint64_t{blk} * b.kPairs * 2 * kBlockCols;
            std::fill(std::begin(tile), std::end(tile), 0u);
            for (uint32_t kp = 0; kp < b.kPairs; ++kp) {
                const int32_t a0 = ar[2 * kp], a1 = ar[2 * kp + 1];
                const int16_t* bk = bb + kp * 2 * kBlockCols;
                for (uint32_t j = 0; j < kBlockCols; ++j) {
                    tile[j] += static_cast<uint32_t>(a0 * bk[2 * j] + a1 * bk[2 * j + 1]);
                }
            }
            const uint32_t j0 = blk * kBlockCols;
            writeTile(reinterpret_cast<const int32_t*>(tile), kBlockCols, 1, std::min(kBlockCols, b.n - j0),
                      acc + uint64_t{i} * accStride + j0, accStride, accumulate);
        }
    }
}

#ifdef NPU_SIM_X86

__attribute__((target("avx2"))) void gemmAvx2(const int16_t* a, uint32_t rows, const PackedB& b, int32_t* acc,
                                              uint64_t accStride, bool accumulate) {
    alignas(32) int32_t tile[kRowsPerTile * kBlockCols];
    const uint64_t aStride = uint64_t{b.kPairs} * 2;
    for (uint32_t i0 = 0; i0 < rows; i0 += kRowsPerTile) {
        const uint32_t rs = std::min(kRowsPerTile, rows - i0);
        const int16_t* ar[kRowsPerTile];
        for (uint32_t r = 0; r < kRowsPerTile; ++r) ar[r] = a + (i0 + std::min(r, rs - 1)) * aStride;
        for (uint32_t blk = 0; blk < b.blocks; ++blk) {
            const int16_t* bb = b.data.data() + uint64_t{blk} * b.kPairs * 2 * kBlockCols;
            __m256i c[kRowsPerTile][2];
            for (auto& row : c) row[0] = row[1] = _mm256_setzero_si256();
            for (uint32_t kp = 0; kp < b.kPairs; ++kp) {
                const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bb + kp * 32));
                const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bb + kp * 32 + 16));
                for (uint32_t r = 0; r < kRowsPerTile; ++r) {
                    const __m256i av = _mm256_set1_epi32(loadPair(ar[r] + 2 * kp));
                    c[r][0] = _mm256_add_epi32(c[r][0], _mm256_madd_epi16(av, b0));
                    c[r][1] = _mm256_add_epi32(c[r][1], _mm256_madd_epi16(av, b1));
                }
            }
            for (uint32_t r = 0; r < kRowsPerTile; ++r) {
                _mm256_store_si256(reinterpret_cast<__m256i*>(tile + r * kBlockCols), c[r][0]);
                _mm256_store_si256(reinterpret_cast<__m256i*>(tile + r * kBlockCols + 8), c[r][1]);
            }
            const uint32_t j0 = blk * kBlockCols;
            writeTile(tile, kBlockCols, rs, std::min(kBlockCols, b.n - j0),
                      acc + uint64_t{i0} * accStride + j0, accStride, accumulate);
        }
    }
}

// 8 rows x 2 column blocks: 16 accumulators, 2 loads + 8 broadcasts per 16 multiply-adds.
// kVnni fuses the multiply-add-pairs and the add (vpdpwssd); same bits either way.
constexpr uint32_t kRowsPerTile512 = 8;

#define NPU_SIM_GEMM512_BODY(MADD)                                                                       \
    const uint64_t aStride = uint64_t{b.kPairs} * 2;                                                     \
    const uint64_t blockStride = uint64_t{b.kPairs} * 2 * kBlockCols;                                    \
    for (uint32_t i0 = 0; i0 < rows; i0 += kRowsPerTile512) {                                            \
        const uint32_t rs = std::min(kRowsPerTile512, rows - i0);                                        \
        const int16_t* ar[kRowsPerTile512];                                                              \
        for (uint32_t r = 0; r < kRowsPerTile512; ++r) ar[r] = a + (i0 + std::min(r, rs - 1)) * aStride; \
        for (uint32_t blk = 0; blk < b.blocks; blk += 2) {                                               \
            const bool two = blk + 1 < b.blocks;                                                         \
            const int16_t* bb0 = b.data.data() + blk * blockStride;                                      \
            const int16_t* bb1 = two ? bb0 + blockStride : bb0;                                          \
            __m512i c[kRowsPerTile512][2];                                                               \
            for (auto& row : c) row[0] = row[1] = _mm512_setzero_si512();                                \
            for (uint32_t kp = 0; kp < b.kPairs; ++kp) {                                                 \
                const __m512i b0 = _mm512_loadu_si512(bb0 + kp * 32);                                    \
                const __m512i b1 = _mm512_loadu_si512(bb1 + kp * 32);                                    \
                for (uint32_t r = 0; r < kRowsPerTile512; ++r) {                                         \
                    const __m512i av = _mm512_set1_epi32(loadPair(ar[r] + 2 * kp));                      \
                    c[r][0] = MADD(c[r][0], av, b0);                                                     \
                    c[r][1] = MADD(c[r][1], av, b1);                                                     \
                }                                                                                        \
            }                                                                                            \
            for (uint32_t x = 0; x < (two ? 2u : 1u); ++x) {                                             \
                const uint32_t j0 = (blk + x) * kBlockCols;                                              \
                const uint32_t cols = std::min(kBlockCols, b.n - j0);                                    \
                const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1);                         \
                for (uint32_t r = 0; r < rs; ++r) {                                                      \
                    int32_t* dst = acc + (uint64_t{i0} + r) * accStride + j0;                            \
                    __m512i v = c[r][x];                                                                 \
                    if (accumulate) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(mask, dst));        \
                    _mm512_mask_storeu_epi32(dst, mask, v);                                              \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }

#define NPU_SIM_MADD_ADD(c, a, b) _mm512_add_epi32((c), _mm512_madd_epi16((a), (b)))
#define NPU_SIM_DPWSSD(c, a, b) _mm512_dpwssd_epi32((c), (a), (b))

__attribute__((target("avx512f,avx512bw"))) void gemmAvx512(const int16_t* a, uint32_t rows, const PackedB& b,
                                                            int32_t* acc, uint64_t accStride,
                                                            bool accumulate) {
    NPU_SIM_GEMM512_BODY(NPU_SIM_MADD_ADD)
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void gemmAvx512Vnni(const int16_t* a, uint32_t rows,
                                                                           const PackedB& b, int32_t* acc,
                                                                           uint64_t accStride,
                                                                           bool accumulate) {
    NPU_SIM_GEMM512_BODY(NPU_SIM_DPWSSD)
}

#undef NPU_SIM_GEMM512_BODY
#undef NPU_SIM_MADD_ADD
#undef NPU_SIM_DPWSSD

// Each returns how many leading elements it did; the caller's scalar loop does the rest.
__attribute__((target("avx2"))) uint32_t widenAvx2(const uint8_t* src, uint32_t n, bool isSigned, int32_t zp,
                                                   int16_t* dst) {
    const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(zp));
    uint32_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
        const __m256i w = isSigned ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_sub_epi16(w, z));
    }
    return i;
}

__attribute__((target("avx2"))) uint32_t macRowAvx2(uint32_t* sum, const int16_t* a, const int16_t* b,
                                                    uint32_t n) {
    uint32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
        const __m256i y = _mm256_cvtepi16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
        const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sum + i));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(sum + i),
                            _mm256_add_epi32(s, _mm256_mullo_epi32(x, y)));
    }
    return i;
}

// The AVX-512 kernels do a row's last partial vector with masked loads and stores (a masked-off
// lane touches no memory), so a row of any length has no scalar tail.
inline __mmask16 laneMask16(uint32_t remaining) {
    return remaining >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << remaining) - 1);
}
inline __mmask32 laneMask32(uint32_t remaining) {
    return remaining >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint32_t{1} << remaining) - 1);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) uint32_t widenAvx512(const uint8_t* src, uint32_t n,
                                                                          bool isSigned, int32_t zp,
                                                                          int16_t* dst) {
    const __m512i z = _mm512_set1_epi16(static_cast<int16_t>(zp));
    for (uint32_t i = 0; i < n; i += 32) {
        const __mmask32 m = laneMask32(n - i);
        const __m256i v = _mm256_maskz_loadu_epi8(m, src + i);
        const __m512i w = isSigned ? _mm512_cvtepi8_epi16(v) : _mm512_cvtepu8_epi16(v);
        _mm512_mask_storeu_epi16(dst + i, m, _mm512_sub_epi16(w, z));
    }
    return n;
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) uint32_t macRowAvx512(uint32_t* sum, const int16_t* a,
                                                                           const int16_t* b, uint32_t n) {
    for (uint32_t i = 0; i < n; i += 16) {
        const __mmask16 m = laneMask16(n - i);
        const __m512i x = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(m, a + i));
        const __m512i y = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(m, b + i));
        const __m512i s = _mm512_maskz_loadu_epi32(m, sum + i);
        _mm512_mask_storeu_epi32(sum + i, m, _mm512_add_epi32(s, _mm512_mullo_epi32(x, y)));
    }
    return n;
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) void macTapsAvx512(uint32_t* sum,
                                                                        const int16_t* const* a,
                                                                        const int16_t* const* b,
                                                                        uint32_t taps, uint32_t n) {
    for (uint32_t i = 0; i < n; i += 16) {
        const __mmask16 m = laneMask16(n - i);
        __m512i s = _mm512_maskz_loadu_epi32(m, sum + i);
        for (uint32_t t = 0; t < taps; ++t) {
            const __m512i x = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(m, a[t] + i));
            const __m512i y = _mm512_cvtepi16_epi32(_mm256_maskz_loadu_epi16(m, b[t] + i));
            s = _mm512_add_epi32(s, _mm512_mullo_epi32(x, y));
        }
        _mm512_mask_storeu_epi32(sum + i, m, s);
    }
}

// SRDHM's rounding on 4 signed 64-bit products: add the nudge, divide by 2^31 truncating. Only
// the low 32 bits of each quotient are kept, so a logical shift serves (AVX2 has no 64-bit
// arithmetic shift): bits 31..62 are the same either way.
__attribute__((target("avx2"), always_inline)) inline __m256i highMul256(__m256i prod, __m256i nudgePos,
                                                                         __m256i nudgeNeg,
                                                                         __m256i truncBias) {
    const __m256i zero = _mm256_setzero_si256();
    __m256i v =
        _mm256_add_epi64(prod, _mm256_blendv_epi8(nudgePos, nudgeNeg, _mm256_cmpgt_epi64(zero, prod)));
    v = _mm256_add_epi64(v, _mm256_and_si256(_mm256_cmpgt_epi64(zero, v), truncBias));
    return _mm256_srli_epi64(v, 31);
}

// requantAvx512 on 8 lanes.
__attribute__((target("avx2"))) uint32_t requantAvx2(const int32_t* acc, const uint8_t* bias, uint32_t n,
                                                     const RequantParams& p, uint8_t* out) {
    const int32_t left = p.shift > 0 ? p.shift : 0;
    const int32_t right = p.shift > 0 ? 0 : -p.shift;
    const __m128i leftCount = _mm_cvtsi32_si128(left);
    const __m128i rightCount = _mm_cvtsi32_si128(right);
    const __m256i mult = _mm256_set1_epi32(p.multiplier);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i nudgePos = _mm256_set1_epi64x(int64_t{1} << 30);
    const __m256i nudgeNeg = _mm256_set1_epi64x(1 - (int64_t{1} << 30));
    const __m256i truncBias = _mm256_set1_epi64x((int64_t{1} << 31) - 1);
    const __m256i mask = _mm256_set1_epi32(static_cast<int32_t>((int64_t{1} << right) - 1));
    const __m256i half = _mm256_srai_epi32(mask, 1);
    const __m256i one = _mm256_set1_epi32(1);
    // Clamped before the offset is added, so the sum stays in int32 (as outputClamp below).
    const __m256i offset = _mm256_set1_epi32(p.offset);
    const __m256i lo = _mm256_set1_epi32(p.clampMin - p.offset),
                  hi = _mm256_set1_epi32(p.clampMax - p.offset);
    const __m256i lowByte = _mm256_set1_epi32(0xFF);
    uint32_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + j));
        if (bias != nullptr) {
            x = _mm256_add_epi32(
                x, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias + uint64_t{j} * 4)));
        }
        x = _mm256_sll_epi32(x, leftCount);
        const __m256i even = highMul256(_mm256_mul_epi32(x, mult), nudgePos, nudgeNeg, truncBias);
        const __m256i odd =
            highMul256(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), mult), nudgePos, nudgeNeg, truncBias);
        x = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
        const __m256i rem = _mm256_and_si256(x, mask);
        const __m256i threshold = _mm256_add_epi32(half, _mm256_and_si256(_mm256_cmpgt_epi32(zero, x), one));
        x = _mm256_sra_epi32(x, rightCount);
        x = _mm256_add_epi32(x, _mm256_and_si256(_mm256_cmpgt_epi32(rem, threshold), one));
        x = _mm256_add_epi32(_mm256_min_epi32(_mm256_max_epi32(x, lo), hi), offset);
        // The low byte of each lane is the 8-bit result (int8 or uint8 alike).
        x = _mm256_and_si256(x, lowByte);
        const __m256i words = _mm256_packus_epi32(x, x);          // per 128-bit lane
        const __m256i bytes = _mm256_packus_epi16(words, words);  // lane 0: r0..r3, lane 1: r4..r7
        const int32_t first = _mm256_extract_epi32(bytes, 0), second = _mm256_extract_epi32(bytes, 4);
        std::memcpy(out + j, &first, 4);
        std::memcpy(out + j + 4, &second, 4);
    }
    return j;
}

// SRDHM's rounding on 8 signed 64-bit products: add the nudge, divide by 2^31 truncating.
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512i highMul(__m512i prod) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i nudgePos = _mm512_set1_epi64(int64_t{1} << 30);
    const __m512i nudgeNeg = _mm512_set1_epi64(1 - (int64_t{1} << 30));
    const __m512i truncBias = _mm512_set1_epi64((int64_t{1} << 31) - 1);
    const __mmask8 neg = _mm512_cmplt_epi64_mask(prod, zero);
    __m512i v = _mm512_add_epi64(prod, _mm512_mask_blend_epi64(neg, nudgePos, nudgeNeg));
    v = _mm512_mask_add_epi64(v, _mm512_cmplt_epi64_mask(v, zero), v, truncBias);
    return _mm512_srai_epi64(v, 31);
}

// One quantized multiplier's constants for mbqm512 (a multiplier of INT32_MIN is the scalar
// code's: SRDHM saturates there).
struct Mbqm512 {
    __m128i leftCount, rightCount;
    __m512i mult, mask, half;
};

__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline Mbqm512 mbqmConstants(
    int32_t multiplier, int32_t shift) {
    const int32_t right = shift > 0 ? 0 : -shift;
    Mbqm512 q;
    q.leftCount = _mm_cvtsi32_si128(shift > 0 ? shift : 0);
    q.rightCount = _mm_cvtsi32_si128(right);
    q.mult = _mm512_set1_epi32(multiplier);
    q.mask = _mm512_set1_epi32(static_cast<int32_t>((int64_t{1} << right) - 1));
    q.half = _mm512_srai_epi32(q.mask, 1);
    return q;
}

// isa::multiplyByQuantizedMultiplier on 16 lanes: 64-bit products of the even and odd lanes,
// the same nudge, truncating division and rounding shift as the scalar definition.
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512i mbqm512(__m512i x,
                                                                                           const Mbqm512& q) {
    const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
    x = _mm512_sll_epi32(x, q.leftCount);
    const __m512i even = highMul(_mm512_mul_epi32(x, q.mult));
    const __m512i odd = highMul(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), q.mult));
    x = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
    const __m512i rem = _mm512_and_si512(x, q.mask);
    const __m512i threshold = _mm512_mask_add_epi32(q.half, _mm512_cmplt_epi32_mask(x, zero), q.half, one);
    x = _mm512_sra_epi32(x, q.rightCount);
    return _mm512_mask_add_epi32(x, _mm512_cmpgt_epi32_mask(rem, threshold), x, one);
}

// clamp(x + offset, lo, hi) on 16 lanes stored as bytes. Clamping x to [lo - offset, hi - offset]
// first keeps the addition exact where x + offset would leave int32 (the scalar code adds in
// int64).
struct OutputClamp512 {
    __m512i lo, hi, offset;
};

__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline OutputClamp512 outputClamp(
    int32_t offset, int32_t clampMin, int32_t clampMax) {
    return {_mm512_set1_epi32(clampMin - offset), _mm512_set1_epi32(clampMax - offset),
            _mm512_set1_epi32(offset)};
}

__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline void storeClamped(
    __m512i x, const OutputClamp512& c, __mmask16 m, uint8_t* out) {
    x = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(x, c.lo), c.hi), c.offset);
    _mm_mask_storeu_epi8(out, m, _mm512_cvtepi32_epi8(x));
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) uint32_t requantAvx512(const int32_t* acc,
                                                                            const uint8_t* bias, uint32_t n,
                                                                            const RequantParams& p,
                                                                            uint8_t* out) {
    const Mbqm512 q = mbqmConstants(p.multiplier, p.shift);
    const OutputClamp512 clamp = outputClamp(p.offset, p.clampMin, p.clampMax);
    for (uint32_t j = 0; j < n; j += 16) {
        const __mmask16 m = laneMask16(n - j);
        __m512i x = _mm512_maskz_loadu_epi32(m, acc + j);
        if (bias != nullptr) x = _mm512_add_epi32(x, _mm512_maskz_loadu_epi32(m, bias + uint64_t{j} * 4));
        storeClamped(mbqm512(x, q), clamp, m, out + j);
    }
    return n;
}

// The masked lanes of 16 8-bit inputs as int32 lanes (others 0), or one broadcast to all lanes.
template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512i load16(const uint8_t* p,
                                                                                          bool broadcast,
                                                                                          __mmask16 m) {
    if (broadcast) {
        return _mm512_set1_epi32(kSigned ? static_cast<int32_t>(static_cast<int8_t>(*p)) : int32_t{*p});
    }
    const __m128i bytes = _mm_maskz_loadu_epi8(m, p);
    return kSigned ? _mm512_cvtepi8_epi32(bytes) : _mm512_cvtepu8_epi32(bytes);
}

// addRescale on 16 contiguous inputs.
template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512i addRescale512(
    const uint8_t* x, __mmask16 m, __m512i offset, __m128i leftShift, const Mbqm512& q) {
    return mbqm512(_mm512_sll_epi32(_mm512_add_epi32(load16<kSigned>(x, false, m), offset), leftShift), q);
}

template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"))) uint32_t addAvx512(const BinaryRow& row,
                                                                        const isa::VecParams& p,
                                                                        uint8_t* out) {
    const Mbqm512 q1 = mbqmConstants(p.in1Mult, p.in1Shift), q2 = mbqmConstants(p.in2Mult, p.in2Shift);
    const Mbqm512 qOut = mbqmConstants(p.outMult, p.outShift);
    const OutputClamp512 clamp = outputClamp(p.outOffset, p.clampMin, p.clampMax);
    const __m512i off1 = _mm512_set1_epi32(p.in1Offset), off2 = _mm512_set1_epi32(p.in2Offset);
    const __m128i leftShift = _mm_cvtsi32_si128(p.leftShift);
    // A broadcast input's rescaled value is the same in every lane and every step.
    auto value = [](const uint8_t* x) {
        return kSigned ? static_cast<int32_t>(static_cast<int8_t>(*x)) : int32_t{*x};
    };
    const __m512i aConst = _mm512_set1_epi32(
        row.aBroadcast ? addRescale(value(row.a), p.in1Offset, p.in1Mult, p.in1Shift, p.leftShift) : 0);
    const __m512i bConst = _mm512_set1_epi32(
        row.bBroadcast ? addRescale(value(row.b), p.in2Offset, p.in2Mult, p.in2Shift, p.leftShift) : 0);
    for (uint32_t j = 0; j < row.n; j += 16) {
        const __mmask16 m = laneMask16(row.n - j);
        const __m512i s1 =
            row.aBroadcast ? aConst : addRescale512<kSigned>(row.a + j, m, off1, leftShift, q1);
        const __m512i s2 =
            row.bBroadcast ? bConst : addRescale512<kSigned>(row.b + j, m, off2, leftShift, q2);
        storeClamped(mbqm512(_mm512_add_epi32(s1, s2), qOut), clamp, m, out + j);
    }
    return row.n;
}

template <bool kSigned>
__attribute__((target("avx512f,avx512bw,avx512vl"))) uint32_t mulAvx512(const BinaryRow& row,
                                                                        const isa::VecParams& p,
                                                                        uint8_t* out) {
    const Mbqm512 qOut = mbqmConstants(p.outMult, p.outShift);
    const OutputClamp512 clamp = outputClamp(p.outOffset, p.clampMin, p.clampMax);
    const __m512i off1 = _mm512_set1_epi32(p.in1Offset), off2 = _mm512_set1_epi32(p.in2Offset);
    const uint32_t aStep = row.aBroadcast ? 0 : 16, bStep = row.bBroadcast ? 0 : 16;
    const uint8_t *a = row.a, *b = row.b;
    for (uint32_t j = 0; j < row.n; j += 16, a += aStep, b += bStep) {
        const __mmask16 m = laneMask16(row.n - j);
        // The low 32 bits of the product: the scalar definition's wrap to int32.
        const __m512i product =
            _mm512_mullo_epi32(_mm512_add_epi32(load16<kSigned>(a, row.aBroadcast, m), off1),
                               _mm512_add_epi32(load16<kSigned>(b, row.bBroadcast, m), off2));
        storeClamped(mbqm512(product, qOut), clamp, m, out + j);
    }
    return row.n;
}

#endif

using GemmFn = void (*)(const int16_t*, uint32_t, const PackedB&, int32_t*, uint64_t, bool);

struct Dispatch {
    GemmFn fn = gemmPortable;
    const char* name = "portable";
    bool avx512 = false;  // the element-wise kernels' fast paths (else portable loops)
    bool avx2 = false;
    Dispatch() {
#ifdef NPU_SIM_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni")) {
            fn = gemmAvx512Vnni;
            name = "avx512vnni";
            avx512 = avx2 = true;
        } else if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f") &&
                   __builtin_cpu_supports("avx512vl")) {
            fn = gemmAvx512;
            name = "avx512bw";
            avx512 = avx2 = true;
        } else if (__builtin_cpu_supports("avx2")) {
            fn = gemmAvx2;
            name = "avx2";
            avx2 = true;
        }
#endif
    }
};

Dispatch& dispatch() {
    static Dispatch d;
    return d;
}

}  // namespace

void packB(const uint8_t* b, uint32_t k, uint32_t n, uint64_t rowStride, bool isSigned, int32_t zp,
           PackedB& out) {
    out.k = k;
    out.n = n;
    out.kPairs = (k + 1) / 2;
    out.blocks = (n + kBlockCols - 1) / kBlockCols;
    out.data.assign(uint64_t{out.blocks} * out.kPairs * 2 * kBlockCols, 0);
    if (isSigned) {
        packBImpl<true>(b, k, n, rowStride, zp, out);
    } else {
        packBImpl<false>(b, k, n, rowStride, zp, out);
    }
}

void packARows(const uint8_t* a, uint32_t rows, uint32_t k, uint64_t rowStride, bool isSigned, int32_t zp,
               uint32_t kPairs, int16_t* out) {
    for (uint32_t i = 0; i < rows; ++i) {
        int16_t* dst = out + uint64_t{i} * kPairs * 2;
        widen(a + i * rowStride, k, isSigned, zp, dst);
        for (uint32_t kk = k; kk < kPairs * 2; ++kk) dst[kk] = 0;
    }
}

void widen(const uint8_t* src, uint32_t n, bool isSigned, int32_t zp, int16_t* dst) {
    uint32_t i = 0;
#ifdef NPU_SIM_X86
    if (dispatch().avx512) {
        i = widenAvx512(src, n, isSigned, zp, dst);
    } else if (dispatch().avx2) {
        i = widenAvx2(src, n, isSigned, zp, dst);
    }
#endif
    if (isSigned) {
        for (; i < n; ++i) dst[i] = widenOne<true>(src[i], zp);
    } else {
        for (; i < n; ++i) dst[i] = widenOne<false>(src[i], zp);
    }
}

void macRow(uint32_t* sum, const int16_t* a, const int16_t* b, uint32_t n) {
    uint32_t i = 0;
#ifdef NPU_SIM_X86
    if (dispatch().avx512) {
        i = macRowAvx512(sum, a, b, n);
    } else if (dispatch().avx2) {
        i = macRowAvx2(sum, a, b, n);
    }
#endif
    for (; i < n; ++i) sum[i] += static_cast<uint32_t>(int32_t{a[i]} * int32_t{b[i]});
}

void macTaps(uint32_t* sum, const int16_t* const* a, const int16_t* const* b, uint32_t taps, uint32_t n) {
#ifdef NPU_SIM_X86
    if (dispatch().avx512) return macTapsAvx512(sum, a, b, taps, n);
#endif
    for (uint32_t t = 0; t < taps; ++t) macRow(sum, a[t], b[t], n);
}

void requantRow(const int32_t* acc, const uint8_t* bias, uint32_t n, const RequantParams& p, uint8_t* out) {
    uint32_t j = 0;
#ifdef NPU_SIM_X86
    // INT32_MIN * INT32_MIN is SRDHM's one saturating case; the scalar code handles it.
    if (p.multiplier != INT32_MIN) {
        if (dispatch().avx512) {
            j = requantAvx512(acc, bias, n, p, out);
        } else if (dispatch().avx2) {
            j = requantAvx2(acc, bias, n, p, out);
        }
    }
#endif
    for (; j < n; ++j) {
        // The 32-bit adder wraps.
        const int32_t v = bias != nullptr ? isa::wrappingAdd(acc[j], biasAt(bias, j)) : acc[j];
        int64_t o = int64_t{isa::multiplyByQuantizedMultiplier(v, p.multiplier, p.shift)} + p.offset;
        o = std::clamp<int64_t>(o, p.clampMin, p.clampMax);
        out[j] = static_cast<uint8_t>(o);
    }
}

namespace {

// The row kernels' SIMD paths take any multiplier but INT32_MIN (SRDHM's saturating case is the
// scalar code's).
bool simdMultipliers(std::initializer_list<int32_t> multipliers) {
    for (int32_t m : multipliers) {
        if (m == INT32_MIN) return false;
    }
    return true;
}

template <typename Element>
void binaryRowTail(const BinaryRow& row, uint32_t j, Element element, uint8_t* out) {
    auto value = [&](const uint8_t* p, bool broadcast) {
        const uint8_t raw = broadcast ? p[0] : p[j];
        return row.signedIn ? static_cast<int32_t>(static_cast<int8_t>(raw)) : static_cast<int32_t>(raw);
    };
    for (; j < row.n; ++j)
        out[j] = static_cast<uint8_t>(element(value(row.a, row.aBroadcast), value(row.b, row.bBroadcast)));
}

}  // namespace

void addRow(const BinaryRow& row, const isa::VecParams& p, uint8_t* out) {
    uint32_t j = 0;
#ifdef NPU_SIM_X86
    if (dispatch().avx512 && simdMultipliers({p.in1Mult, p.in2Mult, p.outMult})) {
        j = row.signedIn ? addAvx512<true>(row, p, out) : addAvx512<false>(row, p, out);
    }
#endif
    binaryRowTail(
        row, j, [&p](int32_t a, int32_t b) { return addElement(a, b, p); }, out);
}

void mulRow(const BinaryRow& row, const isa::VecParams& p, uint8_t* out) {
    uint32_t j = 0;
#ifdef NPU_SIM_X86
    if (dispatch().avx512 && simdMultipliers({p.outMult})) {
        j = row.signedIn ? mulAvx512<true>(row, p, out) : mulAvx512<false>(row, p, out);
    }
#endif
    binaryRowTail(
        row, j, [&p](int32_t a, int32_t b) { return mulElement(a, b, p); }, out);
}

void gemmPacked(const int16_t* a, uint32_t rows, const PackedB& b, int32_t* acc, uint64_t accStride,
                bool accumulate) {
    if (rows == 0 || b.n == 0) return;
    dispatch().fn(a, rows, b, acc, accStride, accumulate);
}

const char* gemmKernelName() {
    return dispatch().name;
}

bool selectGemmKernel(std::string_view name) {
    Dispatch& d = dispatch();
    const Dispatch best;
    if (name == "portable") {
        d.fn = gemmPortable;
        d.name = "portable";
        d.avx512 = d.avx2 = false;
        return true;
    }
#ifdef NPU_SIM_X86
    if (name == "avx512bw" && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512vl")) {
        d.fn = gemmAvx512;
        d.name = "avx512bw";
        d.avx512 = d.avx2 = true;
        return true;
    }
    if (name == "avx2" && __builtin_cpu_supports("avx2")) {
        d.fn = gemmAvx2;
        d.name = "avx2";
        d.avx512 = false;
        d.avx2 = true;
        return true;
    }
#endif
    if (name == best.name) {
        d = best;
        return true;
    }
    return false;
}

}  // namespace npu::sim::kernels
