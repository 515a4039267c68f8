// The firmware's work scheduler (see npu/fw/scheduler.h). The queue is small (tens of items),
// so it is an unordered array scanned linearly: no heap, no pointers into it kept anywhere.
#include "npu/fw/scheduler.h"

#include <cinttypes>

namespace npu::fw {

bool toPriority(uint32_t wire, Priority* out) {
    if (wire >= kPriorityCount) return false;
    *out = static_cast<Priority>(wire);
    return true;
}

size_t Scheduler::memoryNeeded(uint32_t capacity) {
    return size_t(capacity) * sizeof(WorkItem) + alignof(WorkItem);
}

Scheduler::Scheduler(Arena& arena, uint32_t capacity) {
    if (capacity == 0) return;
    items_ = arena.allocateArray<WorkItem>(capacity);
    if (items_ != nullptr) capacity_ = capacity;
}

FwStatus Scheduler::submit(const WorkItem& item) {
    if (!ok()) return FwStatus::make(Code::kGeneralFailure, "scheduler: no queue (arena too small)");
    if (count_ == capacity_) {
        stats_.full++;
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "NPU work queue full (%" PRIu32
                              " items from all sessions): call %llu of "
                              "session %" PRIu32 " refused, retry later",
                              capacity_, static_cast<unsigned long long>(item.callId), item.session);
    }
    items_[count_] = item;
    items_[count_].sequence = nextSequence_++;
    items_[count_].workRanAtSubmit = workRan_;
    count_++;
    stats_.submitted++;
    if (count_ > stats_.maxQueued) stats_.maxQueued = count_;
    return FwStatus::okStatus();
}

// Control items first, then HIGH, MEDIUM, LOW.
uint32_t Scheduler::rank(const WorkItem& item) {
    return item.control ? kPriorityCount : static_cast<uint32_t>(item.priority);
}

void Scheduler::removeAt(uint32_t index) {
    items_[index] = items_[count_ - 1];
    count_--;
}

Scheduler::Pick Scheduler::next(uint64_t nowUs, WorkItem* out, bool controlOnly) {
    if (running_ || count_ == 0) return Pick::kNone;
    for (uint32_t i = 0; i < count_; ++i) {
        if (items_[i].deadlineUs != 0 && items_[i].deadlineUs <= nowUs) {
            *out = items_[i];
            removeAt(i);
            stats_.expired++;
            return Pick::kExpired;
        }
    }
    uint32_t best = 0;
    for (uint32_t i = 1; i < count_; ++i) {
        const uint32_t a = rank(items_[i]);
        const uint32_t b = rank(items_[best]);
        if (a > b || (a == b && items_[i].sequence < items_[best].sequence)) best = i;
    }
    if (controlOnly && !items_[best].control) return Pick::kNone;
    current_ = items_[best];
    removeAt(best);
    if (current_.control) {
        stats_.control++;
    } else {
        for (uint32_t i = 0; i < count_; ++i) {
            if (!items_[i].control && items_[i].priority < current_.priority &&
                items_[i].sequence < current_.sequence) {
                stats_.overtakes++;
                break;
            }
        }
        stats_.ran[static_cast<uint32_t>(current_.priority)]++;
        current_.waited = workRan_ != current_.workRanAtSubmit;
        workRan_++;
    }
    running_ = true;
    runningCancelled_ = false;
    runningMissed_ = false;
    *out = current_;
    return Pick::kRun;
}

void Scheduler::finish() {
    running_ = false;
    runningCancelled_ = false;
    runningMissed_ = false;
}

Code Scheduler::missedDeadlineCode(const WorkItem& item, bool ran) {
    return ran && !item.waited ? Code::kMissedDeadlinePersistent : Code::kMissedDeadlineTransient;
}

StopReason Scheduler::runningStop(uint64_t nowUs) {
    if (!running_) return StopReason::kNone;
    if (runningCancelled_) return StopReason::kCancelled;
    if (current_.deadlineUs == 0 || nowUs < current_.deadlineUs) return StopReason::kNone;
    if (!runningMissed_) stats_.missedRunning++;
    runningMissed_ = true;
    return missedDeadlineCode(current_, true) == Code::kMissedDeadlinePersistent
               ? StopReason::kDeadlinePersistent
               : StopReason::kDeadlineTransient;
}

Scheduler::Cancelled Scheduler::cancel(uint32_t session, uint64_t callId, WorkItem* out) {
    for (uint32_t i = 0; i < count_; ++i) {
        if (items_[i].session == session && items_[i].callId == callId) {
            *out = items_[i];
            removeAt(i);
            stats_.cancelledQueued++;
            return Cancelled::kQueued;
        }
    }
    if (running_ && current_.session == session && current_.callId == callId) {
        if (!runningCancelled_) stats_.cancelledRunning++;
        runningCancelled_ = true;
        *out = current_;
        return Cancelled::kRunning;
    }
    return Cancelled::kNotFound;
}

uint32_t Scheduler::dropSession(uint32_t session, WorkItem* out, uint32_t maxOut) {
    uint32_t dropped = 0;
    for (uint32_t i = 0; i < count_;) {
        if (items_[i].session != session) {
            ++i;
            continue;
        }
        if (dropped < maxOut) out[dropped] = items_[i];
        dropped++;
        removeAt(i);
    }
    stats_.dropped += dropped;
    return dropped;
}

}  // namespace npu::fw
