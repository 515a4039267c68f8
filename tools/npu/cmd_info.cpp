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

namespace {

// What `npu info` shows: the device and the answers of its queries.
struct InfoFacts {
    const DeviceChoice& choice;
    hal::IDevice& device;
    const shim::NpuInfo& info;
    const hal::Capabilities& caps;
    const hal::NumberOfCacheFiles& cacheFiles;
    const char* dataflow;
};

nlohmann::json infoJson(const InfoFacts& f, const nlohmann::json& usbDevices) {
    nlohmann::json j;
    j["driver"] = {
        {"version", f.device.getVersionString()}, {"type", "ACCELERATOR"}, {"transport", f.choice.transport}};
    if (f.choice.transport == "usb") j["usb_devices"] = usbDevices;
    j["firmware"] = {{"version", f.info.firmwareVersion},
                     {"protocol", fmt::format("{}.{}", f.info.protocolMajor, f.info.protocolMinor)}};
    j["hardware"] = {{"id", f.info.hwId},
                     {"version", f.info.hwVersion},
                     {"clock_hz", f.info.clockHz},
                     {"array_rows", f.info.arrayRows},
                     {"array_cols", f.info.arrayCols},
                     {"dataflow", f.dataflow},
                     {"scratchpad_bytes", f.info.scratchpadBytes},
                     {"accumulator_bytes", f.info.accumulatorBytes},
                     {"vector_lanes", f.info.vectorLanes},
                     {"dram_bytes_per_cycle", f.info.dramBytesPerCycle},
                     {"dram_latency_cycles", f.info.dramLatencyCycles},
                     {"device_memory_bytes", f.info.deviceMemoryBytes},
                     {"host_window_bytes", f.info.hostWindowBytes}};
    nlohmann::json perf = nlohmann::json::array();
    for (const auto& p : f.caps.operandPerformance) {
        perf.push_back({{"type", hal::toString(p.type)},
                        {"exec_time", p.info.execTime},
                        {"power_usage", p.info.powerUsage}});
    }
    j["capabilities"] = {
        {"operand_performance", perf},
        {"relaxed_scalar", {{"exec_time", f.caps.relaxedFloat32toFloat16PerformanceScalar.execTime}}},
        {"relaxed_tensor", {{"exec_time", f.caps.relaxedFloat32toFloat16PerformanceTensor.execTime}}},
        {"if_exec_time", f.caps.ifPerformance.execTime},
        {"while_exec_time", f.caps.whilePerformance.execTime},
        {"model_cache_files", f.cacheFiles.numModelCache},
        {"data_cache_files", f.cacheFiles.numDataCache}};
    if (auto counters = shim::queryNpuCounters(f.device)) j["reliability"] = reliabilityJson(*counters);
    const hal::DmaHeapStatus heap = hal::dmaHeapStatus();
    j["memory"] = {
        {"zero_copy_min_bytes", 64 * 1024}, {"dma_heap", heap.available}, {"dma_heap_note", heap.reason}};
    return j;
}

void printInfo(const InfoFacts& f) {
    fmt::print("driver     {} (ACCELERATOR), transport {}\n", f.device.getVersionString(),
               f.choice.transport);
    fmt::print("firmware   {} (protocol {}.{})\n", f.info.firmwareVersion, f.info.protocolMajor,
               f.info.protocolMinor);
    fmt::print("hardware   id 0x{:08x} version 0x{:08x}\n", f.info.hwId, f.info.hwVersion);
    fmt::print("  clock              {:.0f} MHz\n", static_cast<double>(f.info.clockHz) / 1e6);
    fmt::print("  MAC array          {} x {} int8, {}\n", f.info.arrayRows, f.info.arrayCols, f.dataflow);
    fmt::print("  scratchpad         {} KiB, accumulators {} KiB\n", f.info.scratchpadBytes / 1024,
               f.info.accumulatorBytes / 1024);
    fmt::print("  vector unit        {} lanes\n", f.info.vectorLanes);
    fmt::print("  DRAM               {} B/cycle, {} cycles latency, {} MiB ({} MiB host window)\n",
               f.info.dramBytesPerCycle, f.info.dramLatencyCycles, f.info.deviceMemoryBytes >> 20,
               f.info.hostWindowBytes >> 20);
    const hal::DmaHeapStatus heap = hal::dmaHeapStatus();
    fmt::print(
        "memory     memfd and mappable-file pools of 64 KiB or more mapped by the firmware (zero copy)\n");
    fmt::print("  dma-buf            {}\n",
               heap.available ? "available: " + heap.reason : "unavailable: " + heap.reason);
    fmt::print("capabilities (exec time relative to the CPU reference; lower is faster)\n");
    auto perf = [](float v) {
        return v >= std::numeric_limits<float>::max() ? std::string("unsupported") : fmt::format("{:.2f}", v);
    };
    for (const auto& p : f.caps.operandPerformance) {
        fmt::print("  {:<32} {:>11}\n", hal::toString(p.type), perf(p.info.execTime));
    }
    fmt::print("  {:<32} {:>11}\n", "relaxed float32 (tensor)",
               perf(f.caps.relaxedFloat32toFloat16PerformanceTensor.execTime));
    fmt::print("  {:<32} {:>11}\n", "IF / WHILE", perf(f.caps.ifPerformance.execTime));
    fmt::print("  compilation cache  {} model file(s), {} data file(s)\n", f.cacheFiles.numModelCache,
               f.cacheFiles.numDataCache);
    if (auto counters = shim::queryNpuCounters(f.device)) printReliability(*counters);
}

}  // namespace

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
    const InfoFacts facts{choice, device,      *info,
                          *caps,  *cacheFiles, info->dataflow < 3 ? kDataflow[info->dataflow] : "unknown"};
    if (json) {
        fmt::print("{}\n", infoJson(facts, usbDevices).dump(2));
    } else {
        printInfo(facts);
    }
    return 0;
}

}  // namespace npu::tools
