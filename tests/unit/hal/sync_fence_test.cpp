// Sync fences (hal/include/npu/hal/sync_fence.h): creation, signalling, validation of fds
// handed in, and waits that end on time, on cancellation and on a fence that fails.
#include "npu/hal/sync_fence.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

using namespace npu;
using namespace std::chrono_literals;

namespace {

struct Fd {
    int fd;
    explicit Fd(int f) : fd(f) { REQUIRE(fd >= 0); }
    ~Fd() {
        if (fd >= 0) close(fd);
    }
};

const auto kSoon = 5s;  // bounds a wait that must succeed; never a timing assertion

}  // namespace

TEST_CASE("a created fence is unsignalled until signalled, then stays signalled", "[hal][fence]") {
    auto fence = hal::createSyncFence();
    REQUIRE(fence.has_value());
    Fd f(*fence);
    auto before = hal::waitForSyncFence(f.fd, 0ms);
    REQUIRE(before.has_value());
    CHECK_FALSE(*before);
    REQUIRE(hal::signalSyncFence(f.fd).has_value());
    for (int i = 0; i < 2; ++i) {
        auto after = hal::waitForSyncFence(f.fd, kSoon);
        REQUIRE(after.has_value());
        CHECK(*after);
    }
}

TEST_CASE("fences handed in are validated: negative, closed, not pollable, given twice", "[hal][fence]") {
    Fd good(eventfd(0, EFD_CLOEXEC));
    Fd file(memfd_create("regular", MFD_CLOEXEC));
    const int closed = eventfd(0, EFD_CLOEXEC);
    close(closed);
    CHECK(hal::validateSyncFences({}).has_value());
    CHECK(hal::validateSyncFences({good.fd}).has_value());
    for (const auto& fences : {std::vector<int>{-1}, std::vector<int>{closed},
                               std::vector<int>{good.fd, file.fd}, std::vector<int>{good.fd, good.fd}}) {
        auto r = hal::validateSyncFences(fences);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
        CHECK_THAT(r.error().message, Catch::Contains("fence"));
    }
}

TEST_CASE("a wait ends at its time limit with the status asked for, naming the pending fence",
          "[hal][fence]") {
    Fd a(eventfd(0, EFD_CLOEXEC)), b(eventfd(0, EFD_CLOEXEC));
    REQUIRE(hal::signalSyncFence(a.fd).has_value());
    auto r = hal::waitForSyncFences({a.fd, b.fd}, std::chrono::steady_clock::now() + 50ms,
                                    hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().status == hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT);
    CHECK_THAT(r.error().message, Catch::Contains("fence 1"));
    REQUIRE(hal::signalSyncFence(b.fd).has_value());
    CHECK(hal::waitForSyncFences({a.fd, b.fd}, std::chrono::steady_clock::now() + kSoon,
                                 hal::ErrorStatus::GENERAL_FAILURE)
              .has_value());
}

TEST_CASE("a wait is cancelled by its cancellation fd; a pipe that hangs up fails it", "[hal][fence]") {
    Fd never(eventfd(0, EFD_CLOEXEC)), cancel(eventfd(0, EFD_CLOEXEC));
    REQUIRE(hal::signalSyncFence(cancel.fd).has_value());
    auto cancelled = hal::waitForSyncFences({never.fd}, std::chrono::steady_clock::now() + 60s,
                                            hal::ErrorStatus::GENERAL_FAILURE, cancel.fd);
    REQUIRE_FALSE(cancelled.has_value());
    CHECK_THAT(cancelled.error().message, Catch::Contains("cancelled"));

    int p[2];
    REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    Fd readEnd(p[0]);
    close(p[1]);  // the writer is gone
    auto hungUp = hal::waitForSyncFences({readEnd.fd}, std::chrono::steady_clock::now() + kSoon,
                                         hal::ErrorStatus::GENERAL_FAILURE);
    // No data and no writer: the read end reports a hang-up, never readable: the fence failed.
    REQUIRE_FALSE(hungUp.has_value());
    CHECK(hungUp.error().status == hal::ErrorStatus::GENERAL_FAILURE);
    CHECK_THAT(hungUp.error().message, Catch::Contains("hung up"));
}
