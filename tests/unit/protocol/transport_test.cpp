// Transports: loopback and unix, bytes and fds both ways, timeouts, shutdown and peer death.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "npu/protocol/transport.h"

using namespace npu::proto;
using namespace std::chrono_literals;

namespace {

UniqueFd makeMemfd(const std::string& contents) {
    UniqueFd fd(memfd_create("npu-test", MFD_CLOEXEC));
    REQUIRE(fd.valid());
    REQUIRE(::write(fd.get(), contents.data(), contents.size()) == ssize_t(contents.size()));
    return fd;
}

std::string readFd(int fd) {
    char buf[256] = {};
    ssize_t n = ::pread(fd, buf, sizeof(buf), 0);
    REQUIRE(n >= 0);
    return std::string(buf, size_t(n));
}

// Reads exactly n bytes (transports may split writes).
std::string readExactly(Transport& t, size_t n, std::vector<UniqueFd>* fds = nullptr) {
    std::string out;
    std::vector<uint8_t> buf(64 * 1024);
    while (out.size() < n) {
        auto r = t.read(std::span(buf.data(), std::min(buf.size(), n - out.size())), fds, 5000ms);
        REQUIRE(r.has_value());
        out.append(reinterpret_cast<const char*>(buf.data()), *r);
    }
    return out;
}

std::span<const uint8_t> bytesOf(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct UnixPair {
    std::unique_ptr<UnixListener> listener;
    std::unique_ptr<Transport> client;
    std::unique_ptr<Transport> server;
};

UnixPair makeUnixPair() {
    std::string path = "/tmp/npu-proto-test-" + std::to_string(::getpid()) + ".sock";
    auto l = UnixListener::listen(path);
    REQUIRE(l.has_value());
    auto c = connectUnix(path, 2000ms);
    REQUIRE(c.has_value());
    auto s = (*l)->accept(2000ms);
    REQUIRE(s.has_value());
    return {std::move(*l), std::move(*c), std::move(*s)};
}

// The same checks for both transport kinds.
void exerciseTransport(Transport& a, Transport& b) {
    SECTION("bytes both ways") {
        REQUIRE(a.write(bytesOf("hello firmware")).has_value());
        REQUIRE(readExactly(b, 14) == "hello firmware");
        REQUIRE(b.write(bytesOf("hello host")).has_value());
        REQUIRE(readExactly(a, 10) == "hello host");
    }
    SECTION("an fd travels with the bytes and the receiver reads its contents") {
        UniqueFd memfd = makeMemfd("device dram");
        int fds[] = {memfd.get()};
        REQUIRE(b.write(bytesOf("hello+fd"), fds).has_value());
        memfd.reset();  // the receiver's copy must not depend on ours
        std::vector<UniqueFd> received;
        REQUIRE(readExactly(a, 8, &received) == "hello+fd");
        REQUIRE(received.size() == 1);
        CHECK(readFd(received[0].get()) == "device dram");
    }
    SECTION("a read with nothing to read times out") {
        uint8_t buf[8];
        auto r = a.read(buf, nullptr, 20ms);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kTimeout);
    }
    SECTION("a large transfer with a concurrent reader") {
        std::string big(3 << 20, '\0');
        for (size_t i = 0; i < big.size(); ++i) big[i] = char(i * 7);
        std::string got;
        std::thread reader([&] { got = readExactly(b, big.size()); });
        auto w = a.write(bytesOf(big));
        reader.join();
        REQUIRE(w.has_value());
        REQUIRE(got == big);
    }
    SECTION("shutdown wakes a blocked reader with kDisconnected, later calls fail") {
        Result<size_t> r = 0;
        std::thread reader([&] {
            uint8_t buf[8];
            r = a.read(buf, nullptr, 30000ms);
        });
        std::this_thread::sleep_for(20ms);  // let it block (correct either way)
        a.shutdown();
        reader.join();
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kDisconnected);
        auto w = a.write(bytesOf("x"));
        REQUIRE_FALSE(w.has_value());
        CHECK(w.error().kind == Error::Kind::kDisconnected);
    }
}

}  // namespace

TEST_CASE("loopback transport") {
    auto [host, fw] = makeLoopbackPair();
    CHECK(host->describe() == "loopback:host");
    exerciseTransport(*host, *fw);
}

TEST_CASE("loopback: peer death gives kDisconnected after the queued bytes") {
    auto [host, fw] = makeLoopbackPair();
    REQUIRE(fw->write(bytesOf("last words")).has_value());
    fw.reset();
    REQUIRE(readExactly(*host, 10) == "last words");
    uint8_t buf[8];
    auto r = host->read(buf, nullptr, 5000ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kDisconnected);
    auto w = host->write(bytesOf("anyone?"));
    REQUIRE_FALSE(w.has_value());
    CHECK(w.error().kind == Error::Kind::kDisconnected);
}

TEST_CASE("unix transport") {
    auto p = makeUnixPair();
    CHECK(p.client->describe().find("unix:") == 0);
    exerciseTransport(*p.client, *p.server);
}

TEST_CASE("unix: peer death gives kDisconnected, never SIGPIPE") {
    auto p = makeUnixPair();
    REQUIRE(p.server->write(bytesOf("bye")).has_value());
    p.server.reset();
    REQUIRE(readExactly(*p.client, 3) == "bye");
    uint8_t buf[8];
    auto r = p.client->read(buf, nullptr, 5000ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kDisconnected);
    Result<void> w;
    for (int i = 0; i < 3 && w.has_value(); ++i) w = p.client->write(bytesOf("anyone?"));
    REQUIRE_FALSE(w.has_value());
    CHECK(w.error().kind == Error::Kind::kDisconnected);
}

TEST_CASE("unix: connect and accept time out, bad paths are refused") {
    std::string path = "/tmp/npu-proto-test-none-" + std::to_string(::getpid()) + ".sock";
    auto c = connectUnix(path, 30ms);
    REQUIRE_FALSE(c.has_value());
    CHECK(c.error().kind == Error::Kind::kTimeout);

    auto l = UnixListener::listen(path);
    REQUIRE(l.has_value());
    auto a = (*l)->accept(20ms);
    REQUIRE_FALSE(a.has_value());
    CHECK(a.error().kind == Error::Kind::kTimeout);
    // A second listener on a live socket is refused; a stale socket file is replaced.
    auto l2 = UnixListener::listen(path);
    REQUIRE_FALSE(l2.has_value());

    auto tooLong = connectUnix(std::string(200, 'x'), 10ms);
    REQUIRE_FALSE(tooLong.has_value());
    CHECK(tooLong.error().kind == Error::Kind::kInvalidArgument);
}

TEST_CASE("unix: listener shutdown wakes accept") {
    std::string path = "/tmp/npu-proto-test-wake-" + std::to_string(::getpid()) + ".sock";
    auto l = UnixListener::listen(path);
    REQUIRE(l.has_value());
    Result<std::unique_ptr<Transport>> r = fail(Error::Kind::kIo, "not run");
    std::thread t([&] { r = (*l)->accept(30000ms); });
    std::this_thread::sleep_for(20ms);
    (*l)->shutdown();
    t.join();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kDisconnected);
}
