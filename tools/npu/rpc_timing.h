#pragma once
// Timing pieces shared by the RPC benchmarks (npu bench rpc over every transport).
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "npu/protocol/transport.h"

namespace npu::tools {

// Median round trip in microseconds of `iterations` calls of `once` (after a warm-up); -1 when
// a call fails.
double medianUs(int iterations, const std::function<bool()>& once);

// Median time in microseconds of one quantized ADD of two 1x64 tensors executed through the shim
// over `transport`; -1 when the device cannot be opened or the model does not run, and then
// `why` (if given) says which step failed and how.
// `perExecution` (if given) receives, per execution, how much each firmware counter
// (GetCounters) grew over all of them.
double execUs(std::unique_ptr<proto::Transport> transport, int iterations, std::string* why = nullptr,
              std::map<std::string, double>* perExecution = nullptr);

}  // namespace npu::tools
