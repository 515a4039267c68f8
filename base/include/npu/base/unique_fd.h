#pragma once
// A move-only owning file descriptor (closed on destruction), and what kind of file an fd or path
// is, for the errors that refuse one.

#include <sys/types.h>

namespace npu::base {

// "a regular file", "a directory", "a pipe or fifo", "a socket", ... for st_mode `mode`.
const char* fileKind(mode_t mode);

class UniqueFd {
public:
    UniqueFd() = default;
    explicit UniqueFd(int fd) : fd_(fd) {}
    UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    ~UniqueFd() { reset(); }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    explicit operator bool() const { return valid(); }
    int release() {
        int fd = fd_;
        fd_ = -1;
        return fd;
    }
    // Closes the descriptor held (unless it is `fd`) and takes `fd`.
    void reset(int fd = -1);

private:
    int fd_ = -1;
};

}  // namespace npu::base
