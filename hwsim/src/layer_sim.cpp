#include "npu/hwsim/layer_sim.h"

#include <algorithm>

#include "npu/hwsim/systolic_model.h"

namespace npu::sim {

namespace {

// A DMA burst is 16 bus beats; at most dmaMaxOutstanding bursts are in flight, so a long
// transfer streams at min(bus, DRAM, cap * burst / (latency + burst time)) bytes per cycle.
uint64_t transferCycles(const HwConfig& c, uint64_t bytes) {
    if (bytes == 0) return 0;
    const uint64_t bw = std::min(c.dmaBytesPerCycle, c.dramBytesPerCycle);
    const uint64_t burst = uint64_t{c.dmaBytesPerCycle} * 16;
    const uint64_t burstCycles = ceilDiv(burst, bw);
    const uint64_t bandwidthBound = ceilDiv(bytes, bw);
    const uint64_t capBound =
        ceilDiv(bytes * (c.dramLatencyCycles + burstCycles), uint64_t{c.dmaMaxOutstanding} * burst);
    return c.dramLatencyCycles + std::max(bandwidthBound, capBound);
}

size_t latencyBucket(uint64_t latency) {
    size_t b = 0;
    while (latency > 1 && b + 1 < kLatencyBuckets) {
        latency >>= 1;
        ++b;
    }
    return b;
}

size_t ui(Unit u) {
    return static_cast<size_t>(u);
}

struct Dims {
    uint64_t m, n, k, ofmH = 0, ofmW = 0;
    uint64_t ifmapBytes;  // the real input tensor (a conv's im2col matrix is M*K, its input H*W*C)
};

Result<Dims> dimsOf(const LayerSpec& l) {
    auto need = [&](uint64_t v, const char* field) -> Result<void> {
        if (v == 0) return std::unexpected("layer " + l.name + ": " + field + " = 0: must be >= 1");
        if (v > (uint64_t{1} << 24)) {
            return std::unexpected("layer " + l.name + ": " + field + " = " + std::to_string(v) +
                                   ": must be <= 16777216");
        }
        return {};
    };
    if (l.op == LayerOp::kGemm) {
        for (auto [v, f] : {std::pair{l.m, "M"}, {l.n, "N"}, {l.k, "K"}}) {
            if (auto ok = need(v, f); !ok) return std::unexpected(ok.error());
        }
        return Dims{l.m, l.n, l.k, 0, 0, l.m * l.k};
    }
    for (auto [v, f] : {std::pair{l.ifmH, "H"},
                        {l.ifmW, "W"},
                        {l.channels, "C"},
                        {l.kernelH, "R"},
                        {l.kernelW, "S"},
                        {l.filters, "K (filters)"},
                        {l.stride, "STRIDE"}}) {
        if (auto ok = need(v, f); !ok) return std::unexpected(ok.error());
    }
    if (l.kernelH > l.ifmH || l.kernelW > l.ifmW) {
        return std::unexpected("layer " + l.name + ": kernel " + std::to_string(l.kernelH) + "x" +
                               std::to_string(l.kernelW) + " larger than the input " +
                               std::to_string(l.ifmH) + "x" + std::to_string(l.ifmW));
    }
    Dims d{};
    d.ofmH = scalesimConvOut(l.ifmH, l.kernelH, l.stride);
    d.ofmW = scalesimConvOut(l.ifmW, l.kernelW, l.stride);
    d.m = d.ofmH * d.ofmW;
    d.n = l.filters;
    d.k = l.kernelH * l.kernelW * l.channels;
    d.ifmapBytes = l.ifmH * l.ifmW * l.channels;
    if (d.m * d.n > (uint64_t{1} << 40) / std::max<uint64_t>(d.k, 1)) {
        return std::unexpected("layer " + l.name + ": M*N*K too large to simulate");
    }
    return d;
}

// Which operand tiles a fold needs, in the fold order of SCALE-Sim (column folds outer, row folds
// inner), and when an output tile is complete.
struct FoldTiles {
    uint64_t rowsUsed, colsUsed;
    uint64_t ifmapTile, filterTile;  // bytes the array streams from the scratchpad
    bool ifmapNew, filterNew;        // the tile is not already resident
    uint64_t outTile;                // bytes of output finished by this fold (0: none yet)
    uint64_t accEntries;             // partial sums written to the accumulator
    bool accRead;                    // partial sums read back (reduction split over row folds)
};

FoldTiles foldTiles(isa::Dataflow d, const ArrayMapping& a, const Dims& dims, uint64_t rows, uint64_t cols,
                    uint64_t fr, uint64_t fc) {
    FoldTiles t{};
    t.rowsUsed = std::min(rows, a.sr - fr * rows);
    t.colsUsed = std::min(cols, a.sc - fc * cols);
    const bool lastRowFold = fr + 1 == a.rowFolds;
    switch (d) {
        case isa::Dataflow::kOutputStationary:  // rows: M, cols: N, time: K
            t.ifmapTile = t.rowsUsed * dims.k;
            t.filterTile = dims.k * t.colsUsed;
            t.ifmapNew = true;      // depends on the row fold
            t.filterNew = fr == 0;  // held across the row folds of a column fold
            t.outTile = t.rowsUsed * t.colsUsed;
            t.accEntries = t.outTile;
            t.accRead = false;
            break;
        case isa::Dataflow::kWeightStationary:  // rows: K, cols: N, time: M
            t.filterTile = t.rowsUsed * t.colsUsed;
            t.ifmapTile = dims.m * t.rowsUsed;
            t.ifmapNew = true;
            t.filterNew = true;
            t.outTile = lastRowFold ? dims.m * t.colsUsed : 0;
            t.accEntries = dims.m * t.colsUsed;
            t.accRead = fr > 0;
            break;
        case isa::Dataflow::kInputStationary:  // rows: K, cols: M, time: N
            t.ifmapTile = t.rowsUsed * t.colsUsed;
            t.filterTile = t.rowsUsed * dims.n;
            t.ifmapNew = true;
            t.filterNew = true;
            t.outTile = lastRowFold ? t.colsUsed * dims.n : 0;
            t.accEntries = t.colsUsed * dims.n;
            t.accRead = fr > 0;
            break;
    }
    return t;
}

// Operands that depend on the row fold only are re-streamed for every column fold; when the
// whole operand fits in a quarter of the scratchpad it stays resident and is loaded once.
bool rowOnlyOperandIsIfmap(isa::Dataflow d) {
    return d != isa::Dataflow::kInputStationary;
}

class Timeline {
public:
    explicit Timeline(const HwConfig& c, LayerReport& r, bool trace) : c_(c), r_(r), trace_(trace) {}

    // One DMA transfer on a channel that is free at `channelFree` and may start no earlier than
    // `ready`; DRAM bandwidth is shared by both channels. Returns the completion time.
    uint64_t dma(Unit u, uint64_t& channelFree, uint64_t ready, uint64_t bytes, bool write,
                 const std::string& name) {
        UnitCounters& k = r_.units[ui(u)];
        const uint64_t start0 = std::max(channelFree, ready);
        k.stalledDependency += ready > channelFree ? ready - channelFree : 0;
        const uint64_t start = std::max(start0, dramFree_);
        k.stalledDma += start - start0;
        const uint64_t dramCycles = ceilDiv(bytes, c_.dramBytesPerCycle);
        dramFree_ = start + dramCycles;
        const uint64_t cycles = transferCycles(c_, bytes);
        const uint64_t end = start + cycles;
        k.active += cycles;
        channelFree = end;
        ++r_.dmaTransactions;
        ++r_.dmaLatencyHistogram[latencyBucket(cycles)];
        if (trace_) {
            r_.events.push_back({u, start, cycles, name});
            const double rate = cycles ? double(bytes) / double(cycles) : 0.0;
            bw_.push_back({start, write ? 0.0 : rate, write ? rate : 0.0});
            bw_.push_back({end, write ? 0.0 : -rate, write ? -rate : 0.0});
        }
        return end;
    }
    void occupancy(uint64_t time, int64_t delta) {
        if (trace_) occ_.push_back({time, delta});
    }
    void event(Unit u, uint64_t start, uint64_t duration, std::string name) {
        if (trace_) r_.events.push_back({u, start, duration, std::move(name)});
    }
    void finishCounters() {
        if (!trace_) return;
        struct Point {
            uint64_t t;
            double rd, wr;
            int64_t occ;
        };
        std::vector<Point> pts;
        for (const Bw& b : bw_) pts.push_back({b.t, b.rd, b.wr, 0});
        for (const Occ& o : occ_) pts.push_back({o.t, 0, 0, o.delta});
        std::stable_sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.t < b.t; });
        double rd = 0, wr = 0;
        int64_t occ = 0;
        for (size_t i = 0; i < pts.size(); ++i) {
            rd += pts[i].rd;
            wr += pts[i].wr;
            occ += pts[i].occ;
            if (i + 1 < pts.size() && pts[i + 1].t == pts[i].t) continue;  // one sample per time
            TraceCounter tc;
            tc.time = pts[i].t;
            tc.dramReadBytesPerCycle = std::max(0.0, rd < 1e-9 ? 0.0 : rd);
            tc.dramWriteBytesPerCycle = std::max(0.0, wr < 1e-9 ? 0.0 : wr);
            tc.scratchpadBytesInUse = occ > 0 ? static_cast<uint64_t>(occ) : 0;
            r_.counters.push_back(tc);
        }
    }

private:
    struct Bw {
        uint64_t t;
        double rd, wr;
    };
    struct Occ {
        uint64_t t;
        int64_t delta;
    };
    const HwConfig& c_;
    LayerReport& r_;
    bool trace_;
    uint64_t dramFree_ = 0;
    std::vector<Bw> bw_;
    std::vector<Occ> occ_;
};

}  // namespace

LayerSpec LayerSpec::gemm(uint64_t m, uint64_t n, uint64_t k, std::string name) {
    LayerSpec l;
    l.name = std::move(name);
    l.op = LayerOp::kGemm;
    l.m = m;
    l.n = n;
    l.k = k;
    return l;
}

LayerSpec LayerSpec::conv(uint64_t h, uint64_t w, uint64_t c, uint64_t r, uint64_t s, uint64_t filters,
                          uint64_t stride, std::string name) {
    LayerSpec l;
    l.name = std::move(name);
    l.op = LayerOp::kConv;
    l.ifmH = h;
    l.ifmW = w;
    l.channels = c;
    l.kernelH = r;
    l.kernelW = s;
    l.filters = filters;
    l.stride = stride;
    return l;
}

const char* unitName(Unit u) {
    switch (u) {
        case Unit::kDmaRead:
            return "dma_read";
        case Unit::kArray:
            return "mac_array";
        case Unit::kVector:
            return "vector";
        case Unit::kDmaWrite:
            return "dma_write";
    }
    return "unknown";
}

namespace {

// What every mode needs to know about one layer on one array.
struct LayerSetup {
    const HwConfig& c;
    const Dims& dims;
    const ArrayMapping& a;
    uint64_t rows, cols, pes;
    isa::Dataflow df;
    // A conv's ifmap tiles are slices of the im2col matrix; DRAM holds the real input, so a tile's
    // DRAM bytes are its share of H*W*C (halo rows shared by neighbouring tiles are not charged).
    double ifmapDramScale;
    uint64_t ifmapDram(uint64_t tile) const {
        return std::max<uint64_t>(1, static_cast<uint64_t>(double(tile) * ifmapDramScale + 0.5));
    }
    uint64_t filterBytes() const { return dims.k * dims.n; }
};

// The SRAM and accumulator traffic of one fold, the same in every mode; returns its mapping
// efficiency.
double countFoldTraffic(const LayerSetup& x, const FoldTiles& t, LayerReport& r) {
    r.sramIfmapRead += t.ifmapTile;
    r.sramFilterRead += t.filterTile;
    r.accumulatorWrites += t.accEntries;
    if (t.accRead) r.accumulatorReads += t.accEntries;
    return double(t.rowsUsed * t.colsUsed) / double(x.pes);
}

// SCALE-Sim-compatible mode: no memory limits and free memories: operands are read from DRAM
// once, the array never waits, folds never overlap. Returns the summed mapping efficiency.
double simulateScalesimCompat(const LayerSetup& x, const SimOptions& opt, LayerReport& r) {
    const uint64_t fold = isolatedFoldCycles(x.df, x.rows, x.cols, x.a.t);
    double mappingSum = 0;
    uint64_t time = 0;
    for (uint64_t fc = 0; fc < x.a.colFolds; ++fc) {
        for (uint64_t fr = 0; fr < x.a.rowFolds; ++fr) {
            const FoldTiles t = foldTiles(x.df, x.a, x.dims, x.rows, x.cols, fr, fc);
            mappingSum += countFoldTraffic(x, t, r);
            r.sramOfmapWrite += t.outTile;
            if (opt.trace) {
                r.events.push_back(
                    {Unit::kArray, time, fold, "fold " + std::to_string(fc * x.a.rowFolds + fr)});
            }
            time += fold;
        }
    }
    r.cycles = scalesimCycles(x.df, x.rows, x.cols, x.dims.m, x.dims.n, x.dims.k);
    r.computeCycles = r.cycles;
    r.units[ui(Unit::kArray)].active = r.cycles;
    for (Unit u : {Unit::kDmaRead, Unit::kVector, Unit::kDmaWrite}) r.units[ui(u)].idle = r.cycles;
    r.dramIfmapRead = x.dims.ifmapBytes;
    r.dramFilterRead = x.filterBytes();
    r.dramOfmapWrite = x.dims.m * x.dims.n;
    return mappingSum;
}

// The default mode: DMA loads, array folds, requantization and stores overlap, each unit with its
// busy-until time; double-buffered operand and output buffers; shared DRAM bandwidth.
class OverlappedLayer {
public:
    OverlappedLayer(const LayerSetup& x, const SimOptions& opt, LayerReport& r)
        : x_(x), r_(r), tl_(x.c, r, opt.trace), rowOnlyIsIfmap_(rowOnlyOperandIsIfmap(x.df)) {
        const uint64_t rowOnlyTotal = rowOnlyIsIfmap_ ? x.dims.ifmapBytes : x.filterBytes();
        rowOnlyResident_ = rowOnlyTotal <= x.c.scratchpadBytes / 4;
        arrayEnd_.reserve(x.a.folds());
    }

    double run() {
        double mappingSum = 0;
        uint64_t fold = 0;
        for (uint64_t fc = 0; fc < x_.a.colFolds; ++fc) {
            for (uint64_t fr = 0; fr < x_.a.rowFolds; ++fr, ++fold) {
                const FoldTiles t = foldTiles(x_.df, x_.a, x_.dims, x_.rows, x_.cols, fr, fc);
                mappingSum += countFoldTraffic(x_, t, r_);
                const uint64_t loaded = load(t, fold, fc);
                compute(t, fold, loaded);
                if (t.outTile > 0) store(t);
            }
        }
        end_ = std::max({end_, arrayFree_, readFree_, vecFree_, writeFree_});
        r_.cycles = end_;
        r_.units[ui(Unit::kArray)].active = r_.computeCycles;
        r_.units[ui(Unit::kArray)].stalledDma = r_.stallDma + r_.stallWriteback;
        // The read channel waiting for a buffer the array still uses is a dependency stall; the
        // write channel waiting for the vector unit likewise. Both are already counted by dma().
        tl_.occupancy(end_, 0);
        tl_.finishCounters();
        return mappingSum;
    }

private:
    // DMA in the tiles this fold needs that are not resident yet; returns when they are there.
    uint64_t load(const FoldTiles& t, uint64_t fold, uint64_t fc) {
        bool ifmapLoad = t.ifmapNew, filterLoad = t.filterNew;
        if (rowOnlyResident_ && fc > 0) (rowOnlyIsIfmap_ ? ifmapLoad : filterLoad) = false;
        const uint64_t ifmapBytes = ifmapLoad ? x_.ifmapDram(t.ifmapTile) : 0;
        const uint64_t filterBytes = filterLoad ? t.filterTile : 0;
        r_.dramIfmapRead += ifmapBytes;
        r_.dramFilterRead += filterBytes;
        const uint64_t loadBytes = ifmapBytes + filterBytes;
        // Double buffering: this fold's buffer is free when fold - 2 has finished.
        const uint64_t bufferFree = fold >= 2 ? arrayEnd_[fold - 2] : 0;
        uint64_t loaded = std::max(readFree_, bufferFree);
        if (loadBytes > 0) {
            loaded = tl_.dma(Unit::kDmaRead, readFree_, bufferFree, loadBytes, false,
                             "load fold " + std::to_string(fold));
            tl_.occupancy(loaded, static_cast<int64_t>(loadBytes));
        }
        streamedBytes_.push_back(loadBytes);
        return loaded;
    }

    // The array: waits for its operands and for a free output buffer.
    void compute(const FoldTiles& t, uint64_t fold, uint64_t loaded) {
        const uint64_t outIndex = storeDone_.size();
        const uint64_t outSlotFree = t.outTile > 0 && outIndex >= 2 ? storeDone_[outIndex - 2] : 0;
        const uint64_t start = std::max({arrayFree_, loaded, outSlotFree});
        if (start > arrayFree_) {
            (loaded >= outSlotFree ? r_.stallDma : r_.stallWriteback) += start - arrayFree_;
        }
        uint64_t cycles = overlappedFoldCycles(x_.rows, x_.a.t);
        if (fold == 0) cycles = isolatedFoldCycles(x_.df, x_.rows, x_.cols, x_.a.t);  // first fill
        arrayFree_ = start + cycles;
        arrayEnd_.push_back(arrayFree_);
        r_.computeCycles += cycles;
        tl_.event(Unit::kArray, start, cycles, "fold " + std::to_string(fold));
        if (fold >= 1 && !rowOnlyResident_)
            tl_.occupancy(arrayFree_, -static_cast<int64_t>(streamedBytes_[fold - 1]));
    }

    // Requantize and store a finished output tile.
    void store(const FoldTiles& t) {
        const uint64_t outIndex = storeDone_.size();
        r_.sramOfmapWrite += t.outTile;
        r_.accumulatorReads += t.outTile;
        const uint64_t vStart = std::max(vecFree_, arrayFree_);
        const uint64_t vCycles = x_.c.vectorLatencyCycles + ceilDiv(t.outTile, x_.c.vectorLanes);
        vecFree_ = vStart + vCycles;
        r_.units[ui(Unit::kVector)].active += vCycles;
        tl_.event(Unit::kVector, vStart, vCycles, "requant tile " + std::to_string(outIndex));
        r_.dramOfmapWrite += t.outTile;
        const uint64_t done = tl_.dma(Unit::kDmaWrite, writeFree_, vecFree_, t.outTile, true,
                                      "store tile " + std::to_string(outIndex));
        storeDone_.push_back(done);
        end_ = std::max(end_, done);
    }

    const LayerSetup& x_;
    LayerReport& r_;
    Timeline tl_;
    bool rowOnlyIsIfmap_;
    bool rowOnlyResident_ = false;
    uint64_t readFree_ = 0, arrayFree_ = 0, vecFree_ = 0, writeFree_ = 0, end_ = 0;
    std::vector<uint64_t> arrayEnd_;       // per fold
    std::vector<uint64_t> storeDone_;      // per output tile
    std::vector<uint64_t> streamedBytes_;  // per fold, released from the scratchpad at its end
};

LayerReport emptyReport(const LayerSpec& layer, const Dims& dims, const ArrayMapping& a) {
    LayerReport r;
    r.name = layer.name;
    r.op = layer.op == LayerOp::kGemm ? "gemm" : "conv";
    r.m = dims.m;
    r.n = dims.n;
    r.k = dims.k;
    r.ofmH = dims.ofmH;
    r.ofmW = dims.ofmW;
    r.folds = a.folds();
    r.macs = dims.m * dims.n * dims.k;
    return r;
}

void finishReport(const LayerSetup& x, double mappingSum, LayerReport& r) {
    r.stallCycles = r.stallDma + r.stallWriteback + r.stallDependency;
    for (UnitCounters& u : r.units) {
        const uint64_t busy = u.active + u.stalledDma + u.stalledDependency;
        u.idle = r.cycles > busy ? r.cycles - busy : 0;
    }
    r.mappingEfficiency = x.a.folds() ? mappingSum / double(x.a.folds()) : 0;
    r.utilization = r.cycles ? double(r.macs) / (double(x.pes) * double(r.cycles)) : 0;
    r.computeUtilization = r.computeCycles ? double(r.macs) / (double(x.pes) * double(r.computeCycles)) : 0;
}

}  // namespace

Result<LayerReport> simulateLayer(const HwConfig& c, const LayerSpec& layer, const SimOptions& opt) {
    if (auto ok = validate(c); !ok) return std::unexpected("hardware config: " + ok.error());
    auto dimsOr = dimsOf(layer);
    if (!dimsOr) return std::unexpected(dimsOr.error());
    const Dims dims = *dimsOr;
    const uint64_t rows = c.arrayRows, cols = c.arrayCols;
    const ArrayMapping a = mapGemm(c.dataflow, rows, cols, dims.m, dims.n, dims.k);
    // The simulation keeps a few words per fold (and a trace event per fold): bound the folds so
    // memory and time stay bounded whatever dimensions a user asks for.
    const uint64_t maxFolds = opt.trace ? kMaxTracedFolds : kMaxFolds;
    if (a.folds() > maxFolds) {
        return std::unexpected("layer " + layer.name + ": " + std::to_string(a.folds()) + " folds on a " +
                               std::to_string(rows) + "x" + std::to_string(cols) + " " +
                               dataflowName(c.dataflow) + " array exceed the simulator's limit of " +
                               std::to_string(maxFolds) + " folds" + (opt.trace ? " with a trace" : "") +
                               "; use smaller dimensions or a larger array");
    }
    const LayerSetup x{c,    dims,        a,          rows,
                       cols, rows * cols, c.dataflow, double(dims.ifmapBytes) / double(dims.m * dims.k)};
    LayerReport r = emptyReport(layer, dims, a);
    const double mappingSum =
        opt.scalesimCompat ? simulateScalesimCompat(x, opt, r) : OverlappedLayer(x, opt, r).run();
    finishReport(x, mappingSum, r);
    return r;
}

}  // namespace npu::sim
