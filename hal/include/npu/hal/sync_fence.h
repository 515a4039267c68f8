#pragma once
// Sync fences for fenced execution (the Android sync_fence analogue): a fence is a pollable fd
// that becomes readable when it is signalled and stays readable. Fences this driver creates are
// eventfds; it waits on any pollable fd (eventfd, pipe, socket, a real sync_file).

#include <chrono>
#include <vector>

#include "npu/hal/result.h"

namespace npu::hal {

// A new unsignalled fence (an eventfd, close-on-exec); the caller owns the fd.
Result<int> createSyncFence();
// Signals a fence created by createSyncFence (wakes every poller; idempotent).
Status signalSyncFence(int fence);

// INVALID_ARGUMENT naming the index when an fd is negative, closed, or cannot be polled (a
// regular file or a directory).
Status validateSyncFences(const std::vector<int>& fences);

// Waits until every fd of `fences` is readable. When `until` passes first: `onTimeout` with a
// message naming the first fence still unsignalled. When `cancelFd` (>= 0) becomes readable
// first: GENERAL_FAILURE. A fence that reports an error or hangs up: GENERAL_FAILURE.
Status waitForSyncFences(const std::vector<int>& fences, std::chrono::steady_clock::time_point until,
                         ErrorStatus onTimeout, int cancelFd = -1);

// Waits up to `timeout` for one fence: true when it signalled, false when the time ran out.
Result<bool> waitForSyncFence(int fence, std::chrono::milliseconds timeout);

}  // namespace npu::hal
