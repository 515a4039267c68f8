#pragma once
#include <string>
#include <vector>

#include "device_factory.h"

namespace npu::tools {

// Each command returns the process exit code: 0 ok, 1 failure or mismatch, 2 bad usage or
// input, 3 the device does not support the model.
int cmdInfo(const DeviceChoice& choice, bool json);
struct ProfileFiles;
// files: the per-operation CSV and trace to write (cmd_model.h), none when empty.
int cmdRun(const DeviceChoice& choice, const std::string& file, const std::string& name, bool json,
           const std::string& dotFile, const ProfileFiles& files);
int cmdDemo(const DeviceChoice& choice, bool json);
int cmdBenchRpc(bool json, int iterations, const std::string& hwConfigPath);
// npu bench rpc --transport usb (cmd_bench_usb.cpp): the RPC figures over USB next to a raw
// libusb bulk echo of the same device.
int cmdBenchRpcUsb(bool json, int iterations, const std::string& usbDevice);

// npu cache list|verify|clear [DIR]: the token map in the state directory and, with DIR, the
// driver-managed compilation cache there.
int cmdCache(const std::string& action, const std::string& dir, const std::string& stateDir, bool json);
int cmdBenchCache(bool json, int iterations, const std::string& hwConfigPath);

}  // namespace npu::tools
