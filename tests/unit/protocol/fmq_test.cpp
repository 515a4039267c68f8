// The fast message queue of a burst (npu/protocol/fmq.h): bytes both ways through the rings,
// wrap-around and streaming past the ring's size, the poll window and the doorbell, timeouts,
// shutdown and peer death, and a hostile peer: every fd and every shared word it controls.
#include "npu/protocol/fmq.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace npu::proto;
using namespace std::chrono_literals;

namespace {

struct Pair {
    std::unique_ptr<Transport> host;
    std::unique_ptr<Transport> firmware;
};

FmqOptions smallRings(std::chrono::microseconds pollWindow = 50us) {
    FmqOptions o;
    o.ringBytes = kFmqMinRingBytes;
    o.pollWindow = pollWindow;
    return o;
}

Pair makePair(const FmqOptions& hostOptions = smallRings(), FmqOptions firmwareOptions = smallRings()) {
    auto end = createFmq(hostOptions);
    REQUIRE(end.has_value());
    auto fw = attachFmq(std::move(end->memfd), std::move(end->doorbell), firmwareOptions);
    REQUIRE(fw.has_value());
    return {std::move(end->transport), std::move(*fw)};
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 9));
    return v;
}

std::vector<uint8_t> readExactly(Transport& t, size_t n) {
    std::vector<uint8_t> out, buf(16 * 1024);
    while (out.size() < n) {
        auto r = t.read(std::span(buf.data(), std::min(buf.size(), n - out.size())), nullptr, 5000ms);
        REQUIRE(r.has_value());
        out.insert(out.end(), buf.begin(), buf.begin() + static_cast<long>(*r));
    }
    return out;
}

// A queue file as a host would make it, for the hostile cases to spoil.
UniqueFd queueFile(uint32_t ringBytes, bool seal = true, uint32_t magic = kFmqMagic,
                   uint32_t version = kFmqVersion, uint64_t size = 0) {
    UniqueFd fd(memfd_create("fmq-test", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    REQUIRE(fd.valid());
    REQUIRE(ftruncate(fd.get(), static_cast<off_t>(size != 0 ? size : fmqFileBytes(ringBytes))) == 0);
    const uint32_t header[3] = {magic, version, ringBytes};
    if (size == 0 || size >= sizeof header)
        REQUIRE(pwrite(fd.get(), header, sizeof header, 0) == ssize_t(sizeof header));
    if (seal) REQUIRE(fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
    return fd;
}

UniqueFd streamSocket() {
    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    close(pair[1]);
    return UniqueFd(pair[0]);
}

std::string attachError(UniqueFd memfd, UniqueFd doorbell) {
    auto t = attachFmq(std::move(memfd), std::move(doorbell), smallRings());
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().kind == Error::Kind::kInvalidArgument);
    return t.error().message;
}

}  // namespace

TEST_CASE("fmq: messages both ways, in order, with nothing lost") {
    auto [host, fw] = makePair();
    for (int i = 0; i < 200; ++i) {
        const auto request = pattern(100 + static_cast<size_t>(i) * 13, static_cast<uint8_t>(i));
        REQUIRE(host->write(request).has_value());
        CHECK(readExactly(*fw, request.size()) == request);
        const auto reply = pattern(40 + static_cast<size_t>(i), static_cast<uint8_t>(i + 1));
        REQUIRE(fw->write(reply).has_value());
        CHECK(readExactly(*host, reply.size()) == reply);
    }
}

TEST_CASE("fmq: a write larger than the ring streams through while the peer reads") {
    auto [host, fw] = makePair();
    const auto big = pattern(5 * kFmqMinRingBytes + 123, 9);  // wraps the ring several times
    std::vector<uint8_t> got;
    std::thread reader([&, &fwEnd = fw] { got = readExactly(*fwEnd, big.size()); });
    REQUIRE(host->write(big).has_value());
    reader.join();
    CHECK(got == big);
}

TEST_CASE("fmq: a reader asleep on the doorbell is woken, with and without a poll window") {
    for (auto window : {0us, 50us}) {
        auto [host, fw] = makePair(smallRings(window), smallRings(window));
        std::vector<uint8_t> got;
        std::thread reader([&, &fwEnd = fw] { got = readExactly(*fwEnd, 3); });
        std::this_thread::sleep_for(30ms);  // long past the window: the reader sleeps
        const uint8_t bytes[3] = {1, 2, 3};
        REQUIRE(host->write(bytes).has_value());
        reader.join();
        CHECK(got == std::vector<uint8_t>{1, 2, 3});
    }
}

TEST_CASE("fmq: timeouts, shutdown and a peer that goes") {
    auto [host, fw] = makePair();
    uint8_t buf[16];
    SECTION("nothing arrives: kTimeout after about the timeout; 0 ms only looks") {
        const auto start = std::chrono::steady_clock::now();
        auto r = host->read(buf, nullptr, 50ms);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kTimeout);
        CHECK(std::chrono::steady_clock::now() - start >= 45ms);
        auto now = host->read(buf, nullptr, 0ms);
        REQUIRE_FALSE(now.has_value());
        CHECK(now.error().kind == Error::Kind::kTimeout);
    }
    SECTION("shutdown wakes a blocked reader, and later calls fail kDisconnected") {
        std::atomic<bool> done{false};
        Result<size_t> r = size_t{0};
        std::thread reader([&, &fwEnd = fw] {
            r = fwEnd->read(buf, nullptr, 10000ms);
            done = true;
        });
        std::this_thread::sleep_for(20ms);
        fw->shutdown();
        reader.join();
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kDisconnected);
        const uint8_t one = 1;
        CHECK(fw->write(std::span(&one, 1)).error().kind == Error::Kind::kDisconnected);
    }
    SECTION("the peer's end goes: what it wrote is still read, then kDisconnected at once") {
        const uint8_t bytes[2] = {7, 8};
        REQUIRE(fw->write(bytes).has_value());
        fw.reset();
        CHECK(readExactly(*host, 2) == std::vector<uint8_t>{7, 8});
        const auto start = std::chrono::steady_clock::now();
        auto r = host->read(buf, nullptr, 10000ms);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kDisconnected);
        CHECK(std::chrono::steady_clock::now() - start < 5000ms);
        CHECK_FALSE(host->write(bytes).has_value());
    }
}

TEST_CASE("fmq: fds are refused; a full ring fails at once where writes must not wait") {
    FmqOptions fwOptions = smallRings();
    fwOptions.writeTimeout = 0ms;
    auto [host, fw] = makePair(smallRings(), fwOptions);
    const uint8_t one = 1;
    const int fds[1] = {0};
    auto withFd = host->write(std::span(&one, 1), fds);
    REQUIRE_FALSE(withFd.has_value());
    CHECK(withFd.error().kind == Error::Kind::kInvalidArgument);

    const auto most = pattern(kFmqMinRingBytes - 10, 3);
    REQUIRE(fw->write(most).has_value());  // the host does not read
    const auto more = pattern(20, 4);
    auto full = fw->write(more);
    REQUIRE_FALSE(full.has_value());
    CHECK(full.error().kind == Error::Kind::kResourceExhausted);
    CHECK(full.error().message.find("nothing written") != std::string::npos);
    CHECK(readExactly(*host, most.size()) == most);  // and nothing of `more` in the stream
    REQUIRE(fw->write(more).has_value());
    CHECK(readExactly(*host, more.size()) == more);
}

TEST_CASE("fmq: a writer the reader ignores times out") {
    FmqOptions hostOptions = smallRings();
    hostOptions.writeTimeout = 50ms;
    auto [host, fw] = makePair(hostOptions);
    const auto big = pattern(kFmqMinRingBytes + 1, 1);
    auto r = host->write(big);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kTimeout);
}

TEST_CASE("fmq: between processes, the doorbell tells a dead peer") {
    auto end = createFmq(smallRings());
    REQUIRE(end.has_value());
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        end->transport.reset();  // the child is the firmware's end only
        auto fw = attachFmq(std::move(end->memfd), std::move(end->doorbell), smallRings());
        if (!fw) _exit(2);
        uint8_t buf[64];
        for (int i = 0; i < 100; ++i) {  // echo 100 messages, then die without a word
            auto n = (*fw)->read(buf, nullptr, 5000ms);
            if (!n || !(*fw)->write(std::span(buf, *n))) _exit(3);
        }
        _exit(0);
    }
    end->memfd.reset();
    end->doorbell.reset();  // the child holds the only other end
    for (int i = 0; i < 100; ++i) {
        const auto msg = pattern(1 + static_cast<size_t>(i % 60), static_cast<uint8_t>(i));
        REQUIRE(end->transport->write(msg).has_value());
        CHECK(readExactly(*end->transport, msg.size()) == msg);
    }
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    uint8_t buf[4];
    auto r = end->transport->read(buf, nullptr, 10000ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kDisconnected);
}

TEST_CASE("fmq: a peer that corrupts the shared positions is a kIo error, never a read out of bounds") {
    auto end = createFmq(smallRings());
    REQUIRE(end.has_value());
    auto* base = static_cast<uint8_t*>(mmap(nullptr, fmqFileBytes(kFmqMinRingBytes), PROT_READ | PROT_WRITE,
                                            MAP_SHARED, end->memfd.get(), 0));
    REQUIRE(base != MAP_FAILED);
    auto word = [&](int ring, size_t offset) {
        return reinterpret_cast<volatile uint64_t*>(base + kFmqControlOffset + kFmqControlBytes * ring +
                                                    offset);
    };
    uint8_t buf[64];
    SECTION("a tail far beyond the head (host reads ring 1)") {
        *word(1, kFmqTailOffset) = uint64_t{kFmqMinRingBytes} + 1;
        auto r = end->transport->read(buf, nullptr, 100ms);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kIo);
        CHECK(r.error().message.find("write position 65537") != std::string::npos);
    }
    SECTION("a tail behind the head") {
        *word(1, kFmqTailOffset) = ~uint64_t{0};
        auto r = end->transport->read(buf, nullptr, 100ms);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kIo);
    }
    SECTION("a head ahead of what was written (host writes ring 0)") {
        *word(0, kFmqHeadOffset) = 1000;
        const uint8_t one = 1;
        auto r = end->transport->write(std::span(&one, 1));
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kIo);
        CHECK(r.error().message.find("read position 1000") != std::string::npos);
    }
    SECTION("the header rewritten after the attach changes nothing: the ring size was copied") {
        auto fw = attachFmq(std::move(end->memfd), std::move(end->doorbell), smallRings());
        REQUIRE(fw.has_value());
        const uint32_t huge = kFmqMaxRingBytes;
        std::memcpy(base + 8, &huge, sizeof huge);
        const auto msg = pattern(kFmqMinRingBytes / 2, 5);
        REQUIRE(end->transport->write(msg).has_value());
        CHECK(readExactly(**fw, msg.size()) == msg);
    }
    munmap(base, fmqFileBytes(kFmqMinRingBytes));
}

TEST_CASE("fmq: the firmware's end refuses every fd that is not a queue it can trust") {
    const uint32_t ring = kFmqMinRingBytes;
    CHECK(attachError(UniqueFd(), streamSocket()).find("both needed") != std::string::npos);
    CHECK(attachError(streamSocket(), streamSocket()).find("a socket, not a memfd") != std::string::npos);
    int pipeFds[2];
    REQUIRE(pipe2(pipeFds, O_CLOEXEC) == 0);
    close(pipeFds[1]);
    CHECK(attachError(UniqueFd(pipeFds[0]), streamSocket()).find("a pipe") != std::string::npos);
    {
        UniqueFd unsealable(memfd_create("fmq-test", MFD_CLOEXEC));  // no MFD_ALLOW_SEALING
        REQUIRE(ftruncate(unsealable.get(), static_cast<off_t>(fmqFileBytes(ring))) == 0);
        const uint32_t header[3] = {kFmqMagic, kFmqVersion, ring};
        REQUIRE(pwrite(unsealable.get(), header, sizeof header, 0) == ssize_t(sizeof header));
        CHECK(attachError(std::move(unsealable), streamSocket()).find("not sealed") != std::string::npos);
    }
    CHECK(attachError(queueFile(ring, true, 0x12345678), streamSocket()).find("magic") != std::string::npos);
    CHECK(attachError(queueFile(ring, true, kFmqMagic, 9), streamSocket()).find("version 9") !=
          std::string::npos);
    CHECK(attachError(queueFile(ring + 1), streamSocket()).find("power of two") != std::string::npos);
    CHECK(attachError(queueFile(1u << 30), streamSocket()).find("power of two") != std::string::npos);
    CHECK(
        attachError(queueFile(ring, true, kFmqMagic, kFmqVersion, fmqFileBytes(ring) + 4096), streamSocket())
            .find("need exactly") != std::string::npos);
    CHECK(attachError(queueFile(ring, true, kFmqMagic, kFmqVersion, 8), streamSocket()).find("no header") !=
          std::string::npos);
    {
        auto readOnly = queueFile(ring);
        const std::string path = "/proc/self/fd/" + std::to_string(readOnly.get());
        UniqueFd reopened(open(path.c_str(), O_RDONLY | O_CLOEXEC));
        REQUIRE(reopened.valid());
        CHECK(attachError(std::move(reopened), streamSocket()).find("reading and writing") !=
              std::string::npos);
    }
    {
        int dgram[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dgram) == 0);
        close(dgram[1]);
        CHECK(attachError(queueFile(ring), UniqueFd(dgram[0])).find("AF_UNIX stream socket") !=
              std::string::npos);
    }
    CHECK(attachError(queueFile(ring), queueFile(ring)).find("AF_UNIX stream socket") != std::string::npos);
    // And a good one attaches.
    auto ok = attachFmq(queueFile(ring), streamSocket(), smallRings());
    CHECK(ok.has_value());
}

TEST_CASE("fmq: the host refuses ring sizes outside the layout's") {
    FmqOptions o;
    o.ringBytes = 1000;
    auto r = createFmq(o);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kInvalidArgument);
    CHECK(r.error().message.find("power of two") != std::string::npos);
}
