#pragma once
// One connection to the firmware: the RPC client, the mapped host window and what the
// handshake told us. Shared by the device and every prepared model made from it, so a prepared
// model keeps the connection alive until it is released.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "host_window.h"
#include "npu.pb.h"
#include "npu/hal/result.h"
#include "npu/protocol/rpc_client.h"
#include "npu/shim/npu_device.h"
#include "pool_maps.h"

namespace npu::shim {

// A daemon this process started; stopped (SIGTERM, then SIGKILL) when destroyed.
class DaemonProcess {
public:
    explicit DaemonProcess(pid_t pid) : pid_(pid) {}
    ~DaemonProcess();
    pid_t pid() const { return pid_; }
    void forget() { pid_ = 0; }  // the process was reaped already
    // Reaps the process if it has exited (a daemon that crashed); true then.
    bool reapIfExited();
    // SIGKILL and reap (a daemon stuck through a Reset); false when it had exited already.
    bool killNow();

private:
    pid_t pid_;
};

// One try of an operation against the firmware as it is at `epoch` (Connection::runRecovering).
// `lost` says why the try failed when the firmware, not the request, was at fault.
struct Attempt {
    // kDataFault: the NPU may have corrupted the request's data; it is failed, never replayed.
    // kChannel: a burst's channel broke while the connection stayed up; the execution is
    // replayed (on a new channel or the connection) with nothing recovered.
    enum class Loss { kNone, kTimeout, kDisconnected, kNpuHang, kDataFault, kChannel };
    uint64_t epoch = 0;
    Loss lost = Loss::kNone;
};

class Connection {
public:
    // `restart` (may be empty) makes a new transport to a fresh firmware host when the current
    // one is lost; without it recovery stops at the Reset call.
    static Result<std::shared_ptr<Connection>> open(std::unique_ptr<proto::Transport> transport,
                                                    TransportFactory restart, const ShimOptions& options);
    ~Connection();

    // One RPC on the current firmware; maps transport and remote failures to HAL errors and
    // records a lost firmware in `attempt`. `what` names the call in error messages.
    // `fds` travel with the request (MapPool's pool).
    Status call(Attempt& attempt, proto::Method method, const google::protobuf::Message& request,
                google::protobuf::Message& reply, std::chrono::milliseconds timeout, const char* what,
                std::span<const int> fds = {});
    // call() for a request whose window blocks the firmware uses (an execution): when it times
    // out, Cancel is sent for it. The firmware answers a Cancel only once the target is no
    // longer queued or running, so a CancelReply (found or not) means the blocks are free again;
    // without one they are moved from `keep` into quarantine (freed only once the firmware is
    // reset or restarted), never handed out while the firmware may still write into them.
    // `via`: a burst's channel to send it on instead of the connection (Cancel goes the same way);
    // when the channel breaks, `keep` is quarantined and the attempt marked Loss::kChannel.
    Status callCancellable(Attempt& attempt, proto::Method method, const google::protobuf::Message& request,
                           google::protobuf::Message& reply, std::chrono::milliseconds timeout,
                           const char* what, std::vector<WindowBlock>& keep,
                           const std::shared_ptr<proto::RpcClient>& via = nullptr);
    // A new burst channel (docs/execution.md, "Bursts"): a fast message queue whose fds go to the
    // firmware with OpenBurstChannel, and an RPC client over it. Null when the firmware offers
    // none or the options turn them off; an error when it refused (a lost connection marks
    // `attempt`).
    Result<std::shared_ptr<proto::RpcClient>> openBurstChannel(Attempt& attempt);
    // The same outside any operation (no recovery): release, counters, fault injection.
    Status call(proto::Method method, const google::protobuf::Message& request,
                google::protobuf::Message& reply, std::chrono::milliseconds timeout, const char* what);

    // Runs `attempt` and, when it failed because the firmware was lost (a call timed out or the
    // connection dropped, the NPU hung, or another caller reset the firmware meanwhile), recovers
    // the firmware (ping -> Reset -> restart, restoring prepared models) and replays it, up to
    // options.recovery.maxReplays times. `keep` holds the window blocks the firmware may use:
    // they are freed by the caller only once the firmware was confirmed done, reset or
    // restarted; after a failed recovery they are quarantined instead.
    Status runRecovering(const char* what, std::vector<WindowBlock>& keep,
                         const std::function<Status(Attempt&)>& attempt);

    // Prepared models, restored after a reset or restart by `restore` (which prepares the model
    // again on the recovered firmware and returns its new handle). Registration fails (and the
    // attempt is replayed) when the firmware was reset since the attempt began.
    using RestoreFn = std::function<Result<uint32_t>(Connection&, Attempt&)>;
    Result<uint64_t> registerModel(const Attempt& attempt, uint32_t handle, RestoreFn restore);
    // The model's handle on the firmware as it is now; a model not restored yet marks `attempt`
    // lost, so that it is recovered and replayed.
    Result<uint32_t> modelHandle(Attempt& attempt, uint64_t id);
    void releaseModel(uint64_t id);

    NpuCounters counters() const;
    void countDataFault() { dataFaults_++; }

    HostWindow& window() { return *window_; }
    // Client pools the firmware maps by fd (zero copy, pool_maps.h).
    PoolMaps& pools() { return *pools_; }
    // Transports without shared memory (USB, docs/usb.md): the host window is local memory and
    // these move [addr, addr + bytes) to / from the device's copy in chunked WINDOW_WRITE /
    // WINDOW_READ calls. No-ops where the window is shared.
    Status pushWindow(Attempt& attempt, uint64_t addr, uint64_t bytes, const char* what);
    Status pullWindow(Attempt& attempt, uint64_t addr, uint64_t bytes, const char* what);
    bool windowShared() const { return windowShared_; }
    const proto::HelloReply& hello() const { return hello_; }
    const ShimOptions& options() const { return options_; }
    // Kills the firmware host process this client started when it answers no Reset while its
    // connection is up (stuck), so that the restart starts a new one; false: none of ours runs.
    using HostKiller = std::function<bool()>;
    void setHostKiller(HostKiller kill) { killHost_ = std::move(kill); }

    // Window calls in flight at once: while the device serves one chunk, the next is on its way
    // (USB: the link, the host and the device work at the same time instead of in turn).
    static constexpr size_t kWindowDepth = 2;
    // Calls of operations in flight at once on one connection: below the firmware's request
    // queue (HelloReply.queue_depth, 16 by default), leaving kReservedCalls places for the
    // watchdog's and recovery's calls, so that many asynchronous executions wait here instead of
    // being refused with "queue full". At most kCallsInFlight, at least kWindowDepth.
    static constexpr uint32_t kCallsInFlight = 12;
    static constexpr uint32_t kReservedCalls = 4;
    // The bound for a firmware whose queue holds `queueDepth` requests (0: unknown, 16).
    static uint32_t callsLimitFor(uint32_t queueDepth);

private:
    struct ModelEntry {
        uint32_t handle = 0;
        RestoreFn restore;
        std::string lost;  // why it could not be restored (empty: usable)
    };

    Connection() = default;
    Status handshake(proto::RpcClient& rpc, std::unique_ptr<HostWindow>* window, const std::string& peer);
    Attempt enter();
    void leave();
    // Escalates for a loss seen at `epoch`; OK when the firmware is usable again (or was
    // recovered by someone else meanwhile).
    Status recover(uint64_t epoch, Attempt::Loss loss);
    // The answer to a ping, or nothing when it was not answered in time.
    std::optional<proto::PingReply> ping();
    // After a call timed out on a connection that is up: is the firmware alive and done with the
    // call (kServed), alive and working (kWorking), silent, or alive but stuck: an item ran without
    // progress across options.recovery.stallWindow (docs/reliability.md)?
    enum class Liveness { kServed, kWorking, kSilent, kStuck };
    Liveness watchProgress();
    Status resetFirmware();
    Status restartFirmware();
    // Prepares again every model without a handle; false when the firmware was lost meanwhile.
    bool restoreModels();
    void beginRecovery();
    void forgetHandles();
    void endRecovery();
    void watchdog();
    void quarantine(std::vector<WindowBlock>& blocks);

    std::shared_ptr<proto::RpcClient> rpc() const;
    // Takes `n` of the kCallsInFlight places, waiting up to `timeout` for them; release gives
    // them back.
    Status acquireCalls(uint32_t n, std::chrono::milliseconds timeout, const char* what);
    void releaseCalls(uint32_t n);
    void heard();  // the firmware answered: the watchdog need not ping yet
    // A failed call: a timeout or a dropped connection marks the attempt lost; mapped to a Status.
    Status callFailed(Attempt& attempt, const proto::Error& e, std::chrono::milliseconds timeout,
                      const char* what);
    // A burst channel's call that found its link gone (Loss::kChannel while the connection is up).
    Status channelFailed(Attempt& attempt, const proto::Error& e, const char* what,
                         std::vector<WindowBlock>& keep);
    using RequestFn = std::function<const google::protobuf::Message&(size_t call)>;
    using ReplyFn = std::function<google::protobuf::Message&(size_t call)>;
    using DoneFn = std::function<Status(size_t call)>;
    using FieldFn = std::function<proto::BytesField(size_t call)>;
    // `calls` calls of `method`, up to kWindowDepth in flight on one RPC client: request(i) is
    // sent (with field(i) when given: bytes sent from where they lie), and once its reply(i) is
    // in, done(i) checks it; calls finish in order.
    Status pipeline(Attempt& attempt, size_t calls, proto::Method method, const char* what,
                    const RequestFn& request, const ReplyFn& reply, const DoneFn& done,
                    const FieldFn& field = {});

    ShimOptions options_;
    TransportFactory restart_;  // before rpc_: the daemons it holds outlive the connection to them
    HostKiller killHost_;
    mutable std::mutex rpcMutex_;
    std::shared_ptr<proto::RpcClient> rpc_;
    std::unique_ptr<HostWindow> window_;
    std::unique_ptr<PoolMaps> pools_;
    proto::HelloReply hello_;
    bool windowShared_ = true;

    // The gate: operations run while no recovery is in progress; a reset or restart bumps the
    // epoch so that an operation begun before it knows to replay.
    std::mutex gateMutex_;
    std::condition_variable gateChanged_;
    bool recovering_ = false;
    uint32_t active_ = 0;
    uint64_t epoch_ = 1;
    std::chrono::steady_clock::time_point lastHeard_ = std::chrono::steady_clock::now();
    std::mutex recoverMutex_;                           // one recovery at a time
    uint32_t callsInFlight_ = 0;                        // under gateMutex_
    std::atomic<uint32_t> callsLimit_{kCallsInFlight};  // callsLimitFor(the last Hello's queue_depth)
    std::condition_variable callsChanged_;

    std::mutex modelsMutex_;
    uint64_t nextModelId_ = 1;
    std::map<uint64_t, ModelEntry> models_;
    std::vector<WindowBlock> quarantined_;  // blocks a lost firmware may still use

    std::atomic<uint64_t> cancels_{0}, cancelsFailed_{0};
    std::atomic<uint64_t> pings_{0}, pingFailures_{0}, stalls_{0}, callTimeouts_{0}, disconnects_{0},
        resets_{0}, restarts_{0}, modelsRestored_{0}, modelsLost_{0}, replayed_{0}, failed_{0}, npuHangs_{0},
        dataFaults_{0}, burstChannelsOpened_{0}, burstChannelFailures_{0};

    bool stopWatchdog_ = false;             // under gateMutex_
    std::condition_variable watchdogWake_;  // only the destructor wakes it early
    std::thread watchdog_;
};

// The HAL device over an open connection (npu_device.cpp).
std::shared_ptr<hal::IDevice> makeNpuDevice(std::shared_ptr<Connection> connection);

// A transport or remote failure of a call that waited up to `timeout`, as a HAL error.
Status mapRpcError(const proto::Error& e, std::chrono::milliseconds timeout, const char* what);

// Turns a reply's Status into a Result, prefixing `what`.
Status checkStatus(const proto::Status& status, const char* what);

}  // namespace npu::shim
