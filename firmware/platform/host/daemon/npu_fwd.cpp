// npu-fwd: the firmware daemon. It serves simulated NPUs (firmware runtime + hwsim) over a
// Unix socket. Each client connection gets its own NPU instance (its own device DRAM, passed to
// the client as a memfd with SCM_RIGHTS at the handshake), served on a thread of its own, so
// several test processes can share one daemon; at most --max-clients at once. A further client
// gets an error reply to its handshake naming the limit (RESOURCE_EXHAUSTED_TRANSIENT), then its
// connection is closed. Only peers of our own uid (or of --allow-group GID) are served
// (SO_PEERCRED); the default socket lives in a private 0700 directory (docs/reliability.md).
//
//   npu-fwd [--socket PATH] [--once] [--idle-exit SECONDS] [--max-clients N] [--hw-config FILE]
//           [--allow-group GID] [--fault-injection]
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "npu.pb.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hwsim/config.h"
#include "npu/protocol/frame.h"

namespace {

std::atomic<bool> gStop{false};
void onSignal(int) {
    gStop.store(true);
}

// systemd socket activation (sd_listen_fds(3) without libsystemd): the listening socket handed
// in as fd 3 when LISTEN_PID is this process and LISTEN_FDS is 1; -1 when not socket-activated.
// The variables are cleared so that nothing this process starts mistakes them for its own.
int socketActivationFd() {
    const char* pid = std::getenv("LISTEN_PID");
    const char* fds = std::getenv("LISTEN_FDS");
    if (pid == nullptr || fds == nullptr) return -1;
    const bool ours = std::strtol(pid, nullptr, 10) == static_cast<long>(getpid());
    const long count = std::strtol(fds, nullptr, 10);
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (!ours) return -1;
    if (count != 1) {
        std::fprintf(stderr, "npu-fwd: socket activation passed %ld sockets; expected exactly 1\n", count);
        return -2;
    }
    return 3;  // SD_LISTEN_FDS_START
}

std::string defaultSocketText() {
    auto path = npu::proto::defaultUnixSocketPath();
    return path ? *path : "none: " + path.error().message;
}

// Tells a client over the limit why it is refused: its handshake (the first frame) gets an
// ERROR reply with the same call id, then the connection closes. Bounded: 1 s for the frame.
void refuseClient(npu::proto::Transport& transport, const std::string& why) {
    using namespace npu::proto;
    std::vector<uint8_t> in(kFrameHeaderSize);
    size_t have = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (have < kFrameHeaderSize && std::chrono::steady_clock::now() < until) {
        auto n = transport.read(std::span<uint8_t>(in.data() + have, kFrameHeaderSize - have), nullptr,
                                std::chrono::milliseconds(200));
        if (!n) {
            if (n.error().kind == Error::Kind::kTimeout) continue;
            return;
        }
        have += *n;
    }
    FrameHeader request;
    if (have < kFrameHeaderSize || !parseFrameHeader(in.data(), &request)) return;
    ErrorReply reply;
    reply.mutable_status()->set_code(7);  // RESOURCE_EXHAUSTED_TRANSIENT: retry when a client leaves
    reply.mutable_status()->set_message(why);
    const std::string payload = reply.SerializeAsString();
    FrameHeader h;
    h.type = kMethodError;
    h.flags = kFlagResponse | kFlagError;
    h.callId = request.callId;
    h.length = static_cast<uint32_t>(payload.size());
    std::vector<uint8_t> frame(kFrameHeaderSize + payload.size());
    std::memcpy(frame.data() + kFrameHeaderSize, payload.data(), payload.size());
    encodeFrameHeader(h, frame.data() + kFrameHeaderSize, frame.data());
    (void)transport.write(frame);
}

int usage(const char* msg) {
    std::fprintf(
        stderr,
        "npu-fwd: %s\n"
        "usage: npu-fwd [--socket PATH] [--once] [--idle-exit SECONDS] [--max-clients N] [--hw-config FILE]\n"
        "  --socket PATH       listen on PATH (default %s)\n"
        "  --once              exit after the first client disconnects\n"
        "  --idle-exit SECONDS exit when no client has been connected for SECONDS (0 = never)\n"
        "  --max-clients N     clients served at once, each with its own NPU (default 8)\n"
        "  --hw-config FILE    the simulated NPU's hardware config JSON (docs/hw-config.md)\n"
        "  --allow-group GID   also serve peers whose gid is GID (default: our own uid only)\n"
        "  --fault-injection   let clients inject NPU faults and crashes (reliability tests only)\n",
        msg, defaultSocketText().c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string socketPath;
    npu::proto::PeerPolicy peerPolicy;
    bool once = false;
    long idleExit = 0;
    long maxClients = 8;
    npu::fw::host::FirmwareHostConfig firmwareConfig;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--socket" && i + 1 < argc) {
            socketPath = argv[++i];
        } else if (arg == "--once") {
            once = true;
        } else if (arg == "--idle-exit" && i + 1 < argc) {
            char* end = nullptr;
            idleExit = std::strtol(argv[++i], &end, 10);
            if (end == nullptr || *end != '\0' || idleExit < 0)
                return usage("--idle-exit takes a whole number of seconds");
        } else if (arg == "--max-clients" && i + 1 < argc) {
            char* end = nullptr;
            maxClients = std::strtol(argv[++i], &end, 10);
            if (end == nullptr || *end != '\0' || maxClients < 1 || maxClients > 64)
                return usage("--max-clients takes a number from 1 to 64");
        } else if (arg == "--hw-config" && i + 1 < argc) {
            auto hw = npu::sim::loadHwConfig(argv[++i]);
            if (!hw) return usage(("--hw-config: " + hw.error()).c_str());
            firmwareConfig.hw = *hw;
        } else if (arg == "--allow-group" && i + 1 < argc) {
            char* end = nullptr;
            const long gid = std::strtol(argv[++i], &end, 10);
            if (end == nullptr || *end != '\0' || gid < 0 || gid > 0xFFFFFFFEL)
                return usage("--allow-group takes a numeric group id from 0 to 4294967294");
            peerPolicy.allowedGroup = static_cast<uint32_t>(gid);
        } else if (arg == "--fault-injection") {
            // An injected crash takes the whole daemon down, as a real firmware crash would
            // take its card: every client loses its NPU and must restart it.
            firmwareConfig.faultInjection = true;
            firmwareConfig.onCrash = [] {
                std::fprintf(stderr, "npu-fwd: injected crash: exiting\n");
                _exit(70);
            };
        } else if (arg == "--help" || arg == "-h") {
            usage("the firmware daemon");
            return 0;
        } else {
            return usage(("unknown argument '" + arg + "'").c_str());
        }
    }

    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);

    const int activated = socketActivationFd();
    if (activated == -2) return 1;
    if (activated < 0 && socketPath.empty()) {
        auto path = npu::proto::defaultUnixSocketPath();
        if (!path) {
            std::fprintf(stderr, "npu-fwd: %s\n", path.error().message.c_str());
            return 1;
        }
        socketPath = *path;
    }
    if (activated >= 0 && !socketPath.empty()) {
        std::fprintf(stderr,
                     "npu-fwd: socket-activated: serving the socket systemd passed, not --socket %s\n",
                     socketPath.c_str());
    }
    auto listener = activated >= 0 ? npu::proto::UnixListener::adopt(activated, peerPolicy)
                                   : npu::proto::UnixListener::listen(socketPath, peerPolicy);
    if (listener && activated >= 0) socketPath = (*listener)->path();
    if (!listener) {
        std::fprintf(stderr, "npu-fwd: cannot listen on %s: %s\n", socketPath.c_str(),
                     listener.error().message.c_str());
        return 1;
    }
    // Fail early (before accepting anyone) if a firmware cannot be created at all.
    if (auto probe = npu::fw::host::FirmwareHost::create(firmwareConfig); !probe) {
        std::fprintf(stderr, "npu-fwd: cannot start the firmware: %s\n", probe.error().message.c_str());
        return 1;
    }
    std::fprintf(stderr, "npu-fwd: listening on %s\n", socketPath.c_str());

    struct Session {
        std::thread thread;
        std::atomic<bool> done{false};
        bool serving = true;  // false: a refused client being told why
    };
    std::list<Session> sessions;
    auto reap = [&] {
        for (auto it = sessions.begin(); it != sessions.end();) {
            if (it->done.load()) {
                it->thread.join();
                it = sessions.erase(it);
            } else {
                ++it;
            }
        }
    };
    auto serving = [&] {
        long n = 0;
        for (const auto& s : sessions) n += s.serving ? 1 : 0;
        return n;
    };
    long idleMs = 0;
    bool servedOne = false;
    while (!gStop.load()) {
        reap();
        if (once && servedOne && serving() == 0) break;
        auto transport = (*listener)->accept(std::chrono::milliseconds(200));
        if (!transport) {
            const auto kind = transport.error().kind;
            if (kind == npu::proto::Error::Kind::kDisconnected) break;
            if (kind != npu::proto::Error::Kind::kTimeout) {
                // A refused peer (SO_PEERCRED) or a client gone before accept: log, keep serving.
                std::fprintf(stderr, "npu-fwd: %s\n", transport.error().message.c_str());
                continue;
            }
            idleMs = serving() == 0 ? idleMs + 200 : 0;
            if (idleExit > 0 && idleMs >= idleExit * 1000) break;
            continue;
        }
        idleMs = 0;
        std::shared_ptr<npu::proto::Transport> t(std::move(*transport));
        const long connected = serving();
        Session& session = sessions.emplace_back();
        if (connected >= maxClients || (once && servedOne)) {
            const std::string why =
                once && servedOne
                    ? "npu-fwd --once has served its client and takes no other"
                    : "npu-fwd serves at most " + std::to_string(maxClients) +
                          " client(s) at once (--max-clients " + std::to_string(maxClients) + ") and " +
                          std::to_string(connected) + " are connected; try again when one disconnects";
            std::fprintf(stderr, "npu-fwd: refusing a client: %s\n", why.c_str());
            session.serving = false;
            session.thread = std::thread([&session, t, why] {
                refuseClient(*t, why);
                session.done.store(true);
            });
            continue;
        }
        servedOne = true;
        session.thread = std::thread([&session, &firmwareConfig, t] {
            auto firmware = npu::fw::host::FirmwareHost::create(firmwareConfig);
            if (firmware) {
                (*firmware)->serve(*t, &gStop);
            } else {
                std::fprintf(stderr, "npu-fwd: cannot start a firmware for a client: %s\n",
                             firmware.error().message.c_str());
            }
            session.done.store(true);
        });
    }
    gStop.store(true);  // ends every session's serve loop within its poll interval
    for (auto& s : sessions) s.thread.join();
    return 0;  // the listener unlinks its own socket (and nothing else) when destroyed
}
