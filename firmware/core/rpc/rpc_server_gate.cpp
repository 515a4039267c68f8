// RpcServer with a RequestGate (npu/fw/rpc_server.h): the requests of one session, queued in the
// server, run when the platform's scheduler says so, in any order. The queue keeps its arrival
// order for payload space: an entry served out of order is marked done and its space is
// reclaimed once every older entry is done too.
#include <pb_decode.h>
#include <pb_encode.h>

#include "npu/fw/rpc_server.h"

namespace npu::fw {

void RpcServer::retire(uint32_t slot) {
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
    return true;
}

bool RpcServer::failSlot(uint32_t slot, Code code, const char* message) {
    if (!ok() || slot >= config_.queueDepth || queueCount_ == 0 || queue_[slot].cancelled) return false;
    sendError(queue_[slot].callId, code, "%s", message);
    retire(slot);
    return true;
}

// Cancel through the gate: a request still queued is answered GENERAL_FAILURE ("cancelled") and
// the Cancel call gets found = true; a running one gets found = true and answers for itself.
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
            break;
    }
    sendReply(cancelCallId, npu_proto_Method_METHOD_CANCEL, npu_proto_CancelReply_fields, &reply);
}

}  // namespace npu::fw
