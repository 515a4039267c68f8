#pragma once
// Opens the device a command asked for: the NPU over a transport, or the CPU reference.
// tools/ is the composition root: only here are the in-process firmware and the shim wired.

#include <memory>
#include <string>

#include "npu/framework/partition.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/device.h"

namespace npu::tools {

struct DeviceChoice {
    std::string device = "npu";          // npu | reference
    std::string transport = "loopback";  // loopback | unix | usb | qemu
    std::string socketPath;              // unix: empty = the default path
    std::string usbDevice;               // usb: VID:PID[:SERIAL] (empty = the NPU's default ids)
    std::string cacheDir;                // driver-managed compilation cache (empty = none)
    std::string cacheStateDir;           // cache key secret and token map (empty = XDG state dir)
    bool autotune = true;                // npu: let the firmware autotune tilings at prepare
    std::string hwConfigPath;            // npu: the simulated NPU's config (docs/hw-config.md); on unix
                                         // it is given to a daemon the shim starts, on qemu to the NPU bridge
    // npu: call timeouts per class in seconds (0 = the shim's default; docs/reliability.md).
    double callTimeoutSeconds = 0;
    double prepareTimeoutSeconds = 0;
    double executeTimeoutSeconds = 0;
    // npu: let the firmware host take injected faults (npu stress; docs/reliability.md).
    bool faultInjection = false;
    // npu: the watchdog's idle ping period in seconds (0 = the shim's default).
    double watchdogSeconds = 0;
};

struct OpenedDevice {
    std::unique_ptr<fw::host::FirmwareHost> firmware;  // loopback only; declared first, destroyed last
    std::shared_ptr<hal::IDevice> device;
};

Result<OpenedDevice> openDevice(const DeviceChoice& choice);

// `device` for framework::planPartitions under `name`. An NPU device of this shim answers with the
// firmware's reason for each operation it does not claim (shim::querySupportedOperations), which
// --explain prints; another device answers getSupportedOperations.
framework::PartitionDevice partitionDevice(const std::string& name, hal::IDevice* device);

// The in-process firmware's config with the hardware config file applied (none: the defaults);
// INVALID_ARGUMENT naming the file and the field when the file is bad.
Result<fw::host::FirmwareHostConfig> firmwareConfig(const std::string& hwConfigPath);

}  // namespace npu::tools
