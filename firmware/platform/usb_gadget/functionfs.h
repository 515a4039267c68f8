#pragma once
// The USB device side's FunctionFS layer (docs/usb.md): writes the NPU's descriptors and strings
// to ep0, follows ep0's events on a thread (bind, enable, disable, the OPEN_SESSION vendor
// request) and moves endpoint data with Linux AIO, so every transfer has a timeout and can be
// cancelled (a blocking read() on a FunctionFS endpoint cannot be).

#include <linux/aio_abi.h>

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

// One endpoint file with at most one transfer in flight.
class AioEndpoint {
public:
    AioEndpoint() = default;
    ~AioEndpoint();
    AioEndpoint(const AioEndpoint&) = delete;
    AioEndpoint& operator=(const AioEndpoint&) = delete;

    proto::Result<void> open(const std::string& path, int flags);
    // Starts a read or write of `length` bytes at `data` (which must stay valid until it
    // completes or is cancelled). One at a time; a cancelled transfer the kernel has not given
    // back yet is reaped first, or the submit fails.
    proto::Result<void> submit(void* data, size_t length, bool write);
    bool pending() const { return pending_; }
    // Waits up to `timeout` for the transfer: bytes moved, kTimeout (still pending), or the
    // endpoint's error (-ESHUTDOWN when the host disabled the interface: kDisconnected).
    proto::Result<size_t> wait(std::chrono::milliseconds timeout);
    // Cancels a pending transfer and waits (bounded) for the kernel to give the buffer back.
    // false: it did not come back in time; the kernel may still write the buffer of a read, so
    // the caller must never free or reuse it (keepAbandoned()).
    bool cancel();
    const std::string& path() const { return path_; }

private:
    int fd_ = -1;
    aio_context_t context_ = 0;
    iocb cb_{};
    bool pending_ = false;
    bool abandoned_ = false;  // pending_ was cancelled but not given back
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
