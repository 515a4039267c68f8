// Connecting to the firmware daemon (npu-fwd) over a Unix socket, starting it when asked.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "connection.h"
#include "npu/protocol/program_directory.h"
#include "npu/protocol/transport.h"
#include "npu/shim/npu_device.h"

extern char** environ;

namespace npu::shim {
namespace {

// Where npu-fwd is looked for, in order: the caller's choice, $NPU_FWD, beside the running
// program (an installed /usr/bin/npu finds /usr/bin/npu-fwd), where the build tree puts it
// relative to a program in build/tools or build/tests, and last PATH. No build path is baked in,
// so an installed or relocated build never runs a stale build tree's daemon.
std::string findDaemon(const DaemonOptions& options) {
    if (!options.daemonPath.empty()) return options.daemonPath;
    if (const char* env = std::getenv("NPU_FWD"); env != nullptr && *env != '\0') return env;
    if (const std::string dir = proto::programDirectory(); !dir.empty()) {
        for (const char* relative : {"/npu-fwd", "/../firmware/platform/host/daemon/npu-fwd"}) {
            const std::string candidate = dir + relative;
            if (access(candidate.c_str(), X_OK) == 0) return candidate;
        }
    }
    return "npu-fwd";  // from PATH
}

proto::PeerPolicy peerPolicy(const DaemonOptions& options) {
    return proto::PeerPolicy{options.allowedPeerGroup};
}

std::string describeExit(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
    return "stopped";
}

// Starts `binary` for `path` with stdin, stdout and stderr on /dev/null, so a daemon that
// outlives this process never holds the caller's terminal or pipe (`npu ... | tail` ends).
Result<pid_t> spawnDaemon(const std::string& binary, const std::string& path, const DaemonOptions& options) {
    std::vector<std::string> args = {binary, "--socket", path, "--idle-exit",
                                     std::to_string(options.idleExitSeconds)};
    if (!options.hwConfigPath.empty()) args.insert(args.end(), {"--hw-config", options.hwConfigPath});
    if (options.faultInjection) args.push_back("--fault-injection");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int rc = posix_spawnp(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "cannot start the firmware daemon '" + binary + "': " + std::strerror(rc));
    }
    return pid;
}

// Waits for a daemon just started to listen; its exit or the start timeout is an error.
Result<std::unique_ptr<proto::Transport>> awaitDaemon(DaemonProcess& daemon, const std::string& binary,
                                                      const std::string& path, const DaemonOptions& options) {
    const auto until = std::chrono::steady_clock::now() + options.startTimeout;
    while (true) {
        int status = 0;
        if (waitpid(daemon.pid(), &status, WNOHANG) == daemon.pid()) {
            daemon.forget();  // already reaped
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "the firmware daemon '" + binary + "' " + describeExit(status) +
                            " before listening on " + path + " (run npu-fwd --socket " + path +
                            " to see why)");
        }
        auto transport = proto::connectUnix(path, std::chrono::milliseconds(100), peerPolicy(options));
        if (transport) return std::move(*transport);
        if (transport.error().kind != proto::Error::Kind::kTimeout) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, transport.error().message);
        }
        if (std::chrono::steady_clock::now() >= until) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "the firmware daemon '" + binary + "' did not listen on " + path + " within " +
                            std::to_string(options.startTimeout.count()) + " ms");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace

std::string defaultSocketPath() {
    auto path = proto::defaultUnixSocketPath();
    return path ? *path : std::string();
}

namespace {

// Connects to the daemon on `path`, starting one when nobody listens (a daemon started here goes
// to *spawned). `firstTime`: a daemon that already listens must not be asked for a hardware
// config it was not started with; on a restart any daemon there is taken.
Result<std::unique_ptr<proto::Transport>> reachDaemon(const DaemonOptions& options, const std::string& path,
                                                      bool firstTime,
                                                      std::unique_ptr<DaemonProcess>* spawned) {
    auto transport = proto::connectUnix(path, std::chrono::milliseconds(200), peerPolicy(options));
    if (transport && firstTime && !options.hwConfigPath.empty()) {
        return invalidArgument(
            "--hw-config: a firmware daemon already listens on " + path +
            " with the hardware config it was started with; stop it, or start it with npu-fwd "
            "--hw-config " +
            options.hwConfigPath);
    }
    if (transport) return std::move(*transport);
    if (transport.error().kind != proto::Error::Kind::kTimeout) {
        // Not "nobody listens" but something wrong with who listens (another user's daemon).
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, transport.error().message);
    }
    if (!options.spawnIfAbsent) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, "no firmware daemon listens on " + path + " (" +
                                                              transport.error().message +
                                                              "); start one with: npu-fwd --socket " + path);
    }
    // Say it here: the daemon would refuse the path too, but its stderr goes to /dev/null.
    if (struct stat st{}; ::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
        return invalidArgument("socket path " + path +
                               " exists and is not a socket; refusing to start a daemon there (it would "
                               "replace the file): choose another --socket");
    }
    const std::string binary = findDaemon(options);
    auto daemon = std::make_unique<DaemonProcess>(NPU_TRY(spawnDaemon(binary, path, options)));
    auto started = awaitDaemon(*daemon, binary, path, options);
    if (!started) {
        // Several clients start (or restart) one at once: another one's daemon may have taken
        // the path, and ours exited.
        auto other = proto::connectUnix(path, std::chrono::milliseconds(500), peerPolicy(options));
        if (other) return std::move(*other);
    }
    if (!started) return std::unexpected(started.error());
    *spawned = std::move(daemon);
    return std::move(*started);
}

}  // namespace

Result<std::shared_ptr<hal::IDevice>> connectNpuDaemon(const DaemonOptions& options) {
    std::string path = options.socketPath;
    if (path.empty()) {
        auto fallback = proto::defaultUnixSocketPath();
        if (!fallback) return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, fallback.error().message);
        path = *fallback;
    }
    std::unique_ptr<DaemonProcess> daemon;
    auto transport = NPU_TRY(reachDaemon(options, path, true, &daemon));
    // A restart (the daemon died or hung) reaches it again, starting a new one if need be; the
    // daemons started here live as long as the device's connection.
    auto ours = std::make_shared<std::vector<std::unique_ptr<DaemonProcess>>>();
    if (daemon) ours->push_back(std::move(daemon));
    TransportFactory restart = [options, path, ours]() -> proto::Result<std::unique_ptr<proto::Transport>> {
        std::erase_if(*ours, [](const auto& d) { return d->reapIfExited(); });  // crashed ones
        std::unique_ptr<DaemonProcess> spawned;
        auto t = reachDaemon(options, path, false, &spawned);
        if (spawned) ours->push_back(std::move(spawned));
        if (!t) return proto::fail(proto::Error::Kind::kDisconnected, t.error().message);
        return std::move(*t);
    };
    auto connection = NPU_TRY(Connection::open(std::move(transport), std::move(restart), options.shim));
    // Only the newest daemon this client started is killed: one someone else started is left to
    // them (the restart then fails with the reason, instead of ending another user's service).
    connection->setHostKiller([ours] { return !ours->empty() && ours->back()->killNow(); });
    return makeNpuDevice(std::move(connection));
}

}  // namespace npu::shim
