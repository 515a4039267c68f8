#include "npu/cache/fd_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "file_util.h"

namespace npu::cache {

std::string describeFd(int fd) {
    std::string d = "fd " + std::to_string(fd);
    char target[4096];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0) {
        d += " (";
        d.append(target, static_cast<size_t>(n));
        d += ')';
    }
    return d;
}

Result<void> checkFdAccess(int fd, FdAccess access) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) return detail::ioError("fcntl(F_GETFL)", describeFd(fd), errno);
    const int mode = flags & O_ACCMODE;
    if (access == FdAccess::kRead && mode == O_WRONLY) {
        return cacheError(CacheError::Kind::kBadAccessMode,
                          describeFd(fd) + " is write-only; a cache file to load from must be readable");
    }
    if (access == FdAccess::kWrite && mode == O_RDONLY) {
        return cacheError(CacheError::Kind::kBadAccessMode,
                          describeFd(fd) + " is read-only; a cache file to save to must be writable");
    }
    return {};
}

Result<std::vector<uint8_t>> readWholeFd(int fd, size_t maxBytes) {
    NPU_TRY(checkFdAccess(fd, FdAccess::kRead));
    return detail::preadAll(fd, maxBytes, describeFd(fd));
}

Result<void> writeWholeFd(int fd, std::span<const uint8_t> data) {
    NPU_TRY(checkFdAccess(fd, FdAccess::kWrite));
    // Truncating first also makes O_APPEND harmless: appends then land at 0, 1, 2 ...
    while (::ftruncate(fd, 0) != 0) {
        if (errno != EINTR) return detail::ioError("ftruncate", describeFd(fd), errno);
    }
    NPU_TRY(detail::pwriteAll(fd, data, 0, describeFd(fd)));
    if (::fsync(fd) != 0) return detail::ioError("fsync", describeFd(fd), errno);
    return {};
}

Result<std::vector<std::vector<uint8_t>>> readWholeFds(std::span<const int> fds, size_t maxBytesEach) {
    std::vector<std::vector<uint8_t>> out;
    out.reserve(fds.size());
    for (int fd : fds) out.push_back(NPU_TRY(readWholeFd(fd, maxBytesEach)));
    return out;
}

Result<void> writeWholeFds(std::span<const int> fds, std::span<const ByteSpan> buffers) {
    if (fds.size() != buffers.size()) {
        return cacheError(CacheError::Kind::kInvalidArgument,
                          std::to_string(fds.size()) + " cache file descriptors for " +
                              std::to_string(buffers.size()) + " buffers; the counts must match");
    }
    // Check every fd before writing any, so a bad fd does not leave the set half-written.
    for (int fd : fds) NPU_TRY(checkFdAccess(fd, FdAccess::kWrite));
    for (size_t i = 0; i < fds.size(); ++i) NPU_TRY(writeWholeFd(fds[i], buffers[i]));
    return {};
}

}  // namespace npu::cache
