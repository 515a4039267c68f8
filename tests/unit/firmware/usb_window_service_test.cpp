// The host window over RPC (docs/usb.md) without USB: WindowService on its own (frames picked out
// of a byte stream in any chunking, everything else passed on verbatim), and the shim over a
// transport that shares no memory with the firmware, against the shared-memory loopback.
#include <sys/mman.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "npu.pb.h"
#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/model_builder.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/transport.h"
#include "npu/shim/npu_device.h"
#include "window_service.h"

namespace {

using namespace npu;
using fw::usb::WindowService;

std::vector<uint8_t> frame(uint8_t method, uint64_t callId, const std::string& payload, uint16_t flags = 0) {
    std::vector<uint8_t> f(proto::kFrameHeaderSize + payload.size());
    std::memcpy(f.data() + proto::kFrameHeaderSize, payload.data(), payload.size());
    proto::FrameHeader h;
    h.type = method;
    h.flags = flags;
    h.callId = callId;
    h.length = static_cast<uint32_t>(payload.size());
    proto::encodeFrameHeader(h, f.data() + proto::kFrameHeaderSize, f.data());
    return f;
}

std::vector<uint8_t> windowWrite(uint64_t callId, uint64_t addr, const std::string& data) {
    proto::WindowWriteRequest r;
    r.set_addr(addr);
    r.set_data(data);
    return frame(proto::METHOD_WINDOW_WRITE, callId, r.SerializeAsString());
}

struct Harness {
    std::vector<uint8_t> dram = std::vector<uint8_t>(4096, 0);
    WindowService service{dram.data(), 1024, 2048, 4096};
    std::vector<uint8_t> forwarded;
    std::vector<std::vector<uint8_t>> replies;
    WindowService::ReplySink sink = [this](std::span<const uint8_t> head, std::span<const uint8_t> body) {
        replies.emplace_back(head.begin(), head.end());
        replies.back().insert(replies.back().end(), body.begin(), body.end());
        return true;
    };
    // Feeds `bytes` in pieces of `step` bytes.
    void feed(const std::vector<uint8_t>& bytes, size_t step) {
        for (size_t i = 0; i < bytes.size(); i += step) {
            service.feed(bytes.data() + i, std::min(step, bytes.size() - i), forwarded, sink);
        }
    }
};

proto::FrameHeader header(const std::vector<uint8_t>& f) {
    proto::FrameHeader h;
    REQUIRE(f.size() >= proto::kFrameHeaderSize);
    REQUIRE(proto::parseFrameHeader(f.data(), &h));
    REQUIRE(h.length == f.size() - proto::kFrameHeaderSize);
    REQUIRE(proto::frameCrc(f.data(), f.data() + proto::kFrameHeaderSize, h.length) == h.crc);
    return h;
}

}  // namespace

TEST_CASE("WindowService serves window frames and passes every other byte on verbatim", "[usb]") {
    for (size_t step : {size_t(1), size_t(7), size_t(24), size_t(4096)}) {
        INFO("fed in pieces of " << step);
        Harness h;
        proto::PingRequest ping;
        ping.set_nonce(5);
        const auto pingFrame = frame(proto::METHOD_PING, 1, ping.SerializeAsString());
        const std::vector<uint8_t> garbage = {9, 8, 7, 6, 5};
        auto corrupt = windowWrite(3, 1024, "abc");
        corrupt.back() ^= 1;
        std::vector<uint8_t> stream;
        for (const auto* part : {&garbage, &pingFrame})
            stream.insert(stream.end(), part->begin(), part->end());
        const auto write = windowWrite(2, 1100, "hello window");
        stream.insert(stream.end(), write.begin(), write.end());
        stream.insert(stream.end(), corrupt.begin(), corrupt.end());
        stream.insert(stream.end(), pingFrame.begin(), pingFrame.end());
        h.feed(stream, step);

        std::vector<uint8_t> expected = garbage;
        expected.insert(expected.end(), pingFrame.begin(), pingFrame.end());
        expected.insert(expected.end(), corrupt.begin(), corrupt.end());  // the firmware reports the CRC
        expected.insert(expected.end(), pingFrame.begin(), pingFrame.end());
        CHECK(h.forwarded == expected);
        CHECK(std::memcmp(h.dram.data() + 1100, "hello window", 12) == 0);
        REQUIRE(h.replies.size() == 1);
        const proto::FrameHeader r = header(h.replies[0]);
        CHECK(r.callId == 2);
        CHECK(r.type == proto::METHOD_WINDOW_WRITE);
        CHECK((r.flags & proto::kFlagResponse) != 0);
        CHECK((r.flags & proto::kFlagError) == 0);
    }
}

TEST_CASE("WindowService reads back and refuses ranges outside the window, naming them", "[usb]") {
    Harness h;
    std::memcpy(h.dram.data() + 2000, "0123456789", 10);
    proto::WindowReadRequest read;
    read.set_addr(2000);
    read.set_length(10);
    h.feed(frame(proto::METHOD_WINDOW_READ, 7, read.SerializeAsString()), 4096);
    REQUIRE(h.replies.size() == 1);
    proto::WindowReadReply reply;
    REQUIRE(reply.ParseFromArray(h.replies[0].data() + proto::kFrameHeaderSize,
                                 int(h.replies[0].size() - proto::kFrameHeaderSize)));
    CHECK(reply.data() == "0123456789");

    h.replies.clear();
    h.feed(windowWrite(8, 1000, "x"), 4096);   // below the window
    h.feed(windowWrite(9, 3071, "xy"), 4096);  // runs past its end
    read.set_addr(1024);
    read.set_length(5000);  // more than a chunk
    h.feed(frame(proto::METHOD_WINDOW_READ, 10, read.SerializeAsString()), 4096);
    REQUIRE(h.replies.size() == 3);
    const char* expected[] = {"[1000, +1) is outside the host window [1024, +2048)",
                              "[3071, +2) is outside the host window [1024, +2048)",
                              "5000 bytes asked, at most"};
    for (size_t i = 0; i < 3; ++i) {
        const proto::FrameHeader r = header(h.replies[i]);
        CHECK((r.flags & proto::kFlagError) != 0);
        proto::ErrorReply e;
        REQUIRE(e.ParseFromArray(h.replies[i].data() + proto::kFrameHeaderSize, int(r.length)));
        CHECK(e.status().code() == 4);  // INVALID_ARGUMENT
        CHECK(e.status().message().find(expected[i]) != std::string::npos);
    }
    CHECK(h.forwarded.empty());
    CHECK(h.dram[1000] == 0);
    CHECK(h.dram[3071] == 0);
}

TEST_CASE("WindowService reads a WindowWriteRequest in place as protobuf would parse it", "[usb]") {
    Harness h;
    using namespace std::string_literals;
    // An unknown field first (5: varint 1), addr 1100, then data twice: the last one wins.
    h.feed(frame(proto::METHOD_WINDOW_WRITE, 1,
                 "\x28\x01\x08\xcc\x08\x12\x02"
                 "ab\x12\x02"
                 "cd"s),
           4096);
    // addr only: nothing to write, still a success.
    h.feed(frame(proto::METHOD_WINDOW_WRITE, 2, "\x08\xcc\x08"s), 4096);
    // The data's length runs past the payload; a zero tag inside the payload.
    h.feed(frame(proto::METHOD_WINDOW_WRITE, 3,
                 "\x08\xcc\x08\x12\x0a"
                 "abc"s),
           4096);
    h.feed(frame(proto::METHOD_WINDOW_WRITE, 4, "\x08\xcc\x08\x00\x12\x01x"s), 4096);
    REQUIRE(h.replies.size() == 4);
    CHECK(std::memcmp(h.dram.data() + 1100, "cd", 2) == 0);
    for (size_t i = 0; i < 4; ++i) {
        const proto::FrameHeader r = header(h.replies[i]);
        CHECK(r.callId == i + 1);
        CHECK(((r.flags & proto::kFlagError) != 0) == (i >= 2));
        if (i < 2) continue;
        proto::ErrorReply e;
        REQUIRE(e.ParseFromArray(h.replies[i].data() + proto::kFrameHeaderSize, int(r.length)));
        CHECK(e.status().message().find("WindowWrite: undecodable request") != std::string::npos);
    }
    CHECK(h.dram[1102] == 0);
}

namespace {

// The firmware's end of a channel that shares nothing: window frames served by WindowService
// against the firmware's DRAM, the rest to the firmware, the DRAM fd of the handshake dropped.
class WindowFilter final : public proto::Transport {
public:
    WindowFilter(std::unique_ptr<proto::Transport> inner, WindowService& window)
        : inner_(std::move(inner)), window_(window) {}
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int>) override {
        return inner_->write(bytes);
    }
    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>*,
                               std::chrono::milliseconds timeout) override {
        if (forward_.empty()) {
            std::vector<uint8_t> chunk(256 * 1024);
            auto n = inner_->read(chunk, nullptr, timeout);
            if (!n) return n;
            window_.feed(chunk.data(), *n, forward_,
                         [this](std::span<const uint8_t> head, std::span<const uint8_t> body) {
                             std::vector<uint8_t> frame(head.begin(), head.end());
                             frame.insert(frame.end(), body.begin(), body.end());
                             return inner_->write(frame).has_value();
                         });
            if (forward_.empty()) return proto::fail(proto::Error::Kind::kTimeout, "window traffic only");
        }
        const size_t n = std::min(buffer.size(), forward_.size());
        std::memcpy(buffer.data(), forward_.data(), n);
        forward_.erase(forward_.begin(), forward_.begin() + static_cast<std::ptrdiff_t>(n));
        return n;
    }
    void shutdown() override { inner_->shutdown(); }
    std::string describe() const override { return "window filter over " + inner_->describe(); }
    bool sharesMemory() const override { return false; }

private:
    std::unique_ptr<proto::Transport> inner_;
    WindowService& window_;
    std::vector<uint8_t> forward_;
};

// The host's end: says it shares nothing and never hands on an fd.
class NoSharedMemory final : public proto::Transport {
public:
    explicit NoSharedMemory(std::unique_ptr<proto::Transport> inner) : inner_(std::move(inner)) {}
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        return inner_->write(bytes, fds);
    }
    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>*,
                               std::chrono::milliseconds timeout) override {
        return inner_->read(buffer, nullptr, timeout);
    }
    void shutdown() override { inner_->shutdown(); }
    std::string describe() const override { return "no-shared-memory " + inner_->describe(); }
    bool sharesMemory() const override { return false; }

private:
    std::unique_ptr<proto::Transport> inner_;
};

Result<std::vector<std::vector<uint8_t>>> run(hal::IDevice& device, const framework::TestCase& tc) {
    auto prepared = NPU_TRY(device.prepareModel(tc.model));
    auto request = NPU_TRY(framework::makeRequest(tc));
    NPU_TRY(
        prepared->executeSynchronously(request.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt));
    return framework::readOutputs(request);
}

}  // namespace

// A firmware host whose one client reaches it as over USB: no shared memory, every window byte
// a WINDOW_WRITE / WINDOW_READ call served by `window` over the host's device memory (`dram`).
struct WindowCallFirmware {
    fw::host::FirmwareHostConfig config;
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    uint8_t* dram = nullptr;
    std::unique_ptr<WindowService> window;
    std::unique_ptr<proto::Transport> hostEnd;  // the client's end, for createNpuDevice

    WindowCallFirmware() {
        auto created = fw::host::FirmwareHost::create(config);
        REQUIRE(created.has_value());
        firmware = std::move(*created);
        void* mapped =
            mmap(nullptr, config.dramBytes, PROT_READ | PROT_WRITE, MAP_SHARED, firmware->dramFd(), 0);
        REQUIRE(mapped != MAP_FAILED);
        dram = static_cast<uint8_t*>(mapped);
        window = std::make_unique<WindowService>(dram, config.firmwareDramBytes,
                                                 config.dramBytes - config.firmwareDramBytes,
                                                 config.maxPayloadBytes);
        auto [host, fwEnd] = proto::makeLoopbackPair();
        firmware->start(std::make_unique<WindowFilter>(std::move(fwEnd), *window));
        hostEnd = std::make_unique<NoSharedMemory>(std::move(host));
    }
    ~WindowCallFirmware() {
        firmware->stop();
        firmware.reset();
        if (dram != nullptr) munmap(dram, config.dramBytes);
    }
};

TEST_CASE("the shim over a transport without shared memory gives loopback's bytes", "[usb]") {
    WindowCallFirmware f;
    WindowService& window = *f.window;
    shim::ShimOptions options;
    options.autotune = false;
    auto chunked = shim::createNpuDevice(std::move(f.hostEnd), options);
    REQUIRE(chunked.has_value());
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    auto shared = shim::createNpuDevice(std::move(loop->hostEnd), options);
    REQUIRE(shared.has_value());

    auto reader = framework::CtsReader::open(framework::ctsDataDir() + "/V1_0.jsonl.gz");
    REQUIRE(reader.has_value());
    int compared = 0;
    while (true) {
        auto next = (*reader)->next();
        REQUIRE(next.has_value());
        if (!next->has_value()) break;
        const framework::TestCase& tc = **next;
        auto supported = (*shared)->getSupportedOperations(tc.model);
        if (!supported || std::find(supported->begin(), supported->end(), false) != supported->end())
            continue;
        INFO(tc.name);
        auto expected = run(**shared, tc);
        REQUIRE(expected.has_value());
        auto actual = run(**chunked, tc);
        if (!actual) FAIL(actual.error().message);
        CHECK(*actual == *expected);
        ++compared;
    }
    CHECK(compared >= 10);             // every vector of V1_0 the NPU claims (16 today)
    CHECK(window.bytesWritten() > 0);  // the bytes really travelled as window calls
    CHECK(window.bytesRead() > 0);
    // The session's window (the first slot after the firmware's DRAM) held its tensors; once it
    // is gone, the next client in that slot finds it zeroed.
    const uint8_t* slot = f.dram + f.config.firmwareDramBytes;
    auto slotClear = [&] { return std::all_of(slot, slot + (1 << 20), [](uint8_t b) { return b == 0; }); };
    CHECK_FALSE(slotClear());
    chunked->reset();
    for (int i = 0; i < 400 && !slotClear(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    CHECK(slotClear());
}

TEST_CASE(
    "without shared memory, a model whose constants ride inside the message prepares with no window call",
    "[usb]") {
    WindowCallFirmware f;
    WindowService& window = *f.window;
    shim::ShimOptions options;
    options.autotune = false;
    auto device = shim::createNpuDevice(std::move(f.hostEnd), options);
    REQUIRE(device.has_value());

    // ADD(in [1,4], constant [1,4], activation): both constants CONSTANT_COPY, inside the message.
    framework::TestCase tc;
    hal::ModelBuilder b;
    const auto q8 = hal::OperandType::TENSOR_QUANT8_ASYMM;
    const uint32_t in = b.input(q8, {1, 4}, 0.5f, 0);
    const uint32_t c = b.constant<uint8_t>(q8, {1, 4}, {2, 4, 6, 8}, 0.5f, 0);
    const uint32_t act = b.scalar(0);
    const uint32_t out = b.output(q8, {1, 4}, 1.0f, 0);
    b.operation(hal::OperationType::ADD, {in, c, act}, {out});
    tc.model = b.build();
    tc.inputs = {{2, 2, 2, 2}};
    tc.expectedOutputs = {std::vector<uint8_t>(4)};
    tc.expectedOutputDims = {{1, 4}};
    tc.outputIgnored = {false};

    const uint64_t before = window.bytesWritten();
    auto supported = (*device)->getSupportedOperations(tc.model);
    REQUIRE(supported.has_value());
    auto prepared = (*device)->prepareModel(tc.model);
    INFO((prepared ? std::string() : prepared.error().message));
    REQUIRE(prepared.has_value());
    CHECK(window.bytesWritten() == before);  // no WINDOW_WRITE round trip for the constants
    // The execution's input still travels as a window call.
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    REQUIRE((*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                              std::nullopt));
    CHECK(window.bytesWritten() > before);
    CHECK(framework::readOutputs(*request)[0] == std::vector<uint8_t>{2, 3, 4, 5});
    prepared->reset();
    device->reset();
}
