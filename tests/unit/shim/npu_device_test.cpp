// The NPU HAL device end to end: shim -> transport -> firmware -> simulator, over both
// transports: the handshake, version mismatch, dead daemon, and the conformance vectors.
#include "npu/shim/npu_device.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <thread>

#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/protocol/transport.h"
#include "npu/ref/reference_device.h"

extern char** environ;

namespace {

using namespace npu;
using namespace std::chrono_literals;

struct Loopback {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> device;
};

Loopback openLoopback(const shim::ShimOptions& options = {}) {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    Loopback l;
    l.firmware = std::move(loop->firmware);
    auto device = shim::createNpuDevice(std::move(loop->hostEnd), options);
    REQUIRE(device.has_value());
    l.device = *device;
    return l;
}

std::string tempSocket(const char* tag) {
    return (std::filesystem::temp_directory_path() /
            (std::string("npu-test-") + tag + "-" + std::to_string(getpid()) + ".sock"))
        .string();
}

// A daemon started by the test itself, so the test can stop or kill it.
struct Daemon {
    pid_t pid = -1;
    std::string socket;
    ~Daemon() {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
        std::filesystem::remove(socket);
    }
};

std::unique_ptr<Daemon> startDaemon(const char* tag, std::vector<std::string> extra = {}) {
    auto d = std::make_unique<Daemon>();
    d->socket = tempSocket(tag);
    std::string binary = NPU_FWD_TEST_PATH;
    std::vector<std::string> args = {binary, "--socket", d->socket};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    REQUIRE(posix_spawn(&d->pid, binary.c_str(), nullptr, nullptr, argv.data(), environ) == 0);
    for (int i = 0; i < 500 && !std::filesystem::exists(d->socket); ++i) std::this_thread::sleep_for(10ms);
    REQUIRE(std::filesystem::exists(d->socket));
    return d;
}

framework::TestCase findVector(const std::string& file, const std::string& name) {
    auto tc = framework::findTestCase(framework::ctsDataDir() + "/" + file, name);
    REQUIRE(tc.has_value());
    return std::move(*tc);
}

// Runs one vector; returns "pass", "fail: ...", "unsupported", or "rejected" (expect_failure).
std::string runVector(hal::IDevice& device, const framework::TestCase& tc) {
    auto supported = device.getSupportedOperations(tc.model);
    if (!supported) {
        if (tc.expectFailure) return "rejected";
        if (supported.error().status == hal::ErrorStatus::INVALID_ARGUMENT)
            return "fail: valid model rejected: " + supported.error().message;
        return "fail: getSupportedOperations: " + supported.error().message;
    }
    for (bool s : *supported) {
        if (!s) return "unsupported";
    }
    auto prepared = device.prepareModel(tc.model);
    if (!prepared) return tc.expectFailure ? "rejected" : "fail: prepare: " + prepared.error().message;
    auto request = framework::makeRequest(tc);
    if (!request) return "fail: request: " + request.error().message;
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::YES, std::nullopt,
                                                    std::nullopt);
    if (!result) return tc.expectFailure ? "rejected" : "fail: execute: " + result.error().message;
    if (tc.expectFailure) return "fail: expected a failure, got outputs";
    auto outputs = framework::readOutputs(*request);
    auto mismatch = framework::compareOutputs(tc, outputs, result->outputShapes);
    if (mismatch) return "fail: " + mismatch->message;
    if (result->timing.timeOnDeviceUs == hal::kNoTiming) return "fail: no device time";
    return "pass";
}

// Every vendored vector: what the NPU claims must pass; everything else must be unsupported.
void runConformance(hal::IDevice& device, const char* transport) {
    std::map<std::string, int> counts;
    std::vector<std::string> failures;
    for (const auto& entry : std::filesystem::directory_iterator(framework::ctsDataDir())) {
        if (entry.path().extension() != ".gz") continue;
        auto reader = framework::CtsReader::open(entry.path().string());
        REQUIRE(reader.has_value());
        while (true) {
            auto next = (*reader)->next();
            REQUIRE(next.has_value());
            if (!next->has_value()) break;
            const auto& tc = **next;
            std::string verdict = runVector(device, tc);
            if (verdict.rfind("fail", 0) == 0) {
                failures.push_back(tc.name + ": " + verdict);
                counts["fail"]++;
            } else {
                counts[verdict]++;
            }
        }
    }
    INFO(transport << ": " << counts["pass"] << " passed, " << counts["rejected"] << " rejected as expected, "
                   << counts["unsupported"] << " unsupported, " << counts["fail"] << " failed");
    for (size_t i = 0; i < failures.size() && i < 20; ++i) UNSCOPED_INFO(failures[i]);
    CHECK(failures.empty());
    CHECK(counts["pass"] > 0);
    WARN(transport << ": " << counts["pass"] << " vectors passed on the NPU, " << counts["unsupported"]
                   << " unsupported");
}

}  // namespace

TEST_CASE("loopback: handshake gives an ACCELERATOR with versions and capabilities", "[shim]") {
    auto l = openLoopback();
    CHECK(l.device->getType() == hal::DeviceType::ACCELERATOR);
    CHECK(l.device->getVersionString().find("npu-shim") != std::string::npos);
    auto caps = l.device->getCapabilities();
    REQUIRE(caps.has_value());
    CHECK_FALSE(caps->operandPerformance.empty());
    // Every operand type, sorted; what the NPU does not run is quoted as unsupported (FLT_MAX).
    REQUIRE(caps->operandPerformance.size() == 16);
    for (size_t i = 1; i < caps->operandPerformance.size(); ++i) {
        CHECK(caps->operandPerformance[i - 1].type < caps->operandPerformance[i].type);
    }
    auto perf = [&](hal::OperandType t) {
        for (const auto& p : caps->operandPerformance) {
            if (p.type == t) return p.info.execTime;
        }
        return 0.0f;
    };
    CHECK(perf(hal::OperandType::TENSOR_QUANT8_ASYMM) < 1.0f);
    CHECK(perf(hal::OperandType::TENSOR_FLOAT32) == std::numeric_limits<float>::max());
    CHECK(caps->ifPerformance.execTime == std::numeric_limits<float>::max());
    auto info = shim::queryNpuInfo(*l.device);
    REQUIRE(info.has_value());
    CHECK(info->protocolMajor == shim::kProtocolMajor);
    CHECK(info->clockHz > 0);
    CHECK(info->arrayRows > 0);
}

TEST_CASE("loopback: a firmware of another protocol major version is refused with both versions", "[shim]") {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    shim::ShimOptions options;
    options.protocolMajor = shim::kProtocolMajor + 1;
    auto device = shim::createNpuDevice(std::move(loop->hostEnd), options);
    REQUIRE_FALSE(device.has_value());
    CHECK(device.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK_THAT(device.error().message, Catch::Contains("2") && Catch::Contains("1"));
}

TEST_CASE("loopback: an invalid model is rejected with INVALID_ARGUMENT before reaching the firmware",
          "[shim]") {
    auto l = openLoopback();
    auto tc = findVector("V1_0.jsonl.gz", "conv_quant8");
    tc.model.main.operations[0].inputs[0] = 999;
    auto prepared = l.device->prepareModel(tc.model);
    REQUIRE_FALSE(prepared.has_value());
    CHECK(prepared.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
}

TEST_CASE("loopback: the firmware says why it does not support an operation", "[shim][reliability]") {
    auto l = openLoopback();
    auto floor = findVector("V1_0.jsonl.gz", "floor");
    auto support = shim::querySupportedOperations(*l.device, floor.model);
    REQUIRE(support.has_value());
    REQUIRE(support->supported.size() == 1);
    CHECK_FALSE(support->supported[0]);
    REQUIRE(support->reasons.size() == 1);
    // The firmware names what it knows of the operation: FLOOR (HAL type 8) is not one of its types.
    CHECK_THAT(support->reasons[0],
               Catch::StartsWith("operation 0") && Catch::Contains("type 8 is not supported by the NPU"));
    // A supported operation has no reason; the HAL call answers the same as the shim's.
    auto conv = findVector("V1_0.jsonl.gz", "conv_quant8");
    auto convSupport = shim::querySupportedOperations(*l.device, conv.model);
    REQUIRE(convSupport.has_value());
    CHECK(convSupport->supported == std::vector<bool>{true});
    CHECK(convSupport->reasons == std::vector<std::string>{""});
    CHECK(l.device->getSupportedOperations(floor.model).value() == support->supported);
    // Only an NPU device of this shim answers it.
    ref::ReferenceDevice reference;
    auto other = shim::querySupportedOperations(reference, floor.model);
    REQUIRE_FALSE(other.has_value());
    CHECK(other.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
}

TEST_CASE("loopback: a quantized CONV_2D runs with device timing and a per-operation profile", "[shim]") {
    auto l = openLoopback();
    auto tc = findVector("V1_0.jsonl.gz", "conv_quant8");
    REQUIRE(runVector(*l.device, tc) == "pass");
    auto prepared = l.device->prepareModel(tc.model);
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    auto r = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::YES, std::nullopt,
                                               std::nullopt);
    REQUIRE(r.has_value());
    CHECK(r->deviceCycles > 0);
    CHECK(r->profile.size() == 1);
    CHECK(r->timing.timeInDriverUs >= r->timing.timeOnDeviceUs);
    auto untimed = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                     std::nullopt);
    REQUIRE(untimed.has_value());
    CHECK(untimed->timing.timeOnDeviceUs == hal::kNoTiming);
    CHECK(untimed->timing.timeInDriverUs == hal::kNoTiming);
}

TEST_CASE("loopback: prepareModel autotunes unless told not to, and reports it", "[shim]") {
    auto tc = findVector("V1_0.jsonl.gz", "conv_quant8");  // 2 output rows: two row tilings to try
    for (bool autotune : {true, false}) {
        shim::ShimOptions options;
        options.autotune = autotune;
        auto l = openLoopback(options);
        auto prepared = l.device->prepareModel(tc.model);
        REQUIRE(prepared.has_value());
        auto info = shim::queryCompileInfo(**prepared);
        REQUIRE(info.has_value());
        if (autotune) {
            CHECK(info->tuningTrials == 2);
            CHECK(info->greedyCycles > 0);
            CHECK(info->tunedCycles <= info->greedyCycles);
            auto request = framework::makeRequest(tc);
            REQUIRE(request.has_value());
            auto r = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::YES,
                                                       std::nullopt, std::nullopt);
            REQUIRE(r.has_value());
            CHECK(r->deviceCycles == info->tunedCycles);
        } else {
            CHECK(info->tuningTrials == 0);
            CHECK(info->tunedCycles == 0);
        }
        CHECK(runVector(*l.device, tc) == "pass");
    }
    ref::ReferenceDevice reference;
    auto other = reference.prepareModel(tc.model);
    REQUIRE(other.has_value());
    CHECK_FALSE(shim::queryCompileInfo(**other).has_value());
}

TEST_CASE("unix: the shim starts npu-fwd, runs a model and stops the daemon", "[shim]") {
    shim::DaemonOptions options;
    options.socketPath = tempSocket("spawn");
    options.daemonPath = NPU_FWD_TEST_PATH;
    {
        auto device = shim::connectNpuDaemon(options);
        REQUIRE(device.has_value());
        auto tc = findVector("V1_0.jsonl.gz", "conv_quant8");
        CHECK(runVector(**device, tc) == "pass");
    }
    std::filesystem::remove(options.socketPath);
}

TEST_CASE("unix: a socket-activated npu-fwd serves the socket it is handed and leaves its file", "[shim]") {
    // What systemd does for npu-fwd.socket: bind and listen, then start the daemon with the
    // socket as fd 3 and LISTEN_PID / LISTEN_FDS set (sd_listen_fds(3)).
    const std::string own = tempSocket("activated");
    int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(sock >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", own.c_str());
    REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(sock, 4) == 0);

    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(sock, 3);
        if (sock != 3) ::close(sock);
        const std::string me = std::to_string(getpid());
        setenv("LISTEN_PID", me.c_str(), 1);
        setenv("LISTEN_FDS", "1", 1);
        execl(NPU_FWD_TEST_PATH, NPU_FWD_TEST_PATH, "--once", "--idle-exit", "20",
              static_cast<char*>(nullptr));
        _exit(127);
    }
    ::close(sock);
    {
        shim::DaemonOptions options;
        options.socketPath = own;
        options.spawnIfAbsent = false;
        auto device = shim::connectNpuDaemon(options);
        REQUIRE(device.has_value());
        CHECK(runVector(**device, findVector("V1_0.jsonl.gz", "conv_quant8")) == "pass");
    }
    int status = 0;
    for (int i = 0; i < 1000 && waitpid(pid, &status, WNOHANG) == 0; ++i) std::this_thread::sleep_for(10ms);
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        FAIL("npu-fwd --once did not exit after its client left");
    }
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(std::filesystem::exists(own));  // systemd's socket file is not the daemon's to unlink
    std::filesystem::remove(own);
}

TEST_CASE("unix: a listener refuses to adopt an fd that is not a listening Unix socket", "[shim]") {
    const int file = ::open("/dev/null", O_RDONLY);
    REQUIRE(file >= 0);
    auto notSocket = proto::UnixListener::adopt(file);
    REQUIRE_FALSE(notSocket.has_value());
    CHECK(notSocket.error().message.find("not a listening") != std::string::npos);
    ::close(file);
    const int unbound = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(unbound >= 0);
    auto notListening = proto::UnixListener::adopt(unbound);
    REQUIRE_FALSE(notListening.has_value());
    CHECK(notListening.error().message.find("not a listening") != std::string::npos);
    ::close(unbound);
}

TEST_CASE("unix: no daemon and no permission to start one gives DEVICE_UNAVAILABLE", "[shim]") {
    shim::DaemonOptions options;
    options.socketPath = tempSocket("absent");
    options.spawnIfAbsent = false;
    auto device = shim::connectNpuDaemon(options);
    REQUIRE_FALSE(device.has_value());
    CHECK(device.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK_THAT(device.error().message, Catch::Contains(options.socketPath));
}

TEST_CASE("unix: a protocol major mismatch with the daemon is refused", "[shim]") {
    auto daemon = startDaemon("mismatch");
    shim::DaemonOptions options;
    options.socketPath = daemon->socket;
    options.spawnIfAbsent = false;
    options.shim.protocolMajor = shim::kProtocolMajor + 1;
    auto device = shim::connectNpuDaemon(options);
    REQUIRE_FALSE(device.has_value());
    CHECK(device.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK_THAT(device.error().message, Catch::Contains("protocol"));
}

TEST_CASE("unix: several clients share one daemon, each with its own NPU; one too many is refused",
          "[shim]") {
    auto daemon = startDaemon("clients", {"--max-clients", "2"});
    shim::DaemonOptions options;
    options.socketPath = daemon->socket;
    options.spawnIfAbsent = false;
    options.shim.callTimeout = 3s;
    auto first = shim::connectNpuDaemon(options);
    auto second = shim::connectNpuDaemon(options);
    REQUIRE(first.has_value());
    REQUIRE(second.has_value());
    auto tc = findVector("V1_0.jsonl.gz", "conv_quant8");
    auto a = std::async(std::launch::async, [&] { return runVector(**first, tc); });
    auto b = std::async(std::launch::async, [&] { return runVector(**second, tc); });
    CHECK(a.get() == "pass");
    CHECK(b.get() == "pass");
    auto third = shim::connectNpuDaemon(options);
    REQUIRE_FALSE(third.has_value());
    CHECK(third.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    // A place frees up when a client leaves.
    first->reset();
    std::shared_ptr<hal::IDevice> again;
    for (int i = 0; i < 100 && !again; ++i) {
        auto d = shim::connectNpuDaemon(options);
        if (d)
            again = *d;
        else
            std::this_thread::sleep_for(50ms);
    }
    REQUIRE(again != nullptr);
    CHECK(runVector(*again, tc) == "pass");
}

TEST_CASE("unix: the daemon killed mid-call gives DEVICE_UNAVAILABLE within the timeout", "[shim]") {
    auto daemon = startDaemon("kill");
    shim::DaemonOptions options;
    options.socketPath = daemon->socket;
    options.spawnIfAbsent = false;
    options.shim.executeTimeout = 10s;
    auto device = shim::connectNpuDaemon(options);
    REQUIRE(device.has_value());
    auto tc = findVector("V1_0.jsonl.gz", "conv_quant8");
    auto prepared = (*device)->prepareModel(tc.model);
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());

    // Freeze the daemon so the call is certainly in flight, then kill it. kill() only queues the
    // stop: the group stop completes when the signalled thread next runs, and until then the
    // daemon's session thread can still answer. Wait until the kernel reports it stopped.
    REQUIRE(kill(daemon->pid, SIGSTOP) == 0);
    bool stopped = false;
    for (int i = 0; i < 500 && !stopped; ++i) {
        int status = 0;
        const pid_t r = waitpid(daemon->pid, &status, WUNTRACED | WNOHANG);
        stopped = r == daemon->pid && WIFSTOPPED(status);
        if (!stopped) std::this_thread::sleep_for(10ms);
    }
    REQUIRE(stopped);
    auto call = std::async(std::launch::async, [&] {
        return (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                 std::nullopt);
    });
    std::this_thread::sleep_for(100ms);
    REQUIRE(kill(daemon->pid, SIGKILL) == 0);
    waitpid(daemon->pid, nullptr, 0);
    daemon->pid = -1;
    // The call must end by itself (well before the 10 s execute timeout; the wait below only
    // bounds the test, it is not a timing assertion).
    REQUIRE(call.wait_for(20s) == std::future_status::ready);
    auto result = call.get();
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    // Later calls fail the same way, without hanging.
    auto again = (*device)->getCapabilities();
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
}

TEST_CASE("conformance over loopback: claimed vectors pass, the rest are unsupported", "[conformance]") {
    auto l = openLoopback();
    runConformance(*l.device, "loopback");
}

TEST_CASE("conformance over unix: claimed vectors pass, the rest are unsupported", "[conformance]") {
    auto daemon = startDaemon("conformance");
    shim::DaemonOptions options;
    options.socketPath = daemon->socket;
    options.spawnIfAbsent = false;
    auto device = shim::connectNpuDaemon(options);
    REQUIRE(device.has_value());
    runConformance(**device, "unix");
}
