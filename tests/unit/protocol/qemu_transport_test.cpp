// The qemu transport against the real firmware image on QEMU's mps3-an547 and the real NPU
// bridge: boot and handshake, a corrupt request, a corrupt reply (from the guest), the
// firmware's UART receive ring overfilled, QEMU or the bridge killed mid-call.
// Skipped (exit 77, with the reason) when qemu-system-arm, the image or the bridge is missing.
#include "npu/protocol/qemu_transport.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <thread>

#include "npu.pb.h"
#include "npu/protocol/ddr_ring.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/rpc_client.h"

using namespace npu::proto;
using namespace std::chrono_literals;

namespace {

void skipUnlessQemuRuns() {
    auto paths = resolveQemuPaths({});
    if (!paths) {
        std::printf("SKIP: %s\n", paths.error().message.c_str());
        std::exit(77);
    }
}

struct Booted {
    std::unique_ptr<RpcClient> client;
    Transport* transport = nullptr;  // the client's, for raw writes
    QemuProcesses processes;
    HelloReply hello;
    std::vector<UniqueFd> fds;
};

Booted bootAndHello(const QemuOptions& options = {}) {
    skipUnlessQemuRuns();
    auto transport = startQemu(options);
    REQUIRE(transport.has_value());
    Booted b;
    b.processes = qemuProcesses(**transport);
    b.transport = transport->get();
    auto client = RpcClient::create(std::move(*transport));
    REQUIRE(client.has_value());
    b.client = std::move(*client);
    HelloRequest hello;
    hello.set_major(1);
    hello.set_host_version("qemu transport test");
    auto r = b.client->call(METHOD_HELLO, hello, b.hello, 10s, {}, &b.fds);
    INFO((r ? std::string("ok") : r.error().message));
    REQUIRE(r.has_value());
    return b;
}

}  // namespace

TEST_CASE("the firmware image boots under QEMU and answers Hello and Ping over the qemu transport",
          "[qemu]") {
    Booted b = bootAndHello();
    CHECK(b.hello.status().code() == 0);
    CHECK(b.hello.major() == 1);
    CHECK(b.hello.firmware_version().find("Cortex-M55") != std::string::npos);
    CHECK(b.hello.firmware_version().find("build ") != std::string::npos);
    CHECK(b.hello.hw_id() == 0x4E505531u);  // the simulated NPU's ID register, read through the bridge
    CHECK(b.hello.device_memory_bytes() == (256ull << 20));
    CHECK(b.hello.host_window_addr() == (128ull << 20));
    CHECK(b.hello.host_window_bytes() == (128ull << 20));
    // The emulated DDR arrives with the Hello reply, as the device-DRAM memfd does on unix.
    REQUIRE(b.fds.size() == 1);
    struct stat st {};
    REQUIRE(fstat(b.fds[0].get(), &st) == 0);
    CHECK(st.st_size == (2ll << 30));

    CHECK(b.hello.firmware_version().find(" B flash + ") != std::string::npos);

    // GetCounters: the firmware's own memory (arena high-water marks) and proof that both UART
    // receive interrupts (NVIC 33 and 35) fired: the firmware receives only through them.
    GetCountersRequest getCounters;
    CountersReply counters;
    REQUIRE(b.client->call(METHOD_GET_COUNTERS, getCounters, counters, 5s).has_value());
    std::map<std::string, uint64_t> c;
    for (const auto& counter : counters.counters()) c[counter.name()] = counter.value();
    CHECK(c["rpc.arena_peak_bytes"] > 0);
    CHECK(c["rpc.arena_peak_bytes"] <= c["rpc.arena_bytes"]);
    CHECK(c["runtime.arena_peak_bytes"] > 0);
    CHECK(c["runtime.arena_peak_bytes"] <= c["runtime.arena_bytes"]);
    CHECK(c["qemu.ddr_arena_used_bytes"] > 0);  // the DDR the runtime and RPC arenas were carved from
    CHECK(c["qemu.ddr_arena_used_bytes"] <= c["qemu.ddr_arena_bytes"]);
    CHECK(c["qemu.uart0_rx_interrupts"] > 0);
    CHECK(c["qemu.uart1_rx_interrupts"] > 0);
    CHECK(c["qemu.mailbox_round_trips"] > 0);
    CHECK(c["qemu.mailbox_failures"] == 0);
    CHECK(c["qemu.ring_bytes"] > 0);
    CHECK(c["qemu.clock_backsteps"] == 0);
    CHECK(c["qemu.uart_ring_guard_errors"] == 0);

    for (uint64_t nonce : {1ull, 0xDEADBEEFCAFEull}) {
        PingRequest ping;
        ping.set_nonce(nonce);
        PingReply pong;
        auto r = b.client->call(METHOD_PING, ping, pong, 5s);
        REQUIRE(r.has_value());
        CHECK(pong.nonce() == nonce);
        CHECK(pong.uptime_us() > 0);
    }
}

namespace {

std::vector<uint8_t> pingFrame(uint64_t callId, uint64_t nonce) {
    PingRequest ping;
    ping.set_nonce(nonce);
    const std::string payload = ping.SerializeAsString();
    std::vector<uint8_t> frame(kFrameHeaderSize + payload.size());
    std::memcpy(frame.data() + kFrameHeaderSize, payload.data(), payload.size());
    FrameHeader h;
    h.type = METHOD_PING;
    h.callId = callId;
    h.length = static_cast<uint32_t>(payload.size());
    encodeFrameHeader(h, frame.data() + kFrameHeaderSize, frame.data());
    return frame;
}

struct Collected final : FrameListener {
    std::vector<std::pair<FrameHeader, std::string>> frames;
    int bad = 0;
    void onFrameEvent(const FrameEvent& e) override {
        if (e.kind != FrameEventKind::kFrame) {
            ++bad;
            return;
        }
        frames.emplace_back(e.header, std::string(reinterpret_cast<const char*>(e.payload), e.header.length));
    }
};

}  // namespace

TEST_CASE("a corrupt request frame gets an error reply from the firmware on QEMU and the channel goes on",
          "[qemu]") {
    skipUnlessQemuRuns();
    auto transport = startQemu({});
    REQUIRE(transport.has_value());
    std::vector<uint8_t> bad = pingFrame(41, 5);
    bad.back() ^= 0x40;  // the payload no longer matches the CRC
    REQUIRE((*transport)->write(bad).has_value());
    REQUIRE((*transport)->write(pingFrame(42, 6)).has_value());

    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(4096));
    FrameDecoder decoder(buffer.data(), buffer.size(), 4096);
    Collected got;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (got.frames.size() < 2 && std::chrono::steady_clock::now() < deadline) {
        uint8_t chunk[256];
        auto n = (*transport)->read(chunk, nullptr, 500ms);
        if (n)
            decoder.feed(chunk, *n, got);
        else
            REQUIRE(n.error().kind == Error::Kind::kTimeout);
    }
    REQUIRE(got.frames.size() == 2);
    CHECK(got.bad == 0);
    CHECK(got.frames[0].first.callId == 41);
    CHECK((got.frames[0].first.flags & kFlagError) != 0);
    ErrorReply error;
    REQUIRE(error.ParseFromString(got.frames[0].second));
    CHECK(error.status().message().find("CRC32C") != std::string::npos);
    CHECK(got.frames[1].first.callId == 42);
    PingReply pong;
    REQUIRE(pong.ParseFromString(got.frames[1].second));
    CHECK(pong.nonce() == 6);
}

TEST_CASE("QEMU killed mid-call fails the call as disconnected promptly, naming QEMU's exit", "[qemu]") {
    Booted b = bootAndHello();
    // Freeze the emulator so the call is surely pending, then kill it.
    REQUIRE(kill(b.processes.qemuPid, SIGSTOP) == 0);
    bool stopped = false;  // kill() only queues the stop: wait until the kernel reports it
    for (int i = 0; i < 500 && !stopped; ++i) {
        int status = 0;
        stopped = waitpid(b.processes.qemuPid, &status, WUNTRACED | WNOHANG) == b.processes.qemuPid &&
                  WIFSTOPPED(status);
        if (!stopped) std::this_thread::sleep_for(10ms);
    }
    REQUIRE(stopped);
    auto pending = std::async(std::launch::async, [&] {
        PingRequest ping;
        PingReply pong;
        return b.client->call(METHOD_PING, ping, pong, 30s);
    });
    std::this_thread::sleep_for(300ms);
    const auto killedAt = std::chrono::steady_clock::now();
    REQUIRE(kill(b.processes.qemuPid, SIGKILL) == 0);
    REQUIRE(pending.wait_for(5s) == std::future_status::ready);
    const auto took = std::chrono::steady_clock::now() - killedAt;
    auto r = pending.get();
    REQUIRE_FALSE(r.has_value());
    INFO(r.error().message);
    CHECK(r.error().kind == Error::Kind::kDisconnected);
    CHECK(r.error().message.find("QEMU killed by signal") != std::string::npos);
    CHECK(took < 5s);
}

TEST_CASE("the NPU bridge killed mid-session makes the next call fail as disconnected", "[qemu]") {
    Booted b = bootAndHello();
    REQUIRE(kill(b.processes.bridgePid, SIGKILL) == 0);
    // A Ping needs no NPU register, so one may still pass while the kill is being delivered;
    // within a few calls the transport must notice the dead bridge.
    Result<void> r;
    for (int i = 0; i < 50 && r.has_value(); ++i) {
        PingRequest ping;
        PingReply pong;
        r = b.client->call(METHOD_PING, ping, pong, 10s);
        if (r.has_value()) std::this_thread::sleep_for(50ms);
    }
    REQUIRE_FALSE(r.has_value());
    INFO(r.error().message);
    CHECK(r.error().kind == Error::Kind::kDisconnected);
    CHECK(r.error().message.find("NPU bridge killed by signal") != std::string::npos);
}

namespace {

std::map<std::string, uint64_t> counters(RpcClient& client) {
    GetCountersRequest request;
    CountersReply reply;
    auto r = client.call(METHOD_GET_COUNTERS, request, reply, 10s);
    INFO((r ? std::string("ok") : r.error().message));
    REQUIRE(r.has_value());
    std::map<std::string, uint64_t> c;
    for (const auto& counter : reply.counters()) c[counter.name()] = counter.value();
    return c;
}

Result<void> ping(RpcClient& client, uint64_t nonce, std::chrono::milliseconds timeout = 10s) {
    PingRequest request;
    request.set_nonce(nonce);
    PingReply reply;
    auto r = client.call(METHOD_PING, request, reply, timeout);
    if (r && reply.nonce() != nonce) return fail(Error::Kind::kProtocol, "the Ping reply has another nonce");
    return r;
}

// Flips one byte of the firmware's reply stream, `at` bytes after it is armed: a relay between
// QEMU's UART0 and the RPC layer that corrupts a frame on its way from the guest.
struct Corrupter {
    std::atomic<int64_t> left{-1};  // bytes to let through before the one to flip; -1: disarmed
    std::atomic<int> flipped{0};
    void arm(int64_t at) { left = at; }
    void operator()(std::span<uint8_t> bytes) {
        for (uint8_t& b : bytes) {
            int64_t l = left.load();
            if (l < 0) return;
            left = l - 1;
            if (l == 0) {
                b ^= 0x5A;
                ++flipped;
            }
        }
    }
};

}  // namespace

TEST_CASE("a reply frame corrupted on its way from the guest fails only its call, and the channel resyncs",
          "[qemu]") {
    auto corrupter = std::make_shared<Corrupter>();
    QemuOptions options;
    options.replyTap = [corrupter](std::span<uint8_t> bytes) { (*corrupter)(bytes); };
    Booted b = bootAndHello(options);
    REQUIRE(ping(*b.client, 1).has_value());

    // A payload byte (past the 24-byte header): the CRC no longer matches, the header names the
    // call, so the call fails at once with a protocol error instead of waiting for its timeout.
    corrupter->arm(kFrameHeaderSize + 1);
    auto r = ping(*b.client, 2, 60s);
    REQUIRE(corrupter->flipped == 1);
    REQUIRE_FALSE(r.has_value());
    INFO(r.error().message);
    CHECK(r.error().kind == Error::Kind::kProtocol);
    CHECK_THAT(r.error().message, Catch::Contains("CRC32C mismatch") && Catch::Contains("qemu mps3-an547"));
    CHECK(b.client->badFrames() == 1);
    REQUIRE(ping(*b.client, 3).has_value());

    // The magic: the frame is not recognised at all (garbage, no call id), so its call ends at
    // its timeout, and the decoder finds the next reply's magic.
    const uint64_t badBefore = b.client->badFrames();
    corrupter->arm(0);
    r = ping(*b.client, 4, 2s);
    REQUIRE(corrupter->flipped == 2);
    REQUIRE_FALSE(r.has_value());
    INFO(r.error().message);
    CHECK(r.error().kind == Error::Kind::kTimeout);
    REQUIRE(ping(*b.client, 5).has_value());
    CHECK(b.client->badFrames() > badBefore);  // the skipped bytes, reported when the next magic came

    // The firmware saw nothing wrong: the damage was on the host's side of the wire.
    auto c = counters(*b.client);
    CHECK(c["rpc.bad_frames"] == 0);
    CHECK(c["qemu.mailbox_failures"] == 0);
}

TEST_CASE("more doorbell bytes than the firmware's UART ring holds: back-pressure, no loss, no damage",
          "[qemu]") {
    Booted b = bootAndHello();
    Transport& transport = *b.transport;
    auto before = counters(*b.client);
    // Keep the firmware busy on its request ring (garbage: no byte is a frame magic, so it only
    // counts them) while doorbells arrive faster than its main loop reads them: its UART0 receive
    // ring (256 bytes) fills, the RX interrupt pauses, and QEMU stops taking bytes from the socket.
    constexpr size_t kGarbage = kQemuRingBytes - 4096;  // all the request ring holds, at once
    constexpr size_t kDoorbells = 2048;
    const std::vector<uint8_t> garbage(kGarbage, 0x00);
    size_t rounds = 0;
    std::map<std::string, uint64_t> after;
    do {
        ++rounds;
        REQUIRE(transport.write(garbage).has_value());
        REQUIRE(qemuSendDoorbells(transport, kDoorbells).has_value());
        // Requests ride in the DDR ring, not behind the doorbells: this Ping may overtake them.
        REQUIRE(ping(*b.client, rounds, 60s).has_value());
        after = counters(*b.client);
    } while (after["qemu.uart_rx_ring_full"] == before["qemu.uart_rx_ring_full"] && rounds < 8);
    INFO("rounds " << rounds);
    // Every doorbell still reaches the firmware, however long the back-pressure lasted (bounded
    // wait: QEMU feeds the guest a byte per main-loop iteration).
    for (int i = 0;
         i < 600 && after["qemu.uart0_rx_bytes"] - before["qemu.uart0_rx_bytes"] < rounds * kDoorbells; ++i) {
        std::this_thread::sleep_for(50ms);
        after = counters(*b.client);
    }
    CHECK(after["qemu.uart_rx_ring_full"] > before["qemu.uart_rx_ring_full"]);
    CHECK(after["qemu.uart0_rx_bytes"] - before["qemu.uart0_rx_bytes"] >= rounds * kDoorbells);
    CHECK(after["qemu.uart_overruns"] == 0);
    CHECK(after["qemu.uart_ring_guard_errors"] == 0);
    CHECK(after["rpc.garbage_bytes"] - before["rpc.garbage_bytes"] == rounds * kGarbage);
    CHECK(after["qemu.ring_resyncs"] == 0);
    CHECK(after["qemu.mailbox_failures"] == 0);
    REQUIRE(ping(*b.client, 99).has_value());
}

TEST_CASE("the request ring goes round without touching the firmware's own memory in DDR", "[qemu]") {
    Booted b = bootAndHello();
    GetCapabilitiesRequest query;
    CapabilitiesReply before;
    REQUIRE(b.client->call(METHOD_GET_CAPABILITIES, query, before, 30s).has_value());
    const auto countersBefore = counters(*b.client);
    // Twice all the ring holds (no byte is a frame magic, so the firmware only counts them): the
    // ring's bytes cover every offset of its range at least once. The firmware's arenas (its
    // runtime state first) lie after that range in DDR; they once started inside it, and a
    // client that had sent ~1 MiB of requests overwrote them.
    const std::vector<uint8_t> garbage(kQemuRingBytes - 4096, 0xA5);
    for (int i = 0; i < 2; ++i) REQUIRE(b.transport->write(garbage).has_value());
    REQUIRE(ping(*b.client, 7, 60s).has_value());
    CapabilitiesReply after;
    auto r = b.client->call(METHOD_GET_CAPABILITIES, query, after, 30s);
    INFO((r ? std::string("ok") : r.error().message));
    REQUIRE(r.has_value());
    CHECK(after.SerializeAsString() == before.SerializeAsString());
    const auto countersAfter = counters(*b.client);
    CHECK(countersAfter.at("rpc.garbage_bytes") - countersBefore.at("rpc.garbage_bytes") ==
          2 * garbage.size());
    CHECK(countersAfter.at("runtime.loaded_models") == countersBefore.at("runtime.loaded_models"));
}

TEST_CASE("a fault of the control core halts the image with where and why on its console", "[qemu]") {
    Booted b = bootAndHello();
    InjectFaultsRequest npuFault;
    npuFault.set_hang_at_command(1);
    InjectFaultsReply refused;
    REQUIRE(b.client->call(METHOD_INJECT_FAULTS, npuFault, refused, 5s).has_value());
    CHECK(refused.status().code() == 4);  // INVALID_ARGUMENT: the NPU's faults are the host's
    CHECK(refused.status().message().find("crash_after_ms only") != std::string::npos);

    InjectFaultsRequest crash;
    crash.set_crash_after_ms(1);
    InjectFaultsReply armed;
    REQUIRE(b.client->call(METHOD_INJECT_FAULTS, crash, armed, 5s).has_value());
    CHECK(armed.status().code() == 0);
    std::string console;
    for (int i = 0; i < 1000 && console.find("firmware halted") == std::string::npos; ++i) {
        std::this_thread::sleep_for(10ms);
        console = qemuConsole(*b.transport);
    }
    INFO(console);
    // An undefined instruction (UFSR UNDEFINSTR, CFSR bit 16), escalated (HFSR FORCED).
    CHECK(console.find("firmware halted: hard fault at pc 0x") != std::string::npos);
    CHECK(console.find("CFSR 0x00010000 HFSR 0x40000000") != std::string::npos);
    // The halted core answers nothing more.
    PingRequest ping;
    PingReply pong;
    auto r = b.client->call(METHOD_PING, ping, pong, 500ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kTimeout);
}
