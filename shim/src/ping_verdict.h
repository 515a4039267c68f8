#pragma once
// What a Ping answer says of the firmware after a call timed out (docs/reliability.md, "Watchdog,
// reset, replay"). A firmware host answers Ping on arrival, ahead of queued work and while an item
// runs, so an answer alone no longer proves that the earlier calls were served. Pure functions of
// the PingReply fields: a hostile peer's values (any number) only steer the verdict.

#include "npu.pb.h"

namespace npu::shim {

// Every earlier call of this session was served: the ping was answered in order (a bare
// firmware), or on arrival while no item ran and nothing of this session was queued. The timed-out
// call's late reply was dropped; it is replayed, nothing reset.
inline bool servedEverything(const proto::PingReply& reply) {
    return !reply.answered_on_arrival() || (!reply.item_running() && reply.session_queued() == 0);
}

// Between two answers the firmware made progress: no item runs any more, or its progress counter
// grew (it only grows; a counter that went back is not progress).
inline bool progressed(const proto::PingReply& before, const proto::PingReply& after) {
    return !after.item_running() || after.progress() > before.progress();
}

}  // namespace npu::shim
