#include <unistd.h>

#include "npu/protocol/transport.h"

namespace npu::proto {

void UniqueFd::reset(int fd) {
    if (fd_ >= 0 && fd_ != fd) ::close(fd_);
    fd_ = fd;
}

const char* errorKindName(Error::Kind kind) {
    switch (kind) {
        case Error::Kind::kTimeout:
            return "timeout";
        case Error::Kind::kDisconnected:
            return "disconnected";
        case Error::Kind::kProtocol:
            return "protocol error";
        case Error::Kind::kRemote:
            return "remote error";
        case Error::Kind::kIo:
            return "I/O error";
        case Error::Kind::kInvalidArgument:
            return "invalid argument";
        case Error::Kind::kResourceExhausted:
            return "resource exhausted";
    }
    return "unknown error";
}

}  // namespace npu::proto
