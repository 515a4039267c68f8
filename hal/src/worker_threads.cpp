#include "worker_threads.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace npu::hal {

struct WorkerThreads::State {
    State(size_t max, std::string ownerName, std::string taskName)
        : maxTasks(max),
          cancelFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
          owner(std::move(ownerName)),
          tasks(std::move(taskName)) {}
    ~State() {
        if (cancelFd >= 0) close(cancelFd);
    }
    const size_t maxTasks;
    const int cancelFd;
    const std::string owner, tasks;
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::function<void()>> queue;
    std::vector<std::thread> threads;
    size_t idle = 0;
    size_t running = 0;
    bool stopping = false;
};

namespace {

void runTasks(const std::shared_ptr<WorkerThreads::State>& s);

}  // namespace

WorkerThreads::WorkerThreads(size_t maxTasks, std::string owner, std::string tasks)
    : state_(std::make_shared<State>(maxTasks, std::move(owner), std::move(tasks))) {}

WorkerThreads::~WorkerThreads() {
    stop();
}

int WorkerThreads::cancelFd() const {
    return state_->cancelFd;
}

Status WorkerThreads::submit(std::function<void()> task) {
    State& s = *state_;
    std::lock_guard lock(s.mutex);
    if (s.stopping) return generalFailure("the " + s.owner + " is being released");
    if (s.cancelFd < 0)
        return generalFailure("cannot create the cancellation eventfd of the threads of the " + s.owner);
    if (s.queue.size() + s.running >= s.maxTasks) {
        return fail(ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
                    std::to_string(s.maxTasks) + " " + s.tasks + " of this " + s.owner + " are in flight");
    }
    s.queue.push_back(std::move(task));
    if (s.idle < s.queue.size()) s.threads.emplace_back([state = state_] { runTasks(state); });
    s.wake.notify_one();
    return {};
}

namespace {

void runTasks(const std::shared_ptr<WorkerThreads::State>& state) {
    WorkerThreads::State& s = *state;
    std::unique_lock lock(s.mutex);
    while (true) {
        while (s.queue.empty() && !s.stopping) {
            ++s.idle;
            s.wake.wait_for(lock, std::chrono::seconds(1));
            --s.idle;
        }
        if (s.queue.empty()) return;  // stopping, nothing left to run
        auto task = std::move(s.queue.front());
        s.queue.pop_front();
        ++s.running;
        lock.unlock();
        task();
        task = nullptr;  // its captures go now, outside the lock
        lock.lock();
        --s.running;
    }
}

}  // namespace

void WorkerThreads::stop() {
    State& s = *state_;
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(s.mutex);
        if (!s.stopping && s.cancelFd >= 0) {
            const uint64_t one = 1;
            (void)!write(s.cancelFd, &one, sizeof one);
        }
        s.stopping = true;
        threads.swap(s.threads);
    }
    s.wake.notify_all();
    for (auto& t : threads) {
        if (t.get_id() == std::this_thread::get_id()) {
            t.detach();
        } else {
            t.join();
        }
    }
}

}  // namespace npu::hal
