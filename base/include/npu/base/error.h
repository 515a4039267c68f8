#pragma once
// The error of the host libraries below the HAL (protocol/, cache/): a kind and a message that
// names what failed and where. Errors cross module boundaries as values, never as exceptions.
// hal/ adds its own npu::Error (a HAL ErrorStatus + message + output shapes), which is what
// crosses the HAL; the shim maps this one onto it. The firmware keeps its freestanding FwStatus.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <utility>

#include "npu/base/try.h"

namespace npu::base {

struct Error {
    enum class Kind {
        kIo,                 // a syscall failed (the message names the call, the path, strerror)
        kInvalidArgument,    // a caller-given value is out of range (the message names it, the limit)
        kTimeout,            // a bounded wait expired
        kDisconnected,       // the peer is gone (EOF, shut down)
        kProtocol,           // the peer broke the wire protocol
        kRemote,             // the peer answered an error (remoteCode)
        kResourceExhausted,  // a fixed capacity is full
        kBadAccessMode,      // a caller-given fd was opened without the access the call needs
        kBadSecret,          // a secret file has the wrong size, type, owner or mode
        kCorrupt,            // a file's content failed a format or integrity check
        kTooLarge,           // a file or buffer exceeds the configured limit
    };
    Kind kind = Kind::kIo;
    std::string message;
    uint32_t remoteCode = 0;  // kRemote only: the peer's code (the firmware's HAL ErrorStatus)
};

// "timeout", "I/O error", ...
const char* errorKindName(Error::Kind kind);

template <typename T>
using Result = std::expected<T, Error>;

inline std::unexpected<Error> fail(Error::Kind kind, std::string message, uint32_t remoteCode = 0) {
    return std::unexpected(Error{kind, std::move(message), remoteCode});
}

// "open(/a/b): No such file or directory"
std::string sysError(std::string_view call, std::string_view path, int err);

}  // namespace npu::base
