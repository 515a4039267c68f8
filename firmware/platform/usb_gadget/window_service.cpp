// WINDOW_WRITE / WINDOW_READ served against device DRAM (see window_service.h).
#include "window_service.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cstring>

#include "npu/protocol/frame.h"

namespace npu::fw::usb {
namespace {

constexpr uint32_t kInvalidArgument = 4;  // HAL ErrorStatus::INVALID_ARGUMENT
constexpr uint32_t kReplySlack = 64;      // protobuf framing of a WindowReadReply around its data

bool isWindowRequest(const proto::FrameHeader& h) {
    return (h.type == proto::METHOD_WINDOW_WRITE || h.type == proto::METHOD_WINDOW_READ) &&
           (h.flags & (proto::kFlagResponse | proto::kFlagError | proto::kFlagMore)) == 0;
}

struct WriteRequest {
    uint64_t addr = 0;  // proto3 defaults: a field left out is zero or empty
    const uint8_t* data = nullptr;
    uint32_t size = 0;
};

// WindowWriteRequest {addr = 1, data = 2} read where it lies: the data is then copied once, into
// DRAM (parsing into the message would copy the whole chunk once more). Unknown fields are
// skipped and a repeated field's last value wins, as protobuf's own parser does.
bool parseWriteRequest(const uint8_t* p, uint32_t length, WriteRequest* r) {
    using google::protobuf::internal::WireFormatLite;
    constexpr uint32_t kAddrTag = WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_VARINT);
    constexpr uint32_t kDataTag = WireFormatLite::MakeTag(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    google::protobuf::io::CodedInputStream in(p, static_cast<int>(length));
    for (uint32_t tag = in.ReadTag(); tag != 0; tag = in.ReadTag()) {
        if (tag == kAddrTag) {
            if (!in.ReadVarint64(&r->addr)) return false;
        } else if (tag == kDataTag) {
            uint32_t n = 0;
            if (!in.ReadVarint32(&n) || n > length - static_cast<uint32_t>(in.CurrentPosition()))
                return false;
            r->data = p + in.CurrentPosition();
            r->size = n;
            if (!in.Skip(static_cast<int>(n))) return false;
        } else if (!WireFormatLite::SkipField(&in, tag)) {
            return false;
        }
    }
    return in.CurrentPosition() == static_cast<int>(length);  // a zero tag inside is malformed
}

// The first frame magic in [p + from, p + avail), or avail.
size_t findMagic(const uint8_t* p, size_t avail, size_t from) {
    for (size_t i = from; i + 4 <= avail; ++i) {
        if (proto::loadLe32(p + i) == proto::kFrameMagic) return i;
    }
    return avail;
}

}  // namespace

WindowService::WindowService(uint8_t* dram, uint64_t windowAddr, uint64_t windowBytes, uint32_t maxPayload)
    : dram_(dram), windowAddr_(windowAddr), windowBytes_(windowBytes), maxPayload_(maxPayload) {}

void WindowService::reset() {
    pending_.clear();
    passRemaining_ = 0;
}

// Bytes are served where they lie (the endpoint's read buffer) unless a partial frame is
// waiting, which is rare: the host sends each frame as one transfer and a read takes a whole
// transfer. Only an incomplete frame is kept, so pending_ never holds more than one frame.
void WindowService::feed(const uint8_t* data, size_t length, std::vector<uint8_t>& forward,
                         const ReplySink& reply) {
    if (pending_.empty()) {
        const size_t used = consume(data, length, forward, reply);
        pending_.assign(data + used, data + length);
        return;
    }
    pending_.insert(pending_.end(), data, data + length);
    const size_t used = consume(pending_.data(), pending_.size(), forward, reply);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(used));
}

size_t WindowService::consume(const uint8_t* p, size_t length, std::vector<uint8_t>& forward,
                              const ReplySink& reply) {
    size_t used = 0;
    while (used < length) {
        const size_t n = step(p + used, length - used, forward, reply);
        if (n == 0) break;
        used += n;
    }
    return used;
}

size_t WindowService::step(const uint8_t* p, size_t avail, std::vector<uint8_t>& forward,
                           const ReplySink& reply) {
    auto pass = [&](size_t n) {
        forward.insert(forward.end(), p, p + n);
        return n;
    };
    if (passRemaining_ > 0) {
        const size_t n = std::min(passRemaining_, avail);
        passRemaining_ -= n;
        return pass(n);
    }
    if (avail < 4) return 0;
    if (proto::loadLe32(p) != proto::kFrameMagic) {
        // Not a frame: hand it on up to the next magic (the firmware reports it as garbage),
        // keeping back three bytes that may begin one.
        const size_t next = findMagic(p, avail, 1);
        return pass(next < avail ? next : avail - 3);
    }
    if (avail < proto::kFrameHeaderSize) return 0;
    proto::FrameHeader h;
    proto::parseFrameHeader(p, &h);
    if (h.version != proto::kFrameVersion || h.length > maxPayload_) {
        return pass(proto::kFrameHeaderSize);  // as the firmware's decoder does: drop the header, resync
    }
    const size_t frameBytes = proto::kFrameHeaderSize + h.length;
    if (!isWindowRequest(h)) {
        const size_t n = std::min(frameBytes, avail);
        passRemaining_ = frameBytes - n;
        return pass(n);
    }
    if (avail < frameBytes) return 0;
    const uint8_t* payload = p + proto::kFrameHeaderSize;
    if (proto::frameCrc(p, payload, h.length) != h.crc) {
        return pass(frameBytes);  // the firmware answers a corrupt frame with its usual error
    }
    if (h.type == proto::METHOD_WINDOW_WRITE) {
        serveWrite(h.callId, payload, h.length, reply);
    } else {
        serveRead(h.callId, payload, h.length, reply);
    }
    return frameBytes;
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

// Replies (a WINDOW_READ reply up to its data) are built in replyFrame_, kept between calls:
// fresh memory costs a page fault per 4 KiB, which on an emulated CPU costs more than a copy.
uint8_t* WindowService::replyPayload(size_t bytes) {
    if (replyFrame_.size() < proto::kFrameHeaderSize + bytes)
        replyFrame_.resize(proto::kFrameHeaderSize + bytes);
    return replyFrame_.data() + proto::kFrameHeaderSize;
}

// The frame's payload is `payloadBytes` in replyFrame_ and then `body` where it lies.
void WindowService::sendFrame(uint8_t method, uint16_t flags, uint64_t callId, size_t payloadBytes,
                              const ReplySink& reply, std::span<const uint8_t> body) {
    proto::FrameHeader h;
    h.type = method;
    h.flags = static_cast<uint16_t>(proto::kFlagResponse | flags);
    h.callId = callId;
    h.length = static_cast<uint32_t>(payloadBytes + body.size());
    uint8_t* frame = replyFrame_.data();
    proto::encodeFrameHeaderGather(h, frame + proto::kFrameHeaderSize, payloadBytes, body.data(), frame);
    (void)reply({frame, proto::kFrameHeaderSize + payloadBytes}, body);
}

void WindowService::sendMessage(uint8_t method, uint16_t flags, uint64_t callId,
                                const google::protobuf::MessageLite& message, const ReplySink& reply) {
    const size_t n = message.ByteSizeLong();
    message.SerializeWithCachedSizesToArray(replyPayload(n));
    sendFrame(method, flags, callId, n, reply);
}

void WindowService::sendError(uint8_t method, uint64_t callId, const std::string& message,
                              const ReplySink& reply) {
    proto::ErrorReply e;
    e.mutable_status()->set_code(kInvalidArgument);
    e.mutable_status()->set_message(message);
    sendMessage(method, proto::kFlagError, callId, e, reply);
}

void WindowService::serveWrite(uint64_t callId, const uint8_t* payload, uint32_t length,
                               const ReplySink& reply) {
    const uint8_t method = proto::METHOD_WINDOW_WRITE;
    WriteRequest request;
    if (!parseWriteRequest(payload, length, &request)) {
        return sendError(method, callId,
                         "WindowWrite: undecodable request (" + std::to_string(length) + " bytes)", reply);
    }
    if (std::string e = checkRange(request.addr, request.size); !e.empty()) {
        return sendError(method, callId, "WindowWrite: " + e, reply);
    }
    if (request.size > 0) std::memcpy(dram_ + request.addr, request.data, request.size);
    bytesWritten_ += request.size;
    proto::WindowWriteReply ok;
    ok.mutable_status()->set_code(0);
    sendMessage(method, 0, callId, ok, reply);
}

void WindowService::serveRead(uint64_t callId, const uint8_t* payload, uint32_t length,
                              const ReplySink& reply) {
    const uint8_t method = proto::METHOD_WINDOW_READ;
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
    // WindowReadReply {status {code 0}, data}: the status serialised by protobuf, then field 2's
    // tag and length, in replyFrame_; the data follows from where it lies in DRAM, gathered into
    // the same transfer (the message's wire format without copying the data; the CRC is
    // computed over it in place).
    using google::protobuf::internal::WireFormatLite;
    using google::protobuf::io::CodedOutputStream;
    constexpr uint32_t kDataTag = WireFormatLite::MakeTag(2, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    proto::WindowReadReply head;
    head.mutable_status()->set_code(0);
    const uint32_t n = request.length();
    const size_t headBytes =
        head.ByteSizeLong() + CodedOutputStream::VarintSize32(kDataTag) + CodedOutputStream::VarintSize32(n);
    uint8_t* out = head.SerializeWithCachedSizesToArray(replyPayload(headBytes));
    out = CodedOutputStream::WriteTagToArray(kDataTag, out);
    CodedOutputStream::WriteVarint32ToArray(n, out);
    bytesRead_ += n;
    sendFrame(method, 0, callId, headBytes, reply, {dram_ + request.addr(), n});
}

}  // namespace npu::fw::usb
