// The firmware host platform: device DRAM in a memfd, the simulated NPU behind SimPlatform, the
// portable Runtime and RpcServer, and a loop that moves bytes between a transport and the server.
#include "npu/fw/platform/host/firmware_host.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "npu/fw/arena.h"
#include "npu/fw/rpc_server.h"
#include "npu/fw/runtime.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/vlog.h"
#include "sim_platform.h"

namespace npu::fw::host {

namespace {
constexpr std::chrono::milliseconds kPollInterval{50};  // how often a waiting loop checks stop()
constexpr uint64_t kServerScratchBytes = 64ull
                                         << 20;  // per-request temporaries: model decoding, cached blobs
}  // namespace

struct FirmwareHost::Impl final : public FrameSink, public FaultInjector, public LogSink {
    bool enabled() override { return proto::vlogEnabled("firmware"); }
    void write(const char* line) override { proto::vlog("firmware", "%s", line); }

    FirmwareHostConfig config;
    int dramFd = -1;
    uint8_t* dram = nullptr;
    std::unique_ptr<SimPlatform> platform;
    std::unique_ptr<uint8_t[]> runtimeMemory;
    std::unique_ptr<uint8_t[]> serverMemory;
    std::unique_ptr<Arena> runtimeArena;
    std::unique_ptr<Arena> serverArena;
    std::unique_ptr<Runtime> runtime;
    std::unique_ptr<RpcServer> server;
    std::mutex serveMutex;                // one connection at a time
    proto::Transport* current = nullptr;  // the connection being served
    std::atomic<bool> stop{false};
    uint64_t crashAtUs = 0;  // an injected crash is due then (0: none); serve loop thread only

    FwStatus injectFaults(const npu_proto_InjectFaultsRequest& r) override {
        sim::FaultConfig f;
        f.hangAtCommand = r.hang_at_command;
        f.dmaErrorAtTransfer = r.dma_error_at_transfer;
        f.sramFlipAfterCommand = r.sram_flip_after_command;
        f.sramFlipAddress = r.sram_flip_address;
        f.sramFlipBit = r.sram_flip_bit;
        f.sramEcc = r.sram_ecc;
        if (f.sramFlipAfterCommand != 0 &&
            (f.sramFlipAddress >= config.hw.scratchpadBytes || f.sramFlipBit > 7)) {
            return FwStatus::make(
                Code::kInvalidArgument,
                "InjectFaults: SRAM flip at byte %u bit %u is outside the %llu-byte scratchpad",
                f.sramFlipAddress, f.sramFlipBit, static_cast<unsigned long long>(config.hw.scratchpadBytes));
        }
        platform->armFaultsOnce(f);
        if (r.crash_after_ms > 0) crashAtUs = platform->nowUs() + uint64_t{r.crash_after_ms} * 1000;
        return FwStatus::okStatus();
    }
    bool crashDue() { return crashAtUs != 0 && platform->nowUs() >= crashAtUs; }

    ~Impl() {
        server.reset();
        runtime.reset();
        platform.reset();
        if (dram != nullptr) munmap(dram, config.dramBytes);
        if (dramFd >= 0) close(dramFd);
    }

    bool writeFrame(const uint8_t* bytes, size_t length, uint32_t method, uint16_t flags) override {
        if (current == nullptr) return false;
        // The handshake's reply carries the device DRAM (SCM_RIGHTS on unix, a dup in process).
        const bool hello = method == npu_proto_Method_METHOD_HELLO && (flags & proto::kFlagResponse) != 0 &&
                           (flags & proto::kFlagError) == 0;
        const int fds[1] = {dramFd};
        auto r = current->write(std::span<const uint8_t>(bytes, length),
                                hello ? std::span<const int>(fds, 1) : std::span<const int>());
        return r.has_value();
    }
};

FirmwareHost::FirmwareHost(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FirmwareHost::~FirmwareHost() {
    stop();
    if (thread_.joinable()) thread_.join();
}

int FirmwareHost::dramFd() const {
    return impl_->dramFd;
}

proto::Result<std::unique_ptr<FirmwareHost>> FirmwareHost::create(const FirmwareHostConfig& config) {
    using Kind = proto::Error::Kind;
    if (config.firmwareDramBytes == 0 || config.firmwareDramBytes >= config.dramBytes) {
        return proto::fail(Kind::kInvalidArgument, "firmware DRAM (" +
                                                       std::to_string(config.firmwareDramBytes) +
                                                       " bytes) must be a non-empty part of device DRAM (" +
                                                       std::to_string(config.dramBytes) + " bytes)");
    }
    auto impl = std::make_unique<Impl>();
    impl->config = config;
    impl->dramFd = memfd_create("npu-device-dram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (impl->dramFd < 0)
        return proto::fail(Kind::kIo, std::string("memfd_create(device DRAM): ") + std::strerror(errno));
    if (ftruncate(impl->dramFd, static_cast<off_t>(config.dramBytes)) != 0) {
        return proto::fail(Kind::kIo, "ftruncate(device DRAM, " + std::to_string(config.dramBytes) +
                                          "): " + std::strerror(errno));
    }
    // Clients get this fd: sealed so none can shrink it under the firmware's mapping (SIGBUS).
    if (fcntl(impl->dramFd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        return proto::fail(Kind::kIo, std::string("sealing the device DRAM memfd: ") + std::strerror(errno));
    }
    void* p = mmap(nullptr, config.dramBytes, PROT_READ | PROT_WRITE, MAP_SHARED, impl->dramFd, 0);
    if (p == MAP_FAILED)
        return proto::fail(Kind::kIo, std::string("mmap(device DRAM): ") + std::strerror(errno));
    impl->dram = static_cast<uint8_t*>(p);

    impl->platform = std::make_unique<SimPlatform>(config.hw, impl->dram, config.dramBytes);

    impl->runtimeMemory.reset(new uint8_t[config.arenaBytes]);
    impl->runtimeArena = std::make_unique<Arena>(impl->runtimeMemory.get(), config.arenaBytes);
    RuntimeConfig rc;
    rc.firmwareDramBytes = config.firmwareDramBytes;
    impl->runtime = std::make_unique<Runtime>(*impl->platform, *impl->runtimeArena, rc);
    if (FwStatus s = impl->runtime->init(); !s.ok()) {
        return proto::fail(Kind::kIo, std::string("firmware runtime init: ") + s.message);
    }

    RpcServerConfig sc;
    sc.maxPayloadBytes = config.maxPayloadBytes;
    sc.queueDepth = config.queueDepth;
    const HardwareInfo hw = impl->runtime->hardwareInfo();
    sc.hwId = hw.id;
    sc.hwVersion = hw.version;
    sc.deviceMemoryBytes = config.dramBytes;
    sc.hostWindowAddr = config.firmwareDramBytes;
    sc.hostWindowBytes = config.dramBytes - config.firmwareDramBytes;
    if (config.faultInjection) sc.faultInjector = impl.get();
    sc.log = impl.get();  // NPU_VLOG=firmware
    const size_t serverBytes = RpcServer::memoryNeeded(sc) + kServerScratchBytes;
    impl->serverMemory.reset(new uint8_t[serverBytes]);
    impl->serverArena = std::make_unique<Arena>(impl->serverMemory.get(), serverBytes);
    impl->server =
        std::make_unique<RpcServer>(*impl->runtime, *impl->platform, *impl->serverArena, *impl, sc);
    if (!impl->server->ok()) {
        return proto::fail(Kind::kResourceExhausted,
                           std::string("firmware RPC server: ") + impl->server->initStatus().message);
    }
    return std::unique_ptr<FirmwareHost>(new FirmwareHost(std::move(impl)));
}

void FirmwareHost::serve(proto::Transport& transport, const std::atomic<bool>* externalStop) {
    std::lock_guard lock(impl_->serveMutex);
    impl_->current = &transport;
    std::vector<uint8_t> buffer(64 * 1024);
    auto stopping = [&] { return impl_->stop.load() || (externalStop != nullptr && externalStop->load()); };
    bool crashed = false;
    while (!stopping() && !crashed) {
        auto n = transport.read(buffer, nullptr, kPollInterval);
        if (!n && n.error().kind != proto::Error::Kind::kTimeout) break;  // peer gone or transport broken
        if (n) impl_->server->onBytes(buffer.data(), *n);
        while (!(crashed = impl_->crashDue()) && impl_->server->poll()) {
        }
    }
    if (crashed) {
        // An injected crash: queued requests are never answered, the connection just drops.
        impl_->crashAtUs = 0;
        if (impl_->config.onCrash) impl_->config.onCrash();
        transport.shutdown();
    }
    impl_->server->onDisconnect();
    while (impl_->server->poll()) {
    }
    impl_->current = nullptr;
    // The next client starts from a clean firmware: drop whatever this one prepared.
    (void)impl_->runtime->reset();
}

void FirmwareHost::start(std::unique_ptr<proto::Transport> transport) {
    owned_ = std::move(transport);
    thread_ = std::thread([this] { serve(*owned_); });
}

void FirmwareHost::stop() {
    impl_->stop.store(true);
    if (owned_) owned_->shutdown();
}

namespace {
// The host end of a loopback channel that owns its firmware (declared first: stopped last).
class OwningLoopbackTransport final : public proto::Transport {
public:
    OwningLoopbackTransport(std::unique_ptr<FirmwareHost> firmware, std::unique_ptr<proto::Transport> hostEnd)
        : firmware_(std::move(firmware)), hostEnd_(std::move(hostEnd)) {}
    ~OwningLoopbackTransport() override {
        hostEnd_->shutdown();
        firmware_.reset();
    }
    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        return hostEnd_->write(bytes, fds);
    }
    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>* fds,
                               std::chrono::milliseconds timeout) override {
        return hostEnd_->read(buffer, fds, timeout);
    }
    void shutdown() override { hostEnd_->shutdown(); }
    std::string describe() const override { return hostEnd_->describe(); }

private:
    std::unique_ptr<FirmwareHost> firmware_;
    std::unique_ptr<proto::Transport> hostEnd_;
};
}  // namespace

proto::Result<std::unique_ptr<proto::Transport>> startLoopbackTransport(const FirmwareHostConfig& config) {
    auto loop = startLoopbackFirmware(config);
    if (!loop) return std::unexpected(loop.error());
    return std::unique_ptr<proto::Transport>(
        new OwningLoopbackTransport(std::move(loop->firmware), std::move(loop->hostEnd)));
}

proto::Result<LoopbackFirmware> startLoopbackFirmware(const FirmwareHostConfig& config) {
    auto firmware = FirmwareHost::create(config);
    if (!firmware) return std::unexpected(firmware.error());
    auto [hostEnd, firmwareEnd] = proto::makeLoopbackPair();
    (*firmware)->start(std::move(firmwareEnd));
    return LoopbackFirmware{std::move(*firmware), std::move(hostEnd)};
}

}  // namespace npu::fw::host
