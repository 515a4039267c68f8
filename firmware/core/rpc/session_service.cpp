// Several sessions on one NPU (npu/fw/session_service.h): the owner table, the window checks,
// and the classification of requests for the shared Scheduler.
#include "npu/fw/session_service.h"

#include <pb_decode.h>

#include <cinttypes>

namespace npu::fw {

// ---- SessionRegistry ----------------------------------------------------------------------------

size_t SessionRegistry::memoryNeeded(uint32_t maxHandles) {
    return size_t(maxHandles) * sizeof(Handle) + alignof(Handle);
}

SessionRegistry::SessionRegistry(Arena& arena, uint32_t maxHandles) {
    handles_ = maxHandles > 0 ? arena.allocateArray<Handle>(maxHandles) : nullptr;
    if (handles_ != nullptr) capacity_ = maxHandles;
}

const SessionRegistry::SessionEntry* SessionRegistry::find(uint32_t session) const {
    if (session == 0) return nullptr;
    for (const SessionEntry& s : sessions_) {
        if (s.id == session) return &s;
    }
    return nullptr;
}

FwStatus SessionRegistry::open(uint32_t session, const SessionWindow& window) {
    if (session == 0 || find(session) != nullptr) {
        return FwStatus::make(Code::kInvalidArgument, "session id %" PRIu32 " is 0 or open already", session);
    }
    for (SessionEntry& s : sessions_) {
        if (s.id == 0) {
            s.id = session;
            s.window = window;
            return FwStatus::okStatus();
        }
    }
    return FwStatus::make(Code::kResourceExhaustedTransient,
                          "the firmware serves at most %" PRIu32 " sessions at once", kMaxSessions);
}

void SessionRegistry::close(uint32_t session) {
    for (SessionEntry& s : sessions_) {
        if (s.id == session) s = SessionEntry{};
    }
}

uint32_t SessionRegistry::sessions() const {
    uint32_t n = 0;
    for (const SessionEntry& s : sessions_) n += s.id != 0 ? 1 : 0;
    return n;
}

SessionWindow SessionRegistry::window(uint32_t session) const {
    const SessionEntry* s = find(session);
    return s != nullptr ? s->window : SessionWindow{};
}

FwStatus SessionRegistry::moveWindow(uint32_t session, const SessionWindow& window) {
    if (find(session) == nullptr) {
        return FwStatus::make(Code::kInvalidArgument, "session %" PRIu32 " is not open", session);
    }
    if (owned(Kind::kModel, session) != 0 || owned(Kind::kBuffer, session) != 0) {
        return FwStatus::make(Code::kInvalidArgument,
                              "session %" PRIu32 " cannot move its window: it holds models or buffers",
                              session);
    }
    for (SessionEntry& s : sessions_) {
        if (s.id == session) s.window = window;
    }
    return FwStatus::okStatus();
}

bool SessionRegistry::inWindow(uint32_t session, uint64_t addr, uint64_t length) const {
    const SessionEntry* s = find(session);
    if (s == nullptr || addr < s->window.addr) return false;
    const uint64_t offset = addr - s->window.addr;
    return offset <= s->window.bytes && length <= s->window.bytes - offset;
}

SessionRegistry::Handle* SessionRegistry::findHandle(Kind kind, uint32_t handle) {
    for (uint32_t i = 0; i < capacity_; ++i) {
        if (handles_[i].used && handles_[i].kind == kind && handles_[i].handle == handle) return &handles_[i];
    }
    return nullptr;
}

const SessionRegistry::Handle* SessionRegistry::findHandle(Kind kind, uint32_t handle) const {
    return const_cast<SessionRegistry*>(this)->findHandle(kind, handle);
}

FwStatus SessionRegistry::add(Kind kind, uint32_t handle, uint32_t session, Priority priority) {
    Handle* h = findHandle(kind, handle);
    for (uint32_t i = 0; h == nullptr && i < capacity_; ++i) {
        if (!handles_[i].used) h = &handles_[i];
    }
    if (h == nullptr) {
        return FwStatus::make(Code::kResourceExhaustedPersistent,
                              "the firmware tracks at most %" PRIu32 " prepared models and buffers",
                              capacity_);
    }
    *h = Handle{true, kind, handle, session, priority};
    return FwStatus::okStatus();
}

bool SessionRegistry::owns(Kind kind, uint32_t handle, uint32_t session, Priority* priority) const {
    const Handle* h = findHandle(kind, handle);
    if (h == nullptr || h->session != session) return false;
    if (priority != nullptr) *priority = h->priority;
    return true;
}

void SessionRegistry::remove(Kind kind, uint32_t handle) {
    if (Handle* h = findHandle(kind, handle)) *h = Handle{};
}

bool SessionRegistry::anyOwned(Kind kind, uint32_t session, uint32_t* handle) const {
    for (uint32_t i = 0; i < capacity_; ++i) {
        const Handle& h = handles_[i];
        if (h.used && h.kind == kind && h.session == session) {
            *handle = h.handle;
            return true;
        }
    }
    return false;
}

uint32_t SessionRegistry::owned(Kind kind, uint32_t session) const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < capacity_; ++i) {
        n += handles_[i].used && handles_[i].kind == kind && handles_[i].session == session ? 1 : 0;
    }
    return n;
}

// ---- SessionService -----------------------------------------------------------------------------

using Kind = SessionRegistry::Kind;

namespace {
FwStatus checkPriority(uint32_t wire, const char* what, Priority* priority) {
    if (toPriority(wire, priority)) return FwStatus::okStatus();
    return FwStatus::make(Code::kInvalidArgument, "%s: priority %" PRIu32 " is not LOW, MEDIUM or HIGH", what,
                          wire);
}
}  // namespace

// A foreign handle gets the message an unknown one gets: nothing tells it exists.
FwStatus SessionService::checkModel(uint32_t handle, const char* what) const {
    if (registry_.owns(Kind::kModel, handle, session_)) return FwStatus::okStatus();
    return FwStatus::make(Code::kInvalidArgument, "%s: unknown model handle 0x%" PRIx32 "", what, handle);
}

FwStatus SessionService::checkBuffer(uint32_t token, const char* what) const {
    if (registry_.owns(Kind::kBuffer, token, session_)) return FwStatus::okStatus();
    return FwStatus::make(Code::kInvalidArgument, "%s: unknown buffer token %" PRIu32 "", what, token);
}

FwStatus SessionService::checkRange(uint64_t addr, uint64_t length, const char* what, const char* role,
                                    uint32_t index, bool write, bool* inPool) const {
    if (inPool != nullptr) *inPool = false;
    if (registry_.inWindow(session_, addr, length)) return FwStatus::okStatus();
    if (pools_ != nullptr) {
        bool pooled = false;
        FwStatus st = pools_->checkPoolRange(addr, length, write, &pooled);
        if (!st.ok()) {
            return FwStatus::make(st.code, "%s: %s %" PRIu32 ": %s", what, role, index, st.message);
        }
        if (pooled) {
            if (inPool != nullptr) *inPool = true;
            return FwStatus::okStatus();
        }
    }
    const SessionWindow w = registry_.window(session_);
    return FwStatus::make(Code::kInvalidArgument,
                          "%s: %s %" PRIu32
                          " at [0x%llx, +%llu) is outside this client's window [0x%llx, "
                          "+%llu) and its %" PRIu32 " pools",
                          what, role, index, (unsigned long long)addr, (unsigned long long)length,
                          (unsigned long long)w.addr, (unsigned long long)w.bytes,
                          pools_ != nullptr ? pools_->poolCount() : 0u);
}

FwStatus SessionService::checkBlobs(uint64_t modelAddr, uint64_t modelBytes, uint64_t dataAddr,
                                    uint64_t dataBytes, const char* what) const {
    if (FwStatus st = checkRange(modelAddr, modelBytes, what, "model blob", 0); !st.ok()) return st;
    return checkRange(dataAddr, dataBytes, what, "data blob", 0);
}

FwStatus SessionService::checkConstants(const ModelDesc& model) const {
    for (uint32_t i = 0; i < model.operandCount; ++i) {
        const OperandDesc& o = model.operands[i];
        if (o.dataLength == 0 || o.value != nullptr) continue;  // a value inside the message is ours
        if (FwStatus st = checkRange(o.dataAddr, o.dataLength, "model", "constant operand", i); !st.ok())
            return st;
    }
    return FwStatus::okStatus();
}

FwStatus SessionService::checkArguments(IoArg* args, uint32_t count, bool output) const {
    const char* role = output ? "output" : "input";
    for (uint32_t i = 0; i < count; ++i) {
        IoArg& a = args[i];
        if (a.hasNoValue) continue;
        FwStatus st = a.bufferToken != 0
                          ? checkBuffer(a.bufferToken, "execute")
                          : checkRange(a.addr, a.length, "execute", role, i, output, &a.poolMapped);
        if (!st.ok()) return st;
    }
    return FwStatus::okStatus();
}

// A model prepared for this session becomes its own; one the owner table cannot take is
// released again (untracked, it could never be used or released by its session).
FwStatus SessionService::own(const FwStatus& status, const BlobInfo& info, Priority priority,
                             const char* what) {
    if (!status.ok() || registry_.add(Kind::kModel, info.handle, session_, priority).ok()) return status;
    (void)runtime_.release(info.handle);
    return FwStatus::make(Code::kResourceExhaustedPersistent,
                          "%s: the firmware's table of prepared models is full", what);
}

FwStatus SessionService::supportedOperations(const ModelDesc& model, bool* supported, Arena& scratch) {
    if (FwStatus st = checkConstants(model); !st.ok()) return st;
    return shared_.supportedOperations(model, supported, scratch);
}

FwStatus SessionService::prepareModel(const ModelDesc& model, const npu_proto_PrepareModelRequest& request,
                                      Arena& scratch, BlobInfo* info) {
    Priority priority;
    if (FwStatus st = checkPriority(request.priority, "prepareModel", &priority); !st.ok()) return st;
    if (FwStatus st = checkConstants(model); !st.ok()) return st;
    return own(shared_.prepareModel(model, request, scratch, info), *info, priority, "prepareModel");
}

FwStatus SessionService::prepareFromCache(const npu_proto_PrepareFromCacheRequest& r, Arena& scratch,
                                          BlobInfo* info) {
    if (FwStatus st = checkBlobs(r.model_blob_addr, r.model_blob_bytes, r.data_blob_addr, r.data_blob_bytes,
                                 "prepareFromCache");
        !st.ok())
        return st;
    Priority priority;
    if (FwStatus st = checkPriority(r.priority, "prepareFromCache", &priority); !st.ok()) return st;
    return own(shared_.prepareFromCache(r, scratch, info), *info, priority, "prepareFromCache");
}

FwStatus SessionService::fetchBlob(const npu_proto_FetchBlobRequest& r, npu_proto_FetchBlobReply* reply) {
    if (FwStatus st = checkModel(r.model_handle, "fetchBlob"); !st.ok()) return st;
    if (FwStatus st = checkBlobs(r.model_blob_addr, r.model_blob_capacity, r.data_blob_addr,
                                 r.data_blob_capacity, "fetchBlob");
        !st.ok())
        return st;
    return shared_.fetchBlob(r, reply);
}

FwStatus SessionService::releaseModel(uint32_t handle) {
    if (FwStatus st = checkModel(handle, "releaseModel"); !st.ok()) return st;
    FwStatus st = shared_.releaseModel(handle);
    registry_.remove(Kind::kModel, handle);
    return st;
}

FwStatus SessionService::execute(const npu_proto_ExecuteRequest& r, IoArg* inputs, uint32_t inputCount,
                                 IoArg* outputs, uint32_t outputCount, ExecResult* result) {
    if (FwStatus st = checkModel(r.model_handle, "execute"); !st.ok()) return st;
    if (FwStatus st = checkArguments(inputs, inputCount, false); !st.ok()) return st;
    if (FwStatus st = checkArguments(outputs, outputCount, true); !st.ok()) return st;
    loopTimeoutNs_ = effectiveLoopTimeoutNs(r.loop_timeout_ns);
    shared_.setSession(session_);  // the runtime checks buffer owners too
    FwStatus st = shared_.execute(r, inputs, inputCount, outputs, outputCount, result);
    if (pools_ != nullptr) {
        if (FwStatus fault = pools_->takeFault(); !fault.ok()) return fault;
    }
    return st;
}

FwStatus SessionService::allocateBuffer(const npu_proto_AllocateBufferRequest& r, uint32_t* token) {
    // A role may name only this session's models: another's gets what an unknown handle gets.
    for (uint32_t i = 0; i < r.roles_count; ++i) {
        if (!registry_.owns(Kind::kModel, r.roles[i].model_handle, session_)) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "allocateBuffer: role %" PRIu32 ": unknown model handle 0x%" PRIx32 "", i,
                                  r.roles[i].model_handle);
        }
    }
    shared_.setSession(session_);
    FwStatus st = shared_.allocateBuffer(r, token);
    if (st.ok() && !registry_.add(Kind::kBuffer, *token, session_, Priority::kMedium).ok()) {
        (void)shared_.releaseBuffer(*token);
        return FwStatus::make(Code::kResourceExhaustedPersistent,
                              "allocateBuffer: the firmware's table of buffers is full");
    }
    return st;
}

FwStatus SessionService::releaseBuffer(uint32_t token) {
    if (FwStatus st = checkBuffer(token, "releaseBuffer"); !st.ok()) return st;
    shared_.setSession(session_);
    FwStatus st = shared_.releaseBuffer(token);
    registry_.remove(Kind::kBuffer, token);
    return st;
}

FwStatus SessionService::bufferCopy(const npu_proto_BufferCopyRequest& r) {
    if (FwStatus st = checkBuffer(r.buffer_token, "bufferCopy"); !st.ok()) return st;
    if (FwStatus st = checkRange(r.addr, r.length, "bufferCopy", "memory", 0, !r.to_device); !st.ok())
        return st;
    shared_.setSession(session_);
    return shared_.bufferCopy(r);
}

uint32_t SessionService::releaseAll() {
    uint32_t released = 0;
    uint32_t handle = 0;
    while (registry_.anyOwned(Kind::kModel, session_, &handle)) {
        (void)shared_.releaseModel(handle);
        registry_.remove(Kind::kModel, handle);
        released++;
    }
    shared_.setSession(session_);
    while (registry_.anyOwned(Kind::kBuffer, session_, &handle)) {
        (void)shared_.releaseBuffer(handle);
        registry_.remove(Kind::kBuffer, handle);
        released++;
    }
    return released;
}

FwStatus SessionService::reset() {
    releaseAll();
    if (runtime_.loadedModels() == 0) return shared_.reset();  // nobody else holds anything
    return FwStatus::okStatus();
}

void SessionService::counters(npu_proto_CountersReply* reply) {
    shared_.counters(reply);
    const SchedulerStats& s = scheduler_.stats();
    const struct {
        const char* name;
        uint64_t value;
    } mine[] = {{"sched.submitted", s.submitted},
                {"sched.ran_low", s.ran[0]},
                {"sched.ran_medium", s.ran[1]},
                {"sched.ran_high", s.ran[2]},
                {"sched.control", s.control},
                {"sched.overtakes", s.overtakes},
                {"sched.expired", s.expired},
                {"sched.missed_running", s.missedRunning},
                {"sched.cancelled_queued", s.cancelledQueued},
                {"sched.cancelled_running", s.cancelledRunning},
                {"sched.dropped", s.dropped},
                {"sched.queue_full", s.full},
                {"sched.max_queued", s.maxQueued},
                {"sched.queued_now", scheduler_.queued()},
                {"session.id", session_},
                {"session.count", registry_.sessions()},
                {"session.models", registry_.owned(Kind::kModel, session_)},
                {"session.buffers", registry_.owned(Kind::kBuffer, session_)},
                {"session.window_bytes", registry_.window(session_).bytes},
                {"session.loop_timeout_ns", loopTimeoutNs_},
                {"session.pools", pools_ != nullptr ? pools_->poolCount() : 0u},
                {"session.pool_bytes", pools_ != nullptr ? pools_->poolBytes() : 0u}};
    for (const auto& c : mine) appendCounter(reply, c.name, c.value);
}

// ---- SessionGate --------------------------------------------------------------------------------

namespace {

// The value of top-level varint field `field` of a protobuf message; false when absent or the
// message does not decode (the request is then queued plain and fails its own decode later).
bool varintField(const uint8_t* payload, uint32_t length, uint32_t field, uint64_t* value) {
    pb_istream_t in = pb_istream_from_buffer(payload, length);
    bool found = false;
    while (in.bytes_left > 0) {
        pb_wire_type_t type;
        uint32_t tag = 0;
        bool eof = false;
        if (!pb_decode_tag(&in, &type, &tag, &eof)) return found;
        if (tag == field && type == PB_WT_VARINT) {
            if (!pb_decode_varint(&in, value)) return false;
            found = true;  // the last occurrence wins, as in protobuf
        } else if (!pb_skip_field(&in, type)) {
            return found;
        }
    }
    return found;
}

struct WorkFields {
    uint32_t handle;    // field of the model handle (0: none)
    uint32_t priority;  // field of a priority (0: none)
    uint32_t deadline;  // field of deadline_ns (0: none)
};

// Which methods are NPU work (scheduled by priority, with deadlines) and where their fields are.
bool workFields(uint8_t method, WorkFields* f) {
    switch (method) {
        case npu_proto_Method_METHOD_PREPARE_MODEL:
            *f = {0, 3, 4};
            return true;
        case npu_proto_Method_METHOD_PREPARE_FROM_CACHE:
            *f = {0, 6, 5};
            return true;
        case npu_proto_Method_METHOD_EXECUTE:
            *f = {1, 0, 5};
            return true;
        case npu_proto_Method_METHOD_GET_SUPPORTED_OPERATIONS:
        case npu_proto_Method_METHOD_BUFFER_COPY:
            *f = {0, 0, 0};
            return true;
        default:
            return false;  // control: handshake, ping, counters, release, reset, ...
    }
}

}  // namespace

FwStatus SessionGate::admit(uint64_t callId, uint8_t method, const uint8_t* payload, uint32_t length,
                            uint32_t slot) {
    WorkItem item;
    item.session = session_;
    item.callId = callId;
    item.slot = slot;
    WorkFields f{};
    item.control = !workFields(method, &f);
    uint64_t value = 0;
    if (f.priority != 0) {
        // proto3 leaves 0 (LOW) off the wire: an absent priority is LOW.
        if (!varintField(payload, length, f.priority, &value)) value = 0;
        if (value < kPriorityCount) item.priority = static_cast<Priority>(value);
    }
    if (f.handle != 0 && varintField(payload, length, f.handle, &value)) {
        // An execution runs at its model's priority; a handle it does not own fails when it runs.
        Priority p;
        if (value <= UINT32_MAX && registry_.owns(Kind::kModel, static_cast<uint32_t>(value), owner_, &p))
            item.priority = p;
    }
    if (f.deadline != 0 && varintField(payload, length, f.deadline, &value) && value != 0) {
        const uint64_t budgetUs = value / 1000 + (value % 1000 != 0 ? 1 : 0);
        const uint64_t now = platform_.nowUs();
        item.deadlineUs = budgetUs > UINT64_MAX - now ? 0 : now + budgetUs;
    }
    return scheduler_.submit(item);
}

RequestGate::Cancelled SessionGate::cancel(uint64_t callId, uint32_t* slot) {
    WorkItem item;
    switch (scheduler_.cancel(session_, callId, &item)) {
        case Scheduler::Cancelled::kQueued:
            *slot = item.slot;
            return Cancelled::kQueued;
        case Scheduler::Cancelled::kRunning:
            return Cancelled::kRunning;
        case Scheduler::Cancelled::kNotFound:
            break;
    }
    return Cancelled::kNotFound;
}

}  // namespace npu::fw
