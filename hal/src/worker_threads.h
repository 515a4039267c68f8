#pragma once
// The threads that run a prepared model's asynchronous and fenced executions, and a device's
// asynchronous preparations: grown on demand up to a limit, reused while idle, joined by stop()
// (or the destructor).

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "npu/hal/result.h"

namespace npu::hal {

class WorkerThreads {
public:
    // `owner` and `tasks` name them in errors: "the <owner> is being released", "<maxTasks>
    // <tasks> of this <owner> are in flight".
    explicit WorkerThreads(size_t maxTasks, std::string owner = "prepared model",
                           std::string tasks = "asynchronous executions");
    ~WorkerThreads();
    WorkerThreads(const WorkerThreads&) = delete;
    WorkerThreads& operator=(const WorkerThreads&) = delete;

    // Queues `task`; RESOURCE_EXHAUSTED_TRANSIENT when maxTasks are queued or running,
    // GENERAL_FAILURE once stop() has begun.
    Status submit(std::function<void()> task);
    // Signals cancelFd(), lets every queued task run (they see the cancellation), joins the
    // threads. Called from one of the threads (a task dropped the last reference to the prepared
    // model), that thread is detached instead: it only touches state it shares.
    void stop();
    // An eventfd that becomes readable when stop() begins: long waits inside tasks watch it.
    int cancelFd() const;

    struct State;  // shared with the threads

private:
    std::shared_ptr<State> state_;
};

}  // namespace npu::hal
