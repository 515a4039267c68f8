// The fast message queue of a burst (npu/protocol/fmq.h): two byte rings in a sealed memfd, a
// bounded poll of the ring before a reader sleeps, and an AF_UNIX socketpair as the doorbell and
// as the sign that the peer has gone.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "npu/base/try.h"
#include "npu/protocol/fmq.h"
#include "poll_window.h"

namespace npu::proto {
namespace {

using Clock = std::chrono::steady_clock;

std::string errnoText(const std::string& what) {
    return what + ": " + std::strerror(errno);
}

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    asm volatile("yield");
#endif
}

bool validRingBytes(uint32_t bytes) {
    return bytes >= kFmqMinRingBytes && bytes <= kFmqMaxRingBytes && (bytes & (bytes - 1)) == 0;
}

// The shared file, mapped; unmapped when the last end that maps it goes.
class Mapping {
public:
    Mapping(uint8_t* base, size_t bytes) : base_(base), bytes_(bytes) {}
    ~Mapping() { munmap(base_, bytes_); }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    uint8_t* base() const { return base_; }

private:
    uint8_t* base_;
    size_t bytes_;
};

Result<std::unique_ptr<Mapping>> mapFile(int fd, uint64_t bytes, const std::string& name) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return fail(Error::Kind::kInvalidArgument, errnoText(name + ": mmap of the queue"));
    return std::make_unique<Mapping>(static_cast<uint8_t*>(p), bytes);
}

// One ring as one end sees it: the shared words through atomic_ref, its own position private.
struct Ring {
    uint8_t* control = nullptr;
    uint8_t* data = nullptr;
    uint64_t bytes = 0;

    std::atomic_ref<uint64_t> tail() const {
        return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(control + kFmqTailOffset));
    }
    std::atomic_ref<uint64_t> head() const {
        return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(control + kFmqHeadOffset));
    }
    std::atomic_ref<uint32_t> sleeping() const {
        return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(control + kFmqSleepingOffset));
    }
};

Ring ringAt(uint8_t* base, uint32_t ringBytes, int index) {
    Ring r;
    r.control = base + kFmqControlOffset + kFmqControlBytes * static_cast<size_t>(index);
    r.data = base + kFmqDataOffset + uint64_t{ringBytes} * static_cast<uint64_t>(index);
    r.bytes = ringBytes;
    return r;
}

class FmqTransport final : public Transport {
public:
    FmqTransport(std::unique_ptr<Mapping> map, uint32_t ringBytes, int rxIndex, UniqueFd doorbell,
                 UniqueFd wake, const FmqOptions& options, std::string name)
        : map_(std::move(map)),
          rx_(ringAt(map_->base(), ringBytes, rxIndex)),
          tx_(ringAt(map_->base(), ringBytes, 1 - rxIndex)),
          doorbell_(std::move(doorbell)),
          wake_(std::move(wake)),
          options_(options),
          name_(std::move(name)) {
        // Our own positions start where the shared words say (zero in a new queue).
        readPos_ = rx_.head().load(std::memory_order_acquire);
        writePos_ = tx_.tail().load(std::memory_order_acquire);
    }
    // Wakes our own blocked callers; the peer sees the end of the doorbell's stream once every
    // copy of our end is closed (never ::shutdown here: a forked child's copy of this object
    // going would end the parent's stream too).
    ~FmqTransport() override { wakeOwn(); }

    Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override;
    Result<size_t> read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                        std::chrono::milliseconds timeout) override;
    // Wakes blocked callers, and the peer sees the end at once (the doorbell's stream ends).
    void shutdown() override {
        wakeOwn();
        ::shutdown(doorbell_.get(), SHUT_RDWR);
    }
    std::string describe() const override { return name_; }

private:
    void wakeOwn() {
        if (shut_.exchange(true)) return;
        const uint64_t one = 1;
        (void)!::write(wake_.get(), &one, sizeof one);
    }
    Result<uint64_t> readable() const;  // bytes waiting in rx, checked
    Result<uint64_t> writable() const;  // free bytes in tx, checked
    Result<void> waitReadable(std::chrono::milliseconds timeout);
    Result<bool> pollRing(Clock::time_point start, Clock::duration window);  // true: bytes waiting
    Result<void> waitWritable(Clock::time_point deadline, size_t wanted);
    void put(std::span<const uint8_t> bytes);  // into tx at writePos_, published
    void ringDoorbell();
    void drainDoorbell();  // after a wake-up; notes the peer's end of stream
    Error gone() const {
        return Error{Error::Kind::kDisconnected,
                     name_ + (shut_.load() ? ": shut down" : ": the peer closed it")};
    }

    std::unique_ptr<Mapping> map_;
    Ring rx_, tx_;
    UniqueFd doorbell_;
    UniqueFd wake_;  // eventfd that shutdown() signals
    FmqOptions options_;
    std::string name_;
    std::mutex readMutex_, writeMutex_;
    uint64_t readPos_ = 0;   // under readMutex_
    PollWindow poll_;        // under readMutex_
    uint64_t writePos_ = 0;  // under writeMutex_
    std::atomic<bool> shut_{false};
    std::atomic<bool> peerGone_{false};
};

Result<uint64_t> FmqTransport::readable() const {
    const uint64_t tail = rx_.tail().load(std::memory_order_acquire);
    const uint64_t waiting = tail - readPos_;
    if (waiting > rx_.bytes) {
        return fail(Error::Kind::kIo, name_ + ": the peer's write position " + std::to_string(tail) +
                                          " is not within " + std::to_string(rx_.bytes) +
                                          " bytes after our read position " + std::to_string(readPos_) +
                                          " (a broken or hostile peer)");
    }
    return waiting;
}

Result<uint64_t> FmqTransport::writable() const {
    const uint64_t head = tx_.head().load(std::memory_order_acquire);
    const uint64_t used = writePos_ - head;
    if (used > tx_.bytes) {
        return fail(Error::Kind::kIo, name_ + ": the peer's read position " + std::to_string(head) +
                                          " is not within " + std::to_string(tx_.bytes) +
                                          " bytes before our write position " + std::to_string(writePos_) +
                                          " (a broken or hostile peer)");
    }
    return tx_.bytes - used;
}

void FmqTransport::put(std::span<const uint8_t> bytes) {
    const uint64_t at = writePos_ & (tx_.bytes - 1);
    const size_t first = static_cast<size_t>(std::min<uint64_t>(bytes.size(), tx_.bytes - at));
    std::memcpy(tx_.data + at, bytes.data(), first);
    std::memcpy(tx_.data, bytes.data() + first, bytes.size() - first);
    writePos_ += bytes.size();
    tx_.tail().store(writePos_, std::memory_order_release);
    // Dekker with the reader's sleep (waitReadable): our tail before its flag, its flag before
    // its look at our tail; one of the two sees the other's store.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (tx_.sleeping().load(std::memory_order_relaxed) != 0) ringDoorbell();
}

void FmqTransport::ringDoorbell() {
    const char bell = 1;
    if (::send(doorbell_.get(), &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN &&
        errno != EWOULDBLOCK && errno != EINTR) {
        peerGone_.store(true);  // EPIPE, ECONNRESET: nobody reads what we wrote
    }
}

void FmqTransport::drainDoorbell() {
    char bytes[64];
    for (int i = 0; i < 16; ++i) {  // bounded: a peer ringing without end cannot keep us here
        const ssize_t n = ::recv(doorbell_.get(), bytes, sizeof bytes, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            peerGone_.store(true);
            return;
        }
        if (n < 0 && errno != EINTR) return;
    }
}

Result<void> FmqTransport::write(std::span<const uint8_t> bytes, std::span<const int> fds) {
    if (!fds.empty()) {
        return fail(Error::Kind::kInvalidArgument,
                    name_ + ": a burst channel carries no fds (" + std::to_string(fds.size()) + " given)");
    }
    std::lock_guard lock(writeMutex_);
    if (shut_.load() || peerGone_.load()) return std::unexpected(gone());
    const auto deadline = Clock::now() + options_.writeTimeout;
    size_t done = 0;
    while (done < bytes.size()) {
        const uint64_t room = NPU_TRY(writable());
        if (options_.writeTimeout.count() == 0 && room < bytes.size()) {
            return fail(Error::Kind::kResourceExhausted, name_ + ": " + std::to_string(bytes.size()) +
                                                             " bytes do not fit the " + std::to_string(room) +
                                                             " free of " + std::to_string(tx_.bytes) +
                                                             " (the peer does not read); nothing written");
        }
        if (room == 0) {
            NPU_TRY(waitWritable(deadline, bytes.size() - done));
            continue;
        }
        const size_t n = static_cast<size_t>(std::min<uint64_t>(room, bytes.size() - done));
        put(bytes.subspan(done, n));
        done += n;
    }
    if (peerGone_.load()) return std::unexpected(gone());
    return {};
}

// The reader is behind: polls for room (the doorbell only wakes readers), looking for the
// peer's end of stream and for shutdown between looks.
Result<void> FmqTransport::waitWritable(Clock::time_point deadline, size_t wanted) {
    for (uint32_t i = 0;; ++i) {
        if (shut_.load() || peerGone_.load()) return std::unexpected(gone());
        if (NPU_TRY(writable()) > 0) return {};
        if (Clock::now() >= deadline) {
            return fail(Error::Kind::kTimeout, name_ + ": the peer did not read for " +
                                                   std::to_string(options_.writeTimeout.count()) + " ms (" +
                                                   std::to_string(wanted) + " bytes still to write)");
        }
        if (i < 64) {
            cpuRelax();
            continue;
        }
        pollfd p{doorbell_.get(), POLLRDHUP, 0};
        if (::poll(&p, 1, 1) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) peerGone_.store(true);
    }
}

// The poll window (poll_window.h): the peer is likely busy with our last message and answers
// within it.
Result<bool> FmqTransport::pollRing(Clock::time_point start, Clock::duration window) {
    return poll_.poll(start, window, [this]() -> Result<bool> { return NPU_TRY(readable()) > 0; });
}

Result<void> FmqTransport::waitReadable(std::chrono::milliseconds timeout) {
    const auto start = Clock::now();
    const auto deadline = start + timeout;
    if (NPU_TRY(pollRing(start, std::min<Clock::duration>(options_.pollWindow, timeout)))) return {};
    if (shut_.load() || peerGone_.load()) return std::unexpected(gone());
    // Then sleep on the doorbell until the peer rings, goes, or the timeout passes.
    for (;;) {
        rx_.sleeping().store(1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        const auto waiting = readable();
        const auto left = deadline - Clock::now();
        if ((waiting && *waiting > 0) || !waiting || left <= Clock::duration::zero()) {
            rx_.sleeping().store(0, std::memory_order_relaxed);
            if (!waiting) return std::unexpected(waiting.error());
            if (*waiting > 0) return {};
            return fail(Error::Kind::kTimeout,
                        name_ + ": nothing arrived within " + std::to_string(timeout.count()) + " ms");
        }
        pollfd p[2] = {{doorbell_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
        const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
        timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
        const int r = ::ppoll(p, 2, &ts, nullptr);
        rx_.sleeping().store(0, std::memory_order_relaxed);
        if (r < 0 && errno != EINTR) return fail(Error::Kind::kIo, errnoText(name_ + ": ppoll"));
        if (shut_.load()) return std::unexpected(gone());
        if (r > 0 && p[0].revents != 0) drainDoorbell();
        if (NPU_TRY(readable()) > 0) return {};
        if (peerGone_.load()) return std::unexpected(gone());
    }
}

Result<size_t> FmqTransport::read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                                  std::chrono::milliseconds timeout) {
    (void)fds;  // none ever come this way
    std::lock_guard lock(readMutex_);
    if (buffer.empty()) return size_t{0};
    uint64_t waiting = NPU_TRY(readable());
    if (waiting == 0) {
        if (shut_.load() || peerGone_.load()) return std::unexpected(gone());
        if (timeout.count() <= 0) {
            return fail(Error::Kind::kTimeout, name_ + ": nothing waiting");
        }
        NPU_TRY(waitReadable(timeout));
        waiting = NPU_TRY(readable());
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(waiting, buffer.size()));
    const uint64_t at = readPos_ & (rx_.bytes - 1);
    const size_t first = static_cast<size_t>(std::min<uint64_t>(n, rx_.bytes - at));
    std::memcpy(buffer.data(), rx_.data + at, first);
    std::memcpy(buffer.data() + first, rx_.data, n - first);
    readPos_ += n;
    rx_.head().store(readPos_, std::memory_order_release);
    return n;
}

Result<UniqueFd> makeWakeFd(const std::string& name) {
    const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0) return fail(Error::Kind::kIo, errnoText(name + ": eventfd"));
    return UniqueFd(fd);
}

// The memfd a host passed: a sealed (or sealable) regular file, open for reading and writing, of
// the size its valid header names. Returns the ring size.
Result<uint32_t> checkQueueFile(int fd, const std::string& name) {
    struct stat st {};
    if (fstat(fd, &st) != 0)
        return fail(Error::Kind::kInvalidArgument, errnoText(name + ": fstat of the queue fd"));
    if (!S_ISREG(st.st_mode)) {
        return fail(Error::Kind::kInvalidArgument,
                    name + ": the queue fd is " + base::fileKind(st.st_mode) + ", not a memfd");
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) != O_RDWR) {
        return fail(Error::Kind::kInvalidArgument,
                    name + ": the queue memfd is not open for reading and writing");
    }
    const int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || ((seals & F_SEAL_SHRINK) == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0)) {
        return fail(Error::Kind::kInvalidArgument,
                    name +
                        ": the queue file is not sealed against shrinking and cannot be (not a memfd "
                        "made with MFD_ALLOW_SEALING?)");
    }
    uint32_t header[3] = {};
    if (pread(fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header)) {
        return fail(Error::Kind::kInvalidArgument,
                    name + ": the queue file (" + std::to_string(st.st_size) + " bytes) has no header");
    }
    if (header[0] != kFmqMagic || header[1] != kFmqVersion) {
        return fail(Error::Kind::kInvalidArgument,
                    name + ": the queue header has magic " + std::to_string(header[0]) + " version " +
                        std::to_string(header[1]) + "; expected " + std::to_string(kFmqMagic) + " version " +
                        std::to_string(kFmqVersion));
    }
    if (!validRingBytes(header[2])) {
        return fail(Error::Kind::kInvalidArgument,
                    name + ": ring_bytes " + std::to_string(header[2]) + " is not a power of two in [" +
                        std::to_string(kFmqMinRingBytes) + ", " + std::to_string(kFmqMaxRingBytes) + "]");
    }
    if (static_cast<uint64_t>(st.st_size) != fmqFileBytes(header[2])) {
        return fail(Error::Kind::kInvalidArgument, name + ": the queue file has " +
                                                       std::to_string(st.st_size) + " bytes; rings of " +
                                                       std::to_string(header[2]) + " need exactly " +
                                                       std::to_string(fmqFileBytes(header[2])));
    }
    return header[2];
}

Result<void> checkDoorbell(int fd, const std::string& name) {
    struct stat st {};
    if (fstat(fd, &st) != 0)
        return fail(Error::Kind::kInvalidArgument, errnoText(name + ": fstat of the doorbell fd"));
    int domain = 0, type = 0;
    socklen_t len = sizeof domain;
    const bool socket = S_ISSOCK(st.st_mode) && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
                        (len = sizeof type, getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0);
    if (!socket || domain != AF_UNIX || type != SOCK_STREAM) {
        return fail(Error::Kind::kInvalidArgument, name + ": the doorbell fd is " +
                                                       base::fileKind(st.st_mode) +
                                                       " but must be an AF_UNIX stream socket");
    }
    return {};
}

}  // namespace

Result<FmqHostEnd> createFmq(const FmqOptions& options, const std::string& name) {
    if (!validRingBytes(options.ringBytes)) {
        return fail(Error::Kind::kInvalidArgument, name + ": ring of " + std::to_string(options.ringBytes) +
                                                       " bytes: a power of two in [" +
                                                       std::to_string(kFmqMinRingBytes) + ", " +
                                                       std::to_string(kFmqMaxRingBytes) + "] is needed");
    }
    const uint64_t bytes = fmqFileBytes(options.ringBytes);
    UniqueFd memfd(memfd_create("npu-burst-fmq", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!memfd) return fail(Error::Kind::kIo, errnoText(name + ": memfd_create"));
    if (ftruncate(memfd.get(), static_cast<off_t>(bytes)) != 0 ||
        fcntl(memfd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        return fail(Error::Kind::kIo, errnoText(name + ": sizing and sealing the queue"));
    }
    auto map = NPU_TRY(mapFile(memfd.get(), bytes, name));
    const uint32_t header[3] = {kFmqMagic, kFmqVersion, options.ringBytes};
    std::memcpy(map->base(), header, sizeof header);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        return fail(Error::Kind::kIo, errnoText(name + ": socketpair for the doorbell"));
    }
    UniqueFd ours(pair[0]), theirs(pair[1]);
    auto wake = NPU_TRY(makeWakeFd(name));
    FmqHostEnd end;
    end.transport = std::make_unique<FmqTransport>(std::move(map), options.ringBytes, 1, std::move(ours),
                                                   std::move(wake), options, name);
    end.memfd = std::move(memfd);
    end.doorbell = std::move(theirs);
    return end;
}

Result<std::unique_ptr<Transport>> attachFmq(UniqueFd memfd, UniqueFd doorbell, const FmqOptions& options,
                                             const std::string& name) {
    if (!memfd || !doorbell) {
        return fail(Error::Kind::kInvalidArgument,
                    name + ": the queue memfd and the doorbell socket are both needed");
    }
    const uint32_t ringBytes = NPU_TRY(checkQueueFile(memfd.get(), name));
    NPU_TRY(checkDoorbell(doorbell.get(), name));
    auto map = NPU_TRY(mapFile(memfd.get(), fmqFileBytes(ringBytes), name));
    auto wake = NPU_TRY(makeWakeFd(name));
    return std::unique_ptr<Transport>(std::make_unique<FmqTransport>(
        std::move(map), ringBytes, 0, std::move(doorbell), std::move(wake), options, name));
}

}  // namespace npu::proto
