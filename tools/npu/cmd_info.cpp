// npu info
#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "cmd_info_usb.h"
#include "commands.h"
#include "npu/hal/dma_heap.h"
#include "npu/shim/npu_device.h"
#include "stress_engine.h"

namespace npu::tools {

int cmdInfo(const DeviceChoice& choice, bool json) {
    // USB: first every NPU device on the bus, its descriptors and firmware (cmd_info_usb.cpp).
    const nlohmann::json usbDevices =
        choice.transport == "usb" ? usbDeviceList(choice.usbDevice) : nlohmann::json();
    if (choice.transport == "usb" && !json) printUsbDeviceList(usbDevices);
    DeviceChoice npuChoice = choice;
    npuChoice.device = "npu";
    auto opened = openDevice(npuChoice);
    if (!opened) {
        fmt::print(stderr, "npu info: {}: {}\n", hal::toString(opened.error().status),
                   opened.error().message);
        return opened.error().status == hal::ErrorStatus::INVALID_ARGUMENT
                   ? 2
                   : 1;  // 2: bad input (e.g. --hw-config)
    }
    hal::IDevice& device = *opened->device;
    auto info = shim::queryNpuInfo(device);
    auto caps = device.getCapabilities();
    auto cacheFiles = device.getNumberOfCacheFilesNeeded();
    if (!info || !caps || !cacheFiles) {
        const Error& e = !info ? info.error() : !caps ? caps.error() : cacheFiles.error();
        fmt::print(stderr, "npu info: {}: {}\n", hal::toString(e.status), e.message);
        return 1;
    }
    static const char* kDataflow[] = {"output-stationary", "weight-stationary", "input-stationary"};
    const char* dataflow = info->dataflow < 3 ? kDataflow[info->dataflow] : "unknown";
    if (json) {
        nlohmann::json j;
        j["driver"] = {
            {"version", device.getVersionString()}, {"type", "ACCELERATOR"}, {"transport", choice.transport}};
        if (choice.transport == "usb") j["usb_devices"] = usbDevices;
        j["firmware"] = {{"version", info->firmwareVersion},
                         {"protocol", fmt::format("{}.{}", info->protocolMajor, info->protocolMinor)}};
        j["hardware"] = {{"id", info->hwId},
                         {"version", info->hwVersion},
                         {"clock_hz", info->clockHz},
                         {"array_rows", info->arrayRows},
                         {"array_cols", info->arrayCols},
                         {"dataflow", dataflow},
                         {"scratchpad_bytes", info->scratchpadBytes},
                         {"accumulator_bytes", info->accumulatorBytes},
                         {"vector_lanes", info->vectorLanes},
                         {"dram_bytes_per_cycle", info->dramBytesPerCycle},
                         {"dram_latency_cycles", info->dramLatencyCycles},
                         {"device_memory_bytes", info->deviceMemoryBytes},
                         {"host_window_bytes", info->hostWindowBytes}};
        nlohmann::json perf = nlohmann::json::array();
        for (const auto& p : caps->operandPerformance) {
            perf.push_back({{"type", hal::toString(p.type)},
                            {"exec_time", p.info.execTime},
                            {"power_usage", p.info.powerUsage}});
        }
        j["capabilities"] = {
            {"operand_performance", perf},
            {"relaxed_scalar", {{"exec_time", caps->relaxedFloat32toFloat16PerformanceScalar.execTime}}},
            {"relaxed_tensor", {{"exec_time", caps->relaxedFloat32toFloat16PerformanceTensor.execTime}}},
            {"if_exec_time", caps->ifPerformance.execTime},
            {"while_exec_time", caps->whilePerformance.execTime},
            {"model_cache_files", cacheFiles->numModelCache},
            {"data_cache_files", cacheFiles->numDataCache}};
        if (auto counters = shim::queryNpuCounters(device)) j["reliability"] = reliabilityJson(*counters);
        const hal::DmaHeapStatus heap = hal::dmaHeapStatus();
        j["memory"] = {
            {"zero_copy_min_bytes", 64 * 1024}, {"dma_heap", heap.available}, {"dma_heap_note", heap.reason}};
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    fmt::print("driver     {} (ACCELERATOR), transport {}\n", device.getVersionString(), choice.transport);
    fmt::print("firmware   {} (protocol {}.{})\n", info->firmwareVersion, info->protocolMajor,
               info->protocolMinor);
    fmt::print("hardware   id 0x{:08x} version 0x{:08x}\n", info->hwId, info->hwVersion);
    fmt::print("  clock              {:.0f} MHz\n", static_cast<double>(info->clockHz) / 1e6);
    fmt::print("  MAC array          {} x {} int8, {}\n", info->arrayRows, info->arrayCols, dataflow);
    fmt::print("  scratchpad         {} KiB, accumulators {} KiB\n", info->scratchpadBytes / 1024,
               info->accumulatorBytes / 1024);
    fmt::print("  vector unit        {} lanes\n", info->vectorLanes);
    fmt::print("  DRAM               {} B/cycle, {} cycles latency, {} MiB ({} MiB host window)\n",
               info->dramBytesPerCycle, info->dramLatencyCycles, info->deviceMemoryBytes >> 20,
               info->hostWindowBytes >> 20);
    const hal::DmaHeapStatus heap = hal::dmaHeapStatus();
    fmt::print(
        "memory     memfd and mappable-file pools of 64 KiB or more mapped by the firmware (zero copy)\n");
    fmt::print("  dma-buf            {}\n",
               heap.available ? "available: " + heap.reason : "unavailable: " + heap.reason);
    fmt::print("capabilities (exec time relative to the CPU reference; lower is faster)\n");
    auto perf = [](float v) {
        return v >= std::numeric_limits<float>::max() ? std::string("unsupported") : fmt::format("{:.2f}", v);
    };
    for (const auto& p : caps->operandPerformance) {
        fmt::print("  {:<32} {:>11}\n", hal::toString(p.type), perf(p.info.execTime));
    }
    fmt::print("  {:<32} {:>11}\n", "relaxed float32 (tensor)",
               perf(caps->relaxedFloat32toFloat16PerformanceTensor.execTime));
    fmt::print("  {:<32} {:>11}\n", "IF / WHILE", perf(caps->ifPerformance.execTime));
    fmt::print("  compilation cache  {} model file(s), {} data file(s)\n", cacheFiles->numModelCache,
               cacheFiles->numDataCache);
    if (auto counters = shim::queryNpuCounters(device)) printReliability(*counters);
    return 0;
}

}  // namespace npu::tools
