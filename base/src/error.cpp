#include "npu/base/error.h"

#include <cstring>

namespace npu::base {

const char* errorKindName(Error::Kind kind) {
    switch (kind) {
        case Error::Kind::kIo:
            return "I/O error";
        case Error::Kind::kInvalidArgument:
            return "invalid argument";
        case Error::Kind::kTimeout:
            return "timeout";
        case Error::Kind::kDisconnected:
            return "disconnected";
        case Error::Kind::kProtocol:
            return "protocol error";
        case Error::Kind::kRemote:
            return "remote error";
        case Error::Kind::kResourceExhausted:
            return "resource exhausted";
        case Error::Kind::kBadAccessMode:
            return "bad access mode";
        case Error::Kind::kBadSecret:
            return "bad secret";
        case Error::Kind::kCorrupt:
            return "corrupt";
        case Error::Kind::kTooLarge:
            return "too large";
    }
    return "unknown error";
}

std::string sysError(std::string_view call, std::string_view path, int err) {
    std::string s(call);
    s += '(';
    s += path;
    s += "): ";
    s += std::strerror(err);
    return s;
}

}  // namespace npu::base
