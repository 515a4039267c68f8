#pragma once
// cache/ may not depend on hal/, so it has its own error type. The shim maps it to the HAL:
// kInvalidArgument and kBadAccessMode on caller-given fds -> INVALID_ARGUMENT or GENERAL_FAILURE
// as the HAL requires for the call; everything else -> GENERAL_FAILURE.

#include <expected>
#include <string>
#include <utility>

namespace npu::cache {

struct CacheError {
    enum class Kind {
        kIo,               // a syscall failed (message names the call, the path and strerror)
        kInvalidArgument,  // a caller-given value is out of range (message names it and the limit)
        kBadAccessMode,    // a caller-given fd was opened without the access the call needs
        kBadSecret,        // the installation secret file has the wrong size, type, owner or mode
        kCorrupt,          // a file's content failed a format or integrity check
        kTooLarge,         // a file or buffer exceeds the configured limit
        kTimeout,          // a bounded wait (file lock) expired
    };
    Kind kind = Kind::kIo;
    std::string message;
};

template <typename T>
using Result = std::expected<T, CacheError>;

inline std::unexpected<CacheError> cacheError(CacheError::Kind kind, std::string message) {
    return std::unexpected(CacheError{kind, std::move(message)});
}

const char* kindName(CacheError::Kind kind);

}  // namespace npu::cache

// Propagates the error of a cache Result-returning expression; evaluates to its value otherwise.
#define NPU_CACHE_TRY(expr)                                                         \
    ({                                                                              \
        auto&& npuCacheTry_ = (expr);                                               \
        if (!npuCacheTry_) return std::unexpected(std::move(npuCacheTry_).error()); \
        std::move(npuCacheTry_).value();                                            \
    })
