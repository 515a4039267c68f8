// RpcServer with a RequestGate (npu/fw/rpc_server.h): the requests of one session, queued in the
// server, run when the platform's scheduler says so, in any order. The queue keeps its arrival
// order for payload space: an entry served out of order is marked done and its space is
// reclaimed once every older entry is done too.
#include <pb_decode.h>
#include <pb_encode.h>

#include "npu/fw/rpc_server.h"

namespace npu::fw {

void RpcServer::retire(uint32_t slot) {
    if (!queue_[slot].cancelled) releaseFds(queue_[slot]);
    queue_[slot].cancelled = true;  // "done": never served again
    while (queueCount_ > 0 && queue_[queueHead_].cancelled) popHead();
}

bool RpcServer::runSlot(uint32_t slot) {
    if (!ok() || slot >= config_.queueDepth || queueCount_ == 0) return false;
    const Entry entry = queue_[slot];
    if (entry.cancelled) return false;
    stats_.requestsHandled++;
    dispatch(entry, pool_ + entry.offset);
    arena_.release(requestMark_);
    retire(slot);
    answerDeferredCancels();
    return true;
}

void RpcServer::answerDeferredCancels() {
    npu_proto_CancelReply reply = npu_proto_CancelReply_init_zero;
    reply.found = true;
    for (uint32_t i = 0; i < deferredCancelCount_; ++i) {
        sendReply(deferredCancels_[i], npu_proto_Method_METHOD_CANCEL, npu_proto_CancelReply_fields, &reply);
    }
    deferredCancelCount_ = 0;
}

bool RpcServer::failSlot(uint32_t slot, Code code, const char* message) {
    if (!ok() || slot >= config_.queueDepth || queueCount_ == 0 || queue_[slot].cancelled) return false;
    sendError(queue_[slot].callId, code, "%s", message);
    retire(slot);
    return true;
}

// Cancel through the gate: a request still queued is answered GENERAL_FAILURE ("cancelled") and
// the Cancel call gets found = true; a running one is flagged (the executor stops at its next
// command boundary and answers for itself) and the Cancel gets found = true once it has stopped.
void RpcServer::gateCancel(uint64_t cancelCallId, uint64_t targetCallId) {
    uint32_t slot = 0;
    npu_proto_CancelReply reply = npu_proto_CancelReply_init_zero;
    switch (config_.gate->cancel(targetCallId, &slot)) {
        case RequestGate::Cancelled::kNotFound:
            break;
        case RequestGate::Cancelled::kQueued:
            reply.found = true;
            stats_.cancelled++;
            if (slot < config_.queueDepth && !queue_[slot].cancelled) {
                sendError(targetCallId, Code::kGeneralFailure,
                          "cancelled: call %llu was cancelled by call %llu before it ran",
                          static_cast<unsigned long long>(targetCallId),
                          static_cast<unsigned long long>(cancelCallId));
                retire(slot);
            }
            break;
        case RequestGate::Cancelled::kRunning:
            reply.found = true;
            stats_.cancelled++;
            if (deferredCancelCount_ < kMaxDeferredCancels) {
                deferredCancels_[deferredCancelCount_++] = cancelCallId;
                return;
            }
            break;  // more Cancels of one request than that: answered at once
    }
    sendReply(cancelCallId, npu_proto_Method_METHOD_CANCEL, npu_proto_CancelReply_fields, &reply);
}

}  // namespace npu::fw
