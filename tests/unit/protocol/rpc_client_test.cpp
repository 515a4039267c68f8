// RpcClient against a scripted fake firmware on the other end of a loopback channel.
#include "npu/protocol/rpc_client.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "npu.pb.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/transport.h"

using namespace npu::proto;
using namespace std::chrono_literals;

namespace {

std::vector<uint8_t> makeFrame(uint8_t type, uint16_t flags, uint64_t callId, const std::string& payload) {
    std::vector<uint8_t> f(kFrameHeaderSize + payload.size());
    std::memcpy(f.data() + kFrameHeaderSize, payload.data(), payload.size());
    FrameHeader h;
    h.type = type;
    h.flags = flags;
    h.callId = callId;
    h.length = uint32_t(payload.size());
    encodeFrameHeader(h, f.data() + kFrameHeaderSize, f.data());
    return f;
}

// A fake firmware: reassembles requests and hands each to `handler` on its own thread.
class FakeFirmware : FrameListener {
public:
    using Handler = std::function<void(FakeFirmware&, const FrameHeader&, const std::string&)>;
    FakeFirmware(std::unique_ptr<Transport> t, Handler h) : transport_(std::move(t)), handler_(std::move(h)) {
        thread_ = std::thread([this] { run(); });
    }
    ~FakeFirmware() { stop(); }
    void stop() {
        transport_->shutdown();
        if (thread_.joinable()) thread_.join();
    }
    void reply(uint64_t callId, uint8_t method, const google::protobuf::Message& m, uint16_t extraFlags = 0,
               std::span<const int> fds = {}) {
        auto f = makeFrame(method, kFlagResponse | extraFlags, callId, m.SerializeAsString());
        (void)transport_->write(f, fds);
    }
    void replyFragmented(uint64_t callId, uint8_t method, const std::string& payload, size_t chunk) {
        for (size_t off = 0; off < payload.size(); off += chunk) {
            bool more = off + chunk < payload.size();
            auto f =
                makeFrame(method, kFlagResponse | (more ? kFlagMore : 0), callId, payload.substr(off, chunk));
            (void)transport_->write(f);
        }
    }
    void raw(const std::vector<uint8_t>& bytes) { (void)transport_->write(bytes); }
    std::atomic<int> requests{0};

private:
    void run() {
        std::vector<uint8_t> chunk(65536);
        while (true) {
            auto n = transport_->read(chunk, nullptr, 200ms);
            if (!n) {
                if (n.error().kind == Error::Kind::kTimeout) continue;
                return;
            }
            decoder_.feed(chunk.data(), *n, *this);
        }
    }
    void onFrameEvent(const FrameEvent& e) override {
        if (e.kind != FrameEventKind::kFrame) return;
        assembly_.append(reinterpret_cast<const char*>(e.payload), e.header.length);
        if (e.header.flags & kFlagMore) return;
        requests++;
        handler_(*this, e.header, assembly_);
        assembly_.clear();
    }
    std::unique_ptr<Transport> transport_;
    Handler handler_;
    std::vector<uint8_t> buffer_ = std::vector<uint8_t>(FrameDecoder::bufferSizeFor(1 << 20));
    FrameDecoder decoder_{buffer_.data(), buffer_.size(), 1 << 20};
    std::string assembly_;
    std::thread thread_;
};

// Echoes Ping nonces; answers everything else per test.
void pingEcho(FakeFirmware& fw, const FrameHeader& h, const std::string& payload) {
    if (h.type == METHOD_PING) {
        PingRequest req;
        REQUIRE(req.ParseFromString(payload));
        PingReply rep;
        rep.set_nonce(req.nonce());
        rep.set_uptime_us(payload.size());
        fw.reply(h.callId, h.type, rep);
    }
}

std::unique_ptr<RpcClient> makeClient(std::unique_ptr<Transport> t, uint32_t maxPayload = 1 << 20) {
    auto c = RpcClient::create(std::move(t), maxPayload);
    REQUIRE(c.has_value());
    return std::move(*c);
}

}  // namespace

TEST_CASE("concurrent calls each get their own response") {
    auto [host, fwEnd] = makeLoopbackPair();
    FakeFirmware fw(std::move(fwEnd), pingEcho);
    auto client = makeClient(std::move(host));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 50; ++i) {
                PingRequest req;
                req.set_nonce(uint64_t(t) * 1000 + uint64_t(i));
                PingReply rep;
                auto r = client->call(METHOD_PING, req, rep, 5000ms);
                if (!r || rep.nonce() != req.nonce()) failures++;
            }
        });
    }
    for (auto& t : threads) t.join();
    REQUIRE(failures == 0);
    REQUIRE(client->unknownResponses() == 0);
    REQUIRE(client->connected());
}

TEST_CASE("calls started from one thread are all in flight and finish with their own replies") {
    auto [host, fwEnd] = makeLoopbackPair();
    FakeFirmware fw(std::move(fwEnd), pingEcho);
    auto client = makeClient(std::move(host));
    constexpr int kCalls = 4;
    PingReply replies[kCalls];
    std::vector<RpcClient::InFlight> inFlight;
    for (int i = 0; i < kCalls; ++i) {
        PingRequest req;
        req.set_nonce(100 + uint64_t(i));
        auto started = client->start(METHOD_PING, req, replies[i]);
        REQUIRE(started.has_value());
        inFlight.push_back(std::move(*started));
    }
    for (int i = kCalls - 1; i >= 0; --i) {  // any order
        REQUIRE(client->finish(inFlight[size_t(i)], 5000ms).has_value());
        CHECK(replies[i].nonce() == 100 + uint64_t(i));
    }
    auto again = client->finish(inFlight[0], 5000ms);
    REQUIRE_FALSE(again.has_value());
    CHECK(again.error().message.find("finished already") != std::string::npos);
    // An abandoned call's response is counted as unknown; the client carries on.
    {
        PingRequest req;
        PingReply dropped;
        auto started = client->start(METHOD_PING, req, dropped);
        REQUIRE(started.has_value());
    }
    PingRequest req;
    req.set_nonce(7);
    PingReply rep;
    REQUIRE(client->call(METHOD_PING, req, rep, 5000ms).has_value());
    CHECK(rep.nonce() == 7);
    CHECK(client->unknownResponses() == 1);
}

TEST_CASE("responses with unknown call ids are counted, not fatal") {
    auto [host, fwEnd] = makeLoopbackPair();
    FakeFirmware fw(std::move(fwEnd), [](FakeFirmware& f, const FrameHeader& h, const std::string& p) {
        PingReply stray;
        f.reply(h.callId + 1000, METHOD_PING, stray);  // nobody waits for this one
        pingEcho(f, h, p);
    });
    auto client = makeClient(std::move(host));
    PingRequest req;
    req.set_nonce(9);
    PingReply rep;
    REQUIRE(client->call(METHOD_PING, req, rep, 5000ms).has_value());
    CHECK(rep.nonce() == 9);
    // The stray frame was written before the real one, so it has been counted by now.
    CHECK(client->unknownResponses() == 1);
    REQUIRE(client->call(METHOD_PING, req, rep, 5000ms).has_value());
    CHECK(client->unknownResponses() == 2);
}

TEST_CASE("a call without a response times out; the late response is then unknown") {
    auto [host, fwEnd] = makeLoopbackPair();
    std::atomic<uint64_t> ignoredCall{0};
    FakeFirmware fw(std::move(fwEnd), [&](FakeFirmware& f, const FrameHeader& h, const std::string& p) {
        if (h.type == METHOD_RESET) {
            ignoredCall = h.callId;
            return;
        }
        pingEcho(f, h, p);
    });
    auto client = makeClient(std::move(host));
    ResetRequest req;
    ResetReply rep;
    auto r = client->call(METHOD_RESET, req, rep, 30ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kTimeout);
    CHECK(r.error().message.find("METHOD_RESET") != std::string::npos);
    // The connection stays usable.
    PingRequest ping;
    PingReply pong;
    REQUIRE(client->call(METHOD_PING, ping, pong, 5000ms).has_value());
}

TEST_CASE("transport death fails a pending call with kDisconnected") {
    auto [host, fwEnd] = makeLoopbackPair();
    auto fw = std::make_unique<FakeFirmware>(std::move(fwEnd),
                                             [](FakeFirmware&, const FrameHeader&, const std::string&) {});
    auto client = makeClient(std::move(host));
    std::thread killer([&] {
        while (fw->requests.load() == 0) std::this_thread::sleep_for(1ms);
        fw.reset();  // the firmware end goes away while the call waits
    });
    ResetRequest req;
    ResetReply rep;
    auto r = client->call(METHOD_RESET, req, rep, 60000ms);  // must end long before this
    killer.join();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kDisconnected);
    // Later calls fail at once.
    auto r2 = client->call(METHOD_RESET, req, rep, 60000ms);
    REQUIRE_FALSE(r2.has_value());
    CHECK(r2.error().kind == Error::Kind::kDisconnected);
    CHECK_FALSE(client->connected());
}

TEST_CASE("close() wakes pending calls") {
    auto [host, fwEnd] = makeLoopbackPair();
    FakeFirmware fw(std::move(fwEnd), [](FakeFirmware&, const FrameHeader&, const std::string&) {});
    auto client = makeClient(std::move(host));
    Result<void> r;
    std::thread caller([&] {
        ResetRequest req;
        ResetReply rep;
        r = client->call(METHOD_RESET, req, rep, 60000ms);
    });
    while (fw.requests.load() == 0) std::this_thread::sleep_for(1ms);
    client->close();
    caller.join();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kDisconnected);
}

TEST_CASE("an ERROR frame becomes kRemote with the firmware's code and message") {
    auto [host, fwEnd] = makeLoopbackPair();
    FakeFirmware fw(std::move(fwEnd), [](FakeFirmware& f, const FrameHeader& h, const std::string&) {
        ErrorReply e;
        e.mutable_status()->set_code(7);
        e.mutable_status()->set_message("queue full");
        f.reply(h.callId, 255, e, kFlagError);
    });
    auto client = makeClient(std::move(host));
    PingRequest req;
    PingReply rep;
    auto r = client->call(METHOD_PING, req, rep, 5000ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kRemote);
    CHECK(r.error().remoteCode == 7);
    CHECK(r.error().message == "queue full");
}

TEST_CASE("large requests and responses are fragmented and reassembled") {
    auto [host, fwEnd] = makeLoopbackPair();
    std::atomic<size_t> receivedOperands{0};
    FakeFirmware fw(std::move(fwEnd), [&](FakeFirmware& f, const FrameHeader& h, const std::string& payload) {
        PrepareModelRequest req;
        REQUIRE(req.ParseFromString(payload));
        receivedOperands = size_t(req.model().main().operands_size());
        CountersReply rep;  // a large reply, sent in 100-byte fragments
        for (int i = 0; i < 200; ++i) {
            auto* c = rep.add_counters();
            c->set_name("counter." + std::to_string(i));
            c->set_value(uint64_t(i));
        }
        f.replyFragmented(h.callId, h.type, rep.SerializeAsString(), 100);
    });
    auto client = makeClient(std::move(host), 256);  // forces the request into many frames
    PrepareModelRequest req;
    for (int i = 0; i < 100; ++i) {
        auto* o = req.mutable_model()->mutable_main()->add_operands();
        o->set_type(3);
        o->add_dimensions(uint32_t(i + 1));
    }
    REQUIRE(req.ByteSizeLong() > 2 * 256);  // at least three request frames
    CountersReply rep;
    REQUIRE(client->call(METHOD_PREPARE_MODEL, req, rep, 5000ms).has_value());
    CHECK(receivedOperands == 100);
    REQUIRE(rep.counters_size() == 200);
    CHECK(rep.counters(199).name() == "counter.199");
}

TEST_CASE("fds sent by the firmware reach the caller") {
    auto [host, fwEnd] = makeLoopbackPair();
    FakeFirmware fw(std::move(fwEnd), [](FakeFirmware& f, const FrameHeader& h, const std::string&) {
        UniqueFd memfd(memfd_create("dram", MFD_CLOEXEC));
        REQUIRE(::write(memfd.get(), "DRAM", 4) == 4);
        HelloReply rep;
        rep.set_major(1);
        int fds[] = {memfd.get()};
        f.reply(h.callId, h.type, rep, 0, fds);
    });
    auto client = makeClient(std::move(host));
    HelloRequest req;
    req.set_major(1);
    HelloReply rep;
    std::vector<UniqueFd> fds;
    REQUIRE(client->call(METHOD_HELLO, req, rep, 5000ms, {}, &fds).has_value());
    REQUIRE(fds.size() == 1);
    char buf[4];
    REQUIRE(::pread(fds[0].get(), buf, 4, 0) == 4);
    CHECK(std::string(buf, 4) == "DRAM");
}

TEST_CASE("a corrupt response fails its call with kProtocol instead of waiting for the timeout") {
    auto [host, fwEnd] = makeLoopbackPair();
    FakeFirmware fw(std::move(fwEnd), [](FakeFirmware& f, const FrameHeader& h, const std::string&) {
        PingReply rep;
        rep.set_nonce(5);
        auto frame = makeFrame(h.type, kFlagResponse, h.callId, rep.SerializeAsString());
        frame.back() ^= 0xFF;
        f.raw(frame);
    });
    auto client = makeClient(std::move(host));
    PingRequest req;
    PingReply rep;
    auto r = client->call(METHOD_PING, req, rep, 60000ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kProtocol);
    CHECK(client->badFrames() >= 1);
}

TEST_CASE("RpcClient::create rejects bad arguments") {
    auto bad = RpcClient::create(nullptr);
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().kind == Error::Kind::kInvalidArgument);
    auto [host, fwEnd] = makeLoopbackPair();
    auto tiny = RpcClient::create(std::move(host), 8);
    REQUIRE_FALSE(tiny.has_value());
}

namespace {

// A transport with its own send and receive buffers, as USB's: the client builds frames in
// writeRoom() and decodes what peekRead() shows where it lies. Reads hand out at most `piece`
// bytes at a time, so frames also arrive split (the decoder's buffered path).
class InPlaceTransport final : public Transport {
public:
    InPlaceTransport(std::unique_ptr<Transport> inner, size_t piece)
        : inner_(std::move(inner)), piece_(piece) {}
    Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        return inner_->write(bytes, fds);
    }
    Result<size_t> read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                        std::chrono::milliseconds timeout) override {
        return inner_->read(buffer, fds, timeout);
    }
    void shutdown() override { inner_->shutdown(); }
    std::string describe() const override { return "in-place test transport"; }
    Result<uint8_t*> writeRoom(size_t length) override {
        staged_.resize(length);
        ++roomsGiven;
        return staged_.data();
    }
    Result<void> commitWrite(size_t length) override {
        REQUIRE(length == staged_.size());
        return inner_->write(staged_, {});
    }
    bool readsInPlace() const override { return true; }
    Result<std::span<const uint8_t>> peekRead(std::chrono::milliseconds timeout) override {
        if (pos_ == received_.size()) {
            received_.resize(piece_);
            auto n = inner_->read(received_, nullptr, timeout);
            if (!n) return std::unexpected(n.error());
            received_.resize(*n);
            pos_ = 0;
        }
        return std::span<const uint8_t>(received_.data() + pos_, received_.size() - pos_);
    }
    void consumeRead(size_t n) override { pos_ += n; }
    std::atomic<int> roomsGiven{0};

private:
    std::unique_ptr<Transport> inner_;
    size_t piece_;
    std::vector<uint8_t> staged_, received_;
    size_t pos_ = 0;
};

// Answers WINDOW_WRITE with the request's address, data size and whether the data is all 'd' (in
// a WindowWriteReply's message, small enough for one frame of the smallest max payload).
void windowEcho(FakeFirmware& fw, const FrameHeader& h, const std::string& payload) {
    WindowWriteRequest req;
    REQUIRE(req.ParseFromString(payload));
    WindowWriteReply rep;
    const bool allD = req.data().find_first_not_of('d') == std::string::npos;
    rep.mutable_status()->set_message(std::to_string(req.addr()) + ":" + std::to_string(req.data().size()) +
                                      (allD ? ":d" : ":other"));
    fw.reply(h.callId, h.type, rep);
}

}  // namespace

TEST_CASE("a transport's own buffers: frames built in writeRoom, replies decoded where they lie") {
    for (size_t piece : {size_t(7), size_t(1) << 20}) {
        auto [host, fwEnd] = makeLoopbackPair();
        FakeFirmware fw(std::move(fwEnd), pingEcho);
        auto transport = std::make_unique<InPlaceTransport>(std::move(host), piece);
        auto* inPlace = transport.get();
        auto client = makeClient(std::move(transport));
        for (uint64_t i = 1; i <= 20; ++i) {
            PingRequest req;
            req.set_nonce(i);
            PingReply rep;
            REQUIRE(client->call(METHOD_PING, req, rep, 5000ms).has_value());
            CHECK(rep.nonce() == i);
        }
        CHECK(inPlace->roomsGiven == 20);
        CHECK(client->badFrames() == 0);
    }
}

TEST_CASE("a BytesField is sent as part of the request, in one frame or fragmented") {
    for (uint32_t maxPayload : {1u << 20, 256u}) {
        auto [host, fwEnd] = makeLoopbackPair();
        FakeFirmware fw(std::move(fwEnd), windowEcho);
        auto client = makeClient(std::move(host), maxPayload);
        const std::string data(1000, 'd');
        WindowWriteRequest req;
        req.set_addr(4096);
        const BytesField field{WindowWriteRequest::kDataFieldNumber,
                               {reinterpret_cast<const uint8_t*>(data.data()), data.size()}};
        WindowWriteReply rep;
        auto call = client->start(METHOD_WINDOW_WRITE, req, rep, {}, field);
        REQUIRE(call.has_value());
        REQUIRE(client->finish(*call, 5000ms).has_value());
        CHECK(rep.status().message() == "4096:1000:d");
    }
}

namespace {

std::string progressPayload(uint64_t callId, uint32_t done, uint32_t total) {
    ProgressEvent e;
    e.set_call_id(callId);
    e.set_phase(2);
    e.set_done(done);
    e.set_total(total);
    return e.SerializeAsString();
}

// Answers METHOD_RESET late: after `reports` progress frames `every` apart (then the reply, unless
// `answer` is false). Runs on its own thread, so the fake keeps reading.
struct SlowReset {
    int reports = 0;
    std::chrono::milliseconds every{0};
    bool answer = true;
    std::vector<std::thread> threads;
    // Before the fake firmware goes: its threads write to it.
    void join() {
        for (auto& t : threads) t.join();
        threads.clear();
    }
    FakeFirmware::Handler handler() {
        return [this](FakeFirmware& f, const FrameHeader& h, const std::string& p) {
            if (h.type != METHOD_RESET) return pingEcho(f, h, p);
            threads.emplace_back([this, &f, id = h.callId] {
                for (int i = 0; i < reports; ++i) {
                    std::this_thread::sleep_for(every);
                    f.raw(makeFrame(METHOD_PROGRESS, 0, id,
                                    progressPayload(id, uint32_t(i), uint32_t(reports))));
                }
                if (answer) f.reply(id, METHOD_RESET, ResetReply());
            });
        };
    }
};

}  // namespace

TEST_CASE("progress frames keep a call alive past its timeout") {
    auto [host, fwEnd] = makeLoopbackPair();
    SlowReset slow;
    slow.reports = 30;
    slow.every = 20ms;  // the reply comes after about 600 ms, three times the timeout
    FakeFirmware fw(std::move(fwEnd), slow.handler());
    auto client = makeClient(std::move(host));
    ResetReply rep;
    auto r = client->call(METHOD_RESET, ResetRequest(), rep, 200ms);
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r.has_value());
    CHECK(client->progressFrames() == 30);
    CHECK(client->ignoredProgress() == 0);
    slow.join();
    fw.stop();
}

TEST_CASE("without progress the same slow call times out") {
    auto [host, fwEnd] = makeLoopbackPair();
    SlowReset slow;
    slow.reports = 0;
    slow.answer = false;
    FakeFirmware fw(std::move(fwEnd), slow.handler());
    auto client = makeClient(std::move(host));
    ResetReply rep;
    auto r = client->call(METHOD_RESET, ResetRequest(), rep, 60ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kTimeout);
    CHECK_THAT(r.error().message, Catch::Contains("within 60 ms"));
    slow.join();
    fw.stop();
}

TEST_CASE("progress forever ends at the cap: ten times the timeout") {
    auto [host, fwEnd] = makeLoopbackPair();
    SlowReset slow;
    slow.reports = 150;  // 150 x 10 ms: beyond the cap of 10 x 100 ms
    slow.every = 10ms;
    slow.answer = false;
    FakeFirmware fw(std::move(fwEnd), slow.handler());
    auto client = makeClient(std::move(host));
    ResetReply rep;
    auto r = client->call(METHOD_RESET, ResetRequest(), rep, 100ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kTimeout);
    CHECK_THAT(r.error().message, Catch::Contains("at most 1000 ms"));
    CHECK(client->progressFrames() >= 1);
    slow.join();
    fw.stop();
}

TEST_CASE("hostile progress frames are ignored: unknown call, inconsistent, truncated, oversized") {
    auto [host, fwEnd] = makeLoopbackPair();
    FakeFirmware fw(std::move(fwEnd), [](FakeFirmware& f, const FrameHeader& h, const std::string& p) {
        if (h.type != METHOD_PING) return;
        const uint64_t id = h.callId;
        f.raw(makeFrame(METHOD_PROGRESS, 0, id + 1000, progressPayload(id + 1000, 1, 2)));  // nobody waits
        f.raw(makeFrame(METHOD_PROGRESS, 0, id, progressPayload(id + 1, 1, 2)));       // another id inside
        f.raw(makeFrame(METHOD_PROGRESS, 0, id, progressPayload(id, UINT32_MAX, 1)));  // done > total
        std::string cut = progressPayload(id, 1, 2);
        f.raw(makeFrame(METHOD_PROGRESS, 0, id, cut.substr(0, cut.size() - 1)));  // truncated
        f.raw(makeFrame(METHOD_PROGRESS, 0, id, std::string(4096, '\xff')));      // oversized garbage
        pingEcho(f, h, p);
    });
    auto client = makeClient(std::move(host));
    PingRequest ping;
    ping.set_nonce(7);
    PingReply pong;
    REQUIRE(client->call(METHOD_PING, ping, pong, 5000ms).has_value());
    CHECK(pong.nonce() == 7);
    CHECK(client->ignoredProgress() == 5);
    CHECK(client->progressFrames() == 0);
    CHECK(client->connected());
    fw.stop();
}
