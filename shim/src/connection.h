#pragma once
// One connection to the firmware: the RPC client, the mapped host window and what the
// handshake told us. Shared by the device and every prepared model made from it, so a prepared
// model keeps the connection alive until it is released.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "host_window.h"
#include "npu.pb.h"
#include "npu/hal/result.h"
#include "npu/protocol/rpc_client.h"
#include "npu/shim/npu_device.h"

namespace npu::shim {

// A daemon this process started; stopped (SIGTERM, then SIGKILL) when destroyed.
class DaemonProcess {
public:
    explicit DaemonProcess(pid_t pid) : pid_(pid) {}
    ~DaemonProcess();
    pid_t pid() const { return pid_; }
    void forget() { pid_ = 0; }  // the process was reaped already

private:
    pid_t pid_;
};

class Connection {
public:
    static Result<std::shared_ptr<Connection>> open(std::unique_ptr<proto::Transport> transport,
                                                    const ShimOptions& options);

    // One RPC; maps transport and remote failures to HAL errors. `what` names the call in
    // error messages.
    Status call(proto::Method method, const google::protobuf::Message& request,
                google::protobuf::Message& reply, std::chrono::milliseconds timeout, const char* what);

    HostWindow& window() { return *window_; }
    // Transports without shared memory (USB, docs/usb.md): the host window is local memory and
    // these move [addr, addr + bytes) to / from the device's copy in chunked WINDOW_WRITE /
    // WINDOW_READ calls. No-ops where the window is shared.
    Status pushWindow(uint64_t addr, uint64_t bytes, const char* what);
    Status pullWindow(uint64_t addr, uint64_t bytes, const char* what);
    bool windowShared() const { return windowShared_; }
    const proto::HelloReply& hello() const { return hello_; }
    const ShimOptions& options() const { return options_; }
    void adoptDaemon(std::unique_ptr<DaemonProcess> daemon) { daemon_ = std::move(daemon); }

    // Window calls in flight at once: while the device serves one chunk, the next is on its way
    // (USB: the link, the host and the device work at the same time instead of in turn).
    static constexpr size_t kWindowDepth = 2;

private:
    Connection() = default;
    Status mapError(const proto::Error& e, std::chrono::milliseconds timeout, const char* what);
    using RequestFn = std::function<const google::protobuf::Message&(size_t call)>;
    using ReplyFn = std::function<google::protobuf::Message&(size_t call)>;
    using DoneFn = std::function<Status(size_t call)>;
    // `calls` calls of `method`, up to kWindowDepth in flight: request(i) is sent, and once its
    // reply(i) is in, done(i) checks it; calls finish in order.
    Status pipeline(size_t calls, proto::Method method, const char* what, const RequestFn& request,
                    const ReplyFn& reply, const DoneFn& done);
    std::unique_ptr<DaemonProcess> daemon_;  // declared first: destroyed after rpc_ is closed
    ShimOptions options_;
    std::unique_ptr<proto::RpcClient> rpc_;
    std::unique_ptr<HostWindow> window_;
    proto::HelloReply hello_;
    bool windowShared_ = true;
};

// The HAL device over an open connection (npu_device.cpp).
std::shared_ptr<hal::IDevice> makeNpuDevice(std::shared_ptr<Connection> connection);

// Turns a reply's Status into a Result, prefixing `what`.
Status checkStatus(const proto::Status& status, const char* what);

}  // namespace npu::shim
