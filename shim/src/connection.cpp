#include "connection.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <thread>
#include <vector>

#include "npu/protocol/fmq.h"
#include "npu/protocol/vlog.h"

namespace npu::shim {

DaemonProcess::~DaemonProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    // Wait up to 2 s for a clean exit, then kill; never block forever.
    for (int i = 0; i < 200; ++i) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
}

bool DaemonProcess::killNow() {
    if (reapIfExited()) return false;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);  // SIGKILL cannot be caught: it ends now
    pid_ = 0;
    return true;
}

bool DaemonProcess::reapIfExited() {
    if (pid_ <= 0) return true;
    if (waitpid(pid_, nullptr, WNOHANG) != pid_) return false;
    pid_ = 0;
    return true;
}

Status checkStatus(const proto::Status& status, const char* what) {
    if (status.code() == 0) return {};
    auto code = static_cast<hal::ErrorStatus>(status.code());
    if (status.code() > static_cast<uint32_t>(hal::ErrorStatus::RESOURCE_EXHAUSTED_PERSISTENT)) {
        code = hal::ErrorStatus::GENERAL_FAILURE;
    }
    return fail(code, std::string(what) + ": " + status.message());
}

Status mapRpcError(const proto::Error& e, std::chrono::milliseconds timeout, const char* what) {
    switch (e.kind) {
        case proto::Error::Kind::kTimeout:
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        std::string(what) + ": the firmware did not answer within " +
                            std::to_string(timeout.count()) + " ms (" + e.message + ")");
        case proto::Error::Kind::kDisconnected:
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        std::string(what) + ": connection to the firmware lost (" + e.message + ")");
        case proto::Error::Kind::kRemote: {
            auto code = e.remoteCode == 0 ? hal::ErrorStatus::GENERAL_FAILURE
                                          : static_cast<hal::ErrorStatus>(e.remoteCode);
            return fail(code, std::string(what) + ": firmware error: " + e.message);
        }
        case proto::Error::Kind::kResourceExhausted:
            return fail(hal::ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT, std::string(what) + ": " + e.message);
        case proto::Error::Kind::kInvalidArgument:
            return invalidArgument(std::string(what) + ": " + e.message);
        default:
            return generalFailure(std::string(what) + ": " + e.message);
    }
}

namespace {
// Window bytes per WINDOW_WRITE / WINDOW_READ: the firmware's largest payload less room for the
// message's own fields.
uint64_t windowChunkBytes(const proto::HelloReply& hello) {
    constexpr uint64_t kFraming = 256;
    const uint64_t max = hello.max_payload_bytes() > 2 * kFraming ? hello.max_payload_bytes() : 64 * 1024;
    return max - kFraming;
}
}  // namespace

std::shared_ptr<proto::RpcClient> Connection::rpc() const {
    std::lock_guard lock(rpcMutex_);
    return rpc_;
}

uint32_t Connection::callsLimitFor(uint32_t queueDepth) {
    const uint32_t depth = queueDepth == 0 ? 16 : queueDepth;
    const uint32_t free = depth > kReservedCalls ? depth - kReservedCalls : 0;
    return std::clamp<uint32_t>(free, kWindowDepth, kCallsInFlight);
}

Status Connection::acquireCalls(uint32_t n, std::chrono::milliseconds timeout, const char* what) {
    std::unique_lock lock(gateMutex_);
    const uint32_t limit = callsLimit_.load();
    auto room = [&] { return callsInFlight_ + n <= limit; };
    // With room at once, no clock read for a deadline (wait_for takes one first).
    if (!room() && !callsChanged_.wait_for(lock, timeout, room)) {
        return fail(hal::ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
                    std::string(what) + ": " + std::to_string(limit) +
                        " calls to the firmware stayed in flight for " + std::to_string(timeout.count()) +
                        " ms; retry later");
    }
    callsInFlight_ += n;
    return {};
}

void Connection::releaseCalls(uint32_t n) {
    {
        std::lock_guard lock(gateMutex_);
        callsInFlight_ -= n;
    }
    callsChanged_.notify_all();
}

void Connection::heard() {
    std::lock_guard lock(gateMutex_);
    lastHeard_ = std::chrono::steady_clock::now();
}

Status Connection::callFailed(Attempt& attempt, const proto::Error& e, std::chrono::milliseconds timeout,
                              const char* what) {
    if (e.kind == proto::Error::Kind::kTimeout) {
        callTimeouts_++;
        attempt.lost = Attempt::Loss::kTimeout;
    } else if (e.kind == proto::Error::Kind::kDisconnected) {
        disconnects_++;
        attempt.lost = Attempt::Loss::kDisconnected;
    }
    return mapRpcError(e, timeout, what);
}

Status Connection::call(Attempt& attempt, proto::Method method, const google::protobuf::Message& request,
                        google::protobuf::Message& reply, std::chrono::milliseconds timeout, const char* what,
                        std::span<const int> fds) {
    NPU_TRY(acquireCalls(1, timeout, what));
    auto result = rpc()->call(method, request, reply, timeout, fds);
    releaseCalls(1);
    if (!result) return callFailed(attempt, result.error(), timeout, what);
    heard();
    return {};
}

Status Connection::callCancellable(Attempt& attempt, proto::Method method,
                                   const google::protobuf::Message& request, google::protobuf::Message& reply,
                                   std::chrono::milliseconds timeout, const char* what,
                                   std::vector<WindowBlock>& keep,
                                   const std::shared_ptr<proto::RpcClient>& via) {
    // A burst's channel has a queue of its own: its calls take none of the connection's places.
    if (!via) NPU_TRY(acquireCalls(1, timeout, what));
    struct Release {
        Connection* c;
        ~Release() {
            if (c != nullptr) c->releaseCalls(1);
        }
    } release{via ? nullptr : this};
    const auto rpc = via ? via : this->rpc();
    auto call = rpc->start(method, request, reply);
    if (!call)
        return via ? channelFailed(attempt, call.error(), what, keep)
                   : callFailed(attempt, call.error(), timeout, what);
    auto result = rpc->finish(*call, timeout);
    if (result) {
        heard();
        return {};
    }
    if (result.error().kind == proto::Error::Kind::kRemote)
        return callFailed(attempt, result.error(), timeout, what);
    if (result.error().kind != proto::Error::Kind::kTimeout) {
        // The link is gone: the connection (recovered), or only a burst's channel (replayed).
        return via ? channelFailed(attempt, result.error(), what, keep)
                   : callFailed(attempt, result.error(), timeout, what);
    }
    if (rpc->connected()) {
        cancels_++;
        proto::CancelRequest cancel;
        cancel.set_target_call_id(call->callId());
        proto::CancelReply cancelled;
        if (rpc->call(proto::METHOD_CANCEL, cancel, cancelled, options_.recovery.pingTimeout)) {
            heard();  // the firmware let go of the request: its blocks may be reused
            proto::vlog("driver", "%s: timed out; cancelled (%s)", what,
                        cancelled.found() ? "it was still queued or running" : "it had finished");
            return callFailed(attempt, result.error(), timeout, what);
        }
    }
    cancelsFailed_++;
    quarantine(keep);  // the firmware may still write into them
    return callFailed(attempt, result.error(), timeout, what);
}

Status Connection::channelFailed(Attempt& attempt, const proto::Error& e, const char* what,
                                 std::vector<WindowBlock>& keep) {
    burstChannelFailures_++;
    quarantine(keep);  // whether the firmware still works on the request is unknown
    attempt.lost = rpc()->connected() ? Attempt::Loss::kChannel : Attempt::Loss::kDisconnected;
    proto::vlog("driver", "%s: the burst's channel broke: %s", what, e.message.c_str());
    return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                std::string(what) + ": the burst's channel broke (" + e.message + ")");
}

Result<std::shared_ptr<proto::RpcClient>> Connection::openBurstChannel(Attempt& attempt) {
    if (!options_.burstChannels || !hello_.burst_channels()) return std::shared_ptr<proto::RpcClient>();
    const char* what = "burst: opening its channel";
    proto::FmqOptions fmq;
    fmq.pollWindow = options_.burstPollWindow;
    auto end = proto::createFmq(fmq, "burst channel to the firmware");
    if (!end) return generalFailure(std::string(what) + ": " + end.error().message);
    const int fds[2] = {end->memfd.get(), end->doorbell.get()};
    proto::OpenBurstChannelRequest request;
    proto::OpenBurstChannelReply reply;
    NPU_TRY(call(attempt, proto::METHOD_OPEN_BURST_CHANNEL, request, reply, options_.callTimeout, what, fds));
    NPU_TRY(checkStatus(reply.status(), what));
    auto client = proto::RpcClient::create(
        std::move(end->transport), hello_.max_payload_bytes() != 0 ? hello_.max_payload_bytes() : 1u << 20);
    if (!client) return generalFailure(std::string(what) + ": " + client.error().message);
    burstChannelsOpened_++;
    proto::vlog("driver", "burst: channel %u open", reply.channel_id());
    return std::shared_ptr<proto::RpcClient>(std::move(*client));
}

Status Connection::call(proto::Method method, const google::protobuf::Message& request,
                        google::protobuf::Message& reply, std::chrono::milliseconds timeout,
                        const char* what) {
    Attempt attempt = enter();
    Status s = call(attempt, method, request, reply, timeout, what);
    leave();
    return s;
}

Status Connection::pipeline(Attempt& attempt, size_t calls, proto::Method method, const char* what,
                            const RequestFn& request, const ReplyFn& reply, const DoneFn& done,
                            const FieldFn& field) {
    const auto timeout = options_.callTimeout;
    const std::shared_ptr<proto::RpcClient> client = rpc();  // one client for the whole transfer
    NPU_TRY(acquireCalls(kWindowDepth, timeout, what));
    std::deque<proto::RpcClient::InFlight> inFlight;  // abandoned if we return early
    size_t finished = 0;
    struct Release {
        Connection* c;
        ~Release() { c->releaseCalls(kWindowDepth); }
    } release{this};
    auto finishOne = [&]() -> Status {
        auto r = client->finish(inFlight.front(), timeout);
        inFlight.pop_front();
        if (!r) return callFailed(attempt, r.error(), timeout, what);
        heard();
        return done(finished++);
    };
    for (size_t i = 0; i < calls; ++i) {
        if (inFlight.size() == kWindowDepth) NPU_TRY(finishOne());
        auto started =
            client->start(method, request(i), reply(i), {}, field ? field(i) : proto::BytesField{});
        if (!started) return callFailed(attempt, started.error(), timeout, what);
        inFlight.push_back(std::move(*started));
    }
    while (!inFlight.empty()) NPU_TRY(finishOne());
    return {};
}

// The messages are per thread and kept: a reply's data keeps its megabyte of capacity between
// chunks (fresh memory costs a page fault per 4 KiB, more than the copy on an emulated CPU). A
// request is serialised when its call starts, so one serves every chunk. WINDOW_WRITE's data goes
// from the window straight into the frame (proto::BytesField), not through the message.
Status Connection::pushWindow(Attempt& attempt, uint64_t addr, uint64_t bytes, const char* what) {
    if (windowShared_) return {};
    const uint64_t chunk = windowChunkBytes(hello_);
    thread_local proto::WindowWriteRequest request;
    thread_local proto::WindowWriteReply replies[kWindowDepth];
    auto fill = [&](size_t i) -> const google::protobuf::Message& {
        request.set_addr(addr + i * chunk);
        return request;
    };
    auto data = [&](size_t i) {
        const uint64_t at = addr + i * chunk;
        return proto::BytesField{proto::WindowWriteRequest::kDataFieldNumber,
                                 {window_->hostPointer(at), std::min(chunk, addr + bytes - at)}};
    };
    return pipeline(
        attempt, (bytes + chunk - 1) / chunk, proto::METHOD_WINDOW_WRITE, what, fill,
        [&](size_t i) -> google::protobuf::Message& { return replies[i % kWindowDepth]; },
        [&](size_t i) { return checkStatus(replies[i % kWindowDepth].status(), what); }, data);
}

Status Connection::pullWindow(Attempt& attempt, uint64_t addr, uint64_t bytes, const char* what) {
    if (windowShared_) return {};
    const uint64_t chunk = windowChunkBytes(hello_);
    thread_local proto::WindowReadRequest request;
    thread_local proto::WindowReadReply replies[kWindowDepth];
    auto length = [&](size_t i) { return std::min(chunk, bytes - i * chunk); };
    auto fill = [&](size_t i) -> const google::protobuf::Message& {
        request.set_addr(addr + i * chunk);
        request.set_length(static_cast<uint32_t>(length(i)));
        return request;
    };
    auto done = [&](size_t i) -> Status {
        const proto::WindowReadReply& reply = replies[i % kWindowDepth];
        NPU_TRY(checkStatus(reply.status(), what));
        const uint64_t at = addr + i * chunk, n = length(i);
        if (reply.data().size() != n) {
            return generalFailure(std::string(what) + ": window read at " + std::to_string(at) +
                                  " returned " + std::to_string(reply.data().size()) + " of " +
                                  std::to_string(n) + " bytes");
        }
        std::memcpy(window_->hostPointer(at), reply.data().data(), n);
        return {};
    };
    return pipeline(
        attempt, (bytes + chunk - 1) / chunk, proto::METHOD_WINDOW_READ, what, fill,
        [&](size_t i) -> google::protobuf::Message& { return replies[i % kWindowDepth]; }, done);
}

// The version handshake on a new RPC client; maps the window (or makes a local one) into *window.
Status Connection::handshake(proto::RpcClient& rpc, std::unique_ptr<HostWindow>* window,
                             const std::string& peer) {
    proto::HelloRequest hello;
    hello.set_major(options_.protocolMajor);
    hello.set_minor(kProtocolMinor);
    hello.set_host_version(std::string("npu-shim ") + kShimVersion);
    // Back after a restart: ask for the window we had, so the device addresses held stay valid.
    if (window_) hello.set_window_addr(window_->base());
    std::vector<proto::UniqueFd> fds;
    auto r = rpc.call(proto::METHOD_HELLO, hello, hello_, options_.callTimeout, {}, &fds);
    if (!r) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "handshake with the firmware on " + peer + " failed: " + r.error().message);
    }
    if (hello_.status().code() != 0) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "firmware on " + peer + " refused the handshake: " + hello_.status().message());
    }
    if (hello_.major() != options_.protocolMajor) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "firmware on " + peer + " speaks protocol " + std::to_string(hello_.major()) + "." +
                        std::to_string(hello_.minor()) + ", this driver speaks " +
                        std::to_string(options_.protocolMajor) + "." + std::to_string(kProtocolMinor));
    }
    callsLimit_.store(callsLimitFor(hello_.queue_depth()));
    if (!windowShared_) {  // USB: a local window whose bytes travel in WINDOW_WRITE / WINDOW_READ calls
        *window = NPU_TRY(HostWindow::local(hello_.host_window_addr(), hello_.host_window_bytes()));
        return {};
    }
    if (fds.empty()) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "firmware on " + peer + " did not share its device memory");
    }
    *window = NPU_TRY(HostWindow::map(fds.front().get(), hello_.host_window_addr(),
                                      hello_.host_window_bytes(), hello_.window_fd_is_window()));
    return {};
}

Result<std::shared_ptr<Connection>> Connection::open(std::unique_ptr<proto::Transport> transport,
                                                     TransportFactory restart, const ShimOptions& options) {
    const std::string peer = transport->describe();
    const bool shared = transport->sharesMemory();
    transport->setReadPollWindow(options.replyPollWindow);
    auto rpc = proto::RpcClient::create(std::move(transport));
    if (!rpc) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "cannot start the RPC client on " + peer + ": " + rpc.error().message);
    }
    std::shared_ptr<Connection> c(new Connection());
    c->options_ = options;
    c->restart_ = std::move(restart);
    c->rpc_ = std::move(*rpc);
    c->windowShared_ = shared;
    c->pools_ = std::make_unique<PoolMaps>(*c);
    NPU_TRY(c->handshake(*c->rpc_, &c->window_, peer));
    if (options.recovery.watchdogPeriod.count() > 0)
        c->watchdog_ = std::thread([c = c.get()] { c->watchdog(); });
    return c;
}

}  // namespace npu::shim
