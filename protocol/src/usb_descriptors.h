#pragma once
// Descriptor helpers of the USB transport (usb_devices.cpp): find the NPU's vendor interface
// and its endpoints, match a device against a VID:PID[:SERIAL].

#include <libusb.h>

#include <string>

#include "npu/protocol/usb_transport.h"

namespace npu::proto {

// Fills `out` from the active configuration; returns why not (empty on success).
std::string findNpuEndpoints(libusb_device* device, UsbEndpoints* out);

// Vendor and product match, the serial too when `id` names one (opens the device to read it).
bool matchesId(libusb_device* device, const UsbDeviceId& id);

}  // namespace npu::proto
