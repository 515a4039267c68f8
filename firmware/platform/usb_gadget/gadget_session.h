#pragma once
// One host session of the USB device side, as a proto::Transport the firmware host serves: bytes
// from bulk OUT (host-window frames served on the way, see window_service.h), frames to bulk IN
// with a zero-length packet after a multiple of the packet size. The session ends when the host
// opens a new one (OPEN_SESSION), disables the interface (unplug, unbind) or the program stops.

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

#include "functionfs.h"
#include "npu/protocol/transport.h"
#include "window_service.h"

namespace npu::fw::usb {

class GadgetSession final : public proto::Transport {
public:
    // `openRequest`: the OPEN_SESSION this session answers.
    GadgetSession(FunctionFs& ffs, WindowService& window, uint64_t openRequest, uint64_t number);
    ~GadgetSession() override;

    // fds are dropped: nothing can be shared over USB (the firmware offers its DRAM fd at the
    // handshake on every transport; the host knows USB shares nothing).
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override;
    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>* fds,
                               std::chrono::milliseconds timeout) override;
    void shutdown() override;
    std::string describe() const override { return "usb gadget session " + std::to_string(number_); }
    bool sharesMemory() const override { return false; }

    // The bench's raw floor: echoes every bulk OUT transfer on bulk IN until the session ends.
    void echo();

private:
    bool ended(std::string* why);
    // One frame as one transfer: `head`, then `body` (may be empty) gathered into it.
    proto::Result<void> writeLocked(std::span<const uint8_t> head, std::span<const uint8_t> body = {});
    proto::Result<void> reapWrites(size_t keep);
    proto::Result<void> queueHead();
    size_t bufferOf(const uint8_t* p) const;
    size_t restBytes(const uint8_t* base, size_t capacity, bool framed, size_t* frame) const;
    size_t readAfter(size_t bytes) const;
    proto::Result<std::span<const uint8_t>> nextTransfer(std::chrono::milliseconds timeout, bool framed);
    void releaseRead(const uint8_t* data);
    size_t take(std::span<uint8_t> buffer);

    FunctionFs& ffs_;
    WindowService& window_;
    const uint64_t openRequest_;
    const uint64_t number_;
    std::mutex writeMutex_;
    bool shut_ = false;
    // Bulk OUT read buffers (two: while one frame is served, the next arrives).
    // Three: while one transfer is served, two reads are queued, so the link does not wait for the
    // server to wake between transfers.
    static constexpr size_t kReadBuffers = 3;
    std::array<std::vector<uint8_t>, kReadBuffers> readBuffers_;
    std::array<bool, kReadBuffers> readBusy_{};  // the buffer holds a read or a transfer being read or served
    std::array<size_t, kReadBuffers> readAsked_{};  // the size the buffer's first read was queued with
    size_t readsQueued_ = 0;   // reads queued whose transfer has not landed whole (head and rest: one)
    bool headQueued_ = false;  // one of them is a head read (nothing may queue behind it: its rest follows)
    size_t nextRead_ = 0;      // the next read's size, 0: a head read (readAfter())
    std::vector<uint8_t> forward_;  // bytes for the firmware, from forwardPos_ on
    size_t forwardPos_ = 0;
};

}  // namespace npu::fw::usb
