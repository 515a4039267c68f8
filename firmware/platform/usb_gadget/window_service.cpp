// WINDOW_WRITE / WINDOW_READ served against device DRAM (see window_service.h).
#include "window_service.h"

#include <algorithm>
#include <cstring>

#include "npu.pb.h"
#include "npu/protocol/frame.h"

namespace npu::fw::usb {
namespace {

constexpr uint32_t kInvalidArgument = 4;  // HAL ErrorStatus::INVALID_ARGUMENT
constexpr uint32_t kReplySlack = 64;      // protobuf framing of a WindowReadReply around its data

bool isWindowRequest(const proto::FrameHeader& h) {
    return (h.type == proto::METHOD_WINDOW_WRITE || h.type == proto::METHOD_WINDOW_READ) &&
           (h.flags & (proto::kFlagResponse | proto::kFlagError | proto::kFlagMore)) == 0;
}

size_t findMagic(const std::vector<uint8_t>& bytes, size_t from) {
    for (size_t i = from; i + 4 <= bytes.size(); ++i) {
        if (proto::loadLe32(bytes.data() + i) == proto::kFrameMagic) return i;
    }
    return bytes.size();
}

void sendReply(uint8_t method, uint16_t flags, uint64_t callId, const std::string& payload,
               const WindowService::ReplySink& reply) {
    std::vector<uint8_t> frame(proto::kFrameHeaderSize + payload.size());
    std::memcpy(frame.data() + proto::kFrameHeaderSize, payload.data(), payload.size());
    proto::FrameHeader h;
    h.type = method;
    h.flags = static_cast<uint16_t>(proto::kFlagResponse | flags);
    h.callId = callId;
    h.length = static_cast<uint32_t>(payload.size());
    proto::encodeFrameHeader(h, frame.data() + proto::kFrameHeaderSize, frame.data());
    (void)reply(frame.data(), frame.size());
}

void sendError(uint8_t method, uint64_t callId, const std::string& message,
               const WindowService::ReplySink& reply) {
    proto::ErrorReply e;
    e.mutable_status()->set_code(kInvalidArgument);
    e.mutable_status()->set_message(message);
    sendReply(method, proto::kFlagError, callId, e.SerializeAsString(), reply);
}

}  // namespace

WindowService::WindowService(uint8_t* dram, uint64_t windowAddr, uint64_t windowBytes, uint32_t maxPayload)
    : dram_(dram), windowAddr_(windowAddr), windowBytes_(windowBytes), maxPayload_(maxPayload) {}

void WindowService::reset() {
    pending_.clear();
    passRemaining_ = 0;
}

void WindowService::feed(const uint8_t* data, size_t length, std::vector<uint8_t>& forward,
                         const ReplySink& reply) {
    pending_.insert(pending_.end(), data, data + length);
    while (!pending_.empty() && step(forward, reply)) {
    }
}

bool WindowService::step(std::vector<uint8_t>& forward, const ReplySink& reply) {
    auto pass = [&](size_t n) {
        forward.insert(forward.end(), pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
        pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    };
    if (passRemaining_ > 0) {
        const size_t n = std::min(passRemaining_, pending_.size());
        pass(n);
        passRemaining_ -= n;
        return true;
    }
    if (pending_.size() < 4) return false;
    if (proto::loadLe32(pending_.data()) != proto::kFrameMagic) {
        // Not a frame: hand it on up to the next magic (the firmware reports it as garbage).
        const size_t next = findMagic(pending_, 1);
        const size_t n = next < pending_.size() ? next : pending_.size() - 3;
        pass(n);
        return n > 0;
    }
    if (pending_.size() < proto::kFrameHeaderSize) return false;
    proto::FrameHeader h;
    proto::parseFrameHeader(pending_.data(), &h);
    const bool sane = h.version == proto::kFrameVersion && h.length <= maxPayload_;
    if (!sane) {
        pass(proto::kFrameHeaderSize);  // as the firmware's decoder does: drop the header, resync
        return true;
    }
    const size_t frameBytes = proto::kFrameHeaderSize + h.length;
    if (!isWindowRequest(h)) {
        passRemaining_ = frameBytes;
        return true;
    }
    if (pending_.size() < frameBytes) return false;
    const uint8_t* payload = pending_.data() + proto::kFrameHeaderSize;
    if (proto::frameCrc(pending_.data(), payload, h.length) != h.crc) {
        pass(frameBytes);  // the firmware answers a corrupt frame with its usual error
        return true;
    }
    serve(h.type, h.callId, payload, h.length, reply);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(frameBytes));
    return true;
}

std::string WindowService::checkRange(uint64_t addr, uint64_t length) const {
    if (addr < windowAddr_ || addr - windowAddr_ > windowBytes_ ||
        length > windowBytes_ - (addr - windowAddr_)) {
        return "[" + std::to_string(addr) + ", +" + std::to_string(length) +
               ") is outside the host window [" + std::to_string(windowAddr_) + ", +" +
               std::to_string(windowBytes_) + ")";
    }
    return {};
}

void WindowService::serve(uint8_t method, uint64_t callId, const uint8_t* payload, uint32_t length,
                          const ReplySink& reply) {
    if (method == proto::METHOD_WINDOW_WRITE) {
        proto::WindowWriteRequest request;
        if (!request.ParseFromArray(payload, static_cast<int>(length))) {
            return sendError(method, callId,
                             "WindowWrite: undecodable request (" + std::to_string(length) + " bytes)",
                             reply);
        }
        if (std::string e = checkRange(request.addr(), request.data().size()); !e.empty()) {
            return sendError(method, callId, "WindowWrite: " + e, reply);
        }
        std::memcpy(dram_ + request.addr(), request.data().data(), request.data().size());
        bytesWritten_ += request.data().size();
        proto::WindowWriteReply ok;
        ok.mutable_status()->set_code(0);
        return sendReply(method, 0, callId, ok.SerializeAsString(), reply);
    }
    proto::WindowReadRequest request;
    if (!request.ParseFromArray(payload, static_cast<int>(length))) {
        return sendError(method, callId,
                         "WindowRead: undecodable request (" + std::to_string(length) + " bytes)", reply);
    }
    if (request.length() > maxPayload_ - kReplySlack) {
        return sendError(method, callId,
                         "WindowRead: " + std::to_string(request.length()) + " bytes asked, at most " +
                             std::to_string(maxPayload_ - kReplySlack) + " per call",
                         reply);
    }
    if (std::string e = checkRange(request.addr(), request.length()); !e.empty()) {
        return sendError(method, callId, "WindowRead: " + e, reply);
    }
    proto::WindowReadReply out;
    out.mutable_status()->set_code(0);
    out.set_data(dram_ + request.addr(), request.length());
    bytesRead_ += request.length();
    sendReply(method, 0, callId, out.SerializeAsString(), reply);
}

}  // namespace npu::fw::usb
