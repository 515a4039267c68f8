// The owner table and windows of the sessions of one firmware (npu/fw/session_service.h), and
// the SessionGate's classification of requests for the scheduler: driven directly.
#include <pb_encode.h>

#include <catch2/catch.hpp>
#include <vector>

#include "npu/fw/session_service.h"

namespace {

using npu::fw::Arena;
using npu::fw::Code;
using npu::fw::Priority;
using npu::fw::SessionRegistry;
using Kind = SessionRegistry::Kind;

struct Fixture {
    std::vector<uint8_t> memory = std::vector<uint8_t>(64 * 1024);
    Arena arena{memory.data(), memory.size()};
    SessionRegistry registry{arena, 4};
};

}  // namespace

TEST_CASE("session windows: inside, at the edges, outside, overflowing", "[firmware][sessions]") {
    Fixture f;
    REQUIRE(f.registry.ok());
    REQUIRE(f.registry.open(1, {0x1000, 0x1000}).ok());
    REQUIRE(f.registry.open(2, {0x2000, 0x1000}).ok());
    CHECK(f.registry.open(1, {0, 0}).code == Code::kInvalidArgument);  // open already
    CHECK(f.registry.open(0, {0, 0}).code == Code::kInvalidArgument);  // 0 is no session
    CHECK(f.registry.sessions() == 2);
    CHECK(f.registry.inWindow(1, 0x1000, 0x1000));
    CHECK(f.registry.inWindow(1, 0x2000, 0));  // an empty range at the end
    CHECK_FALSE(f.registry.inWindow(1, 0x1fff, 2));
    CHECK_FALSE(f.registry.inWindow(1, 0x0fff, 1));
    CHECK_FALSE(f.registry.inWindow(1, 0x2000, 1));  // session 2's
    CHECK(f.registry.inWindow(2, 0x2000, 1));
    CHECK_FALSE(f.registry.inWindow(1, 0x1800, UINT64_MAX));
    CHECK_FALSE(f.registry.inWindow(1, UINT64_MAX, 1));
    CHECK_FALSE(f.registry.inWindow(3, 0x1000, 1));  // no such session
    f.registry.close(1);
    CHECK_FALSE(f.registry.inWindow(1, 0x1000, 1));
    CHECK(f.registry.sessions() == 1);
}

TEST_CASE("session owners: one owner per handle, kinds apart, a full table refused", "[firmware][sessions]") {
    Fixture f;
    REQUIRE(f.registry.add(Kind::kModel, 0x101, 1, Priority::kHigh).ok());
    REQUIRE(f.registry.add(Kind::kBuffer, 0x101, 2, Priority::kMedium).ok());  // another kind
    Priority p = Priority::kLow;
    CHECK(f.registry.owns(Kind::kModel, 0x101, 1, &p));
    CHECK(p == Priority::kHigh);
    CHECK_FALSE(f.registry.owns(Kind::kModel, 0x101, 2));
    CHECK(f.registry.owns(Kind::kBuffer, 0x101, 2));
    CHECK_FALSE(f.registry.owns(Kind::kBuffer, 0x101, 1));
    REQUIRE(f.registry.add(Kind::kModel, 0x102, 1, Priority::kLow).ok());
    REQUIRE(f.registry.add(Kind::kModel, 0x103, 2, Priority::kLow).ok());
    CHECK(f.registry.add(Kind::kModel, 0x104, 2, Priority::kLow).code == Code::kResourceExhaustedPersistent);
    CHECK(f.registry.owned(Kind::kModel, 1) == 2);
    uint32_t handle = 0;
    int released = 0;
    while (f.registry.anyOwned(Kind::kModel, 1, &handle)) {
        f.registry.remove(Kind::kModel, handle);
        released++;
    }
    CHECK(released == 2);
    CHECK(f.registry.owned(Kind::kModel, 2) == 1);
    CHECK(f.registry.add(Kind::kModel, 0x104, 2, Priority::kLow).ok());  // room again
}

TEST_CASE("session gate: work by priority and deadline, control first, a foreign handle at MEDIUM",
          "[firmware][sessions]") {
    struct Clock final : npu::fw::Platform {
        uint32_t readReg(uint32_t) override { return 0; }
        void writeReg(uint32_t, uint32_t) override {}
        bool waitForIrq(uint32_t) override { return false; }
        uint8_t* dram() override { return nullptr; }
        uint64_t dramSize() const override { return 0; }
        uint64_t nowUs() override { return now; }
        uint64_t now = 1000;
    } clock;
    Fixture f;
    npu::fw::Scheduler scheduler(f.arena, 8);
    REQUIRE(f.registry.add(Kind::kModel, 7, 1, Priority::kHigh).ok());
    REQUIRE(f.registry.add(Kind::kModel, 8, 2, Priority::kLow).ok());
    npu::fw::SessionGate gate(scheduler, f.registry, clock, 1);
    auto encode = [](const pb_msgdesc_t* fields, const void* message) {
        std::vector<uint8_t> bytes(256);
        pb_ostream_t out = pb_ostream_from_buffer(bytes.data(), bytes.size());
        REQUIRE(pb_encode(&out, fields, message));
        bytes.resize(out.bytes_written);
        return bytes;
    };
    npu_proto_ExecuteRequest own = npu_proto_ExecuteRequest_init_zero;
    own.model_handle = 7;
    own.deadline_ns = 2500;  // 2.5 us: due at 1003
    const auto ownBytes = encode(npu_proto_ExecuteRequest_fields, &own);
    npu_proto_ExecuteRequest foreign = npu_proto_ExecuteRequest_init_zero;
    foreign.model_handle = 8;  // session 2's LOW model: not this session's, so not its priority
    const auto foreignBytes = encode(npu_proto_ExecuteRequest_fields, &foreign);
    npu_proto_PrepareModelRequest prepare = npu_proto_PrepareModelRequest_init_zero;  // priority 0 = LOW
    const auto prepareBytes = encode(npu_proto_PrepareModelRequest_fields, &prepare);

    REQUIRE(gate.admit(1, npu_proto_Method_METHOD_PREPARE_MODEL, prepareBytes.data(), prepareBytes.size(), 0)
                .ok());
    REQUIRE(gate.admit(2, npu_proto_Method_METHOD_EXECUTE, foreignBytes.data(), foreignBytes.size(), 1).ok());
    REQUIRE(gate.admit(3, npu_proto_Method_METHOD_EXECUTE, ownBytes.data(), ownBytes.size(), 2).ok());
    REQUIRE(gate.admit(4, npu_proto_Method_METHOD_PING, nullptr, 0, 3).ok());
    npu_proto_PrepareFromCacheRequest cached = npu_proto_PrepareFromCacheRequest_init_zero;
    cached.priority = 2;  // HIGH: after the older HIGH execution
    const auto cachedBytes = encode(npu_proto_PrepareFromCacheRequest_fields, &cached);
    REQUIRE(
        gate.admit(5, npu_proto_Method_METHOD_PREPARE_FROM_CACHE, cachedBytes.data(), cachedBytes.size(), 4)
            .ok());
    npu::fw::WorkItem w;
    std::vector<uint64_t> order;
    while (scheduler.next(1002, &w) == npu::fw::Scheduler::Pick::kRun) {
        order.push_back(w.callId);
        CHECK(w.slot == w.callId - 1);
        if (w.callId == 3) CHECK(w.deadlineUs == 1003);
        scheduler.finish();
    }
    CHECK(order == std::vector<uint64_t>{4, 3, 5, 2, 1});  // ping; HIGH, HIGH; MEDIUM; LOW
    uint32_t slot = 0;
    CHECK(gate.cancel(3, &slot) == npu::fw::RequestGate::Cancelled::kNotFound);  // ran already
}
