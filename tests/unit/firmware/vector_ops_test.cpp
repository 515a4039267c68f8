// The vector-unit and copy operations end to end on the simulator: AVERAGE_POOL_2D and
// MAX_POOL_2D (POOL), the table-mapped RELU / RELU1 / RELU6 / LOGISTIC / TANH / HARD_SWISH
// (VEC_OP LUT), RESHAPE / SQUEEZE and CONCATENATION (DMA, or LUT where an input requantizes).
// Expected values come from the TFLite / reference formulas written out here, independently of
// the firmware.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "model_fixture.h"

using namespace fwtest;

namespace {

constexpr uint32_t kMul = 18, kSub = 36, kMaximum = 65, kMinimum = 66;
constexpr uint32_t kAvgPool = 1, kConcat = 2, kConv = 3, kLogistic = 14, kMaxPool = 17, kRelu = 19,
                   kRelu1 = 20, kRelu6 = 21, kReshape = 22, kTanh = 28, kSqueeze = 34, kHardSwish = 99;
constexpr uint32_t kU8 = 5, kI8 = 14, kInt32Tensor = 4;

struct PoolCase {
    uint32_t n, h, w, c, kh, kw, sx, sy;
    bool implicit;
    int scheme;               // implicit: 1 SAME, 2 VALID
    uint32_t pl, pr, pt, pb;  // explicit
    int act;
    bool nchw;
};

// Value of byte b as the type reads it.
int valueOf(uint8_t b, bool isSigned) {
    return isSigned ? int(int8_t(b)) : int(b);
}

// TFLite's quantized pooling: valid taps only; the average rounds half away from zero.
std::vector<uint8_t> refPool(const PoolCase& c, bool average, const std::vector<uint8_t>& in, bool isSigned,
                             uint32_t pl, uint32_t pt, uint32_t oh, uint32_t ow, int lo, int hi) {
    auto at = [&](uint32_t b, uint32_t y, uint32_t x, uint32_t ch) {
        return c.nchw ? ((size_t(b) * c.c + ch) * c.h + y) * c.w + x
                      : ((size_t(b) * c.h + y) * c.w + x) * c.c + ch;
    };
    std::vector<uint8_t> out(size_t(c.n) * oh * ow * c.c);
    for (uint32_t b = 0; b < c.n; ++b)
        for (uint32_t oy = 0; oy < oh; ++oy)
            for (uint32_t ox = 0; ox < ow; ++ox)
                for (uint32_t ch = 0; ch < c.c; ++ch) {
                    int sum = 0, count = 0, best = -1000;
                    for (uint32_t ky = 0; ky < c.kh; ++ky)
                        for (uint32_t kx = 0; kx < c.kw; ++kx) {
                            const int y = int(oy * c.sy + ky) - int(pt), x = int(ox * c.sx + kx) - int(pl);
                            if (y < 0 || x < 0 || y >= int(c.h) || x >= int(c.w)) continue;
                            const int v = valueOf(in[at(b, uint32_t(y), uint32_t(x), ch)], isSigned);
                            sum += v;
                            best = std::max(best, v);
                            ++count;
                        }
                    int v = best;  // no tap: the reference's maximum is INT32_MIN, clamped to lo
                    if (count == 0) v = average ? 0 : lo;
                    if (average && count > 0)
                        v = sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
                    v = std::min(hi, std::max(lo, v));
                    const size_t o = c.nchw ? ((size_t(b) * c.c + ch) * oh + oy) * ow + ox
                                            : ((size_t(b) * oh + oy) * ow + ox) * c.c + ch;
                    out[o] = uint8_t(v);
                }
    return out;
}

void runPool(const PoolCase& c, bool average, uint32_t seed, bool isSigned = false,
             npu::sim::HwConfig hw = {}) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    const uint32_t type = isSigned ? kI8 : kU8;
    const Quant q{0.05f + 0.01f * float(rng() % 10), int(rng() % 256) - (isSigned ? 128 : 0)};
    uint32_t pl = c.pl, pr = c.pr, pt = c.pt, pb = c.pb;
    if (c.implicit) {
        pl = pr = pt = pb = 0;
        auto same = [](uint32_t in, uint32_t s, uint32_t k, uint32_t* p0, uint32_t* p1) {
            const int o = int((in + s - 1) / s), t = std::max(0, (o - 1) * int(s) + int(k) - int(in));
            *p0 = uint32_t(t / 2);
            *p1 = uint32_t(t - t / 2);
        };
        if (c.scheme == 1) {
            same(c.w, c.sx, c.kw, &pl, &pr);
            same(c.h, c.sy, c.kh, &pt, &pb);
        }
    }
    const uint32_t oh = (c.h + pt + pb - c.kh) / c.sy + 1, ow = (c.w + pl + pr - c.kw) / c.sx + 1;
    auto in = randomBytes(rng, size_t(c.n) * c.h * c.w * c.c);
    ModelBuilder mb(h);
    auto dims = [&](uint32_t hh, uint32_t ww) {
        return c.nchw ? std::vector<uint32_t>{c.n, c.c, hh, ww} : std::vector<uint32_t>{c.n, hh, ww, c.c};
    };
    const uint32_t x = mb.input(dims(c.h, c.w), q, type);
    const uint32_t y = mb.output(dims(oh, ow), q, type);
    std::vector<uint32_t> args = {x};
    if (c.implicit) {
        args.push_back(mb.i32(c.scheme));
    } else {
        args.insert(args.end(), {mb.i32(int(c.pl)), mb.i32(int(c.pr)), mb.i32(int(c.pt)), mb.i32(int(c.pb))});
    }
    args.insert(args.end(),
                {mb.i32(int(c.sx)), mb.i32(int(c.sy)), mb.i32(int(c.kw)), mb.i32(int(c.kh)), mb.i32(c.act)});
    if (c.nchw) args.push_back(mb.boolean(true));
    mb.op(average ? kAvgPool : kMaxPool, args, {y});
    const BlobInfo info = prepareClaimed(h, mb.build());
    int lo, hi;
    refActRange(c.act, q.scale, q.zp, &lo, &hi, isSigned);
    const auto expect = refPool(c, average, in, isSigned, pl, pt, oh, ow, lo, hi);
    Run r = execute(h, info, {in}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
    CHECK(r.result.deviceCycles > 0);
}

const PoolCase kPoolCases[] = {
    {1, 6, 7, 3, 2, 2, 2, 2, false, 0, 0, 0, 0, 0, 0, false},
    {2, 5, 5, 4, 3, 3, 1, 1, false, 0, 1, 1, 1, 1, 1, false},
    {1, 9, 8, 5, 3, 2, 2, 3, true, 1, 0, 0, 0, 0, 3, false},
    {1, 9, 8, 5, 3, 3, 2, 2, true, 2, 0, 0, 0, 0, 2, false},
    {1, 7, 7, 16, 7, 7, 1, 1, true, 2, 0, 0, 0, 0, 0, false},  // global pool
    {2, 6, 5, 3, 2, 3, 1, 2, false, 0, 1, 2, 1, 0, 1, true},
    {1, 4, 4, 2, 4, 4, 3, 3, true, 1, 0, 0, 0, 0, 0, false},
};

// The reference's float path for the table-mapped operations (reference/src/ops/activation.cpp,
// operation_context.cpp loadReal / storeReal, quant_utils.h quantizeValue).
uint8_t refMapped(uint32_t op, uint8_t b, Quant qi, Quant qo, bool isSigned) {
    const float x = qi.scale * float(valueOf(b, isSigned) - qi.zp);
    float y = x;
    switch (op) {
        case kRelu:
            y = std::max(x, 0.0f);
            break;
        case kRelu1:
            y = std::clamp(x, -1.0f, 1.0f);
            break;
        case kRelu6:
            y = std::clamp(x, 0.0f, 6.0f);
            break;
        case kLogistic:
            y = 1.0f / (1.0f + std::exp(-x));
            break;
        case kTanh:
            y = std::tanh(x);
            break;
        case kHardSwish:
            y = x * std::clamp(x + 3.0f, 0.0f, 6.0f) / 6.0f;
            break;
        default:
            break;
    }
    const float lo = isSigned ? -128.0f : 0.0f, hi = isSigned ? 127.0f : 255.0f;
    const float v = std::round(y / qo.scale) + float(qo.zp);
    return uint8_t(int(!(v >= lo) ? lo : (v > hi ? hi : v)));
}

void runMapped(uint32_t op, std::vector<uint32_t> dims, Quant qi, Quant qo, bool isSigned, uint32_t seed,
               npu::sim::HwConfig hw = {}) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    size_t n = 1;
    for (uint32_t d : dims) n *= d;
    auto in = randomBytes(rng, n);
    for (size_t i = 0; i < 256 && i < n; ++i) in[i] = uint8_t(i);  // every table entry is read
    ModelBuilder mb(h);
    const uint32_t type = isSigned ? kI8 : kU8;
    const uint32_t x = mb.input(dims, qi, type), y = mb.output(dims, qo, type);
    mb.op(op, {x}, {y});
    const BlobInfo info = prepareClaimed(h, mb.build());
    std::vector<uint8_t> expect(n);
    for (size_t i = 0; i < n; ++i) expect[i] = refMapped(op, in[i], qi, qo, isSigned);
    Run r = execute(h, info, {in}, {n});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
}

// Prepare must fail with a message naming the operation and containing `why`.
// SUB / MUL / MAXIMUM / MINIMUM of a (dims da) and b (dims db, broadcast), the TFLite formulas.
int refBinary(uint32_t op, int x, int y, Quant qa, Quant qb, Quant qo) {
    if (op == kMaximum || op == kMinimum) {  // the reference: compare dequantized, requantize
        const float rx = qa.scale * float(x - qa.zp), ry = qb.scale * float(y - qb.zp);
        return int(std::round((op == kMaximum ? std::max(rx, ry) : std::min(rx, ry)) / qo.scale) +
                   float(qo.zp));
    }
    int32_t m;
    int s;
    if (op == kMul) {
        refQuantizeMultiplier(double(qa.scale) * qb.scale / qo.scale, &m, &s);
        return refMbqm((x - qa.zp) * (y - qb.zp), m, s) + qo.zp;
    }
    const int ls = 20;
    const double twiceMax = 2 * std::max(qa.scale, qb.scale);
    int32_t m1, m2;
    int s1, s2;
    refQuantizeMultiplier(qa.scale / twiceMax, &m1, &s1);
    refQuantizeMultiplier(qb.scale / twiceMax, &m2, &s2);
    refQuantizeMultiplier(twiceMax / ((1 << ls) * double(qo.scale)), &m, &s);
    const int32_t diff = refMbqm((x - qa.zp) * (1 << ls), m1, s1) - refMbqm((y - qb.zp) * (1 << ls), m2, s2);
    return refMbqm(diff, m, s) + qo.zp;
}

void runBinary(uint32_t op, std::vector<uint32_t> da, std::vector<uint32_t> db, Quant qa, Quant qb, Quant qo,
               int act, bool isSigned, uint32_t seed, npu::sim::HwConfig hw = {}) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    const size_t rank = std::max(da.size(), db.size());
    std::vector<uint32_t> pa(4 - da.size(), 1), pb(4 - db.size(), 1), po(4);
    pa.insert(pa.end(), da.begin(), da.end());
    pb.insert(pb.end(), db.begin(), db.end());
    for (int i = 0; i < 4; ++i) po[size_t(i)] = std::max(pa[size_t(i)], pb[size_t(i)]);
    const std::vector<uint32_t> outDims(po.end() - long(rank), po.end());
    auto count = [](const std::vector<uint32_t>& d) { return size_t(d[0]) * d[1] * d[2] * d[3]; };
    auto a = randomBytes(rng, count(pa)), b = randomBytes(rng, count(pb));
    ModelBuilder mb(h);
    const uint32_t type = isSigned ? kI8 : kU8;
    const uint32_t x = mb.input(da, qa, type), y = mb.input(db, qb, type), z = mb.output(outDims, qo, type);
    std::vector<uint32_t> args = {x, y};
    if (op == kMul || op == kSub) args.push_back(mb.i32(act));
    mb.op(op, args, {z});
    const BlobInfo info = prepareClaimed(h, mb.build());
    int lo = isSigned ? -128 : 0, hi = isSigned ? 127 : 255;
    if (op == kMul || op == kSub) refActRange(act, qo.scale, qo.zp, &lo, &hi, isSigned);
    std::vector<uint8_t> expect(count(po));
    for (uint32_t i0 = 0; i0 < po[0]; ++i0)
        for (uint32_t i1 = 0; i1 < po[1]; ++i1)
            for (uint32_t i2 = 0; i2 < po[2]; ++i2)
                for (uint32_t i3 = 0; i3 < po[3]; ++i3) {
                    auto idx = [&](const std::vector<uint32_t>& d) {
                        return (((i0 % d[0]) * d[1] + i1 % d[1]) * d[2] + i2 % d[2]) * d[3] + i3 % d[3];
                    };
                    const int v = refBinary(op, valueOf(a[idx(pa)], isSigned), valueOf(b[idx(pb)], isSigned),
                                            qa, qb, qo);
                    expect[idx(po)] = uint8_t(std::min(hi, std::max(lo, v)));
                }
    Run r = execute(h, info, {a, b}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
}

}  // namespace

TEST_CASE("SUB, MUL, MAXIMUM and MINIMUM bit-exact with broadcasting, activations, uint8 and int8") {
    uint32_t seed = 900;
    for (bool isSigned : {false, true}) {
        const int zs = isSigned ? -128 : 0;
        for (uint32_t op : {kSub, kMul}) {
            INFO("operation " << op << (isSigned ? " int8" : " uint8"));
            runBinary(op, {2, 3, 4, 5}, {2, 3, 4, 5}, {0.1f, 120 + zs}, {0.2f, 7 + zs}, {0.3f, 130 + zs}, 0,
                      isSigned, seed++);
            runBinary(op, {2, 3, 4, 5}, {5}, {0.05f, 3 + zs}, {0.05f, 250 + zs}, {0.02f, 128 + zs}, 1,
                      isSigned, seed++);
            runBinary(op, {4, 1}, {4, 5}, {0.5f, 128 + zs}, {0.25f, 128 + zs}, {0.01f, 0 + zs}, 3, isSigned,
                      seed++);
            runBinary(op, {1, 3, 1, 5}, {2, 1, 4, 1}, {0.02f, 60 + zs}, {0.08f, 90 + zs}, {0.5f, 200 + zs}, 2,
                      isSigned, seed++);
        }
        for (uint32_t op : {kMaximum, kMinimum}) {
            INFO("operation " << op << (isSigned ? " int8" : " uint8"));
            const Quant q{0.1f, 77 + zs};
            runBinary(op, {2, 3, 4, 5}, {2, 3, 4, 5}, q, q, q, 0, isSigned, seed++);
            runBinary(op, {1, 3, 1, 5}, {2, 1, 4, 1}, q, q, q, 0, isSigned, seed++);
            runBinary(op, {7}, {1}, q, q, q, 0, isSigned, seed++);
        }
    }
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;
    runBinary(kMul, {3, 40, 50}, {40, 1}, {0.1f, 5}, {0.1f, 250}, {0.4f, 128}, 1, false, seed++, hw);
    runBinary(kMaximum, {2, 3000}, {1, 3000}, {0.1f, 5}, {0.1f, 5}, {0.1f, 5}, 0, true, seed++, hw);
}

TEST_CASE("MAXIMUM and MINIMUM with inputs quantized differently from the output requantize through tables") {
    uint32_t seed = 950;
    for (bool isSigned : {false, true}) {
        const int zs = isSigned ? -128 : 0;
        for (uint32_t op : {kMaximum, kMinimum}) {
            INFO("operation " << op << (isSigned ? " int8" : " uint8"));
            runBinary(op, {2, 3, 4, 5}, {2, 3, 4, 5}, {0.5f, 100 + zs}, {1.0f, 28 + zs}, {2.0f, 80 + zs}, 0,
                      isSigned, seed++);
            runBinary(op, {1, 3, 1, 5}, {2, 1, 4, 1}, {0.1f, 77 + zs}, {0.1f, 77 + zs}, {0.3f, 7 + zs}, 0,
                      isSigned, seed++);
            runBinary(op, {7}, {1}, {0.02f, 3 + zs}, {0.5f, 128 + zs}, {0.02f, 3 + zs}, 0, isSigned, seed++);
        }
    }
}

TEST_CASE("MAX_POOL_2D and AVERAGE_POOL_2D bit-exact: paddings, strides, filters, NCHW, activations") {
    uint32_t seed = 100;
    for (const PoolCase& c : kPoolCases) {
        for (bool average : {false, true}) {
            INFO("case " << seed << (average ? " average" : " max"));
            runPool(c, average, seed++);
        }
    }
}

TEST_CASE("pooling with TENSOR_QUANT8_ASYMM_SIGNED, bit-exact") {
    uint32_t seed = 200;
    for (const PoolCase& c : kPoolCases) {
        for (bool average : {false, true}) {
            INFO("case " << seed << (average ? " average" : " max"));
            runPool(c, average, seed++, true);
        }
    }
}

TEST_CASE("pooling tiles rows and channels that do not divide the shape on a small scratchpad") {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;
    runPool({1, 23, 17, 13, 3, 3, 2, 2, true, 1, 0, 0, 0, 0, 1, false}, false, 300, false, hw);
    runPool({2, 23, 17, 13, 3, 3, 2, 2, true, 1, 0, 0, 0, 0, 0, false}, true, 301, true, hw);
    runPool({1, 19, 21, 150, 2, 2, 1, 1, false, 0, 0, 1, 0, 1, 3, false}, true, 302, false, hw);
    runPool({1, 10, 9, 70, 3, 3, 2, 2, true, 2, 0, 0, 0, 0, 0, true}, false, 303, false, hw);
}

TEST_CASE("pooling windows wholly in the padding give the reference's empty-window value") {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;  // one-row tiles: whole tiles lie in the top / bottom padding
    runPool({1, 4, 10, 100, 1, 2, 1, 1, false, 0, 2, 3, 2, 3, 0, false}, false, 1100, false, hw);
    runPool({1, 4, 10, 100, 1, 2, 1, 1, false, 0, 2, 3, 2, 3, 0, false}, true, 1101, false, hw);
    runPool({1, 4, 10, 100, 1, 2, 1, 1, false, 0, 2, 3, 2, 3, 0, false}, true, 1102, true, hw);
    runPool({2, 5, 6, 3, 2, 1, 2, 3, false, 0, 1, 2, 3, 4, 1, true}, false, 1103, true,
            hw);  // RELU: min >= 0
    runPool({2, 5, 6, 3, 2, 1, 2, 3, false, 0, 1, 2, 3, 4, 0, false}, true, 1104, true);
}

TEST_CASE("pooling refusals name the operation and the limit") {
    SECTION("a window wholly in the padding of an int8 MAX_POOL_2D without activation") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 4, 4, 2}, {0.5f, 10}, kI8),
                       y = mb.output({1, 7, 4, 2}, {0.5f, 10}, kI8);
        mb.op(kMaxPool,
              {x, mb.i32(0), mb.i32(0), mb.i32(2), mb.i32(2), mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(2),
               mb.i32(0)},
              {y});
        expectRefused(h, mb, "MAX_POOL_2D", "clamp minimum -128 is negative");
    }
    SECTION("output quantization differs from the input's") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 4, 4, 2}, {0.5f, 10}), y = mb.output({1, 2, 2, 2}, {0.25f, 10});
        mb.op(kAvgPool, {x, mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(0)}, {y});
        expectRefused(h, mb, "AVERAGE_POOL_2D", "does not requantize");
    }
}

TEST_CASE(
    "RELU, RELU1, RELU6, LOGISTIC, TANH and HARD_SWISH through a table, bit-exact with the float path") {
    uint32_t seed = 400;
    for (uint32_t op : {kRelu, kRelu1, kRelu6, kLogistic, kTanh, kHardSwish}) {
        for (bool isSigned : {false, true}) {
            INFO("operation " << op << (isSigned ? " int8" : " uint8"));
            const int shift = isSigned ? -128 : 0;
            runMapped(op, {2, 8, 8, 3}, {0.05f, 128 + shift}, {0.05f, 128 + shift}, isSigned, seed++);
            runMapped(op, {300}, {0.031f, 100 + shift}, {1.0f / 256, 0 + shift}, isSigned, seed++);
            runMapped(op, {5, 7}, {0.1f, 10 + shift}, {0.02f, 200 + shift}, isSigned, seed++);
        }
    }
}

TEST_CASE("table-mapped operations tile a tensor larger than the scratchpad") {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;
    runMapped(kRelu6, {3, 37, 41, 5}, {0.04f, 120}, {0.03f, 2}, false, 500, hw);
    runMapped(kLogistic, {20000}, {0.07f, -3}, {1.0f / 256, -128}, true, 501, hw);
}

TEST_CASE("RESHAPE and SQUEEZE copy the bytes; CONCATENATION places and requantizes") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(600);
    const Quant q{0.1f, 7};
    auto a = randomBytes(rng, 2 * 3 * 1 * 4), b = randomBytes(rng, 2 * 3 * 1 * 5),
         c = randomBytes(rng, 2 * 3 * 1 * 2);
    ModelBuilder mb(h);
    const uint32_t xa = mb.input({2, 3, 1, 4}, q), xb = mb.input({2, 3, 1, 5}, {0.2f, 100});
    const std::vector<int32_t> shape = {6, -1};
    const uint32_t so = mb.constant(kInt32Tensor, {2}, 0, 0, shape.data(), 8);
    const uint32_t ra = mb.output({6, 4}, q);
    mb.op(kReshape, {xa, so}, {ra});
    const uint32_t sq = mb.output({2, 3, 5}, {0.2f, 100});
    const std::vector<int32_t> axes = {2};
    mb.op(kSqueeze, {xb, mb.constant(kInt32Tensor, {1}, 0, 0, axes.data(), 4)}, {sq});
    // Concatenate a (same quantization), b (requantized) and a constant along axis 3.
    const uint32_t xc = mb.constant(kU8, {2, 3, 1, 2}, 0.1f, 7, c.data(), c.size());
    const uint32_t cat = mb.output({2, 3, 1, 11}, q);
    mb.op(kConcat, {xa, xb, xc, mb.i32(-1)}, {cat});
    const BlobInfo info = prepareClaimed(h, mb.build());
    std::vector<uint8_t> expectCat;
    for (size_t row = 0; row < 6; ++row) {
        for (size_t k = 0; k < 4; ++k) expectCat.push_back(a[row * 4 + k]);
        for (size_t k = 0; k < 5; ++k) {
            const float real = 0.2f * float(int(b[row * 5 + k]) - 100);
            const float v = std::round(real / q.scale) + float(q.zp);
            expectCat.push_back(uint8_t(v < 0 ? 0 : (v > 255 ? 255 : v)));
        }
        for (size_t k = 0; k < 2; ++k) expectCat.push_back(c[row * 2 + k]);
    }
    Run r = execute(h, info, {a, b}, {a.size(), b.size(), expectCat.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == a);
    CHECK(r.outputs[1] == b);
    CHECK(r.outputs[2] == expectCat);
}

TEST_CASE("CONCATENATION along the outer axis of tensors larger than the scratchpad") {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(700);
    const Quant q{0.1f, 7};
    auto a = randomBytes(rng, 3 * 50 * 61), b = randomBytes(rng, 2 * 50 * 61);
    ModelBuilder mb(h);
    const uint32_t xa = mb.input({3, 50, 61}, q), xb = mb.input({2, 50, 61}, q);
    const uint32_t y = mb.output({5, 50, 61}, q);
    mb.op(kConcat, {xa, xb, mb.i32(0)}, {y});
    const BlobInfo info = prepareClaimed(h, mb.build());
    std::vector<uint8_t> expect(a.size() + b.size());
    std::copy(a.begin(), a.end(), expect.begin());
    std::copy(b.begin(), b.end(), expect.begin() + long(a.size()));
    Run r = execute(h, info, {a, b}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
}

TEST_CASE("copy and table refusals name the operation and the rule") {
    SECTION("RESHAPE to a shape of another element count") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const std::vector<int32_t> shape = {5, 5};
        const uint32_t x = mb.input({2, 12}, {0.5f, 1}), y = mb.output({5, 5}, {0.5f, 1});
        mb.op(kReshape, {x, mb.constant(kInt32Tensor, {2}, 0, 0, shape.data(), 8)}, {y});
        expectRefused(h, mb, "RESHAPE", "shape has 25 elements, the input 24");
    }
    SECTION("CONCATENATION of more tensors than the NPU takes") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({1, 2}, {0.5f, 1});
        std::vector<uint32_t> args(17, x);
        args.push_back(mb.i32(1));
        mb.op(kConcat, args, {mb.output({1, 34}, {0.5f, 1})});
        expectRefused(h, mb, "CONCATENATION", "NPU limit 16");
    }
    SECTION("RELU with another output shape") {
        Harness h;
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        const uint32_t x = mb.input({2, 12}, {0.5f, 1});
        mb.op(kRelu, {x}, {mb.output({24}, {0.5f, 1})});
        expectRefused(h, mb, "RELU", "output shape differs");
    }
}

TEST_CASE(
    "a chain CONV_2D -> MAX_POOL_2D -> RELU6 -> RESHAPE through temporaries, one profile per operation") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(800);
    const Quant q{0.1f, 128};
    auto in = randomBytes(rng, 1 * 6 * 6 * 2);
    std::vector<uint8_t> f(4 * 1 * 1 * 2);
    f = {129, 128, 128, 129, 130, 128, 128, 126};  // filter - 128: identity-like 1x1 weights
    const std::vector<int32_t> bias(4, 0), shape = {1, -1};
    ModelBuilder mb(h);
    const uint32_t x = mb.input({1, 6, 6, 2}, q);
    const uint32_t fo = mb.constant(kU8, {4, 1, 1, 2}, 1.0f, 128, f.data(), f.size());
    const uint32_t bo = mb.constant(kInt32Tensor, {4}, 0.1f, 0, bias.data(), 16);
    const uint32_t t1 = mb.temp({1, 6, 6, 4}, {0.2f, 128}), t2 = mb.temp({1, 3, 3, 4}, {0.2f, 128});
    const uint32_t t3 = mb.temp({1, 3, 3, 4}, {0.05f, 0}), y = mb.output({1, 36}, {0.05f, 0});
    mb.op(kConv, {x, fo, bo, mb.i32(2), mb.i32(1), mb.i32(1), mb.i32(0)}, {t1});
    mb.op(kMaxPool, {t1, mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(0)}, {t2});
    mb.op(kRelu6, {t2}, {t3});
    mb.op(kReshape, {t3, mb.constant(kInt32Tensor, {2}, 0, 0, shape.data(), 8)}, {y});
    const BlobInfo info = prepareClaimed(h, mb.build());
    // Expected: conv (MBQM of acc with multiplier 0.1 * 1 / 0.2), pool, table, copy.
    int32_t m;
    int s;
    refQuantizeMultiplier(0.1 * 1.0 / 0.2, &m, &s);
    std::vector<uint8_t> conv(6 * 6 * 4), pooled(3 * 3 * 4), expect(36);
    for (size_t p = 0; p < 36; ++p)
        for (size_t co = 0; co < 4; ++co) {
            int32_t acc = 0;
            for (size_t ci = 0; ci < 2; ++ci)
                acc += (int(in[p * 2 + ci]) - 128) * (int(f[co * 2 + ci]) - 128);
            conv[p * 4 + co] = uint8_t(std::clamp(refMbqm(acc, m, s) + 128, 0, 255));
        }
    for (size_t oy = 0; oy < 3; ++oy)
        for (size_t ox = 0; ox < 3; ++ox)
            for (size_t co = 0; co < 4; ++co) {
                uint8_t best = 0;
                for (size_t ky = 0; ky < 2; ++ky)
                    for (size_t kx = 0; kx < 2; ++kx)
                        best = std::max(best, conv[((oy * 2 + ky) * 6 + ox * 2 + kx) * 4 + co]);
                pooled[(oy * 3 + ox) * 4 + co] = best;
            }
    for (size_t i = 0; i < 36; ++i) expect[i] = refMapped(kRelu6, pooled[i], {0.2f, 128}, {0.05f, 0}, false);
    Run r = execute(h, info, {in}, {36});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
    REQUIRE(r.result.profileCount == 4);
    CHECK(r.result.profile[1].type == kMaxPool);
    CHECK(r.result.profile[2].type == kRelu6);
    CHECK(r.result.profile[3].type == kReshape);
    CHECK(r.result.profile[1].cycles > 0);
    CHECK(r.result.profile[3].cycles > 0);
}

TEST_CASE("RESHAPE and SQUEEZE between temporaries alias the buffer: no commands, same bytes") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(1000);
    auto in = randomBytes(rng, 2 * 3 * 4 * 5);
    const Quant q{0.05f, 100}, qr{0.04f, 30}, qo{1.0f / 256, 0};
    const std::vector<int32_t> flat = {2, -1}, unit = {2, 1, 60}, axes = {1};
    ModelBuilder mb(h);
    const uint32_t x = mb.input({2, 3, 4, 5}, q);
    const uint32_t t0 = mb.temp({2, 60}, q), t1 = mb.temp({2, 60}, qr), t2 = mb.temp({2, 1, 60}, qr);
    const uint32_t t3 = mb.temp({2, 60}, qr), y = mb.output({2, 60}, qo);
    mb.op(kReshape, {x, mb.constant(kInt32Tensor, {2}, 0, 0, flat.data(), 8)}, {t0});  // aliases the input
    mb.op(kRelu, {t0}, {t1});
    mb.op(kReshape, {t1, mb.constant(kInt32Tensor, {3}, 0, 0, unit.data(), 12)}, {t2});  // aliases t1
    mb.op(kSqueeze, {t2, mb.constant(kInt32Tensor, {1}, 0, 0, axes.data(), 4)}, {t3});   // aliases t1
    mb.op(kLogistic, {t3}, {y});
    const BlobInfo info = prepareClaimed(h, mb.build());
    std::vector<uint8_t> expect(in.size());
    for (size_t i = 0; i < in.size(); ++i)
        expect[i] = refMapped(kLogistic, refMapped(kRelu, in[i], q, qr, false), qr, qo, false);
    Run r = execute(h, info, {in}, {expect.size()});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
    REQUIRE(r.result.profileCount == 5);
    CHECK(r.result.profile[0].cycles == 0);
    CHECK(r.result.profile[2].cycles == 0);
    CHECK(r.result.profile[3].cycles == 0);
    CHECK(r.result.profile[1].cycles > 0);
    CHECK(r.result.profile[4].cycles > 0);
}

namespace {

constexpr uint32_t kPad = 32, kPadV2 = 69;

// PAD (value: the zero point) or PAD_V2 (value: `v2Value`, saturated to the type).
void runPad(std::vector<uint32_t> dims, std::vector<int32_t> pads, bool v2, int32_t v2Value, bool isSigned,
            uint32_t seed, npu::sim::HwConfig hw = {}) {
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(seed);
    const size_t rank = dims.size();
    std::vector<uint32_t> outDims(rank);
    for (size_t k = 0; k < rank; ++k) outDims[k] = dims[k] + uint32_t(pads[2 * k] + pads[2 * k + 1]);
    size_t n = 1, total = 1;
    for (size_t k = 0; k < rank; ++k) {
        n *= dims[k];
        total *= outDims[k];
    }
    auto in = randomBytes(rng, n);
    const uint32_t type = isSigned ? kI8 : kU8;
    const Quant q{0.3f, isSigned ? -20 : 77};
    ModelBuilder mb(h);
    const uint32_t x = mb.input(dims, q, type), y = mb.output(outDims, q, type);
    std::vector<uint32_t> args = {
        x, mb.constant(kInt32Tensor, {uint32_t(rank), 2}, 0, 0, pads.data(), pads.size() * 4)};
    if (v2) args.push_back(mb.i32(v2Value));
    mb.op(v2 ? kPadV2 : kPad, args, {y});
    const BlobInfo info = prepareClaimed(h, mb.build());
    const int lo = isSigned ? -128 : 0;
    const uint8_t value = uint8_t(v2 ? std::min(std::max(v2Value, lo), lo + 255) : q.zp);
    std::vector<uint8_t> expect(total, value);
    for (size_t i = 0; i < n; ++i) {  // input index -> output index
        size_t rest = i, o = 0, outStride = 1;
        std::vector<size_t> idx(rank);
        for (size_t k = rank; k-- > 0;) {
            idx[k] = rest % dims[k];
            rest /= dims[k];
        }
        for (size_t k = rank; k-- > 0;) {
            o += (idx[k] + size_t(pads[2 * k])) * outStride;
            outStride *= outDims[k];
        }
        expect[o] = in[i];
    }
    Run r = execute(h, info, {in}, {total});
    INFO(r.status.message);
    REQUIRE(r.status.ok());
    CHECK(r.outputs[0] == expect);
}

}  // namespace

TEST_CASE("PAD and PAD_V2 fill and place the input, uint8 and int8, larger than the scratchpad") {
    runPad({1, 3, 4, 2}, {0, 0, 1, 2, 2, 1, 0, 0}, false, 0, false, 1200);
    runPad({2, 3, 4, 2}, {1, 0, 0, 1, 1, 1, 1, 2}, true, 300, false, 1201);
    runPad({5, 7}, {2, 3, 1, 0}, true, -7, true, 1202);
    runPad({9}, {4, 5}, false, 0, true, 1203);
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = 4 << 10;
    runPad({1, 30, 40, 3}, {0, 0, 2, 2, 3, 3, 0, 0}, true, 128, false, 1204, hw);
    runPad({2, 3, 5, 3000}, {0, 1, 1, 0, 0, 2, 5, 7}, false, 0, true, 1205, hw);
}

TEST_CASE("PAD refusals name the operation and the rule") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    const std::vector<int32_t> pads = {0, -1, 1, 1};
    const uint32_t x = mb.input({2, 3}, {0.5f, 1});
    mb.op(kPad, {x, mb.constant(kInt32Tensor, {2, 2}, 0, 0, pads.data(), 16)},
          {mb.output({1, 5}, {0.5f, 1})});
    expectRefused(h, mb, "PAD", "paddings of dimension 0 are negative");
}
