// EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION.
#include "lookup.h"

#include <cstring>

#include "common.h"

namespace npu::ref::ops {

// ---- FarmHash Fingerprint64 (farmhashna::Hash64), written from the public algorithm ---------------
namespace {

constexpr uint64_t k0 = 0xc3a5c85c97cb3127ULL;
constexpr uint64_t k1 = 0xb492b66fbe98f273ULL;
constexpr uint64_t k2 = 0x9ae16a3b2f90404fULL;

uint64_t fetch64(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}
uint32_t fetch32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
uint64_t rotate(uint64_t v, int shift) {
    return shift == 0 ? v : (v >> shift) | (v << (64 - shift));
}
uint64_t shiftMix(uint64_t v) {
    return v ^ (v >> 47);
}

uint64_t hashLen16(uint64_t u, uint64_t v, uint64_t mul) {
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

uint64_t hashLen0to16(const uint8_t* s, size_t len) {
    if (len >= 8) {
        const uint64_t mul = k2 + len * 2;
        const uint64_t a = fetch64(s) + k2;
        const uint64_t b = fetch64(s + len - 8);
        const uint64_t c = rotate(b, 37) * mul + a;
        const uint64_t d = (rotate(a, 25) + b) * mul;
        return hashLen16(c, d, mul);
    }
    if (len >= 4) {
        const uint64_t mul = k2 + len * 2;
        const uint64_t a = fetch32(s);
        return hashLen16(len + (a << 3), fetch32(s + len - 4), mul);
    }
    if (len > 0) {
        const uint8_t a = s[0], b = s[len >> 1], c = s[len - 1];
        const uint32_t y = uint32_t(a) + (uint32_t(b) << 8);
        const uint32_t z = uint32_t(len) + (uint32_t(c) << 2);
        return shiftMix(y * k2 ^ z * k0) * k2;
    }
    return k2;
}

uint64_t hashLen17to32(const uint8_t* s, size_t len) {
    const uint64_t mul = k2 + len * 2;
    const uint64_t a = fetch64(s) * k1;
    const uint64_t b = fetch64(s + 8);
    const uint64_t c = fetch64(s + len - 8) * mul;
    const uint64_t d = fetch64(s + len - 16) * k2;
    return hashLen16(rotate(a + b, 43) + rotate(c, 30) + d, a + rotate(b + k2, 18) + c, mul);
}

uint64_t hashLen33to64(const uint8_t* s, size_t len) {
    const uint64_t mul = k2 + len * 2;
    const uint64_t a = fetch64(s) * k2;
    const uint64_t b = fetch64(s + 8);
    const uint64_t c = fetch64(s + len - 8) * mul;
    const uint64_t d = fetch64(s + len - 16) * k2;
    const uint64_t y = rotate(a + b, 43) + rotate(c, 30) + d;
    const uint64_t z = hashLen16(y, a + rotate(b + k2, 18) + c, mul);
    const uint64_t e = fetch64(s + 16) * mul;
    const uint64_t f = fetch64(s + 24);
    const uint64_t g = (y + fetch64(s + len - 32)) * mul;
    const uint64_t h = (z + fetch64(s + len - 24)) * mul;
    return hashLen16(rotate(e + f, 43) + rotate(g, 30) + h, e + rotate(f + a, 18) + g, mul);
}

struct Pair {
    uint64_t first, second;
};
Pair weakHashLen32WithSeeds(const uint8_t* s, uint64_t a, uint64_t b) {
    const uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
    a += w;
    b = rotate(b + a + z, 21);
    const uint64_t c = a;
    a += x;
    a += y;
    b += rotate(a, 44);
    return {a + z, b + c};
}

}  // namespace

uint64_t fingerprint64(const uint8_t* s, size_t len) {
    if (len <= 16) return hashLen0to16(s, len);
    if (len <= 32) return hashLen17to32(s, len);
    if (len <= 64) return hashLen33to64(s, len);
    constexpr uint64_t seed = 81;
    uint64_t x = seed, y = seed * k1 + 113, z = shiftMix(y * k2 + 113) * k2;
    Pair v{0, 0}, w{0, 0};
    x = x * k2 + fetch64(s);
    const uint8_t* end = s + ((len - 1) / 64) * 64;
    const uint8_t* last64 = end + ((len - 1) & 63) - 63;
    do {
        x = rotate(x + y + v.first + fetch64(s + 8), 37) * k1;
        y = rotate(y + v.second + fetch64(s + 48), 42) * k1;
        x ^= w.second;
        y += v.first + fetch64(s + 40);
        z = rotate(z + w.first, 33) * k1;
        v = weakHashLen32WithSeeds(s, v.second * k1, x + w.first);
        w = weakHashLen32WithSeeds(s + 32, z + w.second, y + fetch64(s + 16));
        std::swap(z, x);
        s += 64;
    } while (s != end);
    const uint64_t mul = k1 + ((z & 0xff) << 1);
    s = last64;
    w.first += ((len - 1) & 63);
    v.first += w.first;
    w.first += v.first;
    x = rotate(x + y + v.first + fetch64(s + 8), 37) * mul;
    y = rotate(y + v.second + fetch64(s + 48), 42) * mul;
    x ^= w.second * 9;
    y += v.first * 9 + fetch64(s + 40);
    z = rotate(z + w.first, 33) * mul;
    v = weakHashLen32WithSeeds(s, v.second * mul, x + w.first);
    w = weakHashLen32WithSeeds(s + 32, z + w.second, y + fetch64(s + 16));
    std::swap(z, x);
    return hashLen16(hashLen16(v.first, w.first, mul) + shiftMix(y) * k0 + z,
                     hashLen16(v.second, w.second, mul) + x, mul);
}

namespace {

using hal::OperationType;

// ---- EMBEDDING_LOOKUP: output[i] = values[lookups[i]] (whole rows) -------------------------------

bool supportsEmbeddingLookup(const hal::Subgraph& sg, const hal::Operation& op) {
    return operandType(sg, op, 0) == OperandType::TENSOR_INT32 &&
           typeIn(operandType(sg, op, 1),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16, OperandType::TENSOR_INT32,
                   OperandType::TENSOR_QUANT8_ASYMM, OperandType::TENSOR_QUANT8_ASYMM_SIGNED});
}

Status prepareEmbeddingLookup(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(2, 2));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectType(0, OperandType::TENSOR_INT32));
    NPU_TRY(ctx.expectRank(0, 1));
    if (ctx.inputRank(1) < 2) return ctx.error("input 1 (values) must have rank 2 or more");
    if (ctx.outputType(0) != ctx.inputType(1)) return ctx.error("output type differs from input 1 (values)");
    std::vector<uint32_t> dims = ctx.inputDims(1);
    dims[0] = ctx.inputDims(0)[0];
    return ctx.setOutputShape(0, std::move(dims));
}

Status executeEmbeddingLookup(OperationContext& ctx) {
    const RuntimeOperand& values = ctx.input(1);
    const uint32_t rows = values.dims[0];
    const size_t rowBytes = values.byteSize() / std::max<uint32_t>(rows, 1);
    const int32_t* lookups = ctx.inputData<int32_t>(0);
    RuntimeOperand& out = ctx.output(0);
    for (uint32_t i = 0; i < ctx.inputDims(0)[0]; ++i) {
        if (lookups[i] < 0 || uint32_t(lookups[i]) >= rows) {
            return ctx.error("input 0 (lookups) element " + std::to_string(i) + " = " +
                             std::to_string(lookups[i]) + " is outside the " + std::to_string(rows) +
                             " rows of input 1");
        }
        std::memcpy(out.buffer.data() + i * rowBytes, values.data() + size_t(lookups[i]) * rowBytes,
                    rowBytes);
    }
    return {};
}

// ---- HASHTABLE_LOOKUP: output[i] = values[j] where keys[j] == lookups[i] (keys sorted), hits[i] --

bool supportsHashtableLookup(const hal::Subgraph& sg, const hal::Operation& op) {
    return operandType(sg, op, 0) == OperandType::TENSOR_INT32 &&
           operandType(sg, op, 1) == OperandType::TENSOR_INT32 &&
           typeIn(operandType(sg, op, 2),
                  {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_INT32, OperandType::TENSOR_QUANT8_ASYMM});
}

Status prepareHashtableLookup(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(3, 3));
    NPU_TRY(ctx.expectOutputCount(2));
    NPU_TRY(ctx.expectType(0, OperandType::TENSOR_INT32));
    NPU_TRY(ctx.expectType(1, OperandType::TENSOR_INT32));
    NPU_TRY(ctx.expectRank(0, 1));
    NPU_TRY(ctx.expectRank(1, 1));
    if (ctx.inputRank(2) < 1) return ctx.error("input 2 (values) must have rank 1 or more");
    if (ctx.inputDims(2)[0] != ctx.inputDims(1)[0]) {
        return ctx.error("input 2 (values) has " + std::to_string(ctx.inputDims(2)[0]) +
                         " rows, input 1 (keys) " + std::to_string(ctx.inputDims(1)[0]) + " keys");
    }
    if (ctx.outputType(0) != ctx.inputType(2))
        return ctx.error("output 0 type differs from input 2 (values)");
    if (ctx.outputType(1) != OperandType::TENSOR_QUANT8_ASYMM)
        return ctx.error("output 1 (hits) must be TENSOR_QUANT8_ASYMM");
    std::vector<uint32_t> dims = ctx.inputDims(2);
    dims[0] = ctx.inputDims(0)[0];
    NPU_TRY(ctx.setOutputShape(0, std::move(dims)));
    return ctx.setOutputShape(1, {ctx.inputDims(0)[0]});
}

Status executeHashtableLookup(OperationContext& ctx) {
    const RuntimeOperand& values = ctx.input(2);
    const uint32_t rows = values.dims[0];
    const size_t rowBytes = values.byteSize() / std::max<uint32_t>(rows, 1);
    const int32_t* lookups = ctx.inputData<int32_t>(0);
    const int32_t* keys = ctx.inputData<int32_t>(1);
    RuntimeOperand& out = ctx.output(0);
    uint8_t* hits = ctx.outputData<uint8_t>(1);
    for (uint32_t i = 0; i < ctx.inputDims(0)[0]; ++i) {
        const int32_t* found = std::lower_bound(keys, keys + rows, lookups[i]);
        const bool hit = found != keys + rows && *found == lookups[i];
        hits[i] = hit ? 1 : 0;
        if (hit) {
            std::memcpy(out.buffer.data() + i * rowBytes, values.data() + size_t(found - keys) * rowBytes,
                        rowBytes);
        } else {
            std::memset(out.buffer.data() + i * rowBytes, 0, rowBytes);
        }
    }
    return {};
}

// ---- LSH_PROJECTION -----------------------------------------------------------------------------
// Each (hash function i, bit j) is the sign of sum_k weight[k] * fingerprint64(seed_ij ++ row_k),
// the seed as float32 bytes followed by the raw bytes of input row k.

enum LshType { kSparseDeprecated = 1, kDense = 2, kSparse = 3 };

bool supportsLsh(const hal::Subgraph& sg, const hal::Operation& op) {
    return typeIn(operandType(sg, op, 0), {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16}) &&
           typeIn(operandType(sg, op, 1), {OperandType::TENSOR_FLOAT32, OperandType::TENSOR_FLOAT16,
                                           OperandType::TENSOR_INT32, OperandType::TENSOR_QUANT8_ASYMM});
}

Status prepareLsh(OperationContext& ctx) {
    NPU_TRY(ctx.expectInputCount(4, 4));
    NPU_TRY(ctx.expectOutputCount(1));
    NPU_TRY(ctx.expectRank(0, 2));
    const uint32_t numHash = ctx.inputDims(0)[0], numBits = ctx.inputDims(0)[1];
    if (numBits < 1 || numBits > 32)
        return ctx.error("input 0 (hash) has " + std::to_string(numBits) +
                         " bits per function, expected 1 to 32");
    if (ctx.inputRank(1) < 1) return ctx.error("input 1 (input) must have rank 1 or more");
    if (!ctx.isOmitted(2)) {
        NPU_TRY(ctx.expectSameType(2, 0));
        NPU_TRY(ctx.expectRank(2, 1));
        if (ctx.inputDims(2)[0] != ctx.inputDims(1)[0]) {
            return ctx.error("input 2 (weight) has " + std::to_string(ctx.inputDims(2)[0]) +
                             " elements, input 1 has " + std::to_string(ctx.inputDims(1)[0]) + " rows");
        }
    }
    const int32_t type = NPU_TRY(scalarInput<int32_t>(ctx, 3, OperandType::INT32));
    if (type != kSparseDeprecated && type != kDense && type != kSparse) {
        return ctx.error("input 3 (type) " + std::to_string(type) +
                         " is not SPARSE_DEPRECATED (1), DENSE (2) or SPARSE (3)");
    }
    if (ctx.outputType(0) != OperandType::TENSOR_INT32) return ctx.error("output 0 must be TENSOR_INT32");
    return ctx.setOutputShape(0, {type == kDense ? numHash * numBits : numHash});
}

int runningSignBit(const OperationContext& ctx, float seed) {
    const RuntimeOperand& input = ctx.input(1);
    const uint32_t rows = input.dims[0];
    const size_t rowBytes = input.byteSize() / std::max<uint32_t>(rows, 1);
    std::vector<uint8_t> key(sizeof(float) + rowBytes);
    std::memcpy(key.data(), &seed, sizeof(float));
    const bool weighted = !ctx.isOmitted(2);
    double score = 0;
    for (uint32_t k = 0; k < rows; ++k) {
        std::memcpy(key.data() + sizeof(float), input.data() + k * rowBytes, rowBytes);
        const double running = double(int64_t(fingerprint64(key.data(), key.size())));
        score += weighted ? double(loadFloat(ctx.inputType(2), ctx.input(2).data(), k)) * running : running;
    }
    return score > 0 ? 1 : 0;
}

Status executeLsh(OperationContext& ctx) {
    const uint32_t numHash = ctx.inputDims(0)[0], numBits = ctx.inputDims(0)[1];
    const int32_t type = ctx.scalar<int32_t>(3);
    int32_t* out = ctx.outputData<int32_t>(0);
    const RuntimeOperand& hash = ctx.input(0);
    for (uint32_t i = 0; i < numHash; ++i) {
        uint32_t signature = 0;
        for (uint32_t j = 0; j < numBits; ++j) {
            const int bit = runningSignBit(ctx, loadFloat(hash.type, hash.data(), size_t(i) * numBits + j));
            if (type == kDense) {
                *out++ = bit;
            } else {
                signature = (signature << 1) | uint32_t(bit);
            }
        }
        if (type == kSparse) {
            *out++ = int32_t(uint32_t(uint64_t(signature) + (uint64_t(i) << numBits)));
        } else if (type == kSparseDeprecated) {
            *out++ = int32_t(signature);
        }
    }
    return {};
}

}  // namespace

std::vector<OperationRegistration> lookupOperations() {
    return {
        {OperationType::EMBEDDING_LOOKUP, supportsEmbeddingLookup, prepareEmbeddingLookup,
         executeEmbeddingLookup},
        {OperationType::HASHTABLE_LOOKUP, supportsHashtableLookup, prepareHashtableLookup,
         executeHashtableLookup},
        {OperationType::LSH_PROJECTION, supportsLsh, prepareLsh, executeLsh},
    };
}

}  // namespace npu::ref::ops
