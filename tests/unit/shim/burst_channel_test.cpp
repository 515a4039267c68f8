// Bursts on their own fast message queue (docs/execution.md "Bursts", docs/protocol.md "Burst
// channels"): through the HAL over loopback and unix (results, counters on both ends, the option
// that turns channels off, concurrent use of one burst, deadlines, a firmware restart), and from a
// raw client: what a channel serves, whose models it reaches, bad fds, and its end.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <thread>

#include "loopback_device.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/model_builder.h"
#include "npu/protocol/fmq.h"
#include "npu/shim/npu_device.h"
#include "raw_client.h"

using namespace npu;
using namespace npu::shim::test;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kN = 64;

// out = a + b over [1, kN] (quant8, scale 1, zero point 0): one NPU operation.
hal::Model addModel() {
    hal::ModelBuilder b;
    const auto q8 = hal::OperandType::TENSOR_QUANT8_ASYMM;
    const uint32_t a = b.input(q8, {1, kN}, 1.0f, 0);
    const uint32_t c = b.input(q8, {1, kN}, 1.0f, 0);
    const uint32_t act = b.scalar(0);
    const uint32_t out = b.output(q8, {1, kN}, 1.0f, 0);
    b.operation(hal::OperationType::ADD, {a, c, act}, {out});
    return b.build();
}

// A request over one memfd pool: a at 0, b at kN, out at 2 kN.
struct AddRequest {
    std::shared_ptr<hal::Memory> pool;
    hal::Request request;
    explicit AddRequest(uint8_t a, uint8_t b) {
        pool = hal::Memory::create(3 * kN);
        REQUIRE(pool != nullptr);
        std::memset(pool->data(), a, kN);
        std::memset(pool->data() + kN, b, kN);
        request.inputs = {{false, {0, 0, kN, 0}, {}}, {false, {0, kN, kN, 0}, {}}};
        request.outputs = {{false, {0, 2 * kN, kN, 0}, {}}};
        request.pools = {pool};
    }
    bool sumIs(uint8_t v) const {
        for (uint32_t i = 0; i < kN; ++i) {
            if (pool->data()[2 * kN + i] != v) return false;
        }
        return true;
    }
};

// The NPU device of a unix-socket firmware host served from this process, and the host.
struct UnixDevice {
    std::string dir;
    std::unique_ptr<proto::UnixListener> listener;
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> device;
    explicit UnixDevice(const shim::ShimOptions& options = {}) {
        dir = std::filesystem::temp_directory_path() / ("npu-burst-test-" + std::to_string(getpid()));
        std::filesystem::create_directories(dir);
        auto l = proto::UnixListener::listen(dir + "/fw.sock");
        REQUIRE(l.has_value());
        listener = std::move(*l);
        auto fw = fw::host::FirmwareHost::create();
        REQUIRE(fw.has_value());
        firmware = std::move(*fw);
        auto client = proto::connectUnix(dir + "/fw.sock", 2000ms);
        REQUIRE(client.has_value());
        auto server = listener->accept(2000ms);
        REQUIRE(server.has_value());
        firmware->start(std::move(*server));
        auto d = shim::createNpuDevice(std::move(*client), options);
        REQUIRE(d.has_value());
        device = *d;
    }
    ~UnixDevice() {
        device.reset();
        firmware.reset();
        listener.reset();
        std::filesystem::remove_all(dir);
    }
};

std::shared_ptr<hal::IDevice> loopbackDevice(std::unique_ptr<fw::host::FirmwareHost>& firmware,
                                             const shim::ShimOptions& options = {}) {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    firmware = std::move(loop->firmware);
    auto d = shim::createNpuDevice(std::move(loop->hostEnd), options);
    REQUIRE(d.has_value());
    return *d;
}

// A memfd of zeros (no queue header) and the read end of a pipe: fds of the wrong kind.
struct JunkFds {
    proto::UniqueFd memfdFd, pipeRead, pipeWrite;
    int memfd = -1, pipeEnd = -1;
    JunkFds() {
        memfdFd = proto::UniqueFd(memfd_create("junk", MFD_CLOEXEC));
        REQUIRE(ftruncate(memfdFd.get(), 4096) == 0);
        int p[2];
        REQUIRE(pipe2(p, O_CLOEXEC) == 0);
        pipeRead = proto::UniqueFd(p[0]);
        pipeWrite = proto::UniqueFd(p[1]);
        memfd = memfdFd.get();
        pipeEnd = pipeRead.get();
    }
};

uint64_t burstChannelsOpened(hal::IDevice& device) {
    auto c = shim::queryNpuCounters(device);
    REQUIRE(c.has_value());
    return c->burstChannelsOpened;
}

// Runs `n` burst executions of a new pool (cached under `token`) and checks every sum.
void runBurst(hal::IBurst& burst, int n, uint8_t a = 3, uint8_t b = 4, int64_t token = 0) {
    AddRequest r(a, b);
    for (int i = 0; i < n; ++i) {
        std::memset(r.pool->data() + 2 * kN, 0, kN);
        auto result = burst.executeSynchronously(r.request, {token}, hal::MeasureTiming::YES, std::nullopt,
                                                 std::nullopt);
        INFO("execution " << i << ": " << (result ? std::string("ok") : result.error().message));
        REQUIRE(result.has_value());
        REQUIRE(r.sumIs(static_cast<uint8_t>(a + b)));
        CHECK(result->timing.timeOnDeviceUs != hal::kNoTiming);
        CHECK(result->timing.timeInDriverUs >= result->timing.timeOnDeviceUs);
    }
}

void checkBurstOnChannel(hal::IDevice& device) {
    auto prepared = device.prepareModel(addModel());
    REQUIRE(prepared.has_value());
    const uint64_t before = firmwareCounter(device, "burst.requests");
    {
        auto burst = (*prepared)->configureExecutionBurst();
        REQUIRE(burst.has_value());
        runBurst(**burst, 50);
        CHECK(burstChannelsOpened(device) == 1);
        CHECK(firmwareCounter(device, "burst.channels_open") == 1);
        CHECK(firmwareCounter(device, "burst.requests") == before + 50);
        // A synchronous execution of the same model still takes the connection.
        AddRequest sync(1, 1);
        REQUIRE((*prepared)->executeSynchronously(sync.request, hal::MeasureTiming::NO, std::nullopt,
                                                  std::nullopt));
        CHECK(sync.sumIs(2));
        CHECK(firmwareCounter(device, "burst.requests") == before + 50);
    }
    // The burst released: the firmware closes its channel once it sees the queue's end.
    uint64_t open = 1;
    for (int i = 0; i < 200 && open != 0; ++i) {
        std::this_thread::sleep_for(10ms);
        open = firmwareCounter(device, "burst.channels_open");
    }
    CHECK(open == 0);
}

}  // namespace

TEST_CASE("burst channel: a burst's executions run on its own queue over loopback") {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    auto device = loopbackDevice(firmware);
    checkBurstOnChannel(*device);
}

TEST_CASE("burst channel: a burst's executions run on its own queue over unix") {
    UnixDevice unix;
    checkBurstOnChannel(*unix.device);
}

TEST_CASE("burst channel: with burst channels off, a burst takes the connection") {
    shim::ShimOptions options;
    options.burstChannels = false;
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    auto device = loopbackDevice(firmware, options);
    auto prepared = device->prepareModel(addModel());
    REQUIRE(prepared.has_value());
    auto burst = (*prepared)->configureExecutionBurst();
    REQUIRE(burst.has_value());
    runBurst(**burst, 10);
    CHECK(burstChannelsOpened(*device) == 0);
    CHECK(firmwareCounter(*device, "burst.channels_opened") == 0);
    CHECK(firmwareCounter(*device, "burst.requests") == 0);
}

TEST_CASE("burst channel: threads sharing one burst all get right answers (one on the queue at a time)") {
    UnixDevice unix;
    auto prepared = unix.device->prepareModel(addModel());
    REQUIRE(prepared.has_value());
    auto burst = (*prepared)->configureExecutionBurst();
    REQUIRE(burst.has_value());
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            AddRequest r(static_cast<uint8_t>(t), 10);
            for (int i = 0; i < 40; ++i) {
                std::memset(r.pool->data() + 2 * kN, 0, kN);
                // Each thread its own pool: no token (-1), so the burst's cache is not shared.
                auto result = (*burst)->executeSynchronously(r.request, {-1}, hal::MeasureTiming::NO,
                                                             std::nullopt, std::nullopt);
                if (!result || !r.sumIs(static_cast<uint8_t>(t + 10))) wrong++;
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(wrong.load() == 0);
    CHECK(burstChannelsOpened(*unix.device) == 1);
    CHECK(firmwareCounter(*unix.device, "burst.requests") >= 1);
}

TEST_CASE("burst channel: a deadline that passes while the work is held is missed, then the burst goes on") {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    auto device = loopbackDevice(firmware);
    auto prepared = device->prepareModel(addModel());
    REQUIRE(prepared.has_value());
    auto burst = (*prepared)->configureExecutionBurst();
    REQUIRE(burst.has_value());
    runBurst(**burst, 1);
    firmware->holdWork(true);
    AddRequest r(1, 2);
    auto late = (*burst)->executeSynchronously(r.request, {-1}, hal::MeasureTiming::YES,
                                               std::chrono::steady_clock::now() + 50ms, std::nullopt);
    firmware->holdWork(false);
    REQUIRE_FALSE(late.has_value());
    CHECK((late.error().status == hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT ||
           late.error().status == hal::ErrorStatus::MISSED_DEADLINE_PERSISTENT));
    runBurst(**burst, 5, 3, 4, 1);
    CHECK(burstChannelsOpened(*device) == 1);
}

TEST_CASE("burst channel: after a firmware restart the burst opens a new channel and goes on") {
    fw::host::FirmwareHostConfig config;
    config.faultInjection = true;
    std::atomic<int> started{0};
    shim::TransportFactory factory = [&]() -> proto::Result<std::unique_ptr<proto::Transport>> {
        started++;
        return fw::host::startLoopbackTransport(config);
    };
    auto device = shim::createNpuDevice(factory);
    REQUIRE(device.has_value());
    auto prepared = (*device)->prepareModel(addModel());
    REQUIRE(prepared.has_value());
    auto burst = (*prepared)->configureExecutionBurst();
    REQUIRE(burst.has_value());
    runBurst(**burst, 3);
    shim::NpuFaultPlan crash;
    crash.crashAfterMs = 1;
    REQUIRE(shim::injectNpuFaults(**device, crash).has_value());
    std::this_thread::sleep_for(50ms);  // the host is gone; the next execution finds out
    runBurst(**burst, 3, 5, 6, 1);
    CHECK(started.load() == 2);
    CHECK(burstChannelsOpened(**device) == 2);
    auto counters = shim::queryNpuCounters(**device);
    REQUIRE(counters.has_value());
    CHECK(counters->restarts == 1);
}

TEST_CASE("burst channel: from a raw client: what a channel serves, whose models it reaches, its end") {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    RawClient owner(std::move(loop->hostEnd));
    CHECK(owner.hello.burst_channels());
    RawClient other(loop->firmware->connectLoopback());
    uint32_t mine = 0, theirs = 0;
    REQUIRE(owner.prepare(addModel(), hal::Priority::MEDIUM, &mine) == 0);
    REQUIRE(other.prepare(addModel(), hal::Priority::MEDIUM, &theirs) == 0);

    auto end = proto::createFmq();
    REQUIRE(end.has_value());
    const int fds[2] = {end->memfd.get(), end->doorbell.get()};
    proto::OpenBurstChannelRequest open;
    proto::OpenBurstChannelReply opened;
    REQUIRE(owner.rpc->call(proto::METHOD_OPEN_BURST_CHANNEL, open, opened, kCallTimeout, fds).has_value());
    REQUIRE(opened.status().code() == 0);
    CHECK(opened.queue_depth() >= 2);
    end->memfd.reset();
    end->doorbell.reset();
    auto channel = proto::RpcClient::create(std::move(end->transport));
    REQUIRE(channel.has_value());

    SECTION("Execute of the session's own model, in its window, on the channel") {
        auto block = stageAdd(owner, kN, 20, 22);
        proto::ExecuteReply reply;
        REQUIRE((*channel)->call(proto::METHOD_EXECUTE, RawClient::addRequest(mine, block.addr(), kN), reply,
                                 kCallTimeout));
        CHECK(reply.status().code() == 0);
        CHECK(block.data()[2 * kN] == 42);
        CHECK(owner.counters()["burst.requests"] == 1);
    }
    SECTION("another session's model is not found; the other session is undisturbed") {
        auto block = stageAdd(owner, kN, 1, 1);
        proto::ExecuteReply reply;
        auto r = (*channel)->call(proto::METHOD_EXECUTE, RawClient::addRequest(theirs, block.addr(), kN),
                                  reply, kCallTimeout);
        const uint32_t code = r ? reply.status().code() : r.error().remoteCode;
        CHECK(code == kInvalidArgument);
        auto theirBlock = stageAdd(other, kN, 2, 3);
        CHECK(other.execute(RawClient::addRequest(theirs, theirBlock.addr(), kN)).status().code() == 0);
        CHECK(theirBlock.data()[2 * kN] == 5);
    }
    SECTION("anything but Execute, Cancel and Ping is refused on the channel, naming the method") {
        proto::HelloRequest hello;
        hello.set_major(1);
        proto::HelloReply reply;
        auto r = (*channel)->call(proto::METHOD_HELLO, hello, reply, kCallTimeout);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().remoteCode == kInvalidArgument);
        CHECK(r.error().message.find("Hello") != std::string::npos);
        CHECK(r.error().message.find("not served on a burst channel") != std::string::npos);
        proto::PingRequest ping;
        ping.set_nonce(7);
        proto::PingReply pong;
        REQUIRE((*channel)->call(proto::METHOD_PING, ping, pong, kCallTimeout).has_value());
        CHECK(pong.nonce() == 7);
    }
    SECTION("the client's end goes: the firmware closes the channel") {
        channel->reset();
        uint64_t openNow = 1;
        for (int i = 0; i < 200 && openNow != 0; ++i) {
            std::this_thread::sleep_for(10ms);
            openNow = owner.counters()["burst.channels_open"];
        }
        CHECK(openNow == 0);
        CHECK(owner.counters()["burst.channels_opened"] == 1);
    }
}

TEST_CASE(
    "burst channel: OpenBurstChannel with missing or unfit fds is INVALID_ARGUMENT, nothing disturbed") {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    RawClient c(std::move(loop->hostEnd));
    uint32_t handle = 0;
    REQUIRE(c.prepare(addModel(), hal::Priority::MEDIUM, &handle) == 0);
    auto openWith = [&](std::span<const int> fds) {
        proto::OpenBurstChannelRequest request;
        proto::OpenBurstChannelReply reply;
        REQUIRE(c.rpc->call(proto::METHOD_OPEN_BURST_CHANNEL, request, reply, kCallTimeout, fds).has_value());
        return reply.status();
    };
    SECTION("no fds") {
        const auto s = openWith({});
        CHECK(s.code() == kInvalidArgument);
        CHECK(s.message().find("0 of 2 came") != std::string::npos);
    }
    SECTION("a memfd that is no queue, and a doorbell that is no socket") {
        JunkFds junk;
        const int fds[2] = {junk.memfd, junk.pipeEnd};
        const auto s = openWith(fds);
        CHECK(s.code() == kInvalidArgument);
        CHECK(s.message().find("OpenBurstChannel") != std::string::npos);
    }
    SECTION("more channels than a session may hold") {
        std::vector<proto::FmqHostEnd> ends;
        proto::Status s;
        for (int i = 0; i < 9; ++i) {
            auto end = proto::createFmq();
            REQUIRE(end.has_value());
            const int fds[2] = {end->memfd.get(), end->doorbell.get()};
            s = openWith(fds);
            ends.push_back(std::move(*end));
            if (s.code() != 0) break;
        }
        CHECK(s.code() == 7);  // RESOURCE_EXHAUSTED_TRANSIENT
        CHECK(s.message().find("the most") != std::string::npos);
    }
    // The session works as before.
    auto block = stageAdd(c, kN, 6, 7);
    CHECK(c.execute(RawClient::addRequest(handle, block.addr(), kN)).status().code() == 0);
    CHECK(block.data()[2 * kN] == 13);
}
