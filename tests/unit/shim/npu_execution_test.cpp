// Every execution mode, QoS and memory domains on the NPU, over loopback and (a subset) over
// the unix socket to npu-fwd: the same suite the CPU reference runs (tests/unit/hal/
// execution_suite.h).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "../hal/execution_suite.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/shim/npu_device.h"

using namespace npu;
using namespace npu::hal::test;

namespace {

struct Loopback {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> device;
};

Loopback openLoopback() {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    Loopback l;
    l.firmware = std::move(loop->firmware);
    auto device = shim::createNpuDevice(std::move(loop->hostEnd));
    REQUIRE(device.has_value());
    l.device = *device;
    return l;
}

// Two clients of one npu-fwd the first one starts (and stops when it goes).
struct UnixClients {
    std::string socket;
    std::shared_ptr<hal::IDevice> first, second;
    ~UnixClients() {
        second.reset();
        first.reset();
        std::filesystem::remove(socket);
    }
};

std::unique_ptr<UnixClients> openUnix(const char* tag) {
    auto c = std::make_unique<UnixClients>();
    c->socket = (std::filesystem::temp_directory_path() /
                 (std::string("npu-exec-") + tag + "-" + std::to_string(getpid()) + ".sock"))
                    .string();
    shim::DaemonOptions options;
    options.socketPath = c->socket;
    options.daemonPath = NPU_FWD_TEST_PATH;
    auto first = shim::connectNpuDaemon(options);
    INFO((first ? std::string() : first.error().message));
    REQUIRE(first.has_value());
    options.spawnIfAbsent = false;
    auto second = shim::connectNpuDaemon(options);
    REQUIRE(second.has_value());
    c->first = *first;
    c->second = *second;
    return c;
}

}  // namespace

#define OPEN_DEVICE openLoopback
NPU_HAL_EXECUTION_SUITE("npu loopback", "[shim][execution]")

TEST_CASE("npu loopback: MemoryDomain dynamic shapes", "[shim][memory-domain]") {
    auto l = openLoopback();
    if (!l.device->prepareModel(addModel({0, 4}))) {
        WARN(
            "the NPU does not prepare models with unknown dimensions: dynamic buffers run on the reference "
            "only");
        return;
    }
    checkDynamicBuffer(*l.device);
}

TEST_CASE("npu unix: asynchronous, fenced, burst and QoS", "[shim][execution]") {
    auto c = openUnix("modes");
    checkAsyncExecution(*c->first);
    checkBurst(*c->first);
    checkQualityOfService(*c->first);
    checkShapesAndTiming(*c->first);
}

TEST_CASE("npu unix: fenced execution", "[shim][execution]") {
    auto c = openUnix("fenced");
    checkFencedExecution(*c->first);
}

TEST_CASE("npu unix: MemoryDomain, a client cannot use another client's buffers", "[shim][memory-domain]") {
    auto c = openUnix("domains");
    checkAllocateValidation(*c->first, *c->second);
    checkExecutionWithDeviceMemory(*c->first, *c->second);
}
