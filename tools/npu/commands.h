#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "device_factory.h"

namespace npu::tools {

// Each command returns the process exit code: 0 ok, 1 failure or mismatch, 2 bad usage or
// input, 3 the device does not support the model.

// Prints "npu WHAT: MESSAGE" to stderr and returns 1.
inline int commandFailed(const std::string& what, const std::string& message) {
    std::fprintf(stderr, "npu %s: %s\n", what.c_str(), message.c_str());
    return 1;
}

int cmdInfo(const DeviceChoice& choice, bool json);
struct RunOptions {
    bool json = false;
    std::string dotFile;     // --dot: the model as a Graphviz graph
    std::string outputFile;  // --output FILE.npy: the outputs as NumPy arrays
    std::string csvFile;     // --csv: the per-operation profile (cmd_model.h)
    std::string traceFile;   // --trace: a Chrome/Perfetto trace of the run
    bool exact = false;      // --exact: outputs must equal the expected bytes (no CTS tolerance)
};
int cmdRun(const DeviceChoice& choice, const std::string& file, const std::string& name,
           const RunOptions& options);
// npu list FILE: the vectors of a JSON-lines file (name, operations, expect_failure).
int cmdList(const std::string& file, const std::vector<std::string>& filters, bool json);
int cmdDemo(const DeviceChoice& choice, bool json);
int cmdBenchRpc(bool json, int iterations, const std::string& hwConfigPath);
// npu bench exec: per-execution overhead of sync, async, fenced and burst (cmd_bench_exec.cpp).
int cmdBenchExec(bool json, int iterations, const std::string& hwConfigPath);
// npu bench rpc --transport usb (cmd_bench_usb.cpp): the RPC figures over USB next to a raw
// libusb bulk echo of the same device.
int cmdBenchRpcUsb(bool json, int iterations, const std::string& usbDevice);

// npu cache list|verify|clear [DIR]: the token map in the state directory and, with DIR, the
// driver-managed compilation cache there.
int cmdCache(const std::string& action, const std::string& dir, const std::string& stateDir, bool json);
int cmdBenchCache(bool json, int iterations, const std::string& hwConfigPath);

}  // namespace npu::tools
