#pragma once
// The fds a session's client sent with its bytes (SCM_RIGHTS, or dups in process), in arrival
// order, until the request frames that came with them bind them (fw::RequestFds): MapPool one
// (its pool), OpenBurstChannel two (its queue's memfd and doorbell). Each handler takes the fds of
// its own call; what a call leaves (a request refused before its handler ran) is closed when it
// ends, so it never becomes the next request's. Bounded: past kMaxPending the newest received are
// closed, past kMaxBound the oldest bound, so a peer cannot make the firmware hold fds without end.
//
// Not thread-safe: the firmware host uses it under its firmware lock.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "npu/base/unique_fd.h"
#include "npu/fw/rpc_server.h"

namespace npu::fw::host {

class ReceivedFds final : public RequestFds {
public:
    static constexpr size_t kMaxPending = 16;
    static constexpr size_t kMaxBound = 64;  // of calls still queued: MapPools from many threads

    // Takes `fds` (the vector is left empty; fds past the bound are closed).
    void received(std::vector<base::UniqueFd>& fds) {
        for (auto& fd : fds) {
            if (pending_.size() < kMaxPending) pending_.push_back(std::move(fd));
        }
        fds.clear();
    }
    // The `count` oldest received fds now belong to `callId` (an invalid one for each missing).
    void bind(uint64_t callId, uint32_t count) override {
        for (uint32_t i = 0; i < count; ++i) {
            if (bound_.size() == kMaxBound) bound_.pop_front();
            base::UniqueFd fd;
            if (!pending_.empty()) {
                fd = std::move(pending_.front());
                pending_.pop_front();
            }
            bound_.emplace_back(callId, std::move(fd));
        }
    }
    // The oldest fd bound to `callId` not taken yet; an invalid one when there is none.
    base::UniqueFd take(uint64_t callId) {
        for (auto it = bound_.begin(); it != bound_.end(); ++it) {
            if (it->first != callId) continue;
            base::UniqueFd fd = std::move(it->second);
            bound_.erase(it);
            return fd;
        }
        return {};
    }
    void release(uint64_t callId) override {
        std::erase_if(bound_, [callId](const auto& b) { return b.first == callId; });
    }
    size_t pending() const { return pending_.size(); }
    size_t bound() const { return bound_.size(); }

private:
    std::deque<base::UniqueFd> pending_;
    std::deque<std::pair<uint64_t, base::UniqueFd>> bound_;
};

}  // namespace npu::fw::host
