// npu sim gemm M N K | npu sim conv H W C R S K STRIDE: one layer through hwsim's timing model.
#include "cmd_sim.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_checks.h"
#include "npu/hwsim/config.h"
#include "npu/hwsim/layer_sim.h"

namespace npu::tools {

namespace {

// A dimension beyond this is refused on the command line (the simulator's own limit is higher,
// but so large a layer runs into the fold limit anyway; docs/reliability.md).
constexpr uint64_t kMaxDim = uint64_t{1} << 24;

bool writeFile(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) {
        fmt::print(stderr, "npu sim: cannot write {}\n", path);
        return false;
    }
    return true;
}

sim::Result<void> applyArray(const std::string& array, sim::HwConfig& c) {
    unsigned rows = 0, cols = 0;
    char x = 0, extra = 0;
    if (std::sscanf(array.c_str(), "%u%c%u%c", &rows, &x, &cols, &extra) != 3 || (x != 'x' && x != 'X')) {
        return std::unexpected("--array " + array + ": expected RxC, e.g. 32x32");
    }
    c.arrayRows = rows;
    c.arrayCols = cols;
    return {};
}

void addCommon(CLI::App* cmd, std::string& array, std::string& dataflow, std::string& hwConfig, bool& compat,
               bool& json, std::string& csv, std::string& trace, std::string& summary) {
    cmd->add_option("--array", array, "systolic array RxC (overrides the config), e.g. 32x32");
    cmd->add_option("--dataflow", dataflow, "os, ws or is (overrides the config)")
        ->check(CLI::IsMember({"os", "ws", "is"}));
    cmd->add_flag("--scalesim-compat", compat,
                  "SCALE-Sim v2 cycle accounting: no fold overlap, no memory limits");
    cmd->add_option("--hw-config", hwConfig, "hardware config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);
    cmd->add_flag("--json", json, "print the JSON summary");
    cmd->add_option("--csv", csv, "write the per-layer CSV to FILE");
    cmd->add_option("--trace", trace, "write a Chrome/Perfetto trace JSON to FILE");
    cmd->add_option("--summary", summary, "write the JSON summary to FILE");
}

}  // namespace

SimCli::SimCli(CLI::App& app) {
    sim_ = app.add_subcommand("sim",
                              "Simulate one layer on the NPU model: cycles, stalls, utilization, traffic");
    sim_->require_subcommand(1);
    gemm_ = sim_->add_subcommand("gemm", "GEMM: M output rows, N output columns, K reduction");
    gemm_->add_option("M", gemmDims_[0], "output rows")->required()->check(wholeNumberIn(1, kMaxDim));
    gemm_->add_option("N", gemmDims_[1], "output columns")->required()->check(wholeNumberIn(1, kMaxDim));
    gemm_->add_option("K", gemmDims_[2], "reduction length")->required()->check(wholeNumberIn(1, kMaxDim));
    addCommon(gemm_, array_, dataflow_, hwConfig_, scalesimCompat_, json_, csvFile_, traceFile_,
              summaryFile_);
    conv_ =
        sim_->add_subcommand("conv", "Convolution (no padding): input HxWxC, RxS kernel, K filters, STRIDE");
    const char* names[] = {"H", "W", "C", "R", "S", "K", "STRIDE"};
    const char* help[] = {"input height",      "input width",  "input channels",
                          "kernel height",     "kernel width", "filters (output channels)",
                          "stride (both axes)"};
    for (int i = 0; i < 7; ++i) {
        conv_->add_option(names[i], convDims_[i], help[i])->required()->check(wholeNumberIn(1, kMaxDim));
    }
    addCommon(conv_, array_, dataflow_, hwConfig_, scalesimCompat_, json_, csvFile_, traceFile_,
              summaryFile_);
}

bool SimCli::parsed() const {
    return sim_->parsed();
}

int SimCli::run() const {
    sim::HwConfig config;
    if (!hwConfig_.empty()) {
        auto loaded = sim::loadHwConfig(hwConfig_);
        if (!loaded) {
            fmt::print(stderr, "npu sim: {}\n", loaded.error());
            return 2;
        }
        config = *loaded;
    }
    if (!array_.empty()) {
        if (auto ok = applyArray(array_, config); !ok) {
            fmt::print(stderr, "npu sim: {}\n", ok.error());
            return 2;
        }
    }
    if (!dataflow_.empty()) config.dataflow = *sim::parseDataflow(dataflow_);
    if (auto ok = sim::validate(config); !ok) {
        fmt::print(stderr, "npu sim: hardware config: {}\n", ok.error());
        return 2;
    }
    sim::LayerSpec layer;
    if (gemm_->parsed()) {
        layer = sim::LayerSpec::gemm(gemmDims_[0], gemmDims_[1], gemmDims_[2],
                                     fmt::format("gemm_{}x{}x{}", gemmDims_[0], gemmDims_[1], gemmDims_[2]));
    } else {
        const uint64_t* d = convDims_;
        layer = sim::LayerSpec::conv(
            d[0], d[1], d[2], d[3], d[4], d[5], d[6],
            fmt::format("conv_{}x{}x{}_{}x{}_k{}_s{}", d[0], d[1], d[2], d[3], d[4], d[5], d[6]));
    }
    sim::SimOptions options;
    options.scalesimCompat = scalesimCompat_;
    options.trace = !traceFile_.empty();
    auto report = sim::simulateLayer(config, layer, options);
    if (!report) {
        fmt::print(stderr, "npu sim: {}\n", report.error());
        return 2;
    }
    const std::vector<sim::LayerReport> layers{*report};
    const std::string summary = sim::summaryJson(layers, config, scalesimCompat_);
    if (!csvFile_.empty() && !writeFile(csvFile_, sim::csvHeader() + sim::csvRow(*report, config))) return 1;
    if (!traceFile_.empty() && !writeFile(traceFile_, sim::traceJson(layers, config))) return 1;
    if (!summaryFile_.empty() && !writeFile(summaryFile_, summary)) return 1;
    if (json_) {
        fmt::print("{}", summary);
        return 0;
    }
    const sim::LayerReport& r = *report;
    fmt::print("{} on {}x{} {} ({} mode)\n", r.name, config.arrayRows, config.arrayCols,
               sim::dataflowName(config.dataflow), scalesimCompat_ ? "SCALE-Sim-compatible" : "default");
    fmt::print("  M={} N={} K={}  folds={}  MACs={}\n", r.m, r.n, r.k, r.folds, r.macs);
    fmt::print("  total cycles       {}\n", r.cycles);
    fmt::print("  compute cycles     {}\n", r.computeCycles);
    fmt::print("  stall cycles       {} (dma {}, writeback {}, dependency {})\n", r.stallCycles, r.stallDma,
               r.stallWriteback, r.stallDependency);
    fmt::print("  utilization        {:.2f} %   mapping efficiency {:.2f} %\n", 100 * r.utilization,
               100 * r.mappingEfficiency);
    fmt::print("  DRAM bytes         {} (ifmap {}, filter {}, ofmap {})  {:.2f} B/cycle\n", r.dramBytes(),
               r.dramIfmapRead, r.dramFilterRead, r.dramOfmapWrite, r.dramBandwidth());
    fmt::print("  time at {} MHz    {:.3f} us\n", config.clockMhz, double(r.cycles) / config.clockMhz);
    return 0;
}

}  // namespace npu::tools
