#pragma once
// The USB device side's FunctionFS layer (docs/usb.md): writes the NPU's descriptors and strings
// to ep0, follows ep0's events on a thread (bind, enable, disable, the OPEN_SESSION vendor
// request) and moves endpoint data with Linux AIO, so every transfer has a timeout and can be
// cancelled (a blocking read() on a FunctionFS endpoint cannot be).

#include <linux/aio_abi.h>
#include <sys/uio.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "npu/protocol/transport.h"

namespace npu::fw::usb {

// One endpoint file with up to kDepth transfers in flight, completed in the order submitted.
class AioEndpoint {
public:
    static constexpr size_t kDepth = 4;
    AioEndpoint() = default;
    ~AioEndpoint();
    AioEndpoint(const AioEndpoint&) = delete;
    AioEndpoint& operator=(const AioEndpoint&) = delete;

    proto::Result<void> open(const std::string& path, int flags);
    // Queues a read or write of `length` bytes at `data` (which must stay valid until it
    // completes or is cancelled), at most kDepth at once. A cancelled transfer the kernel has not
    // given back yet is reaped first, or the submit fails.
    proto::Result<void> submit(void* data, size_t length, bool write);
    // Queues one write gathered from `head` and `body` (IOCB_CMD_PWRITEV: FunctionFS copies both
    // into its transfer buffer when the write is submitted, so they may change right after).
    proto::Result<void> submitGather(const void* head, size_t headLength, const void* body,
                                     size_t bodyLength);
    bool pending() const { return count_ > 0; }
    size_t inFlight() const { return count_; }
    // Waits up to `timeout` for the oldest transfer: bytes moved (and in *data, its buffer; in
    // *asked, the length it was submitted with), kTimeout (still in flight), or the endpoint's
    // error (-ESHUTDOWN when the host disabled the interface: kDisconnected).
    proto::Result<size_t> wait(std::chrono::milliseconds timeout, void** data = nullptr,
                               size_t* asked = nullptr);
    // Cancels every transfer in flight and waits (bounded) for the kernel to give them back.
    // false: they did not all come back in time; the kernel may still write the buffer of a
    // read, so the caller must never free or reuse it (keepAbandoned()).
    bool cancel();
    const std::string& path() const { return path_; }

private:
    struct Slot {
        iocb cb{};
        iovec parts[2]{};      // a gathered write's pieces
        void* data = nullptr;  // the buffer (a gathered write's first piece) and the bytes asked
        size_t length = 0;
        bool busy = false;  // submitted, its event not yet taken by wait()
        bool done = false;  // its event arrived (result in res)
        int64_t res = 0;
    };
    // Collects the events that arrive within `timeout` (at least one is waited for).
    proto::Result<void> collect(std::chrono::milliseconds timeout);
    // A free slot for the next transfer (a cancelled transfer that came back is reaped first).
    proto::Result<Slot*> freeSlot();
    proto::Result<void> enqueue(Slot& slot);
    Slot& oldest() { return slots_[order_[0]]; }
    void popOldest();

    int fd_ = -1;
    aio_context_t context_ = 0;
    Slot slots_[kDepth];
    size_t order_[kDepth] = {};  // slot indexes, oldest first
    size_t count_ = 0;
    bool abandoned_ = false;  // cancelled transfers not all given back
    std::string path_;
};

// Keeps a read buffer that a transfer the kernel did not give back may still write: it is never
// freed (a leak, counted and logged, instead of memory the kernel writes into after a free).
void keepAbandoned(std::vector<uint8_t>&& buffer, const std::string& endpoint);

// What ep0 told us, shared by the ep0 thread and the serving loop.
struct GadgetState {
    std::mutex mutex;
    std::condition_variable changed;
    bool enabled = false;         // the host configured us (ENABLE) and has not disabled us since
    uint64_t openRequests = 0;    // OPEN_SESSION requests received
    uint64_t openedRequests = 0;  // ... for which a fresh session is ready
    bool echoRequested = false;   // the last request was OPEN_ECHO (bench: raw bulk echo)
    uint64_t sessions = 0;        // sessions started
};

class FunctionFs {
public:
    // `mount`: the functionfs mount point (its ep0 must not be open elsewhere).
    static proto::Result<std::unique_ptr<FunctionFs>> open(const std::string& mount);
    ~FunctionFs();

    GadgetState& state() { return state_; }
    AioEndpoint& bulkOut() { return out_; }
    AioEndpoint& bulkIn() { return in_; }
    AioEndpoint& eventIn() { return event_; }
    uint16_t maxPacket() const { return 512; }  // high speed bulk; full speed packets divide it

private:
    FunctionFs() = default;
    void ep0Loop();
    void handleSetup(const uint8_t* setup);

    int ep0_ = -1;
    std::string mount_;
    GadgetState state_;
    AioEndpoint out_, in_, event_;
    std::atomic<bool> stop_{false};
    std::thread ep0Thread_;
};

}  // namespace npu::fw::usb
