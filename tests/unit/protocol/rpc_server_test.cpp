// The firmware RpcServer with a fake Service: frames in, frames out, no threads.
#include "npu/fw/rpc_server.h"

#include <google/protobuf/descriptor.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "npu.pb.h"
#include "npu/protocol/frame.h"

using namespace npu;
using namespace npu::fw;
using proto::FrameEvent;
using proto::FrameEventKind;
using proto::FrameHeader;

namespace {

std::vector<uint8_t> makeFrame(uint8_t type, uint16_t flags, uint64_t callId, const std::string& payload) {
    std::vector<uint8_t> f(proto::kFrameHeaderSize + payload.size());
    std::memcpy(f.data() + proto::kFrameHeaderSize, payload.data(), payload.size());
    FrameHeader h;
    h.type = type;
    h.flags = flags;
    h.callId = callId;
    h.length = uint32_t(payload.size());
    proto::encodeFrameHeader(h, f.data() + proto::kFrameHeaderSize, f.data());
    return f;
}

struct Sent {
    FrameHeader header;
    std::string payload;
    uint32_t sinkMethod;
    uint16_t sinkFlags;
};

// Collects the server's frames, decoding them as the host would.
struct CollectingSink : FrameSink, proto::FrameListener {
    std::vector<Sent> frames;
    std::vector<uint8_t> buffer = std::vector<uint8_t>(proto::FrameDecoder::bufferSizeFor(1 << 20));
    proto::FrameDecoder decoder{buffer.data(), buffer.size(), 1 << 20};
    uint32_t lastMethod = 0;
    uint16_t lastFlags = 0;
    bool writeFrame(const uint8_t* bytes, size_t length, uint32_t method, uint16_t flags) override {
        lastMethod = method;
        lastFlags = flags;
        decoder.feed(bytes, length, *this);
        return true;
    }
    void onFrameEvent(const FrameEvent& e) override {
        REQUIRE(e.kind == FrameEventKind::kFrame);
        frames.push_back({e.header, std::string(reinterpret_cast<const char*>(e.payload), e.header.length),
                          lastMethod, lastFlags});
    }
};

struct FakeService : Service {
    // What the server handed over.
    uint32_t operandCount = 0, operationCount = 0, inputCount = 0, outputCount = 0, referenced = 0;
    std::vector<OperandDesc> operands;
    std::vector<std::vector<uint32_t>> opInputs, opOutputs;
    std::vector<float> scales1;
    uint32_t executeInputs = 0;
    uint64_t lastInputAddr = 0;
    int resets = 0;

    void capabilities(npu_proto_CapabilitiesReply* r) override {
        r->has_hw = true;
        r->hw.array_rows = 32;
    }
    void record(const ModelDesc& m) {
        operandCount = m.operandCount;
        operationCount = m.operationCount;
        inputCount = m.inputCount;
        outputCount = m.outputCount;
        referenced = m.referencedSubgraphCount;
        operands.assign(m.operands, m.operands + m.operandCount);
        opInputs.clear();
        opOutputs.clear();
        for (uint32_t i = 0; i < m.operationCount; ++i) {
            opInputs.emplace_back(m.operations[i].inputs,
                                  m.operations[i].inputs + m.operations[i].inputCount);
            opOutputs.emplace_back(m.operations[i].outputs,
                                   m.operations[i].outputs + m.operations[i].outputCount);
        }
        if (m.operandCount > 1)
            scales1.assign(m.operands[1].channelScales,
                           m.operands[1].channelScales + m.operands[1].channelScaleCount);
    }
    FwStatus supportedOperations(const ModelDesc& m, bool* supported, Arena&) override {
        record(m);
        for (uint32_t i = 0; i < m.operationCount; ++i) supported[i] = (i % 2) == 0;
        return FwStatus::okStatus();
    }
    FwStatus prepareModel(const ModelDesc& m, const npu_proto_PrepareModelRequest&, Arena&,
                          BlobInfo* info) override {
        record(m);
        info->handle = 42;
        info->numInputs = m.inputCount;
        info->numOutputs = m.outputCount;
        return FwStatus::okStatus();
    }
    FwStatus prepareFromCache(const npu_proto_PrepareFromCacheRequest&, Arena&, BlobInfo*) override {
        return FwStatus::make(Code::kGeneralFailure, "no cache in the fake");
    }
    FwStatus fetchBlob(const npu_proto_FetchBlobRequest&, npu_proto_FetchBlobReply*) override { return {}; }
    FwStatus releaseModel(uint32_t handle) override {
        return handle == 42 ? FwStatus::okStatus()
                            : FwStatus::make(Code::kInvalidArgument, "unknown model %u", unsigned(handle));
    }
    FwStatus execute(const npu_proto_ExecuteRequest&, IoArg* in, uint32_t inCount, IoArg*, uint32_t outCount,
                     ExecResult* result) override {
        executeInputs = inCount;
        lastInputAddr = inCount ? in[0].addr : 0;
        result->deviceCycles = 1234;
        result->outputCount = outCount;
        for (uint32_t i = 0; i < outCount; ++i) {
            result->outputs[i].rank = 2;
            result->outputs[i].dims[0] = 1;
            result->outputs[i].dims[1] = 10;
            result->outputs[i].sufficient = true;
        }
        return FwStatus::okStatus();
    }
    FwStatus allocateBuffer(const npu_proto_AllocateBufferRequest&, uint32_t* token) override {
        *token = 7;
        return {};
    }
    FwStatus releaseBuffer(uint32_t) override { return {}; }
    FwStatus bufferCopy(const npu_proto_BufferCopyRequest&) override { return {}; }
    FwStatus reset() override {
        ++resets;
        return {};
    }
    void counters(npu_proto_CountersReply*) override {}
    uint64_t uptimeUs() override { return 99; }
};

struct Fixture {
    std::vector<std::max_align_t> memory;
    Arena arena;
    FakeService service;
    CollectingSink sink;
    RpcServer server;
    explicit Fixture(RpcServerConfig config = smallConfig(), size_t arenaBytes = 4u << 20)
        : memory(arenaBytes / sizeof(std::max_align_t)),
          arena(memory.data(), arenaBytes),
          server(service, arena, sink, config) {
        REQUIRE(server.ok());
    }
    static RpcServerConfig smallConfig() {
        RpcServerConfig c;
        c.maxPayloadBytes = 4096;
        c.maxMessageBytes = 64 * 1024;
        c.maxReplyBytes = 64 * 1024;
        c.queueDepth = 4;
        c.queueBytes = 128 * 1024;
        c.hwId = 0x4E505531;
        c.deviceMemoryBytes = 256ull << 20;
        c.hostWindowAddr = 128ull << 20;
        c.hostWindowBytes = 128ull << 20;
        return c;
    }
    void send(proto::Method method, uint64_t callId, const google::protobuf::Message& m, uint16_t flags = 0) {
        auto f = makeFrame(uint8_t(method), flags, callId, m.SerializeAsString());
        server.onBytes(f.data(), f.size());
    }
    void drain() {
        while (server.poll()) {
        }
    }
    const Sent& only() {
        REQUIRE(sink.frames.size() == 1);
        return sink.frames[0];
    }
};

proto::ErrorReply errorOf(const Sent& s) {
    REQUIRE((s.header.flags & proto::kFlagError) != 0);
    REQUIRE((s.header.flags & proto::kFlagResponse) != 0);
    proto::ErrorReply e;
    REQUIRE(e.ParseFromString(s.payload));
    return e;
}

proto::Model threeOperandModel() {
    proto::Model m;
    auto* g = m.mutable_main();
    for (int i = 0; i < 3; ++i) {
        auto* o = g->add_operands();
        o->set_type(5);
        o->add_dimensions(1);
        o->add_dimensions(uint32_t(4 + i));
        o->set_scale(0.5f);
        o->set_zero_point(-3 + i);
        o->set_lifetime(i == 1 ? 2 : 0);
        o->set_data_addr(0x1000u * uint32_t(i));
    }
    g->mutable_operands(1)->add_channel_scales(0.25f);
    g->mutable_operands(1)->add_channel_scales(0.125f);
    auto* a = g->add_operations();
    a->set_type(9);
    a->add_inputs(0);
    a->add_inputs(1);
    a->add_outputs(2);
    auto* b = g->add_operations();
    b->set_type(3);
    b->add_inputs(2);
    b->add_outputs(0);
    g->add_input_indexes(0);
    g->add_output_indexes(2);
    m.add_referenced();
    m.set_relax_float32_to_float16(true);
    return m;
}

}  // namespace

TEST_CASE("Hello answers 1.1 with the platform's DRAM window") {
    Fixture fx;
    proto::HelloRequest req;
    req.set_major(1);
    req.set_host_version("test");
    fx.send(proto::METHOD_HELLO, 5, req);
    REQUIRE(fx.sink.frames.empty());  // answered by poll(), not by onBytes()
    REQUIRE(fx.server.poll());
    const Sent& s = fx.only();
    CHECK(s.header.callId == 5);
    CHECK(s.header.flags == proto::kFlagResponse);
    CHECK(s.sinkMethod == proto::METHOD_HELLO);  // what the platform keys the fd on
    proto::HelloReply rep;
    REQUIRE(rep.ParseFromString(s.payload));
    CHECK(rep.status().code() == 0);
    CHECK(rep.major() == 1);
    CHECK(rep.minor() == 1);  // 1.1: Operand.value (CONSTANT_COPY values inside the model)
    CHECK(rep.hw_id() == 0x4E505531);
    CHECK(rep.device_memory_bytes() == (256ull << 20));
    CHECK(rep.host_window_addr() == (128ull << 20));
    CHECK(rep.host_window_bytes() == (128ull << 20));
    CHECK(rep.max_payload_bytes() == 4096);
    CHECK_FALSE(rep.firmware_version().empty());
}

TEST_CASE("Hello with another major version is refused naming both versions") {
    Fixture fx;
    proto::HelloRequest req;
    req.set_major(2);
    req.set_minor(3);
    fx.send(proto::METHOD_HELLO, 6, req);
    fx.drain();
    proto::HelloReply rep;
    REQUIRE(rep.ParseFromString(fx.only().payload));
    CHECK(rep.status().code() != 0);
    CHECK(rep.status().message().find("2.3") != std::string::npos);
    CHECK(rep.status().message().find("1.1") != std::string::npos);
}

TEST_CASE("a CRC-corrupt frame gets an ERROR frame naming the problem and the call") {
    Fixture fx;
    proto::PingRequest req;
    req.set_nonce(1);
    auto f = makeFrame(proto::METHOD_PING, 0, 77, req.SerializeAsString());
    f.back() ^= 0x55;
    fx.server.onBytes(f.data(), f.size());
    auto e = errorOf(fx.only());
    CHECK(fx.only().header.callId == 77);
    CHECK(e.status().code() == uint32_t(Code::kInvalidArgument));
    CHECK(e.status().message().find("CRC32C") != std::string::npos);
    CHECK(fx.server.queued() == 0);
    CHECK(fx.server.stats().badFrames == 1);
}

TEST_CASE("an oversize frame and an unknown method get ERROR frames") {
    Fixture fx;
    auto big = makeFrame(proto::METHOD_PING, 0, 8, std::string(5000, 'x'));
    fx.server.onBytes(big.data(), big.size());
    REQUIRE(fx.sink.frames.size() == 1);
    auto e = errorOf(fx.sink.frames[0]);
    CHECK(fx.sink.frames[0].header.callId == 8);
    CHECK(e.status().message().find("4096") != std::string::npos);

    auto unknown = makeFrame(99, 0, 9, "");
    fx.server.onBytes(unknown.data(), unknown.size());
    REQUIRE(fx.sink.frames.size() == 2);
    e = errorOf(fx.sink.frames[1]);
    CHECK(fx.sink.frames[1].header.callId == 9);
    CHECK(e.status().message().find("unknown method 99") != std::string::npos);
}

TEST_CASE("a host-window call over a transport that shares memory gets an error naming the mismatch") {
    Fixture fx;
    proto::WindowWriteRequest w;
    w.set_addr(0);
    w.set_data("abc");
    auto f = makeFrame(proto::METHOD_WINDOW_WRITE, 0, 12, w.SerializeAsString());
    fx.server.onBytes(f.data(), f.size());
    auto e = errorOf(fx.only());
    CHECK(fx.only().header.callId == 12);
    CHECK(e.status().code() == uint32_t(Code::kInvalidArgument));
    CHECK(e.status().message().find("WINDOW_WRITE (method 16, call 12)") != std::string::npos);
    CHECK(e.status().message().find("shares the device memory") != std::string::npos);
    CHECK(fx.server.queued() == 0);
}

TEST_CASE("a full queue answers RESOURCE_EXHAUSTED_TRANSIENT, never drops silently") {
    Fixture fx;  // queue depth 4
    proto::PingRequest req;
    for (uint64_t id = 1; id <= 5; ++id) {
        req.set_nonce(id);
        fx.send(proto::METHOD_PING, id, req);
    }
    REQUIRE(fx.server.queued() == 4);
    auto e = errorOf(fx.only());
    CHECK(fx.only().header.callId == 5);
    CHECK(e.status().code() == uint32_t(Code::kResourceExhaustedTransient));
    fx.drain();
    REQUIRE(fx.sink.frames.size() == 5);
    for (uint64_t id = 1; id <= 4; ++id) {
        proto::PingReply rep;
        REQUIRE(rep.ParseFromString(fx.sink.frames[id].payload));
        CHECK(fx.sink.frames[id].header.callId == id);
        CHECK(rep.nonce() == id);
        CHECK(rep.uptime_us() == 99);
    }
    CHECK(fx.server.stats().queueFull == 1);
}

TEST_CASE("the queue's byte pool also pushes back") {
    auto config = Fixture::smallConfig();
    config.queueBytes = 100;
    Fixture fx(config);
    proto::HelloRequest req;
    req.set_host_version(std::string(60, 'h'));
    fx.send(proto::METHOD_HELLO, 1, req);
    fx.send(proto::METHOD_HELLO, 2, req);  // 2 x ~64 bytes > 100
    auto e = errorOf(fx.only());
    CHECK(fx.only().header.callId == 2);
    CHECK(e.status().code() == uint32_t(Code::kResourceExhaustedTransient));
    fx.drain();
    fx.send(proto::METHOD_HELLO, 3, req);  // space is back after the queue drained
    fx.drain();
    REQUIRE(fx.sink.frames.size() == 3);
    CHECK((fx.sink.frames[2].header.flags & proto::kFlagError) == 0);
}

TEST_CASE("Cancel removes a queued call, whose caller gets GENERAL_FAILURE cancelled") {
    Fixture fx;
    proto::PingRequest ping;
    fx.send(proto::METHOD_PING, 1, ping);
    fx.send(proto::METHOD_RESET, 2, proto::ResetRequest());
    proto::CancelRequest cancel;
    cancel.set_target_call_id(2);
    fx.send(proto::METHOD_CANCEL, 3, cancel);
    REQUIRE(fx.sink.frames.size() == 2);  // answered at once, ahead of the queue
    auto e = errorOf(fx.sink.frames[0]);
    CHECK(fx.sink.frames[0].header.callId == 2);
    CHECK(e.status().code() == uint32_t(Code::kGeneralFailure));
    CHECK(e.status().message().find("cancelled") != std::string::npos);
    proto::CancelReply cr;
    REQUIRE(cr.ParseFromString(fx.sink.frames[1].payload));
    CHECK(fx.sink.frames[1].header.callId == 3);
    CHECK(cr.found());
    fx.drain();
    CHECK(fx.service.resets == 0);  // the cancelled Reset never ran
    REQUIRE(fx.sink.frames.size() == 3);
    CHECK(fx.sink.frames[2].header.callId == 1);

    cancel.set_target_call_id(1234);  // nothing to cancel
    fx.send(proto::METHOD_CANCEL, 4, cancel);
    REQUIRE(cr.ParseFromString(fx.sink.frames.back().payload));
    CHECK_FALSE(cr.found());
}

TEST_CASE("PrepareModel builds a bounds-checked ModelDesc, also from fragments") {
    for (uint32_t maxPayload : {4096u, 64u}) {
        auto config = Fixture::smallConfig();
        config.maxPayloadBytes = maxPayload;
        Fixture fx(config);
        proto::PrepareModelRequest req;
        *req.mutable_model() = threeOperandModel();
        std::string payload = req.SerializeAsString();
        uint64_t callId = 11;
        for (size_t off = 0; off < payload.size(); off += maxPayload) {
            const bool more = off + maxPayload < payload.size();
            auto f = makeFrame(proto::METHOD_PREPARE_MODEL, more ? proto::kFlagMore : 0, callId,
                               payload.substr(off, maxPayload));
            fx.server.onBytes(f.data(), f.size());
        }
        REQUIRE(fx.server.poll());
        proto::PrepareModelReply rep;
        REQUIRE(rep.ParseFromString(fx.only().payload));
        INFO(rep.status().message());
        REQUIRE(rep.status().code() == 0);
        CHECK(rep.model_handle() == 42);
        CHECK(rep.num_inputs() == 1);
        auto& s = fx.service;
        REQUIRE(s.operandCount == 3);
        REQUIRE(s.operationCount == 2);
        CHECK(s.referenced == 1);
        CHECK(s.operands[1].rank == 2);
        CHECK(s.operands[1].dims[1] == 5);
        CHECK(s.operands[0].zeroPoint == -3);
        CHECK(s.operands[2].dataAddr == 0x2000);
        CHECK(s.scales1 == std::vector<float>{0.25f, 0.125f});
        CHECK(s.opInputs[0] == std::vector<uint32_t>{0, 1});
        CHECK(s.opOutputs[0] == std::vector<uint32_t>{2});
        CHECK(s.opInputs[1] == std::vector<uint32_t>{2});
        CHECK(s.inputCount == 1);
        CHECK(s.outputCount == 1);
    }
}

TEST_CASE("GetSupportedOperations answers one flag per operation") {
    Fixture fx;
    proto::GetSupportedOperationsRequest req;
    *req.mutable_model() = threeOperandModel();
    fx.send(proto::METHOD_GET_SUPPORTED_OPERATIONS, 12, req);
    fx.drain();
    proto::SupportedOperationsReply rep;
    REQUIRE(rep.ParseFromString(fx.only().payload));
    REQUIRE(rep.supported_size() == 2);
    CHECK(rep.supported(0));
    CHECK_FALSE(rep.supported(1));
}

TEST_CASE("a bad operand index is INVALID_ARGUMENT naming the operation and the index") {
    Fixture fx;
    proto::PrepareModelRequest req;
    *req.mutable_model() = threeOperandModel();
    req.mutable_model()->mutable_main()->mutable_operations(1)->set_inputs(0, 17);
    fx.send(proto::METHOD_PREPARE_MODEL, 13, req);
    fx.drain();
    proto::PrepareModelReply rep;
    REQUIRE(rep.ParseFromString(fx.only().payload));
    CHECK(rep.status().code() == uint32_t(Code::kInvalidArgument));
    CHECK(rep.status().message().find("operations[1].inputs[0] = 17") != std::string::npos);
    CHECK(fx.service.operandCount == 0);  // the service never saw it
}

TEST_CASE("a model too large for the message limit or the arena fails clearly") {
    SECTION("message limit") {
        auto config = Fixture::smallConfig();
        config.maxMessageBytes = 8192;
        Fixture fx(config);
        proto::PrepareModelRequest req;
        for (int i = 0; i < 3000; ++i) req.mutable_model()->mutable_main()->add_operands()->set_type(5);
        std::string payload = req.SerializeAsString();
        REQUIRE(payload.size() > 8192);
        for (size_t off = 0; off < payload.size(); off += 4096) {
            const bool more = off + 4096 < payload.size();
            auto f = makeFrame(proto::METHOD_PREPARE_MODEL, more ? proto::kFlagMore : 0, 20,
                               payload.substr(off, 4096));
            fx.server.onBytes(f.data(), f.size());
        }
        auto e = errorOf(fx.only());
        CHECK(fx.only().header.callId == 20);
        CHECK(e.status().code() == uint32_t(Code::kResourceExhaustedPersistent));
        CHECK(e.status().message().find("8192") != std::string::npos);
    }
    SECTION("arena") {
        auto config = Fixture::smallConfig();
        Fixture fx(config, RpcServer::memoryNeeded(config) + 48 * 1024);
        proto::PrepareModelRequest req;
        for (int i = 0; i < 1500; ++i) {
            auto* o = req.mutable_model()->mutable_main()->add_operands();
            o->set_type(5);
        }
        std::string payload = req.SerializeAsString();
        for (size_t off = 0; off < payload.size(); off += 4096) {
            const bool more = off + 4096 < payload.size();
            auto f = makeFrame(proto::METHOD_PREPARE_MODEL, more ? proto::kFlagMore : 0, 21,
                               payload.substr(off, 4096));
            fx.server.onBytes(f.data(), f.size());
        }
        REQUIRE(fx.sink.frames.empty());
        fx.drain();
        const Sent& s = fx.only();
        uint32_t code = 0;
        std::string message;
        if (s.header.flags & proto::kFlagError) {
            auto e = errorOf(s);
            code = e.status().code();
            message = e.status().message();
        } else {
            proto::PrepareModelReply rep;
            REQUIRE(rep.ParseFromString(s.payload));
            code = rep.status().code();
            message = rep.status().message();
        }
        INFO(message);
        CHECK((code == uint32_t(Code::kResourceExhaustedPersistent) ||
               code == uint32_t(Code::kResourceExhaustedTransient)));
        CHECK(message.find("arena") != std::string::npos);
    }
}

TEST_CASE("Execute passes the arguments and returns output shapes") {
    Fixture fx;
    proto::ExecuteRequest req;
    req.set_model_handle(42);
    auto* in = req.add_inputs();
    in->set_addr(0x8000000);
    in->set_length(16);
    in->add_dimensions(1);
    in->add_dimensions(4);
    req.add_outputs()->set_addr(0x8001000);
    fx.send(proto::METHOD_EXECUTE, 30, req);
    fx.drain();
    proto::ExecuteReply rep;
    REQUIRE(rep.ParseFromString(fx.only().payload));
    CHECK(rep.status().code() == 0);
    CHECK(rep.device_cycles() == 1234);
    REQUIRE(rep.output_shapes_size() == 1);
    CHECK(rep.output_shapes(0).dimensions(1) == 10);
    CHECK(fx.service.executeInputs == 1);
    CHECK(fx.service.lastInputAddr == 0x8000000);
}

TEST_CASE("Execute's reply carries only what this call set, over an arena full of old bytes") {
    Fixture fx;
    // The reply's entry arrays are not zeroed per call: what lies in the arena must not leak out.
    auto* base = reinterpret_cast<unsigned char*>(fx.memory.data());
    std::memset(base + fx.arena.used(), 0xA5, fx.arena.capacity() - fx.arena.used());
    proto::ExecuteRequest req;
    req.set_model_handle(42);
    req.add_outputs()->set_addr(0x8001000);
    fx.send(proto::METHOD_EXECUTE, 31, req);
    fx.drain();
    proto::ExecuteReply rep;
    REQUIRE(rep.ParseFromString(fx.only().payload));
    CHECK(rep.status().code() == 0);
    CHECK(rep.status().message().empty());
    CHECK(rep.device_fault() == 0);
    CHECK(rep.clock_hz() == 0);
    CHECK(rep.profile_size() == 0);  // no timing asked for
    REQUIRE(rep.output_shapes_size() == 1);
    CHECK(rep.output_shapes(0).dimensions_size() == 2);
    CHECK(rep.output_shapes(0).is_sufficient());
}

TEST_CASE("a response frame from the host is refused; garbage is skipped") {
    Fixture fx;
    std::vector<uint8_t> junk(50, 0xAB);
    fx.server.onBytes(junk.data(), junk.size());
    proto::PingRequest ping;
    auto f = makeFrame(proto::METHOD_PING, proto::kFlagResponse, 40, ping.SerializeAsString());
    fx.server.onBytes(f.data(), f.size());
    auto e = errorOf(fx.only());
    CHECK(fx.only().header.callId == 40);
    CHECK(e.status().code() == uint32_t(Code::kInvalidArgument));
    CHECK(fx.server.stats().garbageBytes == 50);
    CHECK(fx.server.queued() == 0);
}

TEST_CASE("a server whose arena is too small says so") {
    std::vector<std::max_align_t> memory(1024);
    Arena arena(memory.data(), memory.size() * sizeof(std::max_align_t));
    FakeService service;
    CollectingSink sink;
    RpcServer server(service, arena, sink, RpcServerConfig{});
    REQUIRE_FALSE(server.ok());
    CHECK(server.initStatus().code == Code::kResourceExhaustedPersistent);
    uint8_t b = 0;
    server.onBytes(&b, 1);  // harmless
    CHECK_FALSE(server.poll());
}

TEST_CASE("a bare firmware answers Ping in order: everything before it was served") {
    Fixture fx;
    fx.send(proto::METHOD_HELLO, 1, proto::HelloRequest());
    proto::PingRequest ping;
    fx.send(proto::METHOD_PING, 2, ping);
    fx.send(proto::METHOD_PING, 3, ping);
    CHECK(fx.sink.frames.empty());  // queued like any call
    fx.drain();
    REQUIRE(fx.sink.frames.size() == 3);
    proto::PingReply first, second;
    REQUIRE(first.ParseFromString(fx.sink.frames[1].payload));
    REQUIRE(second.ParseFromString(fx.sink.frames[2].payload));
    CHECK_FALSE(first.answered_on_arrival());
    CHECK_FALSE(first.item_running());
    CHECK(first.progress() == 2);        // Hello and this Ping handled
    CHECK(first.session_queued() == 1);  // the second Ping, the first excluded
    CHECK(second.progress() == 3);
    CHECK(second.session_queued() == 0);
}

namespace {
struct FakeMonitor : WorkMonitor {
    WorkState state{true, 1234, 77, true};
    int resets = 0;
    WorkState work() override { return state; }
    void resetArriving() override { ++resets; }
};
}  // namespace

TEST_CASE("with a work monitor, Ping is answered on arrival with the platform's work state") {
    FakeMonitor monitor;
    auto config = Fixture::smallConfig();
    config.monitor = &monitor;
    Fixture fx(config);
    fx.send(proto::METHOD_HELLO, 1, proto::HelloRequest());
    proto::PingRequest ping;
    ping.set_nonce(9);
    fx.send(proto::METHOD_PING, 2, ping);
    const Sent& sent = fx.only();  // ahead of the queued Hello
    CHECK(sent.header.callId == 2);
    proto::PingReply reply;
    REQUIRE(reply.ParseFromString(sent.payload));
    CHECK(reply.nonce() == 9);
    CHECK(reply.answered_on_arrival());
    CHECK(reply.item_running());
    CHECK(reply.item_running_us() == 1234);
    CHECK(reply.progress() == 77);
    CHECK(reply.item_is_mine());
    CHECK(reply.session_queued() == 1);  // the Hello
    // A Reset tells the monitor on arrival, and is served in order.
    fx.send(proto::METHOD_RESET, 3, proto::ResetRequest());
    CHECK(monitor.resets == 1);
    CHECK(fx.sink.frames.size() == 1);
    fx.drain();
    REQUIRE(fx.sink.frames.size() == 3);
    CHECK(fx.sink.frames[2].header.callId == 3);
    CHECK(fx.service.resets == 1);
    CHECK(fx.server.stats().pingsOnArrival == 1);
    // A Ping that does not decode is refused naming the call, still on arrival.
    auto bad = makeFrame(proto::METHOD_PING, 0, 4, std::string("\xff\xff", 2));
    fx.server.onBytes(bad.data(), bad.size());
    REQUIRE(fx.sink.frames.size() == 4);
    CHECK(errorOf(fx.sink.frames[3]).status().message().find("Ping call 4") != std::string::npos);
}

namespace {
struct FakeOpener : BurstChannelOpener {
    int opened = 0;
    FwStatus openBurstChannel(uint64_t, npu_proto_OpenBurstChannelReply* reply) override {
        ++opened;
        reply->channel_id = 9;
        reply->queue_depth = 4;
        return FwStatus::okStatus();
    }
};
}  // namespace

TEST_CASE("OpenBurstChannel goes to the platform's opener; Hello says whether there is one") {
    // Hello, then OpenBurstChannel: both replies.
    auto helloAndOpen = [](Fixture& fx) {
        fx.send(proto::METHOD_HELLO, 1, proto::HelloRequest());
        fx.send(proto::METHOD_OPEN_BURST_CHANNEL, 2, proto::OpenBurstChannelRequest());
        fx.drain();
        REQUIRE(fx.sink.frames.size() == 2);
        std::pair<proto::HelloReply, proto::OpenBurstChannelReply> replies;
        REQUIRE(replies.first.ParseFromString(fx.sink.frames[0].payload));
        REQUIRE(replies.second.ParseFromString(fx.sink.frames[1].payload));
        return replies;
    };
    SECTION("none: refused naming the reason, and Hello says burst_channels false") {
        Fixture fx;
        const auto [hello, reply] = helloAndOpen(fx);
        CHECK_FALSE(hello.burst_channels());
        CHECK(reply.status().code() == uint32_t(Code::kGeneralFailure));
        CHECK(reply.status().message().find("shares no memory") != std::string::npos);
    }
    SECTION("an opener: its reply, and Hello says burst_channels true") {
        FakeOpener opener;
        auto config = Fixture::smallConfig();
        config.burstChannels = &opener;
        Fixture fx(config);
        const auto [hello, reply] = helloAndOpen(fx);
        CHECK(hello.burst_channels());
        CHECK(reply.status().code() == 0);
        CHECK(reply.channel_id() == 9);
        CHECK(opener.opened == 1);
    }
}

namespace {
// What the server told the platform about fds ("bind 5x1", "release 5"), and which calls' fds
// MapPool asked for.
struct FdLog : RequestFds, PoolMapper {
    std::vector<std::string> events;
    std::vector<uint64_t> mapped;
    void bind(uint64_t callId, uint32_t count) override {
        events.push_back("bind " + std::to_string(callId) + "x" + std::to_string(count));
    }
    void release(uint64_t callId) override { events.push_back("release " + std::to_string(callId)); }
    FwStatus mapPool(uint64_t callId, const npu_proto_MapPoolRequest&, npu_proto_MapPoolReply*) override {
        mapped.push_back(callId);
        events.push_back("map " + std::to_string(callId));
        return FwStatus::okStatus();
    }
    FwStatus unmapPool(uint32_t) override { return FwStatus::okStatus(); }
    FwStatus checkPoolRange(uint64_t, uint64_t, bool, bool* inPool) override {
        *inPool = false;
        return FwStatus::okStatus();
    }
    void unmapAll() override {}
    uint32_t poolCount() const override { return 0; }
    uint64_t poolBytes() const override { return 0; }
    std::vector<std::string> take() { return std::exchange(events, {}); }
};
using Events = std::vector<std::string>;
}  // namespace

TEST_CASE(
    "the fds of a request are bound to its call on arrival and released when it ends, answered or refused") {
    FdLog log;
    FakeOpener opener;
    auto config = Fixture::smallConfig();  // queue depth 4
    config.requestFds = &log;
    config.pools = &log;
    config.burstChannels = &opener;
    Fixture fx(config);
    proto::MapPoolRequest map;
    map.set_length(4096);
    SECTION("served: bound on arrival, taken by its handler by call id, released after") {
        fx.send(proto::METHOD_MAP_POOL, 5, map);
        CHECK(log.take() == Events{"bind 5x1"});
        fx.send(proto::METHOD_OPEN_BURST_CHANNEL, 6, proto::OpenBurstChannelRequest());
        CHECK(log.take() == Events{"bind 6x2"});
        fx.drain();
        CHECK(log.take() == Events{"map 5", "release 5", "release 6"});
        CHECK(opener.opened == 1);
    }
    SECTION("undecodable: refused, and its fd released, not left to the next MapPool") {
        auto bad = makeFrame(proto::METHOD_MAP_POOL, 0, 7,
                             std::string("\x0a\x03"
                                         "abc",
                                         5));  // offset as bytes
        fx.server.onBytes(bad.data(), bad.size());
        fx.send(proto::METHOD_MAP_POOL, 8, map);
        fx.drain();
        CHECK(log.take() == Events{"bind 7x1", "bind 8x1", "release 7", "map 8", "release 8"});
        CHECK(errorOf(fx.sink.frames[0]).status().message().find("MapPool call 7: cannot decode") !=
              std::string::npos);
    }
    SECTION("refused on arrival (queue full, bad CRC, oversize): released at once") {
        for (uint64_t id = 1; id <= 4; ++id) fx.send(proto::METHOD_PING, id, proto::PingRequest());
        fx.send(proto::METHOD_MAP_POOL, 9, map);
        CHECK(log.take() == Events{"bind 9x1", "release 9"});
        CHECK(errorOf(fx.only()).status().code() == uint32_t(Code::kResourceExhaustedTransient));
        fx.drain();
        auto corrupt = makeFrame(proto::METHOD_MAP_POOL, 0, 10, map.SerializeAsString());
        corrupt.back() ^= 0x55;
        fx.server.onBytes(corrupt.data(), corrupt.size());
        CHECK(log.take() == Events{"bind 10x1", "release 10"});
        auto big = makeFrame(proto::METHOD_MAP_POOL, 0, 11, std::string(5000, 'x'));
        fx.server.onBytes(big.data(), big.size());
        CHECK(log.take() == Events{"bind 11x1", "release 11"});
        CHECK(log.mapped.empty());
    }
    SECTION("cancelled while queued: released, never mapped") {
        fx.send(proto::METHOD_MAP_POOL, 12, map);
        proto::CancelRequest cancel;
        cancel.set_target_call_id(12);
        fx.send(proto::METHOD_CANCEL, 13, cancel);
        fx.drain();
        CHECK(log.take() == Events{"bind 12x1", "release 12"});
        CHECK(log.mapped.empty());
    }
    SECTION("fragmented: bound once, at its first fragment") {
        const std::string payload = map.SerializeAsString();
        auto first = makeFrame(proto::METHOD_MAP_POOL, proto::kFlagMore, 14, payload.substr(0, 2));
        auto last = makeFrame(proto::METHOD_MAP_POOL, 0, 14, payload.substr(2));
        fx.server.onBytes(first.data(), first.size());
        fx.server.onBytes(last.data(), last.size());
        fx.drain();
        CHECK(log.take() == Events{"bind 14x1", "map 14", "release 14"});
    }
    SECTION("a method without fds binds none") {
        fx.send(proto::METHOD_PING, 15, proto::PingRequest());
        fx.drain();
        CHECK(log.take().empty());
    }
}

TEST_CASE("a burst channel's server serves Execute, Cancel and Ping only; the rest is refused on arrival") {
    auto config = Fixture::smallConfig();
    config.burstChannel = true;
    Fixture fx(config);
    const proto::Method refused[] = {proto::METHOD_HELLO,        proto::METHOD_PREPARE_MODEL,
                                     proto::METHOD_GET_COUNTERS, proto::METHOD_RESET,
                                     proto::METHOD_MAP_POOL,     proto::METHOD_OPEN_BURST_CHANNEL,
                                     proto::METHOD_RELEASE_MODEL};
    uint64_t id = 10;
    for (proto::Method m : refused) {
        fx.sink.frames.clear();
        fx.send(m, ++id, proto::HelloRequest());
        INFO(proto::Method_Name(m));
        const proto::ErrorReply e = errorOf(fx.only());  // on arrival: nothing queued
        CHECK(e.status().code() == uint32_t(Code::kInvalidArgument));
        CHECK(e.status().message().find("not served on a burst channel") != std::string::npos);
        CHECK(fx.server.queued() == 0);
    }
    // A fragmented refused request is answered once, at its last fragment.
    fx.sink.frames.clear();
    auto first = makeFrame(proto::METHOD_PREPARE_MODEL, proto::kFlagMore, 50, "ab");
    auto last = makeFrame(proto::METHOD_PREPARE_MODEL, 0, 50, "cd");
    fx.server.onBytes(first.data(), first.size());
    CHECK(fx.sink.frames.empty());
    fx.server.onBytes(last.data(), last.size());
    CHECK(fx.only().header.callId == 50);
    // Execute is served.
    fx.sink.frames.clear();
    proto::ExecuteRequest exec;
    exec.set_model_handle(42);
    fx.send(proto::METHOD_EXECUTE, 60, exec);
    fx.drain();
    proto::ExecuteReply reply;
    REQUIRE(reply.ParseFromString(fx.only().payload));
    CHECK(reply.device_cycles() == 1234);
    // Cancel and Ping too (Ping in order here: no monitor).
    fx.sink.frames.clear();
    proto::CancelRequest cancel;
    cancel.set_target_call_id(999);
    fx.send(proto::METHOD_CANCEL, 61, cancel);
    proto::CancelReply cancelled;
    REQUIRE(cancelled.ParseFromString(fx.only().payload));
    CHECK_FALSE(cancelled.found());
    fx.sink.frames.clear();
    proto::PingRequest ping;
    ping.set_nonce(3);
    fx.send(proto::METHOD_PING, 62, ping);
    fx.drain();
    proto::PingReply pong;
    REQUIRE(pong.ParseFromString(fx.only().payload));
    CHECK(pong.nonce() == 3);
}

TEST_CASE("Ping counts the client's requests queued on its other servers (burst channels) as its own") {
    FakeMonitor monitor;
    monitor.state.otherQueued = 2;
    auto config = Fixture::smallConfig();
    config.monitor = &monitor;
    Fixture fx(config);
    fx.send(proto::METHOD_HELLO, 1, proto::HelloRequest());  // queued here
    proto::PingRequest ping;
    ping.set_nonce(1);
    fx.send(proto::METHOD_PING, 2, ping);
    proto::PingReply reply;
    REQUIRE(reply.ParseFromString(fx.only().payload));
    CHECK(reply.session_queued() == 3);
}

namespace {
// METHOD_PREPARE_FROM_CACHE -> PrepareFromCache: how the method table names a method.
std::string methodTableName(const std::string& enumName) {
    std::string name;
    bool upper = true;
    for (char c : enumName.substr(std::string("METHOD_").size())) {
        if (c == '_') {
            upper = true;
            continue;
        }
        name += upper ? c : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        upper = false;
    }
    return name;
}
}  // namespace

// Every method the firmware serves decodes its request on one path (the method table's
// decode-or-error; decodeModelRequest for the model calls; Cancel on arrival): a payload that
// does not decode is INVALID_ARGUMENT naming the method and "cannot decode". The methods come from
// npu.proto's Method enum, so one added later is covered too: it either decodes its request this
// way, takes none (its request message has no field), or is not served ("unknown method").
TEST_CASE("every method that decodes a request answers an undecodable one INVALID_ARGUMENT naming it") {
    // Field 1, length-delimited, 127 bytes announced and none sent: no message decodes it.
    const std::string garbage("\x0a\x7f", 2);
    const google::protobuf::EnumDescriptor* methods = proto::Method_descriptor();
    const google::protobuf::DescriptorPool* pool = methods->file()->pool();
    std::set<std::string> decoded, withoutRequest;
    for (int i = 0; i < methods->value_count(); ++i) {
        const int number = methods->value(i)->number();
        if (number == proto::METHOD_WINDOW_WRITE || number == proto::METHOD_WINDOW_READ)
            continue;  // served by a USB device side, refused here before any decoding (tested above)
        const std::string name = methodTableName(methods->value(i)->name());
        INFO(methods->value(i)->name() << " (" << name << ")");
        Fixture fx;
        const uint64_t callId = 100 + uint64_t(i);
        auto f = makeFrame(uint8_t(number), 0, callId, garbage);
        fx.server.onBytes(f.data(), f.size());
        fx.drain();
        REQUIRE(fx.sink.frames.size() == 1);
        CHECK(fx.sink.frames[0].header.callId == callId);
        proto::ErrorReply reply;  // field 1 of every reply and of ErrorReply is its Status
        REQUIRE(reply.ParseFromString(fx.sink.frames[0].payload));
        const std::string& message = reply.status().message();
        INFO(message);
        if (message.find("unknown method") != std::string::npos) continue;  // not served: no decoding
        const google::protobuf::Descriptor* request =
            pool->FindMessageTypeByName("npu.proto." + name + "Request");
        if (request != nullptr && request->field_count() == 0) {
            CHECK(message.find("cannot decode") == std::string::npos);  // nothing to decode
            withoutRequest.insert(name);
            continue;
        }
        CHECK(reply.status().code() == uint32_t(Code::kInvalidArgument));
        CHECK(message.find(name + " call " + std::to_string(callId)) != std::string::npos);
        CHECK(message.find("cannot decode") != std::string::npos);
        decoded.insert(name);
    }
    for (const char* name : {"Hello", "GetSupportedOperations", "PrepareModel", "PrepareFromCache",
                             "ReleaseModel", "Execute", "Cancel", "AllocateBuffer", "ReleaseBuffer",
                             "BufferCopy", "Ping", "InjectFaults", "FetchBlob", "MapPool", "UnmapPool"}) {
        INFO(name);
        CHECK(decoded.count(name) == 1);
    }
    for (const char* name : {"GetCapabilities", "Reset", "GetCounters"}) {
        INFO(name);
        CHECK(withoutRequest.count(name) == 1);
    }
}
