// One NPU shared by several clients (docs/execution.md "Scheduler", "Memory model"): sessions of
// one firmware host, over loopback (with the host's work held, so what is queued does not depend
// on timing) and as separate client processes of one npu-fwd.
//
// A raw client speaks the protocol itself (RpcClient + its window), to send what a well-behaved
// shim never sends: another client's handles and tokens, locations outside its window.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include "../hal/execution_suite.h"
#include "chain_model.h"
#include "connection.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/protocol/frame.h"
#include "npu/shim/npu_device.h"
#include "ping_verdict.h"
#include "raw_client.h"

extern char** environ;

using namespace npu;
using namespace npu::hal::test;
using namespace npu::shim::test;

namespace {

// Waits (bounded) until the firmware counter `name`, as `client` sees it, satisfies `ok`.
template <typename Pred>
uint64_t waitCounter(RawClient& client, const std::string& name, Pred ok) {
    uint64_t v = 0;
    for (int i = 0; i < 400; ++i) {
        v = client.counters()[name];
        if (ok(v)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return v;
}

struct SharedLoopback {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::unique_ptr<RawClient> first;
    explicit SharedLoopback(const fw::host::FirmwareHostConfig& config = {}) {
        auto loop = fw::host::startLoopbackFirmware(config);
        REQUIRE(loop.has_value());
        firmware = std::move(loop->firmware);
        first = std::make_unique<RawClient>(std::move(loop->hostEnd));
    }
    std::unique_ptr<RawClient> connect(uint64_t wantWindow = 0) {
        return std::make_unique<RawClient>(firmware->connectLoopback(), wantWindow);
    }
    // Drops `client` and waits until the firmware has closed its session.
    void disconnect(std::unique_ptr<RawClient>& client, uint64_t sessionsLeft) {
        client.reset();
        REQUIRE(waitCounter(*first, "session.count", [&](uint64_t v) { return v == sessionsLeft; }) ==
                sessionsLeft);
    }
};

}  // namespace

TEST_CASE("sessions of one firmware: HIGH work overtakes queued LOW work of another session",
          "[shim][multi-client]") {
    SharedLoopback f;
    auto high = f.connect();
    uint32_t low = 0, hi = 0;
    REQUIRE(f.first->prepare(addModel({1, 64}), hal::Priority::LOW, &low) == 0);
    REQUIRE(high->prepare(addModel({1, 64}), hal::Priority::HIGH, &hi) == 0);
    auto lowBlock = stageAdd(*f.first, 64, 1, 2);
    auto highBlock = stageAdd(*high, 64, 3, 4);
    const auto before = f.first->counters();

    f.firmware->holdWork(true);
    const auto lowRequest = RawClient::addRequest(low, lowBlock.addr(), 64);
    const auto highRequest = RawClient::addRequest(hi, highBlock.addr(), 64);
    std::vector<proto::ExecuteReply> lowReplies(3), highReplies(2);
    std::vector<proto::RpcClient::InFlight> calls;
    // Each counters call is submitted too (a control item): wait until the LOW work is queued
    // before sending the HIGH work, then until that is queued too.
    auto queued = [&](uint64_t work, uint64_t counterCalls) {
        const uint64_t want = before.at("sched.submitted") + work + counterCalls;
        return waitCounter(*high, "sched.submitted", [&](uint64_t v) { return v >= want; }) >= want;
    };
    for (auto& r : lowReplies) calls.push_back(*f.first->rpc->start(proto::METHOD_EXECUTE, lowRequest, r));
    CHECK(queued(3, 1));
    for (auto& r : highReplies) calls.push_back(*high->rpc->start(proto::METHOD_EXECUTE, highRequest, r));
    CHECK(queued(5, 2));
    f.firmware->holdWork(false);
    for (size_t i = 0; i < calls.size(); ++i) {
        auto& rpc = i < lowReplies.size() ? *f.first->rpc : *high->rpc;
        REQUIRE(rpc.finish(calls[i], kCallTimeout).has_value());
    }
    for (const auto& r : lowReplies) CHECK(r.status().code() == 0);
    for (const auto& r : highReplies) CHECK(r.status().code() == 0);
    CHECK(lowBlock.data()[2 * 64] == 3);
    CHECK(highBlock.data()[2 * 64] == 7);

    const auto after = f.first->counters();
    CHECK(after.at("sched.ran_high") - before.at("sched.ran_high") == 2);
    CHECK(after.at("sched.ran_low") - before.at("sched.ran_low") == 3);
    // Both HIGH executions ran ahead of the older queued LOW ones.
    CHECK(after.at("sched.overtakes") - before.at("sched.overtakes") == 2);
}

TEST_CASE("sessions of one firmware: cancel of queued work, deadlines missed in the queue",
          "[shim][multi-client]") {
    SharedLoopback f;
    uint32_t handle = 0;
    REQUIRE(f.first->prepare(addModel({1, 16}), hal::Priority::MEDIUM, &handle) == 0);
    auto block = stageAdd(*f.first, 16, 5, 6);
    auto request = RawClient::addRequest(handle, block.addr(), 16);
    auto late = request;
    late.set_deadline_ns(1'000'000);  // 1 ms: passes while the work is held

    f.firmware->holdWork(true);
    std::vector<proto::ExecuteReply> replies(3);
    std::vector<proto::RpcClient::InFlight> calls;
    calls.push_back(*f.first->rpc->start(proto::METHOD_EXECUTE, request, replies[0]));
    calls.push_back(*f.first->rpc->start(proto::METHOD_EXECUTE, request, replies[1]));
    calls.push_back(*f.first->rpc->start(proto::METHOD_EXECUTE, late, replies[2]));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the 1 ms deadline has passed

    // Cancel the second execution (its call id: the one after the first's, on this client).
    // RpcClient ids are sequential; find it from the reply to the cancel instead of guessing:
    // cancel every id in a small range until one is found.
    proto::CancelReply found;
    uint64_t target = 0;
    for (uint64_t id = 1; id < 64 && !found.found(); ++id) {
        proto::CancelRequest cancel;
        cancel.set_target_call_id(id);
        proto::CancelReply reply;
        REQUIRE(f.first->rpc->call(proto::METHOD_CANCEL, cancel, reply, kCallTimeout).has_value());
        if (reply.found()) {
            found = reply;
            target = id;
        }
    }
    REQUIRE(found.found());
    f.firmware->holdWork(false);

    std::vector<uint32_t> codes;
    for (size_t i = 0; i < calls.size(); ++i) {
        auto r = f.first->rpc->finish(calls[i], kCallTimeout);
        codes.push_back(r ? replies[i].status().code() : r.error().remoteCode);
    }
    // The first queued execution was the one cancelled (the lowest id found): GENERAL_FAILURE.
    CHECK(codes[0] == kGeneralFailure);
    CHECK(codes[1] == 0);
    CHECK(codes[2] == kMissedDeadlineTransient);
    const auto c = f.first->counters();
    CHECK(c.at("sched.cancelled_queued") == 1);
    CHECK(c.at("sched.expired") == 1);
    // A cancel of a call that is not queued finds nothing.
    proto::CancelRequest cancel;
    cancel.set_target_call_id(target);
    proto::CancelReply reply;
    REQUIRE(f.first->rpc->call(proto::METHOD_CANCEL, cancel, reply, kCallTimeout).has_value());
    CHECK_FALSE(reply.found());
}

// A 200-operation execution of `chainModel` on client `c`, its input and output in c's window.
struct LongExecution {
    static constexpr uint32_t kOps = 200, kN = 64 * 1024;
    RawClient& c;
    shim::WindowBlock block;
    proto::ExecuteRequest request;
    explicit LongExecution(RawClient& client)
        : c(client), block(client.window.get(), windowAddr(client), 2 * kN) {
        uint32_t handle = 0;
        REQUIRE(c.prepare(chainModel(kOps, kN), hal::Priority::MEDIUM, &handle) == 0);
        request.set_model_handle(handle);
        request.add_inputs()->set_addr(block.addr());
        request.mutable_inputs(0)->set_length(kN);
        request.add_outputs()->set_addr(block.addr() + kN);
        request.mutable_outputs(0)->set_length(kN);
    }
    static uint64_t windowAddr(RawClient& client) {
        auto addr = client.window->allocate(2 * kN);
        REQUIRE(addr.has_value());
        return *addr;
    }
    // The NPU goes on: the same execution runs to its end.
    void runsToItsEnd() {
        std::memset(block.data(), 1, kN);
        proto::ExecuteRequest plain = request;
        plain.clear_deadline_ns();
        CHECK(c.execute(plain).status().code() == 0);
        CHECK(block.data()[kN] == 201);  // a + a + ... : 200 additions of 1 to 1
    }
};

TEST_CASE("sessions of one firmware: a running execution is cancelled at an operation boundary",
          "[shim][multi-client][cancel]") {
    SharedLoopback f;
    LongExecution work(*f.first);

    // Whether the Cancel meets the execution queued or running depends on timing: wait longer
    // each time until it met it running (the outcome is checked, never the time).
    std::string stopped;
    for (int wait = 1; wait <= 1024 && stopped.empty(); wait *= 2) {
        proto::ExecuteReply reply;
        auto call = f.first->rpc->start(proto::METHOD_EXECUTE, work.request, reply);
        REQUIRE(call.has_value());
        std::this_thread::sleep_for(std::chrono::milliseconds(wait));
        proto::CancelRequest cancel;
        cancel.set_target_call_id(call->callId());
        proto::CancelReply cancelled;
        REQUIRE(f.first->rpc->call(proto::METHOD_CANCEL, cancel, cancelled, kCallTimeout).has_value());
        auto done = f.first->rpc->finish(*call, kCallTimeout);
        const std::string message = done ? reply.status().message() : done.error().message;
        if (!cancelled.found()) continue;  // it had finished already
        CHECK_THAT(message, Catch::Contains("cancelled"));
        if (message.find("stopped before operation") != std::string::npos) stopped = message;
    }
    INFO(stopped);
    REQUIRE_FALSE(stopped.empty());
    CHECK_THAT(stopped, Catch::Contains("of 200 ran"));
    CHECK(f.first->counters().at("sched.cancelled_running") >= 1);
    work.runsToItsEnd();
}

TEST_CASE("sessions of one firmware: a running execution stops at its deadline",
          "[shim][multi-client][deadline]") {
    SharedLoopback f;
    LongExecution work(*f.first);
    // Whether the deadline passes while the execution waits, runs or after it finished depends on
    // timing: start from 100 us and double until it passed while it ran (the outcome is checked).
    std::string stopped;
    uint32_t code = 0;
    for (uint64_t budgetNs = 100'000; budgetNs <= 4'000'000'000ull && stopped.empty(); budgetNs *= 2) {
        work.request.set_deadline_ns(budgetNs);
        const auto reply = f.first->execute(work.request);
        if (reply.status().message().find("stopped before operation") == std::string::npos) continue;
        stopped = reply.status().message();
        code = reply.status().code();
    }
    INFO(stopped);
    REQUIRE_FALSE(stopped.empty());
    CHECK_THAT(stopped, Catch::Contains("missed deadline: the execution was stopped before operation"));
    CHECK_THAT(stopped, Catch::Contains("of 200 ran"));
    // Nothing else ran on this NPU: it had the NPU to itself from its submission on.
    CHECK(code == kMissedDeadlinePersistent);
    CHECK(f.first->counters().at("sched.missed_running") >= 1);
    work.runsToItsEnd();
}

TEST_CASE("sessions of one firmware: a running prepare stops at its deadline and keeps nothing",
          "[shim][multi-client][deadline]") {
    SharedLoopback f;
    const hal::Model model = chainModel(250, 64);
    const auto before = f.first->counters();
    // Whether the deadline passes while the prepare waits, compiles or after it finished depends
    // on timing: lengthen the budget by 25 us each time until it passed mid-compile (from the
    // start again when one compiled within its budget; at most 2000 tries).
    std::string stopped;
    uint32_t code = 0;
    uint64_t budgetNs = 0;
    for (int tries = 0; tries < 2000 && stopped.empty(); ++tries) {
        budgetNs += 25'000;
        const auto reply = f.first->prepareReply(model, hal::Priority::MEDIUM, std::nullopt, budgetNs);
        if (reply.status().code() == 0) {
            REQUIRE(f.first->release(proto::METHOD_RELEASE_MODEL, reply.model_handle()).code() == 0);
            budgetNs = 0;
        } else if (reply.status().message().find("the prepare was stopped before") != std::string::npos) {
            stopped = reply.status().message();
            code = reply.status().code();
        }
    }
    INFO(stopped);
    REQUIRE_FALSE(stopped.empty());
    CHECK_THAT(stopped,
               Catch::Contains("missed deadline: the prepare was stopped before planning operation"));
    CHECK_THAT(stopped, Catch::Contains("of 250 planned"));
    CHECK((code == kMissedDeadlinePersistent || code == kMissedDeadlineTransient));
    // Nothing was kept: no model, no firmware DRAM; the same model then prepares.
    const auto after = f.first->counters();
    CHECK(after.at("runtime.dram_bytes_in_use") == before.at("runtime.dram_bytes_in_use"));
    CHECK(after.at("runtime.loaded_models") == before.at("runtime.loaded_models"));
    CHECK(after.at("sched.missed_running") > before.at("sched.missed_running"));
    uint32_t handle = 0;
    CHECK(f.first->prepare(model, hal::Priority::MEDIUM, &handle) == 0);
}

TEST_CASE("sessions of one firmware: another session's handles, tokens and memory are out of reach",
          "[shim][multi-client]") {
    SharedLoopback f;
    auto other = f.connect();
    RawClient& owner = *f.first;
    const auto base = owner.counters();
    uint32_t handle = 0;
    REQUIRE(owner.prepare(addModel({1, 8}), hal::Priority::MEDIUM, &handle) == 0);
    auto ownerBlock = stageAdd(owner, 8, 10, 20);
    REQUIRE(owner.execute(RawClient::addRequest(handle, ownerBlock.addr(), 8)).status().code() == 0);
    CHECK(ownerBlock.data()[16] == 30);
    CHECK(other->hello.host_window_addr() != owner.hello.host_window_addr());

    SECTION("a foreign model handle is unknown") {
        auto otherBlock = stageAdd(*other, 8, 1, 1);
        const auto r = other->execute(RawClient::addRequest(handle, otherBlock.addr(), 8));
        CHECK(r.status().code() == kInvalidArgument);
        CHECK_THAT(r.status().message(), Catch::Contains("unknown model handle"));
        CHECK(other->release(proto::METHOD_RELEASE_MODEL, handle).code() == kInvalidArgument);
        proto::FetchBlobRequest fetch;
        fetch.set_model_handle(handle);
        proto::FetchBlobReply fetched;
        REQUIRE(other->rpc->call(proto::METHOD_FETCH_BLOB, fetch, fetched, kCallTimeout).has_value());
        CHECK(fetched.status().code() == kInvalidArgument);
        // Nor can a buffer be allocated for one of its roles.
        const auto allocated = other->allocateBuffer(handle, true, 0, {1, 8});
        CHECK(allocated.status().code() == kInvalidArgument);
        CHECK_THAT(allocated.status().message(), Catch::Contains("role 0: unknown model handle"));
        // The same answer as for a handle that exists nowhere.
        const auto none = other->execute(RawClient::addRequest(handle + 1, otherBlock.addr(), 8));
        CHECK(none.status().code() == kInvalidArgument);
        CHECK_THAT(none.status().message(), Catch::Contains("unknown model handle"));
    }
    SECTION("a foreign or unknown buffer token is unknown") {
        for (uint32_t token : {1u, 2u, 256u}) {
            CHECK(other->release(proto::METHOD_RELEASE_BUFFER, token).code() == kInvalidArgument);
            proto::BufferCopyRequest copy;
            copy.set_buffer_token(token);
            copy.set_addr(other->hello.host_window_addr());
            copy.set_length(8);
            proto::BufferCopyReply copied;
            REQUIRE(other->rpc->call(proto::METHOD_BUFFER_COPY, copy, copied, kCallTimeout).has_value());
            CHECK(copied.status().code() == kInvalidArgument);
        }
    }
    SECTION("locations outside the session's window are refused") {
        uint32_t mine = 0;
        REQUIRE(other->prepare(addModel({1, 8}), hal::Priority::MEDIUM, &mine) == 0);
        const uint64_t start = other->hello.host_window_addr();
        const uint64_t end = start + other->hello.host_window_bytes();
        // The owner's window, the firmware's own DRAM, straddling the end, past the end.
        for (uint64_t at : {ownerBlock.addr(), uint64_t{4096}, end - 8, end + 4096}) {
            INFO("at " << at);
            const auto r = other->execute(RawClient::addRequest(mine, at, 8));
            CHECK(r.status().code() == kInvalidArgument);
            CHECK_THAT(r.status().message(), Catch::Contains("outside this client's window"));
        }
        // Constants taken from another client's window.
        uint32_t stolen = 0;
        CHECK(other->prepare(addModel({1, 8}), hal::Priority::MEDIUM, &stolen, ownerBlock.addr()) ==
              kInvalidArgument);
    }
    // The owner is undisturbed: its execution still runs on its data.
    std::memset(ownerBlock.data(), 7, 8);
    REQUIRE(owner.execute(RawClient::addRequest(handle, ownerBlock.addr(), 8)).status().code() == 0);
    CHECK(ownerBlock.data()[16] == 27);

    // The other session's leftovers go with it.
    other.reset();
    CHECK(waitCounter(owner, "session.count", [](uint64_t v) { return v == 1; }) == 1);
    const auto after = owner.counters();
    CHECK(after.at("runtime.loaded_models") == base.at("runtime.loaded_models") + 1);
    CHECK(after.at("session.models") == 1);
    // And the owner's own, once it releases its model.
    REQUIRE(owner.release(proto::METHOD_RELEASE_MODEL, handle).code() == 0);
    const auto released = owner.counters();
    CHECK(released.at("runtime.loaded_models") == base.at("runtime.loaded_models"));
    CHECK(released.at("runtime.dram_bytes_in_use") == base.at("runtime.dram_bytes_in_use"));
}

TEST_CASE("sessions of one firmware: a session's prepared models are released when it disconnects",
          "[shim][multi-client]") {
    SharedLoopback f;
    const auto base = f.first->counters();
    {
        auto leaving = f.connect();
        uint32_t a = 0, b = 0;
        REQUIRE(leaving->prepare(addModel({1, 8}), hal::Priority::LOW, &a) == 0);
        REQUIRE(leaving->prepare(addModel({1, 32}), hal::Priority::HIGH, &b) == 0);
        const auto held = f.first->counters();
        CHECK(held.at("runtime.loaded_models") == base.at("runtime.loaded_models") + 2);
        CHECK(held.at("runtime.dram_bytes_in_use") > base.at("runtime.dram_bytes_in_use"));
        CHECK(held.at("session.count") == 2);
        // Gone without releasing anything.
    }
    CHECK(waitCounter(*f.first, "session.count", [](uint64_t v) { return v == 1; }) == 1);
    const auto after = f.first->counters();
    CHECK(after.at("runtime.loaded_models") == base.at("runtime.loaded_models"));
    CHECK(after.at("runtime.dram_bytes_in_use") == base.at("runtime.dram_bytes_in_use"));
}

// Through the HAL: the Cancel after each timeout, answered at once for queued work. That the
// blocks stay held until the CancelReply, and the unanswered Cancel's quarantine, are checked on
// the connection itself below ("shim: a timed-out execution's window blocks ...").
TEST_CASE("shim: an execution that times out is cancelled, its window blocks kept until the firmware let go",
          "[shim][multi-client][cancel]") {
    SharedLoopback f;
    shim::ShimOptions options;
    options.autotune = false;
    options.executeTimeout = std::chrono::milliseconds(300);
    options.recovery.maxReplays = 1;
    auto device = shim::createNpuDevice(f.firmware->connectLoopback(), options);
    REQUIRE(device.has_value());
    auto prepared = prepare(**device);
    auto r = addRequest(2, 3);

    f.firmware->holdWork(true);  // the execution stays queued: every try times out
    auto held = prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    CHECK_FALSE(held.has_value());
    auto c = shim::queryNpuCounters(**device);
    REQUIRE(c.has_value());
    CHECK(c->cancels == 2);  // the try and its replay
    CHECK(c->cancelsFailed == 0);
    const auto fw = f.first->counters();
    CHECK(fw.at("sched.cancelled_queued") == 2);  // taken out of the queue before they ran
    CHECK(fw.at("sched.queued_now") == 0);

    f.firmware->holdWork(false);
    auto ran = prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    INFO((ran ? std::string() : ran.error().message));
    REQUIRE(ran.has_value());
    CHECK(r.output()[0] == 5);
}

TEST_CASE("loop timeout: negative refused, default 2 s, above 15 s clamped, passed to the firmware",
          "[shim][multi-client][loop-timeout]") {
    SharedLoopback f;
    shim::ShimOptions options;
    options.autotune = false;
    auto device = shim::createNpuDevice(f.firmware->connectLoopback(), options);
    REQUIRE(device.has_value());
    auto prepared = prepare(**device);
    auto r = addRequest(1, 2);
    auto loopTimeoutSeen = [&] {
        auto c = shim::queryFirmwareCounters(**device);
        REQUIRE(c.has_value());
        return c->at("session.loop_timeout_ns");
    };
    using std::chrono::nanoseconds;
    auto negative =
        prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, nanoseconds(-1));
    REQUIRE_FALSE(negative.has_value());
    CHECK(negative.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    REQUIRE(prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt));
    CHECK(loopTimeoutSeen() == 2'000'000'000ull);
    REQUIRE(prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt,
                                           std::chrono::seconds(20)));
    CHECK(loopTimeoutSeen() == 15'000'000'000ull);
    REQUIRE(prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt,
                                           std::chrono::milliseconds(5)));
    CHECK(loopTimeoutSeen() == 5'000'000ull);
}

TEST_CASE("sessions of one firmware: a session cannot cancel another session's call",
          "[shim][multi-client][cancel]") {
    SharedLoopback f;
    auto other = f.connect();
    uint32_t handle = 0;
    REQUIRE(f.first->prepare(addModel({1, 8}), hal::Priority::MEDIUM, &handle) == 0);
    auto block = stageAdd(*f.first, 8, 1, 2);
    f.firmware->holdWork(true);
    proto::ExecuteReply reply;
    auto call =
        f.first->rpc->start(proto::METHOD_EXECUTE, RawClient::addRequest(handle, block.addr(), 8), reply);
    REQUIRE(call.has_value());
    CHECK(waitCounter(*f.first, "sched.queued_now", [](uint64_t v) { return v >= 1; }) >= 1);
    proto::CancelRequest cancel;
    cancel.set_target_call_id(call->callId());
    proto::CancelReply cancelled;
    REQUIRE(other->rpc->call(proto::METHOD_CANCEL, cancel, cancelled, kCallTimeout).has_value());
    CHECK_FALSE(cancelled.found());  // the same call id means another call in another session
    f.firmware->holdWork(false);
    REQUIRE(f.first->rpc->finish(*call, kCallTimeout).has_value());
    CHECK(reply.status().code() == 0);
    CHECK(block.data()[16] == 3);
}

// A client back after a firmware restart holds device addresses in its old window: its Hello asks
// for that window's address, and gets it when that slot is free (docs/execution.md).
TEST_CASE(
    "sessions of one firmware: Hello's window_addr places a new session's window in the free slot it names",
    "[shim][multi-client]") {
    SharedLoopback f;
    const uint64_t firstAddr = f.first->hello.host_window_addr();
    auto probe = f.connect();
    const uint64_t lowestFree = probe->hello.host_window_addr();
    const uint64_t bytes = probe->hello.host_window_bytes();
    f.disconnect(probe, 1);
    SECTION("a taken, misaligned or out-of-range address is not granted: the first free slot is used") {
        for (uint64_t want : {firstAddr, lowestFree + 4096, lowestFree + 64 * bytes, uint64_t{1}}) {
            INFO("asked for " << want);
            auto c = f.connect(want);
            CHECK(c->hello.host_window_addr() == lowestFree);
            f.disconnect(c, 1);
        }
    }
    SECTION("a free slot is granted, the window works there, and the slot it skipped stays free") {
        auto moved = f.connect(lowestFree + bytes);
        CHECK(moved->hello.host_window_addr() == lowestFree + bytes);
        uint32_t handle = 0;
        REQUIRE(moved->prepare(addModel({1, 8}), hal::Priority::MEDIUM, &handle) == 0);
        auto block = stageAdd(*moved, 8, 3, 4);
        CHECK(block.addr() >= lowestFree + bytes);
        REQUIRE(moved->execute(RawClient::addRequest(handle, block.addr(), 8)).status().code() == 0);
        CHECK(block.data()[16] == 7);
        auto next = f.connect();
        CHECK(next->hello.host_window_addr() == lowestFree);
        // A second Hello on a session that holds a model does not move its window.
        proto::HelloRequest again;
        again.set_major(1);
        again.set_window_addr(lowestFree + 2 * bytes);
        proto::HelloReply reply;
        REQUIRE(moved->rpc->call(proto::METHOD_HELLO, again, reply, kCallTimeout).has_value());
        CHECK(reply.host_window_addr() == lowestFree + bytes);
    }
}

TEST_CASE("sessions of one firmware: a client beyond the session windows is refused, the others go on",
          "[shim][multi-client]") {
    SharedLoopback f;
    REQUIRE(f.firmware->maxSessions() == 4);
    std::vector<std::unique_ptr<RawClient>> more;
    for (int i = 0; i < 3; ++i) more.push_back(f.connect());
    auto rpc = proto::RpcClient::create(f.firmware->connectLoopback());
    REQUIRE(rpc.has_value());
    proto::HelloRequest hello;
    hello.set_major(1);
    proto::HelloReply refused;
    auto r = (*rpc)->call(proto::METHOD_HELLO, hello, refused, kCallTimeout);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == proto::Error::Kind::kDisconnected);
    CHECK(f.first->counters().at("session.count") == 4);
    // A place frees when a client leaves.
    more.pop_back();
    CHECK(waitCounter(*f.first, "session.count", [](uint64_t v) { return v == 3; }) == 3);
    more.push_back(f.connect());
    CHECK(f.first->counters().at("session.count") == 4);
}

// ---- two client processes on one npu-fwd --------------------------------------------------------

namespace {

// The child processes: this test program again, running one hidden test case, told where the
// daemon listens through the environment.
pid_t spawnChild(const std::string& testCase, const std::string& socket) {
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    std::string env = "NPU_MULTI_CLIENT_SOCKET=" + socket;
    std::string stop = "NPU_MULTI_CLIENT_STOP=" + socket + ".stop";
    std::vector<char*> envp;
    for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
    envp.push_back(env.data());
    envp.push_back(stop.data());
    envp.push_back(nullptr);
    std::string name = testCase;
    char* argv[] = {const_cast<char*>(self.c_str()), name.data(), nullptr};
    pid_t pid = 0;
    REQUIRE(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, envp.data()) == 0);
    return pid;
}

// The child's exit code (128 + signal); a child still running after `limit` is killed and fails.
int waitChild(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(120)) {
    int status = 0;
    const auto until = std::chrono::steady_clock::now() + limit;
    pid_t got = 0;
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (got == 0) {
        kill(pid, SIGKILL);
        REQUIRE(waitpid(pid, &status, 0) == pid);
        FAIL("child " << pid << " still ran after " << limit.count() << " s: killed");
    }
    REQUIRE(got == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Waits (bounded) until `path` exists; false when it did not come in time or child `pid` ended
// first (then reaped here: its failures are in the output it printed).
bool waitForFile(const std::string& path, pid_t pid, std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!std::filesystem::exists(path) && std::chrono::steady_clock::now() < until) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return std::filesystem::exists(path);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::filesystem::exists(path);
}

// A child's marks: `<socket>.<what>.<pid>`, made by the child or the parent.
std::string childMark(const std::string& socket, const char* what, pid_t pid) {
    return socket + "." + what + "." + std::to_string(pid);
}

std::shared_ptr<hal::IDevice> childDevice() {
    const char* socket = std::getenv("NPU_MULTI_CLIENT_SOCKET");
    REQUIRE(socket != nullptr);
    shim::DaemonOptions options;
    options.socketPath = socket;
    options.spawnIfAbsent = false;
    auto device = shim::connectNpuDaemon(options);
    INFO((device ? std::string() : device.error().message));
    REQUIRE(device.has_value());
    return *device;
}

// Runs `count` executions of `prepared` on `threads` threads, checking every output.
void runMany(hal::IPreparedModel& prepared, uint32_t n, int threads, int count) {
    std::atomic<int> failures{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            auto r = addRequest(uint8_t(t), 1, n);
            for (int i = 0; i < count; ++i) {
                auto out = prepared.executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt,
                                                         std::nullopt);
                if (!out || r.output()[n - 1] != uint8_t(t + 1)) failures++;
            }
        });
    }
    for (auto& w : workers) w.join();
    CHECK(failures.load() == 0);
}

struct Daemon {
    std::string socket;
    std::shared_ptr<hal::IDevice> device;  // keeps the daemon it started alive
    Daemon() {
        socket = (std::filesystem::temp_directory_path() /
                  ("npu-multi-client-" + std::to_string(getpid()) + ".sock"))
                     .string();
        shim::DaemonOptions options;
        options.socketPath = socket;
        options.daemonPath = NPU_FWD_TEST_PATH;
        auto d = shim::connectNpuDaemon(options);
        INFO((d ? std::string() : d.error().message));
        REQUIRE(d.has_value());
        device = *d;
    }
    ~Daemon() {
        device.reset();
        std::filesystem::remove(socket);
    }
    std::map<std::string, uint64_t> counters() {
        auto c = shim::queryFirmwareCounters(*device);
        REQUIRE(c.has_value());
        return *c;
    }
};

}  // namespace

// Runs `prepared` on `threads` threads until the parent creates the stop file (at most a minute).
void runUntilStopped(hal::IPreparedModel& prepared, uint32_t n, int threads) {
    const std::string stop = std::getenv("NPU_MULTI_CLIENT_STOP");
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    int rounds = 0;
    while (!std::filesystem::exists(stop) && std::chrono::steady_clock::now() < until) {
        // 40 executions a thread per round: between rounds (threads joined and started again,
        // requests made anew) nothing of this client is queued, and with 5 a round the HIGH
        // client's 50 executions sometimes all fell in such gaps (0 overtakes, 2 runs in 14).
        runMany(prepared, n, threads, 40);
        rounds++;
    }
    CHECK(rounds > 0);
    CHECK(std::filesystem::exists(stop));
}

TEST_CASE("child: a LOW client floods the NPU", "[.multi-client-low]") {
    auto device = childDevice();
    auto prepared = device->prepareModel(addModel({1, 64, 64, 4}), hal::ExecutionPreference::SUSTAINED_SPEED,
                                         hal::Priority::LOW, std::nullopt, {}, {}, {});
    REQUIRE(prepared.has_value());
    runUntilStopped(**prepared, 64 * 64 * 4, 8);
}

// Its prepare is HIGH work too: it says when that is done and starts executing only once the
// parent, having read the counters, says go (so the parent counts the executions' overtakes alone).
TEST_CASE("child: a HIGH client", "[.multi-client-high]") {
    auto device = childDevice();
    auto prepared = device->prepareModel(addModel({1, 64}), hal::ExecutionPreference::FAST_SINGLE_ANSWER,
                                         hal::Priority::HIGH, std::nullopt, {}, {}, {});
    REQUIRE(prepared.has_value());
    const std::string socket = std::getenv("NPU_MULTI_CLIENT_SOCKET");
    { std::ofstream(childMark(socket, "prepared", getpid())) << "prepared\n"; }
    const std::string go = childMark(socket, "go", getpid());
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!std::filesystem::exists(go) && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(std::filesystem::exists(go));
    runMany(**prepared, 64, 1, 50);
}

TEST_CASE("child: a client executing while another probes", "[.multi-client-victim]") {
    auto device = childDevice();
    auto prepared = prepare(*device, addModel({1, 16}));
    runUntilStopped(*prepared, 16, 2);
}

// A raw client with a buffer in firmware memory (input 0 of its model) and a pool the firmware
// mapped (input 1 and the output): it writes what a prober may try to reach into its victim mark
// and executes until the parent's stop file, checking every output, its buffer's contents after
// each execution, and at the end that its pool is still mapped.
TEST_CASE("child: a raw client with a buffer and a pool, executing while another probes",
          "[.multi-client-raw-victim]") {
    const char* socket = std::getenv("NPU_MULTI_CLIENT_SOCKET");
    REQUIRE(socket != nullptr);
    auto transport = proto::connectUnix(socket, std::chrono::seconds(5));
    REQUIRE(transport.has_value());
    RawClient victim(std::move(*transport));
    constexpr uint32_t kN = 64 * 1024;
    uint32_t handle = 0;
    REQUIRE(victim.prepare(addModel({1, kN}), hal::Priority::MEDIUM, &handle) == 0);
    const proto::AllocateBufferReply buffer = victim.allocateBuffer(handle, true, 0, {1, kN});
    INFO(buffer.status().message());
    REQUIRE(buffer.status().code() == 0);
    auto staged = victim.window->allocate(kN);
    REQUIRE(staged.has_value());
    shim::WindowBlock block(victim.window.get(), *staged, kN);
    std::memset(block.data(), 5, kN);
    REQUIRE(victim.bufferCopy(buffer.buffer_token(), true, block.addr(), kN).code() == 0);
    std::shared_ptr<hal::Memory> memory = hal::Memory::create(2 * kN);
    REQUIRE(memory != nullptr);
    const proto::MapPoolReply pool = victim.mapPool(memory->fd(), 0, 2 * kN);
    REQUIRE(pool.status().code() == 0);
    {
        std::ofstream(childMark(socket, "victim", getpid()))
            << handle << ' ' << buffer.buffer_token() << ' ' << pool.pool_id() << ' ' << pool.addr() << '\n';
    }
    proto::ExecuteRequest request;
    request.set_model_handle(handle);
    request.add_inputs()->set_buffer_token(buffer.buffer_token());
    auto* b = request.add_inputs();
    b->set_addr(pool.addr());
    b->set_length(kN);
    auto* out = request.add_outputs();
    out->set_addr(pool.addr() + kN);
    out->set_length(kN);

    const std::string stop = std::getenv("NPU_MULTI_CLIENT_STOP");
    const auto until = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    int rounds = 0, failures = 0;
    std::string firstFailure;
    auto failed = [&](const std::string& why) {
        if (failures++ == 0) firstFailure = "round " + std::to_string(rounds) + ": " + why;
    };
    while (!std::filesystem::exists(stop) && std::chrono::steady_clock::now() < until) {
        const uint8_t v = static_cast<uint8_t>(1 + rounds % 200);
        std::memset(memory->data(), v, kN);
        std::memset(memory->data() + kN, 0, kN);
        const auto reply = victim.execute(request);
        if (reply.status().code() != 0) failed("execute: " + reply.status().message());
        if (std::vector<uint8_t>(memory->data() + kN, memory->data() + 2 * kN) !=
            std::vector<uint8_t>(kN, static_cast<uint8_t>(5 + v)))
            failed("an output byte is not 5 + " + std::to_string(v));
        std::memset(block.data(), 0, kN);
        const auto copied = victim.bufferCopy(buffer.buffer_token(), false, block.addr(), kN);
        if (copied.code() != 0) failed("copy out of the buffer: " + copied.message());
        if (std::vector<uint8_t>(block.data(), block.data() + kN) != std::vector<uint8_t>(kN, 5))
            failed("the buffer no longer holds its 5s");
        rounds++;
    }
    INFO(firstFailure);
    CHECK(failures == 0);
    CHECK(rounds > 0);
    CHECK(std::filesystem::exists(stop));
    CHECK(victim.counters().at("session.pools") == 1);  // its pool is still mapped
}

TEST_CASE("two client processes on one npu-fwd: HIGH executions overtake a LOW flood",
          "[shim][multi-client]") {
    Daemon d;
    const auto before = d.counters();
    const pid_t low = spawnChild("[.multi-client-low]", d.socket);
    // Start the HIGH client once the LOW one has work running (bounded wait).
    for (int i = 0; i < 800 && d.counters()["sched.ran_low"] < before.at("sched.ran_low") + 8; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    // HIGH executions run ahead of LOW ones queued before them. The LOW client keeps up to 8 in
    // the queue, so nearly every HIGH execution finds some waiting; but on a machine starved of
    // CPU the LOW client's threads may not refill the queue during one HIGH client's 50
    // executions (seen 1 in 3 runs under three busy loops on 2 cores). So up to 4 HIGH clients
    // run in turn, each an independent trial, until one has overtaken; the FIFO order within a
    // priority and the overtaking rule themselves are tested exactly in firmware_scheduler.
    // A HIGH client's prepare is HIGH work that may overtake queued LOW executions too: each
    // client's overtakes are counted from when it has prepared (it waits for our go) to its end,
    // when nothing but its executions is HIGH work (its release is a control call).
    uint64_t overtakes = 0;
    int highClients = 0;
    while (overtakes == 0 && highClients < 4) {
        const pid_t high = spawnChild("[.multi-client-high]", d.socket);
        const std::string prepared = childMark(d.socket, "prepared", high);
        INFO("HIGH client " << high << " (its output above says why it did not prepare)");
        REQUIRE(waitForFile(prepared, high));
        const uint64_t fromHere = d.counters().at("sched.overtakes");
        { std::ofstream(childMark(d.socket, "go", high)) << "go\n"; }
        CHECK(waitChild(high) == 0);
        std::filesystem::remove(prepared);
        std::filesystem::remove(childMark(d.socket, "go", high));
        highClients++;
        overtakes = d.counters().at("sched.overtakes") - fromHere;
    }
    { std::ofstream(d.socket + ".stop") << "done\n"; }  // the LOW client floods until then
    CHECK(waitChild(low) == 0);
    std::filesystem::remove(d.socket + ".stop");
    const auto after = d.counters();
    // The executions, and each client's prepare (work too, at the model's priority).
    CHECK(after.at("sched.ran_low") - before.at("sched.ran_low") >= 8 + 1);
    CHECK(after.at("sched.ran_high") - before.at("sched.ran_high") == uint64_t(highClients) * (50 + 1));
    INFO("overtakes by the last HIGH client's executions: " << overtakes << " (" << highClients
                                                            << " HIGH clients)");
    CHECK(overtakes >= 1);
}

TEST_CASE("two client processes on one npu-fwd: a prober reaches nothing of the other client",
          "[shim][multi-client]") {
    Daemon d;
    const pid_t victim = spawnChild("[.multi-client-victim]", d.socket);
    auto transport = proto::connectUnix(d.socket, std::chrono::seconds(5));
    REQUIRE(transport.has_value());
    RawClient prober(std::move(*transport));
    // Wait until the victim has its model, then try every plausible handle (slot | generation << 8).
    CHECK(waitCounter(prober, "runtime.loaded_models", [](uint64_t v) { return v >= 1; }) >= 1);
    auto block = stageAdd(prober, 16, 1, 1);
    int refused = 0;
    for (uint32_t generation = 1; generation <= 4; ++generation) {
        for (uint32_t slot = 0; slot < 16; ++slot) {
            const uint32_t handle = generation << 8 | slot;
            const auto r = prober.execute(RawClient::addRequest(handle, block.addr(), 16));
            refused += r.status().code() == kInvalidArgument ? 1 : 0;
            CHECK(prober.release(proto::METHOD_RELEASE_MODEL, handle).code() == kInvalidArgument);
        }
    }
    CHECK(refused == 64);
    uint32_t mine = 0;
    REQUIRE(prober.prepare(addModel({1, 16}), hal::Priority::MEDIUM, &mine) == 0);
    const auto outside =
        prober.execute(RawClient::addRequest(mine, prober.hello.host_window_addr() - 4096, 16));
    CHECK(outside.status().code() == kInvalidArgument);
    CHECK(prober.counters().at("runtime.loaded_models") == 2);  // the victim's model and the prober's
    { std::ofstream(d.socket + ".stop") << "done\n"; }
    CHECK(waitChild(victim) == 0);  // every one of its executions gave the right answer
    std::filesystem::remove(d.socket + ".stop");
}

namespace {
// `count` Ping frames, call ids 1..count, as one buffer.
std::vector<uint8_t> pingFlood(uint32_t count) {
    std::vector<uint8_t> flood;
    for (uint32_t id = 1; id <= count; ++id) {
        proto::PingRequest ping;
        ping.set_nonce(id);
        const std::string payload = ping.SerializeAsString();
        const size_t at = flood.size();
        flood.resize(at + proto::kFrameHeaderSize + payload.size());
        std::memcpy(flood.data() + at + proto::kFrameHeaderSize, payload.data(), payload.size());
        proto::FrameHeader h;
        h.type = proto::METHOD_PING;
        h.callId = id;
        h.length = uint32_t(payload.size());
        proto::encodeFrameHeader(h, flood.data() + at + proto::kFrameHeaderSize, flood.data() + at);
    }
    return flood;
}

// Reads `count` frames from `t`: their call ids, in the order they came.
std::vector<uint64_t> readFrameIds(proto::Transport& t, uint32_t count) {
    std::vector<uint64_t> ids;
    std::vector<uint8_t> bytes, buffer(64 * 1024);
    size_t at = 0;
    while (ids.size() < count) {
        auto n = t.read(buffer, nullptr, std::chrono::seconds(20));
        REQUIRE(n.has_value());
        bytes.insert(bytes.end(), buffer.begin(), buffer.begin() + *n);
        proto::FrameHeader h;
        while (bytes.size() - at >= proto::kFrameHeaderSize &&
               proto::parseFrameHeader(bytes.data() + at, &h) &&
               bytes.size() - at >= proto::kFrameHeaderSize + h.length) {
            ids.push_back(h.callId);
            at += proto::kFrameHeaderSize + h.length;
        }
    }
    return ids;
}
}  // namespace

TEST_CASE("one npu-fwd: a client that does not read its replies holds up no other client",
          "[shim][multi-client]") {
    Daemon d;
    auto hostile = proto::connectUnix(d.socket, std::chrono::seconds(5));
    REQUIRE(hostile.has_value());
    // Pings, answered on arrival, whose replies it does not read: far more than its socket holds.
    constexpr uint32_t kPings = 6000;
    REQUIRE((*hostile)->write(pingFlood(kPings)).has_value());
    // Another client is served at once. (Before the outbox, each of those replies held the
    // firmware's lock for the socket's 10 s write timeout.)
    auto transport = proto::connectUnix(d.socket, std::chrono::seconds(5));
    REQUIRE(transport.has_value());
    RawClient other(std::move(*transport));
    proto::PingRequest ping;
    proto::PingReply pong;
    CHECK(other.rpc->call(proto::METHOD_PING, ping, pong, std::chrono::seconds(3)).has_value());
    uint32_t handle = 0;
    REQUIRE(other.prepare(addModel({1, 16}), hal::Priority::MEDIUM, &handle) == 0);
    auto block = stageAdd(other, 16, 2, 3);
    CHECK(other.execute(RawClient::addRequest(handle, block.addr(), 16)).status().code() == 0);
    CHECK(block.data()[2 * 16] == 5);
    // The slow reader then gets every reply, in order, and its replies did wait.
    const std::vector<uint64_t> ids = readFrameIds(**hostile, kPings);
    std::vector<uint64_t> expected(kPings);
    std::iota(expected.begin(), expected.end(), 1);
    CHECK(ids == expected);
    auto client = proto::RpcClient::create(std::move(*hostile));
    REQUIRE(client.has_value());
    proto::GetCountersRequest request;
    proto::CountersReply counters;
    REQUIRE((*client)->call(proto::METHOD_GET_COUNTERS, request, counters, kCallTimeout).has_value());
    uint64_t deferred = 0;
    for (const auto& c : counters.counters())
        deferred = c.name() == "session.replies_deferred" ? c.value() : deferred;
    CHECK(deferred > 0);
}

// The same from another process, against what the victim holds beyond its model: a buffer in
// firmware memory and a pool the firmware mapped (docs/execution.md "Memory model", isolation).
TEST_CASE("two client processes on one npu-fwd: another client's buffers and pools are out of reach",
          "[shim][multi-client]") {
    Daemon d;
    const pid_t victim = spawnChild("[.multi-client-raw-victim]", d.socket);
    const std::string marks = childMark(d.socket, "victim", victim);
    INFO("the victim's output above says why it did not start");
    REQUIRE(waitForFile(marks, victim));
    uint32_t victimHandle = 0, token = 0, poolId = 0;
    uint64_t poolAddr = 0;
    {
        std::ifstream in(marks);
        in >> victimHandle >> token >> poolId >> poolAddr;
        REQUIRE(in);
    }
    auto transport = proto::connectUnix(d.socket, std::chrono::seconds(5));
    REQUIRE(transport.has_value());
    RawClient prober(std::move(*transport));
    // The fd Hello passed is this client's own window, not all device DRAM.
    CHECK(prober.windowFdBytes == prober.hello.host_window_bytes());
    CHECK(prober.windowFdBytes < prober.hello.device_memory_bytes());

    constexpr uint32_t kN = 64 * 1024;
    uint32_t mine = 0;
    REQUIRE(prober.prepare(addModel({1, kN}), hal::Priority::MEDIUM, &mine) == 0);
    auto block = stageAdd(prober, kN, 1, 1);
    auto refused = [](const proto::Status& status, const char* what) {
        INFO(what << ": " << status.code() << " " << status.message());
        CHECK(status.code() == kInvalidArgument);
    };
    // Its buffer token, in every call that names one.
    refused(prober.release(proto::METHOD_RELEASE_BUFFER, token), "ReleaseBuffer of its token");
    refused(prober.bufferCopy(token, true, block.addr(), kN), "BufferCopy into its buffer");
    refused(prober.bufferCopy(token, false, block.addr(), kN), "BufferCopy out of its buffer");
    proto::ExecuteRequest viaToken = RawClient::addRequest(mine, block.addr(), kN);
    viaToken.mutable_inputs(0)->Clear();
    viaToken.mutable_inputs(0)->set_buffer_token(token);
    refused(prober.execute(viaToken).status(), "Execute with its buffer as an input");
    // Its model, in a buffer's role.
    refused(prober.allocateBuffer(victimHandle, true, 0, {1, kN}).status(), "AllocateBuffer for its model");
    // Its pool: by id, and by device address (its input and its output, at the right sizes).
    refused(prober.unmapPool(poolId), "UnmapPool of its pool id");
    proto::ExecuteRequest intoPool = RawClient::addRequest(mine, block.addr(), kN);
    intoPool.mutable_inputs(1)->set_addr(poolAddr);
    intoPool.mutable_outputs(0)->set_addr(poolAddr + kN);
    refused(prober.execute(intoPool).status(), "Execute reading and writing its pool");
    // A pool of our own too small for the locations; a range beyond the file; no fd at all.
    std::shared_ptr<hal::Memory> small = hal::Memory::create(kN);
    REQUIRE(small != nullptr);
    refused(prober.mapPool(small->fd(), 0, 2 * kN).status(), "MapPool of a range beyond the file");
    refused(prober.mapPool(-1, 0, kN).status(), "MapPool without an fd");
    const proto::MapPoolReply mapped = prober.mapPool(small->fd(), 0, kN);
    REQUIRE(mapped.status().code() == 0);
    refused(prober.execute(RawClient::addRequest(mine, mapped.addr(), kN)).status(),
            "Execute past the end of a pool of our own");
    // A closed fd, through the shim of this process (the shim refuses it before anything travels).
    {
        auto prepared = prepare(*d.device, addModel({1, kN}));
        AddRequest r = addRequest(1, 2, kN);
        const int fd = r.pool->fd();
        REQUIRE(close(fd) == 0);
        auto done =
            prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
        REQUIRE_FALSE(done.has_value());
        CHECK(done.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
        CHECK_THAT(done.error().message, Catch::Contains("is closed"));
        const int placeholder = open("/dev/null", O_RDONLY | O_CLOEXEC);  // for the Memory to close
        REQUIRE(dup2(placeholder, fd) == fd);
        close(placeholder);
    }
    // Our own requests still run, and the victim's buffer is the only one in firmware memory.
    CHECK(prober.execute(RawClient::addRequest(mine, block.addr(), kN)).status().code() == 0);
    CHECK(block.data()[2 * kN] == 2);
    CHECK(prober.counters().at("runtime.buffers") == 1);

    { std::ofstream(d.socket + ".stop") << "done\n"; }
    CHECK(waitChild(victim) == 0);  // every output right, its buffer and pool intact
    std::filesystem::remove(d.socket + ".stop");
    std::filesystem::remove(marks);
}

namespace {

fw::host::FirmwareHostConfig withFaultInjection() {
    fw::host::FirmwareHostConfig config;
    config.faultInjection = true;
    return config;
}

proto::PingReply ping(RawClient& client) {
    proto::PingRequest request;
    request.set_nonce(7);
    proto::PingReply reply;
    REQUIRE(client.rpc->call(proto::METHOD_PING, request, reply, kCallTimeout).has_value());
    CHECK(reply.nonce() == 7);
    return reply;
}

void injectWedge(RawClient& client, uint32_t mode) {
    proto::InjectFaultsRequest request;
    request.set_wedge(mode);
    proto::InjectFaultsReply reply;
    REQUIRE(client.rpc->call(proto::METHOD_INJECT_FAULTS, request, reply, kCallTimeout).has_value());
    REQUIRE(reply.status().code() == 0);
}

// `client` prepares a chain of `ops` additions over n bytes of ones; the request runs it.
struct Chain {
    uint32_t handle = 0;
    shim::WindowBlock block;
    proto::ExecuteRequest request;
    Chain(RawClient& client, uint32_t ops, uint32_t n) {
        REQUIRE(client.prepare(chainModel(ops, n), hal::Priority::MEDIUM, &handle) == 0);
        auto addr = client.window->allocate(2 * n);
        REQUIRE(addr.has_value());
        block = shim::WindowBlock(client.window.get(), *addr, 2 * n);
        std::memset(block.data(), 1, n);
        std::memset(block.data() + n, 0, n);
        request.set_model_handle(handle);
        request.add_inputs()->set_addr(block.addr());
        request.mutable_inputs(0)->set_length(n);
        request.add_outputs()->set_addr(block.addr() + n);
        request.mutable_outputs(0)->set_length(n);
    }
};

// Pings `client` until its answer says an item of its own runs (bounded).
proto::PingReply waitRunning(RawClient& client) {
    proto::PingReply r;
    for (int i = 0; i < 1000; ++i) {
        r = ping(client);
        if (r.item_running() && r.item_is_mine()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    REQUIRE(r.item_running());
    return r;
}

}  // namespace

TEST_CASE("sessions of one firmware: Ping is answered on arrival while an item is wedged; Reset frees it",
          "[shim][multi-client][wedge]") {
    SharedLoopback f(withFaultInjection());
    constexpr uint32_t kOps = 20, kN = 4096;
    Chain chain(*f.first, kOps, kN);
    auto other = f.connect();  // before the wedge: its Hello is served in order, like any control call
    injectWedge(*f.first, 1);
    proto::ExecuteReply reply;
    auto call = f.first->rpc->start(proto::METHOD_EXECUTE, chain.request, reply);
    REQUIRE(call.has_value());
    const proto::PingReply first = waitRunning(*f.first);
    CHECK(first.answered_on_arrival());
    CHECK(first.session_queued() == 1);  // the execution, running
    // Another session sees the same item, not its own, and nothing of its own queued.
    const proto::PingReply seen = ping(*other);
    CHECK(seen.item_running());
    CHECK_FALSE(seen.item_is_mine());
    CHECK(seen.session_queued() == 0);
    // Stuck: later answers show the same progress counter and a longer running time.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const proto::PingReply later = ping(*f.first);
    CHECK(later.item_running());
    CHECK(later.progress() == first.progress());
    CHECK(later.item_running_us() > first.item_running_us());
    CHECK_FALSE(shim::servedEverything(later));
    CHECK_FALSE(shim::progressed(first, later));
    // A Reset frees it: the item runs to its end (its answer is right), then the Reset is served.
    proto::ResetRequest reset;
    proto::ResetReply resetReply;
    REQUIRE(f.first->rpc->call(proto::METHOD_RESET, reset, resetReply, kCallTimeout).has_value());
    CHECK(resetReply.status().code() == 0);
    REQUIRE(f.first->rpc->finish(*call, kCallTimeout).has_value());
    CHECK(reply.status().code() == 0);
    CHECK(chain.block.data()[kN] == kOps + 1);
    const proto::PingReply after = ping(*f.first);
    CHECK_FALSE(after.item_running());
    CHECK(after.progress() > first.progress());
    CHECK(after.session_queued() == 0);
    CHECK(shim::servedEverything(after));
}

TEST_CASE("sessions of one firmware: a crawling item's progress counter moves between pings",
          "[shim][multi-client][wedge]") {
    SharedLoopback f(withFaultInjection());
    constexpr uint32_t kOps = 20, kN = 4096;
    Chain chain(*f.first, kOps, kN);
    injectWedge(*f.first, 3);
    proto::ExecuteReply reply;
    auto call = f.first->rpc->start(proto::METHOD_EXECUTE, chain.request, reply);
    REQUIRE(call.has_value());
    const proto::PingReply first = waitRunning(*f.first);
    proto::PingReply next = first;
    for (int i = 0; i < 1000 && !shim::progressed(first, next); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        next = ping(*f.first);
    }
    CHECK(shim::progressed(first, next));
    REQUIRE(f.first->rpc->finish(*call, kCallTimeout).has_value());
    CHECK(reply.status().code() == 0);
    CHECK(chain.block.data()[kN] == kOps + 1);
}

TEST_CASE(
    "sessions of one firmware: a call queued behind a slow but progressing item is replayed, never reset",
    "[shim][multi-client][wedge]") {
    SharedLoopback f(withFaultInjection());
    constexpr uint32_t kOps = 30, kN = 4096;  // crawling: 30 operations of 20 ms
    Chain chain(*f.first, kOps, kN);
    shim::ShimOptions options;
    options.autotune = false;
    options.recovery.watchdogPeriod = std::chrono::milliseconds(0);
    options.executeTimeout = std::chrono::milliseconds(100);
    options.recovery.stallWindow = std::chrono::milliseconds(300);
    options.recovery.maxReplays = 50;
    fw::host::FirmwareHost* host = f.firmware.get();
    auto device = shim::createNpuDevice(
        shim::TransportFactory(
            [host]() -> proto::Result<std::unique_ptr<proto::Transport>> { return host->connectLoopback(); }),
        options);
    REQUIRE(device.has_value());
    auto prepared = prepare(**device);
    injectWedge(*f.first, 3);
    proto::ExecuteReply reply;
    auto call = f.first->rpc->start(proto::METHOD_EXECUTE, chain.request, reply);
    REQUIRE(call.has_value());
    (void)waitRunning(*f.first);
    auto add = addRequest(1, 2);
    auto r = prepared->executeSynchronously(add.request, hal::MeasureTiming::NO, {}, {});
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r.has_value());
    CHECK(add.output() == std::vector<uint8_t>(4, 3));
    const auto c = shim::queryNpuCounters(**device).value();
    CHECK(c.callTimeouts >= 1);  // it waited behind the crawling item
    CHECK(c.stalls == 0);
    CHECK(c.resets == 0);
    CHECK(c.restarts == 0);
    CHECK(c.requestsFailed == 0);
    REQUIRE(f.first->rpc->finish(*call, kCallTimeout).has_value());
    CHECK(reply.status().code() == 0);
    CHECK(chain.block.data()[kN] == kOps + 1);
}

// ---- the shim's Cancel after a timeout, on one Connection (shim/src/connection.h) ---------------
// callCancellable keeps an execution's window blocks until the firmware answers the Cancel it
// sends after a timeout (a host answers the Cancel of a running item only once the item stopped);
// unanswered, the blocks go into quarantine until the firmware is reset or restarted. Observed on
// the connection's own window: its bytes in use, and where a new allocation of the same size lands
// (first fit: on the blocks' address as soon as they are free).

namespace {

// Prepares `model` on `c` (its constants staged in c's window, freed once prepared); the handle.
uint32_t prepareOn(shim::Connection& c, const hal::Model& model) {
    proto::PrepareModelRequest request;
    auto constants = shim::marshalModel(model, c.window(), request.mutable_model());
    REQUIRE(constants.has_value());
    request.set_priority(static_cast<uint32_t>(hal::Priority::MEDIUM));
    request.set_no_autotune(true);
    proto::PrepareModelReply reply;
    auto sent = c.call(proto::METHOD_PREPARE_MODEL, request, reply, kCallTimeout, "prepare");
    INFO((sent ? reply.status().message() : sent.error().message));
    REQUIRE(sent.has_value());
    REQUIRE(reply.status().code() == 0);
    return reply.model_handle();
}

// A chain execution of `handle` on c, its input (ones) and output in one block of c's window.
struct CancellableExecution {
    static constexpr uint32_t kOps = 8, kN = 4096;
    std::vector<shim::WindowBlock> keep;
    uint64_t addr = 0;
    proto::ExecuteRequest request;
    CancellableExecution(shim::Connection& c, uint32_t handle) {
        auto a = c.window().allocate(2 * kN);
        REQUIRE(a.has_value());
        addr = *a;
        keep.emplace_back(&c.window(), addr, 2 * kN);
        std::memset(keep.back().data(), 1, kN);
        std::memset(keep.back().data() + kN, 0, kN);
        request.set_model_handle(handle);
        request.add_inputs()->set_addr(addr);
        request.mutable_inputs(0)->set_length(kN);
        request.add_outputs()->set_addr(addr + kN);
        request.mutable_outputs(0)->set_length(kN);
    }
};

bool overlaps(uint64_t a, uint64_t aBytes, uint64_t b, uint64_t bBytes) {
    return a < b + bBytes && b < a + aBytes;
}

// A block of `bytes` allocated now in `window`: it must not overlap [addr, addr + bytes).
void checkFreshAllocationAvoids(shim::HostWindow& window, uint64_t addr, uint64_t bytes) {
    auto probe = window.allocate(bytes);
    REQUIRE(probe.has_value());
    INFO("held block at " << addr << ", new block at " << *probe << ", " << bytes << " bytes each");
    CHECK_FALSE(overlaps(*probe, bytes, addr, bytes));
    window.free(*probe);
}

shim::ShimOptions cancelOptions(std::chrono::milliseconds pingTimeout) {
    shim::ShimOptions options;
    options.autotune = false;
    options.recovery.watchdogPeriod = std::chrono::milliseconds(0);
    options.recovery.pingTimeout = pingTimeout;  // also the wait for the CancelReply
    options.recovery.stallWindow = std::chrono::milliseconds(300);
    return options;
}

// A loopback firmware with fault injection, a connection to it (its Cancel waits `pingTimeout`),
// a chain model prepared there and one execution's block in the connection's window.
struct CancelFixture {
    static constexpr uint64_t kBlockBytes = 2 * CancellableExecution::kN;
    SharedLoopback f{withFaultInjection()};
    std::shared_ptr<shim::Connection> connection;
    uint64_t baseline = 0;  // the window's bytes in use without the execution's block
    std::optional<CancellableExecution> work;
    explicit CancelFixture(std::chrono::milliseconds pingTimeout) {
        auto opened = shim::Connection::open(f.firmware->connectLoopback(), {}, cancelOptions(pingTimeout));
        REQUIRE(opened.has_value());
        connection = *opened;
        const uint32_t handle =
            prepareOn(*connection, chainModel(CancellableExecution::kOps, CancellableExecution::kN));
        baseline = connection->window().bytesInUse();
        work.emplace(*connection, handle);
    }
};

}  // namespace

TEST_CASE("shim: a timed-out execution's window blocks stay held until the CancelReply comes",
          "[shim][multi-client][cancel]") {
    CancelFixture fx(kCallTimeout);
    SharedLoopback& f = fx.f;
    shim::Connection& c = *fx.connection;
    CancellableExecution& work = *fx.work;
    const uint64_t baseline = fx.baseline, blockBytes = CancelFixture::kBlockBytes;

    // The execution stops before its next operation until a Reset reaches the host; a Cancel of
    // it is answered only once it stopped.
    injectWedge(*f.first, 1);
    proto::ExecuteReply reply;
    Status result;
    auto done = std::async(std::launch::async, [&] {
        shim::Attempt attempt;
        result = c.callCancellable(attempt, proto::METHOD_EXECUTE, work.request, reply,
                                   std::chrono::milliseconds(100), "execute", work.keep);
    });
    for (int i = 0; i < 2000 && c.counters().cancels == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(c.counters().cancels == 1);  // timed out, Cancel sent
    // The Cancel is unanswered: the call still waits, its blocks held and avoided.
    CHECK(done.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout);
    CHECK(c.window().bytesInUse() == baseline + blockBytes);
    checkFreshAllocationAvoids(c.window(), work.addr, blockBytes);

    // A Reset (from another session) frees the wedged item; it stops at its next checkpoint (the
    // Cancel), and then the Cancel is answered.
    proto::ResetRequest reset;
    proto::ResetReply resetReply;
    REQUIRE(f.first->rpc->call(proto::METHOD_RESET, reset, resetReply, kCallTimeout).has_value());
    REQUIRE(done.wait_for(kWait) == std::future_status::ready);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);  // the call's own timeout
    const shim::NpuCounters counters = c.counters();
    CHECK(counters.cancels == 1);
    CHECK(counters.cancelsFailed == 0);
    CHECK(f.first->counters().at("sched.cancelled_running") == 1);
    // Confirmed free: the blocks are the caller's again, not quarantined; once it frees them the
    // next allocation takes their place.
    REQUIRE(work.keep.size() == 1);
    CHECK(c.window().bytesInUse() == baseline + blockBytes);
    work.keep.clear();
    CHECK(c.window().bytesInUse() == baseline);
    auto again = c.window().allocate(blockBytes);
    REQUIRE(again.has_value());
    CHECK(*again == work.addr);
    c.window().free(*again);
}

TEST_CASE("shim: a Cancel that is not answered quarantines the blocks until the firmware is reset",
          "[shim][multi-client][cancel]") {
    CancelFixture fx(std::chrono::milliseconds(200));
    SharedLoopback& f = fx.f;
    shim::Connection& c = *fx.connection;
    CancellableExecution& work = *fx.work;
    const uint64_t baseline = fx.baseline, blockBytes = CancelFixture::kBlockBytes;

    injectWedge(*f.first, 1);  // the execution stops until a Reset: the Cancel goes unanswered
    proto::ExecuteReply reply;
    shim::Attempt attempt;
    const Status result = c.callCancellable(attempt, proto::METHOD_EXECUTE, work.request, reply,
                                            std::chrono::milliseconds(100), "execute", work.keep);
    REQUIRE_FALSE(result.has_value());
    CHECK(attempt.lost == shim::Attempt::Loss::kTimeout);
    shim::NpuCounters counters = c.counters();
    CHECK(counters.cancels == 1);
    CHECK(counters.cancelsFailed == 1);
    // Taken from the caller into quarantine: still allocated, never handed out.
    CHECK(work.keep.empty());
    CHECK(c.window().bytesInUse() == baseline + blockBytes);
    auto probe = c.window().allocate(blockBytes);
    REQUIRE(probe.has_value());
    CHECK_FALSE(overlaps(*probe, blockBytes, work.addr, blockBytes));
    std::memset(c.window().hostPointer(*probe), 0xEE, blockBytes);

    // Recovery of the lost call: the ping finds the item stuck for stallWindow (or, on a loaded
    // machine, goes unanswered), Reset frees it; the firmware is then done with the blocks and
    // the quarantine is emptied.
    std::vector<shim::WindowBlock> none;
    int tries = 0;
    const Status recovered = c.runRecovering("probe", none, [&](shim::Attempt& a) -> Status {
        if (tries++ > 0) return {};
        a.lost = shim::Attempt::Loss::kTimeout;  // what the execution's attempt reported
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, "probe: the execution timed out");
    });
    INFO((recovered ? std::string() : recovered.error().message));
    REQUIRE(recovered.has_value());
    CHECK(c.counters().resets == 1);
    CHECK(c.window().bytesInUse() == baseline + blockBytes);  // the probe only
    CHECK(std::vector<uint8_t>(c.window().hostPointer(*probe), c.window().hostPointer(*probe) + blockBytes) ==
          std::vector<uint8_t>(blockBytes, 0xEE));  // nothing the stopped execution did reached it
    c.window().free(*probe);
    CHECK(c.window().bytesInUse() == baseline);
}

TEST_CASE("a hostile PingReply only steers the verdict: huge, constant or falling values are no progress",
          "[shim][wedge]") {
    proto::PingReply hostile;
    hostile.set_answered_on_arrival(true);
    hostile.set_item_running(true);
    hostile.set_item_running_us(UINT64_MAX);
    hostile.set_progress(UINT64_MAX);
    hostile.set_session_queued(UINT32_MAX);
    CHECK_FALSE(shim::servedEverything(hostile));
    CHECK_FALSE(shim::progressed(hostile, hostile));  // at the top it cannot grow: stuck
    proto::PingReply fell = hostile;
    fell.set_progress(0);
    CHECK_FALSE(shim::progressed(hostile, fell));  // a counter that went back is not progress
    CHECK(shim::progressed(fell, hostile));
    proto::PingReply inOrder;  // a bare firmware (served in order): everything before it was served
    inOrder.set_item_running(true);
    inOrder.set_session_queued(UINT32_MAX);
    CHECK(shim::servedEverything(inOrder));
}
