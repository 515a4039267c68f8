// npu bench onnx (see cmd_bench_onnx.h and docs/onnx.md).
#include "cmd_bench_onnx.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

#include "cmd_onnx.h"
#include "npu/framework/npy.h"
#include "npu/framework/onnx_import.h"
#include "npu/framework/onnx_run.h"
#include "npu/framework/partition.h"

namespace npu::tools {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Outputs agree with ONNX Runtime's when |ours - ort| <= kAtol + kRtol * |ort| element-wise
// (float32 summation order differs between the two; docs/onnx.md).
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-4;

double msSince(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// Latency percentiles of the timed runs (nearest rank), in ms.
Json percentiles(std::vector<double> v) {
    if (v.empty()) return nullptr;
    std::sort(v.begin(), v.end());
    auto rank = [&](double p) { return v[std::min(v.size() - 1, size_t(p / 100.0 * double(v.size())))]; };
    return {{"min", v.front()}, {"p50", rank(50)}, {"p90", rank(90)}, {"p99", rank(99)}, {"max", v.back()}};
}

// A progress bar on stderr when it is a terminal: "label [#####.....] k/n".
void progress(const char* label, uint32_t done, uint32_t total) {
    if (total < 2 || !isatty(STDERR_FILENO)) return;
    constexpr uint32_t kWidth = 30;
    const uint32_t filled = done * kWidth / total;
    std::fprintf(stderr, "\r%-10s [%s%s] %u/%u", label, std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total);
    if (done == total) std::fputc('\n', stderr);
}

// tools/onnxruntime/run.js: $NPU_ONNXRUNTIME_SCRIPT, else next to the source tree of this
// binary (build/tools/npu -> tools/onnxruntime), else under the working directory.
std::optional<std::string> findOrtScript() {
    if (const char* env = std::getenv("NPU_ONNXRUNTIME_SCRIPT")) return std::string(env);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    std::vector<fs::path> candidates = {fs::current_path(ec) / "tools/onnxruntime/run.js"};
    for (fs::path p = exe.parent_path(); !ec && !p.empty() && p != p.root_path(); p = p.parent_path())
        candidates.push_back(p / "tools/onnxruntime/run.js");
    for (const auto& c : candidates) {
        if (fs::exists(c, ec)) return c.string();
    }
    return std::nullopt;
}

struct Captured {
    int exitCode = -1;
    std::string out;
};

Captured capture(const std::string& cmd) {
    Captured c;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return c;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) c.out.append(buf.data(), n);
    const int status = pclose(p);
    c.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return c;
}

std::string shellQuote(const std::string& s) {
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
}

// ONNX Runtime on the same inputs: its median time and its outputs, or the reason it did not run.
struct OrtRun {
    std::optional<double> ms;
    std::vector<framework::OnnxTensor> outputs;
    std::string version;
    std::string reason;
};

OrtRun runOnnxRuntime(const std::string& model, const std::vector<framework::OnnxTensor>& inputs,
                      uint32_t runs) {
    OrtRun r;
    const auto script = findOrtScript();
    if (!script) return r.reason = "tools/onnxruntime/run.js not found (set NPU_ONNXRUNTIME_SCRIPT)", r;
    if (capture("node --version 2>/dev/null").exitCode != 0) return r.reason = "node is not installed", r;
    char tmpl[] = "/tmp/npu-bench-onnx-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return r.reason = "cannot create a temporary directory", r;
    const fs::path dir = tmpl;
    std::string cmd = "node " + shellQuote(*script) + " " + shellQuote(model);
    for (const auto& in : inputs) {
        const fs::path file = dir / (in.name + ".npy");
        std::vector<uint32_t> dims(in.dims.begin(), in.dims.end());
        const auto type = framework::halTypeOfOnnx(in.elementType);
        if (!type || !framework::writeNpyFile(file.string(), *type, dims, in.data)) {
            r.reason = "cannot write input " + in.name + " as .npy";
            fs::remove_all(dir);
            return r;
        }
        cmd += " --input " + shellQuote(in.name + "=" + file.string());
    }
    const fs::path errors = dir / "stderr.txt";
    cmd += " --out-dir " + shellQuote((dir / "out").string()) + " --runs " + std::to_string(runs) + " 2>" +
           shellQuote(errors.string());
    const auto c = capture(cmd);  // stdout: one JSON line
    auto j = Json::parse(c.out.substr(0, c.out.find('\n')), nullptr, false);
    if (c.exitCode != 0 || j.is_discarded() || !j.contains("onnxruntime_ms")) {
        std::ifstream in(errors);
        const std::string why((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        r.reason = c.exitCode == 3
                       ? "onnxruntime-node is not installed (scripts/fetch-models.sh --runtime)"
                       : "run.js failed (exit " + std::to_string(c.exitCode) + "): " + why + c.out;
        while (!r.reason.empty() && r.reason.back() == '\n') r.reason.pop_back();
        fs::remove_all(dir);
        return r;
    }
    for (const auto& o : j["outputs"]) {
        auto t = framework::loadOnnxTensorFile(o["file"].get<std::string>());
        if (!t) {
            r.reason = t.error().message;
            fs::remove_all(dir);
            return r;
        }
        t->name = o["name"].get<std::string>();
        r.outputs.push_back(std::move(*t));
    }
    r.ms = j["onnxruntime_ms"].get<double>();
    r.version = j.value("version", Json()).is_string() ? j["version"].get<std::string>() : "";
    fs::remove_all(dir);
    return r;
}

// Max |a - b| over the float outputs, and whether every element is within kAtol + kRtol * |b|.
struct Diff {
    double maxAbs = 0.0;
    bool within = true;
};

Diff compareFloat(const std::vector<framework::OnnxTensor>& ours,
                  const std::vector<framework::OnnxTensor>& ort) {
    Diff d;
    if (ours.size() != ort.size()) return {INFINITY, false};
    for (size_t i = 0; i < ours.size(); ++i) {
        if (ours[i].elementType != 1) continue;
        const auto a = valuesOf(ours[i]), b = valuesOf(ort[i]);
        if (a.size() != b.size()) return {INFINITY, false};
        for (size_t k = 0; k < a.size(); ++k) {
            const double diff = std::abs(a[k] - b[k]);
            d.maxAbs = std::max(d.maxAbs, diff);
            d.within = d.within && diff <= kAtol + kRtol * std::abs(b[k]);
        }
    }
    return d;
}

// The figures of the NPU path: partitioned over the NPU and the reference fallback.
struct NpuFigures {
    std::vector<double> hostMs;
    double deviceMs = 0.0;
    bool deviceTimed = false;
    size_t opsOnNpu = 0;
    std::vector<framework::OnnxTensor> outputs;
};

Result<NpuFigures> benchNpu(const framework::OnnxImportedModel& m, const framework::PartitionPlan& plan,
                            const std::vector<framework::PartitionDevice>& devices,
                            const std::vector<std::vector<uint8_t>>& buffers, uint32_t runs,
                            const framework::PreparedPartitions& prepared) {
    NpuFigures f;
    for (size_t d : plan.deviceOfOperation) f.opsOnNpu += d == 0 ? 1 : 0;
    for (uint32_t r = 0; r < runs; ++r) {
        const auto t0 = Clock::now();
        auto run = NPU_TRY(framework::runPartitions(plan, m.model, devices, buffers, &prepared));
        f.hostMs.push_back(msSince(t0));
        progress("npu", r + 1, runs);
        if (r + 1 < runs) continue;
        for (const auto& t : run.timings) {
            if (plan.partitions[t.partition].device != 0 || t.result.timing.timeOnDeviceUs == hal::kNoTiming)
                continue;
            f.deviceMs += double(t.result.timing.timeOnDeviceUs) / 1000.0;
            f.deviceTimed = true;
        }
        f.outputs = framework::onnxOutputTensors(m, std::move(run.outputs));
    }
    return f;
}

Json nullable(const std::optional<double>& v) {
    return v ? Json(*v) : Json(nullptr);
}

// The reference's timed runs: their host times (ms) and the last run's outputs.
struct ReferenceFigures {
    std::vector<double> ms;
    std::vector<framework::OnnxTensor> outputs;
};

Result<ReferenceFigures> benchReference(hal::IDevice& device, const framework::OnnxImportedModel& m,
                                        const std::vector<framework::OnnxTensor>& inputs, uint32_t runs) {
    ReferenceFigures f;
    for (uint32_t r = 0; r < runs; ++r) {
        const auto t1 = Clock::now();
        auto run = NPU_TRY(framework::runOnnxModel(device, m, inputs));
        f.ms.push_back(msSince(t1));
        progress("reference", r + 1, runs);
        f.outputs = std::move(run.outputs);
    }
    return f;
}

// --compare-onnxruntime: ONNX Runtime's time and its agreement with the reference and the NPU,
// into `j`; false when an output differs beyond the tolerance.
bool compareOnnxRuntime(const std::string& model, const std::vector<framework::OnnxTensor>& inputs,
                        uint32_t runs, const ReferenceFigures& ref, const NpuFigures& npu, Json& j) {
    const auto ort = runOnnxRuntime(model, inputs, runs);
    j["onnxruntime_ms"] = nullable(ort.ms);
    if (!ort.ms) {
        j["onnxruntime_reason"] = ort.reason;
        return true;
    }
    const auto refDiff = compareFloat(ref.outputs, ort.outputs);
    const auto npuDiff = compareFloat(npu.outputs, ort.outputs);
    j["onnxruntime_version"] = ort.version;
    j["max_abs_diff_reference_vs_onnxruntime"] = refDiff.maxAbs;
    j["max_abs_diff_npu_vs_onnxruntime"] = npuDiff.maxAbs;
    j["match_onnxruntime"] = refDiff.within && npuDiff.within;
    return refDiff.within && npuDiff.within;
}

void printFigures(const Json& j, bool json) {
    if (json) {
        std::printf("%s\n", j.dump(2).c_str());
        return;
    }
    for (const auto& [key, value] : j.items()) {
        if (key != "tolerance") std::printf("%-40s %s\n", key.c_str(), value.dump().c_str());
    }
}

}  // namespace

BenchOnnxCli::BenchOnnxCli(CLI::App& bench) {
    cmd_ = bench.add_subcommand(
        "onnx", "An ONNX model on the reference, on the NPU (partitioned) and on ONNX Runtime");
    cmd_->add_option("model", o_.model, "MODEL.onnx")->required()->check(CLI::ExistingFile);
    cmd_->add_option("--input-shape", o_.inputShapes,
                     "NAME=1x3x224x224 for an input with dynamic dimensions");
    cmd_->add_option("--hw-config", o_.hwConfig, "the simulated NPU's config JSON")->check(CLI::ExistingFile);
    cmd_->add_option("--runs", o_.runs, "timed runs per device (the median is printed)")
        ->check(CLI::Range(1, 1000))
        ->capture_default_str();
    cmd_->add_flag("--json", o_.json, "print JSON");
    cmd_->add_flag("--compare-onnxruntime", o_.compareOnnxRuntime,
                   "also run ONNX Runtime (npm onnxruntime-node, one thread) and compare the outputs");
}

bool BenchOnnxCli::parsed() const {
    return cmd_->parsed();
}

int BenchOnnxCli::run() const {
    return benchOnnx(o_);
}

int benchOnnx(const BenchOnnxOptions& o) {
    const std::string& model_ = o.model;
    const uint32_t runs_ = o.runs;
    framework::OnnxImportOptions options;
    auto shapes = parseInputShapes(o.inputShapes);
    if (!shapes) return std::fprintf(stderr, "npu bench onnx: %s\n", shapes.error().message.c_str()), 2;
    options.inputShapes = std::move(*shapes);
    auto npu = openDevice({.device = "npu", .hwConfigPath = o.hwConfig});
    auto ref = openDevice({.device = "reference"});
    if (!npu || !ref)
        return std::fprintf(stderr, "npu bench onnx: %s\n", (!npu ? npu : ref).error().message.c_str()), 1;
    const auto t0 = Clock::now();
    auto model = framework::importOnnxModel(model_, options);
    if (!model) {
        std::fprintf(stderr, "npu bench onnx: %s\n", model.error().message.c_str());
        return model.error().status == framework::kOnnxUnsupported ? 3 : 2;
    }
    const std::vector<framework::PartitionDevice> devices = {{"npu", npu->device.get()},
                                                             {"reference", ref->device.get()}};
    auto plan = framework::planPartitions(model->model, devices);
    if (!plan) return std::fprintf(stderr, "npu bench onnx: %s\n", plan.error().message.c_str()), 3;
    auto prepared = framework::preparePartitions(*plan, devices);  // the compile: each partition once
    if (!prepared) return std::fprintf(stderr, "npu bench onnx: %s\n", prepared.error().message.c_str()), 1;
    const double importCompileMs = msSince(t0);

    std::vector<framework::OnnxTensor> inputs;
    for (size_t i = 0; i < model->inputNames.size(); ++i) inputs.push_back(syntheticInput(*model, i));
    auto refRun = benchReference(*ref->device, *model, inputs, runs_);
    if (!refRun)
        return std::fprintf(stderr, "npu bench onnx: reference: %s\n", refRun.error().message.c_str()), 1;
    auto buffers = framework::onnxInputBuffers(*model, inputs);
    if (!buffers) return std::fprintf(stderr, "npu bench onnx: %s\n", buffers.error().message.c_str()), 2;
    auto npuRun = benchNpu(*model, *plan, devices, *buffers, runs_, *prepared);
    if (!npuRun) return std::fprintf(stderr, "npu bench onnx: npu: %s\n", npuRun.error().message.c_str()), 1;

    Json j = {{"model", model_},
              {"runs", runs_},
              {"reference_ms", median(refRun->ms)},
              {"sim_host_ms", median(npuRun->hostMs)},
              {"reference_ms_percentiles", percentiles(refRun->ms)},
              {"sim_host_ms_percentiles", percentiles(npuRun->hostMs)},
              {"sim_device_ms", npuRun->deviceTimed ? Json(npuRun->deviceMs) : Json(nullptr)},
              {"import_compile_ms", importCompileMs},
              {"ops_on_npu", npuRun->opsOnNpu},
              {"ops_total", model->model.main.operations.size()},
              {"partitions", plan->partitions.size()},
              {"onnxruntime_ms", nullptr},
              {"max_abs_diff_npu_vs_reference", compareFloat(npuRun->outputs, refRun->outputs).maxAbs},
              {"tolerance", {{"rtol", kRtol}, {"atol", kAtol}}}};
    const bool ok = !o.compareOnnxRuntime || compareOnnxRuntime(model_, inputs, runs_, *refRun, *npuRun, j);
    printFigures(j, o.json);
    if (!ok) std::fprintf(stderr, "npu bench onnx: outputs differ from ONNX Runtime beyond the tolerance\n");
    return ok ? 0 : 1;
}

}  // namespace npu::tools
