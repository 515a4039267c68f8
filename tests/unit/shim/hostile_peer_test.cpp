// A hostile or broken firmware peer: every size, offset and fd of its handshake is checked before
// use. A DRAM fd smaller than the window it advertises would otherwise be mapped as is, and the
// first access past its end would kill the client with SIGBUS.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "npu.pb.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/transport.h"
#include "npu/shim/npu_device.h"

using namespace npu;
using namespace std::chrono_literals;

namespace {

// Reads one request frame's header (and skips its payload); returns its call id.
uint64_t readRequest(proto::Transport& t) {
    std::vector<uint8_t> bytes;
    std::vector<uint8_t> chunk(4096);
    proto::FrameHeader h;
    while (true) {
        auto n = t.read(chunk, nullptr, 5000ms);
        REQUIRE(n.has_value());
        bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(*n));
        if (bytes.size() >= proto::kFrameHeaderSize && proto::parseFrameHeader(bytes.data(), &h) &&
            bytes.size() >= proto::kFrameHeaderSize + h.length) {
            return h.callId;
        }
    }
}

void reply(proto::Transport& t, uint64_t callId, const proto::HelloReply& hello, int fd) {
    const std::string payload = hello.SerializeAsString();
    proto::FrameHeader h;
    h.type = proto::METHOD_HELLO;
    h.flags = proto::kFlagResponse;
    h.callId = callId;
    h.length = static_cast<uint32_t>(payload.size());
    std::vector<uint8_t> frame(proto::kFrameHeaderSize + payload.size());
    std::memcpy(frame.data() + proto::kFrameHeaderSize, payload.data(), payload.size());
    proto::encodeFrameHeader(h, frame.data() + proto::kFrameHeaderSize, frame.data());
    const int fds[1] = {fd};
    REQUIRE(t.write(frame, std::span<const int>(fds, 1)).has_value());
}

proto::UniqueFd memfd(size_t bytes, bool seal) {
    proto::UniqueFd fd(::memfd_create("hostile-dram", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    REQUIRE(fd.valid());
    REQUIRE(::ftruncate(fd.get(), static_cast<off_t>(bytes)) == 0);
    if (seal) REQUIRE(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
    return fd;
}

// The handshake against a fake firmware that answers Hello with `hello` and the DRAM fd `fd`.
Result<std::shared_ptr<hal::IDevice>> handshake(const proto::HelloReply& hello, int fd) {
    auto [host, firmware] = proto::makeLoopbackPair();
    std::thread peer([&, fw = firmware.get()] { reply(*fw, readRequest(*fw), hello, fd); });
    shim::ShimOptions options;
    options.callTimeout = 5000ms;
    auto device = shim::createNpuDevice(std::move(host), options);
    peer.join();
    return device;
}

proto::HelloReply helloWithWindow(uint64_t addr, uint64_t bytes) {
    proto::HelloReply h;
    h.set_major(shim::kProtocolMajor);
    h.set_minor(0);
    h.set_firmware_version("hostile");
    h.set_device_memory_bytes(addr + bytes);
    h.set_host_window_addr(addr);
    h.set_host_window_bytes(bytes);
    return h;
}

}  // namespace

TEST_CASE("a DRAM fd smaller than the advertised window is refused, never mapped", "[shim][hostile]") {
    auto fd = memfd(4096, true);
    auto device = handshake(helloWithWindow(0, 1 << 20), fd.get());
    REQUIRE_FALSE(device.has_value());
    CHECK(device.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK_THAT(device.error().message, Catch::Contains("holds 4096 bytes"));
}

TEST_CASE("a window past the end of the DRAM fd, or overflowing, is refused", "[shim][hostile]") {
    auto fd = memfd(1 << 20, true);
    auto past = handshake(helloWithWindow(1 << 20, 4096), fd.get());
    REQUIRE_FALSE(past.has_value());
    CHECK_THAT(past.error().message, Catch::Contains("must lie inside it"));
    auto wrap = handshake(helloWithWindow(~uint64_t{0} - 100, 4096), fd.get());
    REQUIRE_FALSE(wrap.has_value());
    CHECK(wrap.error().status == hal::ErrorStatus::DEVICE_UNAVAILABLE);
}

TEST_CASE("a DRAM memfd that the peer could shrink later is refused", "[shim][hostile]") {
    auto fd = memfd(1 << 20, false);
    auto device = handshake(helloWithWindow(0, 1 << 20), fd.get());
    REQUIRE_FALSE(device.has_value());
    CHECK_THAT(device.error().message, Catch::Contains("F_SEAL_SHRINK"));
}

TEST_CASE("a DRAM fd that is not a memory file is refused", "[shim][hostile]") {
    int pipeFds[2];
    REQUIRE(::pipe(pipeFds) == 0);
    proto::UniqueFd r(pipeFds[0]), w(pipeFds[1]);
    auto device = handshake(helloWithWindow(0, 4096), r.get());
    REQUIRE_FALSE(device.has_value());
    CHECK_THAT(device.error().message, Catch::Contains("not a memory file"));
}

TEST_CASE("a well-formed sealed window is accepted", "[shim][hostile]") {
    auto fd = memfd(1 << 20, true);
    auto device = handshake(helloWithWindow(4096, (1 << 20) - 4096), fd.get());
    CHECK(device.has_value());
}
