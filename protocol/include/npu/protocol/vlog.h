#pragma once
// The host libraries' logging lives in base/ (npu/base/log.h); these are its old names in
// protocol/, kept for the callers in shim/ and tools/.

#include "npu/base/log.h"

namespace npu::proto {

using base::logError;
using base::vlog;
using base::vlogEnabled;

}  // namespace npu::proto
