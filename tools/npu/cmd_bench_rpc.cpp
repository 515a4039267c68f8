// npu bench rpc: round-trip latency of the RPC channel against a bare Unix socket, and over
// the firmware image on QEMU.
#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.h"
#include "npu.pb.h"
#include "npu/framework/cts_loader.h"
#include "npu/hal/model_builder.h"
#include "npu/protocol/qemu_transport.h"
#include "npu/protocol/rpc_client.h"
#include "npu/protocol/transport.h"
#include "npu/shim/npu_device.h"
#include "rpc_timing.h"

namespace npu::tools {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

// Median round trip in microseconds of `iterations` calls of `once` (after a warm-up).
double medianUs(int iterations, const std::function<bool()>& once) {
    for (int i = 0; i < std::min(iterations / 10, 200); ++i) once();
    std::vector<double> us;
    us.reserve(iterations);
    for (int i = 0; i < iterations; ++i) {
        auto t0 = Clock::now();
        if (!once()) return -1.0;
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
    return us[us.size() / 2];
}

framework::TestCase oneAddCase() {
    hal::ModelBuilder b;
    const auto q8 = hal::OperandType::TENSOR_QUANT8_ASYMM;
    uint32_t a = b.input(q8, {1, 64}, 0.5f, 128);
    uint32_t c = b.input(q8, {1, 64}, 0.5f, 128);
    uint32_t act = b.scalar(0);
    uint32_t out = b.output(q8, {1, 64}, 1.0f, 128);
    b.operation(hal::OperationType::ADD, {a, c, act}, {out});
    framework::TestCase tc;
    tc.model = b.build();
    tc.inputs = {std::vector<uint8_t>(64, 130), std::vector<uint8_t>(64, 140)};
    tc.expectedOutputs = {std::vector<uint8_t>(64)};
    tc.expectedOutputDims = {{1, 64}};
    tc.outputIgnored = {false};
    return tc;
}

// One quantized ADD of two 1x64 tensors, executed through the shim.
double execUs(std::unique_ptr<proto::Transport> transport, int iterations, std::string* why,
              std::map<std::string, double>* perExecution) {
    auto failed = [why](const std::string& step, const std::string& message) {
        if (why != nullptr) *why = step + ": " + message;
        return -1.0;
    };
    auto device = shim::createNpuDevice(std::move(transport));
    if (!device) return failed("opening the device", device.error().message);
    const framework::TestCase tc = oneAddCase();
    auto prepared = (*device)->prepareModel(tc.model);
    if (!prepared) return failed("prepareModel", prepared.error().message);
    auto request = framework::makeRequest(tc);
    if (!request) return failed("makeRequest", request.error().message);
    auto before = shim::queryFirmwareCounters(**device);
    if (perExecution != nullptr && !before) return failed("getCounters", before.error().message);
    std::string lastError;
    int executions = 0;
    const double us = medianUs(iterations, [&] {
        auto r = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                   std::nullopt);
        if (!r) lastError = r.error().message;
        ++executions;
        return r.has_value();
    });
    if (us < 0) return failed("executeSynchronously", lastError);
    if (perExecution != nullptr) {
        auto after = shim::queryFirmwareCounters(**device);
        if (!after) return failed("getCounters", after.error().message);
        for (const auto& [name, value] : *after) {
            const auto was = before->find(name);
            (*perExecution)[name] = double(value - (was != before->end() ? was->second : 0)) / executions;
        }
    }
    return us;
}

double bareSocketUs(int iterations) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1.0;
    std::thread echo([fd = sv[1]] {
        char buf[32];
        while (true) {
            size_t got = 0;
            while (got < sizeof buf) {
                ssize_t n = read(fd, buf + got, sizeof buf - got);
                if (n <= 0) return;
                got += static_cast<size_t>(n);
            }
            if (write(fd, buf, sizeof buf) != static_cast<ssize_t>(sizeof buf)) return;
        }
    });
    char msg[32] = {1};
    double us = medianUs(iterations, [&] {
        if (write(sv[0], msg, sizeof msg) != static_cast<ssize_t>(sizeof msg)) return false;
        size_t got = 0;
        while (got < sizeof msg) {
            ssize_t n = read(sv[0], msg + got, sizeof msg - got);
            if (n <= 0) return false;
            got += static_cast<size_t>(n);
        }
        return true;
    });
    shutdown(sv[0], SHUT_RDWR);
    echo.join();
    close(sv[0]);
    close(sv[1]);
    return us;
}

std::optional<UnixFirmware> startUnixFirmware(const std::string& path,
                                              const fw::host::FirmwareHostConfig& config) {
    auto listener = proto::UnixListener::listen(path);
    if (!listener) return std::nullopt;
    auto fw = fw::host::FirmwareHost::create(config);
    if (!fw) return std::nullopt;
    auto client = proto::connectUnix(path, std::chrono::milliseconds(2000));
    if (!client) return std::nullopt;
    auto server = (*listener)->accept(std::chrono::milliseconds(2000));
    if (!server) return std::nullopt;
    (*fw)->start(std::move(*server));
    return UnixFirmware{std::move(*fw), std::move(*client)};
}

namespace {

double pingUs(std::unique_ptr<proto::Transport> transport, int iterations) {
    auto rpc = proto::RpcClient::create(std::move(transport));
    if (!rpc) return -1.0;
    uint64_t nonce = 0;
    return medianUs(iterations, [&] {
        proto::PingRequest request;
        request.set_nonce(++nonce);
        proto::PingReply reply;
        auto r = (*rpc)->call(proto::METHOD_PING, request, reply, std::chrono::milliseconds(2000));
        return r.has_value() && reply.nonce() == nonce;
    });
}

// Over the emulated Cortex-M55 every round trip crosses QEMU's UART and the DDR ring, so it
// takes milliseconds: a smaller sample keeps the benchmark short.
constexpr int kMaxQemuIterations = 300;

// Ping and one-ADD execution over the qemu transport; figures stay -1 when a run fails, and the
// reason goes to stderr. `mailboxTrips`: register-mailbox round trips per execution, measured
// by the firmware's own counter.
void measureQemu(const std::string& hwConfigPath, int iterations, double* ping, double* exec,
                 double* mailboxTrips) {
    proto::QemuOptions options;
    options.hwConfigPath = hwConfigPath;
    const int n = std::min(iterations, kMaxQemuIterations);
    if (auto t = proto::startQemu(options))
        *ping = pingUs(std::move(*t), n);
    else
        fmt::print(stderr, "npu bench rpc: ping_qemu_us: {}\n", t.error().message);
    std::string why;
    std::map<std::string, double> perExecution;
    if (auto t = proto::startQemu(options))
        *exec = execUs(std::move(*t), n, &why, &perExecution);
    else
        why = t.error().message;
    if (*exec < 0) fmt::print(stderr, "npu bench rpc: exec_qemu_us: {}\n", why);
    if (auto trips = perExecution.find("qemu.mailbox_round_trips"); trips != perExecution.end())
        *mailboxTrips = trips->second;
}

}  // namespace

int cmdBenchRpc(bool json, int iterations, const std::string& hwConfigPath) {
    auto config = firmwareConfig(hwConfigPath);
    if (!config) {
        fmt::print(stderr, "npu bench rpc: {}\n", config.error().message);
        return 2;
    }
    const std::string dir = std::filesystem::temp_directory_path() / fmt::format("npu-bench-{}", getpid());
    std::filesystem::create_directories(dir);
    double figures[5] = {-1, -1, -1, -1, -1};
    {
        auto loop = fw::host::startLoopbackFirmware(*config);
        if (loop) figures[0] = pingUs(std::move(loop->hostEnd), iterations);
    }
    {
        auto loop = fw::host::startLoopbackFirmware(*config);
        if (loop) figures[2] = execUs(std::move(loop->hostEnd), iterations);
    }
    {
        auto unix = startUnixFirmware(dir + "/ping.sock", *config);
        if (unix) figures[1] = pingUs(std::move(unix->client), iterations);
    }
    {
        auto unix = startUnixFirmware(dir + "/exec.sock", *config);
        if (unix) figures[3] = execUs(std::move(unix->client), iterations);
    }
    figures[4] = bareSocketUs(iterations);
    std::filesystem::remove_all(dir);
    // qemu: measured when qemu-system-arm, the image and the bridge are there; else null with
    // the reason (not an error: the emulator is optional on a development machine).
    double qemuFigures[2] = {-1, -1};
    double qemuMailboxTrips = -1;
    auto qemuPaths = proto::resolveQemuPaths({});
    if (qemuPaths) measureQemu(hwConfigPath, iterations, &qemuFigures[0], &qemuFigures[1], &qemuMailboxTrips);
    const std::string qemuSkipped = qemuPaths ? "" : qemuPaths.error().message;

    static const char* kKeys[] = {"ping_loopback_us", "ping_unix_us", "exec_loopback_us", "exec_unix_us",
                                  "bare_socket_us"};
    static const char* kQemuKeys[] = {"ping_qemu_us", "exec_qemu_us"};
    bool ok = std::all_of(std::begin(figures), std::end(figures), [](double f) { return f >= 0; }) &&
              (!qemuPaths || (qemuFigures[0] >= 0 && qemuFigures[1] >= 0));
    auto orNull = [](double f) { return f < 0 ? nlohmann::json(nullptr) : nlohmann::json(f); };
    if (json) {
        nlohmann::json j;
        for (int i = 0; i < 5; ++i) j[kKeys[i]] = orNull(figures[i]);
        for (int i = 0; i < 2; ++i) j[kQemuKeys[i]] = orNull(qemuFigures[i]);
        j["exec_qemu_mailbox_round_trips"] = orNull(qemuMailboxTrips);
        j["iterations"] = iterations;
        j["qemu_iterations"] = std::min(iterations, kMaxQemuIterations);
        if (!qemuSkipped.empty()) j["qemu_skipped"] = qemuSkipped;
        j["ping_unix_over_bare"] = figures[4] > 0 && figures[1] > 0 ? figures[1] / figures[4] : 0.0;
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("median round trip over {} iterations\n", iterations);
        for (int i = 0; i < 5; ++i) fmt::print("  {:<18} {:>9.2f} us\n", kKeys[i], figures[i]);
        if (figures[4] > 0 && figures[1] > 0)
            fmt::print("  ping_unix / bare_socket = {:.2f} (target <= 2)\n", figures[1] / figures[4]);
        if (qemuSkipped.empty()) {
            fmt::print("over the emulated Cortex-M55, {} iterations\n",
                       std::min(iterations, kMaxQemuIterations));
            for (int i = 0; i < 2; ++i) fmt::print("  {:<18} {:>9.2f} us\n", kQemuKeys[i], qemuFigures[i]);
            fmt::print("  register-mailbox round trips per execution (firmware counter): {:.1f}\n",
                       qemuMailboxTrips);
        } else {
            fmt::print("  qemu figures skipped: {}\n", qemuSkipped);
        }
    }
    if (!ok) fmt::print(stderr, "npu bench rpc: some figures could not be measured (-1 / null)\n");
    return ok ? 0 : 1;
}

}  // namespace npu::tools
