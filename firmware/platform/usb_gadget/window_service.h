#pragma once
// The host window over USB (docs/usb.md): nothing is shared with the host, so the host moves the
// bytes a call reads or writes with WINDOW_WRITE / WINDOW_READ frames. This service picks those
// frames out of the byte stream from the host and serves them against device DRAM, the way a USB
// controller's DMA engine would; every other byte (good frames, corrupt frames, garbage) passes
// through unchanged to the firmware core, which validates and answers it as on any transport.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "npu.pb.h"

namespace npu::fw::usb {

class WindowService {
public:
    // Sends one reply frame to the host, `head` then `body` (empty, or a WINDOW_READ's data
    // where it lies in DRAM), as one transfer; false if it could not.
    using ReplySink = std::function<bool(std::span<const uint8_t> head, std::span<const uint8_t> body)>;

    WindowService(uint8_t* dram, uint64_t windowAddr, uint64_t windowBytes, uint32_t maxPayload);

    // Consumes bytes from the host; appends the bytes meant for the firmware to `forward`.
    void feed(const uint8_t* data, size_t length, std::vector<uint8_t>& forward, const ReplySink& reply);
    // Drops a partial frame (a new session starts from a clean stream).
    void reset();

    uint64_t bytesWritten() const { return bytesWritten_; }
    uint64_t bytesRead() const { return bytesRead_; }

private:
    // Serves or forwards what it can of [p, p + length); returns the bytes used (the rest is the
    // beginning of a frame).
    size_t consume(const uint8_t* p, size_t length, std::vector<uint8_t>& forward, const ReplySink& reply);
    // Serves one window frame or forwards a piece from the head of [p, p + avail); returns the
    // bytes used, 0 when more are needed.
    size_t step(const uint8_t* p, size_t avail, std::vector<uint8_t>& forward, const ReplySink& reply);
    void serveWrite(uint64_t callId, const uint8_t* payload, uint32_t length, const ReplySink& reply);
    void serveRead(uint64_t callId, const uint8_t* payload, uint32_t length, const ReplySink& reply);
    std::string checkRange(uint64_t addr, uint64_t length) const;
    uint8_t* replyPayload(size_t bytes);  // room for a reply payload (or its head) of `bytes` in replyFrame_
    void sendFrame(uint8_t method, uint16_t flags, uint64_t callId, size_t payloadBytes,
                   const ReplySink& reply, std::span<const uint8_t> body = {});
    void sendMessage(uint8_t method, uint16_t flags, uint64_t callId,
                     const google::protobuf::MessageLite& message, const ReplySink& reply);
    void sendError(uint8_t method, uint64_t callId, const std::string& message, const ReplySink& reply);

    uint8_t* dram_;
    uint64_t windowAddr_;
    uint64_t windowBytes_;
    uint32_t maxPayload_;
    std::vector<uint8_t> pending_;     // the beginning of a frame, kept for the next bytes
    std::vector<uint8_t> replyFrame_;  // every reply (a WINDOW_READ's up to its data) is built here
    size_t passRemaining_ = 0;         // bytes of a frame for the firmware still to forward
    uint64_t bytesWritten_ = 0;
    uint64_t bytesRead_ = 0;
};

}  // namespace npu::fw::usb
