#include "npu/hal/sync_fence.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace npu::hal {
namespace {

using Clock = std::chrono::steady_clock;

// An epoll instance closed when it goes out of scope.
class Epoll {
public:
    Epoll() : fd_(epoll_create1(EPOLL_CLOEXEC)) {}
    ~Epoll() {
        if (fd_ >= 0) close(fd_);
    }
    Epoll(const Epoll&) = delete;
    Epoll& operator=(const Epoll&) = delete;
    int fd() const { return fd_; }
    // 0, or the errno of EPOLL_CTL_ADD (EBADF: closed fd; EPERM: a file that cannot be polled).
    int add(int fd, uint64_t key) const {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.u64 = key;
        return epoll_ctl(fd_, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : errno;
    }
    void remove(int fd) const { epoll_ctl(fd_, EPOLL_CTL_DEL, fd, nullptr); }

private:
    int fd_;
};

std::string describeFence(size_t index, int fd) {
    return "waitFor fence " + std::to_string(index) + " (fd " + std::to_string(fd) + ")";
}

Status addFences(const Epoll& epoll, const std::vector<int>& fences) {
    if (epoll.fd() < 0)
        return generalFailure(std::string("sync fences: epoll_create1: ") + std::strerror(errno));
    for (size_t i = 0; i < fences.size(); ++i) {
        const int fd = fences[i];
        if (fd < 0) return invalidArgument(describeFence(i, fd) + " is not a file descriptor");
        const int err = epoll.add(fd, i);
        if (err == EEXIST) {
            return invalidArgument(describeFence(i, fd) + " is given twice");
        }
        if (err == EBADF) return invalidArgument(describeFence(i, fd) + " is closed");
        if (err == EPERM) {
            return invalidArgument(describeFence(i, fd) +
                                   " cannot be polled (a regular file or directory is not a sync fence)");
        }
        if (err != 0) return invalidArgument(describeFence(i, fd) + ": " + std::strerror(err));
    }
    return {};
}

}  // namespace

Result<int> createSyncFence() {
    const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) {
        return fail(ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
                    std::string("cannot create a sync fence (eventfd): ") + std::strerror(errno));
    }
    return fd;
}

Status signalSyncFence(int fence) {
    const uint64_t one = 1;
    if (write(fence, &one, sizeof one) != static_cast<ssize_t>(sizeof one) && errno != EAGAIN) {
        return generalFailure("cannot signal sync fence fd " + std::to_string(fence) + ": " +
                              std::strerror(errno));
    }
    return {};
}

Status validateSyncFences(const std::vector<int>& fences) {
    Epoll epoll;
    return addFences(epoll, fences);
}

Status waitForSyncFences(const std::vector<int>& fences, Clock::time_point until, ErrorStatus onTimeout,
                         int cancelFd) {
    if (fences.empty()) return {};
    Epoll epoll;
    NPU_TRY(addFences(epoll, fences));
    constexpr uint64_t kCancelKey = ~uint64_t{0};
    if (cancelFd >= 0 && epoll.add(cancelFd, kCancelKey) != 0) {
        return generalFailure("sync fences: cannot watch the cancellation fd");
    }
    std::vector<bool> signalled(fences.size(), false);
    size_t left = fences.size();
    while (left > 0) {
        // Poll at least once, so fences signalled already count even when the time is up.
        const auto wait = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
        epoll_event events[16];
        const int n =
            epoll_wait(epoll.fd(), events, 16, static_cast<int>(std::clamp<int64_t>(wait, 0, 1000)));
        if (n < 0 && errno != EINTR) {
            return generalFailure(std::string("sync fences: epoll_wait: ") + std::strerror(errno));
        }
        for (int e = 0; e < n; ++e) {
            const uint64_t key = events[e].data.u64;
            if (key == kCancelKey) return generalFailure("the wait for sync fences was cancelled");
            if ((events[e].events & (EPOLLERR | EPOLLHUP)) != 0 && (events[e].events & EPOLLIN) == 0) {
                return generalFailure(describeFence(key, fences[key]) + " reported an error or hung up");
            }
            if (!signalled[key]) {
                signalled[key] = true;
                --left;
                epoll.remove(fences[key]);
            }
        }
        if (left > 0 && Clock::now() >= until) {
            size_t first = 0;
            while (signalled[first]) ++first;
            return fail(onTimeout, describeFence(first, fences[first]) + " was not signalled in time (" +
                                       std::to_string(left) + " of " + std::to_string(fences.size()) +
                                       " fences still pending)");
        }
    }
    return {};
}

Result<bool> waitForSyncFence(int fence, std::chrono::milliseconds timeout) {
    // One fd: poll() without an epoll instance (a client waits for each execution this way).
    pollfd p{fence, POLLIN, 0};
    const auto until = Clock::now() + timeout;
    while (true) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now()).count();
        const int n = poll(&p, 1, static_cast<int>(std::clamp<int64_t>(left, 0, 1000)));
        if (n < 0 && errno != EINTR)
            return generalFailure(std::string("sync fence: poll: ") + std::strerror(errno));
        if (n > 0) {
            if ((p.revents & POLLNVAL) != 0)
                return invalidArgument("sync fence fd " + std::to_string(fence) + " is closed");
            if ((p.revents & POLLIN) != 0) return true;
            return generalFailure("sync fence fd " + std::to_string(fence) + " reported an error or hung up");
        }
        if (Clock::now() >= until) return false;
    }
}

}  // namespace npu::hal
