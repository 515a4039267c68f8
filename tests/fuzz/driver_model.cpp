#include "driver_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "npu/hal/model_builder.h"

namespace npu::fuzz {
namespace {

using hal::OperandLifeTime;
using hal::OperandType;
using hal::OperationType;

constexpr size_t kMaxRequestBytes = 1u << 20;  // an edited dimension must not make a huge request

size_t elements(const std::vector<uint32_t>& dims) {
    size_t n = 1;
    for (uint32_t d : dims) n *= d;
    return n;
}

uint32_t outSize(uint32_t in, uint32_t k, uint32_t stride, uint32_t dil, uint32_t padHead, uint32_t padTail) {
    const uint32_t eff = (k - 1) * dil + 1;
    return (in + padHead + padTail - eff) / stride + 1;
}

class Builder {
public:
    explicit Builder(InputReader& in) : in_(in) {}

    int pick(int lo, int hi) { return lo + int(in_.u8() % uint32_t(hi - lo + 1)); }
    bool coin() { return (in_.u8() & 1) != 0; }
    float factor(float lo, float hi) { return lo + (hi - lo) * float(in_.u8()) / 255.0f; }
    void seedData(uint32_t seed) { rng_.seed(seed); }

    uint32_t operand(OperandType type, std::vector<uint32_t> dims, OperandLifeTime lifetime, float scale = 0,
                     int32_t zp = 0) {
        return b_.operand(type, std::move(dims), lifetime, scale, zp);
    }
    uint32_t constant(OperandType type, std::vector<uint32_t> dims, const void* data, size_t size,
                      float scale = 0, int32_t zp = 0) {
        return b_.constantBytes(type, std::move(dims), {static_cast<const std::byte*>(data), size}, scale,
                                zp);
    }
    uint32_t i32(int32_t v) { return b_.scalar(v); }
    uint32_t boolean(bool v) { return b_.boolean(v); }
    uint32_t input(OperandType type, std::vector<uint32_t> dims, float scale, int32_t zp) {
        return b_.input(type, std::move(dims), scale, zp);
    }
    // A new model input or a constant of random bytes (the choice is one input byte).
    uint32_t inputOrConstant(OperandType type, std::vector<uint32_t> dims, float scale, int32_t zp) {
        if (coin()) return input(type, std::move(dims), scale, zp);
        const auto bytes = randomBytes(elements(dims));
        return constant(type, std::move(dims), bytes.data(), bytes.size(), scale, zp);
    }
    uint32_t temp(OperandType type, std::vector<uint32_t> dims, float scale, int32_t zp) {
        return b_.temp(type, std::move(dims), scale, zp);
    }
    void op(OperationType type, std::vector<uint32_t> in, std::vector<uint32_t> out) {
        b_.operation(type, std::move(in), std::move(out));
    }
    std::vector<uint8_t> randomBytes(size_t n) {
        std::vector<uint8_t> b(n);
        for (auto& x : b) x = uint8_t(rng_());
        return b;
    }
    int32_t randomInt(int32_t lo, int32_t hi) { return std::uniform_int_distribution<int32_t>(lo, hi)(rng_); }
    int32_t zeroPoint(OperandType t) {
        const uint8_t b = in_.u8();
        return t == OperandType::TENSOR_QUANT8_ASYMM ? int32_t(b) : int32_t(int8_t(b));
    }
    const hal::Operand& at(uint32_t i) const { return tc_.model.main.operands[i]; }
    hal::Model& model() { return tc_.model; }
    framework::TestCase& testCase() { return tc_; }

private:
    InputReader& in_;
    std::mt19937 rng_;
    framework::TestCase tc_;
    hal::SubgraphBuilder b_{tc_.model, tc_.model.main};
};

// The output scale for a sum of `terms` products: around the typical magnitude, or far smaller
// (a requantization multiplier above 1, saturating outputs).
float outputScale(Builder& b, float productScale, uint32_t terms) {
    if (b.pick(0, 5) == 0) return productScale * b.factor(0.3f, 2.0f);
    return productScale * 40.0f * std::sqrt(float(terms)) * b.factor(0.2f, 3.0f);
}

struct Spatial {
    uint32_t n, h, w, c;
};
Spatial spatialOf(const hal::Operand& o, bool nchw) {
    const auto& d = o.dimensions;
    return nchw ? Spatial{d[0], d[2], d[3], d[1]} : Spatial{d[0], d[1], d[2], d[3]};
}
std::vector<uint32_t> spatialDims(Spatial s, bool nchw) {
    return nchw ? std::vector<uint32_t>{s.n, s.c, s.h, s.w} : std::vector<uint32_t>{s.n, s.h, s.w, s.c};
}

// Implicit (SAME / VALID) or explicit padding arguments for a window of kh x kw; sets the output size.
void addPadding(Builder& b, std::vector<uint32_t>& args, Spatial in, uint32_t kh, uint32_t kw, uint32_t sy,
                uint32_t sx, uint32_t dy, uint32_t dx, Spatial* out) {
    if (b.coin()) {
        const int scheme = b.pick(1, 2);
        out->h = scheme == 1 ? (in.h + sy - 1) / sy : (in.h - ((kh - 1) * dy + 1)) / sy + 1;
        out->w = scheme == 1 ? (in.w + sx - 1) / sx : (in.w - ((kw - 1) * dx + 1)) / sx + 1;
        args.push_back(b.i32(scheme));
        return;
    }
    const uint32_t pl = uint32_t(b.pick(0, 2)), pr = uint32_t(b.pick(0, 2)), pt = uint32_t(b.pick(0, 2)),
                   pb = uint32_t(b.pick(0, 2));
    out->h = outSize(in.h, kh, sy, dy, pt, pb);
    out->w = outSize(in.w, kw, sx, dx, pl, pr);
    args.insert(args.end(), {b.i32(int(pl)), b.i32(int(pr)), b.i32(int(pt)), b.i32(int(pb))});
}

uint32_t addConvolution(Builder& b, uint32_t x, bool nchw, bool depthwise) {
    const hal::Operand in = b.at(x);
    const Spatial s = spatialOf(in, nchw);
    const uint32_t multiplier = depthwise ? uint32_t(b.pick(1, 3)) : 1;
    const uint32_t cout = depthwise ? s.c * multiplier : uint32_t(b.pick(1, 9));
    const uint32_t kh = uint32_t(b.pick(1, int(std::min<uint32_t>(4, s.h)))),
                   kw = uint32_t(b.pick(1, int(std::min<uint32_t>(4, s.w))));
    const uint32_t sx = uint32_t(b.pick(1, 3)), sy = uint32_t(b.pick(1, 3));
    uint32_t dx = uint32_t(b.pick(1, 2)), dy = dx;
    if ((kw - 1) * dx + 1 > s.w || (kh - 1) * dy + 1 > s.h) dx = dy = 1;
    const bool perChannel = b.pick(0, 2) == 0;
    const float filterScale = b.factor(0.002f, 0.05f);
    const std::vector<uint32_t> filterDims =
        depthwise ? std::vector<uint32_t>{1, kh, kw, cout} : std::vector<uint32_t>{cout, kh, kw, s.c};
    const auto filterBytes = b.randomBytes(elements(filterDims));
    const OperandType filterType = perChannel ? OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL : in.type;
    const uint32_t f = b.constant(filterType, filterDims, filterBytes.data(), filterBytes.size(),
                                  perChannel ? 0.0f : filterScale, perChannel ? 0 : b.zeroPoint(in.type));
    if (perChannel) {
        hal::SymmPerChannelQuantParams q;
        for (uint32_t c = 0; c < cout; ++c) q.scales.push_back(filterScale * b.factor(0.25f, 4.0f));
        q.channelDim = depthwise ? 3 : 0;
        b.model().main.operands[f].channelQuant = q;
    }
    std::vector<int32_t> bias(cout);
    for (auto& v : bias) v = b.randomInt(-3000, 3000);
    const uint32_t bo = b.constant(OperandType::TENSOR_INT32, {cout}, bias.data(), bias.size() * 4,
                                   perChannel ? 0.0f : in.scale * filterScale, 0);
    std::vector<uint32_t> args = {x, f, bo};
    Spatial out{s.n, 0, 0, cout};
    addPadding(b, args, s, kh, kw, sy, sx, dy, dx, &out);
    args.insert(args.end(), {b.i32(int(sx)), b.i32(int(sy))});
    if (depthwise) args.push_back(b.i32(int(multiplier)));
    args.push_back(b.i32(b.pick(0, 3)));  // fused activation
    if (nchw || dx != 1 || b.coin()) {
        args.push_back(b.boolean(nchw));
        if (dx != 1 || b.coin()) args.insert(args.end(), {b.i32(int(dx)), b.i32(int(dy))});
    }
    const float os = outputScale(b, in.scale * filterScale, kh * kw * (depthwise ? 1 : s.c));
    const uint32_t y = b.temp(in.type, spatialDims(out, nchw), os, b.zeroPoint(in.type));
    b.op(depthwise ? OperationType::DEPTHWISE_CONV_2D : OperationType::CONV_2D, args, {y});
    return y;
}

uint32_t addFullyConnected(Builder& b, uint32_t x) {
    const hal::Operand in = b.at(x);
    const size_t total = elements(in.dimensions);
    std::vector<uint32_t> divisors;  // the input flattens to [batch, inputSize]
    for (uint32_t d = 1; d <= total && d <= 64; ++d) {
        if (total % d == 0) divisors.push_back(d);
    }
    const uint32_t inputSize = divisors[size_t(b.pick(0, int(divisors.size()) - 1))];
    const uint32_t batch = uint32_t(total / inputSize), units = uint32_t(b.pick(1, 12));
    const float ws = b.factor(0.002f, 0.05f);
    const auto weights = b.randomBytes(size_t(units) * inputSize);
    const uint32_t wo =
        b.constant(in.type, {units, inputSize}, weights.data(), weights.size(), ws, b.zeroPoint(in.type));
    std::vector<int32_t> bias(units);
    for (auto& v : bias) v = b.randomInt(-3000, 3000);
    const uint32_t bo =
        b.constant(OperandType::TENSOR_INT32, {units}, bias.data(), bias.size() * 4, in.scale * ws, 0);
    const float os = outputScale(b, in.scale * ws, inputSize);
    const uint32_t y = b.temp(in.type, {batch, units}, os, b.zeroPoint(in.type));
    b.op(OperationType::FULLY_CONNECTED, {x, wo, bo, b.i32(b.pick(0, 3))}, {y});
    return y;
}

// AVERAGE_POOL_2D or MAX_POOL_2D; pooling keeps the input's quantization.
uint32_t addPool(Builder& b, uint32_t x, bool nchw) {
    const hal::Operand in = b.at(x);
    const Spatial s = spatialOf(in, nchw);
    const uint32_t kh = uint32_t(b.pick(1, int(std::min<uint32_t>(4, s.h)))),
                   kw = uint32_t(b.pick(1, int(std::min<uint32_t>(4, s.w))));
    const uint32_t sx = uint32_t(b.pick(1, 3)), sy = uint32_t(b.pick(1, 3));
    std::vector<uint32_t> args = {x};
    Spatial out = s;
    addPadding(b, args, s, kh, kw, sy, sx, 1, 1, &out);
    args.insert(args.end(),
                {b.i32(int(sx)), b.i32(int(sy)), b.i32(int(kw)), b.i32(int(kh)), b.i32(b.pick(0, 3))});
    if (nchw || b.coin()) args.push_back(b.boolean(nchw));
    const uint32_t y = b.temp(in.type, spatialDims(out, nchw), in.scale, in.zeroPoint);
    b.op(b.coin() ? OperationType::MAX_POOL_2D : OperationType::AVERAGE_POOL_2D, args, {y});
    return y;
}

uint32_t addUnary(Builder& b, uint32_t x) {
    static const OperationType kOps[] = {OperationType::RELU,  OperationType::RELU1,
                                         OperationType::RELU6, OperationType::LOGISTIC,
                                         OperationType::TANH,  OperationType::HARD_SWISH};
    const OperationType type = kOps[b.pick(0, 5)];
    const hal::Operand in = b.at(x);
    const float scale = b.coin() ? in.scale : in.scale * b.factor(0.3f, 3.0f);
    const uint32_t y = b.temp(in.type, in.dimensions, scale, b.zeroPoint(in.type));
    b.op(type, {x}, {y});
    return y;
}

// ADD, SUB, MUL, MAXIMUM or MINIMUM with a broadcastable new input or constant.
uint32_t addBinary(Builder& b, uint32_t x) {
    static const OperationType kOps[] = {OperationType::ADD, OperationType::SUB, OperationType::MUL,
                                         OperationType::MAXIMUM, OperationType::MINIMUM};
    const OperationType type = kOps[b.pick(0, 4)];
    const bool minMax = type == OperationType::MAXIMUM || type == OperationType::MINIMUM;
    const bool sameQuant = minMax && b.coin();
    const hal::Operand in = b.at(x);
    std::vector<uint32_t> other = in.dimensions;
    other.erase(other.begin(), other.begin() + b.pick(0, int(other.size()) - 1));
    for (auto& d : other) {
        if (b.pick(0, 2) == 0) d = 1;
    }
    const float scale = sameQuant ? in.scale : in.scale * b.factor(0.3f, 3.0f);
    const int32_t zp = sameQuant ? in.zeroPoint : b.zeroPoint(in.type);
    const uint32_t z = b.inputOrConstant(in.type, other, scale, zp);
    float os = std::max(in.scale, scale) * b.factor(0.5f, 3.0f);
    if (type == OperationType::MUL) os = in.scale * scale * b.factor(20.0f, 200.0f);
    const uint32_t y = b.temp(in.type, in.dimensions, sameQuant ? in.scale : os,
                              sameQuant ? in.zeroPoint : b.zeroPoint(in.type));
    const bool swap = b.coin();
    std::vector<uint32_t> args = {swap ? z : x, swap ? x : z};
    if (!minMax) args.push_back(b.i32(b.pick(0, 3)));
    b.op(type, args, {y});
    return y;
}

uint32_t addConcat(Builder& b, uint32_t x) {
    const hal::Operand in = b.at(x);
    const int rank = int(in.dimensions.size());
    const int axis = b.pick(0, rank - 1);
    std::vector<uint32_t> other = in.dimensions, outDims = in.dimensions;
    other[size_t(axis)] = uint32_t(b.pick(1, 4));
    outDims[size_t(axis)] += other[size_t(axis)];
    const bool sameQuant = b.coin();
    const float scale = sameQuant ? in.scale : in.scale * b.factor(0.5f, 2.0f);
    const int32_t zp = sameQuant ? in.zeroPoint : b.zeroPoint(in.type);
    const uint32_t z = b.inputOrConstant(in.type, other, scale, zp);
    const bool outSame = b.coin();
    const uint32_t y = b.temp(in.type, outDims, outSame ? in.scale : scale, outSame ? in.zeroPoint : zp);
    const bool swap = b.coin();
    b.op(OperationType::CONCATENATION, {swap ? z : x, swap ? x : z, b.i32(b.coin() ? axis : axis - rank)},
         {y});
    return y;
}

// RESHAPE to [d0, rest] (with a -1 or not), or to [d0, 1, rest] followed by a SQUEEZE of axis 1.
uint32_t addReshape(Builder& b, uint32_t x) {
    const hal::Operand in = b.at(x);
    const uint32_t total = uint32_t(elements(in.dimensions)), d0 = in.dimensions[0];
    const std::vector<uint32_t> dims = {d0, total / d0};
    std::vector<int32_t> shape = {int32_t(d0), b.coin() ? -1 : int32_t(total / d0)};
    const bool squeeze = b.coin();
    if (squeeze) shape.insert(shape.begin() + 1, 1);
    const uint32_t s =
        b.constant(OperandType::TENSOR_INT32, {uint32_t(shape.size())}, shape.data(), shape.size() * 4);
    std::vector<uint32_t> reshaped = dims;
    if (squeeze) reshaped.insert(reshaped.begin() + 1, 1);
    const uint32_t y = b.temp(in.type, reshaped, in.scale, in.zeroPoint);
    b.op(OperationType::RESHAPE, {x, s}, {y});
    if (!squeeze) return y;
    const int32_t axis = 1;
    const uint32_t z = b.temp(in.type, dims, in.scale, in.zeroPoint);
    b.op(OperationType::SQUEEZE, {y, b.constant(OperandType::TENSOR_INT32, {1}, &axis, 4)}, {z});
    return z;
}

// PAD (with the zero point) or PAD_V2 (with a value, saturated) of 0..2 elements per side.
uint32_t addPad(Builder& b, uint32_t x) {
    const hal::Operand in = b.at(x);
    std::vector<int32_t> pads;
    std::vector<uint32_t> outDims = in.dimensions;
    for (auto& d : outDims) {
        const int32_t head = b.pick(0, 2), tail = b.pick(0, 2);
        pads.insert(pads.end(), {head, tail});
        d += uint32_t(head + tail);
    }
    const uint32_t p =
        b.constant(OperandType::TENSOR_INT32, {uint32_t(outDims.size()), 2}, pads.data(), pads.size() * 4);
    const uint32_t y = b.temp(in.type, outDims, in.scale, in.zeroPoint);
    if (b.coin()) {
        b.op(OperationType::PAD, {x, p}, {y});
    } else {
        b.op(OperationType::PAD_V2, {x, p, b.i32(b.pick(0, 255) * 2 - 300)}, {y});
    }
    return y;
}

// One edit that may make the model invalid (or valid in another way): what validation must catch.
void applyEdit(Builder& b, uint8_t kind, uint8_t index, uint32_t value) {
    auto& g = b.model().main;
    if (g.operands.empty() || g.operations.empty()) return;
    hal::Operand& o = g.operands[index % g.operands.size()];
    hal::Operation& op = g.operations[index % g.operations.size()];
    switch (kind % 12) {
        case 0:
            o.type = OperandType(int32_t(value % 24));
            break;
        case 1:
            if (!o.dimensions.empty()) o.dimensions[value % o.dimensions.size()] = value >> 8;
            break;
        case 2:
            std::memcpy(&o.scale, &value, 4);  // NaN, infinity, negative, denormal
            break;
        case 3:
            o.zeroPoint = int32_t(value);
            break;
        case 4:
            o.lifetime = OperandLifeTime(int32_t(value % 8));
            break;
        case 5:
            if (!op.inputs.empty())
                op.inputs[value % op.inputs.size()] = (value >> 8) % (g.operands.size() + 2);
            break;
        case 6:
            op.outputs[0] = value % (g.operands.size() + 2);
            break;
        case 7:
            op.type = OperationType(int32_t(value % 110));
            break;
        case 8:
            if (!op.inputs.empty()) op.inputs.erase(op.inputs.begin() + long(value % op.inputs.size()));
            break;
        case 9:
            (value & 1 ? g.outputIndexes : g.inputIndexes).push_back((value >> 1) % (g.operands.size() + 1));
            break;
        case 10:
            (value & 1 ? o.location.offset : o.location.length) = value >> 1;
            break;
        default:
            if (value & 1) {
                o.dimensions.push_back(value >> 24);
            } else if (!o.dimensions.empty()) {
                o.dimensions.pop_back();
            }
            break;
    }
}

// Request buffers sized from the model as it is now: inputs of random bytes, outputs of the
// outputs' sizes (capped, so an edited dimension asks for a wrong size rather than a huge one).
void sizeRequest(Builder& b) {
    auto& tc = b.testCase();
    const auto& g = tc.model.main;
    auto bytesOf = [&](uint32_t index) -> size_t {
        if (index >= g.operands.size()) return 1;
        const auto& o = g.operands[index];
        size_t n = hal::elementSize(o.type);
        for (uint32_t d : o.dimensions) {
            if (d != 0 && n > kMaxRequestBytes / d) return kMaxRequestBytes;
            n *= d == 0 ? 1 : d;
        }
        return std::max<size_t>(n, 1);
    };
    for (uint32_t i : g.inputIndexes) tc.inputs.push_back(b.randomBytes(bytesOf(i)));
    for (uint32_t i : g.outputIndexes) {
        tc.expectedOutputs.emplace_back(bytesOf(i));
        tc.expectedOutputDims.push_back(i < g.operands.size() ? g.operands[i].dimensions
                                                              : std::vector<uint32_t>{});
        tc.outputIgnored.push_back(false);
    }
}

}  // namespace

DriverModel buildDriverModel(InputReader& in) {
    Builder b(in);
    const uint8_t flags = in.u8();
    const OperandType type =
        (flags & 1) ? OperandType::TENSOR_QUANT8_ASYMM_SIGNED : OperandType::TENSOR_QUANT8_ASYMM;
    const bool nchw = (flags & 2) != 0;
    const Spatial s{uint32_t(b.pick(1, 2)), uint32_t(b.pick(1, 12)), uint32_t(b.pick(1, 12)),
                    uint32_t(b.pick(1, 8))};
    const float inputScale = b.factor(0.005f, 0.1f);
    uint32_t x = b.input(type, spatialDims(s, nchw), inputScale, b.zeroPoint(type));
    b.seedData(in.u32());
    const int ops = b.pick(1, int(kDriverModelMaxOperations));
    for (int i = 0; i < ops; ++i) {
        const bool spatial = b.at(x).dimensions.size() == 4;
        int kind = b.pick(0, 8);
        if (!spatial && (kind <= 1 || kind == 3)) kind = 4;
        switch (kind) {
            case 0:
            case 1:
                x = addConvolution(b, x, nchw, kind == 1);
                break;
            case 2:
                x = addFullyConnected(b, x);
                break;
            case 3:
                x = addPool(b, x, nchw);
                break;
            case 4:
                x = addUnary(b, x);
                break;
            case 5:
                x = addBinary(b, x);
                break;
            case 6:
                x = addConcat(b, x);
                break;
            case 7:
                x = addReshape(b, x);
                break;
            default:
                x = addPad(b, x);
                break;
        }
    }
    auto& out = b.model().main.operands[x];
    out.lifetime = OperandLifeTime::SUBGRAPH_OUTPUT;
    b.model().main.outputIndexes.push_back(x);
    DriverModel result;
    for (int e = 0; e < (flags >> 6); ++e) {
        const uint8_t kind = in.u8(), index = in.u8();
        applyEdit(b, kind, index, in.u32());
        result.edited = true;
    }
    sizeRequest(b);
    b.testCase().name = "driver_model";
    result.testCase = std::move(b.testCase());
    return result;
}

}  // namespace npu::fuzz
