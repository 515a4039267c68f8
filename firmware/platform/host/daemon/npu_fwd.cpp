// npu-fwd: the firmware daemon. It serves one simulated NPU (firmware runtime + scheduler +
// hwsim) over a Unix socket to every client: each connection is a session of that firmware, with
// its own window (a memfd passed to that client alone with SCM_RIGHTS at the handshake, mapped
// into the NPU's address space), its work queued with everyone's by priority (docs/execution.md),
// read on a thread of its own; at most --max-clients at once. A further client
// gets an error reply to its handshake naming the limit (RESOURCE_EXHAUSTED_TRANSIENT), then its
// connection is closed. Only peers of our own uid (or of --allow-group GID) are served
// (SO_PEERCRED); the default socket lives in a private 0700 directory (docs/reliability.md).
//
//   npu-fwd [--socket PATH] [--once] [--idle-exit SECONDS] [--max-clients N] [--hw-config FILE]
//           [--allow-group GID] [--fault-injection]
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
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

struct DaemonOptions {
    std::string socketPath;
    npu::proto::PeerPolicy peerPolicy;
    bool once = false;
    long idleExit = 0;
    long maxClients = 8;
    npu::fw::host::FirmwareHostConfig firmware;
};

// The command line (CLI11). Returns the exit code to leave with, or nullopt to go on serving.
std::optional<int> parseOptions(int argc, char** argv, DaemonOptions& o) {
    CLI::App app{
        "npu-fwd: the firmware daemon; serves simulated NPUs over a Unix socket (docs/reliability.md)"};
    std::string hwConfig;
    int64_t allowGroup = -1;
    app.add_option("--socket", o.socketPath, "listen on PATH (default " + defaultSocketText() + ")");
    app.add_flag("--once", o.once, "exit after the first client disconnects");
    app.add_option("--idle-exit", o.idleExit,
                   "exit when no client has been connected for SECONDS (0 = never)")
        ->check(CLI::Range(0L, 86400L * 365));
    app.add_option("--max-clients", o.maxClients, "clients served at once (sessions of the one NPU)")
        ->check(CLI::Range(1L, 64L))
        ->capture_default_str();
    app.add_option("--hw-config", hwConfig, "the simulated NPU's hardware config JSON (docs/hw-config.md)");
    app.add_option("--allow-group", allowGroup,
                   "also serve peers whose gid is GID (default: our own uid only)")
        ->check(CLI::Range(int64_t{0}, int64_t{0xFFFFFFFE}));
    app.add_option("--burst-poll-us", o.firmware.burstPollUs,
                   "how long a burst channel's thread polls its queue for the next request before it "
                   "sleeps (docs/execution.md, Bursts; 0 = sleep at once)")
        ->check(CLI::Range(0u, 10000u))
        ->capture_default_str();
    app.add_option("--request-poll-us", o.firmware.requestPollUs,
                   "how long a session's reader polls for the client's next request before it sleeps "
                   "(docs/execution.md; 0 = sleep at once)")
        ->check(CLI::Range(0u, 10000u))
        ->capture_default_str();
    bool faultInjection = false;
    app.add_flag("--fault-injection", faultInjection,
                 "let clients inject NPU faults and crashes (reliability tests only)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    if (!hwConfig.empty()) {
        auto hw = npu::sim::loadHwConfig(hwConfig);
        if (!hw) {
            std::fprintf(stderr, "npu-fwd: --hw-config: %s\n", hw.error().c_str());
            return 2;
        }
        o.firmware.hw = *hw;
    }
    if (allowGroup >= 0) o.peerPolicy.allowedGroup = static_cast<uint32_t>(allowGroup);
    if (faultInjection) {
        // An injected crash takes the whole daemon down, as a real firmware crash would take its
        // card: every client loses its NPU and must restart it.
        o.firmware.faultInjection = true;
        o.firmware.onCrash = [] {
            std::fprintf(stderr, "npu-fwd: injected crash: exiting\n");
            _exit(70);
        };
    }
    return std::nullopt;
}

// The listening socket: the one systemd handed in, or --socket / the private default path.
std::unique_ptr<npu::proto::UnixListener> openListener(DaemonOptions& o) {
    const int activated = socketActivationFd();
    if (activated == -2) return nullptr;
    if (activated < 0 && o.socketPath.empty()) {
        auto path = npu::proto::defaultUnixSocketPath();
        if (!path) {
            std::fprintf(stderr, "npu-fwd: %s\n", path.error().message.c_str());
            return nullptr;
        }
        o.socketPath = *path;
    }
    if (activated >= 0 && !o.socketPath.empty()) {
        std::fprintf(stderr,
                     "npu-fwd: socket-activated: serving the socket systemd passed, not --socket %s\n",
                     o.socketPath.c_str());
    }
    auto listener = activated >= 0 ? npu::proto::UnixListener::adopt(activated, o.peerPolicy)
                                   : npu::proto::UnixListener::listen(o.socketPath, o.peerPolicy);
    if (!listener) {
        std::fprintf(stderr, "npu-fwd: cannot listen on %s: %s\n", o.socketPath.c_str(),
                     listener.error().message.c_str());
        return nullptr;
    }
    if (activated >= 0) o.socketPath = (*listener)->path();
    return std::move(*listener);
}

// The client sessions, each on a thread of its own: served by the one firmware, or told why it
// is refused. The owner joins every thread.
class Sessions {
public:
    Sessions(const DaemonOptions& o, npu::fw::host::FirmwareHost& firmware)
        : options_(o), firmware_(firmware) {}
    ~Sessions() {
        for (auto& s : sessions_) s.thread.join();
    }

    void reap() {
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            if (it->done.load()) {
                it->thread.join();
                it = sessions_.erase(it);
            } else {
                ++it;
            }
        }
    }
    long serving() const {
        long n = 0;
        for (const auto& s : sessions_) n += s.serving ? 1 : 0;
        return n;
    }
    bool servedOne() const { return servedOne_; }

    void add(std::shared_ptr<npu::proto::Transport> t) {
        const long connected = serving();
        Session& session = sessions_.emplace_back();
        if (connected >= options_.maxClients || (options_.once && servedOne_)) {
            const std::string why = refusal(connected);
            std::fprintf(stderr, "npu-fwd: refusing a client: %s\n", why.c_str());
            session.serving = false;
            session.thread = std::thread([&session, t, why] {
                refuseClient(*t, why);
                session.done.store(true);
            });
            return;
        }
        servedOne_ = true;
        session.thread = std::thread([&session, firmware = &firmware_, t] {
            firmware->serve(*t, &gStop);
            session.done.store(true);
        });
    }

private:
    struct Session {
        std::thread thread;
        std::atomic<bool> done{false};
        bool serving = true;  // false: a refused client being told why
    };

    std::string refusal(long connected) const {
        if (options_.once && servedOne_) return "npu-fwd --once has served its client and takes no other";
        const std::string limit = std::to_string(options_.maxClients);
        return "npu-fwd serves at most " + limit + " client(s) at once (--max-clients " + limit + ") and " +
               std::to_string(connected) + " are connected; try again when one disconnects";
    }

    const DaemonOptions& options_;
    npu::fw::host::FirmwareHost& firmware_;
    std::list<Session> sessions_;
    bool servedOne_ = false;
};

// Accepts clients until a signal, --once's client leaving, or --idle-exit.
void serve(npu::proto::UnixListener& listener, const DaemonOptions& o,
           npu::fw::host::FirmwareHost& firmware) {
    Sessions sessions(o, firmware);
    long idleMs = 0;
    while (!gStop.load()) {
        sessions.reap();
        if (o.once && sessions.servedOne() && sessions.serving() == 0) break;
        auto transport = listener.accept(std::chrono::milliseconds(200));
        if (!transport) {
            const auto kind = transport.error().kind;
            if (kind == npu::proto::Error::Kind::kDisconnected) break;
            if (kind != npu::proto::Error::Kind::kTimeout) {
                // A refused peer (SO_PEERCRED) or a client gone before accept: log, keep serving.
                std::fprintf(stderr, "npu-fwd: %s\n", transport.error().message.c_str());
                continue;
            }
            idleMs = sessions.serving() == 0 ? idleMs + 200 : 0;
            if (o.idleExit > 0 && idleMs >= o.idleExit * 1000) break;
            continue;
        }
        idleMs = 0;
        sessions.add(std::shared_ptr<npu::proto::Transport>(std::move(*transport)));
    }
    gStop.store(true);  // ends every session's serve loop within its poll interval; ~Sessions joins
}

}  // namespace

int main(int argc, char** argv) {
    DaemonOptions options;
    if (auto exitCode = parseOptions(argc, argv, options)) return *exitCode;

    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);

    auto listener = openListener(options);
    if (!listener) return 1;
    // One window per client served at once, after the firmware's own DRAM.
    options.firmware.dramBytes = options.firmware.firmwareDramBytes +
                                 uint64_t(options.maxClients) * options.firmware.sessionWindowBytes;
    auto firmware = npu::fw::host::FirmwareHost::create(options.firmware);
    if (!firmware) {
        std::fprintf(stderr, "npu-fwd: cannot start the firmware: %s\n", firmware.error().message.c_str());
        return 1;
    }
    std::fprintf(stderr, "npu-fwd: listening on %s\n", options.socketPath.c_str());
    serve(*listener, options, **firmware);
    return 0;  // the listener unlinks its own socket (and nothing else) when destroyed
}
