// The firmware's work scheduler (firmware/core/include/npu/fw/scheduler.h), driven directly with
// a fake clock: priority overtaking, FIFO within a priority, deadline expiry, cancel of queued
// and running work, a full queue, a session's work dropped at disconnect, loop timeouts.
#include "npu/fw/scheduler.h"

#include <catch2/catch.hpp>
#include <vector>

namespace {

using npu::fw::Arena;
using npu::fw::Code;
using npu::fw::Priority;
using npu::fw::Scheduler;
using npu::fw::WorkItem;

struct Fixture {
    explicit Fixture(uint32_t capacity = 16) : scheduler(arena, capacity) {}
    std::vector<uint8_t> memory = std::vector<uint8_t>(64 * 1024);
    Arena arena{memory.data(), memory.size()};
    Scheduler scheduler;

    void submit(uint32_t session, uint64_t callId, Priority p, uint64_t deadlineUs = 0) {
        WorkItem w;
        w.session = session;
        w.callId = callId;
        w.priority = p;
        w.deadlineUs = deadlineUs;
        REQUIRE(scheduler.submit(w).ok());
    }
    // Runs everything runnable at `now`; returns the call ids in the order they ran.
    std::vector<uint64_t> drain(uint64_t now = 0) {
        std::vector<uint64_t> order;
        WorkItem w;
        for (;;) {
            const Scheduler::Pick pick = scheduler.next(now, &w);
            if (pick == Scheduler::Pick::kNone) break;
            if (pick == Scheduler::Pick::kRun) {
                order.push_back(w.callId);
                scheduler.finish();
            }
        }
        return order;
    }
};

}  // namespace

TEST_CASE("scheduler: FIFO within one priority", "[firmware][scheduler]") {
    Fixture f;
    for (uint64_t id = 1; id <= 5; ++id) f.submit(id % 2, id, Priority::kMedium);
    CHECK(f.drain() == std::vector<uint64_t>{1, 2, 3, 4, 5});
    CHECK(f.scheduler.stats().overtakes == 0);
    CHECK(f.scheduler.stats().ran[1] == 5);
}

TEST_CASE("scheduler: HIGH overtakes queued LOW and MEDIUM work, MEDIUM overtakes LOW",
          "[firmware][scheduler]") {
    Fixture f;
    f.submit(1, 10, Priority::kLow);
    f.submit(1, 11, Priority::kLow);
    f.submit(2, 20, Priority::kMedium);
    f.submit(3, 30, Priority::kHigh);
    f.submit(1, 12, Priority::kLow);
    f.submit(3, 31, Priority::kHigh);
    CHECK(f.drain() == std::vector<uint64_t>{30, 31, 20, 10, 11, 12});
    CHECK(f.scheduler.stats().overtakes == 3);  // 30, 31 and 20 each ran ahead of an older item
    CHECK(f.scheduler.stats().ran[0] == 3);
    CHECK(f.scheduler.stats().ran[2] == 2);
}

TEST_CASE("scheduler: control calls run first and count as no overtaking", "[firmware][scheduler]") {
    Fixture f;
    f.submit(1, 1, Priority::kLow);
    WorkItem ping;
    ping.session = 2;
    ping.callId = 2;
    ping.priority = Priority::kLow;
    ping.control = true;
    REQUIRE(f.scheduler.submit(ping).ok());
    f.submit(1, 3, Priority::kHigh);
    CHECK(f.drain() == std::vector<uint64_t>{2, 3, 1});
    CHECK(f.scheduler.stats().control == 1);
    f.submit(1, 4, Priority::kHigh);
    WorkItem w;
    CHECK(f.scheduler.next(0, &w, true) == Scheduler::Pick::kNone);  // held: work stays queued
    CHECK(f.scheduler.queued() == 1);
    CHECK(f.scheduler.stats().overtakes == 1);  // 3 over 1; the control call counts not
    CHECK(f.scheduler.stats().ran[0] + f.scheduler.stats().ran[2] == 2);
}

TEST_CASE("scheduler: HIGH never preempts the running item", "[firmware][scheduler]") {
    Fixture f;
    f.submit(1, 1, Priority::kLow);
    WorkItem w;
    REQUIRE(f.scheduler.next(0, &w) == Scheduler::Pick::kRun);
    CHECK(w.callId == 1);
    f.submit(2, 2, Priority::kHigh);
    CHECK(f.scheduler.next(0, &w) == Scheduler::Pick::kNone);  // one at a time
    f.scheduler.finish();
    REQUIRE(f.scheduler.next(0, &w) == Scheduler::Pick::kRun);
    CHECK(w.callId == 2);
}

TEST_CASE("scheduler: work whose deadline passed while queued expires instead of running",
          "[firmware][scheduler]") {
    Fixture f;
    f.submit(1, 1, Priority::kHigh, 1000);
    f.submit(1, 2, Priority::kLow, 5000);
    f.submit(1, 3, Priority::kLow);  // no deadline
    WorkItem w;
    REQUIRE(f.scheduler.next(999, &w) == Scheduler::Pick::kRun);  // one microsecond to spare
    CHECK(w.callId == 1);
    f.scheduler.finish();
    REQUIRE(f.scheduler.next(5000, &w) == Scheduler::Pick::kExpired);  // due at 5000: too late
    CHECK(w.callId == 2);
    REQUIRE(f.scheduler.next(1'000'000, &w) == Scheduler::Pick::kRun);  // no deadline: never expires
    CHECK(w.callId == 3);
    f.scheduler.finish();
    CHECK(f.scheduler.stats().expired == 1);
    CHECK(f.scheduler.queued() == 0);
}

TEST_CASE("scheduler: an expired item is reported before a runnable one", "[firmware][scheduler]") {
    Fixture f;
    f.submit(1, 1, Priority::kHigh);
    f.submit(2, 2, Priority::kLow, 10);
    WorkItem w;
    REQUIRE(f.scheduler.next(20, &w) == Scheduler::Pick::kExpired);
    CHECK(w.callId == 2);
    REQUIRE(f.scheduler.next(20, &w) == Scheduler::Pick::kRun);
    CHECK(w.callId == 1);
}

TEST_CASE("scheduler: cancel removes queued work and flags running work", "[firmware][scheduler]") {
    Fixture f;
    f.submit(1, 1, Priority::kMedium);
    f.submit(1, 2, Priority::kMedium);
    f.submit(2, 2, Priority::kMedium);  // the same call id in another session
    WorkItem w;
    REQUIRE(f.scheduler.next(0, &w) == Scheduler::Pick::kRun);
    CHECK(f.scheduler.cancel(1, 2, &w) == Scheduler::Cancelled::kQueued);
    CHECK((w.session == 1 && w.callId == 2));
    CHECK(f.scheduler.cancel(1, 2, &w) == Scheduler::Cancelled::kNotFound);  // gone already
    CHECK(f.scheduler.cancel(3, 1, &w) == Scheduler::Cancelled::kNotFound);  // another session's id
    CHECK_FALSE(f.scheduler.runningCancelled());
    CHECK(f.scheduler.cancel(1, 1, &w) == Scheduler::Cancelled::kRunning);
    CHECK(f.scheduler.runningCancelled());
    f.scheduler.finish();
    CHECK(f.drain() == std::vector<uint64_t>{2});  // session 2's call 2 still runs
    CHECK(f.scheduler.stats().cancelledQueued == 1);
    CHECK(f.scheduler.stats().cancelledRunning == 1);
}

TEST_CASE("scheduler: a running item's deadline stops it; one rule says TRANSIENT or PERSISTENT",
          "[firmware][scheduler][deadline]") {
    using npu::fw::StopReason;
    Fixture f;
    WorkItem w;
    CHECK(f.scheduler.runningStop(0) == StopReason::kNone);  // nothing runs

    // Alone from its submission on and still late: the same work misses again, PERSISTENT.
    f.submit(1, 1, Priority::kMedium, 100);
    REQUIRE(f.scheduler.next(10, &w) == Scheduler::Pick::kRun);
    CHECK_FALSE(w.waited);
    CHECK(f.scheduler.runningStop(99) == StopReason::kNone);
    CHECK(f.scheduler.runningStop(100) == StopReason::kDeadlinePersistent);
    CHECK(f.scheduler.runningStop(150) == StopReason::kDeadlinePersistent);
    CHECK(Scheduler::missedDeadlineCode(w, true) == Code::kMissedDeadlinePersistent);
    f.scheduler.finish();
    CHECK(f.scheduler.stats().missedRunning == 1);  // counted once per item
    CHECK(f.scheduler.runningStop(150) == StopReason::kNone);

    // Queued behind other work, then late while running: a less busy NPU may meet it, TRANSIENT.
    f.submit(1, 2, Priority::kMedium);
    f.submit(1, 3, Priority::kMedium, 300);
    REQUIRE(f.scheduler.next(200, &w) == Scheduler::Pick::kRun);
    CHECK(w.callId == 2);
    CHECK(f.scheduler.runningStop(400) == StopReason::kNone);  // call 2 has no deadline
    f.scheduler.finish();
    REQUIRE(f.scheduler.next(250, &w) == Scheduler::Pick::kRun);
    CHECK(w.callId == 3);
    CHECK(w.waited);
    CHECK(f.scheduler.runningStop(300) == StopReason::kDeadlineTransient);
    // A Cancel wins over the deadline: the caller asked for it.
    CHECK(f.scheduler.cancel(1, 3, &w) == Scheduler::Cancelled::kRunning);
    CHECK(f.scheduler.runningStop(300) == StopReason::kCancelled);
    f.scheduler.finish();

    // Expired in the queue: it never ran, TRANSIENT whatever ran before it.
    f.submit(1, 4, Priority::kMedium, 500);
    REQUIRE(f.scheduler.next(600, &w) == Scheduler::Pick::kExpired);
    CHECK(Scheduler::missedDeadlineCode(w, false) == Code::kMissedDeadlineTransient);
    CHECK(f.scheduler.stats().missedRunning == 2);
}

TEST_CASE("scheduler: a full queue refuses with RESOURCE_EXHAUSTED_TRANSIENT", "[firmware][scheduler]") {
    Fixture f(3);
    for (uint64_t id = 1; id <= 3; ++id) f.submit(1, id, Priority::kLow);
    WorkItem extra;
    extra.callId = 4;
    const auto st = f.scheduler.submit(extra);
    CHECK(st.code == Code::kResourceExhaustedTransient);
    CHECK(std::string(st.message).find("queue full") != std::string::npos);
    CHECK(f.scheduler.stats().full == 1);
    CHECK(f.drain() == std::vector<uint64_t>{1, 2, 3});
    CHECK(f.scheduler.submit(extra).ok());  // room again
}

TEST_CASE("scheduler: a session's queued work is dropped with it", "[firmware][scheduler]") {
    Fixture f;
    f.submit(1, 1, Priority::kLow);
    f.submit(2, 2, Priority::kLow);
    f.submit(1, 3, Priority::kHigh);
    f.submit(1, 4, Priority::kHigh);
    WorkItem out[1];
    CHECK(f.scheduler.dropSession(1, out, 1) == 3);  // counted beyond what fits in `out`
    CHECK(out[0].session == 1);
    CHECK(f.drain() == std::vector<uint64_t>{2});
    CHECK(f.scheduler.stats().dropped == 3);
}

TEST_CASE("scheduler: an arena too small leaves it unusable, not crashing", "[firmware][scheduler]") {
    std::vector<uint8_t> memory(16);
    Arena arena(memory.data(), memory.size());
    Scheduler s(arena, 64);
    CHECK_FALSE(s.ok());
    WorkItem w;
    CHECK(s.submit(w).code == Code::kGeneralFailure);
    CHECK(s.next(0, &w) == Scheduler::Pick::kNone);
}

TEST_CASE("loop timeout: default 2 s, clamped at 15 s; priorities validated", "[firmware][scheduler]") {
    CHECK(npu::fw::effectiveLoopTimeoutNs(0) == 2'000'000'000ull);
    CHECK(npu::fw::effectiveLoopTimeoutNs(1) == 1);
    CHECK(npu::fw::effectiveLoopTimeoutNs(15'000'000'000ull) == 15'000'000'000ull);
    CHECK(npu::fw::effectiveLoopTimeoutNs(UINT64_MAX) == 15'000'000'000ull);
    Priority p = Priority::kMedium;
    CHECK(npu::fw::toPriority(2, &p));
    CHECK(p == Priority::kHigh);
    CHECK_FALSE(npu::fw::toPriority(3, &p));
    CHECK(p == Priority::kHigh);
}
