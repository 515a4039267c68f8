// The poll window's policy (protocol/src/poll_window.h): it polls while polling pays, stops but
// keeps probing once in kProbeEvery when it does not, comes back when it pays again, passes a
// failed look on, and ends a poll after a preemption-sized gap.
#include "poll_window.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "npu/protocol/transport.h"

using npu::proto::Error;
using npu::proto::PollWindow;
using npu::proto::Result;
using namespace std::chrono_literals;

namespace {

// The rules other than the preemption one, whatever the machine's load: a gap no test meets.
PollWindow unpreempted() {
    return PollWindow(std::chrono::hours(1));
}

// Polls with `window`; `readyAfter` looks say yes (-1: never). Returns how many looks were made.
int pollOnce(PollWindow& w, std::chrono::microseconds window, int readyAfter, bool* found = nullptr) {
    int looks = 0;
    auto r = w.poll(PollWindow::Clock::now(), window, [&]() -> Result<bool> {
        ++looks;
        return readyAfter >= 0 && looks > readyAfter;
    });
    REQUIRE(r.has_value());
    if (found != nullptr) *found = *r;
    return looks;
}

}  // namespace

TEST_CASE("poll window: polls until the bytes come, within the window") {
    PollWindow w = unpreempted();
    bool found = false;
    CHECK(pollOnce(w, 1s, 3, &found) == 4);
    CHECK(found);
    CHECK(w.score() == PollWindow::kScoreFull);
}

TEST_CASE("poll window: a window that passes without bytes is a miss") {
    PollWindow w = unpreempted();
    bool found = true;
    CHECK(pollOnce(w, 200us, -1, &found) >= 1);
    CHECK_FALSE(found);
    CHECK(w.score() < PollWindow::kScoreFull);
}

TEST_CASE("poll window: after misses it stops polling, probing once in kProbeEvery, and comes back") {
    PollWindow w = unpreempted();
    while (w.score() >= PollWindow::kScoreFull / 2) pollOnce(w, 50us, -1);
    // Not paying: the waits do not look at all (the caller sleeps at once) until a probe, one wait
    // in kProbeEvery.
    uint32_t waits = 1;
    while (pollOnce(w, 1s, 0) == 0 && waits < 1000) ++waits;
    CHECK(waits > 1);
    CHECK(waits <= PollWindow::kProbeEvery);
    // The probe found bytes at once: the score is back over half, and every wait polls again.
    CHECK(w.score() >= PollWindow::kScoreFull / 2);
    for (int i = 0; i < 8; ++i) CHECK(pollOnce(w, 1s, 0) == 1);
}

TEST_CASE("poll window: a look that fails ends the poll with its error") {
    PollWindow w;
    auto r = w.poll(PollWindow::Clock::now(), 1s,
                    []() -> Result<bool> { return npu::proto::fail(Error::Kind::kIo, "broken ring"); });
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == "broken ring");
}

TEST_CASE("poll window: a gap longer than a preemption ends the poll after one more look") {
    PollWindow w;
    int looks = 0;
    const auto t0 = PollWindow::Clock::now();
    auto r = w.poll(t0, 10s, [&]() -> Result<bool> {
        ++looks;
        std::this_thread::sleep_for(PollWindow::kPreemptedGap * 4);  // as if preempted meanwhile
        return false;
    });
    REQUIRE(r.has_value());
    CHECK_FALSE(*r);
    CHECK(looks <= 2);
    CHECK(PollWindow::Clock::now() - t0 < 5s);  // not the 10 s window
}
