// Writers of the layer simulator's outputs: per-layer CSV, Chrome/Perfetto trace, JSON summary.
// Every number is printed with a fixed format so the same run gives the same bytes.
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "npu/hwsim/layer_sim.h"

namespace npu::sim {

namespace {

std::string fixed(double v, int digits = 6) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

double perCycle(uint64_t bytes, uint64_t cycles) {
    return cycles ? double(bytes) / double(cycles) : 0.0;
}

}  // namespace

std::string csvHeader() {
    return "layer,op,dataflow,array_rows,array_cols,m,n,k,folds,cycles,compute_cycles,stall_cycles,"
           "stall_dma_cycles,stall_writeback_cycles,stall_dependency_cycles,macs,utilization_pct,"
           "compute_utilization_pct,mapping_efficiency_pct,dram_ifmap_read_bytes,"
           "dram_filter_read_bytes,dram_ofmap_write_bytes,sram_ifmap_read_bytes,"
           "sram_filter_read_bytes,sram_ofmap_write_bytes,accumulator_reads,accumulator_writes,"
           "dram_read_bytes_per_cycle,dram_write_bytes_per_cycle,sram_ifmap_bytes_per_cycle,"
           "sram_filter_bytes_per_cycle,sram_ofmap_bytes_per_cycle,dma_transactions\n";
}

std::string csvRow(const LayerReport& r, const HwConfig& c) {
    std::string name = r.name;
    for (char& ch : name) {
        if (ch == ',' || ch == '\n' || ch == '"') ch = '_';
    }
    std::string s = name + "," + r.op + "," + dataflowName(c.dataflow) + "," + std::to_string(c.arrayRows) +
                    "," + std::to_string(c.arrayCols);
    for (uint64_t v : {r.m, r.n, r.k, r.folds, r.cycles, r.computeCycles, r.stallCycles, r.stallDma,
                       r.stallWriteback, r.stallDependency, r.macs}) {
        s += "," + std::to_string(v);
    }
    s += "," + fixed(100 * r.utilization, 4) + "," + fixed(100 * r.computeUtilization, 4) + "," +
         fixed(100 * r.mappingEfficiency, 4);
    for (uint64_t v : {r.dramIfmapRead, r.dramFilterRead, r.dramOfmapWrite, r.sramIfmapRead, r.sramFilterRead,
                       r.sramOfmapWrite, r.accumulatorReads, r.accumulatorWrites}) {
        s += "," + std::to_string(v);
    }
    for (uint64_t v : {r.dramIfmapRead + r.dramFilterRead, r.dramOfmapWrite, r.sramIfmapRead,
                       r.sramFilterRead, r.sramOfmapWrite}) {
        s += "," + fixed(perCycle(v, r.cycles), 4);
    }
    s += "," + std::to_string(r.dmaTransactions) + "\n";
    return s;
}

namespace {

using Json = nlohmann::ordered_json;

// Trace timestamps are microseconds rounded to 1 ns (one cycle at 1 GHz), so the same run gives
// the same bytes.
double micros(uint64_t cycles, const HwConfig& c) {
    return std::round(double(cycles) / double(c.clockMhz) * 1000.0) / 1000.0;
}

double rounded(double v) {
    return std::round(v * 1000.0) / 1000.0;
}

Json metadata(const char* name, int tid, Json args) {
    return Json{{"name", name}, {"ph", "M"}, {"pid", 1}, {"tid", tid}, {"args", std::move(args)}};
}

Json span(const std::string& name, const std::string& cat, int tid, uint64_t start, uint64_t cycles,
          Json args, const HwConfig& c) {
    return Json{{"name", name},
                {"cat", cat},
                {"ph", "X"},
                {"pid", 1},
                {"tid", tid},
                {"ts", micros(start, c)},
                {"dur", micros(cycles, c)},
                {"args", std::move(args)}};
}

Json counter(const char* name, uint64_t time, Json args, const HwConfig& c) {
    return Json{{"name", name}, {"ph", "C"}, {"pid", 1}, {"ts", micros(time, c)}, {"args", std::move(args)}};
}

}  // namespace

std::string traceJson(const std::vector<LayerReport>& layers, const HwConfig& c) {
    // Trace Event Format: pid 1 is the NPU; tid 1..4 one thread (track) per unit, tid 5 the
    // layer spans; counters ("ph":"C") become counter tracks in Perfetto.
    Json events = Json::array();
    events.push_back(metadata("process_name", 0, {{"name", "NPU (hwsim)"}}));
    for (size_t u = 0; u < kUnitCount; ++u) {
        const int tid = static_cast<int>(u) + 1;
        events.push_back(metadata("thread_name", tid, {{"name", unitName(static_cast<Unit>(u))}}));
        events.push_back(metadata("thread_sort_index", tid, {{"sort_index", tid}}));
    }
    events.push_back(metadata("thread_name", 5, {{"name", "layers"}}));
    uint64_t base = 0;
    for (const LayerReport& r : layers) {
        events.push_back(
            span(r.name, "layer", 5, base, r.cycles, {{"cycles", r.cycles}, {"macs", r.macs}}, c));
        for (const TraceEvent& e : r.events) {
            events.push_back(span(e.name, unitName(e.unit), static_cast<int>(e.unit) + 1, base + e.start,
                                  e.duration, {{"start_cycle", base + e.start}, {"cycles", e.duration}}, c));
        }
        for (const TraceCounter& k : r.counters) {
            events.push_back(counter("dram_bandwidth", base + k.time,
                                     {{"read_bytes_per_cycle", rounded(k.dramReadBytesPerCycle)},
                                      {"write_bytes_per_cycle", rounded(k.dramWriteBytesPerCycle)}},
                                     c));
            events.push_back(
                counter("scratchpad_occupancy", base + k.time, {{"bytes", k.scratchpadBytesInUse}}, c));
        }
        base += r.cycles;
    }
    return Json{{"displayTimeUnit", "ns"}, {"traceEvents", std::move(events)}}.dump() + "\n";
}

std::string summaryJson(const std::vector<LayerReport>& layers, const HwConfig& c, bool compat) {
    nlohmann::ordered_json j;
    uint64_t cycles = 0, stalls = 0, macs = 0, dram = 0, compute = 0;
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const LayerReport& r : layers) {
        cycles += r.cycles;
        stalls += r.stallCycles;
        macs += r.macs;
        dram += r.dramBytes();
        compute += r.computeCycles;
        nlohmann::ordered_json l;
        l["name"] = r.name;
        l["op"] = r.op;
        l["m"] = r.m;
        l["n"] = r.n;
        l["k"] = r.k;
        if (r.op == "conv") {
            l["ofm_h"] = r.ofmH;
            l["ofm_w"] = r.ofmW;
        }
        l["folds"] = r.folds;
        l["cycles"] = r.cycles;
        l["compute_cycles"] = r.computeCycles;
        l["stall_cycles"] = {{"total", r.stallCycles},
                             {"dma", r.stallDma},
                             {"writeback", r.stallWriteback},
                             {"dependency", r.stallDependency}};
        l["macs"] = r.macs;
        l["utilization"] = std::stod(fixed(r.utilization));
        l["mapping_efficiency"] = std::stod(fixed(r.mappingEfficiency));
        l["bytes"] = {{"dram_ifmap_read", r.dramIfmapRead},      {"dram_filter_read", r.dramFilterRead},
                      {"dram_ofmap_write", r.dramOfmapWrite},    {"sram_ifmap_read", r.sramIfmapRead},
                      {"sram_filter_read", r.sramFilterRead},    {"sram_ofmap_write", r.sramOfmapWrite},
                      {"accumulator_reads", r.accumulatorReads}, {"accumulator_writes", r.accumulatorWrites}};
        nlohmann::ordered_json units;
        for (size_t u = 0; u < kUnitCount; ++u) {
            const UnitCounters& k = r.units[u];
            units[unitName(static_cast<Unit>(u))] = {{"active", k.active},
                                                     {"stalled_dependency", k.stalledDependency},
                                                     {"stalled_dma", k.stalledDma},
                                                     {"idle", k.idle}};
        }
        l["units"] = units;
        l["dma_transactions"] = r.dmaTransactions;
        l["dma_latency_histogram_log2"] = r.dmaLatencyHistogram;
        list.push_back(l);
    }
    const double pes = double(c.arrayRows) * double(c.arrayCols);
    j["mode"] = compat ? "scalesim-compat" : "default";
    j["array"] = std::to_string(c.arrayRows) + "x" + std::to_string(c.arrayCols);
    j["dataflow"] = dataflowName(c.dataflow);
    j["total_cycles"] = cycles;
    j["stall_cycles"] = stalls;
    j["compute_cycles"] = compute;
    j["macs"] = macs;
    j["utilization"] = std::stod(fixed(cycles ? double(macs) / (pes * double(cycles)) : 0.0));
    j["dram_bytes"] = dram;
    j["dram_bytes_per_cycle"] = std::stod(fixed(perCycle(dram, cycles)));
    j["time_us"] = std::stod(fixed(double(cycles) / double(c.clockMhz), 3));
    j["layers"] = list;
    return j.dump(2) + "\n";
}

}  // namespace npu::sim
