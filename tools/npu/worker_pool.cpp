#include "worker_pool.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace npu::tools {

int usableCpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    long n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : ::sysconf(_SC_NPROCESSORS_ONLN);
    std::ifstream max("/sys/fs/cgroup/cpu.max");  // "QUOTA PERIOD" or "max PERIOD"
    std::string quota;
    long period = 0;
    if (max >> quota >> period && quota != "max" && period > 0) {
        char* end = nullptr;
        const long q = std::strtol(quota.c_str(), &end, 10);
        if (end != quota.c_str() && *end == '\0' && q > 0) n = std::min(n, (q + period - 1) / period);
    }
    return static_cast<int>(std::max(1L, n));
}

namespace {

using Clock = std::chrono::steady_clock;

struct Worker {
    pid_t pid = -1;
    int commandFd = -1;  // parent writes task numbers
    int resultFd = -1;   // parent reads answers
    std::optional<size_t> task;
    Clock::time_point started;
    std::string buffer;
};

bool writeAll(int fd, const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (size > 0) {
        ssize_t n = ::write(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

// Reads exactly `size` bytes; false at end of file or on error.
bool readAll(int fd, void* data, size_t size) {
    auto* p = static_cast<uint8_t*>(data);
    while (size > 0) {
        ssize_t n = ::read(fd, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<size_t>(n);
    }
    return true;
}

// The worker's side: never returns.
[[noreturn]] void workerMain(int commandFd, int resultFd, const WorkerSetup& setup) {
    // Keep the parent's stdout for its report: anything a device prints goes to stderr.
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    TaskFunction run = setup();
    uint64_t task = 0;
    while (readAll(commandFd, &task, sizeof task)) {
        const std::string payload = run(static_cast<size_t>(task));
        const uint32_t length = static_cast<uint32_t>(payload.size());
        if (!writeAll(resultFd, &task, sizeof task) || !writeAll(resultFd, &length, sizeof length) ||
            !writeAll(resultFd, payload.data(), payload.size())) {
            break;
        }
    }
    std::fflush(stderr);
    ::_exit(0);
}

// Waits for `pid` to end, at most `timeout`, then kills it; returns its wait status.
int reap(pid_t pid, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    int status = 0;
    while (true) {
        pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) return status;
        if (r < 0 && errno != EINTR) return 0;  // not our child any more: nothing to reap
        if (Clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::kill(pid, SIGKILL);
    const auto killDeadline = Clock::now() + std::chrono::seconds(5);
    while (Clock::now() < killDeadline) {
        pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) return status;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return status;  // unkillable (D state): leave it; the report stands
}

std::string describeDeath(int status) {
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const char* name = ::sigabbrev_np(sig);
        return "crash (signal " + std::to_string(sig) + (name ? std::string(", SIG") + name : std::string()) +
               ")";
    }
    if (WIFEXITED(status))
        return "crash (worker exited with status " + std::to_string(WEXITSTATUS(status)) + ")";
    return "crash (worker ended)";
}

class Pool {
public:
    Pool(size_t count, const WorkerPoolOptions& options, const WorkerSetup& setup,
         const std::function<bool(const TaskReport&)>& onReport)
        : count_(count), options_(options), setup_(setup), onReport_(onReport) {}

    ~Pool() { shutdown(); }

    Status run() {
        const size_t wanted = std::min(count_, static_cast<size_t>(std::max(1, options_.workers)));
        for (size_t i = 0; i < wanted; ++i) {
            auto w = spawn();
            if (!w) {
                if (workers_.empty()) return std::unexpected(w.error());
                break;  // run with fewer workers
            }
            workers_.push_back(*w);
        }
        while (reported_ < count_ && !stopped_) {
            for (auto& w : workers_) {
                if (w.pid >= 0 && !w.task && next_ < count_) assign(w, next_++);
            }
            NPU_TRY(waitForAnswers());
        }
        return {};
    }

private:
    Result<Worker> spawn() {
        int command[2], result[2];
        if (::pipe2(command, O_CLOEXEC) != 0)
            return generalFailure(std::string("worker pool: pipe: ") + std::strerror(errno));
        if (::pipe2(result, O_CLOEXEC) != 0) {
            ::close(command[0]);
            ::close(command[1]);
            return generalFailure(std::string("worker pool: pipe: ") + std::strerror(errno));
        }
        std::fflush(stdout);
        std::fflush(stderr);
        pid_t pid = ::fork();
        if (pid < 0) {
            for (int fd : {command[0], command[1], result[0], result[1]}) ::close(fd);
            return generalFailure(std::string("worker pool: fork: ") + std::strerror(errno));
        }
        if (pid == 0) {
            // The other workers' pipe ends must not stay open here, or they would never see
            // end-of-file when the parent closes its ends.
            for (const auto& other : workers_) {
                if (other.commandFd >= 0) ::close(other.commandFd);
                if (other.resultFd >= 0) ::close(other.resultFd);
            }
            ::close(command[1]);
            ::close(result[0]);
            workerMain(command[0], result[1], setup_);
        }
        ::close(command[0]);
        ::close(result[1]);
        Worker w;
        w.pid = pid;
        w.commandFd = command[1];
        w.resultFd = result[0];
        return w;
    }

    void assign(Worker& w, size_t task) {
        w.task = task;
        w.started = Clock::now();
        const uint64_t t = task;
        // A failed write means the worker is gone; its result pipe reports end-of-file next.
        (void)writeAll(w.commandFd, &t, sizeof t);
    }

    void report(size_t task, TaskReport::Kind kind, std::string payload) {
        ++reported_;
        if (!onReport_(TaskReport{task, kind, std::move(payload)})) stopped_ = true;
    }

    void close(Worker& w) {
        if (w.commandFd >= 0) ::close(w.commandFd);
        if (w.resultFd >= 0) ::close(w.resultFd);
        w.commandFd = w.resultFd = -1;
    }

    // A worker that died (or was killed) is reaped; its task is reported, a new worker replaces it.
    Status replace(Worker& w, TaskReport::Kind kind, std::string why) {
        if (kind == TaskReport::Kind::kHung) ::kill(w.pid, SIGKILL);
        close(w);
        const int status = reap(w.pid, std::chrono::milliseconds(2000));
        if (kind == TaskReport::Kind::kCrashed) why = describeDeath(status);
        const auto task = w.task;
        w = Worker{};
        if (task) report(*task, kind, std::move(why));
        if (next_ < count_ && !stopped_) {
            auto fresh = spawn();
            if (fresh) {
                w = *fresh;
            } else if (std::none_of(workers_.begin(), workers_.end(),
                                    [](const Worker& x) { return x.pid >= 0; })) {
                return std::unexpected(fresh.error());
            }
        }
        return {};
    }

    // Parses complete answers out of the worker's buffer.
    void drain(Worker& w) {
        constexpr size_t kHeader = sizeof(uint64_t) + sizeof(uint32_t);
        while (w.buffer.size() >= kHeader) {
            uint64_t task;
            uint32_t length;
            std::memcpy(&task, w.buffer.data(), sizeof task);
            std::memcpy(&length, w.buffer.data() + sizeof task, sizeof length);
            if (w.buffer.size() < kHeader + length) return;
            std::string payload = w.buffer.substr(kHeader, length);
            w.buffer.erase(0, kHeader + length);
            if (w.task && *w.task == task) {
                w.task.reset();
                report(static_cast<size_t>(task), TaskReport::Kind::kDone, std::move(payload));
            }
        }
    }

    Status waitForAnswers() {
        std::vector<pollfd> fds;
        std::vector<size_t> owners;
        auto timeout = std::chrono::milliseconds(1000);
        const auto now = Clock::now();
        for (size_t i = 0; i < workers_.size(); ++i) {
            const Worker& w = workers_[i];
            if (w.pid < 0) continue;
            fds.push_back({w.resultFd, POLLIN, 0});
            owners.push_back(i);
            if (w.task) {
                auto left = std::chrono::duration_cast<std::chrono::milliseconds>(w.started +
                                                                                  options_.taskTimeout - now);
                timeout =
                    std::clamp(left + std::chrono::milliseconds(1), std::chrono::milliseconds(0), timeout);
            }
        }
        if (fds.empty()) return generalFailure("worker pool: no worker process left");
        int n = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
        if (n < 0 && errno != EINTR)
            return generalFailure(std::string("worker pool: poll: ") + std::strerror(errno));
        for (size_t k = 0; n > 0 && k < fds.size(); ++k) {
            if (fds[k].revents == 0) continue;
            Worker& w = workers_[owners[k]];
            char chunk[65536];
            ssize_t got = ::read(w.resultFd, chunk, sizeof chunk);
            if (got > 0) {
                w.buffer.append(chunk, static_cast<size_t>(got));
                drain(w);
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                NPU_TRY(replace(w, TaskReport::Kind::kCrashed, ""));
            }
        }
        const auto later = Clock::now();
        for (auto& w : workers_) {
            if (w.pid >= 0 && w.task && later - w.started >= options_.taskTimeout) {
                const double seconds = std::chrono::duration<double>(options_.taskTimeout).count();
                NPU_TRY(replace(w, TaskReport::Kind::kHung,
                                fmt::format("hang (no answer within {:g} s; worker killed)", seconds)));
            }
        }
        return {};
    }

    void shutdown() {
        for (auto& w : workers_) close(w);  // idle workers see end-of-file and exit
        for (auto& w : workers_) {
            if (w.pid >= 0)
                reap(w.pid, w.task ? std::chrono::milliseconds(0) : std::chrono::milliseconds(5000));
            w.pid = -1;
        }
    }

    size_t count_;
    const WorkerPoolOptions& options_;
    const WorkerSetup& setup_;
    const std::function<bool(const TaskReport&)>& onReport_;
    bool stopped_ = false;
    std::vector<Worker> workers_;
    size_t next_ = 0;
    size_t reported_ = 0;
};

}  // namespace

Status runInWorkerProcesses(size_t count, const WorkerPoolOptions& options, const WorkerSetup& setup,
                            const std::function<bool(const TaskReport&)>& onReport) {
    if (count == 0) return {};
    // A write to a worker that just died must be an error return, not a SIGPIPE in the parent.
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    struct sigaction previous {};
    ::sigaction(SIGPIPE, &ignore, &previous);
    Status status;
    {
        Pool pool(count, options, setup, onReport);
        status = pool.run();
    }
    ::sigaction(SIGPIPE, &previous, nullptr);
    return status;
}

}  // namespace npu::tools
