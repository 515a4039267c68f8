// npu conformance: the CTS vectors of one or more files against a device, each vector in a
// worker process under a watchdog (worker_pool.h), with a per-operation table of verdicts.
#include "cmd_conformance.h"

#include <fmt/format.h>
#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_checks.h"
#include "npu/framework/cts_loader.h"
#include "npu/framework/onnx_import.h"
#include "npu/framework/onnx_node_test.h"
#include "runner.h"
#include "worker_pool.h"

namespace npu::tools {
namespace {

using Json = nlohmann::json;

// Test hooks, read only in the conformance worker process (never by a device): the worker kills
// itself with SIGSEGV, or stops answering, before it runs the vector of that name. They let the
// tests check that a crash or a hang costs one vector and the run goes on.
constexpr const char* kCrashHookEnv = "NPU_CONFORMANCE_TEST_CRASH";
constexpr const char* kHangHookEnv = "NPU_CONFORMANCE_TEST_HANG";
// "PID:NAME": the worker kills process PID (a firmware daemon) with SIGKILL before it runs the
// vector NAME, so the tests can check that a lost daemon costs errors, not failures.
constexpr const char* kKillHookEnv = "NPU_CONFORMANCE_TEST_KILL";

enum class Verdict { kPassed, kFailed, kUnsupported, kError };

constexpr const char* verdictName(Verdict v) {
    switch (v) {
        case Verdict::kPassed:
            return "passed";
        case Verdict::kFailed:
            return "failed";
        case Verdict::kUnsupported:
            return "unsupported";
        case Verdict::kError:
            return "error";
    }
    return "?";
}

// A CTS vector (file:line), or an ONNX backend test (`file` its directory, `testCase` only
// named: its data sets are imported in the worker; `row` its operators and input type).
struct Vector {
    framework::TestCase testCase;
    std::string file;
    size_t line = 0;
    bool onnx = false;
    std::pair<std::string, std::string> row;
};

struct VectorResult {
    Verdict verdict = Verdict::kError;
    std::string message;
    std::optional<framework::Mismatch> mismatch;
    bool deviceUnavailable = false;     // the worker could not open the device: the run stops
    bool deviceLost = false;            // the device went away during this vector: the worker reopens it
    size_t opsOnNpu = 0, opsTotal = 0;  // an ONNX test run partitioned: where its operations ran
};

struct Counts {
    size_t passed = 0, failed = 0, unsupported = 0, errors = 0;
    void add(Verdict v) {
        switch (v) {
            case Verdict::kPassed:
                ++passed;
                break;
            case Verdict::kFailed:
                ++failed;
                break;
            case Verdict::kUnsupported:
                ++unsupported;
                break;
            case Verdict::kError:
                ++errors;
                break;
        }
    }
    size_t total() const { return passed + failed + unsupported + errors; }
};

// `while_infinite_loop*`: an expect_failure model whose first main operation is WHILE must end in
// a loop-timeout error (MISSED_DEADLINE_*), not in any failure.
bool isInfiniteLoop(const framework::TestCase& tc) {
    return tc.expectFailure && !tc.model.main.operations.empty() &&
           tc.model.main.operations.front().type == hal::OperationType::WHILE;
}

// The row of the table: the operation under test is the main subgraph's last operation (the
// generator's "all inputs as internal" variants put helper ADDs before it), the data type is
// that operation's first input type, "relaxed" for a relaxed float32 model.
std::pair<std::string, std::string> rowOf(const Vector& v) {
    if (v.onnx) return v.row;
    const framework::TestCase& tc = v.testCase;
    const auto& sg = tc.model.main;
    if (sg.operations.empty()) return {"(no operation)", "-"};
    const auto& op = sg.operations.back();
    std::string type = op.inputs.empty() || op.inputs[0] >= sg.operands.size()
                           ? std::string("-")
                           : std::string(hal::toString(sg.operands[op.inputs[0]].type));
    if (tc.isRelaxed && type == "TENSOR_FLOAT32") type = "relaxed";
    return {std::string(hal::toString(op.type)), type};
}

std::string errorText(const Error& e) {
    return fmt::format("{}: {}", hal::toString(e.status), e.message);
}

// The CTS verdict of one vector's run (docs/conformance.md, "npu conformance").
VectorResult judgeOutcome(const Result<RunOutcome>& outcome, const framework::TestCase& tc) {
    if (!outcome && outcome.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE) {
        // The device (a daemon killed, a connection lost) failed, not the vector: an error,
        // never "failed", and never "passed" for a vector that expects a failure.
        VectorResult lost{Verdict::kError, "device lost: " + errorText(outcome.error()), std::nullopt};
        lost.deviceLost = true;
        return lost;
    }
    if (!outcome) {
        if (!tc.expectFailure) return {Verdict::kFailed, errorText(outcome.error()), std::nullopt};
        if (!isInfiniteLoop(tc)) return {Verdict::kPassed, "", std::nullopt};
        const auto s = outcome.error().status;
        if (s == hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT ||
            s == hal::ErrorStatus::MISSED_DEADLINE_PERSISTENT) {
            return {Verdict::kPassed, "", std::nullopt};
        }
        return {Verdict::kFailed,
                "expected a loop-timeout error (MISSED_DEADLINE_*), got " + errorText(outcome.error()),
                std::nullopt};
    }
    if (!outcome->supported) return {Verdict::kUnsupported, "", std::nullopt};
    if (tc.expectFailure)
        return {Verdict::kFailed, "expected a failure (build, prepare or execute), got outputs",
                std::nullopt};
    auto mismatch = framework::compareOutputs(tc, outcome->outputs, outcome->result.outputShapes);
    if (mismatch) return {Verdict::kFailed, mismatch->message, mismatch};
    return {Verdict::kPassed, "", std::nullopt};
}

VectorResult judge(hal::IDevice& device, const framework::TestCase& tc) {
    return judgeOutcome(runTestCase(device, tc), tc);
}

// An ONNX backend test: every data set imported as a CTS test case and judged by the CTS rules,
// on devices[0] alone, or split across devices (the NPU first, the reference as fallback).
VectorResult judgeOnnx(const std::vector<framework::PartitionDevice>& devices, const std::string& dir) {
    auto cases = framework::loadOnnxTestCases(dir);
    if (!cases) {
        const bool unsupported = cases.error().status == framework::kOnnxUnsupported;
        return {unsupported ? Verdict::kUnsupported : Verdict::kError, cases.error().message, std::nullopt};
    }
    VectorResult result{Verdict::kPassed, "", std::nullopt};
    for (const auto& tc : *cases) {
        auto outcome =
            devices.size() > 1 ? runPartitionedTestCase(devices, tc) : runTestCase(*devices[0].device, tc);
        if (outcome && outcome->supported && devices.size() > 1) {
            result.opsOnNpu = outcome->opsOnFirstDevice;
            result.opsTotal = tc.model.main.operations.size();
        }
        VectorResult r = judgeOutcome(outcome, tc);
        if (r.verdict == Verdict::kPassed) continue;
        if (!r.message.empty() || r.verdict == Verdict::kUnsupported) {
            r.message =
                tc.name + ": " + (r.message.empty() ? "the device does not take every operation" : r.message);
        }
        if (r.mismatch) r.mismatch->message = r.message;
        return r;
    }
    return result;
}

Json mismatchJson(const framework::Mismatch& m) {
    return {{"output", m.output},
            {"element", m.element},
            {"expected", m.expected},
            {"actual", m.actual},
            {"tolerance", m.tolerance}};
}

std::string encode(const VectorResult& r) {
    Json j = {{"verdict", static_cast<int>(r.verdict)},
              {"message", r.message},
              {"unavailable", r.deviceUnavailable},
              {"lost", r.deviceLost},
              {"ops_on_npu", r.opsOnNpu},
              {"ops_total", r.opsTotal}};
    if (r.mismatch) j["mismatch"] = mismatchJson(*r.mismatch);
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

VectorResult decode(const std::string& payload) {
    Json j = Json::parse(payload, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("verdict") || !j["verdict"].is_number_integer()) {
        return {Verdict::kError, "the worker sent an unreadable answer", std::nullopt};
    }
    VectorResult r;
    const int v = j["verdict"].get<int>();
    r.verdict = v >= 0 && v <= 3 ? static_cast<Verdict>(v) : Verdict::kError;
    if (j["message"].is_string()) r.message = j["message"].get<std::string>();
    r.deviceUnavailable = j.value("unavailable", false);
    r.deviceLost = j.value("lost", false);
    r.opsOnNpu = j.value("ops_on_npu", size_t{0});
    r.opsTotal = j.value("ops_total", size_t{0});
    if (j.contains("mismatch") && j["mismatch"].is_object()) {
        const Json& m = j["mismatch"];
        framework::Mismatch mm;
        mm.output = m.value("output", 0u);
        mm.element = m.value("element", size_t{0});
        // JSON has no NaN: a NaN value travels as null.
        auto number = [&m](const char* key) {
            return m.contains(key) && m[key].is_number() ? m[key].get<double>()
                                                         : std::numeric_limits<double>::quiet_NaN();
        };
        mm.expected = number("expected");
        mm.actual = number("actual");
        mm.tolerance = number("tolerance");
        mm.message = r.message;
        r.mismatch = mm;
    }
    return r;
}

// The vendored files, when none is named.
std::vector<std::string> defaultFiles() {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(framework::ctsDataDir(), ec)) {
        const std::string name = entry.path().filename().string();
        if (name.ends_with(".jsonl.gz") || name.ends_with(".jsonl")) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

bool selected(const std::string& name, const std::vector<std::string>& filters) {
    if (filters.empty()) return true;
    return std::any_of(filters.begin(), filters.end(),
                       [&](const std::string& f) { return ::fnmatch(f.c_str(), name.c_str(), 0) == 0; });
}

// The ONNX backend tests of a directory: DIR itself when it holds a model.onnx, else every
// subdirectory that does (the layout of libonnx-testdata's node/), selected by name.
Status addOnnxTests(const std::string& dir, const std::vector<std::string>& filters,
                    std::vector<Vector>& vectors) {
    std::error_code ec;
    const bool single = std::filesystem::is_regular_file(std::filesystem::path(dir) / "model.onnx", ec);
    const auto dirs = single ? std::vector<std::string>{dir} : framework::listOnnxNodeTests(dir);
    if (dirs.empty()) {
        return invalidArgument(dir +
                               ": no ONNX test in it (a directory with model.onnx and test_data_set_*/"
                               "input_N.pb, output_N.pb, or a directory of those)");
    }
    for (const auto& d : dirs) {
        Vector v;
        v.testCase.name = std::filesystem::path(d).filename().string();
        if (!selected(v.testCase.name, filters)) continue;
        v.file = d;
        v.onnx = true;
        auto row = framework::onnxTestRow(d);
        v.row = row ? std::pair{"onnx " + row->first, row->second}
                    : std::pair{std::string("onnx ?"), std::string("-")};
        vectors.push_back(std::move(v));
    }
    return {};
}

// Loads every selected vector; an unreadable or malformed file is an error naming file and line.
// A directory holds ONNX backend tests.
Result<std::vector<Vector>> loadVectors(const std::vector<std::string>& files,
                                        const std::vector<std::string>& filters) {
    std::vector<Vector> vectors;
    for (const auto& file : files) {
        std::error_code ec;
        if (std::filesystem::is_directory(file, ec)) {
            NPU_TRY(addOnnxTests(file, filters, vectors));
            continue;
        }
        if (!std::filesystem::is_regular_file(file, ec)) return invalidArgument(file + ": no such file");
        auto reader = NPU_TRY(framework::CtsReader::open(file));
        while (true) {
            auto next = NPU_TRY(reader->next());
            if (!next) break;
            if (!selected(next->name, filters)) continue;
            vectors.push_back(Vector{std::move(*next), file, reader->lineNumber()});
        }
    }
    return vectors;
}

// Progress on stderr: one rewritten line on a terminal, a line every 10 % otherwise (--progress).
class Progress {
public:
    Progress(bool enabled, size_t total)
        : enabled_(enabled), tty_(::isatty(STDERR_FILENO) == 1), total_(total) {}

    void update(const Counts& c, bool force = false) {
        if (!enabled_) return;
        const auto now = std::chrono::steady_clock::now();
        const size_t done = c.total();
        if (tty_) {
            if (!force && now - last_ < std::chrono::milliseconds(200)) return;
            fmt::print(stderr, "\r{}/{}  passed {}  failed {}  unsupported {}  errors {}  {:.1f} s ", done,
                       total_, c.passed, c.failed, c.unsupported, c.errors, seconds(now));
        } else {
            const size_t decile = total_ == 0 ? 10 : done * 10 / total_;
            if (!force && decile == lastDecile_) return;
            lastDecile_ = decile;
            fmt::print(stderr, "npu conformance: {}/{} vectors ({} failed, {} errors), {:.1f} s\n", done,
                       total_, c.failed, c.errors, seconds(now));
        }
        last_ = now;
    }

    void finish(const Counts& c) {
        if (!enabled_) return;
        if (!tty_ && lastDecile_ == 10) return;  // the last line is already out
        update(c, true);
        if (tty_) fmt::print(stderr, "\n");
    }

private:
    double seconds(std::chrono::steady_clock::time_point now) const {
        return std::chrono::duration<double>(now - start_).count();
    }
    bool enabled_, tty_;
    size_t total_;
    size_t lastDecile_ = 0;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

std::string failureLine(const Vector& v, const VectorResult& r) {
    std::string where = v.onnx ? fmt::format("{} ({})", v.testCase.name, v.file)
                               : fmt::format("{} ({}:{})", v.testCase.name,
                                             std::filesystem::path(v.file).filename().string(), v.line);
    if (r.mismatch) {
        const auto& m = *r.mismatch;
        return fmt::format("FAIL  {}: output {} element {}: expected {:g}, actual {:g}, tolerance {:g}",
                           where, m.output, m.element, m.expected, m.actual, m.tolerance);
    }
    const char* tag = r.verdict == Verdict::kError         ? "ERROR"
                      : r.verdict == Verdict::kUnsupported ? "UNSUP"
                                                           : "FAIL ";
    return fmt::format("{} {}: {}", tag, where, r.message);
}

std::string deviceLabel(const DeviceChoice& c) {
    return c.device == "npu" ? "npu (" + c.transport + ")" : c.device;
}

// Runs in each worker process: opens the device once, reopens it after a loss (when allowed), and
// judges one vector per task. The test hooks of the top of this file act here.
// The devices an ONNX test runs on: the chosen one, then (fallback) the CPU reference, opened
// once per worker.
Result<std::vector<framework::PartitionDevice>> onnxDevices(const DeviceChoice& choice, hal::IDevice& device,
                                                            bool fallback, std::optional<OpenedDevice>& ref) {
    std::vector<framework::PartitionDevice> devices = {partitionDevice(choice.device, &device)};
    if (!fallback || choice.device == "reference") return devices;
    if (!ref) ref = NPU_TRY(openDevice({.device = "reference"}));
    devices.push_back({"reference", ref->device.get()});
    return devices;
}

VectorResult judgeVector(const Vector& v, const DeviceChoice& choice, hal::IDevice& device, bool fallback,
                         std::optional<OpenedDevice>& ref) {
    if (!v.onnx) return judge(device, v.testCase);
    auto devices = onnxDevices(choice, device, fallback, ref);
    if (!devices) return {Verdict::kError, "reference device: " + errorText(devices.error()), std::nullopt};
    return judgeOnnx(*devices, v.file);
}

WorkerSetup makeWorkerSetup(const std::vector<Vector>& vectors, const DeviceChoice& choice, bool mayReopen,
                            bool fallback) {
    return [&vectors, choice, mayReopen, fallback]() -> TaskFunction {
        auto opened = std::make_shared<Result<OpenedDevice>>(openDevice(choice));
        auto ref = std::make_shared<std::optional<OpenedDevice>>();
        auto lost = std::make_shared<std::string>();
        const char* crashOn = std::getenv(kCrashHookEnv);
        const char* hangOn = std::getenv(kHangHookEnv);
        const char* killOn = std::getenv(kKillHookEnv);
        const std::string crashName = crashOn ? crashOn : "", hangName = hangOn ? hangOn : "";
        const std::string killSpec = killOn ? killOn : "";
        return [&vectors, opened, ref, lost, choice, mayReopen, fallback, crashName, hangName,
                killSpec](size_t i) {
            const framework::TestCase& tc = vectors[i].testCase;
            if (!crashName.empty() && tc.name == crashName) ::raise(SIGSEGV);
            if (!hangName.empty() && tc.name == hangName) {
                while (true) ::pause();
            }
            if (const auto colon = killSpec.find(':');
                colon != std::string::npos && tc.name == killSpec.substr(colon + 1)) {
                ::kill(static_cast<pid_t>(std::atol(killSpec.substr(0, colon).c_str())), SIGKILL);
                ::usleep(100'000);
            }
            if (!lost->empty()) {
                if (!mayReopen) {
                    return encode({Verdict::kError,
                                   "the firmware daemon was lost (" + *lost +
                                       ") and is not restarted (it was started with --hw-config)",
                                   std::nullopt, true});
                }
                *opened = openDevice(choice);
                lost->clear();
            }
            if (!*opened) {
                return encode({Verdict::kError, "cannot open the device: " + errorText(opened->error()),
                               std::nullopt, true});
            }
            VectorResult r = judgeVector(vectors[i], choice, *(*opened)->device, fallback, *ref);
            if (r.deviceLost) *lost = r.message;
            return encode(r);
        };
    };
}

// What a run gathered: one result per vector, counts per table row and in total, and why it stopped
// early if it did.
struct RunTally {
    std::vector<VectorResult> results;
    std::map<std::pair<std::string, std::string>, Counts> rows;
    Counts total;
    std::string unavailable;  // the device could not be opened: every vector would fail the same way
    std::string status;       // the worker pool itself failed
    size_t devicesLost = 0;
    size_t opsOnNpu = 0, opsPartitioned = 0;  // ONNX tests run partitioned: operations on the NPU, of all
    double seconds = 0;
};

RunTally runVectors(const std::vector<Vector>& vectors, const WorkerPoolOptions& options,
                    const WorkerSetup& setup, bool forceProgress) {
    RunTally t;
    t.results.resize(vectors.size());
    Progress progress(forceProgress || ::isatty(STDERR_FILENO) == 1, vectors.size());
    const auto start = std::chrono::steady_clock::now();
    auto status = runInWorkerProcesses(vectors.size(), options, setup, [&](const TaskReport& report) {
        VectorResult r = report.kind == TaskReport::Kind::kDone
                             ? decode(report.payload)
                             : VectorResult{Verdict::kError, report.payload, std::nullopt};
        if (r.deviceUnavailable) {
            t.unavailable = r.message;
            return false;
        }
        if (r.deviceLost) ++t.devicesLost;
        t.rows[rowOf(vectors[report.task])].add(r.verdict);
        t.opsOnNpu += r.opsOnNpu;
        t.opsPartitioned += r.opsTotal;
        t.total.add(r.verdict);
        t.results[report.task] = std::move(r);
        progress.update(t.total);
        return true;
    });
    progress.finish(t.total);
    t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!status) t.status = status.error().message;
    return t;
}

void printJson(const std::string& label, const std::vector<std::string>& files,
               const std::vector<Vector>& vectors, const RunTally& t, int workers) {
    Json j;
    j["device"] = label;
    j["files"] = files;
    j["vectors"] = vectors.size();
    j["passed"] = t.total.passed;
    j["failed"] = t.total.failed;
    j["unsupported"] = t.total.unsupported;
    j["errors"] = t.total.errors;
    j["devices_lost"] = t.devicesLost;
    j["seconds"] = t.seconds;
    j["jobs"] = workers;
    if (t.opsPartitioned > 0) {
        j["operations_on_npu"] = t.opsOnNpu;
        j["operations_partitioned"] = t.opsPartitioned;
    }
    Json ops = Json::array();
    for (const auto& [key, c] : t.rows) {
        ops.push_back({{"operation", key.first},
                       {"type", key.second},
                       {"passed", c.passed},
                       {"failed", c.failed},
                       {"unsupported", c.unsupported},
                       {"errors", c.errors}});
    }
    j["operations"] = ops;
    Json failures = Json::array();
    for (size_t i = 0; i < vectors.size(); ++i) {
        const auto& r = t.results[i];
        if (r.verdict != Verdict::kFailed && r.verdict != Verdict::kError) continue;
        Json f = {{"name", vectors[i].testCase.name},
                  {"file", vectors[i].file},
                  {"line", vectors[i].line},
                  {"verdict", verdictName(r.verdict)},
                  {"message", r.message}};
        if (r.mismatch) f["mismatch"] = mismatchJson(*r.mismatch);
        failures.push_back(f);
    }
    j["failures"] = failures;
    fmt::print("{}\n", j.dump(2, ' ', false, Json::error_handler_t::replace));
}

// The table; rows whose every vector was unsupported are hidden unless `all` (they are most rows
// on the NPU and say nothing a user acts on), and their number is said.
void printTable(const std::string& label, const std::vector<Vector>& vectors, const RunTally& t, int workers,
                bool all, bool verbose) {
    fmt::print("{:<34} {:<28} {:>7} {:>7} {:>12} {:>7}\n", "operation", "type", "passed", "failed",
               "unsupported", "errors");
    size_t hidden = 0;
    for (const auto& [key, c] : t.rows) {
        if (!all && c.unsupported == c.total()) {
            ++hidden;
            continue;
        }
        fmt::print("{:<34} {:<28} {:>7} {:>7} {:>12} {:>7}\n", key.first, key.second, c.passed, c.failed,
                   c.unsupported, c.errors);
    }
    if (hidden > 0) fmt::print("({} rows with only unsupported vectors hidden; --all shows them)\n", hidden);
    fmt::print("{:<63} {:>7} {:>7} {:>12} {:>7}\n", fmt::format("total ({} vectors)", vectors.size()),
               t.total.passed, t.total.failed, t.total.unsupported, t.total.errors);
    for (size_t i = 0; i < vectors.size(); ++i) {
        const auto& r = t.results[i];
        const bool why = verbose && r.verdict == Verdict::kUnsupported && !r.message.empty();
        if (r.verdict == Verdict::kFailed || r.verdict == Verdict::kError || why)
            fmt::print("{}\n", failureLine(vectors[i], r));
    }
    if (t.opsPartitioned > 0) {
        fmt::print(
            "ONNX tests run partitioned: {} of {} HAL operations on the NPU, the rest on the CPU reference\n",
            t.opsOnNpu, t.opsPartitioned);
    }
    fmt::print("{}: {} passed, {} failed, {} unsupported, {} errors in {:.1f} s ({} workers)\n", label,
               t.total.passed, t.total.failed, t.total.unsupported, t.total.errors, t.seconds, workers);
}

}  // namespace

ConformanceCli::ConformanceCli(CLI::App& app) {
    cmd_ = app.add_subcommand(
        "conformance",
        "Run CTS vector files against a device; a table of passed/failed/unsupported/errors per operation");
    cmd_->add_option("files", files_,
                     "FILE.jsonl or FILE.jsonl.gz, or DIR of ONNX backend tests (model.onnx + "
                     "test_data_set_N/) ... (default: every vendored tests/cts file)");
    cmd_->add_option("--device", choice_.device, "npu or reference")
        ->check(CLI::IsMember({"npu", "reference"}))
        ->capture_default_str();
    cmd_->add_option("--transport", choice_.transport,
                     "loopback (in-process firmware), unix (npu-fwd daemon), usb (one worker: a USB "
                     "device serves one host process) or qemu (the firmware image on an emulated Cortex-M55)")
        ->check(CLI::IsMember({"loopback", "unix", "usb", "qemu"}))
        ->capture_default_str();
    cmd_->add_option("--usb-device", choice_.usbDevice, "usb transport: VID:PID[:SERIAL] in hex");
    cmd_->add_option("--socket", choice_.socketPath,
                     "unix transport: the daemon's socket (default: per-user runtime dir)");
    cmd_->add_option(
            "--hw-config", choice_.hwConfigPath,
            "npu: the simulated NPU's config JSON (docs/hw-config.md; unix: for the daemon it starts)")
        ->check(CLI::ExistingFile);
    cmd_->add_option("--filter", filters_,
                     "run only vectors whose name matches GLOB (repeatable; any match selects)")
        ->allow_extra_args(false);  // one GLOB per --filter: the files that follow stay files
    cmd_->add_flag("--json", json_, "print JSON instead of tables");
    cmd_->add_flag("--all", all_, "also list the table rows whose every vector was unsupported");
    cmd_->add_flag("-v,--verbose", verbose_,
                   "also list the unsupported ONNX tests with the reason (the operator, type or attribute)");
    cmd_->add_flag("--no-fallback", noFallback_,
                   "ONNX tests on --device npu run on the NPU alone (unsupported when it lacks an operation) "
                   "instead of partitioned with the CPU reference as fallback");
    cmd_->add_option("--jobs,-j", jobs_,
                     "worker processes (default: the CPUs this process may use; at most 8 over unix)")
        ->check(CLI::Range(1, 256));
    cmd_->add_option("--timeout", timeoutSeconds_,
                     "seconds one vector may take before its worker is killed (a hang)")
        ->check(finiteNumberIn(0.1, 3600.0, " s"))
        ->capture_default_str();
    addTimeoutOptions(cmd_, choice_);
    cmd_->add_flag("--progress", progress_, "show progress on stderr even when it is not a terminal");
}

bool ConformanceCli::parsed() const {
    return cmd_->parsed();
}

int ConformanceCli::run() const {
    // The command's own code returns errors as values; this is the last line of defence for a
    // library that throws (an allocation, a formatting or I/O error), so the parent never aborts.
    try {
        return execute();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "npu conformance: internal error: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "npu conformance: internal error\n");
    }
    return 1;
}

int ConformanceCli::execute() const {
    warnInapplicableFlags();
    const auto files = files_.empty() ? defaultFiles() : files_;
    if (files.empty()) {
        fmt::print(stderr, "npu conformance: no files given and none in {}\n", framework::ctsDataDir());
        return 2;
    }
    auto loaded = loadVectors(files, filters_);
    if (!loaded) {
        fmt::print(stderr, "npu conformance: {}\n", loaded.error().message);
        return 2;
    }
    const std::vector<Vector>& vectors = *loaded;
    if (vectors.empty()) {
        fmt::print(stderr, "npu conformance: no vector of the {} file(s) matches the filter\n", files.size());
        return 2;
    }

    WorkerPoolOptions options;
    options.workers = jobs_ > 0 ? jobs_ : usableCpus();
    // Each unix worker is a client of one npu-fwd, which serves 8 at once by default.
    if (jobs_ <= 0 && choice_.transport == "unix") options.workers = std::min(options.workers, 8);
    if (choice_.transport == "usb") options.workers = 1;  // a second process would find the device busy
    options.taskTimeout = std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds_ * 1000.0));

    DeviceChoice choice = choice_;
    // A bad config file is bad input (exit 2), named once, not an error in every worker.
    if (auto config = firmwareConfig(choice.hwConfigPath); !config) {
        fmt::print(stderr, "npu conformance: {}\n", config.error().message);
        return 2;
    }
    // unix with a hardware config: start the daemon here, with the config, and let the workers
    // connect to it as it is (each worker starting its own would race for the socket).
    std::optional<OpenedDevice> sharedDaemon;
    if (choice.device == "npu" && choice.transport == "unix" && !choice.hwConfigPath.empty()) {
        auto opened = openDevice(choice);
        if (!opened) {
            fmt::print(stderr, "npu conformance: {}: {}\n", deviceLabel(choice_), opened.error().message);
            return opened.error().status == hal::ErrorStatus::INVALID_ARGUMENT ? 2 : 1;
        }
        sharedDaemon = std::move(*opened);
        choice.hwConfigPath.clear();
    }
    // A worker whose device is lost reopens it before its next vector, which starts a new daemon
    // on unix; not with a shared daemon started here with a hardware config (a restart by a
    // worker would silently run the default configuration): then the run stops.
    const WorkerSetup setup = makeWorkerSetup(vectors, choice, !sharedDaemon.has_value(), !noFallback_);
    RunTally tally = runVectors(vectors, options, setup, progress_);
    if (!tally.unavailable.empty()) {
        fmt::print(
            stderr,
            "npu conformance: {}: {} (stopped after {} of {} vectors: {} passed, {} failed, {} errors)\n",
            deviceLabel(choice_), tally.unavailable, tally.total.total(), vectors.size(), tally.total.passed,
            tally.total.failed, tally.total.errors);
        return 1;
    }
    if (tally.devicesLost > 0) {
        fmt::print(
            stderr,
            "npu conformance: the device was lost {} time(s) (a daemon killed or a connection dropped); "
            "those vectors count as errors and the worker reconnected (restarting the daemon)\n",
            tally.devicesLost);
    }
    if (!tally.status.empty()) {
        fmt::print(stderr, "npu conformance: {} (after {} of {} vectors)\n", tally.status,
                   tally.total.total(), vectors.size());
        return 1;
    }
    const std::string label = deviceLabel(choice_);
    if (json_) {
        printJson(label, files, vectors, tally, options.workers);
    } else {
        printTable(label, vectors, tally, options.workers, all_, verbose_);
    }
    return tally.total.failed + tally.total.errors == 0 ? 0 : 1;
}

// Options that only a device over a transport reads are ignored with the reference device: say so
// rather than let a user believe the reference ran over unix.
void ConformanceCli::warnInapplicableFlags() const {
    if (choice_.device != "reference") return;
    for (const char* flag : {"--transport", "--usb-device", "--socket", "--hw-config"}) {
        if (cmd_->count(flag) > 0) {
            fmt::print(stderr, "npu conformance: warning: {} does not apply to --device reference; ignored\n",
                       flag);
        }
    }
}

}  // namespace npu::tools
