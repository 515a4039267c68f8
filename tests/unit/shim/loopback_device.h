#pragma once
// The NPU device of a loopback firmware started for one test, and its firmware counters.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "npu/fw/platform/host/firmware_host.h"
#include "npu/shim/npu_device.h"

namespace npu::shim::test {

struct Loopback {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> device;
};

inline Loopback openLoopback() {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    Loopback l;
    l.firmware = std::move(loop->firmware);
    auto device = shim::createNpuDevice(std::move(loop->hostEnd));
    REQUIRE(device.has_value());
    l.device = *device;
    return l;
}

// The firmware counter `name` (GetCounters) as `device`'s session sees it.
inline uint64_t firmwareCounter(hal::IDevice& device, const std::string& name) {
    auto counters = shim::queryFirmwareCounters(device);
    REQUIRE(counters.has_value());
    INFO(name);
    REQUIRE(counters->count(name) == 1);
    return counters->at(name);
}

// Waits (at most 20 s) until the firmware counter `name` satisfies `ok`; its last value.
template <typename Pred>
uint64_t waitFirmwareCounter(hal::IDevice& device, const std::string& name, Pred ok) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    uint64_t v = firmwareCounter(device, name);
    while (!ok(v) && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        v = firmwareCounter(device, name);
    }
    return v;
}

}  // namespace npu::shim::test
