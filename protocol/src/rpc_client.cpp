#include "npu/protocol/rpc_client.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <optional>

#include "npu/protocol/frame.h"
#include "npu/protocol/vlog.h"

namespace npu::proto {

namespace {
// Up to a whole frame of the default largest payload per read, so a transport that holds whole
// frames (USB) hands one over in one copy. (Measured in the USB test VM: QEMU's TCG runs memcpy
// in 64 KiB pieces, glibc's `rep movsb` range, at ~6 ms per MiB against ~0.5 ms for one 1 MiB
// copy; reading a 1 MiB reply in 64 KiB pieces cost two such copies per reply.)
constexpr size_t kReadChunk = (1u << 20) + 4096;

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

uint32_t fieldTag(const BytesField& field) {
    return WireFormatLite::MakeTag(static_cast<int>(field.number), WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

// The bytes `field` adds to a payload (none when it has no number).
size_t fieldBytes(const BytesField& field) {
    if (field.number == 0) return 0;
    return CodedOutputStream::VarintSize32(fieldTag(field)) +
           CodedOutputStream::VarintSize32(static_cast<uint32_t>(field.bytes.size())) + field.bytes.size();
}

// The method's name, for errors and verbose logs only (a look-up in the descriptor pool).
const char* methodLabel(Method method) {
    const std::string& name = Method_Name(method);  // the descriptor's: lives as long as the program
    return name.empty() ? "unknown method" : name.c_str();
}

// "Execute (call 7)": how an error names the call it happened to.
std::string callLabel(Method method, uint64_t callId) {
    return std::string(methodLabel(method)) + " (call " + std::to_string(callId) + ")";
}

// Writes the request (its sizes cached) and then `field` at `out`.
void serializePayload(const google::protobuf::Message& request, const BytesField& field, uint8_t* out) {
    out = request.SerializeWithCachedSizesToArray(out);
    if (field.number == 0) return;
    out = CodedOutputStream::WriteTagToArray(fieldTag(field), out);
    out = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(field.bytes.size()), out);
    if (!field.bytes.empty()) std::memcpy(out, field.bytes.data(), field.bytes.size());
}
}  // namespace

struct RpcClient::Pending {
    std::condition_variable done;
    bool complete = false;
    bool isError = false;
    std::string payload;  // reassembled response (fragments appended)
    // The caller's reply message: a response in one frame is parsed into it straight from the
    // decoder's buffer (no copy of the payload; bulk window data is megabytes).
    google::protobuf::Message* reply = nullptr;
    std::optional<bool> parsedInPlace;  // ... and whether it parsed (payloadBytes of it)
    size_t payloadBytes = 0;
    std::vector<UniqueFd> fds;
    std::optional<Error> failure;
    // Progress frames for this call (the firmware still works on it) and when the last came.
    uint64_t progress = 0;
    std::chrono::steady_clock::time_point lastProgress;
};

// Turns decoder events into completed calls; runs on the leading caller's thread only.
class RpcClient::Reader final : public FrameListener {
public:
    explicit Reader(RpcClient& client) : client_(client) {}
    std::vector<UniqueFd> fdInbox;  // fds received, handed to the next response that completes

    void onFrameEvent(const FrameEvent& e) override {
        if (e.kind != FrameEventKind::kFrame) {
            onBadFrame(e);
            return;
        }
        const FrameHeader& h = e.header;
        if (h.type == METHOD_PROGRESS && (h.flags & (kFlagResponse | kFlagError | kFlagMore)) == 0) {
            onProgress(h, e.payload);
            return;
        }
        if ((h.flags & kFlagResponse) == 0 && (h.flags & kFlagError) == 0) {
            client_.unknownResponses_++;
            vlog("protocol", "%s: ignoring a request frame (method %u, call %" PRIu64 ") from the firmware",
                 client_.description_.c_str(), h.type, h.callId);
            return;
        }
        std::unique_lock lock(client_.mutex_);
        auto it = client_.findPending(h.callId);
        if (it == client_.pending_.end()) {
            lock.unlock();
            client_.unknownResponses_++;
            vlog("protocol",
                 "%s: response for unknown call %" PRIu64 " (method %u, flags 0x%x, %u bytes) dropped",
                 client_.description_.c_str(), h.callId, h.type, h.flags, h.length);
            return;
        }
        Pending& p = *it->second;
        p.isError = p.isError || (h.flags & kFlagError) != 0;
        const bool last = (h.flags & kFlagMore) == 0;
        // A whole response in this one frame is parsed into the caller's reply where it lies (the
        // caller is blocked in call() and cannot drop `reply` while we hold the mutex).
        const bool direct = last && !p.isError && p.reply != nullptr && p.payload.empty();
        if (p.payload.size() + h.length > kMaxMessageBytes) {
            p.failure = Error{Error::Kind::kResourceExhausted,
                              client_.description_ + ": response to call " + std::to_string(h.callId) +
                                  " exceeds " + std::to_string(kMaxMessageBytes) + " bytes"};
        } else if (direct) {
            p.parsedInPlace = p.reply->ParseFromArray(e.payload, static_cast<int>(h.length));
        } else {
            p.payload.append(reinterpret_cast<const char*>(e.payload), h.length);
        }
        p.payloadBytes += h.length;
        for (auto& fd : fdInbox) p.fds.push_back(std::move(fd));
        fdInbox.clear();
        if (!last) return;
        p.complete = true;
        auto pending = client_.takePending(it);
        lock.unlock();
        pending->done.notify_all();
    }

private:
    // A ProgressEvent: the waiting call's timeout restarts from now (RpcClient::finish). Anything
    // else (unparsable, another call id inside, done > total, a call nobody waits for) is ignored.
    void onProgress(const FrameHeader& h, const uint8_t* payload) {
        ProgressEvent event;
        const bool valid = h.length <= kMaxProgressBytes &&
                           event.ParseFromArray(payload, static_cast<int>(h.length)) &&
                           event.call_id() == h.callId && event.done() <= event.total();
        std::unique_lock lock(client_.mutex_);
        auto it = valid ? client_.findPending(h.callId) : client_.pending_.end();
        if (it == client_.pending_.end()) {
            lock.unlock();
            client_.ignoredProgress_++;
            vlog("protocol", "%s: progress frame for call %" PRIu64 " (%u bytes) ignored: %s",
                 client_.description_.c_str(), h.callId, h.length,
                 valid ? "no such call waits" : "malformed");
            return;
        }
        it->second->progress++;
        it->second->lastProgress = std::chrono::steady_clock::now();
        lock.unlock();
        client_.progressFrames_++;
        vlog("protocol", "%s: call %" PRIu64 " progresses: phase %u, %u of %u", client_.description_.c_str(),
             h.callId, event.phase(), event.done(), event.total());
    }
    static constexpr uint32_t kMaxProgressBytes = 64;  // a ProgressEvent is at most ~30 bytes

    void onBadFrame(const FrameEvent& e) {
        client_.badFrames_++;
        vlog("protocol", "%s: %s (call %" PRIu64 ", %zu bytes skipped)", client_.description_.c_str(),
             frameEventName(e.kind), e.haveHeader ? e.header.callId : 0, e.skippedBytes);
        if (!e.haveHeader || e.kind == FrameEventKind::kGarbage) return;
        // The response of this call (if the id is intact) is lost: fail it now, not at its timeout.
        std::unique_lock lock(client_.mutex_);
        auto it = client_.findPending(e.header.callId);
        if (it == client_.pending_.end()) return;
        auto pending = client_.takePending(it);
        pending->failure = Error{Error::Kind::kProtocol, client_.description_ + ": response to call " +
                                                             std::to_string(e.header.callId) +
                                                             " rejected: " + frameEventName(e.kind)};
        pending->complete = true;
        lock.unlock();
        pending->done.notify_all();
    }

    RpcClient& client_;
};

RpcClient::RpcClient(std::unique_ptr<Transport> transport, uint32_t maxPayloadBytes)
    : transport_(std::move(transport)), maxPayload_(maxPayloadBytes), description_(transport_->describe()) {}

Result<std::unique_ptr<RpcClient>> RpcClient::create(std::unique_ptr<Transport> transport,
                                                     uint32_t maxPayloadBytes) {
    if (!transport) return fail(Error::Kind::kInvalidArgument, "RpcClient::create: null transport");
    if (maxPayloadBytes < 64 || maxPayloadBytes > (1u << 30)) {
        return fail(Error::Kind::kInvalidArgument, "RpcClient::create: max payload " +
                                                       std::to_string(maxPayloadBytes) +
                                                       " bytes is outside [64, 1 GiB]");
    }
    std::unique_ptr<RpcClient> client(new RpcClient(std::move(transport), maxPayloadBytes));
    client->reader_ = std::make_unique<Reader>(*client);
    client->frameBuffer_.resize(FrameDecoder::bufferSizeFor(maxPayloadBytes));
    client->decoder_ = std::make_unique<FrameDecoder>(client->frameBuffer_.data(),
                                                      client->frameBuffer_.size(), maxPayloadBytes);
    client->chunk_.resize(kReadChunk);
    return client;
}

RpcClient::~RpcClient() {
    close();
}

void RpcClient::close() {
    std::lock_guard lock(closeMutex_);
    closing_ = true;
    transport_->shutdown();  // a leader blocked in read() returns kDisconnected
    failAll(Error{Error::Kind::kDisconnected, description_ + ": client closed"});
}

void RpcClient::failAll(const Error& error) {
    PendingList failed;
    {
        std::lock_guard lock(mutex_);
        connected_ = false;
        if (disconnectReason_.empty()) disconnectReason_ = error.message;
        failed.swap(pending_);
        for (auto& [id, p] : failed) {
            p->failure = error;
            p->complete = true;
        }
    }
    for (auto& [id, p] : failed) p->done.notify_all();
}

void RpcClient::readOnce(std::chrono::milliseconds timeout) {
    if (transport_->readsInPlace()) {
        // Whole frames are decoded where the transport received them (no copy into chunk_ and
        // the decoder's buffer); anything else goes through the decoder's buffer as usual.
        auto view = transport_->peekRead(timeout);
        if (!view) return readFailed(view.error());
        const size_t used = decoder_->feedInPlace(view->data(), view->size(), *reader_);
        decoder_->feed(view->data() + used, view->size() - used, *reader_);
        transport_->consumeRead(view->size());
        return;
    }
    readFds_.clear();
    auto n = transport_->read(chunk_, &readFds_, timeout);
    for (auto& fd : readFds_) reader_->fdInbox.push_back(std::move(fd));
    if (!n) return readFailed(n.error());
    decoder_->feed(chunk_.data(), *n, *reader_);
}

void RpcClient::readFailed(const Error& error) {
    if (error.kind == Error::Kind::kTimeout) return;
    if (!closing_.load())
        vlog("protocol", "%s: connection lost: %s", description_.c_str(), error.message.c_str());
    decoder_->finish(*reader_);
    failAll(Error{Error::Kind::kDisconnected, description_ + ": " + error.message});
}

uint8_t* RpcClient::sendRoom(size_t bytes) {
    if (sendBuffer_.size() < bytes) sendBuffer_.resize(bytes);
    return sendBuffer_.data();
}

Result<void> RpcClient::sendFrames(uint8_t method, uint64_t callId, const google::protobuf::Message& request,
                                   const BytesField& field, size_t bytes, std::span<const int> fds) {
    std::lock_guard lock(writeMutex_);
    auto header = [&](uint8_t* frame, size_t n, bool more) {
        FrameHeader h;
        h.type = method;
        h.flags = more ? kFlagMore : 0;
        h.callId = callId;
        h.length = static_cast<uint32_t>(n);
        encodeFrameHeader(h, frame + kFrameHeaderSize, frame);
        return std::span<const uint8_t>(frame, kFrameHeaderSize + n);
    };
    if (bytes <= maxPayload_) {  // the rule: one frame, serialised in place behind its header
        // Where the transport sends from a buffer of its own (USB), straight into it.
        auto room = fds.empty() ? transport_->writeRoom(kFrameHeaderSize + bytes) : Result<uint8_t*>(nullptr);
        if (!room) return std::unexpected(room.error());
        uint8_t* frame = *room != nullptr ? *room : sendRoom(kFrameHeaderSize + bytes);
        serializePayload(request, field, frame + kFrameHeaderSize);
        const auto bytesOut = header(frame, bytes, false);
        return *room != nullptr ? transport_->commitWrite(bytesOut.size()) : transport_->write(bytesOut, fds);
    }
    std::string payload(bytes, '\0');
    serializePayload(request, field, reinterpret_cast<uint8_t*>(payload.data()));
    const auto* data = reinterpret_cast<const uint8_t*>(payload.data());
    size_t offset = 0;
    do {
        const size_t n = std::min<size_t>(payload.size() - offset, maxPayload_);
        uint8_t* frame = sendRoom(kFrameHeaderSize + n);
        std::memcpy(frame + kFrameHeaderSize, data + offset, n);
        auto w = transport_->write(header(frame, n, offset + n < payload.size()),
                                   offset == 0 ? fds : std::span<const int>{});
        if (!w) {
            if (offset > 0) {
                // Half a message is on the wire: the stream cannot be trusted any more.
                transport_->shutdown();
            }
            return w;
        }
        offset += n;
    } while (offset < payload.size());
    return {};
}

RpcClient::PendingList::iterator RpcClient::findPending(uint64_t callId) {
    return std::find_if(pending_.begin(), pending_.end(),
                        [callId](const auto& p) { return p.first == callId; });
}

std::shared_ptr<RpcClient::Pending> RpcClient::takePending(PendingList::iterator it) {
    std::shared_ptr<Pending> taken = std::move(it->second);
    *it = std::move(pending_.back());  // the order does not matter
    pending_.pop_back();
    return taken;
}

void RpcClient::erasePending(uint64_t callId) {
    auto it = findPending(callId);
    if (it != pending_.end()) takePending(it);
}

RpcClient::InFlight::InFlight(RpcClient* client, uint64_t callId, std::shared_ptr<Pending> pending,
                              Method method)
    : client_(client), callId_(callId), pending_(std::move(pending)), method_(method) {}

RpcClient::InFlight::InFlight(InFlight&& other) noexcept
    : client_(std::exchange(other.client_, nullptr)),
      callId_(other.callId_),
      pending_(std::move(other.pending_)),
      method_(other.method_) {}

RpcClient::InFlight& RpcClient::InFlight::operator=(InFlight&& other) noexcept {
    if (this != &other) {
        abandon();
        client_ = std::exchange(other.client_, nullptr);
        callId_ = other.callId_;
        pending_ = std::move(other.pending_);
        method_ = other.method_;
    }
    return *this;
}

RpcClient::InFlight::~InFlight() {
    abandon();
}

// Unregisters the call: the reader never touches its reply again (it looks calls up under the
// same mutex).
void RpcClient::InFlight::abandon() {
    if (client_ == nullptr) return;
    std::lock_guard lock(client_->mutex_);
    client_->erasePending(callId_);
    client_ = nullptr;
}

Result<void> RpcClient::call(Method method, const google::protobuf::Message& request,
                             google::protobuf::Message& reply, std::chrono::milliseconds timeout,
                             std::span<const int> sendFds, std::vector<UniqueFd>* receivedFds) {
    auto started = start(method, request, reply, sendFds);
    if (!started) return std::unexpected(started.error());
    return finish(*started, timeout, receivedFds);
}

Result<RpcClient::InFlight> RpcClient::start(Method method, const google::protobuf::Message& request,
                                             google::protobuf::Message& reply, std::span<const int> sendFds,
                                             const BytesField& field) {
    if (!request.IsInitialized()) {
        return fail(Error::Kind::kInvalidArgument, std::string(methodLabel(method)) + ": cannot serialize " +
                                                       request.GetTypeName() + " (missing required fields?)");
    }
    if (field.bytes.size() > kMaxMessageBytes) {
        return fail(Error::Kind::kInvalidArgument, std::string(methodLabel(method)) + ": a field of " +
                                                       std::to_string(field.bytes.size()) +
                                                       " bytes exceeds " + std::to_string(kMaxMessageBytes));
    }
    const size_t bytes = request.ByteSizeLong() + fieldBytes(field);
    const uint64_t callId = nextCallId_++;
    auto pending = std::make_shared<Pending>();
    pending->reply = &reply;
    {
        std::lock_guard lock(mutex_);
        if (!connected_.load()) {
            return fail(Error::Kind::kDisconnected,
                        std::string(methodLabel(method)) + ": " + disconnectReason_);
        }
        pending_.emplace_back(callId, pending);
    }
    InFlight call(this, callId, pending, method);
    NPU_VLOG("protocol", "%s: call %" PRIu64 " %s (%zu bytes)", description_.c_str(), callId,
             methodLabel(method), bytes);
    auto sent = sendFrames(static_cast<uint8_t>(method), callId, request, field, bytes, sendFds);
    if (!sent) {
        Error e = sent.error();
        e.message = callLabel(method, callId) + ": " + e.message;
        return std::unexpected(e);  // `call` unregisters itself
    }
    return call;
}

Result<void> RpcClient::finish(InFlight& call, std::chrono::milliseconds timeout,
                               std::vector<UniqueFd>* receivedFds) {
    if (call.client_ != this) {
        return fail(Error::Kind::kInvalidArgument, "RpcClient::finish: the call was finished already");
    }
    const uint64_t callId = call.callId_;
    const std::shared_ptr<Pending> pending = call.pending_;
    const Method method = call.method_;
    google::protobuf::Message& reply = *pending->reply;
    call.client_ = nullptr;  // from here on this function unregisters it on every path
    const auto start = std::chrono::steady_clock::now();
    auto deadline = start + timeout;
    const auto cap = start + timeout * kProgressCapFactor;  // progress stretches the wait this far
    uint64_t progressSeen = 0;
    std::unique_lock lock(mutex_);
    while (!pending->complete) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline && pending->progress != progressSeen) {
            // The firmware reported progress meanwhile: the timeout runs from the last report.
            progressSeen = pending->progress;
            deadline = std::min(cap, pending->lastProgress + timeout);
        }
        if (now >= deadline) {
            erasePending(callId);  // a late response will be counted as unknown
            const std::string kept = progressSeen == 0
                                         ? std::string()
                                         : " of its last progress report (" + std::to_string(progressSeen) +
                                               " received; progress keeps a call alive for at most " +
                                               std::to_string(timeout.count() * kProgressCapFactor) + " ms)";
            return fail(Error::Kind::kTimeout, callLabel(method, callId) + ": no response from " +
                                                   description_ + " within " +
                                                   std::to_string(timeout.count()) + " ms" + kept);
        }
        if (!leader_ && connected_.load()) {
            // Lead: read the transport ourselves until our response is in or our time is up.
            leader_ = true;
            lock.unlock();
            readOnce(std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
            lock.lock();
            leader_ = false;
            // Whoever still waits may take the lead now.
            for (auto& [id, other] : pending_) other->done.notify_one();
            continue;
        }
        // Follow: the leader (or failAll) completes us, or hands the lead over.
        pending->done.wait_until(lock, deadline);
    }
    lock.unlock();
    if (pending->failure) {
        Error e = *pending->failure;
        e.message = callLabel(method, callId) + ": " + e.message;
        return std::unexpected(e);
    }
    if (receivedFds != nullptr) {
        for (auto& fd : pending->fds) receivedFds->push_back(std::move(fd));
    }
    if (pending->isError) {
        ErrorReply error;
        if (!error.ParseFromString(pending->payload)) {
            return fail(Error::Kind::kProtocol,
                        callLabel(method, callId) + ": unparsable ErrorReply from " + description_);
        }
        NPU_VLOG("protocol", "%s: call %" PRIu64 " %s failed remotely: %s", description_.c_str(), callId,
                 methodLabel(method), error.status().message().c_str());
        return fail(Error::Kind::kRemote, error.status().message(), error.status().code());
    }
    const bool parsed =
        pending->parsedInPlace ? *pending->parsedInPlace : reply.ParseFromString(pending->payload);
    if (!parsed) {
        return fail(Error::Kind::kProtocol, callLabel(method, callId) + ": cannot parse " +
                                                std::to_string(pending->payloadBytes) + " bytes as " +
                                                reply.GetTypeName());
    }
    NPU_VLOG("protocol", "%s: call %" PRIu64 " %s done (%zu bytes)", description_.c_str(), callId,
             methodLabel(method), pending->payloadBytes);
    return {};
}

}  // namespace npu::proto
