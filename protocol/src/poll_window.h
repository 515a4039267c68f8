// The bounded poll a reader makes before it sleeps, shared by the fast message queue (a burst's
// rings) and the Unix socket (a client waiting for its reply).
//
// While both ends have a CPU of their own, a look at shared memory or a non-blocking receive
// costs less than a wake-up (on a virtual machine a wake-up of an idle CPU costs several µs).
// Where they do not (more runnable threads than CPUs), polling does harm: a poller looks
// CPU-bound to the scheduler and loses the wake-up preemption a sleeper gets, and a peer woken on
// the poller's CPU waits for it (a one-operation burst took ~120 µs instead of ~16 under two busy
// loops on two CPUs). So:
//   - polling goes on only while it pays: the score follows the share of polls that found bytes
//     (an average over the last ~8); below half, a wait polls only once in kProbeEvery (to see
//     whether it pays again) and otherwise sleeps at once;
//   - between two looks the poller yields its CPU (sched_yield): a peer woken on it runs at once
//     instead of after the window (without it, 2 to 3 runs in 8 of `npu bench exec` on an idle
//     machine fell into both ends sleeping: the burst at 16 µs instead of 7.5);
//   - a gap of more than kPreemptedGap between two looks at the clock (the poller was preempted,
//     or its yield let another thread run) ends the poll at once.
#pragma once

#include <sched.h>

#include <chrono>
#include <cstdint>

namespace npu::proto {

class PollWindow {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::microseconds kPreemptedGap{15};
    static constexpr int kScoreFull = 1024;  // the score when every poll finds bytes
    static constexpr uint32_t kProbeEvery = 16;

    // `preemptedGap`: kPreemptedGap; tests of the other rules pass one no machine load reaches.
    explicit PollWindow(Clock::duration preemptedGap = kPreemptedGap) : preemptedGap_(preemptedGap) {}

    // Polls `ready` (returning Result<bool>: true when bytes wait) until it is true or fails,
    // `window` from `start` has passed, or the thread was preempted; records whether it paid.
    // `ready` is not called when polling does not pay at the moment: the caller then sleeps at
    // once. One reader at a time.
    template <typename Ready>
    auto poll(Clock::time_point start, Clock::duration window, Ready&& ready) -> decltype(ready()) {
        if (score_ < kScoreFull / 2 && ++skipped_ % kProbeEvery != 0) return false;
        const auto until = start + window;
        auto last = start;
        for (bool preempted = false;;) {
            auto found = ready();
            if (!found || *found) {
                if (found) record(true);
                return found;
            }
            const auto now = Clock::now();
            if (preempted || now >= until || now - last > preemptedGap_) break;
            sched_yield();
            last = Clock::now();
            preempted = last - now > preemptedGap_;  // one more look, then sleep
        }
        record(false);
        return false;
    }

    int score() const { return score_; }

private:
    void record(bool found) { score_ += ((found ? kScoreFull : 0) - score_) / 8; }

    Clock::duration preemptedGap_;
    int score_ = kScoreFull;
    uint32_t skipped_ = 0;
};

}  // namespace npu::proto
