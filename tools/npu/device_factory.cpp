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
    // Checked here for every transport, so a bad file is named before any daemon starts.
    const fw::host::FirmwareHostConfig fwConfig = NPU_TRY(firmwareConfig(choice.hwConfigPath));
    if (choice.transport == "loopback") {
        auto loop = fw::host::startLoopbackFirmware(fwConfig);
        if (!loop) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "cannot start the in-process firmware: " + loop.error().message);
        }
        opened.firmware = std::move(loop->firmware);
        opened.device = NPU_TRY(shim::createNpuDevice(std::move(loop->hostEnd), shimOptions));
        return opened;
    }
    if (choice.transport == "unix") {
        shim::DaemonOptions options;
        options.socketPath = choice.socketPath;
        options.hwConfigPath = choice.hwConfigPath;
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
        opened.device = NPU_TRY(shim::createNpuDevice(std::move(*transport), shimOptions));
        return opened;
    }
    return invalidArgument("--transport: unknown transport '" + choice.transport +
                           "' (expected loopback, unix, usb or qemu)");
}

}  // namespace npu::tools
