#include "stress_engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "demo_network.h"
#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/ref/reference_device.h"

namespace npu::tools {
namespace {

using Clock = std::chrono::steady_clock;

// CTS quant8 vectors of V1_0 the NPU claims: a mix of compute-heavy and small models.
constexpr const char* kCtsNames[] = {"conv_quant8_large",
                                     "depthwise_conv2d_quant8_large",
                                     "fully_connected_quant8_large",
                                     "avg_pool_quant8_1",
                                     "max_pool_quant8_1",
                                     "softmax_quant8_1",
                                     "relu_quant8_1"};
// A worker that has not come back from a call this long after the end counts its request lost.
constexpr std::chrono::seconds kLostGrace{60};
constexpr size_t kMaxProblems = 8;

struct Workload {
    framework::TestCase tc;
    std::vector<std::vector<uint8_t>> expected;  // the reference's outputs, bit for bit
    std::shared_ptr<hal::IPreparedModel> prepared;
};

framework::TestCase demoCase() {
    DemoNetwork net = makeDemoNetwork();
    framework::TestCase tc;
    tc.name = "demo_network";
    tc.model = std::move(net.model);
    tc.inputs = {net.input};
    size_t outBytes = 1;
    for (uint32_t d : net.outputDims) outBytes *= d;
    tc.expectedOutputs = {std::vector<uint8_t>(outBytes)};
    tc.expectedOutputDims = {net.outputDims};
    tc.outputIgnored = {false};
    return tc;
}

Result<std::vector<framework::TestCase>> stressCases() {
    std::vector<framework::TestCase> cases{demoCase()};
    auto reader = NPU_TRY(framework::CtsReader::open(framework::ctsDataDir() + "/V1_0.jsonl.gz"));
    while (auto next = NPU_TRY(reader->next())) {
        for (const char* name : kCtsNames) {
            if (next->name == name) cases.push_back(std::move(*next));
        }
    }
    return cases;
}

// One request: its memory (kept after the answer, see Answered) and its outputs.
struct Answered {
    framework::PreparedRequest request;
    std::vector<std::vector<uint8_t>> outputs;
};

Result<Answered> execute(hal::IPreparedModel& prepared, const framework::TestCase& tc,
                         const hal::Deadline& deadline) {
    Answered a{NPU_TRY(framework::makeRequest(tc)), {}};
    for (const auto& loc : a.request.outputLocations)
        std::memset(a.request.pool->data() + loc.offset, 0xA5, loc.length);
    NPU_TRY(prepared.executeSynchronously(a.request.request, hal::MeasureTiming::NO, deadline, {}));
    a.outputs = framework::readOutputs(a.request);
    return a;
}

// Each workload prepared on the NPU with the reference's answer; one the NPU does not take is
// left out (and named in the report by its absence).
Result<std::vector<Workload>> loadWorkloads(hal::IDevice& npu) {
    ref::ReferenceDevice reference;
    std::vector<Workload> out;
    for (auto& tc : NPU_TRY(stressCases())) {
        auto supported = npu.getSupportedOperations(tc.model);
        if (!supported || std::find(supported->begin(), supported->end(), false) != supported->end())
            continue;
        auto refPrepared = NPU_TRY(reference.prepareModel(
            tc.model, hal::ExecutionPreference::FAST_SINGLE_ANSWER, hal::Priority::MEDIUM, {}, {}, {}, {}));
        Workload w;
        w.expected = NPU_TRY(execute(*refPrepared, tc, {})).outputs;
        w.prepared = NPU_TRY(npu.prepareModel(tc.model, hal::ExecutionPreference::FAST_SINGLE_ANSWER,
                                              hal::Priority::MEDIUM, {}, {}, {}, {}));
        w.tc = std::move(tc);
        out.push_back(std::move(w));
    }
    if (out.empty()) return generalFailure("npu stress: the NPU takes none of the stress models");
    return out;
}

// What one client process found; summed by the parent.
struct Tally {
    std::mutex mutex;
    StressReport r;
    void problem(const std::string& what) {
        std::lock_guard lock(mutex);
        if (r.problems.size() < kMaxProblems) r.problems.push_back(what);
    }
};

shim::NpuFaultPlan randomFault(std::mt19937_64& rng, StressReport& r) {
    shim::NpuFaultPlan plan;
    const uint32_t kind = static_cast<uint32_t>(rng() % 100);
    const uint64_t at = 1 + rng() % 6;
    if (kind < 30) {
        plan.hangAtCommand = at;
        r.faultHang++;
    } else if (kind < 50) {
        plan.dmaErrorAtTransfer = at;
        r.faultDma++;
    } else if (kind < 70) {
        plan.sramFlipAfterCommand = at;
        plan.sramFlipAddress = static_cast<uint32_t>(rng() % 1024);
        plan.sramFlipBit = static_cast<uint32_t>(rng() % 8);
        plan.sramEcc = true;
        r.faultSram++;
    } else if (kind < 85) {
        plan.crashAfterMs = static_cast<uint32_t>(1 + rng() % 20);
        r.faultCrash++;
    } else {
        plan.wedge = 1;  // until a Reset: the item thread stops, pings are still answered
        r.faultWedge++;
    }
    r.faults++;
    return plan;
}

void worker(hal::IDevice& device, std::vector<Workload>& workloads, const StressOptions& o, uint64_t seed,
            Clock::time_point end, Tally& tally, std::atomic<uint64_t>& inFlight) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::optional<Answered> previous;
    while (Clock::now() < end) {
        Workload& w = workloads[rng() % workloads.size()];
        if (unit(rng) < o.faultRate) {
            StressReport injected;
            const shim::NpuFaultPlan plan = randomFault(rng, injected);
            if (auto s = shim::injectNpuFaults(device, plan); s) {
                std::lock_guard lock(tally.mutex);
                tally.r.faults += injected.faults;
                tally.r.faultHang += injected.faultHang;
                tally.r.faultDma += injected.faultDma;
                tally.r.faultSram += injected.faultSram;
                tally.r.faultCrash += injected.faultCrash;
                tally.r.faultWedge += injected.faultWedge;
            }
        }
        hal::Deadline deadline;
        if (unit(rng) < o.deadlineShare) {
            const bool tight = rng() % 2 == 0;
            deadline =
                Clock::now() + (tight ? std::chrono::microseconds(rng() % 2000) : std::chrono::seconds(20));
        }
        inFlight++;
        auto answer = execute(*w.prepared, w.tc, deadline);
        inFlight--;
        std::lock_guard lock(tally.mutex);
        tally.r.requests++;
        // The request answered before this one must not have been written since: a second
        // delivery into its memory is a second answer.
        if (previous && framework::readOutputs(previous->request) != previous->outputs) {
            tally.r.answeredTwice++;
            if (tally.r.problems.size() < kMaxProblems)
                tally.r.problems.push_back("a request's outputs changed after it was answered");
        }
        previous.reset();
        if (answer) {
            if (answer->outputs == w.expected) {
                tally.r.correct++;
            } else {
                tally.r.wrong++;
                if (tally.r.problems.size() < kMaxProblems)
                    tally.r.problems.push_back(w.tc.name + ": answer differs from the reference");
            }
            previous = std::move(*answer);
            continue;
        }
        const Error& e = answer.error();
        if (deadline && (e.status == hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT ||
                         e.status == hal::ErrorStatus::MISSED_DEADLINE_PERSISTENT)) {
            tally.r.missedDeadline++;
        } else if (e.status == hal::ErrorStatus::GENERAL_FAILURE &&
                   e.message.find("data fault") != std::string::npos) {
            tally.r.failedDataFault++;
        } else {
            tally.r.failedOther++;
            if (tally.r.problems.size() < kMaxProblems)
                tally.r.problems.push_back(w.tc.name + ": " + std::string(hal::toString(e.status)) + ": " +
                                           e.message);
        }
    }
}

Result<std::shared_ptr<hal::IDevice>> openStressDevice(const StressOptions& o,
                                                       const std::string& socketPath) {
    shim::ShimOptions shimOptions;
    shimOptions.autotune = false;  // restores after a reset compile again: keep them quick
    shimOptions.executeTimeout = o.executeTimeout;
    if (o.transport == "loopback") {
        fw::host::FirmwareHostConfig config;
        config.faultInjection = true;
        return shim::createNpuDevice(
            shim::TransportFactory([config] { return fw::host::startLoopbackTransport(config); }),
            shimOptions);
    }
    shim::DaemonOptions d;
    d.socketPath = socketPath;
    d.daemonPath = o.daemonPath;
    d.faultInjection = true;
    d.idleExitSeconds = 5;
    d.shim = shimOptions;
    return shim::connectNpuDaemon(d);
}

// One client process: its device, its workloads, its threads. Returns its report.
StressReport runClient(const StressOptions& o, const std::string& socketPath, uint64_t seed,
                       std::shared_ptr<hal::IDevice>& device) {
    Tally tally;
    auto opened = openStressDevice(o, socketPath);
    if (!opened) {
        tally.r.failedOther++;
        tally.r.problems.push_back("cannot open the NPU: " + opened.error().message);
        return tally.r;
    }
    device = *opened;
    auto workloads = loadWorkloads(*device);
    if (!workloads) {
        tally.r.failedOther++;
        tally.r.problems.push_back(workloads.error().message);
        return tally.r;
    }
    for (const auto& w : *workloads) tally.r.models.push_back(w.tc.name);
    const auto end = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(o.durationSeconds * 1000));
    std::atomic<uint64_t> inFlight{0};
    std::atomic<int> finished{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < o.threads; ++t) {
        threads.emplace_back([&, t] {
            worker(*device, *workloads, o, seed + static_cast<uint64_t>(t), end, tally, inFlight);
            finished++;
        });
    }
    // Wait for the workers, bounded: a worker stuck in a call past the grace counts it lost.
    const auto bound = end + kLostGrace;
    while (finished.load() < o.threads && Clock::now() < bound)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (finished.load() < o.threads) {
        std::lock_guard lock(tally.mutex);
        tally.r.lost += inFlight.load();
        tally.r.problems.push_back(std::to_string(inFlight.load()) + " request(s) did not come back within " +
                                   std::to_string(kLostGrace.count()) + " s of the end");
        for (auto& th : threads) th.detach();  // the process ends with _exit
    } else {
        for (auto& th : threads) th.join();
    }
    if (auto c = shim::queryNpuCounters(*device)) tally.r.counters = *c;
    return tally.r;
}

// The shim's counters by their JSON names (docs/reliability.md).
constexpr std::pair<const char*, uint64_t shim::NpuCounters::*> kCounterFields[] = {
    {"pings", &shim::NpuCounters::pings},
    {"ping_failures", &shim::NpuCounters::pingFailures},
    {"stalls", &shim::NpuCounters::stalls},
    {"call_timeouts", &shim::NpuCounters::callTimeouts},
    {"disconnects", &shim::NpuCounters::disconnects},
    {"resets", &shim::NpuCounters::resets},
    {"restarts", &shim::NpuCounters::restarts},
    {"models_restored", &shim::NpuCounters::modelsRestored},
    {"models_lost", &shim::NpuCounters::modelsLost},
    {"requests_replayed", &shim::NpuCounters::requestsReplayed},
    {"requests_failed", &shim::NpuCounters::requestsFailed},
    {"npu_hangs", &shim::NpuCounters::npuHangs},
    {"data_faults", &shim::NpuCounters::dataFaults},
};

nlohmann::json countersJson(const shim::NpuCounters& c) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [name, field] : kCounterFields) j[name] = c.*field;
    return j;
}

// Adds the counters of a client's report to `into`.
void addCounters(shim::NpuCounters& into, const nlohmann::json& j) {
    for (const auto& [name, field] : kCounterFields) into.*field += j.value(name, uint64_t{0});
}

void merge(StressReport& into, const nlohmann::json& j) {
    into.requests += j.value("requests", 0ull);
    into.correct += j.value("correct", 0ull);
    into.wrong += j.value("wrong", 0ull);
    into.lost += j.value("lost", 0ull);
    into.answeredTwice += j.value("answered_twice", 0ull);
    into.failedDataFault += j.value("failed_data_fault", 0ull);
    into.missedDeadline += j.value("missed_deadline", 0ull);
    into.failedOther += j.value("failed_other", 0ull);
    const auto& f = j.at("faults");
    into.faults += f.value("total", 0ull);
    into.faultHang += f.value("npu_hang", 0ull);
    into.faultDma += f.value("dma_error", 0ull);
    into.faultSram += f.value("sram_flip", 0ull);
    into.faultCrash += f.value("host_crash", 0ull);
    into.faultWedge += f.value("wedge", 0ull);
    addCounters(into.counters, j.at("recovery"));
    if (into.models.empty()) into.models = j.value("models", std::vector<std::string>{});
    for (const auto& p : j.value("problems", std::vector<std::string>{})) {
        if (into.problems.size() < kMaxProblems) into.problems.push_back(p);
    }
}

bool writeAll(int fd, const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n <= 0) return false;
        done += static_cast<size_t>(n);
    }
    return true;
}

struct Child {
    pid_t pid = -1;
    int reportFd = -1;   // the child's report (JSON), then EOF
    int releaseFd = -1;  // closed by the parent when every report is in: the child may end
    std::string text;
    bool done = false;
};

// The child's side: run, report, wait to be released (so that a client's end does not stop the
// daemon under the others), then end without running the parent's destructors.
[[noreturn]] void childMain(const StressOptions& o, const std::string& socketPath, uint64_t seed,
                            int reportFd, int releaseFd) {
    std::shared_ptr<hal::IDevice> device;
    const StressReport r = runClient(o, socketPath, seed, device);
    writeAll(reportFd, stressReportJson(r).dump());
    close(reportFd);
    pollfd p{releaseFd, POLLIN, 0};
    (void)poll(&p, 1,
               static_cast<int>((kLostGrace + std::chrono::seconds(30)) / std::chrono::milliseconds(1)));
    if (r.lost == 0) device.reset();  // with a stuck worker, the device cannot be destroyed
    _exit(0);
}

// Collects every child's report, bounded by the run's length and the grace for lost requests.
void collect(std::vector<Child>& children, Clock::time_point bound) {
    while (Clock::now() < bound) {
        std::vector<pollfd> fds;
        for (auto& c : children) {
            if (!c.done) fds.push_back({c.reportFd, POLLIN, 0});
        }
        if (fds.empty()) return;
        if (poll(fds.data(), fds.size(), 200) <= 0) continue;
        for (auto& c : children) {
            if (c.done) continue;
            pollfd p{c.reportFd, POLLIN, 0};
            if (poll(&p, 1, 0) <= 0) continue;
            char buffer[4096];
            const ssize_t n = read(c.reportFd, buffer, sizeof buffer);
            if (n > 0) {
                c.text.append(buffer, static_cast<size_t>(n));
            } else {
                c.done = true;
            }
        }
    }
}

}  // namespace

Result<StressReport> runStress(const StressOptions& o) {
    if (o.transport != "loopback" && o.transport != "unix") {
        return invalidArgument("npu stress: --transport " + o.transport + ": expected loopback or unix");
    }
    StressReport total;
    total.seed = o.seed != 0 ? o.seed : static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    total.clients = o.clients;
    total.threads = o.threads;
    total.transport = o.transport;
    std::string socketDir, socketPath;
    if (o.transport == "unix") {
        char dir[] = "/tmp/npu-stress-XXXXXX";  // mkdtemp: mode 0700, ours
        if (mkdtemp(dir) == nullptr)
            return generalFailure(std::string("npu stress: mkdtemp: ") + std::strerror(errno));
        socketDir = dir;
        socketPath = socketDir + "/npu-fwd.sock";
    }
    const auto start = Clock::now();
    std::vector<Child> children(static_cast<size_t>(o.clients));
    for (size_t i = 0; i < children.size(); ++i) {
        int report[2], release[2];
        if (pipe2(report, O_CLOEXEC) != 0 || pipe2(release, O_CLOEXEC) != 0) {
            return generalFailure(std::string("npu stress: pipe: ") + std::strerror(errno));
        }
        const pid_t pid = fork();
        if (pid < 0) return generalFailure(std::string("npu stress: fork: ") + std::strerror(errno));
        if (pid == 0) {
            close(report[0]);
            close(release[1]);
            childMain(o, socketPath, total.seed + i * 1000003u, report[1], release[0]);
        }
        close(report[1]);
        close(release[0]);
        children[i] = Child{pid, report[0], release[1], {}, false};
    }
    collect(children, start + std::chrono::milliseconds(static_cast<int64_t>(o.durationSeconds * 1000)) +
                          std::chrono::minutes(5));
    for (auto& c : children) close(c.releaseFd);
    for (size_t i = 0; i < children.size(); ++i) {
        Child& c = children[i];
        close(c.reportFd);
        auto j = nlohmann::json::parse(c.text, nullptr, false);
        if (!c.done || j.is_discarded()) {
            kill(c.pid, SIGKILL);
            total.lost++;  // at least its request in flight; its count is unknown
            total.problems.push_back("client " + std::to_string(i) + " sent no report");
        } else {
            merge(total, j);
        }
        int status = 0;
        for (int w = 0; w < 500 && waitpid(c.pid, &status, WNOHANG) == 0; ++w)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (waitpid(c.pid, &status, WNOHANG) == 0) {
            kill(c.pid, SIGKILL);
            waitpid(c.pid, &status, 0);
        }
    }
    total.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (!socketDir.empty()) std::filesystem::remove_all(socketDir);
    return total;
}

nlohmann::json reliabilityJson(const shim::NpuCounters& counters) {
    nlohmann::json j = countersJson(counters);
    nlohmann::json fw = nlohmann::json::object();
    for (const auto& [name, value] : counters.firmware) fw[name] = value;
    if (!fw.empty()) j["firmware"] = fw;
    return j;
}

void printReliability(const shim::NpuCounters& c) {
    fmt::print("reliability (this connection: watchdog, reset, replay)\n");
    fmt::print(
        "  pings {} ({} unanswered, {} stalls: answered, no progress), call timeouts {}, dropped "
        "connections {}\n",
        c.pings, c.pingFailures, c.stalls, c.callTimeouts, c.disconnects);
    fmt::print("  resets {}, restarts {}, models restored {} (lost {})\n", c.resets, c.restarts,
               c.modelsRestored, c.modelsLost);
    fmt::print("  requests replayed {}, failed {}; NPU hangs {}, data faults {}\n", c.requestsReplayed,
               c.requestsFailed, c.npuHangs, c.dataFaults);
    std::string firmware;
    for (const auto& [name, value] : c.firmware) {
        if (name == "rpc.resets" || name == "rpc.pings_on_arrival" || name == "npu.hangs" ||
            name == "npu.data_faults")
            firmware += fmt::format("{}{} {}", firmware.empty() ? "" : ", ", name, value);
    }
    if (!firmware.empty()) fmt::print("  firmware: {}\n", firmware);
}

nlohmann::json stressReportJson(const StressReport& r) {
    return {{"seed", r.seed},
            {"seconds", r.seconds},
            {"transport", r.transport},
            {"clients", r.clients},
            {"threads", r.threads},
            {"models", r.models},
            {"requests", r.requests},
            {"correct", r.correct},
            {"wrong", r.wrong},
            {"lost", r.lost},
            {"answered_twice", r.answeredTwice},
            {"failed_data_fault", r.failedDataFault},
            {"missed_deadline", r.missedDeadline},
            {"failed_other", r.failedOther},
            {"faults",
             {{"total", r.faults},
              {"npu_hang", r.faultHang},
              {"dma_error", r.faultDma},
              {"sram_flip", r.faultSram},
              {"host_crash", r.faultCrash},
              {"wedge", r.faultWedge}}},
            {"recoveries", r.counters.resets + r.counters.restarts + r.counters.requestsReplayed},
            {"recovery", countersJson(r.counters)},
            {"problems", r.problems},
            {"passed", r.passed()}};
}

void printStressReport(const StressReport& r) {
    fmt::print("npu stress: seed {}, {} client(s) x {} thread(s) over {}, {:.1f} s\n", r.seed, r.clients,
               r.threads, r.transport, r.seconds);
    fmt::print("  models            {}\n", fmt::join(r.models, ", "));
    fmt::print("  requests          {}\n", r.requests);
    fmt::print("  correct           {}\n", r.correct);
    fmt::print("  failed, data fault {} (the NPU reported corrupt data; never answered)\n",
               r.failedDataFault);
    fmt::print("  missed deadline   {}\n", r.missedDeadline);
    fmt::print("  failed, other     {}\n", r.failedOther);
    fmt::print("  faults injected   {} (NPU hang {}, DMA error {}, SRAM flip {}, host crash {}, wedge {})\n",
               r.faults, r.faultHang, r.faultDma, r.faultSram, r.faultCrash, r.faultWedge);
    fmt::print(
        "  recoveries        {} (resets {}, restarts {}, replays {}, models restored {}; stalls seen {})\n",
        r.counters.resets + r.counters.restarts + r.counters.requestsReplayed, r.counters.resets,
        r.counters.restarts, r.counters.requestsReplayed, r.counters.modelsRestored, r.counters.stalls);
    fmt::print("  lost              {}\n", r.lost);
    fmt::print("  answered twice    {}\n", r.answeredTwice);
    fmt::print("  wrong answers     {}\n", r.wrong);
    for (const auto& p : r.problems) fmt::print("  problem: {}\n", p);
    fmt::print("{}\n", r.passed() ? "PASSED" : "FAILED");
}

}  // namespace npu::tools
