// One host session over FunctionFS endpoints (see gadget_session.h).
#include "gadget_session.h"

#include <algorithm>
#include <cstring>

#include "npu/protocol/frame.h"

namespace npu::fw::usb {
namespace {

using proto::Error;

// A read buffer holds the largest frame (1 MiB of payload and its header) whole. A read completes
// at the end of the host's transfer (a short or zero-length packet) or when full.
constexpr size_t kReadBytes = (1u << 20) + 4096;
constexpr std::chrono::milliseconds kWriteTimeout{5000};  // the host keeps a read pending on bulk IN
constexpr std::chrono::milliseconds kReadSlice{50};       // how often a waiting read checks the session
// A transfer at least this long makes the next read a whole-buffer read (see queueHead()).
constexpr size_t kStreamingBytes = 64u << 10;

}  // namespace

GadgetSession::GadgetSession(FunctionFs& ffs, WindowService& window, uint64_t openRequest, uint64_t number)
    : ffs_(ffs), window_(window), openRequest_(openRequest), number_(number) {
    for (auto& b : readBuffers_) b.resize(kReadBytes);
}

GadgetSession::~GadgetSession() {
    // Give the endpoints back clean: the next session must not inherit a transfer of this one.
    // A read the kernel does not give back keeps its buffer forever (never freed under it);
    // writes are copied into the kernel when submitted, so their buffers are free at once.
    if (!ffs_.bulkOut().cancel()) {
        for (auto& b : readBuffers_) keepAbandoned(std::move(b), ffs_.bulkOut().path());
    }
    (void)ffs_.bulkIn().cancel();
}

bool GadgetSession::ended(std::string* why) {
    std::lock_guard lock(ffs_.state().mutex);
    if (shut_) {
        *why = "shut down";
    } else if (!ffs_.state().enabled) {
        *why = "the host disabled the interface (unplugged or unbound)";
    } else if (ffs_.state().openRequests != openRequest_) {
        *why = "the host opened a new session";
    } else {
        return false;
    }
    return true;
}

void GadgetSession::shutdown() {
    std::lock_guard lock(ffs_.state().mutex);
    shut_ = true;
}

proto::Result<void> GadgetSession::write(std::span<const uint8_t> bytes, std::span<const int>) {
    std::lock_guard lock(writeMutex_);
    return writeLocked(bytes);
}

// The kernel copies a write's bytes when it is submitted, so a frame is queued and the caller goes
// on (serving the next request while this reply is on the wire); a full queue waits for its
// oldest transfer, which is where a host that stopped reading is noticed.
proto::Result<void> GadgetSession::writeLocked(std::span<const uint8_t> head, std::span<const uint8_t> body) {
    if (std::string why; ended(&why)) return proto::fail(Error::Kind::kDisconnected, describe() + ": " + why);
    AioEndpoint& in = ffs_.bulkIn();
    // The whole frame as one transfer; then a zero-length packet if it filled its last packet,
    // so the host's read ends with the frame instead of waiting for more.
    const size_t length = head.size() + body.size();
    const bool zlp = length > 0 && length % ffs_.maxPacket() == 0;
    if (auto r = reapWrites(AioEndpoint::kDepth - 1); !r) return r;
    auto* data = const_cast<uint8_t*>(head.data());
    auto sent = body.empty() ? in.submit(data, head.size(), true)
                             : in.submitGather(data, head.size(), body.data(), body.size());
    if (!sent || !zlp) return sent;
    if (auto r = reapWrites(AioEndpoint::kDepth - 1); !r) return r;
    return in.submit(data, 0, true);
}

// Waits until at most `keep` bulk IN writes are in flight, checking each one that completes.
proto::Result<void> GadgetSession::reapWrites(size_t keep) {
    AioEndpoint& in = ffs_.bulkIn();
    while (in.inFlight() > keep) {
        size_t asked = 0;
        auto done = in.wait(kWriteTimeout, nullptr, &asked);
        if (!done) {
            if (done.error().kind != Error::Kind::kTimeout) return std::unexpected(done.error());
            in.cancel();
            return proto::fail(Error::Kind::kTimeout, describe() + ": the host did not read " +
                                                          std::to_string(asked) +
                                                          " bytes on bulk IN within " +
                                                          std::to_string(kWriteTimeout.count()) + " ms");
        }
        if (*done != asked) {
            return proto::fail(Error::Kind::kIo, describe() + ": bulk IN took " + std::to_string(*done) +
                                                     " of " + std::to_string(asked) + " bytes");
        }
    }
    return {};
}

size_t GadgetSession::take(std::span<uint8_t> buffer) {
    const size_t n = std::min(buffer.size(), forward_.size() - forwardPos_);
    std::memcpy(buffer.data(), forward_.data() + forwardPos_, n);
    forwardPos_ += n;
    if (forwardPos_ == forward_.size()) {
        forward_.clear();
        forwardPos_ = 0;
    }
    return n;
}

proto::Result<size_t> GadgetSession::read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>*,
                                          std::chrono::milliseconds timeout) {
    if (forwardPos_ < forward_.size()) return take(buffer);
    if (std::string why; ended(&why)) return proto::fail(Error::Kind::kDisconnected, describe() + ": " + why);
    auto landed = nextTransfer(std::min(timeout, kReadSlice), true);
    if (!landed) return std::unexpected(landed.error());  // kTimeout keeps the read pending
    const WindowService::ReplySink reply = [this](std::span<const uint8_t> head,
                                                  std::span<const uint8_t> body) {
        std::lock_guard lock(writeMutex_);
        return writeLocked(head, body).has_value();
    };
    window_.feed(landed->data(), landed->size(), forward_, reply);
    releaseRead(landed->data());
    if (forwardPos_ < forward_.size()) return take(buffer);
    return proto::fail(Error::Kind::kTimeout, describe() + ": only host-window traffic so far");
}

// Bulk OUT reads: each transfer is read as one packet first (the head) and, when that fills the
// packet, the rest with one more read into the same buffer, so a transfer lies whole in one
// buffer (a frame is served where it lies). A framed session sizes the rest read by the frame's
// header; the raw echo, whose data has no header, reads to the end of the transfer. A read's size
// is what the kernel allocates (and zeroes) for it, so a small request costs a packet, not the
// largest frame. The next read is queued into another buffer behind a rest read, so the link
// never waits for a reader. While large transfers stream in (window chunks), the next two reads
// are reads of the last transfer's size (readAfter()) instead of a head, queued before a transfer
// is served: the next transfers then flow in whole while this one is served, instead of stopping
// after the first packet until the server comes back for the rest. A head that is not a frame (garbage, a
// corrupt header) is handed on as it came and the transfer's other packets follow in further reads; a rest
// read ends early at the transfer's end and always takes whole packets, so no byte is lost whatever a header
// claims.
proto::Result<void> GadgetSession::queueHead() {
    // Up to two reads queued (two sized reads while streaming); a head read goes last, since its
    // rest read must come right behind it.
    constexpr size_t kReadsQueued = 2;
    while (!headQueued_ && readsQueued_ < kReadsQueued) {
        size_t k = 0;
        while (k < readBusy_.size() && readBusy_[k]) ++k;
        if (k == readBusy_.size()) return {};  // every buffer holds a read or a transfer being served
        const bool head = nextRead_ == 0;
        const size_t bytes = head ? ffs_.maxPacket() : nextRead_;
        if (auto r = ffs_.bulkOut().submit(readBuffers_[k].data(), bytes, false); !r) return r;
        readBusy_[k] = true;
        readAsked_[k] = bytes;
        ++readsQueued_;
        headQueued_ = head;
    }
    return {};
}

size_t GadgetSession::bufferOf(const uint8_t* p) const {
    size_t k = 0;
    while (k < readBuffers_.size() &&
           (p < readBuffers_[k].data() || p >= readBuffers_[k].data() + readBuffers_[k].size()))
        ++k;
    return k;
}

// The rest of the transfer whose head filled the packet at `base` (0: none): by the frame's
// length (in *frame) when `framed` and the head begins a frame, else up to the buffer's end.
// Whole packets.
size_t GadgetSession::restBytes(const uint8_t* base, size_t capacity, bool framed, size_t* frame) const {
    const size_t packet = ffs_.maxPacket();
    if (!framed) return capacity - packet;
    proto::FrameHeader h;
    if (proto::loadLe32(base) != proto::kFrameMagic || !proto::parseFrameHeader(base, &h)) return 0;
    const size_t total = proto::kFrameHeaderSize + h.length;
    if (total <= packet) return 0;
    *frame = total;
    return std::min((total - packet + packet - 1) / packet * packet, capacity - packet);
}

// The size of the read after a transfer of `bytes`: a head read (0) after a small transfer; after
// a large one, that size rounded up past the next packet boundary, so that a transfer of the same
// size ends inside the read with its short or zero-length packet, and the kernel's buffer for it
// is no larger than the transfer needs (1 MiB for a window chunk; a read of the whole buffer,
// 1 MiB + 4 KiB, would cost an allocation of 2 MiB, zeroed).
size_t GadgetSession::readAfter(size_t bytes) const {
    if (bytes < kStreamingBytes) return 0;
    const size_t packet = ffs_.maxPacket();
    return std::min((bytes / packet + 1) * packet, readBuffers_[0].size());
}

// Waits up to `timeout` for the next whole transfer (or frame): its bytes, which stay valid until
// releaseRead(); kTimeout when none came.
proto::Result<std::span<const uint8_t>> GadgetSession::nextTransfer(std::chrono::milliseconds timeout,
                                                                    bool framed) {
    AioEndpoint& out = ffs_.bulkOut();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (auto r = queueHead(); !r) return std::unexpected(r.error());
        const auto left =
            std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                       deadline - std::chrono::steady_clock::now()));
        void* where = nullptr;
        auto n = out.wait(left, &where);
        if (!n) return std::unexpected(n.error());
        auto* data = static_cast<uint8_t*>(where);
        const size_t k = bufferOf(data);
        if (k == readBuffers_.size())
            return proto::fail(Error::Kind::kIo, describe() + ": a read into an unknown buffer completed");
        uint8_t* base = readBuffers_[k].data();
        if (data != base) {  // a rest read: the transfer is whole
            --readsQueued_;
            const size_t bytes = static_cast<size_t>(data - base) + *n;
            nextRead_ = readAfter(bytes);
            return std::span<const uint8_t>(base, bytes);
        }
        if (readAsked_[k] == ffs_.maxPacket()) headQueued_ = false;
        const bool head = readAsked_[k] == ffs_.maxPacket() && *n == ffs_.maxPacket();
        size_t frame = 0;
        const size_t rest = head ? restBytes(base, readBuffers_[k].size(), framed, &frame) : 0;
        if (rest == 0) {
            // The next transfer's read is queued before this one is served, so it flows in meanwhile.
            --readsQueued_;
            nextRead_ = readAfter(*n);
            if (auto r = queueHead(); !r) return std::unexpected(r.error());
            return std::span<const uint8_t>(base, *n);
        }
        if (frame > 0) nextRead_ = readAfter(frame);  // for the read queued behind this rest read
        if (auto r = out.submit(base + *n, rest, false); !r) return std::unexpected(r.error());
    }
}

void GadgetSession::releaseRead(const uint8_t* data) {
    const size_t k = bufferOf(data);
    if (k < readBusy_.size()) readBusy_[k] = false;
}

// With the same reads and writes in flight as a framed session, so the raw floor gets every help
// the framed path gets.
void GadgetSession::echo() {
    std::string why;
    while (!ended(&why)) {
        auto landed = nextTransfer(kReadSlice, false);
        if (!landed) {
            if (landed.error().kind == Error::Kind::kTimeout) continue;
            break;
        }
        std::lock_guard lock(writeMutex_);
        const bool written = writeLocked(*landed).has_value();
        releaseRead(landed->data());  // the kernel copied the write's bytes when it was submitted
        if (!written) break;
    }
}

}  // namespace npu::fw::usb
