#include "npu/hwsim/mobilenet_workload.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "hwsim/isa/commands.h"
#include "hwsim/isa/fixed_point.h"
#include "hwsim/isa/registers.h"
#include "npu/base/fixed_point.h"
#include "npu/hwsim/device.h"

namespace npu::sim::workload {

namespace {

using isa::Command;
using isa::Opcode;
using isa::Queue;

// Scratchpad plan (needs 1 MiB): weights, bias, two input tiles, two output tiles.
constexpr uint32_t kSramWeights = 0;
constexpr uint32_t kWeightBytes = 160 << 10;
constexpr uint32_t kSramBias = kWeightBytes;
constexpr uint32_t kSramInput[2] = {192 << 10, 448 << 10};
constexpr uint32_t kInputTileBytes = 256 << 10;
constexpr uint32_t kSramOutput[2] = {704 << 10, 768 << 10};
constexpr uint32_t kOutputTileBytes = 64 << 10;
constexpr uint32_t kScratchpadNeeded = 1 << 20;
constexpr uint32_t kAccEntries = 1 << 14 << 2;  // 64 Ki int32 = the default 256 KiB accumulator
constexpr uint32_t kMaxTileCols = 128;          // pointwise output channels per weight tile

uint32_t outSize(uint32_t in, uint32_t kernel, uint32_t stride, uint32_t pad) {
    return (in + 2 * pad - kernel) / stride + 1;
}

Layer makeLayer(LayerKind kind, uint32_t h, uint32_t w, uint32_t inC, uint32_t outC, uint32_t kernel,
                uint32_t stride) {
    Layer l;
    l.kind = kind;
    l.inH = h;
    l.inW = w;
    l.inC = inC;
    l.outC = kind == LayerKind::kDepthwise ? inC : outC;
    l.kernel = kernel;
    l.stride = stride;
    l.pad = kernel / 2;
    l.outH = outSize(h, kernel, stride, l.pad);
    l.outW = outSize(w, kernel, stride, l.pad);
    return l;
}

void putU32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Builds the command stream of all layers. Tiles are numbered globally (g) so the token
// discipline is one rule: input buffer g % 2 is reloaded only after tile g - 2's compute
// (COMPUTE -> LOAD token), output buffer g % 2 is rewritten only after tile g - 2's store
// (STORE -> COMPUTE token).
class StreamBuilder {
public:
    void emit(const Command& c) { cmds_.push_back(c); }

    void dma(Opcode op, uint64_t dram, uint32_t sram, uint32_t inner, uint32_t rows = 1,
             uint32_t dramStride = 0, uint32_t sramStride = 0) {
        isa::DmaBox b;
        b.dramOffset = dram;
        b.sramAddr = sram;
        b.innerBytes = inner;
        b.rows = rows;
        b.dramRowStride = dramStride;
        b.sramRowStride = sramStride;
        emit(isa::makeDma(op, b));
    }

    // One tile: load (the callback emits the DMA), compute, requantize, store.
    template <class Load, class Compute, class Store>
    void tile(Load load, Compute compute, const isa::RequantDesc& rq, Store store) {
        const uint32_t buf = static_cast<uint32_t>(g_ % 2);
        if (g_ >= 2) emit(isa::makePop(Queue::kCompute, Queue::kLoad));
        load(kSramInput[buf]);
        emit(isa::makePush(Queue::kLoad, Queue::kCompute));
        emit(isa::makePop(Queue::kLoad, Queue::kCompute));
        compute(kSramInput[buf]);
        emit(isa::makePush(Queue::kCompute, Queue::kLoad));
        if (g_ >= 2) emit(isa::makePop(Queue::kStore, Queue::kCompute));
        isa::RequantDesc r = rq;
        r.outAddr = kSramOutput[buf];
        emit(isa::makeRequant(r, isa::vec::kFlagHasBias | isa::vec::kFlagSignedOut));
        emit(isa::makePush(Queue::kCompute, Queue::kStore));
        emit(isa::makePop(Queue::kCompute, Queue::kStore));
        store(kSramOutput[buf]);
        emit(isa::makePush(Queue::kStore, Queue::kCompute));
        ++g_;
    }

    void finish() {
        for (uint64_t i = 0; i < std::min<uint64_t>(g_, 2); ++i) {
            emit(isa::makePop(Queue::kCompute, Queue::kLoad));
            emit(isa::makePop(Queue::kStore, Queue::kCompute));
        }
        emit(isa::makeFence());
    }

    std::vector<Command>& commands() { return cmds_; }

private:
    std::vector<Command> cmds_;
    uint64_t g_ = 0;
};

constexpr uint32_t kMacFlags = isa::kMacFlagSignedA | isa::kMacFlagSignedB;

void emitParams(StreamBuilder& s, const Layer& l) {
    isa::VecParams p;
    p.outMult = l.multiplier;
    p.outShift = l.shift;
    p.outOffset = kActivationZeroPoint;
    p.clampMin = -128;
    p.clampMax = 127;
    s.emit(isa::makeVecParams(p));
}

Result<void> emitPointwise(StreamBuilder& s, const Layer& l) {
    const uint32_t m = l.inH * l.inW, k = l.inC, n = l.outC;
    for (uint32_t n0 = 0; n0 < n; n0 += kMaxTileCols) {
        const uint32_t nt = std::min(kMaxTileCols, n - n0);
        if (uint64_t{k} * nt > kWeightBytes || k > kInputTileBytes) {
            return std::unexpected("workload: pointwise layer K = " + std::to_string(k) + " too large");
        }
        s.emit(isa::makeFence());  // the weight buffer is free once every earlier tile is done
        s.dma(Opcode::kDmaLoad, l.weights + n0, kSramWeights, nt, k, n, nt);
        s.dma(Opcode::kDmaLoad, l.bias + uint64_t{n0} * 4, kSramBias, nt * 4);
        const uint32_t maxRows = std::min({kAccEntries / nt, kInputTileBytes / k, kOutputTileBytes / nt});
        for (uint32_t m0 = 0; m0 < m; m0 += maxRows) {
            const uint32_t mt = std::min(maxRows, m - m0);
            isa::RequantDesc rq{0, nt, mt, nt, kSramBias, 0, nt};
            s.tile([&](uint32_t in) { s.dma(Opcode::kDmaLoad, l.input + uint64_t{m0} * k, in, mt * k); },
                   [&](uint32_t in) {
                       isa::GemmDesc gd;
                       gd.aAddr = in;
                       gd.aRowStride = k;
                       gd.bAddr = kSramWeights;
                       gd.bRowStride = nt;
                       gd.m = mt;
                       gd.k = k;
                       gd.n = nt;
                       gd.accAddr = 0;
                       gd.accRowStride = nt;
                       gd.zpA = kActivationZeroPoint;
                       s.emit(isa::makeGemm(gd, kMacFlags));
                   },
                   rq,
                   [&](uint32_t out) {
                       s.dma(Opcode::kDmaStore, l.output + uint64_t{m0} * n + n0, out, nt, mt, n, nt);
                   });
        }
    }
    return {};
}

// The stem convolution and the depthwise layers: tiles of whole output rows.
Result<void> emitSpatial(StreamBuilder& s, const Layer& l) {
    const uint64_t inRowBytes = uint64_t{l.inW} * l.inC;
    const uint64_t outRowEntries = uint64_t{l.outW} * l.outC;
    uint32_t rows = static_cast<uint32_t>(
        std::min<uint64_t>({l.outH, kAccEntries / outRowEntries, kOutputTileBytes / outRowEntries}));
    while (rows > 0 && (uint64_t{rows - 1} * l.stride + l.kernel) * inRowBytes > kInputTileBytes) --rows;
    if (rows == 0 || l.weightBytes() > kWeightBytes) {
        return std::unexpected("workload: layer " + std::to_string(l.inH) + "x" + std::to_string(l.inW) +
                               "x" + std::to_string(l.inC) + " does not fit the tile plan");
    }
    s.emit(isa::makeFence());
    s.dma(Opcode::kDmaLoad, l.weights, kSramWeights, static_cast<uint32_t>(l.weightBytes()));
    s.dma(Opcode::kDmaLoad, l.bias, kSramBias, l.outC * 4);
    for (uint32_t oy0 = 0; oy0 < l.outH; oy0 += rows) {
        const uint32_t th = std::min(rows, l.outH - oy0);
        // Input rows the tile reads, clipped to the image; the clipped part is the padding.
        const int64_t first = int64_t{oy0} * l.stride - l.pad;
        const int64_t last = int64_t{oy0 + th - 1} * l.stride - l.pad + l.kernel - 1;
        const uint32_t iy0 = static_cast<uint32_t>(std::max<int64_t>(first, 0));
        const uint32_t iy1 = static_cast<uint32_t>(std::min<int64_t>(last, l.inH - 1));
        const uint32_t inRows = iy1 - iy0 + 1;
        const uint32_t entries = static_cast<uint32_t>(th * outRowEntries);
        isa::RequantDesc rq{0, l.outC, th * l.outW, l.outC, kSramBias, 0, l.outC};
        s.tile(
            [&](uint32_t in) {
                s.dma(Opcode::kDmaLoad, l.input + iy0 * inRowBytes, in,
                      static_cast<uint32_t>(inRows * inRowBytes));
            },
            [&](uint32_t in) {
                isa::ConvDesc cd;
                cd.ifmAddr = in;
                cd.ifmH = inRows;
                cd.ifmW = l.inW;
                cd.ifmC = l.inC;
                cd.ifmRowStride = static_cast<uint32_t>(inRowBytes);
                cd.wAddr = kSramWeights;
                cd.kernelH = cd.kernelW = l.kernel;
                cd.strideY = cd.strideX = l.stride;
                cd.padTop = static_cast<uint32_t>(iy0 - first);
                cd.padLeft = l.pad;
                cd.ofmH = th;
                cd.ofmW = l.outW;
                cd.cout = l.outC;
                cd.zpIn = kActivationZeroPoint;
                s.emit(l.kind == LayerKind::kDepthwise ? isa::makeDwConv(cd, kMacFlags)
                                                       : isa::makeConv(cd, kMacFlags));
            },
            rq,
            [&](uint32_t out) {
                s.dma(Opcode::kDmaStore, l.output + uint64_t{oy0} * outRowEntries, out, entries);
            });
    }
    return {};
}

}  // namespace

uint64_t Layer::weightBytes() const {
    const uint64_t taps = uint64_t{kernel} * kernel;
    return kind == LayerKind::kDepthwise ? taps * inC : taps * inC * outC;
}

uint64_t Layer::macs() const {
    // Useful MACs: taps inside the image only (what the PMU counts).
    auto valid = [this](uint32_t outputs, uint32_t extent) {
        uint64_t t = 0;
        for (uint32_t o = 0; o < outputs; ++o) {
            for (uint32_t k = 0; k < kernel; ++k) {
                const int64_t p = int64_t{o} * stride + k - pad;
                if (p >= 0 && p < extent) ++t;
            }
        }
        return t;
    };
    const uint64_t taps = valid(outH, inH) * valid(outW, inW);
    return kind == LayerKind::kDepthwise ? taps * inC : taps * inC * outC;
}

std::vector<Layer> mobilenetV2Layers(uint32_t inputSize) {
    std::vector<Layer> layers;
    layers.push_back(makeLayer(LayerKind::kConv, inputSize, inputSize, 3, kMobilenetV2StemChannels, 3, 2));
    uint32_t h = layers.back().outH, c = kMobilenetV2StemChannels;
    for (const MobilenetV2Stage& s : kMobilenetV2Stages) {
        for (uint32_t i = 0; i < s.repeats; ++i) {
            const uint32_t stride = i == 0 ? s.firstStride : 1;
            const uint32_t hidden = c * s.expansion;
            if (s.expansion != 1) layers.push_back(makeLayer(LayerKind::kPointwise, h, h, c, hidden, 1, 1));
            layers.push_back(makeLayer(LayerKind::kDepthwise, h, h, hidden, hidden, 3, stride));
            h = layers.back().outH;
            layers.push_back(makeLayer(LayerKind::kPointwise, h, h, hidden, s.outChannels, 1, 1));
            c = s.outChannels;
        }
    }
    layers.push_back(makeLayer(LayerKind::kPointwise, h, h, c, kMobilenetV2HeadChannels, 1, 1));
    return layers;
}

Result<Workload> buildWorkload(std::vector<Layer> layers, const HwConfig& hw, uint32_t seed,
                               std::vector<uint8_t>& dram) {
    if (hw.scratchpadBytes < kScratchpadNeeded || hw.accumulatorBytes / 4 < kAccEntries) {
        return std::unexpected("workload: needs scratchpadBytes >= 1 MiB and accumulatorBytes >= 256 KiB");
    }
    if (layers.empty()) return std::unexpected("workload: no layers");
    Workload w;
    std::mt19937 rng(seed);
    uint64_t at = 0;
    auto reserve = [&at](uint64_t bytes) {
        const uint64_t start = at;
        at = (at + bytes + 63) / 64 * 64;
        return start;
    };
    for (Layer& l : layers) {
        // Outputs keep a spread of about 40 steps: accumulator std ~ sqrt(taps) * 40 * 73.
        const double taps = l.kind == LayerKind::kDepthwise
                                ? l.kernel * l.kernel
                                : static_cast<double>(l.kernel) * l.kernel * l.inC;
        l.weightScale = static_cast<float>(40.0 / (std::sqrt(taps) * 40.0 * 73.0));
        const base::QuantizedMultiplier q = base::quantizeMultiplier(l.weightScale);
        l.multiplier = q.multiplier;
        l.shift = q.shift;
        l.weights = reserve(l.weightBytes());
        l.bias = reserve(uint64_t{l.outC} * 4);
    }
    layers.front().input = reserve(layers.front().inputBytes());
    for (size_t i = 0; i < layers.size(); ++i) {
        if (i > 0) layers[i].input = layers[i - 1].output;
        layers[i].output = reserve(layers[i].outputBytes());
        w.totalMacs += layers[i].macs();
    }
    StreamBuilder s;
    for (const Layer& l : layers) {
        emitParams(s, l);
        auto ok = l.kind == LayerKind::kPointwise ? emitPointwise(s, l) : emitSpatial(s, l);
        if (!ok) return std::unexpected(ok.error());
    }
    s.finish();
    w.commandCount = static_cast<uint32_t>(s.commands().size());
    w.commandOffset = reserve(uint64_t{w.commandCount + 1} * isa::kCommandBytes);
    w.bytesUsed = at;
    if (at > dram.size()) {
        return std::unexpected("workload: needs " + std::to_string(at) + " bytes of device memory, have " +
                               std::to_string(dram.size()));
    }
    std::uniform_int_distribution<int> byte(-128, 127), bias(-2000, 2000);
    for (const Layer& l : layers) {
        for (uint64_t i = 0; i < l.weightBytes(); ++i) dram[l.weights + i] = static_cast<uint8_t>(byte(rng));
        for (uint32_t i = 0; i < l.outC; ++i) putU32(&dram[l.bias + 4 * i], static_cast<uint32_t>(bias(rng)));
    }
    for (uint64_t i = 0; i < layers.front().inputBytes(); ++i) {
        dram[layers.front().input + i] = static_cast<uint8_t>(byte(rng));
    }
    for (uint32_t i = 0; i < w.commandCount; ++i) {
        const Command& c = s.commands()[i];
        for (uint32_t j = 0; j < isa::kCommandWords; ++j) {
            putU32(&dram[w.commandOffset + uint64_t{i} * isa::kCommandBytes + 4 * j], c.w[j]);
        }
    }
    w.layers = std::move(layers);
    return w;
}

Result<RunResult> runOnDevice(Device& d, const Workload& w) {
    d.writeReg(isa::kRegCtrl, isa::kCtrlSoftReset);
    d.writeReg(isa::kRegCtrl, isa::kCtrlEnable | isa::kCtrlIrqEnable);
    d.writeReg(isa::kRegIrqMask, isa::kIrqAll);
    d.writeReg(isa::kRegCmdqBaseLo, static_cast<uint32_t>(w.commandOffset));
    d.writeReg(isa::kRegCmdqBaseHi, static_cast<uint32_t>(w.commandOffset >> 32));
    d.writeReg(isa::kRegCmdqSize, (w.commandCount + 1) * isa::kCommandBytes);
    d.writeReg(isa::kRegCmdqTail, w.commandCount * isa::kCommandBytes);
    const uint64_t before = d.cycles();
    d.writeReg(isa::kRegDoorbell, 1);
    const uint32_t irq = d.readReg(isa::kRegIrqStatus);
    if ((irq & isa::kIrqError) != 0 || (irq & isa::kIrqDone) == 0) {
        const auto code = static_cast<isa::ErrorCode>(d.readReg(isa::kRegErrorCode));
        return std::unexpected(std::string("workload: the NPU stopped with ") + isa::errorCodeName(code) +
                               " at command offset " + std::to_string(d.readReg(isa::kRegErrorOffset)));
    }
    auto counter = [&d](uint32_t lo) {
        const uint32_t l = d.readReg(lo);
        return l | (uint64_t{d.readReg(lo + 4)} << 32);
    };
    RunResult r;
    r.cycles = d.cycles() - before;
    r.macs = counter(isa::kRegPmuMacsLo);
    r.commands = counter(isa::kRegPmuCommandsLo);
    return r;
}

void referenceLayer(const Layer& l, const uint8_t* dram, int8_t* out) {
    const auto* in = reinterpret_cast<const int8_t*>(dram + l.input);
    const auto* w = reinterpret_cast<const int8_t*>(dram + l.weights);
    const uint8_t* biasBytes = dram + l.bias;
    const bool dw = l.kind == LayerKind::kDepthwise;
    for (uint32_t oy = 0; oy < l.outH; ++oy) {
        for (uint32_t ox = 0; ox < l.outW; ++ox) {
            for (uint32_t co = 0; co < l.outC; ++co) {
                int32_t acc = 0;
                for (uint32_t ky = 0; ky < l.kernel; ++ky) {
                    const int64_t y = int64_t{oy} * l.stride + ky - l.pad;
                    if (y < 0 || y >= l.inH) continue;
                    for (uint32_t kx = 0; kx < l.kernel; ++kx) {
                        const int64_t x = int64_t{ox} * l.stride + kx - l.pad;
                        if (x < 0 || x >= l.inW) continue;
                        const int8_t* px = in + (y * l.inW + x) * l.inC;
                        const uint64_t tap = uint64_t{ky} * l.kernel + kx;
                        if (dw) {
                            acc += (px[co] - kActivationZeroPoint) * w[tap * l.inC + co];
                            continue;
                        }
                        for (uint32_t ci = 0; ci < l.inC; ++ci) {
                            acc += (px[ci] - kActivationZeroPoint) * w[(tap * l.inC + ci) * l.outC + co];
                        }
                    }
                }
                const uint8_t* b = biasBytes + 4 * co;
                acc += static_cast<int32_t>(b[0] | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) |
                                            (uint32_t{b[3]} << 24));
                int32_t v =
                    isa::multiplyByQuantizedMultiplier(acc, l.multiplier, l.shift) + kActivationZeroPoint;
                v = std::clamp(v, -128, 127);
                out[(uint64_t{oy} * l.outW + ox) * l.outC + co] = static_cast<int8_t>(v);
            }
        }
    }
}

}  // namespace npu::sim::workload
