#include "connection.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <thread>

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

Status checkStatus(const proto::Status& status, const char* what) {
    if (status.code() == 0) return {};
    auto code = static_cast<hal::ErrorStatus>(status.code());
    if (status.code() > static_cast<uint32_t>(hal::ErrorStatus::RESOURCE_EXHAUSTED_PERSISTENT)) {
        code = hal::ErrorStatus::GENERAL_FAILURE;
    }
    return fail(code, std::string(what) + ": " + status.message());
}

Status Connection::call(proto::Method method, const google::protobuf::Message& request,
                        google::protobuf::Message& reply, std::chrono::milliseconds timeout,
                        const char* what) {
    auto result = rpc_->call(method, request, reply, timeout);
    if (result) return {};
    return mapError(result.error(), timeout, what);
}

Status Connection::mapError(const proto::Error& e, std::chrono::milliseconds timeout, const char* what) {
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

Status Connection::pipeline(size_t calls, proto::Method method, const char* what, const RequestFn& request,
                            const ReplyFn& reply, const DoneFn& done) {
    const auto timeout = options_.callTimeout;
    std::deque<proto::RpcClient::InFlight> inFlight;  // abandoned if we return early
    size_t finished = 0;
    auto finishOne = [&]() -> Status {
        auto r = rpc_->finish(inFlight.front(), timeout);
        inFlight.pop_front();
        if (!r) return mapError(r.error(), timeout, what);
        return done(finished++);
    };
    for (size_t i = 0; i < calls; ++i) {
        if (inFlight.size() == kWindowDepth) NPU_TRY(finishOne());
        auto started = rpc_->start(method, request(i), reply(i));
        if (!started) return mapError(started.error(), timeout, what);
        inFlight.push_back(std::move(*started));
    }
    while (!inFlight.empty()) NPU_TRY(finishOne());
    return {};
}

// The messages are per thread and kept: their data keeps its megabyte of capacity between chunks
// (fresh memory costs a page fault per 4 KiB, more than the copy on an emulated CPU). A request
// is serialised when its call starts, so one serves every chunk.
Status Connection::pushWindow(uint64_t addr, uint64_t bytes, const char* what) {
    if (windowShared_) return {};
    const uint64_t chunk = windowChunkBytes(hello_);
    thread_local proto::WindowWriteRequest request;
    thread_local proto::WindowWriteReply replies[kWindowDepth];
    auto fill = [&](size_t i) -> const google::protobuf::Message& {
        const uint64_t at = addr + i * chunk;
        request.set_addr(at);
        request.mutable_data()->assign(reinterpret_cast<const char*>(window_->hostPointer(at)),
                                       std::min(chunk, addr + bytes - at));
        return request;
    };
    return pipeline((bytes + chunk - 1) / chunk, proto::METHOD_WINDOW_WRITE, what, fill,
                    [&](size_t i) -> google::protobuf::Message& { return replies[i % kWindowDepth]; },
                    [&](size_t i) { return checkStatus(replies[i % kWindowDepth].status(), what); });
}

Status Connection::pullWindow(uint64_t addr, uint64_t bytes, const char* what) {
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
    return pipeline((bytes + chunk - 1) / chunk, proto::METHOD_WINDOW_READ, what, fill,
                    [&](size_t i) -> google::protobuf::Message& { return replies[i % kWindowDepth]; }, done);
}

Result<std::shared_ptr<Connection>> Connection::open(std::unique_ptr<proto::Transport> transport,
                                                     const ShimOptions& options) {
    const std::string peer = transport->describe();
    const bool shared = transport->sharesMemory();
    auto rpc = proto::RpcClient::create(std::move(transport));
    if (!rpc) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "cannot start the RPC client on " + peer + ": " + rpc.error().message);
    }
    std::shared_ptr<Connection> c(new Connection());
    c->options_ = options;
    c->rpc_ = std::move(*rpc);

    proto::HelloRequest hello;
    hello.set_major(options.protocolMajor);
    hello.set_minor(kProtocolMinor);
    hello.set_host_version(std::string("npu-shim ") + kShimVersion);
    std::vector<proto::UniqueFd> fds;
    auto r = c->rpc_->call(proto::METHOD_HELLO, hello, c->hello_, options.callTimeout, {}, &fds);
    if (!r) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "handshake with the firmware on " + peer + " failed: " + r.error().message);
    }
    if (c->hello_.status().code() != 0) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "firmware on " + peer + " refused the handshake: " + c->hello_.status().message());
    }
    if (c->hello_.major() != options.protocolMajor) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "firmware on " + peer + " speaks protocol " + std::to_string(c->hello_.major()) + "." +
                        std::to_string(c->hello_.minor()) + ", this driver speaks " +
                        std::to_string(options.protocolMajor) + "." + std::to_string(kProtocolMinor));
    }
    if (!shared) {  // USB: a local window whose bytes travel in WINDOW_WRITE / WINDOW_READ calls
        auto window = HostWindow::local(c->hello_.host_window_addr(), c->hello_.host_window_bytes());
        if (!window) return std::unexpected(window.error());
        c->window_ = std::move(*window);
        c->windowShared_ = false;
        return c;
    }
    if (fds.empty()) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "firmware on " + peer + " did not share its device memory");
    }
    auto window =
        HostWindow::map(fds.front().get(), c->hello_.host_window_addr(), c->hello_.host_window_bytes());
    if (!window) return std::unexpected(window.error());
    c->window_ = std::move(*window);
    return c;
}

}  // namespace npu::shim
