#pragma once
// One NPU shared by several sessions (clients): who owns what, which memory each may reach, and
// how each session's requests reach the shared Scheduler. A platform serving several transports
// gives each session its own RpcServer (framing, call ids, replies to the right peer), a
// SessionService (the Service that server calls) and a SessionGate (its RequestGate), all over
// one Runtime, one RuntimeService, one SessionRegistry and one Scheduler.
//
// Isolation: a session reaches only its own window (device addresses the platform mapped for
// it alone) and the prepared models and buffers it made; another session's handle or token is
// INVALID_ARGUMENT with the same message as one that does not exist (no existence leak).
//
// firmware/core rules: no OS headers, no exceptions, no heap (tables from the Arena).
// Not thread-safe: the platform serialises every call (one lock around the firmware).

#include <cstddef>
#include <cstdint>

#include "npu/fw/arena.h"
#include "npu/fw/rpc_server.h"
#include "npu/fw/runtime.h"
#include "npu/fw/scheduler.h"

namespace npu::fw {

inline constexpr uint32_t kMaxSessions = 64;

struct SessionWindow {
    uint64_t addr = 0;  // device address
    uint64_t bytes = 0;
};

// Sessions, their windows, and the owner of every prepared model and buffer.
class SessionRegistry {
public:
    enum class Kind : uint8_t { kModel, kBuffer };

    static size_t memoryNeeded(uint32_t maxHandles);
    SessionRegistry(Arena& arena, uint32_t maxHandles);
    bool ok() const { return handles_ != nullptr; }

    // Session ids are the platform's, 1..; a window may be empty (a session without memory).
    FwStatus open(uint32_t session, const SessionWindow& window);
    void close(uint32_t session);
    bool isOpen(uint32_t session) const { return find(session) != nullptr; }
    uint32_t sessions() const;
    SessionWindow window(uint32_t session) const;
    // The session's window moves (the platform placed it elsewhere, Hello's window_addr). Refused
    // while the session owns a model or a buffer.
    FwStatus moveWindow(uint32_t session, const SessionWindow& window);
    // True iff [addr, addr + length) lies inside the session's window (length 0: addr inside or
    // at its end).
    bool inWindow(uint32_t session, uint64_t addr, uint64_t length) const;

    FwStatus add(Kind kind, uint32_t handle, uint32_t session, Priority priority);
    // True iff `session` owns `handle`; its priority (models: the one given at prepare) in *priority.
    bool owns(Kind kind, uint32_t handle, uint32_t session, Priority* priority = nullptr) const;
    void remove(Kind kind, uint32_t handle);
    // Some handle of `kind` that `session` owns (to release them one by one); false when none.
    bool anyOwned(Kind kind, uint32_t session, uint32_t* handle) const;
    uint32_t owned(Kind kind, uint32_t session) const;

private:
    struct SessionEntry {
        uint32_t id = 0;  // 0: free
        SessionWindow window;
    };
    struct Handle {
        bool used = false;
        Kind kind = Kind::kModel;
        uint32_t handle = 0;
        uint32_t session = 0;
        Priority priority = Priority::kMedium;
    };
    const SessionEntry* find(uint32_t session) const;
    Handle* findHandle(Kind kind, uint32_t handle);
    const Handle* findHandle(Kind kind, uint32_t handle) const;

    SessionEntry sessions_[kMaxSessions];
    Handle* handles_ = nullptr;
    uint32_t capacity_ = 0;
};

// The Service one session's RpcServer calls: ownership and window checks around the shared
// RuntimeService. GetCounters adds the scheduler's and this session's counters.
class SessionService final : public Service {
public:
    SessionService(Runtime& runtime, RuntimeService& shared, SessionRegistry& registry,
                   const Scheduler& scheduler, uint32_t session)
        : runtime_(runtime), shared_(shared), registry_(registry), scheduler_(scheduler), session_(session) {}

    void capabilities(npu_proto_CapabilitiesReply* reply) override { shared_.capabilities(reply); }
    FwStatus supportedOperations(const ModelDesc& model, bool* supported, Arena& scratch) override;
    FwStatus unsupportedReason(const ModelDesc& model, const bool* supported, uint32_t op,
                               Arena& scratch) override {
        return shared_.unsupportedReason(model, supported, op, scratch);
    }
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
    // Releases this session's models and buffers; the whole NPU is reset only when no other
    // session holds anything (another session's work is never disturbed).
    FwStatus reset() override;
    void counters(npu_proto_CountersReply* reply) override;
    uint64_t uptimeUs() override { return shared_.uptimeUs(); }

    // What the session leaves when it goes: every model and buffer it still owns is released.
    // Returns how many were released.
    uint32_t releaseAll();
    // The client memory the platform maps for this session (pools passed by fd); null: none.
    // Execution arguments, constants and buffer copies may then lie in those pools too.
    void setPools(PoolMapper* pools) { pools_ = pools; }

private:
    FwStatus checkModel(uint32_t handle, const char* what) const;
    FwStatus checkBuffer(uint32_t token, const char* what) const;
    // [addr, +length) inside the session's window, or inside one of its pools (*inPool set;
    // writable when `write`).
    FwStatus checkRange(uint64_t addr, uint64_t length, const char* what, const char* role, uint32_t index,
                        bool write = false, bool* inPool = nullptr) const;
    // The two parts of a blob (PrepareFromCache, FetchBlob) in the window.
    FwStatus checkBlobs(uint64_t modelAddr, uint64_t modelBytes, uint64_t dataAddr, uint64_t dataBytes,
                        const char* what) const;
    FwStatus checkConstants(const ModelDesc& model) const;
    // Every argument's buffer or range; marks those in pools (IoArg::poolMapped).
    FwStatus checkArguments(IoArg* args, uint32_t count, bool output) const;
    FwStatus own(const FwStatus& status, const BlobInfo& info, Priority priority, const char* what);

    Runtime& runtime_;
    RuntimeService& shared_;
    SessionRegistry& registry_;
    const Scheduler& scheduler_;
    uint32_t session_;
    PoolMapper* pools_ = nullptr;
    // The WHILE loop timeout of the session's last execution, after the default and the clamp
    // (GetCounters "session.loop_timeout_ns"; no NPU execution runs WHILE yet).
    uint64_t loopTimeoutNs_ = kDefaultLoopTimeoutNs;
};

// The RequestGate of one server: classifies each request (work or control, priority, deadline)
// and hands it to the shared Scheduler as `queue`'s work. `queue` is the server's own id in the
// scheduler (the session's, or one of its burst channels': each has its own call ids); `owner` is
// the session whose models the requests name (an execution runs at its model's priority).
class SessionGate final : public RequestGate {
public:
    SessionGate(Scheduler& scheduler, const SessionRegistry& registry, Platform& platform, uint32_t queue,
                uint32_t owner)
        : scheduler_(scheduler), registry_(registry), platform_(platform), session_(queue), owner_(owner) {}
    SessionGate(Scheduler& scheduler, const SessionRegistry& registry, Platform& platform, uint32_t session)
        : SessionGate(scheduler, registry, platform, session, session) {}

    FwStatus admit(uint64_t callId, uint8_t method, const uint8_t* payload, uint32_t length,
                   uint32_t slot) override;
    Cancelled cancel(uint64_t callId, uint32_t* slot) override;

private:
    Scheduler& scheduler_;
    const SessionRegistry& registry_;
    Platform& platform_;
    uint32_t session_;  // the queue
    uint32_t owner_;
};

}  // namespace npu::fw
