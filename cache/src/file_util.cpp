#include "file_util.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace npu::cache::detail {

std::unexpected<CacheError> ioError(std::string_view call, std::string_view path, int err) {
    return cacheError(CacheError::Kind::kIo, sysError(call, path, err));
}

Result<FileLock> FileLock::acquire(const std::string& path, std::chrono::milliseconds timeout) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return ioError("open", path, errno);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    auto pause = std::chrono::microseconds(200);
    for (;;) {
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return FileLock(std::move(fd));
        const int err = errno;
        if (err == EINTR) continue;
        if (err != EWOULDBLOCK) return ioError("flock", path, err);
        if (std::chrono::steady_clock::now() >= deadline) {
            return cacheError(CacheError::Kind::kTimeout,
                              "flock(" + path + "): still held by another process or thread after " +
                                  std::to_string(timeout.count()) + " ms");
        }
        std::this_thread::sleep_for(pause);
        pause = std::min(pause * 2, std::chrono::microseconds(20000));
    }
}

std::string dirName(const std::string& path) {
    const auto slash = path.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

Result<void> fsyncDirectory(const std::string& dir) {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return ioError("open", dir, errno);
    if (::fsync(fd.get()) != 0) return ioError("fsync", dir, errno);
    return {};
}

Result<void> pwriteAll(int fd, std::span<const uint8_t> data, uint64_t offset, const std::string& what) {
    size_t done = 0;
    while (done < data.size()) {
        const ssize_t n =
            ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return ioError("pwrite", what, errno);
        }
        if (n == 0) return ioError("pwrite", what, EIO);
        done += static_cast<size_t>(n);
    }
    return {};
}

Result<std::vector<uint8_t>> preadAll(int fd, size_t maxBytes, const std::string& what) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) return ioError("fstat", what, errno);
    if (!S_ISREG(st.st_mode)) {
        return cacheError(CacheError::Kind::kInvalidArgument, what + ": not a regular file");
    }
    if (static_cast<uint64_t>(st.st_size) > maxBytes) {
        return cacheError(CacheError::Kind::kTooLarge, what + ": " + std::to_string(st.st_size) +
                                                           " bytes exceeds the limit of " +
                                                           std::to_string(maxBytes));
    }
    std::vector<uint8_t> out(static_cast<size_t>(st.st_size));
    size_t done = 0;
    for (;;) {
        if (done == out.size()) {
            // The file may have grown since fstat: probe for more, within the limit.
            if (out.size() >= maxBytes) {
                uint8_t probe;
                ssize_t n;
                do n = ::pread(fd, &probe, 1, static_cast<off_t>(done));
                while (n < 0 && errno == EINTR);
                if (n < 0) return ioError("pread", what, errno);
                if (n == 0) break;
                return cacheError(CacheError::Kind::kTooLarge,
                                  what + ": grew beyond the limit of " + std::to_string(maxBytes) + " bytes");
            }
            out.resize(std::min(maxBytes, std::max<size_t>(out.size() * 2, 4096)));
        }
        const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return ioError("pread", what, errno);
        }
        if (n == 0) break;
        done += static_cast<size_t>(n);
    }
    out.resize(done);
    return out;
}

Result<void> writeFileAtomically(const std::string& path, std::span<const uint8_t> data) {
    const std::string tmp = path + ".tmp";
    {
        UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd) return ioError("open", tmp, errno);
        NPU_TRY(pwriteAll(fd.get(), data, 0, tmp));
        if (::fsync(fd.get()) != 0) return ioError("fsync", tmp, errno);
        if (::close(fd.release()) != 0) return ioError("close", tmp, errno);
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) return ioError("rename", tmp + " -> " + path, errno);
    return fsyncDirectory(dirName(path));
}

Result<std::optional<std::vector<uint8_t>>> readFileIfExists(const std::string& path, size_t maxBytes) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
        if (errno == ENOENT) return std::optional<std::vector<uint8_t>>{};
        return ioError("open", path, errno);
    }
    auto bytes = NPU_TRY(preadAll(fd.get(), maxBytes, path));
    return std::optional<std::vector<uint8_t>>(std::move(bytes));
}

Result<bool> removeFile(const std::string& path) {
    if (::unlink(path.c_str()) == 0) return true;
    if (errno == ENOENT) return false;
    return ioError("unlink", path, errno);
}

uint64_t realtimeNs() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace npu::cache::detail
