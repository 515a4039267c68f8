// The qemu transport (npu/protocol/qemu_transport.h): spawns npu-qemu-bridge and
// qemu-system-arm, owns their process groups, moves requests through the DDR ring and reads
// replies from UART0's chardev socket. Every wait is sliced so that a dead child is noticed
// within kLivenessSlice.
#include "npu/protocol/qemu_transport.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <initializer_list>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "npu/protocol/ddr_ring.h"
#include "npu/protocol/program_directory.h"
#include "npu/protocol/vlog.h"

namespace npu::proto {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kDdrBytes = 2ull << 30;  // mps3-an547's DDR, all of it file-backed
constexpr std::chrono::milliseconds kLivenessSlice{100};
constexpr std::chrono::milliseconds kRingFullPause{1};
constexpr int kChildDdrFd = 3;     // where the children find the DDR memfd
constexpr int kChildListenFd = 4;  // and the bridge its listening socket

std::string errnoText(const std::string& what) {
    return what + ": " + std::strerror(errno);
}

std::string envOr(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

std::string findOnPath(const std::string& name) {
    if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : std::string();
    std::stringstream path(envOr("PATH", "/usr/bin:/bin"));
    for (std::string dir; std::getline(path, dir, ':');) {
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return {};
}

// The last `maxBytes` of a log file (read through an fd: the file is unlinked once QEMU runs),
// on one line, for error messages.
std::string tailOf(const UniqueFd& log, size_t maxBytes = 400) {
    struct stat st {};
    if (!log || fstat(log.get(), &st) != 0) return "(unavailable)";
    const off_t size = st.st_size;
    const off_t from = size > static_cast<off_t>(maxBytes) ? size - static_cast<off_t>(maxBytes) : 0;
    std::string text(static_cast<size_t>(size - from), '\0');
    const ssize_t n = pread(log.get(), text.data(), text.size(), from);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    if (from > 0) text = "..." + text;
    for (char& c : text) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text.empty() ? "(empty)" : text;
}

// A log file the parent can read back and a child writes to (O_APPEND: the child's writes
// always land at the end whatever the parent reads).
UniqueFd openLog(const std::string& path) {
    return UniqueFd(open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600));
}

std::string describeStatus(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
    return "stopped";
}

struct FdMapping {
    int source;
    int target;
};

// fork + exec in a new process group that dies with this process. Only async-signal-safe
// calls between fork and exec (argv is built before).
Result<pid_t> forkExec(const std::vector<std::string>& argv, const std::vector<FdMapping>& fds, int logFd) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) return fail(Error::Kind::kIo, errnoText("fork(" + argv[0] + ")"));
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
        const int null = open("/dev/null", O_RDONLY);
        dup2(null, 0);
        dup2(logFd, 1);
        dup2(logFd, 2);
        int moved[4];
        for (size_t i = 0; i < fds.size() && i < 4; ++i) moved[i] = fcntl(fds[i].source, F_DUPFD, 20);
        for (size_t i = 0; i < fds.size() && i < 4; ++i) dup2(moved[i], fds[i].target);  // clears CLOEXEC
        execv(args[0], args.data());
        _exit(127);
    }
    setpgid(pid, pid);  // also here: no window in which a kill of the group misses the child
    return pid;
}

// PR_SET_PDEATHSIG fires when the *thread* that forked the child ends, not the process. The shim
// restarts a lost QEMU on whichever caller's thread met the loss; forked there, the new QEMU was
// killed as soon as that thread ended. So every child is forked by one thread that lives as long
// as the process.
class Spawner {
public:
    static Result<pid_t> run(const std::function<Result<pid_t>()>& forkChild) {
        static Spawner* spawner = new Spawner;  // never destroyed: its thread runs until exit
        std::packaged_task<Result<pid_t>()> task(forkChild);
        auto result = task.get_future();
        {
            std::lock_guard lock(spawner->mutex_);
            spawner->queue_.push_back(std::move(task));
        }
        spawner->wake_.notify_one();
        return result.get();
    }

private:
    Spawner() {
        std::thread([this] { loop(); }).detach();
    }
    [[noreturn]] void loop() {
        for (;;) {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return !queue_.empty(); });
            auto task = std::move(queue_.front());
            queue_.pop_front();
            lock.unlock();
            task();
        }
    }
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::packaged_task<Result<pid_t>()>> queue_;
};

Result<pid_t> spawn(const std::vector<std::string>& argv, const std::vector<FdMapping>& fds, int logFd) {
    return Spawner::run([&] { return forkExec(argv, fds, logFd); });
}

class TempDir {
public:
    static Result<TempDir> create() {
        std::string pattern = envOr("TMPDIR", "/tmp") + "/npu-qemu-XXXXXX";
        if (mkdtemp(pattern.data()) == nullptr)
            return fail(Error::Kind::kIo, errnoText("mkdtemp(" + pattern + ")"));
        TempDir d;
        d.path_ = pattern;
        return d;
    }
    TempDir() = default;
    TempDir(TempDir&& o) noexcept : path_(std::exchange(o.path_, {})) {}
    TempDir& operator=(TempDir&& o) noexcept {
        std::swap(path_, o.path_);
        return *this;
    }
    ~TempDir() { remove(); }
    // Once QEMU has connected and opened its files nothing needs the paths any more: removing
    // them then leaves nothing behind even if this process ends without destructors.
    void remove() {
        if (path_.empty()) return;
        for (const char* f : {"uart0", "uart1", "console.log", "qemu.log", "bridge.log"})
            unlink((path_ + "/" + f).c_str());
        rmdir(path_.c_str());
        path_.clear();
    }
    std::string file(const char* name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

Result<UniqueFd> listenUnix(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path))
        return fail(Error::Kind::kInvalidArgument, "socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return fail(Error::Kind::kIo, errnoText("socket"));
    if (bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd.get(), 1) != 0) {
        return fail(Error::Kind::kIo, errnoText("bind/listen " + path));
    }
    return fd;
}

}  // namespace

std::string programDirectory() {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return {};
    std::string dir(path, static_cast<size_t>(n));
    const size_t slash = dir.rfind('/');
    return slash == std::string::npos ? std::string() : dir.substr(0, slash);
}

namespace {

// Where the image or the bridge is looked for when neither the caller nor the environment names
// it: relative to the running program (an installed /usr/bin/npu finds its neighbours under
// /usr; a program in the build tree's tools/ or tests/ finds the build tree's), then where
// `meson install` puts it (a vendor's program linking the library from elsewhere). No build path
// is compiled in, so an installed or relocated program never runs a stale build tree's image.
// Returns the first candidate that passes access(mode), else every candidate tried.
struct Found {
    std::string path;
    std::string tried;
};
Found findInstalled(std::initializer_list<const char*> besideProgram, const char* installed, int mode) {
    std::vector<std::string> candidates;
    if (const std::string dir = programDirectory(); !dir.empty()) {
        for (const char* relative : besideProgram) candidates.push_back(dir + "/" + relative);
    }
    if (installed != nullptr && *installed != '\0') candidates.emplace_back(installed);
    Found f;
    for (const auto& c : candidates) {
        if (access(c.c_str(), mode) == 0) return {c, {}};
        f.tried += (f.tried.empty() ? "" : ", ") + c;
    }
    return f;
}

#ifndef NPU_QEMU_IMAGE_INSTALL_PATH
#define NPU_QEMU_IMAGE_INSTALL_PATH ""
#endif
#ifndef NPU_QEMU_BRIDGE_INSTALL_PATH
#define NPU_QEMU_BRIDGE_INSTALL_PATH ""
#endif

}  // namespace

Result<QemuPaths> resolveQemuPaths(const QemuOptions& o) {
    QemuPaths p;
    const std::string qemu = o.qemuBinary.empty() ? envOr("NPU_QEMU", "qemu-system-arm") : o.qemuBinary;
    p.qemuBinary = findOnPath(qemu);
    if (p.qemuBinary.empty()) {
        return fail(Error::Kind::kIo, "qemu transport: " + qemu +
                                          " not found (install qemu-system-arm: scripts/setup.sh; " +
                                          "or set NPU_QEMU to the emulator)");
    }
    p.imagePath = o.imagePath.empty() ? envOr("NPU_QEMU_IMAGE", "") : o.imagePath;
    if (p.imagePath.empty()) {
        Found f = findInstalled({"../share/npu-stack/firmware/npu-fw-m55.elf", "../firmware/npu-fw-m55.elf"},
                                NPU_QEMU_IMAGE_INSTALL_PATH, R_OK);
        if (f.path.empty()) {
            return fail(Error::Kind::kIo, "qemu transport: no firmware image (looked for " + f.tried +
                                              "; build it with scripts/cross-build-firmware.sh, or set " +
                                              "NPU_QEMU_IMAGE)");
        }
        p.imagePath = f.path;
    } else if (access(p.imagePath.c_str(), R_OK) != 0) {
        return fail(Error::Kind::kIo, "qemu transport: firmware image '" + p.imagePath + "' is missing");
    }
    p.bridgePath = o.bridgePath.empty() ? envOr("NPU_QEMU_BRIDGE", "") : o.bridgePath;
    if (p.bridgePath.empty()) {
        Found f = findInstalled({"npu-qemu-bridge", "../hwsim/npu-qemu-bridge"}, NPU_QEMU_BRIDGE_INSTALL_PATH,
                                X_OK);
        if (f.path.empty()) {
            return fail(Error::Kind::kIo,
                        "qemu transport: no NPU bridge (looked for " + f.tried +
                            "; build target hwsim/npu-qemu-bridge, or set NPU_QEMU_BRIDGE)");
        }
        p.bridgePath = f.path;
    } else if (access(p.bridgePath.c_str(), X_OK) != 0) {
        return fail(Error::Kind::kIo, "qemu transport: NPU bridge '" + p.bridgePath + "' is missing");
    }
    return p;
}

namespace {

// The request ring as the host sees it: a mapping of its part of the DDR memfd.
class RingWriter {
public:
    static Result<RingWriter> map(int ddrFd) {
        const size_t bytes = kQemuRingDataOffset + kQemuRingBytes - kQemuRingHeaderOffset;
        void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ddrFd,
                       static_cast<off_t>(kQemuRingHeaderOffset));
        if (p == MAP_FAILED) return fail(Error::Kind::kIo, errnoText("mmap(DDR request ring)"));
        RingWriter w;
        w.base_ = static_cast<uint8_t*>(p);
        w.bytes_ = bytes;
        auto* h = w.header();
        h->capacity = kQemuRingBytes;
        h->head = 0;
        h->tail = 0;
        h->flags = vlogEnabled("firmware") ? kDdrRingFlagFirmwareLog : 0;
        h->magic = kDdrRingMagic;
        return w;
    }
    RingWriter() = default;
    RingWriter(RingWriter&& o) noexcept : base_(std::exchange(o.base_, nullptr)), bytes_(o.bytes_) {}
    RingWriter& operator=(RingWriter&& o) noexcept {
        std::swap(base_, o.base_);
        std::swap(bytes_, o.bytes_);
        return *this;
    }
    ~RingWriter() {
        if (base_ != nullptr) munmap(base_, bytes_);
    }

    // Copies as much of `bytes` as fits; returns how much (0 when the firmware has not caught up).
    size_t put(std::span<const uint8_t> bytes) {
        DdrRingHeader* h = header();
        const uint32_t head = h->head;  // only this side writes it
        const uint32_t tail = std::atomic_ref<uint32_t>(h->tail).load(std::memory_order_acquire);
        const uint32_t free = kQemuRingBytes - (head - tail);
        const uint32_t n = static_cast<uint32_t>(std::min<size_t>(free, bytes.size()));
        uint8_t* data = base_ + (kQemuRingDataOffset - kQemuRingHeaderOffset);
        const uint32_t at = head & (kQemuRingBytes - 1);
        const uint32_t first = std::min(n, kQemuRingBytes - at);
        std::memcpy(data + at, bytes.data(), first);
        std::memcpy(data, bytes.data() + first, n - first);
        std::atomic_ref<uint32_t>(h->head).store(head + n, std::memory_order_release);
        return n;
    }

private:
    DdrRingHeader* header() { return reinterpret_cast<DdrRingHeader*>(base_); }
    uint8_t* base_ = nullptr;
    size_t bytes_ = 0;
};

class QemuTransport final : public Transport {
public:
    QemuTransport(const QemuOptions& options, QemuPaths paths, TempDir dir, UniqueFd ddr, RingWriter ring)
        : options_(options),
          paths_(std::move(paths)),
          dir_(std::move(dir)),
          ddr_(std::move(ddr)),
          ring_(std::move(ring)),
          description_("qemu mps3-an547 (" + paths_.imagePath + ")") {}
    ~QemuTransport() override {
        shutdown();
        killAndReap();
    }

    Result<void> start();
    Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override;
    Result<size_t> read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                        std::chrono::milliseconds timeout) override;
    void shutdown() override {
        shut_ = true;
        if (uart0_) uart0_->shutdown();
    }
    std::string describe() const override { return description_; }
    QemuProcesses processes() const { return {qemuPid_, bridgePid_}; }
    std::string console() const { return tailOf(consoleLog_, 2000); }
    Result<void> sendDoorbells(size_t count);

private:
    Result<void> spawnBridge();
    Result<void> spawnQemu();
    Result<void> acceptUart0(UnixListener& listener);
    Result<void> ringDoorbells(size_t count);  // writeMutex_ held
    // Why the transport is dead (a child exited), or empty while both run.
    std::string deadChild();
    std::string childReport();
    void killAndReap();
    void forwardConsole();

    QemuOptions options_;
    QemuPaths paths_;
    TempDir dir_;
    UniqueFd ddr_;
    UniqueFd qemuLog_, bridgeLog_, consoleLog_;  // the children's output, read for error messages
    RingWriter ring_;
    std::string description_;
    std::unique_ptr<Transport> uart0_;
    pid_t qemuPid_ = -1;
    pid_t bridgePid_ = -1;
    std::mutex childMutex_;
    int qemuStatus_ = -1;  // waitpid status once reaped
    int bridgeStatus_ = -1;
    bool qemuGraceUsed_ = false;  // deadChild waited for QEMU once after the bridge died
    std::mutex writeMutex_;
    std::atomic<bool> shut_{false};
    std::atomic<bool> ddrSent_{false};
    std::mutex consoleMutex_;
    off_t consoleForwarded_ = 0;  // bytes of console.log already passed to NPU_VLOG=firmware
    std::string consoleLine_;     // an unfinished line
};

Result<void> QemuTransport::spawnBridge() {
    auto listenFd = listenUnix(dir_.file("uart1"));
    if (!listenFd) return std::unexpected(listenFd.error());
    bridgeLog_ = openLog(dir_.file("bridge.log"));
    std::vector<std::string> argv = {paths_.bridgePath,
                                     "--ddr-fd",
                                     std::to_string(kChildDdrFd),
                                     "--listen-fd",
                                     std::to_string(kChildListenFd),
                                     "--accept-timeout-ms",
                                     std::to_string(options_.startTimeout.count())};
    if (!options_.hwConfigPath.empty()) {
        argv.push_back("--hw-config");
        argv.push_back(options_.hwConfigPath);
    }
    auto pid = spawn(argv, {{ddr_.get(), kChildDdrFd}, {listenFd->get(), kChildListenFd}}, bridgeLog_.get());
    if (!pid) return std::unexpected(pid.error());
    bridgePid_ = *pid;
    return {};
}

Result<void> QemuTransport::spawnQemu() {
    qemuLog_ = openLog(dir_.file("qemu.log"));
    consoleLog_ = openLog(dir_.file("console.log"));  // QEMU's file chardev opens the same file
    const std::string ddrObject = "memory-backend-file,id=ddr,size=" + std::to_string(kDdrBytes) +
                                  ",mem-path=/proc/self/fd/" + std::to_string(kChildDdrFd) + ",share=on";
    const std::vector<std::string> argv = {
        paths_.qemuBinary, "-M", "mps3-an547,memory-backend=ddr", "-m", "2G", "-object", ddrObject,
        "-nodefaults", "-display", "none", "-kernel", paths_.imagePath,
        // UART0 last: once the transport accepts it, QEMU has
        // opened the others and their paths can go.
        "-chardev", "socket,id=uart1,path=" + dir_.file("uart1"), "-chardev",
        "file,id=uart2,path=" + dir_.file("console.log"), "-chardev",
        "socket,id=uart0,path=" + dir_.file("uart0"), "-serial", "chardev:uart0", "-serial", "chardev:uart1",
        "-serial", "chardev:uart2"};
    auto pid = spawn(argv, {{ddr_.get(), kChildDdrFd}}, qemuLog_.get());
    if (!pid) return std::unexpected(pid.error());
    qemuPid_ = *pid;
    return {};
}

Result<void> QemuTransport::acceptUart0(UnixListener& listener) {
    const auto deadline = Clock::now() + options_.startTimeout;
    for (;;) {
        // QEMU's chardev speaks no reply-channel offer: every byte on UART0 is the firmware's.
        auto conn = listener.accept(kLivenessSlice, UnixListener::ReplyChannel::kNone);
        if (conn) {
            uart0_ = std::move(*conn);
            return {};
        }
        if (conn.error().kind != Error::Kind::kTimeout) return std::unexpected(conn.error());
        if (std::string dead = deadChild(); !dead.empty()) return fail(Error::Kind::kDisconnected, dead);
        if (Clock::now() > deadline) {
            return fail(Error::Kind::kTimeout, description_ + ": QEMU did not connect its UART0 within " +
                                                   std::to_string(options_.startTimeout.count()) + " ms; " +
                                                   childReport());
        }
    }
}

Result<void> QemuTransport::start() {
    auto listener = UnixListener::listen(dir_.file("uart0"));
    if (!listener) return std::unexpected(listener.error());
    if (auto r = spawnBridge(); !r) return r;
    if (auto r = spawnQemu(); !r) return r;
    if (auto r = acceptUart0(**listener); !r) return r;
    dir_.remove();
    return {};
}

std::string QemuTransport::deadChild() {
    std::lock_guard lock(childMutex_);
    int status = 0;
    if (qemuStatus_ < 0 && qemuPid_ > 0 && waitpid(qemuPid_, &status, WNOHANG) == qemuPid_)
        qemuStatus_ = status;
    if (bridgeStatus_ < 0 && bridgePid_ > 0 && waitpid(bridgePid_, &status, WNOHANG) == bridgePid_)
        bridgeStatus_ = status;
    // The bridge exits as soon as QEMU's end of its socket closes, which can be before the
    // dying QEMU can be reaped: give QEMU a moment, so that the error names the first to die.
    for (int i = 0; i < 20 && !qemuGraceUsed_ && bridgeStatus_ >= 0 && qemuStatus_ < 0 && qemuPid_ > 0; ++i) {
        if (waitpid(qemuPid_, &status, WNOHANG) == qemuPid_)
            qemuStatus_ = status;
        else
            std::this_thread::sleep_for(10ms);
    }
    if (bridgeStatus_ >= 0) qemuGraceUsed_ = true;
    if (qemuStatus_ >= 0) {
        return description_ + ": QEMU " + describeStatus(qemuStatus_) + " (its output: " + tailOf(qemuLog_) +
               "; firmware console: " + tailOf(consoleLog_) + ")";
    }
    if (bridgeStatus_ >= 0) {
        return description_ + ": the NPU bridge " + describeStatus(bridgeStatus_) +
               " (its output: " + tailOf(bridgeLog_) + ")";
    }
    return {};
}

std::string QemuTransport::childReport() {
    return "QEMU output: " + tailOf(qemuLog_) + "; bridge output: " + tailOf(bridgeLog_) +
           "; firmware console: " + tailOf(consoleLog_);
}

void QemuTransport::killAndReap() {
    std::lock_guard lock(childMutex_);
    for (auto [pid, status] : {std::pair{qemuPid_, &qemuStatus_}, std::pair{bridgePid_, &bridgeStatus_}}) {
        if (pid <= 0 || *status >= 0) continue;
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        int s = 0;
        while (waitpid(pid, &s, 0) < 0 && errno == EINTR) {
        }
        *status = s;
    }
}

Result<void> QemuTransport::ringDoorbells(size_t count) {
    const std::vector<uint8_t> bells(count, 0);  // the value does not matter: the ring's head does
    if (auto r = uart0_->write(bells); !r) {
        std::string dead = deadChild();
        return fail(Error::Kind::kDisconnected, dead.empty() ? r.error().message : dead);
    }
    return {};
}

Result<void> QemuTransport::sendDoorbells(size_t count) {
    std::lock_guard lock(writeMutex_);
    return ringDoorbells(count);
}

Result<void> QemuTransport::write(std::span<const uint8_t> bytes, std::span<const int> fds) {
    if (!fds.empty()) {
        return fail(Error::Kind::kInvalidArgument,
                    description_ + ": cannot pass file descriptors to the emulated SoC");
    }
    std::lock_guard lock(writeMutex_);
    auto lastProgress = Clock::now();
    size_t done = 0;
    while (done < bytes.size()) {
        if (shut_) return fail(Error::Kind::kDisconnected, description_ + ": shut down");
        const size_t n = ring_.put(bytes.subspan(done));
        if (n > 0) {
            done += n;
            lastProgress = Clock::now();
            if (auto r = ringDoorbells(1); !r) return r;
            continue;
        }
        if (std::string dead = deadChild(); !dead.empty()) return fail(Error::Kind::kDisconnected, dead);
        if (Clock::now() - lastProgress > options_.writeTimeout) {
            return fail(Error::Kind::kTimeout, description_ + ": the firmware took no request bytes for " +
                                                   std::to_string(options_.writeTimeout.count()) + " ms (" +
                                                   std::to_string(bytes.size() - done) +
                                                   " bytes left to send)");
        }
        std::this_thread::sleep_for(kRingFullPause);
    }
    return {};
}

// The firmware's console (UART2: its boot lines, and its log under NPU_VLOG=firmware, which the
// ring header's flags turned on) as NPU_VLOG=firmware lines, read on from where it was left.
void QemuTransport::forwardConsole() {
    if (!vlogEnabled("firmware") || !consoleLog_) return;
    std::lock_guard lock(consoleMutex_);
    char chunk[4096];
    for (;;) {
        const ssize_t n = pread(consoleLog_.get(), chunk, sizeof(chunk), consoleForwarded_);
        if (n <= 0) return;
        consoleForwarded_ += n;
        for (ssize_t i = 0; i < n; ++i) {
            if (chunk[i] == '\r') continue;
            if (chunk[i] != '\n') {
                if (consoleLine_.size() < 1024) consoleLine_ += chunk[i];
                continue;
            }
            if (!consoleLine_.empty()) vlog("firmware", "%s", consoleLine_.c_str());
            consoleLine_.clear();
        }
    }
}

Result<size_t> QemuTransport::read(std::span<uint8_t> buffer, std::vector<UniqueFd>* fds,
                                   std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
        forwardConsole();
        if (std::string dead = deadChild(); !dead.empty()) return fail(Error::Kind::kDisconnected, dead);
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        auto r = uart0_->read(buffer, nullptr, std::clamp(left, 0ms, kLivenessSlice));
        if (r) {
            forwardConsole();  // the lines logged while the firmware served this reply
            if (options_.replyTap) options_.replyTap(buffer.first(*r));
            // The DDR travels with the first reply bytes (the Hello reply's), once.
            if (fds != nullptr && *r > 0 && !ddrSent_.exchange(true))
                fds->emplace_back(fcntl(ddr_.get(), F_DUPFD_CLOEXEC, 0));
            return r;
        }
        if (r.error().kind != Error::Kind::kTimeout) {
            if (shut_) return r;
            // UART0 closed: QEMU is exiting; give it a moment so the error can say why.
            for (int i = 0; i < 10; ++i) {
                if (std::string dead = deadChild(); !dead.empty())
                    return fail(Error::Kind::kDisconnected, dead);
                std::this_thread::sleep_for(20ms);
            }
            return fail(Error::Kind::kDisconnected,
                        description_ + ": UART0 closed (" + r.error().message + ")");
        }
        if (Clock::now() >= deadline) return r;
    }
}

}  // namespace

Result<std::unique_ptr<Transport>> startQemu(const QemuOptions& options) {
    auto paths = resolveQemuPaths(options);
    if (!paths) return std::unexpected(paths.error());
    auto dir = TempDir::create();
    if (!dir) return std::unexpected(dir.error());
    UniqueFd ddr(memfd_create("npu-qemu-ddr", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!ddr) return fail(Error::Kind::kIo, errnoText("memfd_create(emulated DDR)"));
    if (ftruncate(ddr.get(), static_cast<off_t>(kDdrBytes)) != 0)
        return fail(Error::Kind::kIo, errnoText("ftruncate(emulated DDR)"));
    // Sealed against resizing, as the host platforms seal their DRAM: the shim refuses to map a
    // memory fd that could shrink under it (SIGBUS; docs/reliability.md).
    if (fcntl(ddr.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)
        return fail(Error::Kind::kIo, errnoText("fcntl(F_ADD_SEALS, emulated DDR)"));
    auto ring = RingWriter::map(ddr.get());
    if (!ring) return std::unexpected(ring.error());
    auto transport = std::make_unique<QemuTransport>(options, std::move(*paths), std::move(*dir),
                                                     std::move(ddr), std::move(*ring));
    if (auto r = transport->start(); !r) return std::unexpected(r.error());
    return std::unique_ptr<Transport>(std::move(transport));
}

QemuProcesses qemuProcesses(const Transport& transport) {
    const auto* q = dynamic_cast<const QemuTransport*>(&transport);
    return q != nullptr ? q->processes() : QemuProcesses{};
}

std::string qemuConsole(const Transport& transport) {
    const auto* q = dynamic_cast<const QemuTransport*>(&transport);
    return q != nullptr ? q->console() : std::string();
}

Result<void> qemuSendDoorbells(Transport& transport, size_t count) {
    auto* q = dynamic_cast<QemuTransport*>(&transport);
    if (q == nullptr)
        return fail(Error::Kind::kInvalidArgument, transport.describe() + ": not a qemu transport");
    return q->sendDoorbells(count);
}

}  // namespace npu::proto
