#include "outbox.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace npu::fw::host {

bool Outbox::send(std::span<const uint8_t> bytes, std::span<const int> fds) {
    std::unique_lock lock(mutex_);
    if (broken_) return false;
    if (!chunks_.empty() || writing_) return queue(bytes, fds);
    // Nothing waits: as much as the socket takes now, under the caller's lock but never waiting.
    auto n = transport_.writeSome(bytes, fds);
    if (!n) {
        cutOff();
        return false;
    }
    if (*n == bytes.size()) return true;
    return queue(bytes.subspan(*n), *n == 0 ? fds : std::span<const int>());
}

bool Outbox::queue(std::span<const uint8_t> bytes, std::span<const int> fds) {
    if (waiting_ + bytes.size() > kMaxBytes) {
        std::fprintf(stderr,
                     "npu firmware: %s: cut off: %zu reply bytes wait for a client that does not read "
                     "(the most is %zu)\n",
                     transport_.describe().c_str(), waiting_ + bytes.size(), kMaxBytes);
        cutOff();
        return false;
    }
    Chunk chunk;
    chunk.bytes.assign(bytes.begin(), bytes.end());
    for (int fd : fds) {
        proto::UniqueFd dup(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
        if (!dup) {
            cutOff();  // the reply cannot go out whole
            return false;
        }
        chunk.fds.push_back(std::move(dup));
    }
    waiting_ += chunk.bytes.size();
    chunks_.push_back(std::move(chunk));
    ++deferred_;
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    ready_.notify_one();
    return true;
}

void Outbox::cutOff() {
    if (!broken_) ++cutOffs_;
    broken_ = true;
    chunks_.clear();
    waiting_ = 0;
    transport_.shutdown();  // the session's reader sees the end and closes the session
}

void Outbox::run() {
    std::unique_lock lock(mutex_);
    for (;;) {
        ready_.wait(lock, [this] { return stopping_ || !chunks_.empty(); });
        if (stopping_ || broken_) return;
        Chunk chunk = std::move(chunks_.front());
        chunks_.pop_front();
        waiting_ -= chunk.bytes.size();
        writing_ = true;
        lock.unlock();
        std::vector<int> fds;
        for (const auto& fd : chunk.fds) fds.push_back(fd.get());
        auto r = transport_.write(chunk.bytes, fds);  // waits up to the transport's write timeout
        lock.lock();
        writing_ = false;
        if (!r) {
            if (!stopping_) {
                std::fprintf(stderr, "npu firmware: %s: cut off: %s\n", transport_.describe().c_str(),
                             r.error().message.c_str());
            }
            cutOff();
            return;
        }
    }
}

void Outbox::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        broken_ = true;
        chunks_.clear();
        waiting_ = 0;
        if (writing_) transport_.shutdown();  // ends the write in progress
    }
    ready_.notify_all();
    if (thread_.joinable()) thread_.join();
}

size_t Outbox::waitingBytes() const {
    std::lock_guard lock(mutex_);
    return waiting_;
}
uint64_t Outbox::deferredSends() const {
    std::lock_guard lock(mutex_);
    return deferred_;
}
uint64_t Outbox::cutOffs() const {
    std::lock_guard lock(mutex_);
    return cutOffs_;
}

}  // namespace npu::fw::host
