// The random model generator (random_model.h).
#include "random_model.h"

#include <cmath>

namespace npu::testing {

// Output scale for a sum of `terms` products of the given scales: around the typical magnitude,
// sometimes far smaller (requantization multiplier above 1, saturating outputs).
float outputScale(RandomModel& m, float productScale, uint32_t terms) {
    const float typical = productScale * 40.0f * std::sqrt(float(terms));
    return m.uniform(0, 5) == 0 ? productScale * m.uniformReal(0.3f, 2.0f)
                                : typical * m.uniformReal(0.2f, 3.0f);
}

uint32_t outSize(uint32_t in, uint32_t k, uint32_t stride, uint32_t dil, uint32_t padHead, uint32_t padTail) {
    const uint32_t eff = (k - 1) * dil + 1;
    return (in + padHead + padTail - eff) / stride + 1;
}

// A constant INT32 bias of `count` values in [-3000, 3000].
uint32_t randomBias(RandomModel& m, uint32_t count, float scale) {
    std::vector<int32_t> bias(count);
    for (auto& v : bias) v = m.dataInt(-3000, 3000);
    return m.constantBytes(OperandType::TENSOR_INT32, {count}, bias.data(), bias.size() * 4, scale, 0);
}

// CONV_2D, or DEPTHWISE_CONV_2D with a depth multiplier of 1..3, on `x` (NHWC or NCHW, as `nchw`
// says); returns the output operand.
uint32_t addConvolution(RandomModel& m, uint32_t x, bool nchw, bool depthwise) {
    const hal::Operand in = m.at(x);
    const OperandType type = in.type;
    const uint32_t n = in.dimensions[0];
    const uint32_t h = nchw ? in.dimensions[2] : in.dimensions[1],
                   w = nchw ? in.dimensions[3] : in.dimensions[2];
    const uint32_t cin = nchw ? in.dimensions[1] : in.dimensions[3];
    const uint32_t multiplier = depthwise && m.uniform(0, 2) == 0 ? uint32_t(m.uniform(2, 3)) : 1;
    // A third of the CONV_2Ds are GROUPED_CONV_2D with a group count dividing the input depth.
    uint32_t groups = 1;
    if (!depthwise && m.uniform(0, 2) == 0) groups = uint32_t(m.uniform(1, int(cin)));
    while (cin % groups != 0) --groups;
    const uint32_t cout = depthwise ? cin * multiplier : groups * uint32_t(m.uniform(1, groups > 1 ? 3 : 9));
    const uint32_t kh = uint32_t(m.uniform(1, std::min<int>(4, int(h)))),
                   kw = uint32_t(m.uniform(1, std::min<int>(4, int(w))));
    const uint32_t sx = uint32_t(m.uniform(1, 3)), sy = uint32_t(m.uniform(1, 3));
    uint32_t dx = 1, dy = 1;
    if (m.uniform(0, 3) == 0 && groups == 1) {
        dx = uint32_t(m.uniform(1, 2));
        dy = uint32_t(m.uniform(1, 2));
        if ((kw - 1) * dx + 1 > w) dx = 1;
        if ((kh - 1) * dy + 1 > h) dy = 1;
    }
    const bool perChannel = m.uniform(0, 2) == 0;
    const float filterScale = m.uniformReal(0.002f, 0.05f);
    std::vector<float> channelScales;
    for (uint32_t c = 0; c < cout; ++c) channelScales.push_back(filterScale * m.uniformReal(0.25f, 4.0f));
    const OperandType filterType = perChannel ? OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL : type;
    const int32_t filterZp = perChannel ? 0 : m.zeroPoint(type);
    // CONV_2D filters are [cout, kh, kw, cin], depthwise ones [1, kh, kw, cout].
    const std::vector<uint32_t> filterDims = depthwise ? std::vector<uint32_t>{1, kh, kw, cout}
                                                       : std::vector<uint32_t>{cout, kh, kw, cin / groups};
    auto filterBytes = m.randomBytes(RandomModel::elements(filterDims));
    const uint32_t f = m.constantBytes(filterType, filterDims, filterBytes.data(), filterBytes.size(),
                                       perChannel ? 0.0f : filterScale, filterZp);
    if (perChannel) {
        hal::SymmPerChannelQuantParams q;
        q.scales = channelScales;
        q.channelDim = depthwise ? 3 : 0;
        const_cast<hal::Operand&>(m.at(f)).channelQuant = q;
    }
    const uint32_t b = randomBias(m, cout, perChannel ? 0.0f : in.scale * filterScale);

    std::vector<uint32_t> args = {x, f, b};
    uint32_t oh = 0, ow = 0;
    if (m.coin()) {  // implicit padding: 1 SAME, 2 VALID
        const int scheme = m.uniform(1, 2);
        if (scheme == 1) {
            oh = (h + sy - 1) / sy;
            ow = (w + sx - 1) / sx;
        } else {
            oh = (h - ((kh - 1) * dy + 1)) / sy + 1;
            ow = (w - ((kw - 1) * dx + 1)) / sx + 1;
        }
        args.insert(args.end(), {m.i32(scheme), m.i32(int(sx)), m.i32(int(sy))});
    } else {
        const uint32_t pl = uint32_t(m.uniform(0, 2)), pr = uint32_t(m.uniform(0, 2)),
                       pt = uint32_t(m.uniform(0, 2)), pb = uint32_t(m.uniform(0, 2));
        oh = outSize(h, kh, sy, dy, pt, pb);
        ow = outSize(w, kw, sx, dx, pl, pr);
        args.insert(args.end(), {m.i32(int(pl)), m.i32(int(pr)), m.i32(int(pt)), m.i32(int(pb)),
                                 m.i32(int(sx)), m.i32(int(sy))});
    }
    if (depthwise) args.push_back(m.i32(int(multiplier)));
    if (groups > 1) args.push_back(m.i32(int(groups)));
    args.push_back(m.i32(m.uniform(0, 3)));  // fused activation
    if (groups > 1) {
        args.push_back(m.boolean(nchw));  // GROUPED_CONV_2D: the layout is required, no dilation
    } else if (nchw || dx != 1 || dy != 1 || m.coin()) {
        args.push_back(m.boolean(nchw));
        if (dx != 1 || dy != 1 || m.coin()) args.insert(args.end(), {m.i32(int(dx)), m.i32(int(dy))});
    }
    const float os = outputScale(m, in.scale * filterScale, kh * kw * (depthwise ? 1 : cin / groups));
    std::vector<uint32_t> outDims =
        nchw ? std::vector<uint32_t>{n, cout, oh, ow} : std::vector<uint32_t>{n, oh, ow, cout};
    const uint32_t y = m.operand(type, outDims, OperandLifeTime::TEMPORARY_VARIABLE, os, m.zeroPoint(type));
    m.op(depthwise    ? hal::OperationType::DEPTHWISE_CONV_2D
         : groups > 1 ? hal::OperationType::GROUPED_CONV_2D
                      : hal::OperationType::CONV_2D,
         args, {y});
    return y;
}

uint32_t addFullyConnected(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    const OperandType type = in.type;
    const size_t total = RandomModel::elements(in.dimensions);
    // The input flattens to [batch, inputSize] with inputSize dividing the element count.
    std::vector<uint32_t> divisors;
    for (uint32_t d = 1; d <= total && d <= 64; ++d) {
        if (total % d == 0) divisors.push_back(d);
    }
    const uint32_t inputSize = divisors[size_t(m.uniform(0, int(divisors.size()) - 1))];
    const uint32_t batch = uint32_t(total / inputSize), units = uint32_t(m.uniform(1, 12));
    const float ws = m.uniformReal(0.002f, 0.05f);
    auto weights = m.randomBytes(size_t(units) * inputSize);
    const uint32_t wo =
        m.constantBytes(type, {units, inputSize}, weights.data(), weights.size(), ws, m.zeroPoint(type));
    std::vector<int32_t> bias(units);
    for (auto& b : bias) b = m.dataInt(-3000, 3000);
    const uint32_t bo =
        m.constantBytes(OperandType::TENSOR_INT32, {units}, bias.data(), bias.size() * 4, in.scale * ws, 0);
    const float os = outputScale(m, in.scale * ws, inputSize);
    const uint32_t y =
        m.operand(type, {batch, units}, OperandLifeTime::TEMPORARY_VARIABLE, os, m.zeroPoint(type));
    m.op(hal::OperationType::FULLY_CONNECTED, {x, wo, bo, m.i32(m.uniform(0, 3))}, {y});
    return y;
}

// ADD of `x` and a new input or constant whose shape broadcasts against x's.
uint32_t addAdd(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    const OperandType type = in.type;
    std::vector<uint32_t> other = in.dimensions;
    // Drop leading dims and set some dims to 1: numpy broadcasting on either side.
    const size_t drop = size_t(m.uniform(0, int(other.size()) - 1));
    other.erase(other.begin(), other.begin() + long(drop));
    for (auto& d : other) {
        if (m.uniform(0, 2) == 0) d = 1;
    }
    const float scale = in.scale * m.uniformReal(0.3f, 3.0f);
    uint32_t z;
    if (m.coin()) {
        z = m.input(type, other, scale, m.zeroPoint(type));
    } else {
        auto bytes = m.randomBytes(RandomModel::elements(other));
        z = m.constantBytes(type, other, bytes.data(), bytes.size(), scale, m.zeroPoint(type));
    }
    const float os = std::max(in.scale, scale) * m.uniformReal(0.5f, 3.0f);
    const uint32_t y =
        m.operand(type, in.dimensions, OperandLifeTime::TEMPORARY_VARIABLE, os, m.zeroPoint(type));
    const bool swap = m.coin();
    m.op(hal::OperationType::ADD, {swap ? z : x, swap ? x : z, m.i32(m.uniform(0, 3))}, {y});
    return y;
}

// A random uint8 or int8 image input of 1..2 x 1..12 x 1..12 x 1..8, NCHW a quarter of the time.
uint32_t addImageInput(RandomModel& m, bool* isNchw) {
    const OperandType type =
        m.coin() ? OperandType::TENSOR_QUANT8_ASYMM : OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
    const bool nchw = *isNchw = m.uniform(0, 3) == 0;
    return addImageInputOf(m, type, nchw);
}

// An image input of the given type and layout, 1..2 x 1..12 x 1..12 x 1..8.
uint32_t addImageInputOf(RandomModel& m, OperandType type, bool nchw) {
    const uint32_t n = uint32_t(m.uniform(1, 2)), h = uint32_t(m.uniform(1, 12)),
                   w = uint32_t(m.uniform(1, 12)), c = uint32_t(m.uniform(1, 8));
    std::vector<uint32_t> dims = nchw ? std::vector<uint32_t>{n, c, h, w} : std::vector<uint32_t>{n, h, w, c};
    return m.input(type, dims, m.uniformReal(0.005f, 0.1f), m.zeroPoint(type));
}

// TRANSPOSE_CONV_2D with random strides, explicit paddings below the filter or an implicit
// SAME / VALID output shape, per-tensor or per-channel filters.
uint32_t addTransposeConv(RandomModel& m, uint32_t x, bool nchw) {
    const hal::Operand in = m.at(x);
    const OperandType type = in.type;
    const uint32_t n = in.dimensions[0], cin = nchw ? in.dimensions[1] : in.dimensions[3];
    const uint32_t h = nchw ? in.dimensions[2] : in.dimensions[1],
                   w = nchw ? in.dimensions[3] : in.dimensions[2];
    const uint32_t cout = uint32_t(m.uniform(1, 6)), kh = uint32_t(m.uniform(1, 4)),
                   kw = uint32_t(m.uniform(1, 4));
    const uint32_t sx = uint32_t(m.uniform(1, 3)), sy = uint32_t(m.uniform(1, 3));
    const bool perChannel = m.uniform(0, 2) == 0;
    const float filterScale = m.uniformReal(0.002f, 0.05f);
    const std::vector<uint32_t> filterDims = {cout, kh, kw, cin};
    auto filterBytes = m.randomBytes(RandomModel::elements(filterDims));
    const uint32_t f = m.constantBytes(perChannel ? OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL : type,
                                       filterDims, filterBytes.data(), filterBytes.size(),
                                       perChannel ? 0.0f : filterScale, perChannel ? 0 : m.zeroPoint(type));
    if (perChannel) {
        hal::SymmPerChannelQuantParams q;
        for (uint32_t c = 0; c < cout; ++c) q.scales.push_back(filterScale * m.uniformReal(0.25f, 4.0f));
        q.channelDim = 0;
        const_cast<hal::Operand&>(m.at(f)).channelQuant = q;
    }
    const uint32_t b = randomBias(m, cout, perChannel ? 0.0f : in.scale * filterScale);
    std::vector<uint32_t> args = {x, f, b};
    uint32_t oh = 0, ow = 0;
    if (m.coin()) {  // implicit: an output shape near the natural one
        oh = std::max<int>(1, int((h - 1) * sy + kh) - m.uniform(0, 2));
        ow = std::max<int>(1, int((w - 1) * sx + kw) - m.uniform(0, 2));
        const std::vector<int32_t> shape = nchw ? std::vector<int32_t>{int(n), int(cout), int(oh), int(ow)}
                                                : std::vector<int32_t>{int(n), int(oh), int(ow), int(cout)};
        args.push_back(m.constantBytes(OperandType::TENSOR_INT32, {4}, shape.data(), 16));
        args.push_back(m.i32(m.uniform(1, 2)));
    } else {
        const uint32_t pl = uint32_t(m.uniform(0, int(kw) - 1)), pr = uint32_t(m.uniform(0, int(kw) - 1)),
                       pt = uint32_t(m.uniform(0, int(kh) - 1)), pb = uint32_t(m.uniform(0, int(kh) - 1));
        if ((w - 1) * sx + kw <= pl + pr || (h - 1) * sy + kh <= pt + pb) return x;  // no output left
        oh = (h - 1) * sy + kh - pt - pb;
        ow = (w - 1) * sx + kw - pl - pr;
        args.insert(args.end(), {m.i32(int(pl)), m.i32(int(pr)), m.i32(int(pt)), m.i32(int(pb))});
    }
    args.insert(args.end(), {m.i32(int(sx)), m.i32(int(sy)), m.i32(m.uniform(0, 3)), m.boolean(nchw)});
    const float os = outputScale(m, in.scale * filterScale, kh * kw * cin);
    const std::vector<uint32_t> outDims =
        nchw ? std::vector<uint32_t>{n, cout, oh, ow} : std::vector<uint32_t>{n, oh, ow, cout};
    const uint32_t y = m.operand(type, outDims, OperandLifeTime::TEMPORARY_VARIABLE, os, m.zeroPoint(type));
    m.op(hal::OperationType::TRANSPOSE_CONV_2D, args, {y});
    return y;
}

framework::TestCase randomModel(uint32_t seed) {
    RandomModel m(seed);
    bool nchw = false;
    uint32_t x = addImageInput(m, &nchw);
    const int ops = m.uniform(1, 3);
    bool spatial = true;  // still a 4-D tensor in the model's layout
    for (int i = 0; i < ops; ++i) {
        const int kind = spatial ? m.uniform(0, 3) : m.uniform(1, 2);
        if (kind == 0) {
            x = addConvolution(m, x, nchw, false);
        } else if (kind == 3) {
            x = addConvolution(m, x, nchw, true);
        } else if (kind == 1) {
            x = addFullyConnected(m, x);
            spatial = false;
        } else {
            x = addAdd(m, x);
        }
    }
    m.markOutput(x);
    m.testCase().name = "random_" + std::to_string(seed);
    return std::move(m.testCase());
}

// ---- Vector-unit and copy operations (AVERAGE_POOL_2D, MAX_POOL_2D, the table-mapped
// activations, RESHAPE, SQUEEZE, CONCATENATION), chained with convolutions.

// Pooling keeps the input's quantization (the reference requires it).
uint32_t addPool(RandomModel& m, uint32_t x, bool nchw) {
    const hal::Operand in = m.at(x);
    const uint32_t n = in.dimensions[0], c = nchw ? in.dimensions[1] : in.dimensions[3];
    const uint32_t h = nchw ? in.dimensions[2] : in.dimensions[1],
                   w = nchw ? in.dimensions[3] : in.dimensions[2];
    const uint32_t kh = uint32_t(m.uniform(1, std::min<int>(4, int(h)))),
                   kw = uint32_t(m.uniform(1, std::min<int>(4, int(w))));
    const uint32_t sx = uint32_t(m.uniform(1, 3)), sy = uint32_t(m.uniform(1, 3));
    std::vector<uint32_t> args = {x};
    uint32_t oh = 0, ow = 0;
    if (m.coin()) {
        const int scheme = m.uniform(1, 2);
        oh = scheme == 1 ? (h + sy - 1) / sy : (h - kh) / sy + 1;
        ow = scheme == 1 ? (w + sx - 1) / sx : (w - kw) / sx + 1;
        args.push_back(m.i32(scheme));
    } else {
        // Mostly padding smaller than the filter; sometimes as large (windows wholly in the
        // padding).
        const bool small = m.uniform(0, 3) != 0;
        auto pad = [&](uint32_t k) {
            return uint32_t(m.uniform(0, small ? std::min<int>(2, int(k) - 1) : 2));
        };
        const uint32_t pl = pad(kw), pr = pad(kw), pt = pad(kh), pb = pad(kh);
        oh = outSize(h, kh, sy, 1, pt, pb);
        ow = outSize(w, kw, sx, 1, pl, pr);
        args.insert(args.end(), {m.i32(int(pl)), m.i32(int(pr)), m.i32(int(pt)), m.i32(int(pb))});
    }
    args.insert(args.end(),
                {m.i32(int(sx)), m.i32(int(sy)), m.i32(int(kw)), m.i32(int(kh)), m.i32(m.uniform(0, 3))});
    if (nchw || m.coin()) args.push_back(m.boolean(nchw));
    const std::vector<uint32_t> outDims =
        nchw ? std::vector<uint32_t>{n, c, oh, ow} : std::vector<uint32_t>{n, oh, ow, c};
    const uint32_t y =
        m.operand(in.type, outDims, OperandLifeTime::TEMPORARY_VARIABLE, in.scale, in.zeroPoint);
    m.op(m.coin() ? hal::OperationType::MAX_POOL_2D : hal::OperationType::AVERAGE_POOL_2D, args, {y});
    return y;
}

uint32_t addUnary(RandomModel& m, uint32_t x) {
    static const hal::OperationType kOps[] = {hal::OperationType::RELU,  hal::OperationType::RELU1,
                                              hal::OperationType::RELU6, hal::OperationType::LOGISTIC,
                                              hal::OperationType::TANH,  hal::OperationType::HARD_SWISH};
    const hal::OperationType type = kOps[m.uniform(0, 5)];
    const hal::Operand in = m.at(x);
    // LOGISTIC's and TANH's outputs are in (0, 1) / (-1, 1): fine scales make the table matter.
    const bool bounded = type == hal::OperationType::LOGISTIC || type == hal::OperationType::TANH;
    const float scale = m.coin() ? in.scale : (bounded ? 1.0f / 256 : in.scale * m.uniformReal(0.3f, 3.0f));
    const uint32_t y =
        m.operand(in.type, in.dimensions, OperandLifeTime::TEMPORARY_VARIABLE, scale, m.zeroPoint(in.type));
    m.op(type, {x}, {y});
    return y;
}

// CONCATENATION of x with a new input or constant along a random axis; the inputs' and the
// output's quantization agree about half of the time.
uint32_t addConcat(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    const int rank = int(in.dimensions.size());
    const int axis = m.uniform(0, rank - 1);
    std::vector<uint32_t> other = in.dimensions, outDims = in.dimensions;
    other[size_t(axis)] = uint32_t(m.uniform(1, 4));
    outDims[size_t(axis)] += other[size_t(axis)];
    const bool sameQuant = m.coin();
    const float scale = sameQuant ? in.scale : in.scale * m.uniformReal(0.5f, 2.0f);
    const int32_t zp = sameQuant ? in.zeroPoint : m.zeroPoint(in.type);
    uint32_t z;
    if (m.coin()) {
        z = m.input(in.type, other, scale, zp);
    } else {
        auto bytes = m.randomBytes(RandomModel::elements(other));
        z = m.constantBytes(in.type, other, bytes.data(), bytes.size(), scale, zp);
    }
    const bool outSame = m.coin();
    const uint32_t y = m.operand(in.type, outDims, OperandLifeTime::TEMPORARY_VARIABLE,
                                 outSame ? in.scale : scale, outSame ? in.zeroPoint : zp);
    const bool swap = m.coin();
    m.op(hal::OperationType::CONCATENATION,
         {swap ? z : x, swap ? x : z, m.i32(m.coin() ? axis : axis - rank)}, {y});
    return y;
}

// RESHAPE to [d0, rest] (shape given with a -1 half of the time), or SQUEEZE of a tensor with a
// unit dimension added by a RESHAPE first.
uint32_t addReshape(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    const uint32_t total = uint32_t(RandomModel::elements(in.dimensions)), d0 = in.dimensions[0];
    const std::vector<uint32_t> dims = {d0, total / d0};
    std::vector<int32_t> shape = {int32_t(d0), m.coin() ? -1 : int32_t(total / d0)};
    const bool squeeze = m.coin();
    if (squeeze) shape.insert(shape.begin() + 1, 1);
    const uint32_t s =
        m.constantBytes(OperandType::TENSOR_INT32, {uint32_t(shape.size())}, shape.data(), shape.size() * 4);
    std::vector<uint32_t> reshaped = dims;
    if (squeeze) reshaped.insert(reshaped.begin() + 1, 1);
    uint32_t y = m.operand(in.type, reshaped, OperandLifeTime::TEMPORARY_VARIABLE, in.scale, in.zeroPoint);
    m.op(hal::OperationType::RESHAPE, {x, s}, {y});
    if (!squeeze) return y;
    const uint32_t z = m.operand(in.type, dims, OperandLifeTime::TEMPORARY_VARIABLE, in.scale, in.zeroPoint);
    const int32_t axis = 1;
    m.op(hal::OperationType::SQUEEZE, {y, m.constantBytes(OperandType::TENSOR_INT32, {1}, &axis, 4)}, {z});
    return z;
}

// SUB, MUL, MAXIMUM or MINIMUM of x and a broadcastable new input or constant (MAXIMUM and
// MINIMUM with one quantization for all three tensors half of the time).
uint32_t addBinary(RandomModel& m, uint32_t x) {
    static const hal::OperationType kOps[] = {hal::OperationType::SUB, hal::OperationType::MUL,
                                              hal::OperationType::MAXIMUM, hal::OperationType::MINIMUM};
    const hal::OperationType type = kOps[m.uniform(0, 3)];
    const bool minMax =
        (type == hal::OperationType::MAXIMUM || type == hal::OperationType::MINIMUM) && m.coin();
    const hal::Operand in = m.at(x);
    std::vector<uint32_t> other = in.dimensions;
    other.erase(other.begin(), other.begin() + long(m.uniform(0, int(other.size()) - 1)));
    for (auto& d : other) {
        if (m.uniform(0, 2) == 0) d = 1;
    }
    const float scale = minMax ? in.scale : in.scale * m.uniformReal(0.3f, 3.0f);
    const int32_t zp = minMax ? in.zeroPoint : m.zeroPoint(in.type);
    uint32_t z;
    if (m.coin()) {
        z = m.input(in.type, other, scale, zp);
    } else {
        auto bytes = m.randomBytes(RandomModel::elements(other));
        z = m.constantBytes(in.type, other, bytes.data(), bytes.size(), scale, zp);
    }
    float os = std::max(in.scale, scale) * m.uniformReal(0.5f, 3.0f);
    if (type == hal::OperationType::MUL) os = in.scale * scale * m.uniformReal(20.0f, 200.0f);
    const uint32_t y = m.operand(in.type, in.dimensions, OperandLifeTime::TEMPORARY_VARIABLE,
                                 minMax ? in.scale : os, minMax ? in.zeroPoint : m.zeroPoint(in.type));
    const bool swap = m.coin();
    std::vector<uint32_t> args = {swap ? z : x, swap ? x : z};
    if (type == hal::OperationType::SUB || type == hal::OperationType::MUL)
        args.push_back(m.i32(m.uniform(0, 3)));
    m.op(type, args, {y});
    return y;
}

// PAD (the zero point) or PAD_V2 (a random value, saturated) of 0..2 elements per side.
uint32_t addPad(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    std::vector<int32_t> pads;
    std::vector<uint32_t> outDims = in.dimensions;
    for (auto& d : outDims) {
        const int32_t head = m.uniform(0, 2), tail = m.uniform(0, 2);
        pads.insert(pads.end(), {head, tail});
        d += uint32_t(head + tail);
    }
    const uint32_t p = m.constantBytes(OperandType::TENSOR_INT32, {uint32_t(outDims.size()), 2}, pads.data(),
                                       pads.size() * 4);
    const uint32_t y =
        m.operand(in.type, outDims, OperandLifeTime::TEMPORARY_VARIABLE, in.scale, in.zeroPoint);
    if (m.coin()) {
        m.op(hal::OperationType::PAD, {x, p}, {y});
    } else {
        m.op(hal::OperationType::PAD_V2, {x, p, m.i32(m.dataInt(-300, 300))}, {y});
    }
    return y;
}

// ---- Data-movement, resampling and reduction operations (TRANSPOSE, SPACE_TO_DEPTH,
// DEPTH_TO_SPACE, STRIDED_SLICE, RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR, MEAN, PRELU), chained
// with each other and with convolutions. `nchw` says how a rank-4 tensor is laid out.

uint32_t temporaryLike(RandomModel& m, const hal::Operand& in, std::vector<uint32_t> dims) {
    return m.operand(in.type, std::move(dims), OperandLifeTime::TEMPORARY_VARIABLE, in.scale, in.zeroPoint);
}

uint32_t int32s(RandomModel& m, const std::vector<int32_t>& v) {
    return m.constantBytes(OperandType::TENSOR_INT32, {uint32_t(v.size())}, v.data(), v.size() * 4);
}

uint32_t addTranspose(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    std::vector<int32_t> perm(in.dimensions.size());
    for (size_t k = 0; k < perm.size(); ++k) perm[k] = int32_t(k);
    m.shuffle(perm);
    const bool reversed = m.uniform(0, 3) == 0;  // an omitted permutation (no value) reverses the axes
    for (size_t k = 0; reversed && k < perm.size(); ++k) perm[k] = int32_t(perm.size() - 1 - k);
    std::vector<uint32_t> dims;
    for (int32_t p : perm) dims.push_back(in.dimensions[size_t(p)]);
    const uint32_t y = temporaryLike(m, in, dims);
    const uint32_t p =
        reversed ? m.operand(OperandType::TENSOR_INT32, {1}, OperandLifeTime::NO_VALUE) : int32s(m, perm);
    m.op(hal::OperationType::TRANSPOSE, {x, p}, {y});
    return y;
}

// SPACE_TO_DEPTH when the block divides height and width, else DEPTH_TO_SPACE when its square
// divides the depth (block 1 when neither does).
uint32_t addSpaceDepth(RandomModel& m, uint32_t x, bool nchw) {
    const hal::Operand in = m.at(x);
    const uint32_t n = in.dimensions[0], c = in.dimensions[nchw ? 1 : 3], h = in.dimensions[nchw ? 2 : 1],
                   w = in.dimensions[nchw ? 3 : 2];
    uint32_t bs = uint32_t(m.uniform(1, 3));
    if ((h % bs != 0 || w % bs != 0) && c % (bs * bs) != 0) bs = 1;  // block 1 always fits
    bool toDepth = h % bs == 0 && w % bs == 0;
    if (toDepth && c % (bs * bs) == 0) toDepth = m.coin();
    const uint32_t oh = toDepth ? h / bs : h * bs, ow = toDepth ? w / bs : w * bs,
                   oc = toDepth ? c * bs * bs : c / (bs * bs);
    const uint32_t y = temporaryLike(
        m, in, nchw ? std::vector<uint32_t>{n, oc, oh, ow} : std::vector<uint32_t>{n, oh, ow, oc});
    std::vector<uint32_t> args = {x, m.i32(int32_t(bs))};
    if (nchw || m.coin()) args.push_back(m.boolean(nchw));
    m.op(toDepth ? hal::OperationType::SPACE_TO_DEPTH : hal::OperationType::DEPTH_TO_SPACE, args, {y});
    return y;
}

// STRIDED_SLICE with random strides (a third of them negative), masks and negative indices;
// never shrinks (the rank stays, so spatial operations can follow). Dimensions by the
// reference's rules.
uint32_t addStridedSlice(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    const size_t rank = in.dimensions.size();
    std::vector<int32_t> begin(rank), end(rank), strides(rank);
    std::vector<uint32_t> dims(rank);
    int32_t beginMask = 0, endMask = 0;
    for (size_t k = 0; k < rank; ++k) {
        const int32_t d = int32_t(in.dimensions[k]);
        const bool backwards = m.uniform(0, 2) == 0;
        const int32_t s = backwards ? -m.uniform(1, 3) : m.uniform(1, 3);
        strides[k] = s;
        int32_t b = m.uniform(0, d - 1), e = backwards ? m.uniform(-1, b - 1) : m.uniform(b + 1, d);
        begin[k] = m.coin() ? b : b - d;
        end[k] = e < 0 || e == d || m.coin() ? e : e - d;  // -1 and d stay: as offsets they mean others
        if (e < 0) endMask |= 1 << k;                      // "before the first" only as a mask
        if (m.uniform(0, 4) == 0) {
            beginMask |= 1 << k;
            b = backwards ? d - 1 : 0;
        }
        if (m.uniform(0, 4) == 0) endMask |= 1 << k;
        if ((endMask >> k) & 1) e = backwards ? -1 : d;
        dims[k] = uint32_t(backwards ? (b - e - s - 1) / -s : (e - b + s - 1) / s);
    }
    const uint32_t y = temporaryLike(m, in, dims);
    m.op(
        hal::OperationType::STRIDED_SLICE,
        {x, int32s(m, begin), int32s(m, end), int32s(m, strides), m.i32(beginMask), m.i32(endMask), m.i32(0)},
        {y});
    return y;
}

uint32_t addResize(RandomModel& m, uint32_t x, bool nchw) {
    const hal::Operand in = m.at(x);
    const uint32_t n = in.dimensions[0], c = in.dimensions[nchw ? 1 : 3];
    const uint32_t oh = uint32_t(m.uniform(1, 12)), ow = uint32_t(m.uniform(1, 12));
    const bool bilinear = m.coin();
    const int corners = m.uniform(0, 2);  // none, align_corners, half_pixel_centers
    std::vector<uint32_t> args = {x, m.i32(int32_t(ow)), m.i32(int32_t(oh))};
    if (nchw || corners > 0 || !bilinear || m.coin()) args.push_back(m.boolean(nchw));  // nearest: always
    if (corners > 0) args.insert(args.end(), {m.boolean(corners == 1), m.boolean(corners == 2)});
    const uint32_t y = temporaryLike(
        m, in, nchw ? std::vector<uint32_t>{n, c, oh, ow} : std::vector<uint32_t>{n, oh, ow, c});
    m.op(bilinear ? hal::OperationType::RESIZE_BILINEAR : hal::OperationType::RESIZE_NEAREST_NEIGHBOR, args,
         {y});
    return y;
}

// MEAN over a random non-empty set of axes, keep_dims random, the output requantized half of
// the time.
uint32_t addMean(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    const int rank = int(in.dimensions.size());
    std::vector<int32_t> axes;
    std::vector<bool> reduced(size_t(rank), false);
    while (axes.empty()) {
        for (int k = 0; k < rank; ++k) {
            if (m.uniform(0, 2) != 0) continue;
            axes.push_back(m.coin() ? k : k - rank);
            reduced[size_t(k)] = true;
        }
    }
    const bool keep = m.coin();
    std::vector<uint32_t> dims;
    for (int k = 0; k < rank; ++k) {
        if (!reduced[size_t(k)] || keep) dims.push_back(reduced[size_t(k)] ? 1 : in.dimensions[size_t(k)]);
    }
    if (dims.empty()) dims.push_back(1);
    const bool same = m.coin();
    const uint32_t y = m.operand(in.type, dims, OperandLifeTime::TEMPORARY_VARIABLE,
                                 same ? in.scale : in.scale * m.uniformReal(0.3f, 3.0f),
                                 same ? in.zeroPoint : m.zeroPoint(in.type));
    m.op(hal::OperationType::MEAN, {x, int32s(m, axes), m.i32(keep ? 1 : 0)}, {y});
    return y;
}

// PRELU with alpha over the trailing dimensions (often just the channels), constant or input.
uint32_t addPrelu(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    std::vector<uint32_t> alphaDims(in.dimensions.end() - long(m.uniform(1, int(in.dimensions.size()))),
                                    in.dimensions.end());
    for (auto& d : alphaDims) {
        if (m.uniform(0, 3) == 0) d = 1;
    }
    const float scale = m.uniformReal(0.002f, 0.05f);
    const int32_t zp = m.zeroPoint(in.type);
    uint32_t alpha;
    if (m.coin()) {
        alpha = m.input(in.type, alphaDims, scale, zp);
    } else {
        auto bytes = m.randomBytes(RandomModel::elements(alphaDims));
        alpha = m.constantBytes(in.type, alphaDims, bytes.data(), bytes.size(), scale, zp);
    }
    const uint32_t y = m.operand(in.type, in.dimensions, OperandLifeTime::TEMPORARY_VARIABLE,
                                 in.scale * m.uniformReal(0.5f, 2.0f), m.zeroPoint(in.type));
    m.op(hal::OperationType::PRELU, {x, alpha}, {y});
    return y;
}

// Marks `x` as the output; now and then the model's input is a QUANTIZE of float32 values (ties
// k + 1/2 of the scale, values out of range, now and then any bit pattern: NaN, inf) and its
// output a DEQUANTIZE to float32. Drawn from a generator of its own, so that the rest of the
// model is the one the seed made before these edges existed.
void addQuantizeEdges(RandomModel& m, uint32_t seed, uint32_t x) {
    std::mt19937 edges(seed * 2654435761u + 17);
    auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(edges); };
    if (draw(0, 3) == 0) {
        const uint32_t in = m.testCase().model.main.inputIndexes.front();
        const float scale = m.at(in).scale;
        std::vector<float> v(RandomModel::elements(m.at(in).dimensions));
        for (float& f : v) {
            const int kind = draw(0, 9);
            if (kind == 0) {
                const uint32_t bits = uint32_t(draw(0, 0xFFFF)) << 16 | uint32_t(draw(0, 0xFFFF));
                std::memcpy(&f, &bits, 4);
            } else {
                f = (float(draw(-300, 300)) + (kind < 5 ? 0.5f : float(draw(0, 99)) / 100.0f)) * scale;
            }
        }
        m.quantizeInput(in, v);
    }
    if (draw(0, 3) == 0) {
        m.dequantizeOutput(x);
    } else {
        m.markOutput(x);
    }
}

framework::TestCase randomDataModel(uint32_t seed) {
    RandomModel m(seed);
    bool nchw = false;
    uint32_t x = addImageInput(m, &nchw);
    const int ops = m.uniform(1, 4);
    bool spatial = true;
    for (int i = 0; i < ops; ++i) {
        switch (spatial ? m.uniform(0, 7) : m.uniform(0, 3)) {
            case 0:
                x = addStridedSlice(m, x);
                break;
            case 1:
                x = addPrelu(m, x);
                break;
            case 2:
                x = addMean(m, x);
                break;
            case 3:
                x = addTranspose(m, x);
                break;
            case 4:
                x = addSpaceDepth(m, x, nchw);
                break;
            case 5:
            case 6:
                x = addResize(m, x, nchw);
                break;
            default:
                x = addConvolution(m, x, nchw, m.coin());
                break;
        }
        spatial = m.at(x).dimensions.size() == 4;  // any rank-4 tensor reads as the model's layout
    }
    addQuantizeEdges(m, seed, x);
    m.testCase().name = "random_data_" + std::to_string(seed);
    return std::move(m.testCase());
}

// SOFTMAX over a random axis with a random beta; the output quantization is the one NNAPI
// requires (scale 1/256, zero point 0 or -128).
uint32_t addSoftmax(RandomModel& m, uint32_t x) {
    const hal::Operand in = m.at(x);
    const bool isSigned = in.type == OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
    const uint32_t y = m.operand(in.type, in.dimensions, OperandLifeTime::TEMPORARY_VARIABLE, 1.0f / 256,
                                 isSigned ? -128 : 0);
    const float beta = m.coin() ? 1.0f : m.uniformReal(0.05f, 20.0f);
    const uint32_t b = m.constantBytes(OperandType::FLOAT32, {}, &beta, 4);
    if (m.coin()) {
        m.op(hal::OperationType::SOFTMAX, {x, b}, {y});
    } else {
        const int rank = int(in.dimensions.size());
        m.op(hal::OperationType::SOFTMAX, {x, b, m.i32(m.uniform(-rank, rank - 1))}, {y});
    }
    return y;
}

framework::TestCase randomVectorModel(uint32_t seed) {
    RandomModel m(seed);
    bool nchw = false;
    uint32_t x = addImageInput(m, &nchw);
    const int ops = m.uniform(1, 4);
    bool spatial = true;
    for (int i = 0; i < ops; ++i) {
        const int kind = spatial ? m.uniform(0, 5) : m.uniform(1, 2);
        if (kind == 5 || (!spatial && m.uniform(0, 2) == 0)) {
            x = m.uniform(0, 3) == 0 ? addPad(m, x) : addBinary(m, x);
        } else if (kind == 0) {
            const int conv = m.uniform(0, 3);
            x = conv == 0 ? addPool(m, x, nchw)
                          : (conv == 1 ? addTransposeConv(m, x, nchw) : addConvolution(m, x, nchw, m.coin()));
        } else if (kind == 1) {
            x = addUnary(m, x);
        } else if (kind == 2) {
            x = addConcat(m, x);
        } else if (kind == 3) {
            x = addPool(m, x, nchw);
        } else {
            x = addReshape(m, x);
            spatial = false;
        }
    }
    if (m.uniform(0, 3) == 0) x = addSoftmax(m, x);
    m.markOutput(x);
    m.testCase().name = "random_vector_" + std::to_string(seed);
    return std::move(m.testCase());
}

// ---- Residual blocks (the CONV_2D feeding an ADD gets the ADD fused into its store) ---------

// A CONV_2D keeping the spatial shape (SAME padding, stride 1, 1x1 or 3x3) from NHWC `x` to
// `cout` channels, per-tensor or per-channel, with a random fused activation.
uint32_t addSameConv(RandomModel& m, uint32_t x, uint32_t cout) {
    const hal::Operand in = m.at(x);
    const uint32_t cin = in.dimensions[3], k = m.coin() ? 1 : 3;
    const bool perChannel = m.coin();
    const float filterScale = m.uniformReal(0.002f, 0.05f);
    const std::vector<uint32_t> filterDims = {cout, k, k, cin};
    auto bytes = m.randomBytes(RandomModel::elements(filterDims));
    const uint32_t f = m.constantBytes(
        perChannel ? OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL : in.type, filterDims, bytes.data(),
        bytes.size(), perChannel ? 0.0f : filterScale, perChannel ? 0 : m.zeroPoint(in.type));
    if (perChannel) {
        hal::SymmPerChannelQuantParams q;
        for (uint32_t c = 0; c < cout; ++c) q.scales.push_back(filterScale * m.uniformReal(0.25f, 4.0f));
        const_cast<hal::Operand&>(m.at(f)).channelQuant = q;
    }
    const uint32_t b = randomBias(m, cout, perChannel ? 0.0f : in.scale * filterScale);
    std::vector<uint32_t> dims = in.dimensions;
    dims[3] = cout;
    const float os = outputScale(m, in.scale * filterScale, k * k * cin);
    const uint32_t y =
        m.operand(in.type, dims, OperandLifeTime::TEMPORARY_VARIABLE, os, m.zeroPoint(in.type));
    m.op(hal::OperationType::CONV_2D, {x, f, b, m.i32(1), m.i32(1), m.i32(1), m.i32(m.uniform(0, 3))}, {y});
    return y;
}

// One to three residual blocks as in MobileNet-v2: an optional 1x1 expansion, a shape-keeping
// CONV_2D back to the block's depth, and ADD(convolution, block input) in either order; now and
// then the convolution's output is also a model output.
framework::TestCase randomResidualModel(uint32_t seed) {
    RandomModel m(seed);
    const OperandType type =
        m.coin() ? OperandType::TENSOR_QUANT8_ASYMM : OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
    const uint32_t c = uint32_t(m.uniform(1, 24));
    uint32_t x =
        m.input(type, {uint32_t(m.uniform(1, 2)), uint32_t(m.uniform(1, 12)), uint32_t(m.uniform(1, 12)), c},
                m.uniformReal(0.01f, 0.1f), m.zeroPoint(type));
    const int blocks = m.uniform(1, 3);
    for (int i = 0; i < blocks; ++i) {
        const uint32_t expanded = m.coin() ? addSameConv(m, x, c * uint32_t(m.uniform(1, 4))) : x;
        const uint32_t y = addSameConv(m, expanded, c);
        // Now and then the convolution's output is a model output too, which the ADD then reads
        // back from the output buffer (no fusion: its bytes must reach DRAM).
        if (m.uniform(0, 3) == 0) m.markOutput(y);
        const hal::Operand in = m.at(x);
        const float os = std::max(in.scale, m.at(y).scale) * m.uniformReal(0.7f, 3.0f);
        const uint32_t sum =
            m.operand(type, in.dimensions, OperandLifeTime::TEMPORARY_VARIABLE, os, m.zeroPoint(type));
        const bool swap = m.coin();
        m.op(hal::OperationType::ADD, {swap ? x : y, swap ? y : x, m.i32(m.uniform(0, 3))}, {sum});
        x = sum;
    }
    m.markOutput(x);
    m.testCase().name = "random_residual_" + std::to_string(seed);
    return std::move(m.testCase());
}

}  // namespace npu::testing
