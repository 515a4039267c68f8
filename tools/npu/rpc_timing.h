#pragma once
// Timing pieces shared by the RPC benchmarks (npu bench rpc over every transport).
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/protocol/transport.h"

namespace npu::tools {

// Median round trip in microseconds of `iterations` calls of `once` (after a warm-up); -1 when
// a call fails.
double medianUs(int iterations, const std::function<bool()>& once);

// The benchmarks' one-operation model: a quantized ADD of two 1x64 tensors, with its inputs.
framework::TestCase oneAddCase();

// The floor: median round trip of 32-byte messages echoed over a connected AF_UNIX stream
// socket by a second thread.
double bareSocketUs(int iterations);

// A firmware host serving one Unix-socket connection from a thread of this process.
struct UnixFirmware {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::unique_ptr<proto::Transport> client;
};
std::optional<UnixFirmware> startUnixFirmware(const std::string& path,
                                              const fw::host::FirmwareHostConfig& config);

// Median time in microseconds of one quantized ADD of two 1x64 tensors executed through the shim
// over `transport`; -1 when the device cannot be opened or the model does not run, and then
// `why` (if given) says which step failed and how.
// `perExecution` (if given) receives, per execution, how much each firmware counter
// (GetCounters) grew over all of them.
double execUs(std::unique_ptr<proto::Transport> transport, int iterations, std::string* why = nullptr,
              std::map<std::string, double>* perExecution = nullptr);

}  // namespace npu::tools
