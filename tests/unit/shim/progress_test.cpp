// Long work kept alive by progress from the firmware (docs/reliability.md "Timeouts"): a prepare slower than
// a short --prepare-timeout succeeds while the firmware sends progress frames, and times out (then is
// cancelled, and stops) when it sends none.
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <thread>

#include "chain_model.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/protocol/transport.h"
#include "npu/shim/npu_device.h"

using namespace npu;
using namespace npu::hal::test;
using namespace npu::shim::test;
using namespace std::chrono_literals;

namespace {

struct SlowFirmware {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> device;
    // Every checkpoint of running work stalls `stall`: a 100-operation compile takes 100 stalls.
    // `transport`: "loopback", or "unix" (a socketpair, as npu-fwd serves a connection).
    SlowFirmware(std::chrono::microseconds stall, uint32_t progressIntervalMs,
                 std::chrono::milliseconds timeout, const std::string& transport) {
        fw::host::FirmwareHostConfig config;
        config.checkpointStallUs = static_cast<uint32_t>(stall.count());
        config.progressIntervalMs = progressIntervalMs;
        auto host = fw::host::FirmwareHost::create(config);
        REQUIRE(host.has_value());
        firmware = std::move(*host);
        shim::ShimOptions options;
        options.prepareTimeout = timeout;
        options.autotune = false;
        auto d = shim::createNpuDevice(connect(transport), options);
        REQUIRE(d.has_value());
        device = *d;
    }
    std::unique_ptr<proto::Transport> connect(const std::string& transport) {
        if (transport == "loopback") return firmware->connectLoopback();
        int fds[2] = {-1, -1};
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
        auto hostEnd = proto::adoptUnixSocket(proto::UniqueFd(fds[0]), "unix:host");
        auto firmwareEnd = proto::adoptUnixSocket(proto::UniqueFd(fds[1]), "unix:firmware");
        REQUIRE((hostEnd.has_value() && firmwareEnd.has_value()));
        firmware->start(std::move(*firmwareEnd));
        return std::move(*hostEnd);
    }
    Result<std::shared_ptr<hal::IPreparedModel>> prepare(const hal::Model& model) {
        return device->prepareModel(model);
    }
    uint64_t counter(const std::string& name) {
        auto c = shim::queryFirmwareCounters(*device);
        REQUIRE(c.has_value());
        INFO(name);
        REQUIRE(c->count(name) == 1);
        return c->at(name);
    }
};

}  // namespace

// The compile (100 checkpoints x 10 ms = about 1 s) outlasts the 250 ms prepare timeout either
// way; what decides is whether the firmware reports progress (every 20 ms) or stays silent.
TEST_CASE("a prepare longer than its timeout succeeds while the firmware sends progress",
          "[shim][progress]") {
    const std::string transport = GENERATE(std::string("loopback"), std::string("unix"));
    INFO(transport);
    SlowFirmware slow(10ms, 20, 250ms, transport);
    const auto prepared = slow.prepare(chainModel(100, 16));
    INFO((prepared ? std::string() : prepared.error().message));
    REQUIRE(prepared.has_value());
    CHECK(slow.counter("rpc.progress_sent") >= 1);
    CHECK(slow.counter("runtime.loaded_models") == 1);
}

TEST_CASE("a prepare longer than its timeout fails when the firmware sends no progress, and stops",
          "[shim][progress]") {
    const std::string transport = GENERATE(std::string("loopback"), std::string("unix"));
    INFO(transport);
    SlowFirmware slow(10ms, 0, 250ms, transport);
    const auto prepared = slow.prepare(chainModel(100, 16));
    REQUIRE_FALSE(prepared.has_value());
    CHECK_THAT(prepared.error().message, Catch::Contains("250 ms"));
    // The shim cancelled it: the firmware stopped compiling at a checkpoint and holds nothing.
    CHECK(slow.counter("rpc.progress_sent") == 0);
    CHECK(slow.counter("sched.cancelled_running") >= 1);  // once per attempt (the shim may replay it)
    CHECK(slow.counter("runtime.loaded_models") == 0);
}
