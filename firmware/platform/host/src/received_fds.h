#pragma once
// The fds a session's client sent with its bytes (SCM_RIGHTS, or dups in process), in arrival
// order, until the requests that came with them claim them: MapPool one (its pool),
// OpenBurstChannel two (its queue's memfd and doorbell). Bounded: past kMaxPending the newest are
// closed, so a peer cannot make the firmware hold fds without end.
//
// Not thread-safe: the firmware host uses it under its firmware lock.

#include <cstddef>
#include <deque>
#include <vector>

#include "npu/base/unique_fd.h"

namespace npu::fw::host {

class ReceivedFds {
public:
    static constexpr size_t kMaxPending = 16;

    // Takes `fds` (the vector is left empty; fds past the bound are closed).
    void received(std::vector<base::UniqueFd>& fds) {
        for (auto& fd : fds) {
            if (pending_.size() < kMaxPending) pending_.push_back(std::move(fd));
        }
        fds.clear();
    }
    // The oldest unclaimed fd; an invalid one when none is left.
    base::UniqueFd take() {
        if (pending_.empty()) return {};
        base::UniqueFd fd = std::move(pending_.front());
        pending_.pop_front();
        return fd;
    }
    size_t pending() const { return pending_.size(); }

private:
    std::deque<base::UniqueFd> pending_;
};

}  // namespace npu::fw::host
