#include "npu/fw/rpc_server.h"

#include <pb_decode.h>
#include <pb_encode.h>

#include <cinttypes>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <new>

#include "model_decoder.h"

namespace npu::fw {

using proto::FrameEvent;
using proto::FrameEventKind;
using proto::FrameHeader;
using proto::kFlagError;
using proto::kFlagMore;
using proto::kFlagResponse;
using proto::kFrameHeaderSize;

namespace {

void setStatus(npu_proto_Status* out, const FwStatus& st) {
    out->code = static_cast<uint32_t>(st.code);
    std::snprintf(out->message, sizeof(out->message), "%s", st.message);
}

// SupportedOperationsReply.supported: one packed bool (one byte each) per operation.
struct BoolList {
    const bool* values;
    uint32_t count;
};
bool encodeBools(pb_ostream_t* stream, const pb_field_t* field, void* const* arg) {
    const auto* list = static_cast<const BoolList*>(*arg);
    if (list->count == 0) return true;
    if (!pb_encode_tag(stream, PB_WT_STRING, field->tag)) return false;
    if (!pb_encode_varint(stream, list->count)) return false;
    for (uint32_t i = 0; i < list->count; ++i) {
        uint8_t b = list->values[i] ? 1 : 0;
        if (!pb_write(stream, &b, 1)) return false;
    }
    return true;
}

// SupportedOperationsReply.unsupported: the reason of each unsupported operation, asked of the
// service one at a time while encoding (nothing stored per operation). Reasons stop when the reply
// would not keep room for one more (a model with thousands of them): the host then has fewer.
struct Refusals {
    Service* service;
    const ModelDesc* model;
    const bool* supported;
    Arena* scratch;
};
bool encodeRefusals(pb_ostream_t* stream, const pb_field_t* field, void* const* arg) {
    const auto* r = static_cast<const Refusals*>(*arg);
    if (r->supported == nullptr) return true;
    constexpr size_t kRoom = sizeof(npu_proto_UnsupportedOperation{}.reason) + 16;
    for (uint32_t i = 0; i < r->model->operationCount; ++i) {
        if (r->supported[i]) continue;
        if (stream->max_size - stream->bytes_written < kRoom) break;
        const FwStatus why = r->service->unsupportedReason(*r->model, r->supported, i, *r->scratch);
        if (why.ok()) continue;
        npu_proto_UnsupportedOperation entry = npu_proto_UnsupportedOperation_init_zero;
        entry.index = i;
        std::snprintf(entry.reason, sizeof(entry.reason), "%s", why.message);
        if (!pb_encode_tag_for_field(stream, field)) return false;
        if (!pb_encode_submessage(stream, npu_proto_UnsupportedOperation_fields, &entry)) return false;
    }
    return true;
}

void toIoArg(const npu_proto_Argument& a, IoArg* out) {
    *out = IoArg{};
    out->hasNoValue = a.has_no_value;
    out->addr = a.addr;
    out->length = a.length;
    out->rank = a.dimensions_count;
    for (uint32_t i = 0; i < out->rank; ++i) out->dims[i] = a.dimensions[i];
    out->bufferToken = a.buffer_token;  // deviceBuffer stays false: only the runtime binds
}

}  // namespace

size_t RpcServer::memoryNeeded(const RpcServerConfig& c) {
    return 5 * alignof(max_align_t) + 2 * (kFrameHeaderSize + size_t(c.maxPayloadBytes)) +
           (kFrameHeaderSize + size_t(c.maxReplyBytes)) + c.maxMessageBytes + c.queueBytes +
           size_t(c.queueDepth) * sizeof(Entry);
}

bool appendCounter(npu_proto_CountersReply* reply, const char* name, uint64_t value) {
    if (reply->counters_count >= sizeof(reply->counters) / sizeof(reply->counters[0])) return false;
    npu_proto_Counter& c = reply->counters[reply->counters_count++];
    std::snprintf(c.name, sizeof(c.name), "%s", name);
    c.value = value;
    return true;
}

RpcServer::RpcServer(Service& service, Arena& arena, FrameSink& sink, const RpcServerConfig& config)
    : service_(&service), arena_(arena), sink_(sink), config_(config) {
    init();
}

RpcServer::RpcServer(Runtime& runtime, Platform& platform, Arena& arena, FrameSink& sink,
                     const RpcServerConfig& config)
    : service_(nullptr), arena_(arena), sink_(sink), config_(config) {
    service_ = new (runtimeServiceStorage_)
        RuntimeService(runtime, platform, config.hostWindowAddr, config.hostWindowBytes);
    init();
}

void RpcServer::init() {
    if (config_.queueDepth == 0 || config_.maxPayloadBytes < 64 || config_.maxReplyBytes < 1024) {
        initStatus_ =
            FwStatus::make(Code::kInvalidArgument,
                           "RpcServer config: queueDepth %" PRIu32 " (>= 1), maxPayloadBytes %" PRIu32
                           " (>= 64), "
                           "maxReplyBytes %" PRIu32 " (>= 1024)",
                           config_.queueDepth, config_.maxPayloadBytes, config_.maxReplyBytes);
        return;
    }
    const size_t frameBytes = kFrameHeaderSize + size_t(config_.maxPayloadBytes);
    decoderBuffer_ = static_cast<uint8_t*>(arena_.allocate(frameBytes));
    frameBuffer_ = static_cast<uint8_t*>(arena_.allocate(frameBytes));
    replyBuffer_ = static_cast<uint8_t*>(arena_.allocate(kFrameHeaderSize + size_t(config_.maxReplyBytes)));
    assembly_ = static_cast<uint8_t*>(arena_.allocate(config_.maxMessageBytes));
    pool_ = static_cast<uint8_t*>(arena_.allocate(config_.queueBytes));
    queue_ = arena_.allocateArray<Entry>(config_.queueDepth);
    if (!decoderBuffer_ || !frameBuffer_ || !replyBuffer_ || !assembly_ || !pool_ || !queue_) {
        initStatus_ =
            FwStatus::make(Code::kResourceExhaustedPersistent,
                           "RpcServer needs %zu arena bytes, the arena has %zu of %zu free",
                           memoryNeeded(config_), arena_.capacity() - arena_.used(), arena_.capacity());
        return;
    }
    decoder_ = proto::FrameDecoder(decoderBuffer_, frameBytes, config_.maxPayloadBytes);
    requestMark_ = arena_.mark();
}

// ---- incoming bytes ---------------------------------------------------------------------------

void RpcServer::onBytes(const uint8_t* data, size_t length) {
    if (!ok()) return;
    decoder_.feed(data, length, *this);
}

void RpcServer::onDisconnect() {
    if (!ok()) return;
    decoder_.finish(*this);
    if (assembling_ && config_.requestFds != nullptr && fdsOf(assemblyMethod_) != 0)
        config_.requestFds->release(assemblyCallId_);
    assembling_ = false;
    assemblyOverflow_ = false;
    assemblyLength_ = 0;
}

void RpcServer::onFrameEvent(const FrameEvent& e) {
    switch (e.kind) {
        case FrameEventKind::kFrame: {
            stats_.framesReceived++;
            const bool bound = bindFds(e.header);
            onRequestFrame(e.header, e.payload);
            if (bound && !callPending(e.header.callId)) config_.requestFds->release(e.header.callId);
            return;
        }
        case FrameEventKind::kGarbage:
            // Not a frame, no call to answer: counted only.
            stats_.garbageBytes += e.skippedBytes;
            return;
        case FrameEventKind::kOversize:
            stats_.badFrames++;
            dropFds(e.header);
            sendError(e.header.callId, Code::kInvalidArgument,
                      "frame of call %llu (method %" PRIu32 ") declares a %" PRIu32
                      "-byte payload; the firmware accepts at most %" PRIu32
                      " "
                      "bytes per frame (fragment with the MORE flag)",
                      static_cast<unsigned long long>(e.header.callId), uint32_t(e.header.type),
                      e.header.length, config_.maxPayloadBytes);
            return;
        case FrameEventKind::kCrcMismatch:
            stats_.badFrames++;
            dropFds(e.header);
            sendError(e.header.callId, Code::kInvalidArgument,
                      "frame of call %llu (method %" PRIu32 ", %" PRIu32
                      " bytes) failed its CRC32C check (header says 0x%08x)",
                      static_cast<unsigned long long>(e.header.callId), uint32_t(e.header.type),
                      e.header.length, static_cast<unsigned>(e.header.crc));
            return;
        case FrameEventKind::kBadVersion:
            stats_.badFrames++;
            dropFds(e.header);
            sendError(e.header.callId, Code::kInvalidArgument,
                      "frame of call %llu has frame version %" PRIu32
                      "; the firmware speaks frame version %" PRIu32 "",
                      static_cast<unsigned long long>(e.header.callId), uint32_t(e.header.version),
                      uint32_t(proto::kFrameVersion));
            return;
        case FrameEventKind::kTruncated:
            stats_.badFrames++;  // the peer is gone: nobody to answer
            return;
    }
}

void RpcServer::onRequestFrame(const FrameHeader& h, const uint8_t* payload) {
    const unsigned long long id = h.callId;
    if ((h.flags & (kFlagResponse | kFlagError)) != 0) {
        sendError(h.callId, Code::kInvalidArgument,
                  "frame of call %llu has flags 0x%" PRIx32 ": the firmware expects requests, not responses",
                  id, uint32_t(h.flags));
        return;
    }
    if (h.type == npu_proto_Method_METHOD_WINDOW_WRITE || h.type == npu_proto_Method_METHOD_WINDOW_READ) {
        // Host-window calls are served by a USB device side in front of the firmware
        // (docs/usb.md); reaching the firmware, they came over a transport that shares the window.
        if ((h.flags & kFlagMore) == 0) {
            sendError(h.callId, Code::kInvalidArgument,
                      "%s (method %" PRIu32
                      ", call %llu) is for transports that share no memory (USB), "
                      "whose device side serves it; this one shares the device memory: use the host "
                      "window directly",
                      h.type == npu_proto_Method_METHOD_WINDOW_WRITE ? "WINDOW_WRITE" : "WINDOW_READ",
                      uint32_t(h.type), id);
        }
        return;
    }
    if (refusedOnArrival(h)) return;
    if (methodName(h.type) == nullptr) {
        // Unknown methods are refused before they take queue space (fragments included).
        if ((h.flags & kFlagMore) == 0) {
            sendError(h.callId, Code::kInvalidArgument, "unknown method %" PRIu32 " (call %llu)",
                      uint32_t(h.type), id);
        }
        return;
    }
    const bool more = (h.flags & kFlagMore) != 0;
    if (!assembling_ || assemblyCallId_ != h.callId) {
        if (!more) {  // the common case: a whole request in one frame
            if (h.type == npu_proto_Method_METHOD_CANCEL) {
                handleCancel(h.callId, payload, h.length);
            } else if (h.type == npu_proto_Method_METHOD_PING && config_.monitor != nullptr) {
                pingOnArrival(h.callId, payload, h.length);
            } else {
                if (h.type == npu_proto_Method_METHOD_RESET && config_.monitor != nullptr)
                    config_.monitor->resetArriving();
                enqueue(h.callId, h.type, payload, h.length);
            }
            return;
        }
        if (assembling_) {
            sendError(h.callId, Code::kInvalidArgument,
                      "call %llu starts a fragmented %s while call %llu is still being reassembled", id,
                      methodName(h.type), static_cast<unsigned long long>(assemblyCallId_));
            return;
        }
        assembling_ = true;
        assemblyOverflow_ = false;
        assemblyCallId_ = h.callId;
        assemblyMethod_ = h.type;
        assemblyLength_ = 0;
    }
    if (!assemblyOverflow_) {
        if (h.length > config_.maxMessageBytes - assemblyLength_) {
            assemblyOverflow_ = true;  // keep swallowing fragments; answer once, at the last one
        } else {
            std::memcpy(assembly_ + assemblyLength_, payload, h.length);
            assemblyLength_ += h.length;
        }
    }
    if (more) return;
    assembling_ = false;
    if (assemblyOverflow_) {
        sendError(h.callId, Code::kResourceExhaustedPersistent,
                  "%s request of call %llu is larger than the firmware's %" PRIu32 "-byte message limit",
                  methodName(assemblyMethod_), id, config_.maxMessageBytes);
        return;
    }
    enqueue(h.callId, assemblyMethod_, assembly_, assemblyLength_);
}

// ---- fds that come with requests (RequestFds) ------------------------------------------------

uint8_t RpcServer::fdsOf(uint32_t method) {
    const Method* m = findMethod(method);
    return m != nullptr ? m->fds : 0;
}

// A message's first frame of a method that carries fds binds them to its call (its later
// fragments came without any).
bool RpcServer::bindFds(const FrameHeader& h) {
    if (config_.requestFds == nullptr || (assembling_ && assemblyCallId_ == h.callId)) return false;
    const uint8_t count = fdsOf(h.type);
    if (count == 0) return false;
    config_.requestFds->bind(h.callId, count);
    return true;
}

// A bad frame's fds go with it. Its header may lie about its method; then a later request finds
// no fd and is refused, which is better than mapping memory it did not send.
void RpcServer::dropFds(const FrameHeader& h) {
    if (bindFds(h)) config_.requestFds->release(h.callId);
}

void RpcServer::releaseFds(const Entry& e) {
    if (config_.requestFds != nullptr && fdsOf(e.method) != 0) config_.requestFds->release(e.callId);
}

bool RpcServer::callPending(uint64_t callId) const {
    if (assembling_ && assemblyCallId_ == callId) return true;
    for (uint32_t i = 0; i < queueCount_; ++i) {
        const Entry& e = queue_[(queueHead_ + i) % config_.queueDepth];
        if (e.callId == callId && !e.cancelled) return true;
    }
    return false;
}

bool RpcServer::refusedOnArrival(const FrameHeader& h) {
    if (!config_.burstChannel || h.type == npu_proto_Method_METHOD_EXECUTE ||
        h.type == npu_proto_Method_METHOD_CANCEL || h.type == npu_proto_Method_METHOD_PING) {
        return false;
    }
    if ((h.flags & kFlagMore) == 0) {  // answered once, at a message's last fragment
        const char* name = methodName(h.type);
        sendError(h.callId, Code::kInvalidArgument,
                  "%s (method %" PRIu32
                  ", call %llu) is not served on a burst channel, which serves Execute, Cancel and Ping "
                  "only: send it on the session's connection",
                  name != nullptr ? name : "an unknown method", uint32_t(h.type),
                  static_cast<unsigned long long>(h.callId));
    }
    return true;
}

bool RpcServer::allocatePool(uint32_t length, uint32_t* offset) {
    if (queueCount_ == 0) poolHead_ = poolTail_ = 0;
    const Entry& oldest = queue_[queueHead_];
    const Entry& newest = queue_[(queueHead_ + queueCount_ + config_.queueDepth - 1) % config_.queueDepth];
    const bool wrapped = queueCount_ > 0 && newest.offset < oldest.offset;
    if (!wrapped) {
        if (config_.queueBytes - poolTail_ >= length) {
            *offset = poolTail_;
        } else if (poolHead_ >= length) {
            *offset = 0;
        } else {
            return false;
        }
    } else if (poolHead_ - poolTail_ >= length) {
        *offset = poolTail_;
    } else {
        return false;
    }
    poolTail_ = *offset + length;
    return true;
}

void RpcServer::enqueue(uint64_t callId, uint8_t method, const uint8_t* payload, uint32_t length) {
    uint32_t offset = 0;
    if (queueCount_ == config_.queueDepth || !allocatePool(length, &offset)) {
        stats_.queueFull++;
        sendError(callId, Code::kResourceExhaustedTransient,
                  "firmware request queue full (%" PRIu32 " of %" PRIu32
                  " requests queued): %s call %llu refused, retry later",
                  queueCount_, config_.queueDepth, methodName(method),
                  static_cast<unsigned long long>(callId));
        return;
    }
    if (length > 0) std::memcpy(pool_ + offset, payload, length);
    const uint32_t slot = (queueHead_ + queueCount_) % config_.queueDepth;
    queue_[slot] = Entry{callId, offset, length, method, false};
    queueCount_++;
    if (config_.gate == nullptr) return;
    const FwStatus admitted = config_.gate->admit(callId, method, pool_ + offset, length, slot);
    if (!admitted.ok()) {
        if (admitted.code == Code::kResourceExhaustedTransient) stats_.queueFull++;
        sendError(callId, admitted.code, "%s", admitted.message);
        retire(slot);
    }
}

void RpcServer::handleCancel(uint64_t callId, const uint8_t* payload, uint32_t length) {
    npu_proto_CancelRequest request = npu_proto_CancelRequest_init_zero;
    pb_istream_t in = pb_istream_from_buffer(payload, length);
    if (!pb_decode(&in, npu_proto_CancelRequest_fields, &request)) {
        sendError(callId, Code::kInvalidArgument, "Cancel call %llu: cannot decode CancelRequest: %s",
                  static_cast<unsigned long long>(callId), PB_GET_ERROR(&in));
        return;
    }
    if (config_.gate != nullptr) return gateCancel(callId, request.target_call_id);
    npu_proto_CancelReply reply = npu_proto_CancelReply_init_zero;
    for (uint32_t i = 0; i < queueCount_; ++i) {
        Entry& e = queue_[(queueHead_ + i) % config_.queueDepth];
        if (e.callId != request.target_call_id || e.cancelled) continue;
        e.cancelled = true;  // its pool space is reclaimed when it reaches the head
        reply.found = true;
        stats_.cancelled++;
        sendError(e.callId, Code::kGeneralFailure,
                  "cancelled: %s call %llu was cancelled by call %llu before it ran", methodName(e.method),
                  static_cast<unsigned long long>(e.callId), static_cast<unsigned long long>(callId));
        break;
    }
    sendReply(callId, npu_proto_Method_METHOD_CANCEL, npu_proto_CancelReply_fields, &reply);
}

// ---- processing -------------------------------------------------------------------------------

bool RpcServer::poll() {
    if (!ok() || queueCount_ == 0 || config_.gate != nullptr) return false;
    const Entry entry = queue_[queueHead_];
    if (!entry.cancelled) {
        stats_.requestsHandled++;
        dispatch(entry, pool_ + entry.offset);
        arena_.release(requestMark_);
    }
    releaseFds(entry);
    popHead();
    return true;
}

void RpcServer::popHead() {
    queueHead_ = (queueHead_ + 1) % config_.queueDepth;
    queueCount_--;
    poolHead_ = queueCount_ > 0 ? queue_[queueHead_].offset : 0;
    if (queueCount_ == 0) poolTail_ = 0;
}

// ---- the method table ------------------------------------------------------------------------

namespace {

// Zeroes every byte of the reply except the output-shape and profile arrays (~24 KiB, more
// than a small execution costs): the encoder reads only the entries below output_shapes_count
// and profile_count, and fillExecuteReply sets every field of those. Byte ranges rather than
// named fields, so a field added to ExecuteReply later starts zeroed too.
void clearExecuteReply(npu_proto_ExecuteReply* rep) {
    auto* bytes = reinterpret_cast<unsigned char*>(rep);
    const size_t shapes = offsetof(npu_proto_ExecuteReply, output_shapes);
    const size_t shapesEnd = shapes + sizeof(rep->output_shapes);
    const size_t profile = offsetof(npu_proto_ExecuteReply, profile);
    const size_t profileEnd = profile + sizeof(rep->profile);
    std::memset(bytes, 0, shapes);
    std::memset(bytes + shapesEnd, 0, profile - shapesEnd);
    std::memset(bytes + profileEnd, 0, sizeof(*rep) - profileEnd);
}

void fillExecuteReply(const npu_proto_ExecuteRequest& req, const ExecResult& result,
                      npu_proto_ExecuteReply* rep) {
    rep->device_cycles = result.deviceCycles;
    rep->clock_hz = result.clockHz;
    const uint32_t outs = result.outputCount < kMaxIo ? result.outputCount : kMaxIo;
    rep->output_shapes_count = static_cast<pb_size_t>(outs);
    for (uint32_t i = 0; i < outs; ++i) {
        const OutputShapeInfo& o = result.outputs[i];
        npu_proto_OutputShape& w = rep->output_shapes[i];
        w.dimensions_count = static_cast<pb_size_t>(o.rank < kMaxRank ? o.rank : kMaxRank);
        for (uint32_t d = 0; d < w.dimensions_count; ++d) w.dimensions[d] = o.dims[d];
        w.is_sufficient = o.sufficient;
    }
    if (!req.measure_timing) return;
    const uint32_t n = result.profileCount < kMaxOperations ? result.profileCount : kMaxOperations;
    rep->profile_count = static_cast<pb_size_t>(n);
    for (uint32_t i = 0; i < n; ++i) {
        const OpProfile& p = result.profile[i];
        rep->profile[i] = {p.operationIndex,   p.type,
                           p.cycles,           p.macs,
                           p.stallCycles,      p.dramReadBytes,
                           p.dramWriteBytes,   p.stallDmaCycles,
                           p.loadActiveCycles, p.computeActiveCycles,
                           p.storeActiveCycles};
    }
}

}  // namespace

#define NPU_RPC_REQUEST(Type, label) npu_proto_##Type##_fields, sizeof(npu_proto_##Type), label
#define NPU_RPC_NO_REQUEST nullptr, 0, ""

// Cancel is served on arrival (handleCancel), never from the queue: no handler here. The two
// Release methods share one request layout ({uint32 handle = 1}) and one handler.
const RpcServer::Method RpcServer::kMethods[] = {
    {npu_proto_Method_METHOD_HELLO, "Hello", NPU_RPC_REQUEST(HelloRequest, "HelloRequest"),
     &RpcServer::onHello},
    {npu_proto_Method_METHOD_GET_CAPABILITIES, "GetCapabilities", NPU_RPC_NO_REQUEST,
     &RpcServer::onGetCapabilities},
    {npu_proto_Method_METHOD_GET_SUPPORTED_OPERATIONS, "GetSupportedOperations", NPU_RPC_NO_REQUEST,
     &RpcServer::onGetSupportedOperations},
    {npu_proto_Method_METHOD_PREPARE_MODEL, "PrepareModel", NPU_RPC_NO_REQUEST, &RpcServer::onPrepareModel},
    {npu_proto_Method_METHOD_PREPARE_FROM_CACHE, "PrepareFromCache",
     NPU_RPC_REQUEST(PrepareFromCacheRequest, ""), &RpcServer::onPrepareFromCache},
    {npu_proto_Method_METHOD_RELEASE_MODEL, "ReleaseModel", NPU_RPC_REQUEST(ReleaseModelRequest, ""),
     &RpcServer::onRelease},
    {npu_proto_Method_METHOD_EXECUTE, "Execute", NPU_RPC_REQUEST(ExecuteRequest, "ExecuteRequest"),
     &RpcServer::onExecute},
    {npu_proto_Method_METHOD_CANCEL, "Cancel", NPU_RPC_NO_REQUEST, nullptr},
    {npu_proto_Method_METHOD_ALLOCATE_BUFFER, "AllocateBuffer", NPU_RPC_REQUEST(AllocateBufferRequest, ""),
     &RpcServer::onAllocateBuffer},
    {npu_proto_Method_METHOD_RELEASE_BUFFER, "ReleaseBuffer", NPU_RPC_REQUEST(ReleaseModelRequest, ""),
     &RpcServer::onRelease},
    {npu_proto_Method_METHOD_BUFFER_COPY, "BufferCopy", NPU_RPC_REQUEST(BufferCopyRequest, ""),
     &RpcServer::onBufferCopy},
    {npu_proto_Method_METHOD_PING, "Ping", NPU_RPC_REQUEST(PingRequest, ""), &RpcServer::onPing},
    {npu_proto_Method_METHOD_RESET, "Reset", NPU_RPC_NO_REQUEST, &RpcServer::onReset},
    {npu_proto_Method_METHOD_GET_COUNTERS, "GetCounters", NPU_RPC_NO_REQUEST, &RpcServer::onGetCounters},
    {npu_proto_Method_METHOD_INJECT_FAULTS, "InjectFaults", NPU_RPC_REQUEST(InjectFaultsRequest, ""),
     &RpcServer::onInjectFaults},
    {npu_proto_Method_METHOD_FETCH_BLOB, "FetchBlob", NPU_RPC_REQUEST(FetchBlobRequest, ""),
     &RpcServer::onFetchBlob},
    {npu_proto_Method_METHOD_MAP_POOL, "MapPool", NPU_RPC_REQUEST(MapPoolRequest, ""), &RpcServer::onMapPool,
     1},
    {npu_proto_Method_METHOD_UNMAP_POOL, "UnmapPool", NPU_RPC_REQUEST(UnmapPoolRequest, ""),
     &RpcServer::onUnmapPool},
    {npu_proto_Method_METHOD_OPEN_BURST_CHANNEL, "OpenBurstChannel", NPU_RPC_NO_REQUEST,
     &RpcServer::onOpenBurstChannel, 2},
};

#undef NPU_RPC_REQUEST
#undef NPU_RPC_NO_REQUEST

const RpcServer::Method* RpcServer::findMethod(uint32_t id) {
    for (const Method& m : kMethods) {
        if (m.id == id) return &m;
    }
    return nullptr;
}

const char* RpcServer::methodName(uint32_t id) {
    const Method* m = findMethod(id);
    return m != nullptr ? m->name : nullptr;
}

// The one decode-or-error path: the request struct comes from the arena (the largest, Execute's,
// is ~20 KiB: never the stack), zeroed as nanopb's *_init_zero, and is decoded before the handler
// runs; a request that does not decode is answered INVALID_ARGUMENT naming the call.
void RpcServer::dispatch(const Entry& entry, const uint8_t* payload) {
    const Method* m = findMethod(entry.method);
    const unsigned long long idl = entry.callId;
    if (m == nullptr || m->handler == nullptr) {
        return sendError(entry.callId, Code::kInvalidArgument, "unknown method %" PRIu32 " (call %llu)",
                         uint32_t(entry.method), idl);
    }
    logf("%s call %llu: %" PRIu32 "-byte request", m->name, idl, entry.length);
    Call call{entry.callId, entry.method, m->name, nullptr, payload, entry.length};
    if (m->requestFields != nullptr) {
        // Not zeroed here: pb_decode sets every field to its default first (no request of the
        // table has callback fields), and the largest (Execute's) would cost 6 KiB of memset.
        call.request = arena_.allocate(m->requestSize);
        if (call.request == nullptr) return noMemory(call);
        pb_istream_t in = pb_istream_from_buffer(payload, entry.length);
        if (!pb_decode(&in, m->requestFields, call.request)) {
            return sendError(entry.callId, Code::kInvalidArgument, "%s call %llu: cannot decode%s%s: %s",
                             m->name, idl, m->requestLabel[0] != '\0' ? " " : "", m->requestLabel,
                             PB_GET_ERROR(&in));
        }
    }
    (this->*(m->handler))(call);
}

void RpcServer::noMemory(const Call& call) {
    sendError(call.id, Code::kResourceExhaustedTransient,
              "%s call %llu: firmware arena exhausted (%zu of %zu bytes used)", call.name,
              static_cast<unsigned long long>(call.id), arena_.used(), arena_.capacity());
}

template <typename T>
T* RpcServer::allocateFor(const Call& call) {
    T* reply = arena_.allocateArray<T>(1);  // value-initialised: nanopb's *_init_zero
    if (reply == nullptr) noMemory(call);
    return reply;
}

void RpcServer::onHello(const Call& call) {
    const auto& req = *static_cast<const npu_proto_HelloRequest*>(call.request);
    auto* rep = allocateFor<npu_proto_HelloReply>(call);
    if (!rep) return;
    rep->major = kProtocolMajor;
    rep->minor = kProtocolMinor;
    std::snprintf(rep->firmware_version, sizeof(rep->firmware_version), "%s", config_.firmwareVersion);
    rep->hw_id = config_.hwId;
    rep->hw_version = config_.hwVersion;
    rep->device_memory_bytes = config_.deviceMemoryBytes;
    // Only on the session's first call: nothing it sent yet can name the old window.
    if (req.major == kProtocolMajor && req.window_addr != 0 && req.window_addr != config_.hostWindowAddr &&
        stats_.requestsHandled == 1 && config_.windowPlacer != nullptr &&
        config_.windowPlacer->placeWindow(req.window_addr)) {
        config_.hostWindowAddr = req.window_addr;
    }
    rep->host_window_addr = config_.hostWindowAddr;
    rep->host_window_bytes = config_.hostWindowBytes;
    rep->max_payload_bytes = config_.maxPayloadBytes;
    rep->window_fd_is_window = config_.windowFdIsWindow;
    rep->queue_depth = config_.queueDepth;
    rep->burst_channels = config_.burstChannels != nullptr;
    rep->has_status = true;
    if (req.major != kProtocolMajor) {
        setStatus(&rep->status,
                  FwStatus::make(Code::kDeviceUnavailable,
                                 "protocol version mismatch: host '%s' speaks %" PRIu32 ".%" PRIu32
                                 ", firmware speaks %" PRIu32 ".%" PRIu32 "",
                                 req.host_version, req.major, req.minor, kProtocolMajor, kProtocolMinor));
    }
    sendReply(call.id, call.method, npu_proto_HelloReply_fields, rep);
}

void RpcServer::onGetCapabilities(const Call& call) {
    auto* rep = allocateFor<npu_proto_CapabilitiesReply>(call);
    if (!rep) return;
    service_->capabilities(rep);
    sendReply(call.id, call.method, npu_proto_CapabilitiesReply_fields, rep);
}

namespace {
// A model request that does not decode, named as the method table names the others' ("PrepareModel
// call 7: cannot decode the model ...").
FwStatus modelDecodeFailure(const char* method, uint64_t callId, const FwStatus& st) {
    return FwStatus::make(st.code, "%s call %llu: %s", method, static_cast<unsigned long long>(callId),
                          st.message);
}
}  // namespace

// Model requests decode through decodeModelRequest, whose failure is the reply's status.
void RpcServer::onGetSupportedOperations(const Call& call) {
    auto* req = allocateFor<npu_proto_GetSupportedOperationsRequest>(call);
    auto* rep = req ? allocateFor<npu_proto_SupportedOperationsReply>(call) : nullptr;
    if (!rep) return;
    ModelDesc model;
    FwStatus st =
        decodeModelRequest(call.payload, call.length, npu_proto_GetSupportedOperationsRequest_fields, req,
                           &req->model, arena_, &model);
    if (!st.ok()) st = modelDecodeFailure(call.name, call.id, st);
    BoolList list{nullptr, 0};
    Refusals refusals{service_, &model, nullptr, &arena_};
    if (st.ok()) {
        bool* supported = model.operationCount ? arena_.allocateArray<bool>(model.operationCount) : nullptr;
        if (model.operationCount && !supported) return noMemory(call);
        st = service_->supportedOperations(model, supported, arena_);
        if (st.ok()) {
            list = {supported, model.operationCount};
            refusals.supported = supported;
        }
    }
    rep->has_status = true;
    setStatus(&rep->status, st);
    rep->supported.funcs.encode = encodeBools;
    rep->supported.arg = &list;
    rep->unsupported.funcs.encode = encodeRefusals;
    rep->unsupported.arg = &refusals;
    sendReply(call.id, call.method, npu_proto_SupportedOperationsReply_fields, rep);
}

void RpcServer::onPrepareModel(const Call& call) {
    auto* rep = allocateFor<npu_proto_PrepareModelReply>(call);
    auto* req = rep ? allocateFor<npu_proto_PrepareModelRequest>(call) : nullptr;
    if (!req) return;
    BlobInfo info;
    ModelDesc model;
    FwStatus st = decodeModelRequest(call.payload, call.length, npu_proto_PrepareModelRequest_fields, req,
                                     &req->model, arena_, &model);
    if (!st.ok()) st = modelDecodeFailure(call.name, call.id, st);
    if (st.ok()) st = service_->prepareModel(model, *req, arena_, &info);
    sendPrepareReply(call, rep, st, info);
}

void RpcServer::onPrepareFromCache(const Call& call) {
    auto* rep = allocateFor<npu_proto_PrepareModelReply>(call);
    if (!rep) return;
    BlobInfo info;
    FwStatus st = service_->prepareFromCache(
        *static_cast<const npu_proto_PrepareFromCacheRequest*>(call.request), arena_, &info);
    sendPrepareReply(call, rep, st, info);
}

void RpcServer::sendPrepareReply(const Call& call, npu_proto_PrepareModelReply* rep, const FwStatus& st,
                                 const BlobInfo& info) {
    rep->has_status = true;
    setStatus(&rep->status, st);
    if (st.ok()) {
        rep->model_handle = info.handle;
        rep->model_blob_bytes = info.modelBlobBytes;
        rep->data_blob_bytes = info.dataBlobBytes;
        rep->num_inputs = info.numInputs;
        rep->num_outputs = info.numOutputs;
        rep->tuning_trials = info.tuningTrials;
        rep->greedy_cycles = info.greedyCycles;
        rep->tuned_cycles = info.tunedCycles;
    }
    sendReply(call.id, call.method, npu_proto_PrepareModelReply_fields, rep);
}

void RpcServer::onFetchBlob(const Call& call) {
    auto* rep = allocateFor<npu_proto_FetchBlobReply>(call);
    if (!rep) return;
    FwStatus st = service_->fetchBlob(*static_cast<const npu_proto_FetchBlobRequest*>(call.request), rep);
    rep->has_status = true;
    setStatus(&rep->status, st);
    sendReply(call.id, call.method, npu_proto_FetchBlobReply_fields, rep);
}

// ReleaseModel and ReleaseBuffer: both requests are {uint32 handle/token = 1}, both replies
// {Status status = 1}.
void RpcServer::onRelease(const Call& call) {
    const uint32_t handle = static_cast<const npu_proto_ReleaseModelRequest*>(call.request)->model_handle;
    auto* rep = allocateFor<npu_proto_ReleaseModelReply>(call);
    if (!rep) return;
    FwStatus st = call.method == npu_proto_Method_METHOD_RELEASE_MODEL ? service_->releaseModel(handle)
                                                                       : service_->releaseBuffer(handle);
    rep->has_status = true;
    setStatus(&rep->status, st);
    sendReply(call.id, call.method, npu_proto_ReleaseModelReply_fields, rep);
}

void RpcServer::onExecute(const Call& call) {
    const auto& req = *static_cast<const npu_proto_ExecuteRequest*>(call.request);
    // Not value-initialised (allocateFor): clearExecuteReply zeroes all but the entry arrays.
    auto* rep = static_cast<npu_proto_ExecuteReply*>(
        arena_.allocate(sizeof(npu_proto_ExecuteReply), alignof(npu_proto_ExecuteReply)));
    if (rep != nullptr) clearExecuteReply(rep);
    // Only the counts are set: the executor fills the profile and output entries it reports,
    // and zeroing all of them (20 KiB) would cost more than a small execution.
    auto* result = static_cast<ExecResult*>(arena_.allocate(sizeof(ExecResult), alignof(ExecResult)));
    if (result != nullptr) {
        result->deviceCycles = result->clockHz = 0;
        result->profileCount = result->outputCount = 0;
    }
    // Uninitialised: toIoArg sets every field of the entries used.
    auto* args = static_cast<IoArg*>(arena_.allocate(2 * kMaxIo * sizeof(IoArg), alignof(IoArg)));
    if (!rep || !result || !args) return noMemory(call);
    for (uint32_t i = 0; i < req.inputs_count; ++i) toIoArg(req.inputs[i], &args[i]);
    for (uint32_t i = 0; i < req.outputs_count; ++i) toIoArg(req.outputs[i], &args[kMaxIo + i]);
    result->deviceFault = kDeviceFaultNone;
    FwStatus st = service_->execute(req, args, req.inputs_count, args + kMaxIo, req.outputs_count, result);
    rep->has_status = true;
    setStatus(&rep->status, st);
    if (!st.ok()) {
        rep->device_fault = result->deviceFault;
        if (result->deviceFault == kDeviceFaultHang) stats_.npuHangs++;
        if (result->deviceFault == kDeviceFaultData) stats_.npuDataFaults++;
    }
    if (st.ok() || st.code == Code::kOutputInsufficientSize) fillExecuteReply(req, *result, rep);
    logf("Execute call %llu: model 0x%" PRIx32 ", status %" PRIu32 ", %llu device cycles",
         static_cast<unsigned long long>(call.id), req.model_handle, static_cast<uint32_t>(st.code),
         static_cast<unsigned long long>(result->deviceCycles));
    sendReply(call.id, call.method, npu_proto_ExecuteReply_fields, rep);
}

void RpcServer::onAllocateBuffer(const Call& call) {
    auto* rep = allocateFor<npu_proto_AllocateBufferReply>(call);
    if (!rep) return;
    FwStatus st = service_->allocateBuffer(*static_cast<const npu_proto_AllocateBufferRequest*>(call.request),
                                           &rep->buffer_token);
    rep->has_status = true;
    setStatus(&rep->status, st);
    sendReply(call.id, call.method, npu_proto_AllocateBufferReply_fields, rep);
}

void RpcServer::onBufferCopy(const Call& call) {
    auto* rep = allocateFor<npu_proto_BufferCopyReply>(call);
    if (!rep) return;
    FwStatus st = service_->bufferCopy(*static_cast<const npu_proto_BufferCopyRequest*>(call.request));
    rep->has_status = true;
    setStatus(&rep->status, st);
    sendReply(call.id, call.method, npu_proto_BufferCopyReply_fields, rep);
}

// In order (no monitor: a bare firmware serves one request at a time): nothing else runs now, and
// every request handled is progress.
void RpcServer::onPing(const Call& call) {
    WorkState work;
    work.progress = stats_.requestsHandled;
    sendPing(call.id, static_cast<const npu_proto_PingRequest*>(call.request)->nonce, work, false);
}

void RpcServer::pingOnArrival(uint64_t callId, const uint8_t* payload, uint32_t length) {
    npu_proto_PingRequest request = npu_proto_PingRequest_init_zero;
    pb_istream_t in = pb_istream_from_buffer(payload, length);
    if (!pb_decode(&in, npu_proto_PingRequest_fields, &request)) {
        sendError(callId, Code::kInvalidArgument, "Ping call %llu: cannot decode PingRequest: %s",
                  static_cast<unsigned long long>(callId), PB_GET_ERROR(&in));
        return;
    }
    stats_.pingsOnArrival++;
    sendPing(callId, request.nonce, config_.monitor->work(), true);
}

void RpcServer::sendPing(uint64_t callId, uint64_t nonce, const WorkState& work, bool onArrival) {
    npu_proto_PingReply rep = npu_proto_PingReply_init_zero;
    rep.has_status = true;
    rep.nonce = nonce;
    rep.uptime_us = service_->uptimeUs();
    rep.item_running = work.itemRunning;
    rep.item_running_us = work.itemRunningUs;
    rep.progress = work.progress;
    // In order, the Ping itself is the head of the queue.
    const uint32_t pending = requestsPending();
    rep.session_queued = (onArrival || pending == 0 ? pending : pending - 1) + work.otherQueued;
    rep.item_is_mine = work.itemIsMine;
    rep.answered_on_arrival = onArrival;
    sendReply(callId, npu_proto_Method_METHOD_PING, npu_proto_PingReply_fields, &rep);
}

uint32_t RpcServer::requestsPending() const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < queueCount_; ++i) {
        if (!queue_[(queueHead_ + i) % config_.queueDepth].cancelled) ++n;
    }
    return n;
}

void RpcServer::onReset(const Call& call) {
    npu_proto_ResetReply rep = npu_proto_ResetReply_init_zero;
    rep.has_status = true;
    setStatus(&rep.status, service_->reset());
    stats_.resets++;
    sendReply(call.id, call.method, npu_proto_ResetReply_fields, &rep);
}

void RpcServer::onInjectFaults(const Call& call) {
    const auto& req = *static_cast<const npu_proto_InjectFaultsRequest*>(call.request);
    npu_proto_InjectFaultsReply rep = npu_proto_InjectFaultsReply_init_zero;
    rep.has_status = true;
    setStatus(&rep.status, config_.faultInjector != nullptr
                               ? config_.faultInjector->injectFaults(req)
                               : FwStatus::make(Code::kGeneralFailure,
                                                "fault injection is off in this firmware host (start npu-fwd "
                                                "with --fault-injection)"));
    sendReply(call.id, call.method, npu_proto_InjectFaultsReply_fields, &rep);
}

void RpcServer::onGetCounters(const Call& call) {
    auto* rep = allocateFor<npu_proto_CountersReply>(call);
    if (!rep) return;
    rep->has_status = true;
    const struct {
        const char* name;
        uint64_t value;
    } mine[] = {{"rpc.frames_received", stats_.framesReceived},
                {"rpc.requests", stats_.requestsHandled},
                {"rpc.bad_frames", stats_.badFrames},
                {"rpc.garbage_bytes", stats_.garbageBytes},
                {"rpc.queue_full", stats_.queueFull},
                {"rpc.cancelled", stats_.cancelled},
                {"rpc.arena_bytes", arena_.capacity()},
                {"rpc.arena_peak_bytes", arena_.peak()},
                {"rpc.arena_fixed_bytes", requestMark_},
                {"rpc.resets", stats_.resets},
                {"rpc.pings_on_arrival", stats_.pingsOnArrival},
                {"npu.hangs", stats_.npuHangs},
                {"npu.data_faults", stats_.npuDataFaults}};
    for (const auto& c : mine) appendCounter(rep, c.name, c.value);
    appendCounter(rep, "rpc.progress_sent", stats_.progressSent);
    service_->counters(rep);
    if (config_.platformCounters != nullptr) config_.platformCounters->counters(rep);
    sendReply(call.id, call.method, npu_proto_CountersReply_fields, rep);
}

namespace {
FwStatus noPools(const char* what) {
    return FwStatus::make(Code::kGeneralFailure,
                          "%s: this firmware platform maps no client memory (pools are staged in the host "
                          "window instead)",
                          what);
}
}  // namespace

void RpcServer::onMapPool(const Call& call) {
    npu_proto_MapPoolReply rep = npu_proto_MapPoolReply_init_zero;
    rep.has_status = true;
    const auto& req = *static_cast<const npu_proto_MapPoolRequest*>(call.request);
    setStatus(&rep.status,
              config_.pools != nullptr ? config_.pools->mapPool(call.id, req, &rep) : noPools("MapPool"));
    sendReply(call.id, call.method, npu_proto_MapPoolReply_fields, &rep);
}

void RpcServer::onUnmapPool(const Call& call) {
    npu_proto_UnmapPoolReply rep = npu_proto_UnmapPoolReply_init_zero;
    rep.has_status = true;
    const uint32_t id = static_cast<const npu_proto_UnmapPoolRequest*>(call.request)->pool_id;
    setStatus(&rep.status, config_.pools != nullptr ? config_.pools->unmapPool(id) : noPools("UnmapPool"));
    sendReply(call.id, call.method, npu_proto_UnmapPoolReply_fields, &rep);
}

void RpcServer::onOpenBurstChannel(const Call& call) {
    npu_proto_OpenBurstChannelReply rep = npu_proto_OpenBurstChannelReply_init_zero;
    rep.has_status = true;
    setStatus(&rep.status,
              config_.burstChannels != nullptr
                  ? config_.burstChannels->openBurstChannel(call.id, &rep)
                  : FwStatus::make(Code::kGeneralFailure,
                                   "OpenBurstChannel: this firmware platform shares no memory with its "
                                   "client (bursts run on the session's connection)"));
    sendReply(call.id, call.method, npu_proto_OpenBurstChannelReply_fields, &rep);
}

// ---- outgoing frames --------------------------------------------------------------------------

void RpcServer::sendReply(uint64_t callId, uint8_t method, const pb_msgdesc_t* fields, const void* reply) {
    pb_ostream_t out = pb_ostream_from_buffer(replyBuffer_ + kFrameHeaderSize, config_.maxReplyBytes);
    if (!pb_encode(&out, fields, reply)) {
        sendError(callId, Code::kGeneralFailure,
                  "%s call %llu: cannot encode the reply (limit %" PRIu32 " bytes): %s", methodName(method),
                  static_cast<unsigned long long>(callId), config_.maxReplyBytes, PB_GET_ERROR(&out));
        return;
    }
    sendPayload(callId, method, kFlagResponse, replyBuffer_ + kFrameHeaderSize, out.bytes_written);
}

void RpcServer::sendProgress(uint64_t callId, const WorkProgress& progress) {
    npu_proto_ProgressEvent event = npu_proto_ProgressEvent_init_zero;
    event.call_id = callId;
    event.phase = static_cast<uint32_t>(progress.phase);
    event.done = progress.done;
    event.total = progress.total;
    // Its own small buffer: it is sent while a request runs, when the reply and frame buffers
    // may be in use.
    uint8_t frame[kFrameHeaderSize + npu_proto_ProgressEvent_size];
    pb_ostream_t out = pb_ostream_from_buffer(frame + kFrameHeaderSize, npu_proto_ProgressEvent_size);
    if (!pb_encode(&out, npu_proto_ProgressEvent_fields, &event)) {
        stats_.sinkFailures++;
        return;
    }
    FrameHeader h;
    h.type = npu_proto_Method_METHOD_PROGRESS;
    h.flags = 0;  // an event: neither a response nor an error
    h.callId = callId;
    h.length = static_cast<uint32_t>(out.bytes_written);
    proto::encodeFrameHeader(h, frame + kFrameHeaderSize, frame);
    if (!sink_.writeFrame(frame, kFrameHeaderSize + h.length, h.type, h.flags)) {
        stats_.sinkFailures++;
        return;
    }
    stats_.progressSent++;
}

void RpcServer::sendError(uint64_t callId, Code code, const char* fmt, ...) {
    npu_proto_ErrorReply reply = npu_proto_ErrorReply_init_zero;
    reply.has_status = true;
    reply.status.code = static_cast<uint32_t>(code);
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(reply.status.message, sizeof(reply.status.message), fmt, args);
    va_end(args);
    logf("call %llu: error %" PRIu32 ": %s", static_cast<unsigned long long>(callId), reply.status.code,
         reply.status.message);
    // Encoded into the frame buffer: an error may be sent while replyBuffer_ holds a reply.
    uint8_t* payload = frameBuffer_ + kFrameHeaderSize;
    pb_ostream_t out = pb_ostream_from_buffer(payload, config_.maxPayloadBytes);
    if (!pb_encode(&out, npu_proto_ErrorReply_fields, &reply)) {
        stats_.sinkFailures++;
        return;
    }
    FrameHeader h;
    h.type = proto::kMethodError;
    h.flags = kFlagResponse | kFlagError;
    h.callId = callId;
    h.length = static_cast<uint32_t>(out.bytes_written);
    proto::encodeFrameHeader(h, payload, frameBuffer_);
    if (!sink_.writeFrame(frameBuffer_, kFrameHeaderSize + h.length, h.type, h.flags)) stats_.sinkFailures++;
}

void RpcServer::sendPayload(uint64_t callId, uint8_t method, uint16_t flags, uint8_t* payload,
                            size_t length) {
    // `payload` has kFrameHeaderSize bytes of room before it: one frame is sent in place; a
    // larger reply is fragmented through frameBuffer_.
    size_t offset = 0;
    do {
        size_t n = length - offset;
        if (n > config_.maxPayloadBytes) n = config_.maxPayloadBytes;
        const bool more = offset + n < length;
        FrameHeader h;
        h.type = method;
        h.flags = static_cast<uint16_t>(flags | (more ? kFlagMore : 0));
        h.callId = callId;
        h.length = static_cast<uint32_t>(n);
        uint8_t* frame;
        if (offset == 0 && !more) {
            frame = payload - kFrameHeaderSize;
        } else {
            frame = frameBuffer_;
            std::memcpy(frame + kFrameHeaderSize, payload + offset, n);
        }
        proto::encodeFrameHeader(h, frame + kFrameHeaderSize, frame);
        if (!sink_.writeFrame(frame, kFrameHeaderSize + n, method, h.flags)) {
            stats_.sinkFailures++;
            return;
        }
        offset += n;
    } while (offset < length);
}

void RpcServer::logf(const char* fmt, ...) {
    if (config_.log == nullptr || !config_.log->enabled()) return;
    char line[256];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(line, sizeof(line), fmt, args);
    va_end(args);
    config_.log->write(line);
}

}  // namespace npu::fw
