#pragma once
// Byte-stream transports between the host and the firmware, all behind one interface (host
// side only). Every wait has a timeout; no function throws or aborts on a transport problem.

#include <chrono>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "npu/base/error.h"
#include "npu/base/unique_fd.h"

namespace npu::proto {

// The host libraries' error (base/): proto::Error, proto::Result and proto::fail are its old
// names here.
using Error = base::Error;
template <typename T>
using Result = base::Result<T>;
using base::fail;
using base::UniqueFd;

class Transport {
public:
    virtual ~Transport() = default;
    // Writes all bytes; fds (borrowed, dup'ed by the kernel/loopback) travel with them
    // (SCM_RIGHTS on unix).
    virtual Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds = {}) = 0;
    // Writes what fits now without waiting (fds with the first byte): the bytes written, 0 when
    // none fit (the fds were then not sent either). Errors as write()'s. The default writes all
    // (transports whose writes do not wait on their peer: loopback's queue grows).
    virtual Result<size_t> writeSome(std::span<const uint8_t> bytes, std::span<const int> fds = {}) {
        auto r = write(bytes, fds);
        if (!r) return std::unexpected(r.error());
        return bytes.size();
    }
    // Reads up to buffer.size() bytes; appends received fds (if `fds` is null they are closed);
    // kTimeout after `timeout`; kDisconnected at EOF/peer gone.
    virtual Result<size_t> read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                                std::chrono::milliseconds timeout) = 0;
    // Wakes blocked readers/writers; later calls fail kDisconnected.
    virtual void shutdown() = 0;
    virtual std::string describe() const = 0;
    // False when the peer's device memory cannot be shared (USB): the host then keeps its own
    // host window and moves its bytes with WINDOW_WRITE / WINDOW_READ calls (docs/usb.md).
    virtual bool sharesMemory() const { return true; }

    // A hint for a reader that expects an answer soon (a client waiting for its reply): before a
    // read sleeps, look for bytes for up to `window` (0, the default: sleep at once). Only where a
    // wake-up costs more than a look does it matter (unix; a burst's queue has its own,
    // FmqOptions::pollWindow); the policy is in protocol/src/poll_window.h. Set before reading. A
    // read that times out may take up to min(window, timeout) longer than its timeout.
    virtual void setReadPollWindow(std::chrono::microseconds window) { (void)window; }

    // Zero-copy sending, for transports that send from buffers of their own (USB's transfer
    // buffers): room for the next write of `length` bytes (no fds), which the caller fills and then
    // sends with commitWrite(length), with no other write between (a caller serialises its
    // writes). Null, the default: there is no such buffer; build the bytes elsewhere and write()
    // them. Errors as write()'s (waiting for a free buffer is bounded like a write).
    virtual Result<uint8_t*> writeRoom(size_t length) {
        (void)length;
        return nullptr;
    }
    virtual Result<void> commitWrite(size_t length) {
        return fail(Error::Kind::kInvalidArgument,
                    describe() + ": commitWrite of " + std::to_string(length) + " bytes without writeRoom");
    }

    // Zero-copy receiving, where readsInPlace(): the received bytes not yet consumed, where they
    // lie in the transport's buffer (waiting up to `timeout` for some, errors as read()'s), valid
    // until consumeRead(n) drops the first n of them. One reader at a time; no fds.
    virtual bool readsInPlace() const { return false; }
    virtual Result<std::span<const uint8_t>> peekRead(std::chrono::milliseconds timeout) {
        (void)timeout;
        return fail(Error::Kind::kInvalidArgument, describe() + ": peekRead is not supported (readsInPlace)");
    }
    virtual void consumeRead(size_t n) { (void)n; }
};

// In-process duplex channel (the firmware runs on a thread of the same process). fds are dup'ed.
// Destroying (or shutting down) one end makes the other's reads return kDisconnected once the
// bytes already queued for it are consumed.
std::pair<std::unique_ptr<Transport>, std::unique_ptr<Transport>> makeLoopbackPair();

// Who may be on the other end of a unix socket (checked with SO_PEERCRED on both sides): a
// process of our own effective uid, or, when `allowedGroup` is set, one whose gid is that group.
struct PeerPolicy {
    std::optional<uint32_t> allowedGroup;
};

// Checks the peer of a connected unix socket against `policy`; a refusal is a kIo error naming
// the peer's uid, gid and pid.
Result<void> checkUnixPeer(int socketFd, const PeerPolicy& policy, const std::string& where);

// The per-user private directory for sockets: $XDG_RUNTIME_DIR/npu, else /tmp/npu-<uid>. Created
// with mode 0700 when missing; refused (kInvalidArgument, naming path, owner and mode) when it is
// not a directory, is a symlink, is owned by another user or is group/world accessible.
Result<std::string> privateSocketDirectory();
// privateSocketDirectory() + "/npu-fwd.sock".
Result<std::string> defaultUnixSocketPath();

// AF_UNIX SOCK_STREAM client. Retries until the listener exists or `timeout` passes. The
// listener must pass `policy` (a socket served by another user is refused).
Result<std::unique_ptr<Transport>> connectUnix(const std::string& socketPath,
                                               std::chrono::milliseconds timeout,
                                               const PeerPolicy& policy = {});

// Wraps a connected AF_UNIX stream socket (e.g. one end of socketpair()); takes ownership.
Result<std::unique_ptr<Transport>> adoptUnixSocket(UniqueFd socket, std::string description);

class UnixListener {
public:
    // Binds and listens at `socketPath`. An existing file there is replaced only when it is a
    // socket of our own uid that nobody listens on (a dead server's); anything else (a regular
    // file, a fifo, a device, another user's socket, a live server's) is refused and left alone.
    // Clients that fail `policy` are refused at accept().
    static Result<std::unique_ptr<UnixListener>> listen(const std::string& socketPath,
                                                        const PeerPolicy& policy = {});
    // Takes over a socket that is already bound and listening (systemd socket activation hands
    // one in as fd 3). Refused unless `fd` is a listening AF_UNIX stream socket. The socket's
    // file belongs to whoever bound it: it is never unlinked.
    static Result<std::unique_ptr<UnixListener>> adopt(int fd, const PeerPolicy& policy = {});
    ~UnixListener();  // closes the socket and unlinks the path if it is still the socket we bound
    UnixListener(const UnixListener&) = delete;
    UnixListener& operator=(const UnixListener&) = delete;

    // kOffer: the new connection's first bytes offer the client a reply socket of its own (the
    // 8-byte preamble with one fd), and replies go there: for peers that speak this protocol's
    // transport (connectUnix / adoptUnixSocket read the offer). kNone: a plain socket for a peer
    // that does not (QEMU's chardev), whose first bytes must be the caller's own.
    enum class ReplyChannel { kOffer, kNone };
    Result<std::unique_ptr<Transport>> accept(std::chrono::milliseconds timeout,
                                              ReplyChannel replyChannel = ReplyChannel::kOffer);
    // Wakes a blocked accept(); later accepts fail kDisconnected.
    void shutdown();
    const std::string& path() const { return path_; }

private:
    UnixListener(UniqueFd fd, UniqueFd wakeFd, std::string path, PeerPolicy policy);
    UniqueFd fd_;
    UniqueFd wakeFd_;  // eventfd that shutdown() signals
    std::string path_;
    PeerPolicy policy_;
    uint64_t boundDev_ = 0, boundIno_ = 0;  // the socket file we created (unlinked only if unchanged)
};

}  // namespace npu::proto
