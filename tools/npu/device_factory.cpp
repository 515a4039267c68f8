#include "device_factory.h"

#include <chrono>
#include <cmath>

#include "npu/protocol/qemu_transport.h"
#include "npu/protocol/usb_transport.h"
#include "npu/ref/reference_device.h"
#include "npu/shim/npu_device.h"

namespace npu::tools {

Result<fw::host::FirmwareHostConfig> firmwareConfig(const std::string& hwConfigPath) {
    fw::host::FirmwareHostConfig config;
    if (hwConfigPath.empty()) return config;
    auto hw = sim::loadHwConfig(hwConfigPath);
    if (!hw) return invalidArgument("--hw-config: " + hw.error());
    config.hw = *hw;
    return config;
}

Result<OpenedDevice> openDevice(const DeviceChoice& choice) {
    OpenedDevice opened;
    if (choice.device == "reference") {
        opened.device = std::make_shared<ref::ReferenceDevice>();
        return opened;
    }
    if (choice.device != "npu") {
        return invalidArgument("--device: unknown device '" + choice.device +
                               "' (expected npu or reference)");
    }
    shim::ShimOptions shimOptions;
    shimOptions.cacheDirectory = choice.cacheDir;
    shimOptions.cacheStateDirectory = choice.cacheStateDir;
    shimOptions.autotune = choice.autotune;
    auto applyTimeout = [](double seconds, std::chrono::milliseconds& into) {
        if (seconds > 0) into = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000.0)));
    };
    applyTimeout(choice.callTimeoutSeconds, shimOptions.callTimeout);
    applyTimeout(choice.prepareTimeoutSeconds, shimOptions.prepareTimeout);
    applyTimeout(choice.executeTimeoutSeconds, shimOptions.executeTimeout);
    applyTimeout(choice.watchdogSeconds, shimOptions.recovery.watchdogPeriod);
    // Checked here for every transport, so a bad file is named before any daemon starts.
    const fw::host::FirmwareHostConfig fwConfig = NPU_TRY(firmwareConfig(choice.hwConfigPath));
    if (choice.transport == "loopback") {
        // The shim restarts a lost in-process firmware with a new one from this factory.
        fw::host::FirmwareHostConfig config = fwConfig;
        config.faultInjection = choice.faultInjection;
        shim::TransportFactory factory = [config] { return fw::host::startLoopbackTransport(config); };
        opened.device = NPU_TRY(shim::createNpuDevice(std::move(factory), shimOptions));
        return opened;
    }
    if (choice.transport == "unix") {
        shim::DaemonOptions options;
        options.socketPath = choice.socketPath;
        options.hwConfigPath = choice.hwConfigPath;
        options.faultInjection = choice.faultInjection;
        options.shim = shimOptions;
        opened.device = NPU_TRY(shim::connectNpuDaemon(options));
        return opened;
    }
    if (choice.transport == "usb") {
        auto id = proto::parseUsbDeviceId(choice.usbDevice);
        if (!id) return invalidArgument("--usb-device: " + id.error().message);
        auto transport = proto::openUsb(*id);
        if (!transport) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "cannot open the NPU over USB: " + transport.error().message);
        }
        opened.device = NPU_TRY(shim::createNpuDevice(std::move(*transport), shimOptions));
        return opened;
    }
    if (choice.transport == "qemu") {
        proto::QemuOptions qemu;
        qemu.hwConfigPath = choice.hwConfigPath;  // the bridge's simulated NPU
        auto transport = proto::startQemu(qemu);
        if (!transport) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "cannot start the firmware under QEMU: " + transport.error().message);
        }
        // A lost QEMU is started again the same way.
        auto pending = std::make_shared<std::unique_ptr<proto::Transport>>(std::move(*transport));
        shim::TransportFactory factory = [qemu,
                                          pending]() -> proto::Result<std::unique_ptr<proto::Transport>> {
            if (*pending) return std::move(*pending);  // the one started above, once
            return proto::startQemu(qemu);
        };
        opened.device = NPU_TRY(shim::createNpuDevice(std::move(factory), shimOptions));
        return opened;
    }
    return invalidArgument("--transport: unknown transport '" + choice.transport +
                           "' (expected loopback, unix, usb or qemu)");
}

framework::PartitionDevice partitionDevice(const std::string& name, hal::IDevice* device) {
    framework::PartitionDevice d{name, device, {}};
    if (!shim::isNpuDevice(*device)) return d;
    d.claim = [device](const hal::Model& model) -> Result<framework::PartitionDevice::Claim> {
        shim::NpuSupport s = NPU_TRY(shim::querySupportedOperations(*device, model));
        return framework::PartitionDevice::Claim{std::move(s.supported), std::move(s.reasons)};
    };
    return d;
}

}  // namespace npu::tools
