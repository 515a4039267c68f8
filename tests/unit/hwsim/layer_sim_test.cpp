// The layer timing model: SCALE-Sim v2 compatibility, the roofline bound, counters, determinism
// and the output formats.
#include "npu/hwsim/layer_sim.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "npu/hwsim/systolic_model.h"

using namespace npu;
using namespace npu::sim;

namespace {

HwConfig arrayConfig(uint32_t rows, uint32_t cols, isa::Dataflow d) {
    HwConfig c;
    c.arrayRows = rows;
    c.arrayCols = cols;
    c.dataflow = d;
    return c;
}

constexpr isa::Dataflow kFlows[3] = {isa::Dataflow::kOutputStationary, isa::Dataflow::kWeightStationary,
                                     isa::Dataflow::kInputStationary};

struct CompatCase {
    LayerSpec layer;
    uint32_t rows, cols;
    uint64_t expected[3];  // os, ws, is
};

}  // namespace

// Expected totals derived by hand from SCALE-Sim v2's demand matrices (docs/simulator.md):
//   os: ceil(M/R)*ceil(N/C) folds of K + R + C - 2 cycles
//   ws: ceil(K/R)*ceil(N/C) folds of 2R + C + M - 2 cycles
//   is: ceil(K/R)*ceil(M/C) folds of 2R + C + N - 2 cycles
// minus one (SCALE-Sim reports the cycle index of the last output write). Worked checks:
//   64x64x64 on 32x32 os: 2*2 folds * (64 + 62) - 1 = 503 (the example).
//   1x1x1 on 32x32 ws: 1 fold * (64 + 32 + 1 - 2) - 1 = 94.
//   100x37x19 on 8x8 os: 13*5 folds * (19 + 14) - 1 = 2144.
//   conv 224x224x3, 7x7, 64 filters, stride 2: E = ceil((224-7+2)/2) = 110, M = 12100, K = 147;
//   os on 32x32: 379*2 folds * (147 + 62) - 1 = 158421.
TEST_CASE("SCALE-Sim-compatible cycles: 12 shapes x 3 dataflows") {
    const CompatCase cases[] = {
        {LayerSpec::gemm(64, 64, 64), 32, 32, {503, 631, 631}},
        {LayerSpec::gemm(1, 1, 1), 32, 32, {62, 94, 94}},
        {LayerSpec::gemm(100, 37, 19), 8, 8, {2144, 1829, 2300}},
        {LayerSpec::gemm(128, 256, 512), 16, 32, {35711, 48639, 40703}},
        {LayerSpec::gemm(1000, 1000, 1000), 128, 128, {80255, 88447, 88447}},
        {LayerSpec::gemm(7, 130, 3), 4, 16, {377, 260, 151}},
        {LayerSpec::conv(224, 224, 3, 7, 7, 64, 2), 32, 32, {158421, 121939, 299409}},
        {LayerSpec::conv(56, 56, 64, 3, 3, 64, 1), 16, 16, {443591, 426527, 724679}},
        {LayerSpec::conv(28, 28, 128, 1, 1, 256, 1), 32, 8, {132799, 109311, 127791}},
        {LayerSpec::conv(13, 13, 192, 3, 3, 384, 1), 8, 32, {339071, 432863, 371519}},
        {LayerSpec::conv(227, 227, 3, 11, 11, 96, 4), 64, 64, {46943, 38579, 82367}},
        {LayerSpec::conv(14, 14, 96, 1, 1, 576, 1), 32, 32, {19907, 15659, 14069}},
    };
    SimOptions compat;
    compat.scalesimCompat = true;
    for (const CompatCase& cc : cases) {
        for (int d = 0; d < 3; ++d) {
            INFO(cc.layer.name << " M/H=" << cc.layer.m << "/" << cc.layer.ifmH << " array " << cc.rows << "x"
                               << cc.cols << " dataflow " << d);
            auto r = simulateLayer(arrayConfig(cc.rows, cc.cols, kFlows[d]), cc.layer, compat);
            REQUIRE(r.has_value());
            CHECK(r->cycles == cc.expected[d]);
            CHECK(r->stallCycles == 0);
        }
    }
}

TEST_CASE("SCALE-Sim conv output size and GEMM mapping") {
    CHECK(scalesimConvOut(224, 7, 2) == 110);
    CHECK(scalesimConvOut(5, 3, 2) == 2);
    CHECK(scalesimConvOut(4, 3, 2) == 2);  // ceil((4 - 3 + 2) / 2)
    CHECK(scalesimConvOut(2, 3, 1) == 0);
}

TEST_CASE("roofline: default-mode cycles >= max(MACs / PEs, DRAM bytes / bandwidth)") {
    std::mt19937 rng(1234);
    auto pick = [&](uint64_t lo, uint64_t hi) {
        return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
    };
    for (int i = 0; i < 120; ++i) {
        HwConfig c = arrayConfig(uint32_t(1) << pick(2, 6), uint32_t(1) << pick(2, 6), kFlows[i % 3]);
        c.dramBytesPerCycle = uint32_t(pick(1, 64));
        c.dmaBytesPerCycle = uint32_t(pick(1, 64));
        c.dramLatencyCycles = uint32_t(pick(0, 400));
        c.dmaMaxOutstanding = uint32_t(pick(1, 32));
        c.scratchpadBytes = uint32_t(pick(16, 2048)) * 1024;
        LayerSpec l = i % 2 == 0 ? LayerSpec::gemm(pick(1, 700), pick(1, 700), pick(1, 700))
                                 : LayerSpec::conv(pick(8, 64), pick(8, 64), pick(1, 96), pick(1, 5),
                                                   pick(1, 5), pick(1, 128), pick(1, 3));
        auto r = simulateLayer(c, l);
        REQUIRE(r.has_value());
        const double pes = double(c.arrayRows) * c.arrayCols;
        INFO("layer " << i << " cycles " << r->cycles);
        CHECK(double(r->cycles) >= double(r->macs) / pes);
        CHECK(double(r->cycles) >= double(r->dramBytes()) / c.dramBytesPerCycle);
        // Every cycle of every unit is accounted for exactly once.
        for (const UnitCounters& u : r->units) {
            CHECK(u.active + u.stalledDma + u.stalledDependency + u.idle >= r->cycles);
        }
        CHECK(r->stallCycles == r->stallDma + r->stallWriteback + r->stallDependency);
    }
}

TEST_CASE("default mode overlaps folds and stalls when bandwidth runs short") {
    const LayerSpec l = LayerSpec::gemm(256, 256, 256);
    HwConfig fast = arrayConfig(32, 32, isa::Dataflow::kOutputStationary);
    fast.dramBytesPerCycle = fast.dmaBytesPerCycle = 1024;
    fast.dramLatencyCycles = 0;
    auto compat = simulateLayer(fast, l, SimOptions{true, false});
    auto overlapped = simulateLayer(fast, l);
    REQUIRE(compat.has_value());
    REQUIRE(overlapped.has_value());
    CHECK(overlapped->cycles < compat->cycles);
    HwConfig slow = fast;
    slow.dramBytesPerCycle = slow.dmaBytesPerCycle = 1;
    auto starved = simulateLayer(slow, l);
    REQUIRE(starved.has_value());
    CHECK(starved->stallDma > 0);
    CHECK(starved->cycles >= starved->dramBytes());
    CHECK(starved->dmaTransactions > 0);
}

TEST_CASE("layer errors name the field") {
    auto r = simulateLayer(HwConfig{}, LayerSpec::gemm(0, 4, 4, "fc1"));
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().find("fc1") != std::string::npos);
    CHECK(r.error().find("M = 0") != std::string::npos);
    auto k = simulateLayer(HwConfig{}, LayerSpec::conv(4, 4, 1, 5, 5, 1, 1, "c"));
    REQUIRE_FALSE(k.has_value());
    CHECK(k.error().find("kernel") != std::string::npos);
}

TEST_CASE("same layer and config give the same report and trace, byte for byte") {
    HwConfig c = arrayConfig(16, 16, isa::Dataflow::kWeightStationary);
    c.dramBytesPerCycle = 4;
    const LayerSpec l = LayerSpec::conv(30, 30, 16, 3, 3, 40, 1);
    SimOptions o;
    o.trace = true;
    auto a = simulateLayer(c, l, o), b = simulateLayer(c, l, o);
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(traceJson({*a}, c) == traceJson({*b}, c));
    CHECK(csvRow(*a, c) == csvRow(*b, c));
    CHECK(summaryJson({*a}, c, false) == summaryJson({*b}, c, false));
}

TEST_CASE("outputs: CSV columns, trace events, JSON summary keys") {
    HwConfig c;
    SimOptions o;
    o.trace = true;
    auto r = simulateLayer(c, LayerSpec::gemm(64, 64, 64), o);
    REQUIRE(r.has_value());
    const std::string header = csvHeader(), row = csvRow(*r, c);
    CHECK(std::count(header.begin(), header.end(), ',') == std::count(row.begin(), row.end(), ','));
    auto trace = nlohmann::json::parse(traceJson({*r}, c));
    REQUIRE(trace.contains("traceEvents"));
    bool sawArray = false, sawCounter = false;
    for (const auto& e : trace["traceEvents"]) {
        REQUIRE(e.contains("ph"));
        REQUIRE(e.contains("pid"));
        if (e["ph"] == "X") {
            REQUIRE(e.contains("ts"));
            REQUIRE(e.contains("dur"));
            sawArray = sawArray || e["tid"] == 2;
        }
        sawCounter = sawCounter || e["ph"] == "C";
    }
    CHECK(sawArray);
    CHECK(sawCounter);
    auto s = nlohmann::json::parse(summaryJson({*r}, c, false));
    for (const char* key : {"total_cycles", "stall_cycles", "utilization", "macs", "dram_bytes"}) {
        CHECK(s.contains(key));
    }
    CHECK(s["macs"] == 64 * 64 * 64);
}
