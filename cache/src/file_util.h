#pragma once
// POSIX helpers shared by the cache sources (internal). Every error names the call, the path and
// strerror(errno).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "npu/base/unique_fd.h"
#include "npu/cache/error.h"

namespace npu::cache::detail {

using base::sysError;  // "open(/a/b): No such file or directory"
std::unexpected<CacheError> ioError(std::string_view call, std::string_view path, int err);

using base::UniqueFd;

// An exclusive flock() on a lock file (created 0600, never deleted: deleting lock files races).
// Each acquisition opens its own file description, so threads of one process exclude each other
// as processes do. The wait is bounded: kTimeout after `timeout`.
class FileLock {
public:
    static Result<FileLock> acquire(const std::string& path, std::chrono::milliseconds timeout);
    FileLock(FileLock&&) = default;
    FileLock& operator=(FileLock&&) = default;

private:
    explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;  // closing it releases the lock
};

std::string dirName(const std::string& path);
Result<void> fsyncDirectory(const std::string& dir);

// Full-length pwrite / pread loops (EINTR and short transfers handled).
Result<void> pwriteAll(int fd, std::span<const uint8_t> data, uint64_t offset, const std::string& what);
// Reads from offset 0 until EOF; kTooLarge beyond maxBytes.
Result<std::vector<uint8_t>> preadAll(int fd, size_t maxBytes, const std::string& what);

// Replaces `path` atomically: writes <path>.tmp (the caller holds the lock that makes that name
// private), fsyncs it, renames it over `path`, fsyncs the directory. A crash at any point leaves
// either the old or the new file at `path`.
Result<void> writeFileAtomically(const std::string& path, std::span<const uint8_t> data);

// The content of `path`, or nullopt if it does not exist.
Result<std::optional<std::vector<uint8_t>>> readFileIfExists(const std::string& path, size_t maxBytes);

// unlink that treats ENOENT as success; returns whether a file was removed.
Result<bool> removeFile(const std::string& path);

uint64_t realtimeNs();

}  // namespace npu::cache::detail
