// One host session over FunctionFS endpoints (see gadget_session.h).
#include "gadget_session.h"

#include <algorithm>
#include <cstring>

namespace npu::fw::usb {
namespace {

using proto::Error;

// One bulk OUT read: it completes at the end of the host's transfer (a short or zero-length
// packet), so a read takes a whole frame of up to 1 MiB and the window service serves it in
// place. (FunctionFS allocates the same size in the kernel per read: 1 MiB is an order-8 page
// allocation; a frame of 1 MiB + header takes two reads.)
constexpr size_t kReadBytes = 1024 * 1024;
constexpr std::chrono::milliseconds kWriteTimeout{5000};  // the host keeps a read pending on bulk IN
constexpr std::chrono::milliseconds kReadSlice{50};       // how often a waiting read checks the session

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
    return writeLocked(bytes.data(), bytes.size());
}

// The kernel copies a write's bytes when it is submitted, so a frame is queued and the caller goes
// on (serving the next request while this reply is on the wire); a full queue waits for its
// oldest transfer, which is where a host that stopped reading is noticed.
proto::Result<void> GadgetSession::writeLocked(const uint8_t* data, size_t length) {
    if (std::string why; ended(&why)) return proto::fail(Error::Kind::kDisconnected, describe() + ": " + why);
    AioEndpoint& in = ffs_.bulkIn();
    // The whole frame as one transfer; then a zero-length packet if it filled its last packet,
    // so the host's read ends with the frame instead of waiting for more.
    const bool zlp = length > 0 && length % ffs_.maxPacket() == 0;
    for (int part = 0; part < (zlp ? 2 : 1); ++part) {
        if (auto r = reapWrites(AioEndpoint::kDepth - 1); !r) return r;
        if (auto r = in.submit(const_cast<uint8_t*>(data), part == 0 ? length : 0, true); !r) return r;
    }
    return {};
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
    AioEndpoint& out = ffs_.bulkOut();
    if (auto r = queueReads(); !r) return std::unexpected(r.error());
    void* data = nullptr;
    auto n = out.wait(std::min(timeout, kReadSlice), &data);
    if (!n) return std::unexpected(n.error());  // kTimeout keeps the read pending for the next call
    const WindowService::ReplySink reply = [this](const uint8_t* frame, size_t length) {
        std::lock_guard lock(writeMutex_);
        return writeLocked(frame, length).has_value();
    };
    window_.feed(static_cast<const uint8_t*>(data), *n, forward_, reply);
    if (forwardPos_ < forward_.size()) return take(buffer);
    return proto::fail(Error::Kind::kTimeout, describe() + ": only host-window traffic so far");
}

// Every read buffer queued, in turn: while one frame is served, the next can arrive in the other
// (the host keeps two window calls in flight).
proto::Result<void> GadgetSession::queueReads() {
    AioEndpoint& out = ffs_.bulkOut();
    while (out.inFlight() < readBuffers_.size()) {
        std::vector<uint8_t>& b = readBuffers_[nextRead_];
        if (auto r = out.submit(b.data(), b.size(), false); !r) return r;
        nextRead_ = (nextRead_ + 1) % readBuffers_.size();
    }
    return {};
}

// With the same reads queued and writes in flight as a session, so the raw floor gets every help
// the framed path gets.
void GadgetSession::echo() {
    AioEndpoint& out = ffs_.bulkOut();
    std::string why;
    while (!ended(&why)) {
        if (!queueReads()) break;
        void* data = nullptr;
        auto n = out.wait(kReadSlice, &data);
        if (!n) {
            if (n.error().kind == Error::Kind::kTimeout) continue;
            break;
        }
        std::lock_guard lock(writeMutex_);
        if (!writeLocked(static_cast<const uint8_t*>(data), *n)) break;
    }
}

}  // namespace npu::fw::usb
