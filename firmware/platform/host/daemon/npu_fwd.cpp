// npu-fwd: the firmware daemon. It serves one simulated NPU (firmware runtime + hwsim) over a
// Unix socket, one client connection at a time; the device DRAM is passed to the client as a
// memfd with SCM_RIGHTS at the handshake.
//
//   npu-fwd [--socket PATH] [--once] [--idle-exit SECONDS]
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "npu/fw/platform/host/firmware_host.h"

namespace {

std::atomic<bool> gStop{false};
void onSignal(int) { gStop.store(true); }

std::string defaultSocketPath() {
    if (const char* dir = std::getenv("XDG_RUNTIME_DIR"); dir != nullptr && *dir != '\0') {
        return std::string(dir) + "/npu-fwd.sock";
    }
    return "/tmp/npu-fwd-" + std::to_string(getuid()) + ".sock";
}

int usage(const char* msg) {
    std::fprintf(stderr,
                 "npu-fwd: %s\n"
                 "usage: npu-fwd [--socket PATH] [--once] [--idle-exit SECONDS]\n"
                 "  --socket PATH       listen on PATH (default %s)\n"
                 "  --once              exit after the first client disconnects\n"
                 "  --idle-exit SECONDS exit when no client has connected for SECONDS (0 = never)\n",
                 msg, defaultSocketPath().c_str());
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string socketPath = defaultSocketPath();
    bool once = false;
    long idleExit = 0;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--socket" && i + 1 < argc) {
            socketPath = argv[++i];
        } else if (arg == "--once") {
            once = true;
        } else if (arg == "--idle-exit" && i + 1 < argc) {
            char* end = nullptr;
            idleExit = std::strtol(argv[++i], &end, 10);
            if (end == nullptr || *end != '\0' || idleExit < 0) return usage("--idle-exit takes a whole number of seconds");
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

    auto listener = npu::proto::UnixListener::listen(socketPath);
    if (!listener) {
        std::fprintf(stderr, "npu-fwd: cannot listen on %s: %s\n", socketPath.c_str(), listener.error().message.c_str());
        return 1;
    }
    auto firmware = npu::fw::host::FirmwareHost::create();
    if (!firmware) {
        std::fprintf(stderr, "npu-fwd: cannot start the firmware: %s\n", firmware.error().message.c_str());
        return 1;
    }
    std::fprintf(stderr, "npu-fwd: listening on %s\n", socketPath.c_str());

    long idleMs = 0;
    while (!gStop.load()) {
        auto transport = (*listener)->accept(std::chrono::milliseconds(200));
        if (!transport) {
            if (transport.error().kind != npu::proto::Error::Kind::kTimeout) {
                std::fprintf(stderr, "npu-fwd: accept failed: %s\n", transport.error().message.c_str());
                return 1;
            }
            idleMs += 200;
            if (idleExit > 0 && idleMs >= idleExit * 1000) break;
            continue;
        }
        idleMs = 0;
        (*firmware)->serve(**transport, &gStop);
        if (once) break;
    }
    unlink(socketPath.c_str());
    return 0;
}
