// AF_UNIX stream transport: fds travel as SCM_RIGHTS, every descriptor is CLOEXEC, sends use
// MSG_NOSIGNAL (a dead peer is an error, never SIGPIPE), every wait has a timeout (SO_RCVTIMEO
// for reads, a poll() that also watches an eventfd for a full socket) and shutdown() wakes
// blocked threads.
//
// A reply channel per connection: an accepted connection's first (and only) bytes on the
// connected socket are kReplyPreamble with one end of a socketpair of its own; the server
// writes everything on that socketpair and the client reads it from there, so each socket
// carries one direction. On one socket each message read woke the sender too (the kernel wakes
// a socket's sleepers when its sent buffer is freed: the sender sleeping in its own read of the
// same socket woke for nothing), one wake-up and two context switches more per round trip
// (docs/benchmarks.md, npu bench exec). A peer that sends no preamble is read as it is.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <thread>

#include "npu/protocol/transport.h"
#include "poll_window.h"

namespace npu::proto {
namespace {

constexpr size_t kMaxFdsPerWrite = 64;
// The accepting side's first bytes (with one fd, the client's end of the reply socketpair).
// Not a frame: frames begin "NPU1".
constexpr char kReplyPreamble[8] = {'N', 'P', 'U', '-', 'R', 'P', 'L', 'Y'};
// write() has no timeout parameter; a peer that stops reading for this long is treated as hung.
constexpr std::chrono::milliseconds kWriteTimeout{10'000};

std::string errnoText(const char* what, int err) {
    return std::string(what) + ": " + std::strerror(err);
}

// One non-blocking sendmsg of `bytes` with `fds` (at most kMaxFdsPerWrite) as SCM_RIGHTS.
ssize_t sendWithFds(int socket, std::span<const uint8_t> bytes, std::span<const int> fds) {
    iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerWrite)];
    if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    return ::sendmsg(socket, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

Result<UniqueFd> makeEventFd() {
    int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return fail(Error::Kind::kIo, errnoText("eventfd", errno));
    return UniqueFd(fd);
}

Result<sockaddr_un> makeAddress(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
        return fail(Error::Kind::kInvalidArgument, "unix socket path '" + path +
                                                       "' is empty or longer than " +
                                                       std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

// Polls `fd` for `events` and `wakeFd` for readability. Returns 1 ready, 0 timeout, -1 woken.
int pollWithWake(int fd, short events, int wakeFd, std::chrono::milliseconds timeout, int* err) {
    pollfd p[2] = {{fd, events, 0}, {wakeFd, POLLIN, 0}};
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                          std::chrono::steady_clock::now());
        int ms = left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
        int r = ::poll(p, 2, ms);
        if (r < 0) {
            if (errno == EINTR) continue;
            *err = errno;
            return -2;
        }
        if (p[1].revents != 0) return -1;
        if (r == 0) return 0;
        return 1;
    }
}

class UnixTransport final : public Transport {
public:
    // The connecting side (or an adopted socket): its first read looks for the peer's reply
    // channel.
    UnixTransport(UniqueFd socket, UniqueFd wake, std::string description)
        : UnixTransport(std::move(socket), std::move(wake), std::move(description), {}, false) {}
    // The accepting side: writes on `replies`, its end of the reply socketpair (when the client
    // was still there to get the other), and never takes a reply channel from its client.
    static std::unique_ptr<UnixTransport> accepted(UniqueFd socket, UniqueFd wake, std::string description,
                                                   UniqueFd replies) {
        return std::unique_ptr<UnixTransport>(new UnixTransport(
            std::move(socket), std::move(wake), std::move(description), std::move(replies), true));
    }
    ~UnixTransport() override { shutdown(); }

    Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        size_t sent = 0;
        while (sent < bytes.size()) {
            auto n = writeSome(bytes.subspan(sent), sent == 0 ? fds : std::span<const int>());
            if (!n) return std::unexpected(n.error());
            sent += *n;
            if (sent == bytes.size()) break;
            int perr = 0;
            int r = pollWithWake(writeFd_, POLLOUT, wake_.get(), kWriteTimeout, &perr);
            if (r == 0) {
                return fail(Error::Kind::kTimeout, describe() + ": peer did not read for " +
                                                       std::to_string(kWriteTimeout.count()) + " ms");
            }
            if (r == -1) return fail(Error::Kind::kDisconnected, describe() + ": shut down");
            if (r == -2) return fail(Error::Kind::kIo, describe() + ": " + errnoText("poll", perr));
        }
        return {};
    }

    Result<size_t> writeSome(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        if (fds.size() > kMaxFdsPerWrite) {
            return fail(Error::Kind::kInvalidArgument, describe() + ": " + std::to_string(fds.size()) +
                                                           " fds in one write, the limit is " +
                                                           std::to_string(kMaxFdsPerWrite));
        }
        size_t sent = 0;
        while (sent < bytes.size()) {
            if (shut_.load()) return fail(Error::Kind::kDisconnected, describe() + ": shut down");
            // fds ride with the first byte sent
            const ssize_t n =
                sendWithFds(writeFd_, bytes.subspan(sent), sent == 0 ? fds : std::span<const int>());
            if (n >= 0) {
                sent += static_cast<size_t>(n);
                continue;
            }
            const int err = errno;
            if (err == EINTR) continue;
            if (err == EAGAIN || err == EWOULDBLOCK) return sent;
            if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) {
                return fail(Error::Kind::kDisconnected, describe() + ": " + errnoText("send", err));
            }
            if (err == EBADF && shut_.load())
                return fail(Error::Kind::kDisconnected, describe() + ": shut down");
            return fail(Error::Kind::kIo, describe() + ": " + errnoText("sendmsg", err));
        }
        return sent;
    }

    Result<size_t> read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                        std::chrono::milliseconds timeout) override {
        if (shut_.load()) return fail(Error::Kind::kDisconnected, describe() + ": shut down");
        if (!pending_.empty()) return takePending(buffer);
        if (!preambleChecked_) return readFirst(buffer, fds, timeout);
        return receive(buffer, fds, timeout);
    }

    void shutdown() override {
        if (shut_.exchange(true)) return;
        uint64_t one = 1;
        (void)!::write(wake_.get(), &one, sizeof(one));
        // The peer sees EOF on both sockets; our fds are closed by the destructor.
        ::shutdown(fd_.get(), SHUT_RDWR);
        if (const int other = otherFd_.load(); other >= 0) ::shutdown(other, SHUT_RDWR);
    }

    std::string describe() const override { return description_; }
    void setReadPollWindow(std::chrono::microseconds window) override { pollWindow_ = window; }

private:
    UnixTransport(UniqueFd socket, UniqueFd wake, std::string description, UniqueFd replies, bool accepting)
        : fd_(std::move(socket)),
          wake_(std::move(wake)),
          description_(std::move(description)),
          other_(std::move(replies)),
          writeFd_(other_ ? other_.get() : fd_.get()),
          readFd_(fd_.get()),
          preambleChecked_(accepting),
          otherFd_(other_ ? other_.get() : -1) {}

    // The first bytes from the peer: a reply channel (the accepting side's preamble and its fd),
    // from then on read instead of the connected socket; or the peer's first data, handed over
    // as it is (what does not fit `buffer` first on the next read).
    Result<size_t> readFirst(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                             std::chrono::milliseconds timeout) {
        uint8_t first[sizeof kReplyPreamble];
        std::vector<UniqueFd> firstFds;
        auto n = receive(first, &firstFds, timeout);
        if (!n) return n;
        preambleChecked_ = true;
        if (*n == sizeof first && firstFds.size() == 1 && std::memcmp(first, kReplyPreamble, *n) == 0) {
            NPU_TRY(adoptReplies(std::move(firstFds[0])));
            return receive(buffer, fds, timeout);
        }
        for (auto& fd : firstFds) {
            if (fds != nullptr) fds->push_back(std::move(fd));
        }
        pending_.assign(first, first + *n);
        return takePending(buffer);
    }

    // The accepting side's reply socket: read from now on (a connected AF_UNIX stream socket).
    Result<void> adoptReplies(UniqueFd replies) {
        int domain = 0, type = 0;
        socklen_t len = sizeof(int);
        if (::getsockopt(replies.get(), SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX ||
            ::getsockopt(replies.get(), SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
            return fail(Error::Kind::kProtocol,
                        describe() + ": the peer's reply channel is not a Unix stream socket");
        }
        other_ = std::move(replies);
        readFd_ = other_.get();
        rcvTimeout_ = std::chrono::milliseconds(-1);  // SO_RCVTIMEO is set on it at the next read
        otherFd_.store(readFd_);
        if (shut_.load()) ::shutdown(readFd_, SHUT_RDWR);  // shutdown() may have missed it
        return {};
    }

    size_t takePending(std::span<uint8_t> buffer) {
        const size_t n = std::min(buffer.size(), pending_.size());
        std::memcpy(buffer.data(), pending_.data(), n);
        pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(n));
        return n;
    }

    // The poll window (setReadPollWindow): true when bytes (or the peer's end) wait.
    bool pollReadable(std::chrono::microseconds window) {
        const auto ready = [this]() -> Result<bool> {
            pollfd p{readFd_, POLLIN, 0};
            return ::poll(&p, 1, 0) != 0;  // an error: the blocking read reports it
        };
        auto found = poll_.poll(PollWindow::Clock::now(), window, ready);
        return found && *found;
    }

    Result<size_t> receive(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                           std::chrono::milliseconds timeout) {
        // One blocking recvmsg bounded by SO_RCVTIMEO (set again only when the timeout changes)
        // instead of poll() + recvmsg: a system call less per frame. shutdown() wakes it (the
        // socket's own shutdown returns 0 to a blocked reader). Reads are not concurrent.
        const bool wait = timeout.count() > 0;
        if (wait && pollWindow_.count() > 0)
            (void)pollReadable(std::min<std::chrono::microseconds>(pollWindow_, timeout));
        if (wait && timeout != rcvTimeout_) {
            timeval tv{static_cast<time_t>(timeout.count() / 1000),
                       static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
            if (::setsockopt(readFd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
                return fail(Error::Kind::kIo,
                            describe() + ": " + errnoText("setsockopt(SO_RCVTIMEO)", errno));
            }
            rcvTimeout_ = timeout;
        }
        for (;;) {
            iovec iov{buffer.data(), buffer.size()};
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerWrite)];
            msg.msg_control = control;
            msg.msg_controllen = sizeof(control);
            ssize_t n = ::recvmsg(readFd_, &msg, MSG_CMSG_CLOEXEC | (wait ? 0 : MSG_DONTWAIT));
            if (n < 0) {
                int err = errno;
                if (err == EINTR) continue;
                if (shut_.load()) return fail(Error::Kind::kDisconnected, describe() + ": shut down");
                if (err == EAGAIN || err == EWOULDBLOCK) {
                    return fail(Error::Kind::kTimeout,
                                describe() + ": no data within " + std::to_string(timeout.count()) + " ms");
                }
                if (err == ECONNRESET || err == ENOTCONN) {
                    return fail(Error::Kind::kDisconnected, describe() + ": " + errnoText("recv", err));
                }
                return fail(Error::Kind::kIo, describe() + ": " + errnoText("recvmsg", err));
            }
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
                size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; ++i) {
                    int fd;
                    std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                    UniqueFd owned(fd);
                    if (fds != nullptr) fds->push_back(std::move(owned));
                }
            }
            if (n == 0 && shut_.load()) return fail(Error::Kind::kDisconnected, describe() + ": shut down");
            if (n == 0) return fail(Error::Kind::kDisconnected, describe() + ": peer closed the connection");
            return static_cast<size_t>(n);
        }
    }

    std::chrono::microseconds pollWindow_{0};  // setReadPollWindow
    PollWindow poll_;                          // reads are not concurrent
    UniqueFd fd_;                              // the connected socket
    UniqueFd wake_;
    std::string description_;
    UniqueFd other_;  // the reply socket (accepting side: written; connecting side: read), if any
    int writeFd_;
    int readFd_;                    // reads are not concurrent: only the reader changes it
    bool preambleChecked_;          // the first bytes were looked at (or this is the accepting side)
    std::vector<uint8_t> pending_;  // received first bytes the caller's buffer had no room for
    std::atomic<int> otherFd_;      // other_ for shutdown() (set by the reader while it may run)
    std::atomic<bool> shut_{false};
    std::chrono::milliseconds rcvTimeout_{-1};  // SO_RCVTIMEO of readFd_ as last set (-1: never)
};

// The accepting side of a new connection: its reply socketpair, the client's end sent with
// kReplyPreamble. An empty fd when the client has gone already: the connection is then served
// as it is (its first read sees the end), as before there was a reply channel.
Result<UniqueFd> openReplyChannel(int socket, const std::string& where) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        return fail(Error::Kind::kIo, where + ": " + errnoText("socketpair", errno));
    }
    UniqueFd ours(pair[0]), theirs(pair[1]);
    // The socket is new and empty: the preamble fits at once.
    const int theirFd = theirs.get();
    const auto preamble = std::as_bytes(std::span(kReplyPreamble));
    if (sendWithFds(socket, {reinterpret_cast<const uint8_t*>(preamble.data()), preamble.size()},
                    std::span(&theirFd, 1)) != static_cast<ssize_t>(sizeof kReplyPreamble)) {
        const int err = errno;
        if (err == EPIPE || err == ECONNRESET || err == ENOTCONN) return UniqueFd();
        return fail(Error::Kind::kIo, where + ": " + errnoText("sending the reply channel", err));
    }
    return ours;
}

}  // namespace

Result<std::unique_ptr<Transport>> adoptUnixSocket(UniqueFd socket, std::string description) {
    if (!socket.valid()) return fail(Error::Kind::kInvalidArgument, "adoptUnixSocket: invalid fd");
    int flags = ::fcntl(socket.get(), F_GETFD);
    if (flags >= 0) ::fcntl(socket.get(), F_SETFD, flags | FD_CLOEXEC);
    auto wake = makeEventFd();
    if (!wake) return std::unexpected(wake.error());
    return std::unique_ptr<Transport>(
        new UnixTransport(std::move(socket), std::move(*wake), std::move(description)));
}

Result<void> checkUnixPeer(int socketFd, const PeerPolicy& policy, const std::string& where) {
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(socketFd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        return fail(Error::Kind::kIo, where + ": " + errnoText("getsockopt(SO_PEERCRED)", errno));
    }
    if (cred.uid == ::geteuid()) return {};
    if (policy.allowedGroup && cred.gid == *policy.allowedGroup) return {};
    std::string allowed = "uid " + std::to_string(::geteuid());
    if (policy.allowedGroup) allowed += " or gid " + std::to_string(*policy.allowedGroup);
    return fail(Error::Kind::kIo, where + ": the peer (pid " + std::to_string(cred.pid) + ", uid " +
                                      std::to_string(cred.uid) + ", gid " + std::to_string(cred.gid) +
                                      ") is not allowed; only " + allowed + " may be on the other end");
}

Result<std::string> privateSocketDirectory() {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    const std::string dir = runtime != nullptr && *runtime != '\0'
                                ? std::string(runtime) + "/npu"
                                : "/tmp/npu-" + std::to_string(::geteuid());
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        return fail(Error::Kind::kIo,
                    "cannot create the socket directory " + dir + ": " + std::strerror(errno));
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
        return fail(Error::Kind::kIo, "socket directory " + dir + ": " + std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        return fail(Error::Kind::kInvalidArgument,
                    "socket directory " + dir + " is not a directory (a symlink or a file?); remove it");
    }
    if (st.st_uid != ::geteuid()) {
        return fail(Error::Kind::kInvalidArgument, "socket directory " + dir + " is owned by uid " +
                                                       std::to_string(st.st_uid) + ", not by us (uid " +
                                                       std::to_string(::geteuid()) + "); refusing to use it");
    }
    if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return fail(Error::Kind::kInvalidArgument,
                    "socket directory " + dir + " has mode " + mode +
                        "; it must not be group or world accessible (chmod 700 " + dir + ")");
    }
    return dir;
}

Result<std::string> defaultUnixSocketPath() {
    auto dir = privateSocketDirectory();
    if (!dir) return std::unexpected(dir.error());
    return *dir + "/npu-fwd.sock";
}

Result<std::unique_ptr<Transport>> connectUnix(const std::string& socketPath,
                                               std::chrono::milliseconds timeout, const PeerPolicy& policy) {
    auto addr = makeAddress(socketPath);
    if (!addr) return std::unexpected(addr.error());
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        if (!fd) return fail(Error::Kind::kIo, errnoText("socket(AF_UNIX)", errno));
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) == 0) {
            auto peer = checkUnixPeer(fd.get(), policy, "unix:" + socketPath);
            if (!peer) return std::unexpected(peer.error());
            return adoptUnixSocket(std::move(fd), "unix:" + socketPath);
        }
        int err = errno;
        if (err != ENOENT && err != ECONNREFUSED && err != EAGAIN && err != EINTR) {
            return fail(Error::Kind::kIo, "connect to unix:" + socketPath + ": " + std::strerror(err));
        }
        // The server may still be starting: retry until the deadline.
        if (std::chrono::steady_clock::now() >= deadline) {
            return fail(Error::Kind::kTimeout, "connect to unix:" + socketPath + ": no listener within " +
                                                   std::to_string(timeout.count()) + " ms (" +
                                                   std::strerror(err) + ")");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

UnixListener::UnixListener(UniqueFd fd, UniqueFd wakeFd, std::string path, PeerPolicy policy)
    : fd_(std::move(fd)), wakeFd_(std::move(wakeFd)), path_(std::move(path)), policy_(policy) {
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
        boundDev_ = st.st_dev;
        boundIno_ = st.st_ino;
    }
}

UnixListener::~UnixListener() {
    shutdown();
    fd_.reset();
    // Unlink only the socket we bound: if the path now names anything else (another server's
    // socket, a file someone put there), it is not ours to remove.
    struct stat st {};
    if (boundIno_ != 0 && ::lstat(path_.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) &&
        st.st_dev == boundDev_ && st.st_ino == boundIno_) {
        ::unlink(path_.c_str());
    }
}

namespace {

// bind() found something at `path`: it may be replaced only if it is a stale socket of ours.
Result<void> removeStaleSocket(const std::string& path, const sockaddr_un& addr) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return {};  // gone meanwhile: just bind again
    if (!S_ISSOCK(st.st_mode)) {
        return fail(Error::Kind::kInvalidArgument,
                    "unix:" + path + " exists and is " + base::fileKind(st.st_mode) +
                        ", not a socket; refusing to replace it (choose another --socket)");
    }
    if (st.st_uid != ::geteuid()) {
        return fail(Error::Kind::kInvalidArgument,
                    "unix:" + path + " is a socket owned by uid " + std::to_string(st.st_uid) +
                        ", not by us (uid " + std::to_string(::geteuid()) + "); refusing to replace it");
    }
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (probe && ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
        return fail(Error::Kind::kIo, "unix:" + path + " is in use by a running server");
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        return fail(Error::Kind::kIo,
                    "cannot remove the stale socket unix:" + path + ": " + std::strerror(errno));
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<UnixListener>> UnixListener::listen(const std::string& socketPath,
                                                           const PeerPolicy& policy) {
    auto addr = makeAddress(socketPath);
    if (!addr) return std::unexpected(addr.error());
    // Non-blocking: accept() after poll() must not hang if the client has gone meanwhile.
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return fail(Error::Kind::kIo, errnoText("socket(AF_UNIX)", errno));
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
        int err = errno;
        if (err != EADDRINUSE)
            return fail(Error::Kind::kIo, "bind unix:" + socketPath + ": " + std::strerror(err));
        auto removed = removeStaleSocket(socketPath, *addr);
        if (!removed) return std::unexpected(removed.error());
        if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof(*addr)) != 0) {
            return fail(Error::Kind::kIo, "bind unix:" + socketPath + ": " + std::strerror(errno));
        }
    }
    if (::listen(fd.get(), 16) != 0)
        return fail(Error::Kind::kIo, "listen unix:" + socketPath + ": " + std::strerror(errno));
    auto wake = makeEventFd();
    if (!wake) return std::unexpected(wake.error());
    return std::unique_ptr<UnixListener>(
        new UnixListener(std::move(fd), std::move(*wake), socketPath, policy));
}

Result<std::unique_ptr<UnixListener>> UnixListener::adopt(int fd, const PeerPolicy& policy) {
    const std::string what = "inherited socket fd " + std::to_string(fd);
    sockaddr_un addr{};
    socklen_t addrLen = sizeof(addr);
    int type = 0, listening = 0;
    socklen_t len = sizeof(int);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addrLen) != 0) {
        return fail(Error::Kind::kInvalidArgument, what + " is not a listening Unix stream socket (" +
                                                       errnoText("getsockname", errno) + ")");
    }
    if (addr.sun_family != AF_UNIX || ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
        type != SOCK_STREAM || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 ||
        listening == 0) {
        return fail(Error::Kind::kInvalidArgument, what + " is not a listening Unix stream socket");
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0 || ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
        return fail(Error::Kind::kIo, what + ": " + errnoText("fcntl", errno));
    }
    auto wake = makeEventFd();
    if (!wake) return std::unexpected(wake.error());
    const size_t pathLen = addrLen > offsetof(sockaddr_un, sun_path)
                               ? strnlen(addr.sun_path, addrLen - offsetof(sockaddr_un, sun_path))
                               : 0;
    const std::string path =
        pathLen > 0 && addr.sun_path[0] != '\0' ? std::string(addr.sun_path, pathLen) : what;
    auto listener =
        std::unique_ptr<UnixListener>(new UnixListener(UniqueFd(fd), std::move(*wake), path, policy));
    listener->boundDev_ = listener->boundIno_ = 0;  // not ours to unlink
    return listener;
}

Result<std::unique_ptr<Transport>> UnixListener::accept(std::chrono::milliseconds timeout,
                                                        ReplyChannel replyChannel) {
    int perr = 0;
    int r = pollWithWake(fd_.get(), POLLIN, wakeFd_.get(), timeout, &perr);
    if (r == 0)
        return fail(Error::Kind::kTimeout, "accept on unix:" + path_ + ": no client within " +
                                               std::to_string(timeout.count()) + " ms");
    if (r == -1) return fail(Error::Kind::kDisconnected, "accept on unix:" + path_ + ": listener shut down");
    if (r == -2) return fail(Error::Kind::kIo, "accept on unix:" + path_ + ": " + errnoText("poll", perr));
    UniqueFd client(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) {
        int err = errno;
        if (err == EAGAIN || err == ECONNABORTED || err == EINTR) {
            return fail(Error::Kind::kTimeout, "accept on unix:" + path_ + ": client went away");
        }
        return fail(Error::Kind::kIo, "accept on unix:" + path_ + ": " + std::strerror(err));
    }
    if (auto peer = checkUnixPeer(client.get(), policy_, "accept on unix:" + path_); !peer) {
        return std::unexpected(peer.error());  // closing `client` refuses it
    }
    if (replyChannel == ReplyChannel::kNone)
        return adoptUnixSocket(std::move(client), "unix:" + path_ + " (accepted)");
    auto replies = openReplyChannel(client.get(), "accept on unix:" + path_);
    if (!replies) return std::unexpected(replies.error());
    auto wake = makeEventFd();
    if (!wake) return std::unexpected(wake.error());
    return UnixTransport::accepted(std::move(client), std::move(*wake), "unix:" + path_ + " (accepted)",
                                   std::move(*replies));
}

void UnixListener::shutdown() {
    uint64_t one = 1;
    if (wakeFd_) (void)!::write(wakeFd_.get(), &one, sizeof(one));
}

}  // namespace npu::proto
