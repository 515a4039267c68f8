// Transports: loopback and unix, bytes and fds both ways, timeouts, shutdown and peer death.
#include "npu/protocol/transport.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <thread>
#include <vector>

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

TEST_CASE("unix transport with a read poll window on both ends") {
    // The window only changes how a read waits: the same bytes, fds, timeouts and shutdown.
    auto p = makeUnixPair();
    p.client->setReadPollWindow(50us);
    p.server->setReadPollWindow(1000us);
    exerciseTransport(*p.client, *p.server);
}

TEST_CASE("unix: a read poll window longer than the read's timeout still times out at the timeout") {
    auto p = makeUnixPair();
    p.client->setReadPollWindow(std::chrono::microseconds(10'000'000));
    uint8_t buf[8];
    const auto t0 = std::chrono::steady_clock::now();
    auto r = p.client->read(buf, nullptr, 30ms);
    const auto took = std::chrono::steady_clock::now() - t0;
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == Error::Kind::kTimeout);
    CHECK(took < 5s);  // bounded by the read's timeout, not by the 10 s window
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

namespace {
// A plain connected socket to `path` (no transport: it sees the bytes as they come).
UniqueFd connectRaw(const std::string& path) {
    UniqueFd raw(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    REQUIRE(::connect(raw.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    return raw;
}

// Sends `bytes` with `fd` attached (SCM_RIGHTS) on a plain socket.
void sendWithFd(int socket, const std::string& bytes, int fd) {
    iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
    REQUIRE(::sendmsg(socket, &msg, 0) == static_cast<ssize_t>(bytes.size()));
}

// One recvmsg on a plain socket into `buffer`; the fds that came with it (SCM_RIGHTS) go to `fds`.
ssize_t receiveWithFds(int socket, std::span<char> buffer, std::vector<UniqueFd>* fds) {
    iovec iov{buffer.data(), buffer.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            fds->emplace_back(fd);
        }
    }
    return n;
}
}  // namespace

TEST_CASE("unix: an accepted connection answers on a socket of its own, sent with its preamble") {
    std::string path = "/tmp/npu-proto-test-reply-" + std::to_string(::getpid()) + ".sock";
    auto l = UnixListener::listen(path);
    REQUIRE(l.has_value());
    SECTION("a raw client gets the preamble and one socket, and the answers come on it") {
        UniqueFd raw = connectRaw(path);
        auto server = (*l)->accept(2000ms);
        REQUIRE(server.has_value());
        auto client = adoptUnixSocket(std::move(raw), "raw client");
        REQUIRE(client.has_value());
        // The server writes before it has read anything; the client finds it on the reply socket.
        REQUIRE((*server)->write(bytesOf("first")).has_value());
        REQUIRE(readExactly(**client, 5) == "first");
        REQUIRE((*client)->write(bytesOf("request")).has_value());
        REQUIRE(readExactly(**server, 7) == "request");
        REQUIRE((*server)->write(bytesOf("reply")).has_value());
        REQUIRE(readExactly(**client, 5) == "reply");
        (*server)->shutdown();  // EOF on the reply socket too
        uint8_t buf[8];
        auto r = (*client)->read(buf, nullptr, 5000ms);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().kind == Error::Kind::kDisconnected);
    }
    SECTION("the reply socket is a Unix stream socket of its own") {
        UniqueFd raw = connectRaw(path);
        auto server = (*l)->accept(2000ms);
        REQUIRE(server.has_value());
        char preamble[16] = {};
        std::vector<UniqueFd> fds;
        REQUIRE(receiveWithFds(raw.get(), preamble, &fds) == 8);
        CHECK(std::string(preamble, 8) == "NPU-RPLY");
        REQUIRE(fds.size() == 1);
        UniqueFd replies = std::move(fds[0]);
        REQUIRE((*server)->write(bytesOf("on its own")).has_value());
        char got[10] = {};
        REQUIRE(::read(replies.get(), got, sizeof got) == 10);
        CHECK(std::string(got, 10) == "on its own");
    }
}

TEST_CASE("unix: accept without a reply channel: a foreign peer (QEMU's chardev) gets only our bytes") {
    std::string path = "/tmp/npu-proto-test-plain-" + std::to_string(::getpid()) + ".sock";
    auto l = UnixListener::listen(path);
    REQUIRE(l.has_value());
    UniqueFd raw = connectRaw(path);
    auto server = (*l)->accept(2000ms, UnixListener::ReplyChannel::kNone);
    REQUIRE(server.has_value());
    // No preamble and no fd: the first bytes the peer reads are the server's, on the one socket
    // (with the offer, these bytes went to a reply socket a chardev never reads: QEMU's doorbells
    // backed up until "peer did not read for 10000 ms").
    REQUIRE((*server)->write(bytesOf("doorbell")).has_value());
    char got[16] = {};
    std::vector<UniqueFd> fds;
    REQUIRE(receiveWithFds(raw.get(), got, &fds) == 8);
    CHECK(std::string(got, 8) == "doorbell");
    CHECK(fds.empty());
    REQUIRE(::write(raw.get(), "irq", 3) == 3);
    REQUIRE(readExactly(**server, 3) == "irq");
}

TEST_CASE("unix: the accepting side never takes a reply socket from its client") {
    std::string path = "/tmp/npu-proto-test-noreply-" + std::to_string(::getpid()) + ".sock";
    auto l = UnixListener::listen(path);
    REQUIRE(l.has_value());
    UniqueFd raw = connectRaw(path);
    auto server = (*l)->accept(2000ms);
    REQUIRE(server.has_value());
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    UniqueFd mine(sv[0]), offered(sv[1]);
    sendWithFd(raw.get(), "NPU-RPLY", offered.get());
    std::vector<UniqueFd> fds;
    CHECK(readExactly(**server, 8, &fds) == "NPU-RPLY");  // data like any other, with its fd
    CHECK(fds.size() == 1);
}

TEST_CASE("unix: a peer without a reply socket is read as it is, whatever its first bytes") {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    UniqueFd raw(sv[1]);
    auto t = adoptUnixSocket(UniqueFd(sv[0]), "adopted");
    REQUIRE(t.has_value());
    SECTION("the preamble's bytes without an fd are data, read in pieces smaller than it") {
        REQUIRE(::write(raw.get(), "NPU-RPLY and more", 17) == 17);
        std::string got;
        uint8_t buf[3];
        while (got.size() < 17) {
            auto r = (*t)->read(buf, nullptr, 5000ms);
            REQUIRE(r.has_value());
            got.append(reinterpret_cast<const char*>(buf), *r);
        }
        CHECK(got == "NPU-RPLY and more");
    }
    SECTION("an fd with the first bytes is handed over") {
        UniqueFd memfd = makeMemfd("first fd");
        sendWithFd(raw.get(), "hi", memfd.get());
        std::vector<UniqueFd> fds;
        REQUIRE(readExactly(**t, 2, &fds) == "hi");
        REQUIRE(fds.size() == 1);
        CHECK(readFd(fds[0].get()) == "first fd");
    }
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

namespace {

struct TempDir {
    std::string path;
    TempDir() {
        char t[] = "/tmp/npu-sock-test-XXXXXX";
        REQUIRE(::mkdtemp(t) != nullptr);
        path = t;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Binds a socket at `path` and closes it without unlinking: what a killed server leaves.
void makeStaleSocket(const std::string& path) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
}

}  // namespace

TEST_CASE("unix: listen refuses a regular file or a fifo at the path and never removes it") {
    TempDir dir;
    const std::string file = dir.path + "/precious.txt";
    { std::ofstream(file) << "keep me"; }
    auto l = UnixListener::listen(file);
    REQUIRE_FALSE(l.has_value());
    CHECK(l.error().kind == Error::Kind::kInvalidArgument);
    CHECK_THAT(l.error().message, Catch::Contains("regular file") && Catch::Contains("not a socket"));
    CHECK(slurp(file) == "keep me");

    const std::string fifo = dir.path + "/fifo";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto f = UnixListener::listen(fifo);
    REQUIRE_FALSE(f.has_value());
    CHECK_THAT(f.error().message, Catch::Contains("fifo"));
    struct stat st {};
    REQUIRE(::lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
}

TEST_CASE("unix: a listener unlinks only its own socket at exit; a stale socket of ours is replaced") {
    TempDir dir;
    const std::string path = dir.path + "/s.sock";
    makeStaleSocket(path);
    auto l = UnixListener::listen(path);  // the stale socket is ours and dead: replaced
    REQUIRE(l.has_value());
    // Someone replaces the socket file while we run: at exit it is not ours to remove.
    REQUIRE(::unlink(path.c_str()) == 0);
    { std::ofstream(path) << "not yours"; }
    l->reset();
    CHECK(slurp(path) == "not yours");

    const std::string own = dir.path + "/own.sock";
    auto l2 = UnixListener::listen(own);
    REQUIRE(l2.has_value());
    l2->reset();
    CHECK_FALSE(std::filesystem::exists(own));
}

TEST_CASE("unix: a socket owned by another user is refused and kept") {
    if (::geteuid() != 0) {
        WARN("needs root to chown a socket to another user; checked only as root");
        return;
    }
    TempDir dir;
    const std::string path = dir.path + "/other.sock";
    makeStaleSocket(path);
    REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
    auto l = UnixListener::listen(path);
    REQUIRE_FALSE(l.has_value());
    CHECK_THAT(l.error().message, Catch::Contains("owned by uid 65534"));
    CHECK(std::filesystem::exists(path));
}

namespace {

// Forks a client that drops to uid/gid 65534 and connects to `path`; its exit status says
// whether its connectUnix was refused (1), accepted (0) or failed otherwise (2).
pid_t connectAsNobody(const std::string& path, const PeerPolicy& policy) {
    pid_t pid = ::fork();
    if (pid == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
        auto c = connectUnix(path, 2000ms, policy);
        if (c) ::_exit(0);
        ::_exit(c.error().message.find("is not allowed") != std::string::npos ? 1 : 2);
    }
    return pid;
}

int exitCodeOf(pid_t pid) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("unix: SO_PEERCRED: a peer of another uid is refused on both sides unless its group is allowed") {
    if (::geteuid() != 0) {
        WARN("needs root to run a client as another uid; checked only as root");
        return;
    }
    TempDir dir;
    REQUIRE(::chmod(dir.path.c_str(), 0777) == 0);
    const std::string path = dir.path + "/peer.sock";
    {
        auto l = UnixListener::listen(path);
        REQUIRE(l.has_value());
        REQUIRE(::chmod(path.c_str(), 0777) == 0);
        pid_t child = connectAsNobody(path, PeerPolicy{});
        auto a = (*l)->accept(3000ms);
        REQUIRE_FALSE(a.has_value());
        CHECK_THAT(a.error().message, Catch::Contains("uid 65534") && Catch::Contains("is not allowed"));
        CHECK(exitCodeOf(child) == 1);  // the client refused a server of uid 0 too
    }
    {
        auto l = UnixListener::listen(path, PeerPolicy{65534});
        REQUIRE(l.has_value());
        REQUIRE(::chmod(path.c_str(), 0777) == 0);
        pid_t child = connectAsNobody(path, PeerPolicy{0});
        auto a = (*l)->accept(3000ms);
        CHECK(a.has_value());
        CHECK(exitCodeOf(child) == 0);
    }
}

TEST_CASE("unix: the default socket lives in a private 0700 directory that must be ours") {
    TempDir dir;
    const char* old = std::getenv("XDG_RUNTIME_DIR");
    const std::string saved = old ? old : "";
    ::setenv("XDG_RUNTIME_DIR", dir.path.c_str(), 1);
    auto path = defaultUnixSocketPath();
    REQUIRE(path.has_value());
    CHECK(*path == dir.path + "/npu/npu-fwd.sock");
    struct stat st {};
    REQUIRE(::stat((dir.path + "/npu").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);

    REQUIRE(::chmod((dir.path + "/npu").c_str(), 0755) == 0);
    auto open = privateSocketDirectory();
    REQUIRE_FALSE(open.has_value());
    CHECK_THAT(open.error().message, Catch::Contains("mode 0755"));

    REQUIRE(::rmdir((dir.path + "/npu").c_str()) == 0);
    REQUIRE(::symlink("/tmp", (dir.path + "/npu").c_str()) == 0);
    auto link = privateSocketDirectory();
    REQUIRE_FALSE(link.has_value());
    CHECK_THAT(link.error().message, Catch::Contains("not a directory"));
    if (old) {
        ::setenv("XDG_RUNTIME_DIR", saved.c_str(), 1);
    } else {
        ::unsetenv("XDG_RUNTIME_DIR");
    }
}
