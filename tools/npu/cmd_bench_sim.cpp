// npu bench sim: MobileNet-v2's convolutions through the simulated NPU and through XNNPACK.
#include "cmd_bench_sim.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <xnnpack.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "npu/hwsim/config.h"
#include "npu/hwsim/device.h"

namespace npu::tools {

namespace wl = sim::workload;

namespace {

double msSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 == 1 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double peakRssMiB() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

std::string xnnError(const char* call, xnn_status st, size_t layer) {
    return fmt::format("xnnpack: {} failed with status {} at layer {}", call, static_cast<int>(st), layer);
}

// XNNPACK's kernel layout: [outC][kh][kw][inC] (depthwise with XNN_FLAG_DEPTHWISE_CONVOLUTION:
// [kh][kw][C], the NPU's layout); the NPU's is [kh][kw][inC][outC].
std::vector<int8_t> xnnWeights(const wl::Layer& l, const uint8_t* dram) {
    const auto* w = reinterpret_cast<const int8_t*>(dram + l.weights);
    std::vector<int8_t> out(l.weightBytes());
    if (l.kind == wl::LayerKind::kDepthwise) {
        std::copy(w, w + out.size(), out.begin());
        return out;
    }
    const uint64_t k = uint64_t{l.kernel} * l.kernel * l.inC;
    for (uint64_t kk = 0; kk < k; ++kk) {
        for (uint32_t n = 0; n < l.outC; ++n) out[n * k + kk] = w[kk * l.outC + n];
    }
    return out;
}

std::vector<int32_t> biasOf(const wl::Layer& l, const uint8_t* dram) {
    std::vector<int32_t> b(l.outC);
    for (uint32_t i = 0; i < l.outC; ++i) {
        const uint8_t* p = dram + l.bias + 4 * i;
        b[i] = static_cast<int32_t>(p[0] | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) |
                                    (uint32_t{p[3]} << 24));
    }
    return b;
}

}  // namespace

sim::Result<void> runXnnpackBaseline(const wl::Workload& w, const std::vector<uint8_t>& dram,
                                     std::vector<std::vector<int8_t>>& outputs, double* hostMs) {
    if (xnn_status st = xnn_initialize(nullptr); st != xnn_status_success) {
        return std::unexpected(xnnError("xnn_initialize", st, 0));
    }
    std::vector<xnn_operator_t> ops(w.layers.size(), nullptr);
    auto cleanup = [&ops] {
        for (xnn_operator_t op : ops) {
            if (op != nullptr) xnn_delete_operator(op);
        }
    };
    outputs.assign(w.layers.size(), {});
    for (size_t i = 0; i < w.layers.size(); ++i) {
        const wl::Layer& l = w.layers[i];
        const std::vector<int8_t> weights = xnnWeights(l, dram.data());
        const std::vector<int32_t> bias = biasOf(l, dram.data());
        const bool dw = l.kind == wl::LayerKind::kDepthwise;
        const xnn_status st = xnn_create_convolution2d_nhwc_qs8(
            l.pad, l.pad, l.pad, l.pad, l.kernel, l.kernel, l.stride, l.stride, 1, 1, dw ? l.inC : 1,
            dw ? 1 : l.inC, dw ? 1 : l.outC, l.inC, l.outC, static_cast<int8_t>(wl::kActivationZeroPoint),
            wl::kActivationScale, l.weightScale, weights.data(), bias.data(),
            static_cast<int8_t>(wl::kActivationZeroPoint), wl::kActivationScale, -128, 127,
            dw ? XNN_FLAG_DEPTHWISE_CONVOLUTION : 0, &ops[i]);
        if (st != xnn_status_success) {
            cleanup();
            return std::unexpected(xnnError("xnn_create_convolution2d_nhwc_qs8", st, i));
        }
        outputs[i].resize(l.outputBytes());
    }
    double ms = 0;
    for (size_t i = 0; i < w.layers.size(); ++i) {
        const wl::Layer& l = w.layers[i];
        const auto t0 = std::chrono::steady_clock::now();
        xnn_status st = xnn_setup_convolution2d_nhwc_qs8(
            ops[i], 1, l.inH, l.inW, reinterpret_cast<const int8_t*>(dram.data() + l.input),
            outputs[i].data(), nullptr);
        if (st == xnn_status_success) st = xnn_run_operator(ops[i], nullptr);
        ms += msSince(t0);
        if (st != xnn_status_success) {
            cleanup();
            return std::unexpected(xnnError("xnn_setup/run_operator", st, i));
        }
    }
    cleanup();
    *hostMs = ms;
    return {};
}

BenchSimCli::BenchSimCli(CLI::App& bench) {
    cmd_ = bench.add_subcommand(
        "sim",
        "Simulator host speed: MobileNet-v2's int8 convolutions on the simulated NPU vs. XNNPACK (1 thread)");
    cmd_->add_flag("--json", json_, "print JSON");
    cmd_->add_option("--input-size", inputSize_, "image height and width (224 = MobileNet-v2)")
        ->check(CLI::Range(32, 512))
        ->capture_default_str();
    cmd_->add_option("--device-memory-mib", deviceMemoryMiB_, "simulated device memory")
        ->check(CLI::Range(8, 4096))
        ->capture_default_str();
    cmd_->add_option("--repeat", repeat_, "runs of each side; the figures are medians")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    cmd_->add_option("--host-kernel", hostKernel_,
                     "the simulator's arithmetic: portable, avx2, avx512bw or avx512vnni (default: the best "
                     "this host runs)")
        ->check(CLI::IsMember({"portable", "avx2", "avx512bw", "avx512vnni"}));
    cmd_->add_option("--hw-config", hwConfig_, "hardware config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);
    cmd_->add_flag("--check-reference", checkReference_,
                   "also compare every simulator output bit for bit with a scalar reference (slow)");
}

bool BenchSimCli::parsed() const {
    return cmd_->parsed();
}

namespace {

// The simulator's figures: the median host time of `repeat` runs of the stream (every run must
// give the same cycles) and, from one more run with host profiling on, the share of host time
// spent in arithmetic.
struct SimFigures {
    double hostMs = 0;
    wl::RunResult ran;
    double arithmeticShare = 0;
};

sim::Result<SimFigures> timeSimulator(sim::Device& dev, const wl::Workload& w, uint32_t repeat) {
    // The stream is idempotent (every layer rewrites its own output from its input), so it
    // can run again; the median of the runs is the figure.
    std::vector<double> runs;
    std::optional<wl::RunResult> ran;
    for (uint32_t i = 0; i < repeat; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto r = wl::runOnDevice(dev, w);
        runs.push_back(msSince(t0));
        if (!r) return std::unexpected(r.error());
        if (ran && r->cycles != ran->cycles)
            return std::unexpected("runs of the same stream differ in cycles");
        ran = *r;
    }
    // Host profiling costs two clock reads per unit command: a separate run, so the headline
    // time has none of it.
    dev.setHostProfiling(true);
    auto profiled = wl::runOnDevice(dev, w);
    dev.setHostProfiling(false);
    if (!profiled || profiled->cycles != ran->cycles) {
        return std::unexpected(fmt::format("the profiled run differs from the first ({} vs {} cycles)",
                                           profiled ? profiled->cycles : 0, ran->cycles));
    }
    const sim::UnitStats stats = dev.unitStats();
    const double share =
        stats.hostProcessNs == 0 ? 0.0 : static_cast<double>(stats.hostArithmeticNs) / stats.hostProcessNs;
    return SimFigures{median(runs), *ran, share};
}

// How the simulator's outputs (in `dram`) compare with XNNPACK's and, when asked, the reference's.
struct Agreement {
    uint64_t checked = 0, mismatches = 0;
    int maxDiff = 0;
    int64_t referenceMismatches = -1;  // -1: not checked
    bool agree() const { return maxDiff <= kXnnpackTolerance && referenceMismatches <= 0; }
};

Agreement compareWithBaselines(const wl::Workload& w, const std::vector<uint8_t>& dram,
                               const std::vector<std::vector<int8_t>>& cpuOut, bool checkReference) {
    Agreement a;
    for (size_t i = 0; i < w.layers.size(); ++i) {
        const auto* simOut = reinterpret_cast<const int8_t*>(dram.data() + w.layers[i].output);
        for (uint64_t j = 0; j < cpuOut[i].size(); ++j) {
            const int d = std::abs(int{simOut[j]} - int{cpuOut[i][j]});
            a.mismatches += d != 0;
            a.maxDiff = std::max(a.maxDiff, d);
        }
        a.checked += cpuOut[i].size();
    }
    if (!checkReference) return a;
    a.referenceMismatches = 0;
    for (const wl::Layer& l : w.layers) {
        std::vector<int8_t> ref(l.outputBytes());
        wl::referenceLayer(l, dram.data(), ref.data());
        const auto* simOut = reinterpret_cast<const int8_t*>(dram.data() + l.output);
        for (uint64_t j = 0; j < ref.size(); ++j) a.referenceMismatches += ref[j] != simOut[j];
    }
    return a;
}

void printText(const nlohmann::ordered_json& j, const wl::Workload& w, const SimFigures& sim,
               const Agreement& a, const sim::HwConfig& hw) {
    fmt::print("workload                        {}\n", j["workload"].get<std::string>());
    fmt::print("layers / MACs / commands        {} / {} / {}\n", w.layers.size(), w.totalMacs,
               w.commandCount);
    fmt::print("runs (figures are medians)      {}\n", j["runs"].get<uint32_t>());
    fmt::print("sim_host_ms                     {:.1f}\n", sim.hostMs);
    fmt::print("cpu_host_ms (XNNPACK, 1 thread) {:.1f}\n", j["cpu_host_ms"].get<double>());
    fmt::print("ratio (sim / cpu)               {:.2f}\n", j["ratio"].get<double>());
    fmt::print("simulated MACs per host second  {:.3g}\n", j["simulated_macs_per_host_second"].get<double>());
    fmt::print("host time: arithmetic / timing  {:.1f} % / {:.1f} %\n", 100 * sim.arithmeticShare,
               100 * (1 - sim.arithmeticShare));
    fmt::print("simulated cycles                {} ({:.3f} ms at {} MHz)\n", sim.ran.cycles,
               j["simulated_ms"].get<double>(), hw.clockMhz);
    fmt::print("GEMM kernel                     {}\n", sim::hostKernelName());
    fmt::print("outputs vs XNNPACK              {} checked, {} differ, max |diff| {} (rule: <= 1)\n",
               a.checked, a.mismatches, a.maxDiff);
    if (a.referenceMismatches >= 0)
        fmt::print("outputs vs reference            {} differ (rule: 0)\n", a.referenceMismatches);
    fmt::print("peak RSS                        {:.1f} MiB (device memory {} MiB, limit {} MiB)\n",
               j["peak_rss_mib"].get<double>(), j["device_memory_mib"].get<uint32_t>(),
               j["rss_limit_mib"].get<uint32_t>());
}

// The XNNPACK baseline `repeat` times: the median host time in ms; its outputs in `out`.
sim::Result<double> timeXnnpack(const wl::Workload& w, const std::vector<uint8_t>& dram, uint32_t repeat,
                                std::vector<std::vector<int8_t>>& out) {
    std::vector<double> runs;
    for (uint32_t i = 0; i < repeat; ++i) {
        double ms = 0;
        if (auto cpu = runXnnpackBaseline(w, dram, out, &ms); !cpu) return std::unexpected(cpu.error());
        runs.push_back(ms);
    }
    return median(runs);
}

// One `npu bench sim` run's figures.
struct SimBench {
    const wl::Workload& w;
    const SimFigures& sim;
    double cpuMs;
    const Agreement& a;
    const sim::HwConfig& hw;
    uint32_t inputSize, repeat, deviceMemoryMiB;
};

nlohmann::ordered_json figuresJson(const SimBench& b) {
    const SimFigures& sim = b.sim;
    const Agreement& a = b.a;
    nlohmann::ordered_json j;
    j["workload"] = fmt::format("mobilenet_v2 convolutions, int8, {}x{}x3", b.inputSize, b.inputSize);
    j["layers"] = b.w.layers.size();
    j["macs"] = b.w.totalMacs;
    j["commands"] = b.w.commandCount;
    j["runs"] = b.repeat;
    j["sim_host_ms"] = sim.hostMs;
    j["cpu_host_ms"] = b.cpuMs;
    j["ratio"] = b.cpuMs > 0 ? sim.hostMs / b.cpuMs : 0.0;
    j["simulated_macs_per_host_second"] = static_cast<double>(sim.ran.macs) / (sim.hostMs / 1000.0);
    j["host_time_share"] = {{"arithmetic", sim.arithmeticShare}, {"timing", 1.0 - sim.arithmeticShare}};
    j["simulated_cycles"] = sim.ran.cycles;
    j["simulated_ms"] = static_cast<double>(sim.ran.cycles) / (b.hw.clockMhz * 1000.0);
    j["pmu_macs"] = sim.ran.macs;
    j["gemm_kernel"] = sim::hostKernelName();
    j["cpu_baseline"] =
        "XNNPACK qs8 convolution2d_nhwc, 1 thread (setup + run; weight packing at create excluded)";
    j["outputs_checked"] = a.checked;
    j["xnnpack_mismatches"] = a.mismatches;
    j["xnnpack_max_abs_diff"] = a.maxDiff;
    j["xnnpack_rule"] = "|sim - xnnpack| <= 1 (fp32 vs fixed-point requantization)";
    if (a.referenceMismatches >= 0) j["reference_mismatches"] = a.referenceMismatches;
    j["outputs_agree"] = a.agree();
    j["peak_rss_mib"] = peakRssMiB();
    j["device_memory_mib"] = b.deviceMemoryMiB;
    j["rss_limit_mib"] = b.deviceMemoryMiB + 64;
    return j;
}

// The simulated NPU's configuration (--hw-config, else the default) and the GEMM kernel
// (--host-kernel); an error message when either is refused.
sim::Result<sim::HwConfig> configure(const std::string& hwConfig, const std::string& hostKernel) {
    sim::HwConfig hw;
    if (!hwConfig.empty()) {
        auto loaded = sim::loadHwConfig(hwConfig);
        if (!loaded) return std::unexpected(loaded.error());
        hw = *loaded;
    }
    if (!hostKernel.empty() && !sim::selectHostKernel(hostKernel))
        return std::unexpected("--host-kernel " + hostKernel + ": this host cannot run it");
    return hw;
}

}  // namespace

int BenchSimCli::run() const {
    auto hw = configure(hwConfig_, hostKernel_);
    if (!hw) {
        fmt::print(stderr, "npu bench sim: {}\n", hw.error());
        return 2;
    }
    std::vector<uint8_t> dram(uint64_t{deviceMemoryMiB_} << 20, 0);
    auto built = wl::buildWorkload(wl::mobilenetV2Layers(inputSize_), *hw, 1, dram);
    if (!built) {
        fmt::print(stderr, "npu bench sim: {}\n", built.error());
        return 2;
    }
    const wl::Workload& w = *built;
    auto device = sim::Device::create(*hw, dram.data(), dram.size());
    if (!device) {
        fmt::print(stderr, "npu bench sim: {}\n", device.error());
        return 2;
    }
    auto sim = timeSimulator(**device, w, repeat_);
    std::vector<std::vector<int8_t>> cpuOut;
    auto cpuMs = sim ? timeXnnpack(w, dram, repeat_, cpuOut) : sim::Result<double>(0.0);
    if (!sim || !cpuMs) {
        fmt::print(stderr, "npu bench sim: {}\n", !sim ? sim.error() : cpuMs.error());
        return 1;
    }
    const Agreement a = compareWithBaselines(w, dram, cpuOut, checkReference_);
    const nlohmann::ordered_json j =
        figuresJson({w, *sim, *cpuMs, a, *hw, inputSize_, repeat_, deviceMemoryMiB_});
    if (json_) {
        fmt::print("{}\n", j.dump(2));
    } else {
        printText(j, w, *sim, a, *hw);
    }
    if (!a.agree()) {
        fmt::print(stderr, "npu bench sim: simulator and baseline outputs disagree\n");
        return 1;
    }
    return 0;
}

}  // namespace npu::tools
