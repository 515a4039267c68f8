#pragma once
// Layer-level timing simulation: one GEMM or convolution tiled onto the configured NPU, its folds
// scheduled event by event over the units (DMA read channel, MAC array, vector unit, DMA write
// channel, shared DRAM), with every cycle of every unit attributed (active, stalled on a
// dependency, stalled on DMA, idle). This is the model behind `npu sim gemm|conv`; the
// per-layer CSV, the Perfetto trace and the JSON summary are written from its reports.
//
// Two modes (docs/simulator.md):
//  - SCALE-Sim-compatible: folds run in isolation, memories are unlimited and free, the total is
//    SCALE-Sim v2's (systolic_model.h).
//  - default: folds overlap in the array, operand tiles are double buffered so DMA overlaps
//    compute, DMA pays latency, bandwidth and the outstanding-request cap, DRAM bandwidth is
//    shared by both channels, the array stalls when data is late.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "npu/hwsim/config.h"

namespace npu::sim {

enum class LayerOp { kGemm, kConv };

struct LayerSpec {
    std::string name = "layer";
    LayerOp op = LayerOp::kGemm;
    // GEMM: M = output rows, N = output columns, K = reduction.
    uint64_t m = 0, n = 0, k = 0;
    // CONV (NHWC, no padding: output ceil((H - R + S) / S)): input H x W x C, R x S kernel,
    // `filters` output channels, one stride for both axes.
    uint64_t ifmH = 0, ifmW = 0, channels = 0, kernelH = 0, kernelW = 0, filters = 0, stride = 1;

    static LayerSpec gemm(uint64_t m, uint64_t n, uint64_t k, std::string name = "gemm");
    static LayerSpec conv(uint64_t h, uint64_t w, uint64_t c, uint64_t r, uint64_t s, uint64_t filters,
                          uint64_t stride, std::string name = "conv");
};

struct SimOptions {
    bool scalesimCompat = false;
    bool trace = false;  // keep the unit events for writeTrace
};

enum class Unit : uint8_t { kDmaRead, kArray, kVector, kDmaWrite };
inline constexpr size_t kUnitCount = 4;
const char* unitName(Unit u);

struct UnitCounters {
    uint64_t active = 0;
    uint64_t stalledDependency = 0;  // waiting for a producer unit (e.g. the store waits for requant)
    uint64_t stalledDma = 0;         // waiting for data from DRAM or for a buffer to drain to DRAM
    uint64_t idle = 0;               // nothing to do
};

// A DMA latency histogram: bucket i counts transfers with latency in [2^i, 2^(i+1)) cycles
// (bucket 0 also holds latency 0).
inline constexpr size_t kLatencyBuckets = 24;

struct TraceEvent {
    Unit unit;
    uint64_t start = 0, duration = 0;
    std::string name;
};
struct TraceCounter {
    uint64_t time = 0;
    double dramReadBytesPerCycle = 0, dramWriteBytesPerCycle = 0;
    uint64_t scratchpadBytesInUse = 0;
};

struct LayerReport {
    std::string name, op;
    uint64_t m = 0, n = 0, k = 0;
    uint64_t ofmH = 0, ofmW = 0;  // conv only
    uint64_t folds = 0;
    uint64_t cycles = 0;
    uint64_t computeCycles = 0;  // cycles the array was active
    // Stall cycles of the array by cause; stallCycles is their sum.
    uint64_t stallDma = 0, stallWriteback = 0, stallDependency = 0, stallCycles = 0;
    uint64_t macs = 0;
    double utilization = 0;         // macs / (R * C * cycles)
    double mappingEfficiency = 0;   // mean over folds of used PEs / (R * C)
    double computeUtilization = 0;  // macs / (R * C * computeCycles)
    // Bytes per memory and operand.
    uint64_t dramIfmapRead = 0, dramFilterRead = 0, dramOfmapWrite = 0;
    uint64_t sramIfmapRead = 0, sramFilterRead = 0, sramOfmapWrite = 0;
    uint64_t accumulatorReads = 0, accumulatorWrites = 0;  // int32 entries
    uint64_t dmaTransactions = 0;
    std::array<uint64_t, kLatencyBuckets> dmaLatencyHistogram{};
    std::array<UnitCounters, kUnitCount> units{};
    std::vector<TraceEvent> events;
    std::vector<TraceCounter> counters;

    uint64_t dramBytes() const { return dramIfmapRead + dramFilterRead + dramOfmapWrite; }
    double dramBandwidth() const { return cycles ? double(dramBytes()) / double(cycles) : 0.0; }
};

// The most array folds one simulated layer may take (a few words of memory each), and with a
// trace (an event each): larger layers are refused with a message naming the limit.
inline constexpr uint64_t kMaxFolds = uint64_t{1} << 21;
inline constexpr uint64_t kMaxTracedFolds = uint64_t{1} << 15;

// Rejects a layer the model cannot run (a zero dimension, a kernel larger than its input, more
// than kMaxFolds folds) with a message naming the field or the limit.
Result<LayerReport> simulateLayer(const HwConfig& config, const LayerSpec& layer,
                                  const SimOptions& options = {});

// ---- Outputs (docs/simulator.md lists every column and key) ------------------------------------
std::string csvHeader();
std::string csvRow(const LayerReport& r, const HwConfig& config);
// Chrome/Perfetto Trace Event Format: one track per unit, counter tracks for DRAM bandwidth and
// scratchpad occupancy; `layers` are laid end to end on the time axis.
std::string traceJson(const std::vector<LayerReport>& layers, const HwConfig& config);
std::string summaryJson(const std::vector<LayerReport>& layers, const HwConfig& config, bool scalesimCompat);

}  // namespace npu::sim
