// The NPU over USB, end to end through the Linux USB stack (docs/usb.md): this binary runs inside
// the test VM (scripts/usb-vm.sh test), where npu-usb-gadget serves the firmware behind a
// FunctionFS gadget bound to dummy_hcd, and the host side opens it with libusb.
// Environment (set by usb-vm.sh): NPU_USB_DEVICE (VID:PID:SERIAL), NPU_USB_UDC_FILE (the
// gadget's configfs UDC attribute: "" unplugs, NPU_USB_UDC replugs).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "npu.pb.h"
#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/types.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/rpc_client.h"
#include "npu/protocol/usb_transport.h"
#include "npu/shim/npu_device.h"
#include "usb_test_env.h"

namespace {

using namespace npu;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

proto::UsbDeviceId deviceId() {
    auto id = proto::parseUsbDeviceId(usbtest::env("NPU_USB_DEVICE"));
    REQUIRE(id.has_value());
    return *id;
}

std::unique_ptr<proto::Transport> openTransport() {
    auto t = proto::openUsb(deviceId());
    if (!t) FAIL("openUsb: " << t.error().message);
    return std::move(*t);
}

shim::ShimOptions quickOptions() {
    shim::ShimOptions o;
    o.autotune = false;  // tilings are bit-identical either way; TCG is slow
    o.callTimeout = 20s;
    return o;
}

std::shared_ptr<hal::IDevice> openUsbDevice() {
    auto device = shim::createNpuDevice(openTransport(), quickOptions());
    if (!device) FAIL("createNpuDevice over USB: " << device.error().message);
    return *device;
}

Result<std::vector<std::vector<uint8_t>>> run(hal::IDevice& device, const framework::TestCase& tc) {
    auto prepared = NPU_TRY(device.prepareModel(tc.model));
    auto request = NPU_TRY(framework::makeRequest(tc));
    NPU_TRY(
        prepared->executeSynchronously(request.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt));
    return framework::readOutputs(request);
}

void writeUdc(const std::string& value) {
    std::ofstream udc(usbtest::env("NPU_USB_UDC_FILE"));
    udc << value << "\n";
    udc.flush();
    REQUIRE(udc.good());
}

// Waits (bounded) until the device enumerates again after a replug.
bool waitForDevice(std::chrono::milliseconds limit) {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
        auto list = proto::listUsbDevices(deviceId());
        if (list && !list->empty() && list->front().error.empty()) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

proto::PingReply ping(proto::RpcClient& rpc, uint64_t nonce, std::chrono::milliseconds timeout = 5s) {
    proto::PingRequest request;
    request.set_nonce(nonce);
    proto::PingReply reply;
    auto r = rpc.call(proto::METHOD_PING, request, reply, timeout);
    if (!r) FAIL("ping " << nonce << ": " << r.error().message);
    return reply;
}

}  // namespace

TEST_CASE("the gadget enumerates with the NPU's vendor interface", "[usb]") {
    auto list = proto::listUsbDevices(deviceId());
    REQUIRE(list.has_value());
    REQUIRE(list->size() == 1);
    const proto::UsbDeviceInfo& d = list->front();
    INFO(d.error);
    CHECK(d.error.empty());
    CHECK(d.id.serial == deviceId().serial);
    CHECK(d.manufacturer == "npu-stack");
    CHECK(d.speed.rfind("high", 0) == 0);
    CHECK(d.endpoints.maxPacket == 512);
    CHECK((d.endpoints.bulkOut & 0x80) == 0);
    CHECK((d.endpoints.bulkIn & 0x80) != 0);
    CHECK((d.endpoints.eventIn & 0x80) != 0);
    CHECK(d.endpoints.bulkIn != d.endpoints.eventIn);
}

TEST_CASE("handshake, ping and the session event over USB", "[usb]") {
    auto transport = openTransport();
    CHECK_FALSE(transport->sharesMemory());
    const proto::Transport* raw = transport.get();
    auto rpc = proto::RpcClient::create(std::move(transport));
    REQUIRE(rpc.has_value());
    proto::HelloRequest hello;
    hello.set_major(shim::kProtocolMajor);
    proto::HelloReply reply;
    std::vector<proto::UniqueFd> fds;
    REQUIRE((*rpc)->call(proto::METHOD_HELLO, hello, reply, 5s, {}, &fds).has_value());
    CHECK(reply.major() == shim::kProtocolMajor);
    CHECK(fds.empty());  // nothing is shared over USB
    CHECK(reply.host_window_bytes() > 0);
    for (uint64_t nonce : {1ull, 0xfeedfacecafebeefull, 42ull}) CHECK(ping(**rpc, nonce).nonce() == nonce);
    // The device announces every session on its event endpoint.
    const auto end = Clock::now() + 2s;
    while (proto::usbTransportStats(*raw).eventsReceived == 0 && Clock::now() < end)
        std::this_thread::sleep_for(10ms);
    CHECK(proto::usbTransportStats(*raw).eventsReceived >= 1);
    CHECK(proto::usbTransportStats(*raw).lastSession >= 1);
}

// Several calls in flight whose replies all arrive before anyone reads: the transport's two
// queued reads fill up and it moves the oldest reply aside to keep a read pending; every reply
// must still come out whole and in its place (1 MiB window reads and small pings, mixed).
TEST_CASE("replies that arrive while nobody reads come out whole and in order", "[usb]") {
    auto rpc = proto::RpcClient::create(openTransport());
    REQUIRE(rpc.has_value());
    proto::HelloRequest hello;
    hello.set_major(shim::kProtocolMajor);
    proto::HelloReply helloReply;
    REQUIRE((*rpc)->call(proto::METHOD_HELLO, hello, helloReply, 5s).has_value());
    const size_t chunk = helloReply.max_payload_bytes() - 256;
    std::string data(chunk, '\0');
    std::mt19937 random(7);
    for (char& c : data) c = static_cast<char>(random());
    proto::WindowWriteRequest write;
    write.set_addr(helloReply.host_window_addr());
    write.set_data(data);
    proto::WindowWriteReply wrote;
    REQUIRE((*rpc)->call(proto::METHOD_WINDOW_WRITE, write, wrote, 10s).has_value());
    REQUIRE(wrote.status().code() == 0);

    constexpr int kCalls = 6;
    proto::PingRequest pings[kCalls];
    proto::PingReply pingReplies[kCalls];
    proto::WindowReadRequest read;
    read.set_addr(helloReply.host_window_addr());
    read.set_length(static_cast<uint32_t>(chunk));
    proto::WindowReadReply readReplies[kCalls];
    std::vector<proto::RpcClient::InFlight> calls;
    for (int i = 0; i < kCalls; ++i) {
        auto started = i % 2 == 0 ? (*rpc)->start(proto::METHOD_WINDOW_READ, read, readReplies[i]) : [&] {
            pings[i].set_nonce(1000 + static_cast<uint64_t>(i));
            return (*rpc)->start(proto::METHOD_PING, pings[i], pingReplies[i]);
        }();
        REQUIRE(started.has_value());
        calls.push_back(std::move(*started));
    }
    std::this_thread::sleep_for(1s);  // let the replies arrive with nobody reading (not a check)
    for (int i = 0; i < kCalls; ++i) {
        INFO("call " << i);
        REQUIRE((*rpc)->finish(calls[static_cast<size_t>(i)], 20s).has_value());
        if (i % 2 == 0) {
            CHECK(readReplies[i].data() == data);
        } else {
            CHECK(pingReplies[i].nonce() == 1000 + static_cast<uint64_t>(i));
        }
    }
    CHECK(ping(**rpc, 77).nonce() == 77);
}

// The "type" names of the objects in a CTS line whose next key is `next`, read without parsing
// the line: the corpus is tens of MB of JSON, minutes of parsing on the VM's emulated CPU.
// Operations begin {"type":"NAME","inputs", operands {"type":"NAME","dims".
std::set<std::string> typesOf(const std::string& line, const std::string& next) {
    static const std::string open = "{\"type\":\"";
    const std::string after = "\",\"" + next + "\"";
    std::set<std::string> types;
    for (size_t at = line.find(open); at != std::string::npos; at = line.find(open, at + 1)) {
        const size_t name = at + open.size();
        const size_t close = line.find('"', name);
        if (close == std::string::npos) break;
        if (line.compare(close, after.size(), after) == 0) types.insert(line.substr(name, close - name));
    }
    return types;
}

// Every operation type the NPU claims, each through at least one CTS vector: over the corpus in
// file order, a vector is run when it brings an operation type not covered yet and the loopback
// device claims all of its operations. A kind of vector (its operation and operand types) is
// given up after kTries were not claimed whole (the NPU claims, say, only quantized forms).
TEST_CASE("CTS vectors of every operation type the NPU claims give loopback's bytes over USB", "[usb]") {
    constexpr int kTries = 2;
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    auto loopback = shim::createNpuDevice(std::move(loop->hostEnd), quickOptions());
    REQUIRE(loopback.has_value());
    auto usb = openUsbDevice();
    std::set<std::string> covered;
    std::map<std::string, int> refused;
    std::vector<std::string> ran;
    for (const char* file : {"V1_0.jsonl.gz", "V1_1.jsonl.gz", "V1_2.jsonl.gz", "V1_3.jsonl.gz"}) {
        auto reader = framework::CtsReader::open(framework::ctsDataDir() + "/" + file);
        REQUIRE(reader.has_value());
        std::string line;
        for (;;) {
            auto got = (*reader)->nextLine(line);
            REQUIRE(got.has_value());
            if (!*got) break;
            const std::set<std::string> types = typesOf(line, "inputs");
            std::string kind;
            for (const std::set<std::string>& part : {types, typesOf(line, "dims")})
                for (const std::string& t : part) kind += t + " ";
            const bool bringsNew = std::any_of(types.begin(), types.end(),
                                               [&](const std::string& t) { return !covered.count(t); });
            if (!bringsNew || refused[kind] >= kTries) continue;
            auto tc = framework::parseCtsLine(line, (*reader)->where());
            REQUIRE(tc.has_value());
            auto supported = (*loopback)->getSupportedOperations(tc->model);
            if (tc->expectFailure || !supported ||
                std::find(supported->begin(), supported->end(), false) != supported->end()) {
                ++refused[kind];
                continue;
            }
            INFO((*reader)->where() << ": " << tc->name);
            auto viaUsbClaims = usb->getSupportedOperations(tc->model);
            REQUIRE(viaUsbClaims.has_value());
            CHECK(*viaUsbClaims == *supported);
            auto expected = run(**loopback, *tc);
            REQUIRE(expected.has_value());
            auto actual = run(*usb, *tc);
            if (!actual) FAIL("over USB: " << actual.error().message);
            CHECK(*actual == *expected);
            covered.insert(types.begin(), types.end());
            ran.push_back(tc->name);
        }
    }
    std::string names;
    for (const std::string& t : covered) names += " " + t;
    std::printf("usb CTS subset: %zu vectors covering %zu operation types:%s\n", ran.size(), covered.size(),
                names.c_str());
    CHECK(covered.size() >= 10);
}

TEST_CASE("a model with several MiB of weights travels in chunks and matches loopback", "[usb]") {
    // FULLY_CONNECTED 1x2048 -> 2048 (uint8): 4 MiB of weights, more than four window chunks.
    constexpr uint32_t kIn = 2048, kOut = 2048;
    framework::TestCase tc;
    auto& sg = tc.model.main;
    std::mt19937 rng(7);
    auto operand = [&](hal::OperandType type, std::vector<uint32_t> dims, hal::OperandLifeTime life,
                       float scale, int32_t zp) {
        hal::Operand o;
        o.type = type;
        o.dimensions = std::move(dims);
        o.lifetime = life;
        o.scale = scale;
        o.zeroPoint = zp;
        sg.operands.push_back(o);
        return static_cast<uint32_t>(sg.operands.size() - 1);
    };
    auto constant = [&](uint32_t index, std::vector<uint8_t> bytes) {
        const uint32_t offset = static_cast<uint32_t>(tc.model.operandValues.size());
        tc.model.operandValues.insert(tc.model.operandValues.end(), bytes.begin(), bytes.end());
        sg.operands[index].location = {0, offset, static_cast<uint32_t>(bytes.size())};
    };
    auto randomBytes = [&](size_t n) {
        std::vector<uint8_t> v(n);
        for (auto& b : v) b = static_cast<uint8_t>(rng());
        return v;
    };
    using hal::OperandLifeTime;
    using hal::OperandType;
    const uint32_t in =
        operand(OperandType::TENSOR_QUANT8_ASYMM, {1, kIn}, OperandLifeTime::SUBGRAPH_INPUT, 0.05f, 128);
    const uint32_t w =
        operand(OperandType::TENSOR_QUANT8_ASYMM, {kOut, kIn}, OperandLifeTime::CONSTANT_COPY, 0.01f, 120);
    constant(w, randomBytes(size_t(kIn) * kOut));
    const uint32_t b = operand(OperandType::TENSOR_INT32, {kOut}, OperandLifeTime::CONSTANT_COPY, 0.0005f, 0);
    constant(b, std::vector<uint8_t>(kOut * 4, 0));
    const uint32_t act = operand(OperandType::INT32, {}, OperandLifeTime::CONSTANT_COPY, 0, 0);
    constant(act, std::vector<uint8_t>(4, 0));
    const uint32_t out =
        operand(OperandType::TENSOR_QUANT8_ASYMM, {1, kOut}, OperandLifeTime::SUBGRAPH_OUTPUT, 2.0f, 128);
    sg.operations.push_back({hal::OperationType::FULLY_CONNECTED, {in, w, b, act}, {out}});
    sg.inputIndexes = {in};
    sg.outputIndexes = {out};
    tc.inputs.push_back(randomBytes(kIn));
    tc.expectedOutputs.emplace_back(kOut);
    tc.expectedOutputDims.push_back({1, kOut});
    tc.outputIgnored.push_back(false);

    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    auto loopback = shim::createNpuDevice(std::move(loop->hostEnd), quickOptions());
    REQUIRE(loopback.has_value());
    auto usb = openUsbDevice();
    auto supported = usb->getSupportedOperations(tc.model);
    REQUIRE(supported.has_value());
    REQUIRE(supported->at(0));
    auto expected = run(**loopback, tc);
    REQUIRE(expected.has_value());
    auto actual = run(*usb, tc);
    if (!actual) FAIL("over USB: " << actual.error().message);
    CHECK(*actual == *expected);
}

TEST_CASE("a window access outside the host window is refused with the range named", "[usb]") {
    auto rpc = proto::RpcClient::create(openTransport());
    REQUIRE(rpc.has_value());
    proto::WindowWriteRequest request;
    request.set_addr(0);  // firmware DRAM, not the host window
    request.set_data(std::string(16, 'x'));
    proto::WindowWriteReply reply;
    auto r = (*rpc)->call(proto::METHOD_WINDOW_WRITE, request, reply, 5s);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == proto::Error::Kind::kRemote);
    CHECK(r.error().remoteCode == static_cast<uint32_t>(hal::ErrorStatus::INVALID_ARGUMENT));
    CHECK(r.error().message.find("outside the host window") != std::string::npos);
    CHECK(ping(**rpc, 9).nonce() == 9);  // and the device carries on
}

TEST_CASE("corrupt and truncated frames on the wire get errors and the device resynchronises", "[usb]") {
    auto transport = openTransport();
    // Garbage, then a Ping frame whose payload was corrupted after its CRC was computed.
    const uint8_t garbage[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    REQUIRE(transport->write(garbage).has_value());
    proto::PingRequest p;
    p.set_nonce(77);
    std::string payload = p.SerializeAsString();
    std::vector<uint8_t> frame(proto::kFrameHeaderSize + payload.size());
    std::memcpy(frame.data() + proto::kFrameHeaderSize, payload.data(), payload.size());
    proto::FrameHeader h;
    h.type = proto::METHOD_PING;
    h.callId = 1000;
    h.length = static_cast<uint32_t>(payload.size());
    proto::encodeFrameHeader(h, frame.data() + proto::kFrameHeaderSize, frame.data());
    frame.back() ^= 0x40;
    REQUIRE(transport->write(frame).has_value());
    // A truncated frame: a header announcing 40 bytes followed by 10; the next frame's bytes
    // complete it (CRC mismatch), so one later call may be lost but the stream recovers.
    h.length = 40;
    h.callId = 1001;
    std::vector<uint8_t> truncated(proto::kFrameHeaderSize + 10, 0x55);
    proto::encodeFrameHeader(h, truncated.data() + proto::kFrameHeaderSize, truncated.data());
    REQUIRE(transport->write(truncated).has_value());

    auto rpc = proto::RpcClient::create(std::move(transport));
    REQUIRE(rpc.has_value());
    bool answered = false;
    for (int attempt = 0; attempt < 4 && !answered; ++attempt) {
        proto::PingRequest request;
        request.set_nonce(500 + attempt);
        proto::PingReply reply;
        auto r = (*rpc)->call(proto::METHOD_PING, request, reply, 1500ms);
        answered = r.has_value() && reply.nonce() == uint64_t(500 + attempt);
    }
    CHECK(answered);
    // The device's error replies to the bad frames are counted, never fatal.
    CHECK((*rpc)->unknownResponses() + (*rpc)->badFrames() >= 1);
    CHECK((*rpc)->connected());
}

TEST_CASE("a second host process gets a clear busy error while the device is claimed", "[usb]") {
    auto transport = openTransport();
    pid_t child = 0;
    std::string self = usbtest::selfPath();
    char probe[] = "--busy-probe";
    char* argv[] = {self.data(), probe, nullptr};
    REQUIRE(posix_spawn(&child, self.c_str(), nullptr, nullptr, argv, environ) == 0);
    int status = 0;
    const auto end = Clock::now() + 20s;
    pid_t done = 0;
    while ((done = waitpid(child, &status, WNOHANG)) == 0 && Clock::now() < end)
        std::this_thread::sleep_for(20ms);
    if (done == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        FAIL("the busy probe hung");
    }
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == usbtest::kBusyProbeSawBusy);
    // The owner is unaffected.
    auto rpc = proto::RpcClient::create(std::move(transport));
    REQUIRE(rpc.has_value());
    CHECK(ping(**rpc, 3).nonce() == 3);
}

TEST_CASE("unplugging mid-call gives DEVICE_UNAVAILABLE within the timeout; a replug reconnects", "[usb]") {
    shim::ShimOptions options = quickOptions();
    options.callTimeout = 5s;
    auto device = shim::createNpuDevice(openTransport(), options);
    REQUIRE(device.has_value());
    // Calls in a loop; the gadget is unbound (the cable pulled) while they run.
    std::thread unplug([] {
        std::this_thread::sleep_for(300ms);
        writeUdc("");
    });
    const auto start = Clock::now();
    Status last;
    auto lastCallStart = start;
    while (Clock::now() - start < 10s) {
        lastCallStart = Clock::now();
        auto caps = (*device)->getCapabilities();
        if (!caps) {
            last = std::unexpected(caps.error());
            break;
        }
    }
    unplug.join();
    const auto failedAfter =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - lastCallStart);
    REQUIRE_FALSE(last.has_value());
    INFO(last.error().message);
    CHECK(last.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK(failedAfter < options.callTimeout + 1s);
    // Later calls fail at once, they do not hang.
    auto again = (*device)->getCapabilities();
    CHECK_FALSE(again.has_value());

    writeUdc(usbtest::env("NPU_USB_UDC"));
    REQUIRE(waitForDevice(10s));
    auto reconnected = openUsbDevice();
    auto caps = reconnected->getCapabilities();
    CHECK(caps.has_value());
}

TEST_CASE("npu info --transport usb lists the device, its endpoints and its firmware", "[usb]") {
    const std::string out = usbtest::runCapture({NPU_CLI_PATH, "info", "--transport", "usb", "--json"});
    auto j = nlohmann::json::parse(out, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    REQUIRE(j.contains("usb_devices"));
    REQUIRE(j["usb_devices"].size() == 1);
    const auto& d = j["usb_devices"][0];
    CHECK(d["id"] == usbtest::env("NPU_USB_DEVICE"));
    CHECK(d["max_packet"] == 512);
    CHECK(d["bulk_out"] != d["bulk_in"]);
    CHECK(d["firmware"]["version"] == j["firmware"]["version"]);
    CHECK(j["driver"]["transport"] == "usb");
}
