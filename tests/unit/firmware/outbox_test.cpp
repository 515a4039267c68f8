// The firmware host's outbox (firmware/platform/host/src/outbox.h): replies to a client that
// does not read wait there, in order, instead of holding the firmware's lock.
#include "outbox.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <numeric>
#include <vector>

#include "npu/protocol/transport.h"

using npu::fw::host::Outbox;
namespace proto = npu::proto;

namespace {

// The firmware's end as a unix transport with a small send buffer, and the client's raw end.
struct Pair {
    std::unique_ptr<proto::Transport> firmware;
    proto::UniqueFd client;
    Pair() {
        int sv[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        const int small = 16 * 1024;
        REQUIRE(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
        client.reset(sv[1]);
        auto t = proto::adoptUnixSocket(proto::UniqueFd(sv[0]), "outbox test");
        REQUIRE(t.has_value());
        firmware = std::move(*t);
    }
    // Reads until `bytes` bytes came (or the end); the fds that came with them are appended.
    std::vector<uint8_t> readAll(size_t bytes, std::vector<proto::UniqueFd>* fds = nullptr) {
        std::vector<uint8_t> got(bytes);
        size_t have = 0;
        while (have < bytes) {
            iovec iov{got.data() + have, bytes - have};
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            const ssize_t n = recvmsg(client.get(), &msg, MSG_CMSG_CLOEXEC);
            REQUIRE(n >= 0);
            if (n == 0) break;
            for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
                const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < count; ++i) {
                    int fd = -1;
                    std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                    if (fds != nullptr)
                        fds->emplace_back(fd);
                    else
                        close(fd);
                }
            }
            have += static_cast<size_t>(n);
        }
        got.resize(have);
        return got;
    }
};

std::vector<uint8_t> numbered(uint32_t i, size_t bytes) {
    std::vector<uint8_t> v(bytes);
    for (size_t k = 0; k < bytes; ++k) v[k] = static_cast<uint8_t>(i * 31 + k);
    return v;
}

}  // namespace

TEST_CASE("outbox: what the socket does not take waits, in order; nothing is lost") {
    Pair p;
    Outbox outbox(*p.firmware);
    std::vector<uint8_t> expected;
    for (uint32_t i = 0; i < 400; ++i) {  // 400 KiB: far more than the socket holds
        const auto reply = numbered(i, 1024);
        REQUIRE(outbox.send(reply, {}));  // returns although nobody reads
        expected.insert(expected.end(), reply.begin(), reply.end());
    }
    CHECK(outbox.deferredSends() > 0);
    CHECK(outbox.waitingBytes() > 0);
    CHECK(p.readAll(expected.size()) == expected);
    CHECK(outbox.cutOffs() == 0);
}

TEST_CASE("outbox: an fd rides with its reply's first byte, also when the reply waited") {
    Pair p;
    Outbox outbox(*p.firmware);
    std::vector<uint8_t> filler(64 * 1024, 7);
    REQUIRE(outbox.send(filler, {}));
    REQUIRE(outbox.waitingBytes() > 0);  // the fd's reply will wait behind it
    const int memfd = memfd_create("outbox-test", MFD_CLOEXEC);
    REQUIRE(memfd >= 0);
    const uint8_t reply[4] = {1, 2, 3, 4};
    REQUIRE(outbox.send(reply, std::span<const int>(&memfd, 1)));
    struct stat sent {};
    REQUIRE(fstat(memfd, &sent) == 0);
    close(memfd);  // the outbox keeps its own
    std::vector<proto::UniqueFd> fds;
    const auto got = p.readAll(filler.size() + sizeof reply, &fds);
    REQUIRE(got.size() == filler.size() + sizeof reply);
    CHECK(std::memcmp(got.data() + filler.size(), reply, sizeof reply) == 0);
    REQUIRE(fds.size() == 1);
    struct stat received {};
    REQUIRE(fstat(fds[0].get(), &received) == 0);
    CHECK(received.st_ino == sent.st_ino);
}

TEST_CASE("outbox: a client that leaves more than the bound waiting is cut off") {
    Pair p;
    Outbox outbox(*p.firmware);
    const std::vector<uint8_t> reply(1 << 20, 1);
    bool cut = false;
    for (size_t i = 0; i < 2 * Outbox::kMaxBytes / reply.size() && !cut; ++i) cut = !outbox.send(reply, {});
    CHECK(cut);
    CHECK(outbox.cutOffs() == 1);
    CHECK(outbox.waitingBytes() == 0);    // what waited is dropped
    CHECK_FALSE(outbox.send(reply, {}));  // and stays cut off
    // Its transport is shut down: the client reads to the end of the stream.
    const auto rest = p.readAll(64u << 20);
    CHECK(rest.size() < 64u << 20);
}

TEST_CASE("outbox: stop ends a write in progress at once and drops what waits") {
    Pair p;
    Outbox outbox(*p.firmware);
    const std::vector<uint8_t> reply(256 * 1024, 2);
    REQUIRE(outbox.send(reply, {}));
    REQUIRE(outbox.send(reply, {}));
    outbox.stop();  // its thread is blocked in a write nobody reads: the shutdown ends it
    CHECK(outbox.waitingBytes() == 0);
    CHECK_FALSE(outbox.send(reply, {}));
}
