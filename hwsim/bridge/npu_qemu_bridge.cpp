// npu-qemu-bridge: serves the simulated NPU's registers to a firmware image running under QEMU.
// It maps the emulated SoC's DDR (the memory-backend-file QEMU shares), runs a hwsim::Device
// over its first kQemuDeviceDramBytes, and answers each one-byte doorbell that arrives on the
// socket QEMU's UART1 connects to by performing the mailbox request (hwsim/isa/reg_mailbox.h).
// It blocks in read() between doorbells (no polling) and exits when QEMU closes the socket.
//
//   npu-qemu-bridge (--ddr-fd N | --ddr FILE) (--listen-fd N | --socket PATH) [--hw-config FILE]
//                   [--accept-timeout-ms N] [--stats]
// Exit status: 0 when QEMU disconnected, 2 for bad arguments, 1 for any other failure.

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "npu/hwsim/config.h"
#include "npu/hwsim/device.h"
#include "npu/hwsim/mailbox_server.h"

namespace {

struct Options {
    int ddrFd = -1;
    std::string ddrPath;
    int listenFd = -1;
    std::string socketPath;
    std::string hwConfigPath;
    int acceptTimeoutMs = 10'000;
    bool stats = false;
};

int usage(const char* problem) {
    std::fprintf(stderr,
                 "npu-qemu-bridge: %s\nusage: npu-qemu-bridge (--ddr-fd N | --ddr FILE) (--listen-fd N | "
                 "--socket PATH) "
                 "[--hw-config FILE] [--accept-timeout-ms N] [--stats]\n",
                 problem);
    return 2;
}

bool parseInt(const char* text, int* out) {
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < 0 || v > 1'000'000'000) return false;
    *out = static_cast<int>(v);
    return true;
}

// Returns an empty string on success, else what was wrong.
std::string parseArgs(int argc, char** argv, Options* o) {
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--stats") {
            o->stats = true;
            continue;
        }
        if (i + 1 >= argc) return a + " needs a value";
        const char* v = argv[++i];
        if (a == "--ddr-fd" && parseInt(v, &o->ddrFd)) continue;
        if (a == "--listen-fd" && parseInt(v, &o->listenFd)) continue;
        if (a == "--accept-timeout-ms" && parseInt(v, &o->acceptTimeoutMs)) continue;
        if (a == "--ddr")
            o->ddrPath = v;
        else if (a == "--socket")
            o->socketPath = v;
        else if (a == "--hw-config")
            o->hwConfigPath = v;
        else
            return "bad option or value: " + a + " " + v;
    }
    if ((o->ddrFd < 0) == o->ddrPath.empty()) return "give exactly one of --ddr-fd and --ddr";
    if ((o->listenFd < 0) == o->socketPath.empty()) return "give exactly one of --listen-fd and --socket";
    return {};
}

int listenAt(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) return -1;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    unlink(path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 1) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int acceptWithin(int listenFd, int timeoutMs) {
    pollfd p{listenFd, POLLIN, 0};
    if (poll(&p, 1, timeoutMs) <= 0) return -1;
    return accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
}

// Reads doorbells until QEMU disconnects; each one is served and its byte sent back.
int serveDoorbells(int conn, npu::sim::MailboxServer& server) {
    uint8_t bells[256];
    for (;;) {
        const ssize_t n = read(conn, bells, sizeof(bells));
        if (n == 0) return 0;
        if (n < 0) {
            if (errno == EINTR) continue;
            std::fprintf(stderr, "npu-qemu-bridge: read(doorbell socket): %s\n", std::strerror(errno));
            return 1;
        }
        for (ssize_t i = 0; i < n; ++i) {
            const uint8_t ack = server.serve(bells[i]);
            if (send(conn, &ack, 1, MSG_NOSIGNAL) != 1) return 0;  // QEMU gone while we answered
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    if (std::string problem = parseArgs(argc, argv, &o); !problem.empty()) return usage(problem.c_str());
    npu::sim::HwConfig config;
    if (!o.hwConfigPath.empty()) {
        auto loaded = npu::sim::loadHwConfig(o.hwConfigPath);
        if (!loaded)
            return std::fprintf(stderr, "npu-qemu-bridge: --hw-config: %s\n", loaded.error().c_str()), 2;
        config = *loaded;
    }
    const int ddrFd = o.ddrFd >= 0 ? o.ddrFd : open(o.ddrPath.c_str(), O_RDWR | O_CLOEXEC);
    struct stat st {};
    if (ddrFd < 0 || fstat(ddrFd, &st) != 0) {
        return std::fprintf(stderr, "npu-qemu-bridge: cannot open the DDR file (%s): %s\n",
                            o.ddrPath.empty() ? "--ddr-fd" : o.ddrPath.c_str(), std::strerror(errno)),
               1;
    }
    const uint64_t needed = npu::isa::kQemuMailboxOffset + sizeof(npu::isa::RegMailbox);
    if (static_cast<uint64_t>(st.st_size) < needed) {
        return std::fprintf(stderr,
                            "npu-qemu-bridge: the DDR file has %lld bytes, the map needs at least %llu\n",
                            static_cast<long long>(st.st_size), static_cast<unsigned long long>(needed)),
               1;
    }
    void* p = mmap(nullptr, needed, PROT_READ | PROT_WRITE, MAP_SHARED, ddrFd, 0);
    if (p == MAP_FAILED)
        return std::fprintf(stderr, "npu-qemu-bridge: mmap(DDR): %s\n", std::strerror(errno)), 1;
    auto* ddr = static_cast<uint8_t*>(p);
    auto device = npu::sim::Device::create(config, ddr, npu::isa::kQemuDeviceDramBytes);
    if (!device) return std::fprintf(stderr, "npu-qemu-bridge: %s\n", device.error().c_str()), 2;
    npu::sim::MailboxServer server(
        **device, reinterpret_cast<npu::isa::RegMailbox*>(ddr + npu::isa::kQemuMailboxOffset));

    const int listenFd = o.listenFd >= 0 ? o.listenFd : listenAt(o.socketPath);
    if (listenFd < 0)
        return std::fprintf(stderr, "npu-qemu-bridge: cannot listen at %s: %s\n", o.socketPath.c_str(),
                            std::strerror(errno)),
               1;
    const int conn = acceptWithin(listenFd, o.acceptTimeoutMs);
    if (conn < 0) {
        return std::fprintf(stderr, "npu-qemu-bridge: QEMU did not connect its UART1 within %d ms\n",
                            o.acceptTimeoutMs),
               1;
    }
    const int rc = serveDoorbells(conn, server);
    if (o.stats) {
        const auto& s = server.stats();
        std::fprintf(stderr,
                     "npu-qemu-bridge: %llu requests (%llu reads, %llu writes, %llu irq polls, %llu "
                     "rejected), %llu NPU cycles\n",
                     (unsigned long long)s.requests, (unsigned long long)s.reads,
                     (unsigned long long)s.writes, (unsigned long long)s.irqPolls,
                     (unsigned long long)s.rejected, (unsigned long long)(*device)->cycles());
    }
    return rc;
}
