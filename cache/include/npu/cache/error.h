#pragma once
// cache/ may not depend on hal/: its errors are the host libraries' base::Error (base/), named
// CacheError here. The shim maps them to the HAL: kInvalidArgument and kBadAccessMode on
// caller-given fds -> INVALID_ARGUMENT or GENERAL_FAILURE as the HAL requires for the call;
// everything else -> GENERAL_FAILURE.

#include <expected>
#include <string>
#include <utility>

#include "npu/base/error.h"
#include "npu/base/try.h"

namespace npu::cache {

using CacheError = base::Error;

template <typename T>
using Result = base::Result<T>;

inline std::unexpected<CacheError> cacheError(CacheError::Kind kind, std::string message) {
    return base::fail(kind, std::move(message));
}

}  // namespace npu::cache
