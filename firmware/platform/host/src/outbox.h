#pragma once
// A session's replies on their way to a client that may not read them (docs/firmware.md, "One
// NPU, many clients"). The firmware writes its replies under its one lock; a client whose socket
// is full would make that write wait, and every other client with it. So a reply goes out at once
// as far as the socket takes it, and whatever does not fit waits here, in order, for the outbox's
// own thread, which sends it without the firmware lock. A client that leaves more than kMaxBytes
// waiting, or does not read for the transport's write timeout, is cut off: its transport is shut
// down and its session ends as if it had gone.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "npu/protocol/transport.h"

namespace npu::fw::host {

class Outbox {
public:
    static constexpr size_t kMaxBytes = 16u << 20;

    explicit Outbox(proto::Transport& transport) : transport_(transport) {}
    ~Outbox() { stop(); }
    Outbox(const Outbox&) = delete;
    Outbox& operator=(const Outbox&) = delete;

    // Sends `bytes` after everything sent before, `fds` (borrowed) with its first byte. False when
    // the client is cut off (or the outbox stopped): the bytes are dropped.
    bool send(std::span<const uint8_t> bytes, std::span<const int> fds);
    // Ends the thread; what still waits is dropped. Never under the firmware lock: it waits for a
    // write in progress, which the transport's shutdown (the session is over) ends at once.
    void stop();

    size_t waitingBytes() const;
    uint64_t deferredSends() const;  // sends that did not fit at once and waited here
    uint64_t cutOffs() const;        // 1 once the client was cut off

private:
    struct Chunk {
        std::vector<uint8_t> bytes;
        std::vector<proto::UniqueFd> fds;  // dups, sent with the first byte
    };
    bool queue(std::span<const uint8_t> bytes, std::span<const int> fds);
    void cutOff();  // under mutex_
    void run();

    proto::Transport& transport_;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Chunk> chunks_;
    size_t waiting_ = 0;    // bytes in chunks_
    bool writing_ = false;  // the thread is sending a chunk it took off the queue
    bool broken_ = false;   // cut off, or stopped
    bool stopping_ = false;
    uint64_t deferred_ = 0;
    uint64_t cutOffs_ = 0;
    std::thread thread_;  // started at the first send that waits
};

}  // namespace npu::fw::host
