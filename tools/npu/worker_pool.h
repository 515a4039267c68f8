#pragma once
// Runs numbered tasks in forked worker processes under a per-task watchdog, so that a task that
// crashes or hangs its process (a device bug, a kernel that never returns) costs only that task:
// the worker is killed and reaped, the task is reported as lost, and a new worker takes the next
// tasks. Used by `npu conformance`.
//
// Protocol (pipes, one pair per worker): the parent writes a task number (8 bytes); the worker
// answers with the task number (8 bytes), a payload length (4 bytes) and the payload. A worker
// has at most one task at a time, so the parent always knows which task a dead worker held.

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "npu/hal/result.h"

namespace npu::tools {

struct TaskReport {
    enum class Kind { kDone, kCrashed, kHung };
    size_t task = 0;
    Kind kind = Kind::kDone;
    std::string payload;  // kDone: what the task function returned; otherwise how the worker died
};

// CPUs this process may use: its affinity mask, bounded by a cgroup v2 CPU quota (a container
// given 2 CPUs of a 64-CPU host sees 64 in sysconf). At least 1.
int usableCpus();

struct WorkerPoolOptions {
    int workers = 2;
    std::chrono::milliseconds taskTimeout{30'000};
};

// Called in each new worker process, once, after fork (e.g. to open a device); it returns the
// function that runs one task and produces its payload.
using TaskFunction = std::function<std::string(size_t task)>;
using WorkerSetup = std::function<TaskFunction()>;

// Runs tasks 0..count-1 and calls `onReport` in the parent once per task, in completion order;
// `onReport` returns false to stop the run (tasks still running are abandoned, the rest not
// started). The parent must have no threads of its own (fork). Fails only when no worker process
// can be created; tasks not reported by then are not run.
Status runInWorkerProcesses(size_t count, const WorkerPoolOptions& options, const WorkerSetup& setup,
                            const std::function<bool(const TaskReport&)>& onReport);

}  // namespace npu::tools
