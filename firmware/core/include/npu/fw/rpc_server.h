#pragma once
// The firmware end of the RPC channel: frames in (onBytes), requests queued in a bounded queue,
// one request decoded, dispatched and answered per poll(). firmware/core rules: no OS headers,
// no exceptions, no RTTI, no heap; every buffer comes from the Arena at construction or, for
// one request's temporaries, between a mark and a release.
//
// Not thread-safe: the platform calls onBytes() and poll() from one loop (or serialises them).

#include <cstddef>
#include <cstdint>

#include "npu.npb.h"
#include "npu/fw/arena.h"
#include "npu/fw/runtime.h"
#include "npu/protocol/frame.h"

namespace npu::fw {

inline constexpr uint32_t kProtocolMajor = 1;
// Minor 1: Operand.value (CONSTANT_COPY values inside the model, npu/protocol/constant_values.h).
inline constexpr uint32_t kProtocolMinor = 1;

// Where frames go: the platform's UART, socket or in-process channel. `bytes` is one complete
// frame (header + payload); `method` and `flags` repeat the header's so that the platform can
// attach the device-DRAM fd to the METHOD_HELLO response (kFlagResponse without kFlagError).
// Returns false if the frame could not be sent (the server counts it; nothing is retried).
class FrameSink {
public:
    virtual bool writeFrame(const uint8_t* bytes, size_t length, uint32_t method, uint16_t flags) = 0;

protected:
    ~FrameSink() = default;
};

// What the server asks of the firmware, one method per call. RuntimeService implements it over
// Runtime; tests use a fake. Statuses are returned as FwStatus (HAL ErrorStatus + message) and
// reach the host in the reply's Status; `scratch` is released by the server after the call.
class Service {
public:
    virtual void capabilities(npu_proto_CapabilitiesReply* reply) = 0;
    // `scratch`: the arena prepareModel would compile in (claimed operations must fit it).
    virtual FwStatus supportedOperations(const ModelDesc& model, bool* supported, Arena& scratch) = 0;
    // Why operation `op` is not supported, after supportedOperations filled `supported` (same
    // `scratch`): sent in SupportedOperationsReply.unsupported. OK: no reason known (none sent).
    virtual FwStatus unsupportedReason(const ModelDesc& model, const bool* supported, uint32_t op,
                                       Arena& scratch) {
        (void)model, (void)supported, (void)op, (void)scratch;
        return FwStatus::okStatus();
    }
    virtual FwStatus prepareModel(const ModelDesc& model, const npu_proto_PrepareModelRequest& request,
                                  Arena& scratch, BlobInfo* info) = 0;
    virtual FwStatus prepareFromCache(const npu_proto_PrepareFromCacheRequest& request, Arena& scratch,
                                      BlobInfo* info) = 0;
    virtual FwStatus fetchBlob(const npu_proto_FetchBlobRequest& request,
                               npu_proto_FetchBlobReply* reply) = 0;
    virtual FwStatus releaseModel(uint32_t handle) = 0;
    // `inputs` and `outputs` may be rewritten (driver-managed buffers bound to their memory).
    virtual FwStatus execute(const npu_proto_ExecuteRequest& request, IoArg* inputs, uint32_t inputCount,
                             IoArg* outputs, uint32_t outputCount, ExecResult* result) = 0;
    virtual FwStatus allocateBuffer(const npu_proto_AllocateBufferRequest& request, uint32_t* token) = 0;
    virtual FwStatus releaseBuffer(uint32_t token) = 0;
    virtual FwStatus bufferCopy(const npu_proto_BufferCopyRequest& request) = 0;
    virtual FwStatus reset() = 0;
    // Appends counters to reply->counters (reply->counters_count entries used so far).
    virtual void counters(npu_proto_CountersReply* reply) = 0;
    virtual uint64_t uptimeUs() = 0;

protected:
    ~Service() = default;
};

// Service over the firmware Runtime.
class RuntimeService final : public Service {
public:
    RuntimeService(Runtime& runtime, Platform& platform, uint64_t hostWindowAddr, uint64_t hostWindowBytes)
        : runtime_(runtime),
          platform_(platform),
          windowAddr_(hostWindowAddr),
          windowBytes_(hostWindowBytes),
          startUs_(platform.nowUs()) {}

    void capabilities(npu_proto_CapabilitiesReply* reply) override;
    FwStatus supportedOperations(const ModelDesc& model, bool* supported, Arena& scratch) override;
    FwStatus unsupportedReason(const ModelDesc& model, const bool* supported, uint32_t op,
                               Arena& scratch) override;
    FwStatus prepareModel(const ModelDesc& model, const npu_proto_PrepareModelRequest& request,
                          Arena& scratch, BlobInfo* info) override;
    FwStatus prepareFromCache(const npu_proto_PrepareFromCacheRequest& request, Arena& scratch,
                              BlobInfo* info) override;
    FwStatus fetchBlob(const npu_proto_FetchBlobRequest& request, npu_proto_FetchBlobReply* reply) override;
    FwStatus releaseModel(uint32_t handle) override;
    FwStatus execute(const npu_proto_ExecuteRequest& request, IoArg* inputs, uint32_t inputCount,
                     IoArg* outputs, uint32_t outputCount, ExecResult* result) override;
    FwStatus allocateBuffer(const npu_proto_AllocateBufferRequest& request, uint32_t* token) override;
    FwStatus releaseBuffer(uint32_t token) override;
    FwStatus bufferCopy(const npu_proto_BufferCopyRequest& request) override;
    FwStatus reset() override;
    void counters(npu_proto_CountersReply* reply) override;
    uint64_t uptimeUs() override { return platform_.nowUs() - startUs_; }

    // The client whose request is being served: owner of the buffers it allocates, and the
    // only one that finds them (0 while one firmware serves one client).
    void setSession(uint32_t session) { session_ = session; }
    uint32_t session() const { return session_; }

private:
    // True iff [addr, addr + length) lies inside device DRAM.
    bool inDram(uint64_t addr, uint64_t length) const;

    Runtime& runtime_;
    Platform& platform_;
    uint64_t windowAddr_;
    uint64_t windowBytes_;
    uint64_t startUs_;
    uint32_t session_ = 0;
};

// Appends one counter to a GetCounters reply; false (and nothing added) when the reply is full.
bool appendCounter(npu_proto_CountersReply* reply, const char* name, uint64_t value);

// Counters a platform adds to GetCounters (interrupts, bridge round trips, its own memory).
class CounterSource {
public:
    virtual void counters(npu_proto_CountersReply* reply) = 0;

protected:
    ~CounterSource() = default;
};

// Fault injection a platform offers to reliability tests (METHOD_INJECT_FAULTS); a platform
// without it leaves RpcServerConfig::faultInjector null and the call is refused.
class FaultInjector {
public:
    virtual FwStatus injectFaults(const npu_proto_InjectFaultsRequest& request) = 0;

protected:
    ~FaultInjector() = default;
};

// The fds that come with a session's bytes, on a platform that passes fds (the host). A request
// of a method that carries fds (MapPool one, OpenBurstChannel two) binds them to its call id when
// its first frame arrives; its handler takes them by that id (PoolMapper::mapPool,
// BurstChannelOpener::openBurstChannel); the server releases what is left when the call ends,
// answered or refused. A request refused before its handler runs (queue full, cancelled,
// undecodable, a bad frame) so takes its fds with it: they never become the next request's.
class RequestFds {
public:
    virtual void bind(uint64_t callId, uint32_t count) = 0;  // the `count` oldest fds received
    virtual void release(uint64_t callId) = 0;               // closes what the call left

protected:
    ~RequestFds() = default;
};

// Client memory passed by fd (pools, METHOD_MAP_POOL): the platform maps it into the session's
// range of device addresses, so the NPU reads and writes it in place (no copy). A platform
// without fds (QEMU, USB) leaves RpcServerConfig::pools null and MapPool is refused; the host
// then stages the pool's bytes in its window. docs/execution.md ("Memory model").
class PoolMapper {
public:
    // Maps the fd that came with call `callId` (RequestFds); fills pool_id, addr, writable,
    // sealed. INVALID_ARGUMENT for no fd, an fd that is not a memfd or regular file, a range
    // beyond the file, an fd opened write-only.
    virtual FwStatus mapPool(uint64_t callId, const npu_proto_MapPoolRequest& request,
                             npu_proto_MapPoolReply* reply) = 0;
    virtual FwStatus unmapPool(uint32_t poolId) = 0;
    // Where [addr, addr + length) lies. Outside every pool range of the session: OK with
    // *inPool false. Inside one of its pools and usable (writable when `write`; the file still
    // as long as mapped): OK with *inPool true. Anything else is INVALID_ARGUMENT naming the pool.
    virtual FwStatus checkPoolRange(uint64_t addr, uint64_t length, bool write, bool* inPool) = 0;
    virtual void unmapAll() = 0;  // the session ends (a Reset keeps pools, like the window)
    virtual uint32_t poolCount() const = 0;
    virtual uint64_t poolBytes() const = 0;
    // After a use: INVALID_ARGUMENT (once per pool) when a pool's file was truncated under the
    // mapping during it (the platform caught the fault; the pool now reads zeros).
    virtual FwStatus takeFault() { return FwStatus::okStatus(); }

protected:
    ~PoolMapper() = default;
};

// What a platform with an item thread (the firmware host) knows of the work in progress. With
// RpcServerConfig::monitor set, Ping is answered on arrival, ahead of queued work and while an
// item runs, with what work() says; a Reset tells resetArriving() on arrival (before it is queued
// behind a running item), so a platform can free an item stuck on its own account.
struct WorkState {
    bool itemRunning = false;
    uint64_t itemRunningUs = 0;
    uint64_t progress = 0;     // NPU operations, compile steps and items completed; only grows
    bool itemIsMine = false;   // the running item is this client's (on this server or another of its own)
    uint32_t otherQueued = 0;  // this client's requests queued on its other servers (burst channels)
};
class WorkMonitor {
public:
    virtual WorkState work() = 0;
    virtual void resetArriving() = 0;

protected:
    ~WorkMonitor() = default;
};

// Burst channels (METHOD_OPEN_BURST_CHANNEL, docs/protocol.md): a platform that maps what its
// client passes by fd opens a fast message queue (npu/protocol/fmq.h) from the fds that came with
// the request and serves it as another connection of the same session, with an RpcServer of its
// own (RpcServerConfig::burstChannel) over the same Service. A platform without it leaves
// RpcServerConfig::burstChannels null: the call is refused and HelloReply.burst_channels is false.
class BurstChannelOpener {
public:
    // From the fds that came with call `callId` (RequestFds). Fills channel_id and queue_depth.
    // INVALID_ARGUMENT for missing or unfit fds, RESOURCE_EXHAUSTED_TRANSIENT past the channels
    // one session may hold.
    virtual FwStatus openBurstChannel(uint64_t callId, npu_proto_OpenBurstChannelReply* reply) = 0;

protected:
    ~BurstChannelOpener() = default;
};

// Where the firmware's log lines go: the host platform's stderr under NPU_VLOG=firmware, a
// SoC's UART. enabled() is asked first, so a silent firmware formats nothing.
class LogSink {
public:
    virtual bool enabled() = 0;
    virtual void write(const char* line) = 0;

protected:
    ~LogSink() = default;
};

// Scheduling of a server's requests by someone else: the platform of one NPU shared by several
// sessions (a server per session, one Scheduler). With RpcServerConfig::gate set, every queued
// request (slot = its place in the server's queue) is offered to admit(), and runs when the
// platform calls RpcServer::runSlot (or is answered with RpcServer::failSlot); poll() serves
// nothing. Cancel asks the gate: a request the gate took back is answered as cancelled.
class RequestGate {
public:
    // Not OK: the request is refused with that status (nothing queued).
    virtual FwStatus admit(uint64_t callId, uint8_t method, const uint8_t* payload, uint32_t length,
                           uint32_t slot) = 0;
    enum class Cancelled { kNotFound, kQueued, kRunning };
    // kQueued: the request was taken out of the schedule; *slot is its place in the queue.
    virtual Cancelled cancel(uint64_t callId, uint32_t* slot) = 0;

protected:
    ~RequestGate() = default;
};

// Where a session's window lives, on platforms with one window slot per session (the host's
// FirmwareHost). Asked at the session's Hello when the client wants its window at `addr` (it is
// back after a firmware restart and holds device addresses in its old window).
class WindowPlacer {
public:
    // True: the session's window is now at `addr`; false: it stays where it is.
    virtual bool placeWindow(uint64_t addr) = 0;

protected:
    ~WindowPlacer() = default;
};

struct RpcServerConfig {
    uint32_t maxPayloadBytes = proto::kDefaultMaxPayload;  // largest frame payload, both ways
    uint32_t maxMessageBytes = 4u << 20;                   // largest reassembled request (MORE fragments)
    uint32_t maxReplyBytes = 256u << 10;                   // largest encoded reply (fragmented on the wire)
    uint32_t queueDepth = 16;        // queued requests before RESOURCE_EXHAUSTED_TRANSIENT
    uint32_t queueBytes = 8u << 20;  // bytes of queued request payloads

    // HelloReply fields, from the platform.
    const char* firmwareVersion = "npu-fw 0.1.0";
    uint32_t hwId = 0;
    uint32_t hwVersion = 0;
    uint64_t deviceMemoryBytes = 0;
    uint64_t hostWindowAddr = 0;
    uint64_t hostWindowBytes = 0;

    bool windowFdIsWindow = false;         // HelloReply.window_fd_is_window: the fd passed is the window only
    RequestGate* gate = nullptr;           // set: requests are scheduled by the gate, not poll()
    WindowPlacer* windowPlacer = nullptr;  // set: Hello's window_addr may move hostWindowAddr

    CounterSource* platformCounters = nullptr;    // appended to GetCounters when set
    FaultInjector* faultInjector = nullptr;       // InjectFaults is refused when null
    LogSink* log = nullptr;                       // a line per request and per error when set
    PoolMapper* pools = nullptr;                  // MapPool / UnmapPool are refused when null
    RequestFds* requestFds = nullptr;             // set on a platform that passes fds
    WorkMonitor* monitor = nullptr;               // set: Ping is answered on arrival (WorkMonitor)
    BurstChannelOpener* burstChannels = nullptr;  // OpenBurstChannel is refused when null
    // This server serves a burst channel: Execute, Cancel and Ping only; any other method is
    // answered INVALID_ARGUMENT on arrival.
    bool burstChannel = false;
};

struct RpcServerStats {
    uint64_t framesReceived = 0;
    uint64_t requestsHandled = 0;
    uint64_t pingsOnArrival = 0;  // answered ahead of queued work (RpcServerConfig::monitor)
    uint64_t badFrames = 0;       // CRC, oversize, bad version, truncated
    uint64_t garbageBytes = 0;    // skipped while resynchronising
    uint64_t queueFull = 0;       // requests refused with RESOURCE_EXHAUSTED_TRANSIENT
    uint64_t cancelled = 0;
    uint64_t sinkFailures = 0;   // FrameSink::writeFrame returned false
    uint64_t progressSent = 0;   // ProgressEvent frames sent (sendProgress)
    uint64_t resets = 0;         // Reset calls served
    uint64_t npuHangs = 0;       // executions failed with device_fault HANG
    uint64_t npuDataFaults = 0;  // executions failed with device_fault DATA
};

class RpcServer final : private proto::FrameListener {
public:
    // Takes its buffers from `arena` now (see memoryNeeded); request temporaries later, released
    // after each request. `arena` must not be the Runtime's (its allocations would be released).
    RpcServer(Service& service, Arena& arena, FrameSink& sink, const RpcServerConfig& config);
    // The same over the firmware Runtime (RuntimeService owned by the server).
    RpcServer(Runtime& runtime, Platform& platform, Arena& arena, FrameSink& sink,
              const RpcServerConfig& config);
    RpcServer(const RpcServer&) = delete;
    RpcServer& operator=(const RpcServer&) = delete;

    // False if the arena could not provide the buffers: the server then answers nothing and
    // initStatus() says what was missing.
    bool ok() const { return initStatus_.ok(); }
    const FwStatus& initStatus() const { return initStatus_; }
    // Arena bytes the constructor takes for `config` (plus per-request temporaries, ~40 KiB).
    static size_t memoryNeeded(const RpcServerConfig& config);

    // Bytes from the transport, in any chunking.
    void onBytes(const uint8_t* data, size_t length);
    // End of the byte stream (peer gone): reports a truncated frame, drops partial state.
    void onDisconnect();
    // Processes one queued request; false if the queue was empty.
    bool poll();

    uint32_t queued() const { return queueCount_; }

    // With a gate (rpc_server_gate.cpp): serves the request queued in `slot` (false: no request
    // is waiting there), or answers it with an error instead (deadline missed, session gone).
    bool runSlot(uint32_t slot);
    bool failSlot(uint32_t slot, Code code, const char* message);
    // A ProgressEvent frame (METHOD_PROGRESS, no response flag) for call `callId`, whose work is
    // at `progress`: the platform sends it from the running item's checkpoint (docs/protocol.md).
    void sendProgress(uint64_t callId, const WorkProgress& progress);
    const RpcServerStats& stats() const { return stats_; }

private:
    struct Entry {
        uint64_t callId;
        uint32_t offset;  // in pool_
        uint32_t length;
        uint8_t method;
        bool cancelled;
    };

    void init();
    void onFrameEvent(const proto::FrameEvent& event) override;
    void onRequestFrame(const proto::FrameHeader& header, const uint8_t* payload);
    void enqueue(uint64_t callId, uint8_t method, const uint8_t* payload, uint32_t length);
    bool allocatePool(uint32_t length, uint32_t* offset);
    void handleCancel(uint64_t callId, const uint8_t* payload, uint32_t length);
    void dispatch(const Entry& entry, const uint8_t* payload);
    // Marks the entry in `slot` done and drops the done entries at the head of the queue.
    void retire(uint32_t slot);
    void popHead();
    static uint8_t fdsOf(uint32_t method);
    bool bindFds(const proto::FrameHeader& header);
    void dropFds(const proto::FrameHeader& header);
    void releaseFds(const Entry& entry);
    bool callPending(uint64_t callId) const;  // queued (not done) or being reassembled
    void gateCancel(uint64_t cancelCallId, uint64_t targetCallId);
    // Ping on arrival (RpcServerConfig::monitor), and the PingReply fields both paths fill.
    void pingOnArrival(uint64_t callId, const uint8_t* payload, uint32_t length);
    void sendPing(uint64_t callId, uint64_t nonce, const WorkState& work, bool onArrival);
    uint32_t requestsPending() const;  // queued or running, not yet answered

    // One request being served: its method, the decoded request (in the arena; null for methods
    // that decode their own payload) and the raw payload.
    struct Call {
        uint64_t id;
        uint8_t method;
        const char* name;
        void* request;
        const uint8_t* payload;
        uint32_t length;
    };
    // The method table (pw_rpc style): one row per method, its request message (decoded by
    // dispatch(), one decode-or-error path) and its handler.
    struct Method {
        uint32_t id;
        const char* name;
        const pb_msgdesc_t* requestFields;  // null: no request, or the handler decodes the payload
        size_t requestSize;
        const char* requestLabel;  // message name in decode errors ("" for none)
        void (RpcServer::*handler)(const Call& call);
        uint8_t fds = 0;  // fds that come with a request (RequestFds)
    };
    static const Method kMethods[];
    static const Method* findMethod(uint32_t id);
    static const char* methodName(uint32_t id);  // null for methods the firmware does not serve

    template <typename T>
    T* allocateFor(const Call& call);  // a zeroed message in the arena; else the out-of-memory error
    void noMemory(const Call& call);
    void onHello(const Call& call);
    void onGetCapabilities(const Call& call);
    void onGetSupportedOperations(const Call& call);
    void onPrepareModel(const Call& call);
    void onPrepareFromCache(const Call& call);
    void sendPrepareReply(const Call& call, npu_proto_PrepareModelReply* reply, const FwStatus& status,
                          const BlobInfo& info);
    void onFetchBlob(const Call& call);
    void onRelease(const Call& call);
    void onExecute(const Call& call);
    void onAllocateBuffer(const Call& call);
    void onBufferCopy(const Call& call);
    void onPing(const Call& call);
    void onReset(const Call& call);
    void onInjectFaults(const Call& call);
    void onGetCounters(const Call& call);
    void onMapPool(const Call& call);
    void onUnmapPool(const Call& call);
    void onOpenBurstChannel(const Call& call);
    // A request frame this server does not serve (a burst channel's): answered on arrival.
    bool refusedOnArrival(const proto::FrameHeader& header);

    // Encodes `reply` (nanopb `fields`) and sends it as the response to callId.
    void sendReply(uint64_t callId, uint8_t method, const pb_msgdesc_t* fields, const void* reply);
    void sendError(uint64_t callId, Code code, const char* fmt, ...) __attribute__((format(printf, 4, 5)));
    void sendPayload(uint64_t callId, uint8_t method, uint16_t flags, uint8_t* payload, size_t length);
    void logf(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

    Service* service_;
    Arena& arena_;
    FrameSink& sink_;
    RpcServerConfig config_;
    FwStatus initStatus_;
    RpcServerStats stats_;
    alignas(8) uint8_t runtimeServiceStorage_[sizeof(RuntimeService)];

    proto::FrameDecoder decoder_{nullptr, 0, 0};
    uint8_t* decoderBuffer_ = nullptr;
    uint8_t* frameBuffer_ = nullptr;  // header + maxPayload: outgoing frames
    uint8_t* replyBuffer_ = nullptr;  // kFrameHeaderSize + maxReplyBytes: encoded replies

    // Reassembly of one MORE-fragmented request at a time.
    uint8_t* assembly_ = nullptr;
    uint32_t assemblyLength_ = 0;
    uint64_t assemblyCallId_ = 0;
    uint8_t assemblyMethod_ = 0;
    bool assembling_ = false;
    bool assemblyOverflow_ = false;

    // FIFO of queued requests; payloads in a byte ring (pool_), allocated contiguously.
    Entry* queue_ = nullptr;
    uint32_t queueHead_ = 0;
    uint32_t queueCount_ = 0;
    uint8_t* pool_ = nullptr;
    uint32_t poolHead_ = 0;  // start of the oldest queued payload
    uint32_t poolTail_ = 0;  // one past the newest

    size_t requestMark_ = 0;  // arena mark after the constructor's buffers

    // Cancels of the running request (gate): answered once it has stopped, so that a CancelReply
    // always means the target no longer runs (runSlot sends them).
    static constexpr uint32_t kMaxDeferredCancels = 4;
    uint64_t deferredCancels_[kMaxDeferredCancels] = {};
    uint32_t deferredCancelCount_ = 0;
    void answerDeferredCancels();
};

}  // namespace npu::fw
