#pragma once
// The firmware's work scheduler: one queue for the work of every session (client) of one NPU.
// Work runs one item at a time, HIGH priority first, then MEDIUM, then LOW; FIFO within a
// priority (a HIGH item overtakes every queued LOW and MEDIUM one, never a running one). An item
// whose deadline passes while it waits is handed back as expired (the caller answers
// missedDeadlineCode) instead of running; a queued item can be cancelled; a running one carries a
// cancel flag and its deadline, which the executor and the compiler ask for (runningStop) at
// their checkpoints between operations, where they can stop.
//
// firmware/core rules: no OS headers, no exceptions, no heap: the table comes from the Arena
// at construction (memoryNeeded), with a fixed capacity (RESOURCE_EXHAUSTED_TRANSIENT when
// full). Not thread-safe: the platform serialises the calls. docs/execution.md "Scheduler".

#include <cstddef>
#include <cstdint>

#include "npu/fw/arena.h"
#include "npu/fw/runtime.h"

namespace npu::fw {

// HAL Priority values.
enum class Priority : uint8_t { kLow = 0, kMedium = 1, kHigh = 2 };
inline constexpr uint32_t kPriorityCount = 3;

// The WHILE loop timeout of an execution (ExecuteRequest.loop_timeout_ns): 0 means the default,
// 2 s; anything above 15 s is clamped to 15 s, as the NN HAL prescribes.
inline constexpr uint64_t kDefaultLoopTimeoutNs = 2'000'000'000ull;
inline constexpr uint64_t kMaxLoopTimeoutNs = 15'000'000'000ull;
inline uint64_t effectiveLoopTimeoutNs(uint64_t requested) {
    if (requested == 0) return kDefaultLoopTimeoutNs;
    return requested > kMaxLoopTimeoutNs ? kMaxLoopTimeoutNs : requested;
}

// Turns a wire priority into a Priority; false (and *out untouched) when out of range.
bool toPriority(uint32_t wire, Priority* out);

// One unit of work: which session's which call, and the caller's own reference to it (`slot`,
// e.g. where the session keeps the request's payload).
struct WorkItem {
    uint32_t session = 0;
    uint64_t callId = 0;
    uint32_t slot = 0;
    Priority priority = Priority::kMedium;
    uint64_t deadlineUs = 0;       // absolute, on the clock passed to next(); 0 = none
    uint64_t sequence = 0;         // submission order (assigned by submit)
    uint64_t workRanAtSubmit = 0;  // work items handed out before its submission (assigned by submit)
    bool waited = false;           // other work ran between its submission and its start (next)
    // Control calls (handshake, ping, counters, release...): no NPU time of their own, run before
    // any queued work, FIFO, and count neither as run work nor as overtaking.
    bool control = false;
};

struct SchedulerStats {
    uint64_t submitted = 0;
    uint64_t ran[kPriorityCount] = {};  // work items handed out to run, per priority
    uint64_t control = 0;               // control items handed out
    uint64_t expired = 0;               // deadline passed while queued
    uint64_t missedRunning = 0;         // running items stopped at their deadline
    uint64_t cancelledQueued = 0;       // cancelled before they ran
    uint64_t cancelledRunning = 0;      // cancel requests that reached a running item
    uint64_t dropped = 0;               // removed with their session (disconnect)
    uint64_t full = 0;                  // submissions refused: queue full
    uint64_t overtakes = 0;             // items handed out ahead of an older lower-priority one
    uint32_t maxQueued = 0;
};

class Scheduler {
public:
    enum class Pick { kNone, kRun, kExpired };

    static size_t memoryNeeded(uint32_t capacity);
    // Takes capacity entries from `arena`; ok() is false when it could not.
    Scheduler(Arena& arena, uint32_t capacity);
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    bool ok() const { return items_ != nullptr; }
    uint32_t capacity() const { return capacity_; }
    uint32_t queued() const { return count_; }

    // Queues `item` (its sequence is assigned here). RESOURCE_EXHAUSTED_TRANSIENT when full.
    FwStatus submit(const WorkItem& item);
    // The next thing to do at time nowUs: an expired item (kExpired: the caller answers it, it
    // is gone from the queue) before anything else, else the highest-priority oldest item
    // (kRun: it becomes the running item until finish()), else kNone. controlOnly: hand out
    // control items and expired ones only, leaving the work queued (a platform holding its NPU).
    Pick next(uint64_t nowUs, WorkItem* out, bool controlOnly = false);
    // The item handed out by next(kRun) is done.
    void finish();

    // Cancels the call `callId` of `session`: a queued item is removed and copied to *out
    // (returns kQueued); the running one is flagged (kRunning; runningCancelled() turns true).
    enum class Cancelled { kNotFound, kQueued, kRunning };
    Cancelled cancel(uint32_t session, uint64_t callId, WorkItem* out);
    bool running() const { return running_; }
    const WorkItem& runningItem() const { return current_; }
    bool runningCancelled() const { return running_ && runningCancelled_; }
    // Why the running item must stop at nowUs: cancelled, its deadline passed (the reason carries
    // missedDeadlineCode's choice), or kNone (also when nothing runs). Counts each running item
    // stopped at its deadline once (stats().missedRunning).
    StopReason runningStop(uint64_t nowUs);
    // The one rule for a missed deadline, for an item that expired queued (ran = false) or was
    // stopped running: MISSED_DEADLINE_PERSISTENT when it ran with the NPU to itself from its
    // submission on (no other work ran while it waited) and still missed, so the same work under
    // the same deadline misses again; MISSED_DEADLINE_TRANSIENT otherwise (it waited behind other
    // work, or never ran: a less busy NPU may meet it).
    static Code missedDeadlineCode(const WorkItem& item, bool ran);

    // Removes every queued item of `session`, copying each to out[0..maxOut); returns how many
    // were removed (all of them, even beyond maxOut).
    uint32_t dropSession(uint32_t session, WorkItem* out, uint32_t maxOut);

    const SchedulerStats& stats() const { return stats_; }

private:
    void removeAt(uint32_t index);
    static uint32_t rank(const WorkItem& item);

    WorkItem* items_ = nullptr;  // [0, count_) queued, unordered
    uint32_t capacity_ = 0;
    uint32_t count_ = 0;
    uint64_t nextSequence_ = 1;
    bool running_ = false;
    bool runningCancelled_ = false;
    bool runningMissed_ = false;  // runningStop counted the running item's deadline
    uint64_t workRan_ = 0;        // work (not control) items handed out
    WorkItem current_;
    SchedulerStats stats_;
};

}  // namespace npu::fw
