// Writers of the layer simulator's outputs: per-layer CSV, Chrome/Perfetto trace, JSON summary.
// Every number is printed with a fixed format so the same run gives the same bytes.
#include <cinttypes>
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

double perCycle(uint64_t bytes, uint64_t cycles) { return cycles ? double(bytes) / double(cycles) : 0.0; }

// Trace timestamps are microseconds; three decimals resolve 1 ns (one cycle at 1 GHz).
std::string micros(uint64_t cycles, const HwConfig& c) {
    return fixed(double(cycles) / double(c.clockMhz), 3);
}

std::string escaped(const std::string& s) { return nlohmann::json(s).dump(); }

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
    std::string s = name + "," + r.op + "," + dataflowName(c.dataflow) + "," +
                    std::to_string(c.arrayRows) + "," + std::to_string(c.arrayCols);
    for (uint64_t v : {r.m, r.n, r.k, r.folds, r.cycles, r.computeCycles, r.stallCycles, r.stallDma,
                       r.stallWriteback, r.stallDependency, r.macs}) {
        s += "," + std::to_string(v);
    }
    s += "," + fixed(100 * r.utilization, 4) + "," + fixed(100 * r.computeUtilization, 4) + "," +
         fixed(100 * r.mappingEfficiency, 4);
    for (uint64_t v : {r.dramIfmapRead, r.dramFilterRead, r.dramOfmapWrite, r.sramIfmapRead,
                       r.sramFilterRead, r.sramOfmapWrite, r.accumulatorReads, r.accumulatorWrites}) {
        s += "," + std::to_string(v);
    }
    for (uint64_t v : {r.dramIfmapRead + r.dramFilterRead, r.dramOfmapWrite, r.sramIfmapRead,
                       r.sramFilterRead, r.sramOfmapWrite}) {
        s += "," + fixed(perCycle(v, r.cycles), 4);
    }
    s += "," + std::to_string(r.dmaTransactions) + "\n";
    return s;
}

std::string traceJson(const std::vector<LayerReport>& layers, const HwConfig& c) {
    // Trace Event Format: pid 1 is the NPU; tid 1..4 one thread (track) per unit, tid 5 the
    // layer spans; counters ("ph":"C") become counter tracks in Perfetto.
    std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"NPU (hwsim)\"}}";
    for (size_t u = 0; u < kUnitCount; ++u) {
        out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(u + 1) +
               ",\"args\":{\"name\":\"" + unitName(static_cast<Unit>(u)) + "\"}}";
        out += ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":" +
               std::to_string(u + 1) + ",\"args\":{\"sort_index\":" + std::to_string(u + 1) + "}}";
    }
    out += ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":5,\"args\":{\"name\":\"layers\"}}";
    uint64_t base = 0;
    for (const LayerReport& r : layers) {
        out += ",\n{\"name\":" + escaped(r.name) + ",\"cat\":\"layer\",\"ph\":\"X\",\"pid\":1,\"tid\":5,\"ts\":" +
               micros(base, c) + ",\"dur\":" + micros(r.cycles, c) + ",\"args\":{\"cycles\":" +
               std::to_string(r.cycles) + ",\"macs\":" + std::to_string(r.macs) + "}}";
        for (const TraceEvent& e : r.events) {
            out += ",\n{\"name\":" + escaped(e.name) + ",\"cat\":\"" + unitName(e.unit) +
                   "\",\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(static_cast<int>(e.unit) + 1) +
                   ",\"ts\":" + micros(base + e.start, c) + ",\"dur\":" + micros(e.duration, c) +
                   ",\"args\":{\"start_cycle\":" + std::to_string(base + e.start) +
                   ",\"cycles\":" + std::to_string(e.duration) + "}}";
        }
        for (const TraceCounter& k : r.counters) {
            const std::string ts = micros(base + k.time, c);
            out += ",\n{\"name\":\"dram_bandwidth\",\"ph\":\"C\",\"pid\":1,\"ts\":" + ts +
                   ",\"args\":{\"read_bytes_per_cycle\":" + fixed(k.dramReadBytesPerCycle, 3) +
                   ",\"write_bytes_per_cycle\":" + fixed(k.dramWriteBytesPerCycle, 3) + "}}";
            out += ",\n{\"name\":\"scratchpad_occupancy\",\"ph\":\"C\",\"pid\":1,\"ts\":" + ts +
                   ",\"args\":{\"bytes\":" + std::to_string(k.scratchpadBytesInUse) + "}}";
        }
        base += r.cycles;
    }
    out += "\n]}\n";
    return out;
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
        l["stall_cycles"] = {{"total", r.stallCycles}, {"dma", r.stallDma},
                             {"writeback", r.stallWriteback}, {"dependency", r.stallDependency}};
        l["macs"] = r.macs;
        l["utilization"] = std::stod(fixed(r.utilization));
        l["mapping_efficiency"] = std::stod(fixed(r.mappingEfficiency));
        l["bytes"] = {{"dram_ifmap_read", r.dramIfmapRead}, {"dram_filter_read", r.dramFilterRead},
                      {"dram_ofmap_write", r.dramOfmapWrite}, {"sram_ifmap_read", r.sramIfmapRead},
                      {"sram_filter_read", r.sramFilterRead}, {"sram_ofmap_write", r.sramOfmapWrite},
                      {"accumulator_reads", r.accumulatorReads},
                      {"accumulator_writes", r.accumulatorWrites}};
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
