#pragma once
// npu info --transport usb: the NPU devices found on the USB, their descriptors and the firmware
// version each reports at a handshake (cmd_info_usb.cpp).

#include <nlohmann/json.hpp>
#include <string>

namespace npu::tools {

// One entry per device matching `usbDevice` (VID:PID[:SERIAL], empty = the NPU's ids).
nlohmann::json usbDeviceList(const std::string& usbDevice);
void printUsbDeviceList(const nlohmann::json& devices);

}  // namespace npu::tools
