// The in-process transport: one byte queue per direction under a mutex and condition variable.
// Writes never block (the queue grows), so two ends that both write before reading cannot
// deadlock; the RPC layer bounds what is in flight.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>

#include "npu/protocol/transport.h"

namespace npu::proto {
namespace {

struct Pipe {
    std::mutex mutex;
    std::condition_variable readable;
    std::vector<uint8_t> bytes;
    size_t head = 0;       // first unread byte in `bytes`
    uint64_t readPos = 0;  // absolute stream positions, to attach fds to the right bytes
    uint64_t writePos = 0;
    std::deque<std::pair<uint64_t, UniqueFd>> fds;  // fd and the stream position it rides with
    bool writerGone = false;
    bool readerGone = false;
};

class LoopbackTransport final : public Transport {
public:
    LoopbackTransport(std::shared_ptr<Pipe> in, std::shared_ptr<Pipe> out, const char* name)
        : in_(std::move(in)), out_(std::move(out)), name_(name) {}
    ~LoopbackTransport() override { shutdown(); }

    Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        std::vector<UniqueFd> dups;
        for (int fd : fds) {
            int d = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
            if (d < 0) {
                return fail(
                    Error::Kind::kInvalidArgument,
                    describe() + ": cannot pass fd " + std::to_string(fd) + ": " + std::strerror(errno));
            }
            dups.emplace_back(d);
        }
        {
            std::lock_guard lock(out_->mutex);
            if (shut_.load() || out_->readerGone || out_->writerGone) {
                return fail(Error::Kind::kDisconnected, describe() + ": peer closed");
            }
            for (auto& d : dups) out_->fds.emplace_back(out_->writePos, std::move(d));
            out_->bytes.insert(out_->bytes.end(), bytes.begin(), bytes.end());
            out_->writePos += bytes.size();
        }
        out_->readable.notify_all();
        return {};
    }

    Result<size_t> read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                        std::chrono::milliseconds timeout) override {
        std::unique_lock lock(in_->mutex);
        auto ready = [&] { return in_->head < in_->bytes.size() || in_->writerGone || in_->readerGone; };
        // A zero timeout only looks: a timed wait of 0 still sleeps in the kernel (~50 us of
        // timer slack), which a firmware checking for a Cancel between operations paid per check.
        if (!(timeout.count() <= 0 ? ready() : in_->readable.wait_for(lock, timeout, ready))) {
            return fail(Error::Kind::kTimeout,
                        describe() + ": no data within " + std::to_string(timeout.count()) + " ms");
        }
        if (in_->readerGone) return fail(Error::Kind::kDisconnected, describe() + ": shut down");
        size_t avail = in_->bytes.size() - in_->head;
        if (avail == 0) return fail(Error::Kind::kDisconnected, describe() + ": peer closed");
        size_t n = std::min(avail, buffer.size());
        std::memcpy(buffer.data(), in_->bytes.data() + in_->head, n);
        in_->head += n;
        in_->readPos += n;
        // fds ride with the first byte of the write that carried them.
        while (!in_->fds.empty() && in_->fds.front().first < in_->readPos) {
            if (fds != nullptr) fds->push_back(std::move(in_->fds.front().second));
            in_->fds.pop_front();
        }
        if (in_->head == in_->bytes.size()) {
            in_->bytes.clear();
            in_->head = 0;
        } else if (in_->head > (1u << 16) && in_->head > in_->bytes.size() / 2) {
            in_->bytes.erase(in_->bytes.begin(), in_->bytes.begin() + static_cast<ptrdiff_t>(in_->head));
            in_->head = 0;
        }
        return n;
    }

    void shutdown() override {
        if (shut_.exchange(true)) return;
        {
            std::lock_guard lock(in_->mutex);
            in_->readerGone = true;
            in_->fds.clear();
        }
        in_->readable.notify_all();
        {
            std::lock_guard lock(out_->mutex);
            out_->writerGone = true;
        }
        out_->readable.notify_all();
    }

    std::string describe() const override { return std::string("loopback:") + name_; }

private:
    std::shared_ptr<Pipe> in_;
    std::shared_ptr<Pipe> out_;
    const char* name_;
    std::atomic<bool> shut_{false};
};

}  // namespace

std::pair<std::unique_ptr<Transport>, std::unique_ptr<Transport>> makeLoopbackPair() {
    auto aToB = std::make_shared<Pipe>();
    auto bToA = std::make_shared<Pipe>();
    return {std::make_unique<LoopbackTransport>(bToA, aToB, "host"),
            std::make_unique<LoopbackTransport>(aToB, bToA, "firmware")};
}

}  // namespace npu::proto
