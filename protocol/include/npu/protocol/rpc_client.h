#pragma once
// The host end of the RPC channel: sends requests as frames, matches responses by call id.
// call() is safe from any number of threads. There is no reader thread: a caller waiting for
// its response reads the transport itself (leader/follower). One caller at a time leads; it
// dispatches every response it reads, including other callers' (waking them), and hands the
// lead to a waiting caller when its own call completes. A lone caller thus wakes up exactly
// once per call, as with a bare socket, instead of being woken by a reader thread.

#include <google/protobuf/message.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "npu.pb.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/transport.h"

namespace npu::proto {

// A request's bytes field sent from where its bytes lie: the request message is sent without it
// and the field follows in protobuf's wire format (tag, length, bytes), which a parser reads as
// if it were in the message. The bytes are copied once, straight into the frame (over USB the
// transfer buffer), instead of into the message and then into the frame.
struct BytesField {
    uint32_t number = 0;  // 0: none
    std::span<const uint8_t> bytes;
};

class RpcClient {
    struct Pending;

public:
    // maxPayloadBytes is the largest frame payload sent and accepted
    // (the firmware's HelloReply.max_payload_bytes tells what it accepts); larger messages are
    // fragmented with the MORE flag.
    static Result<std::unique_ptr<RpcClient>> create(std::unique_ptr<Transport> transport,
                                                     uint32_t maxPayloadBytes = 1 << 20);
    ~RpcClient();
    RpcClient(const RpcClient&) = delete;
    RpcClient& operator=(const RpcClient&) = delete;

    // Sends `request` as `method` with a fresh call id, fragments payloads larger than the max
    // with the MORE flag, waits up to `timeout` for the response with the same call id, parses
    // it into `reply`. Each progress frame for the call (METHOD_PROGRESS: the firmware is still
    // working on it) restarts `timeout` from its arrival, up to kProgressCapFactor x `timeout`
    // in all (docs/reliability.md). An ERROR frame becomes Error{kRemote, message, code}. Transport death
    // fails every pending call with kDisconnected promptly. fds received with the response are
    // appended to `receivedFds` (closed if it is null).
    Result<void> call(Method method, const google::protobuf::Message& request,
                      google::protobuf::Message& reply, std::chrono::milliseconds timeout,
                      std::span<const int> sendFds = {}, std::vector<UniqueFd>* receivedFds = nullptr);

    // A call sent by start() whose response finish() has not taken yet. Destroying it unfinished
    // abandons the call (its response, if it comes, is counted as unknown).
    class InFlight {
    public:
        InFlight(InFlight&& other) noexcept;
        InFlight& operator=(InFlight&& other) noexcept;
        ~InFlight();
        uint64_t callId() const { return callId_; }  // e.g. the target of a CancelRequest

    private:
        friend class RpcClient;
        InFlight(RpcClient* client, uint64_t callId, std::shared_ptr<Pending> pending, Method method);
        void abandon();
        RpcClient* client_ = nullptr;  // null once finished (or moved from)
        uint64_t callId_ = 0;
        std::shared_ptr<Pending> pending_;
        Method method_;  // its name is looked up only for an error or a verbose log
    };
    // call() in two halves, so that several calls can be in flight from one thread: the link and
    // both ends then work at once (the host window over USB moves megabytes in chunk calls).
    // start() sends the request; `reply` must outlive the InFlight. finish() waits up to
    // `timeout` for the response and parses it into that reply, as call() does.
    // `field`, when given, is sent as part of the request (the message must not set it itself).
    Result<InFlight> start(Method method, const google::protobuf::Message& request,
                           google::protobuf::Message& reply, std::span<const int> sendFds = {},
                           const BytesField& field = {});
    Result<void> finish(InFlight& call, std::chrono::milliseconds timeout,
                        std::vector<UniqueFd>* receivedFds = nullptr);

    // Responses whose call id matches no pending call (late replies after a timeout, a confused
    // peer): counted and logged, never fatal.
    uint64_t unknownResponses() const { return unknownResponses_.load(); }
    // Frames the reader dropped as corrupt (CRC, oversize, garbage, bad version).
    uint64_t badFrames() const { return badFrames_.load(); }
    // Progress frames that reached a waiting call, and those ignored: unparsable, inconsistent
    // (call id, done > total) or for a call nobody waits for.
    uint64_t progressFrames() const { return progressFrames_.load(); }
    uint64_t ignoredProgress() const { return ignoredProgress_.load(); }
    // How far progress can stretch a call's timeout: this many times the timeout in all.
    static constexpr int kProgressCapFactor = 10;
    bool connected() const { return connected_.load(); }
    // Shuts the transport down and fails pending calls with kDisconnected.
    void close();
    std::string describe() const { return description_; }

    // Largest reassembled response accepted (a peer cannot make the host allocate without bound).
    static constexpr size_t kMaxMessageBytes = 256u << 20;

private:
    class Reader;
    RpcClient(std::unique_ptr<Transport> transport, uint32_t maxPayloadBytes);
    // The leader's read: one transport read (up to `timeout`), fed to the decoder.
    void readOnce(std::chrono::milliseconds timeout);
    void readFailed(const Error& error);  // a transport read's error: kTimeout is none
    void failAll(const Error& error);
    // `bytes`: the payload's size, request.ByteSizeLong() (just computed) and `field`'s.
    Result<void> sendFrames(uint8_t method, uint64_t callId, const google::protobuf::Message& request,
                            const BytesField& field, size_t bytes, std::span<const int> fds);
    uint8_t* sendRoom(size_t bytes);  // sendBuffer_, at least `bytes` long

    std::unique_ptr<Transport> transport_;
    const uint32_t maxPayload_;
    const std::string description_;

    std::mutex writeMutex_;  // frames of one call are never interleaved with another's
    // Frames are built here, under writeMutex_. Kept between calls (it grows to the largest
    // frame sent): a fresh megabyte per call costs a page fault per 4 KiB, which is more than
    // the copy on an emulated CPU (the USB test VM).
    std::vector<uint8_t> sendBuffer_;
    // The calls waiting for a response, unordered. A flat list, not a map: no node is allocated
    // per call, and the firmware's queue bounds how many are in flight (a few dozen at most).
    using PendingList = std::vector<std::pair<uint64_t, std::shared_ptr<Pending>>>;
    PendingList::iterator findPending(uint64_t callId);              // under mutex_; end() if none
    std::shared_ptr<Pending> takePending(PendingList::iterator it);  // under mutex_: removes it
    void erasePending(uint64_t callId);                              // under mutex_; none is fine
    std::mutex mutex_;                                               // pending_, disconnectReason_
    PendingList pending_;
    std::string disconnectReason_;
    std::atomic<uint64_t> nextCallId_{1};
    std::atomic<uint64_t> unknownResponses_{0};
    std::atomic<uint64_t> badFrames_{0};
    std::atomic<uint64_t> progressFrames_{0};
    std::atomic<uint64_t> ignoredProgress_{0};
    std::atomic<bool> connected_{true};
    std::atomic<bool> closing_{false};
    std::mutex closeMutex_;

    // Leader state: only the caller holding the lead (leader_ under mutex_) touches these.
    bool leader_ = false;
    std::unique_ptr<Reader> reader_;
    std::vector<uint8_t> frameBuffer_;
    std::unique_ptr<FrameDecoder> decoder_;
    std::vector<uint8_t> chunk_;
    std::vector<UniqueFd> readFds_;
};

}  // namespace npu::proto
