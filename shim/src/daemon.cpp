// Connecting to the firmware daemon (npu-fwd) over a Unix socket, starting it when asked.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "connection.h"
#include "npu/protocol/transport.h"
#include "npu/shim/npu_device.h"

extern char** environ;

namespace npu::shim {
namespace {

// The directory of the running program (its /proc/self/exe), empty when unknown.
std::string programDirectory() {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return {};
    std::string dir(path, static_cast<size_t>(n));
    const size_t slash = dir.rfind('/');
    return slash == std::string::npos ? std::string() : dir.substr(0, slash);
}

// Where npu-fwd is looked for, in order: the caller's choice, $NPU_FWD, beside the running
// program (an installed /usr/bin/npu finds /usr/bin/npu-fwd), where the build tree puts it
// relative to a program in build/tools or build/tests, and last PATH. No build path is baked in,
// so an installed or relocated build never runs a stale build tree's daemon.
std::string findDaemon(const DaemonOptions& options) {
    if (!options.daemonPath.empty()) return options.daemonPath;
    if (const char* env = std::getenv("NPU_FWD"); env != nullptr && *env != '\0') return env;
    if (const std::string dir = programDirectory(); !dir.empty()) {
        for (const char* relative : {"/npu-fwd", "/../firmware/platform/host/daemon/npu-fwd"}) {
            const std::string candidate = dir + relative;
            if (access(candidate.c_str(), X_OK) == 0) return candidate;
        }
    }
    return "npu-fwd";  // from PATH
}

std::string describeExit(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status));
    return "stopped";
}

}  // namespace

std::string defaultSocketPath() {
    if (const char* dir = std::getenv("XDG_RUNTIME_DIR"); dir != nullptr && *dir != '\0') {
        return std::string(dir) + "/npu-fwd.sock";
    }
    return "/tmp/npu-fwd-" + std::to_string(getuid()) + ".sock";
}

Result<std::shared_ptr<hal::IDevice>> connectNpuDaemon(const DaemonOptions& options) {
    const std::string path = options.socketPath.empty() ? defaultSocketPath() : options.socketPath;
    auto transport = proto::connectUnix(path, std::chrono::milliseconds(200));
    std::unique_ptr<DaemonProcess> daemon;
    if (transport && !options.hwConfigPath.empty()) {
        return invalidArgument(
            "--hw-config: a firmware daemon already listens on " + path +
            " with the hardware config it was started with; stop it, or start it with npu-fwd "
            "--hw-config " +
            options.hwConfigPath);
    }
    if (!transport) {
        if (!options.spawnIfAbsent) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "no firmware daemon listens on " + path + " (" + transport.error().message +
                            "); start one with: npu-fwd --socket " + path);
        }
        const std::string binary = findDaemon(options);
        std::vector<std::string> args = {binary, "--socket", path};
        if (!options.hwConfigPath.empty()) args.insert(args.end(), {"--hw-config", options.hwConfigPath});
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid_t pid = 0;
        int rc = posix_spawnp(&pid, binary.c_str(), nullptr, nullptr, argv.data(), environ);
        if (rc != 0) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "cannot start the firmware daemon '" + binary + "': " + std::strerror(rc));
        }
        daemon = std::make_unique<DaemonProcess>(pid);
        const auto until = std::chrono::steady_clock::now() + options.startTimeout;
        while (true) {
            int status = 0;
            if (waitpid(pid, &status, WNOHANG) == pid) {
                daemon.release();  // already reaped
                return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, "the firmware daemon '" + binary + "' " +
                                                                      describeExit(status) +
                                                                      " before listening on " + path);
            }
            transport = proto::connectUnix(path, std::chrono::milliseconds(100));
            if (transport) break;
            if (std::chrono::steady_clock::now() >= until) {
                return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                            "the firmware daemon '" + binary + "' did not listen on " + path + " within " +
                                std::to_string(options.startTimeout.count()) + " ms");
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    auto connection = NPU_TRY(Connection::open(std::move(*transport), options.shim));
    if (daemon) connection->adoptDaemon(std::move(daemon));
    return makeNpuDevice(std::move(connection));
}

}  // namespace npu::shim
