#pragma once
// The host platform of the firmware: one simulated NPU (hwsim) with its device DRAM in a memfd,
// the portable firmware runtime and its RPC server, served over a protocol transport. The
// loopback transport runs it on a thread of the caller's process; npu-fwd serves it over a
// Unix socket.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "npu/hwsim/config.h"
#include "npu/protocol/transport.h"

namespace npu::fw::host {

struct FirmwareHostConfig {
    uint64_t dramBytes = 256ull << 20;          // device DRAM (a sparse memfd)
    uint64_t firmwareDramBytes = 128ull << 20;  // [0, this): blobs, activations; the rest: host window
    uint64_t arenaBytes = 32ull << 20;          // the firmware's own memory (tables, compiler scratch)
    uint32_t queueDepth = 16;
    uint32_t maxPayloadBytes = 1u << 20;
    sim::HwConfig hw;
    // Serve METHOD_INJECT_FAULTS (reliability tests, npu-fwd --fault-injection); off: refused.
    bool faultInjection = false;
    // What an injected crash (InjectFaults.crash_after_ms) does besides dropping the connection
    // without an answer: npu-fwd exits the process; unset, only this firmware host's loop ends.
    std::function<void()> onCrash;
};

class FirmwareHost {
public:
    static proto::Result<std::unique_ptr<FirmwareHost>> create(const FirmwareHostConfig& config = {});
    ~FirmwareHost();
    FirmwareHost(const FirmwareHost&) = delete;
    FirmwareHost& operator=(const FirmwareHost&) = delete;

    // Serves `transport` on a thread owned by this object until the peer closes or stop().
    void start(std::unique_ptr<proto::Transport> transport);
    // Serves `transport` on the calling thread; returns when the peer closes, stop() is called
    // or *externalStop becomes true. Whatever the client left prepared is released then: the
    // next client starts from a reset firmware.
    void serve(proto::Transport& transport, const std::atomic<bool>* externalStop = nullptr);
    void stop();

    int dramFd() const;

private:
    struct Impl;
    explicit FirmwareHost(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
    std::unique_ptr<proto::Transport> owned_;
    std::thread thread_;
};

// Starts the firmware on a thread of this process and returns the host end of the channel.
struct LoopbackFirmware {
    std::unique_ptr<FirmwareHost> firmware;
    std::unique_ptr<proto::Transport> hostEnd;
};
proto::Result<LoopbackFirmware> startLoopbackFirmware(const FirmwareHostConfig& config = {});

// The same as one transport that owns its firmware: destroying it stops the firmware thread.
// What a shim's transport factory returns to restart a lost loopback firmware.
proto::Result<std::unique_ptr<proto::Transport>> startLoopbackTransport(
    const FirmwareHostConfig& config = {});

}  // namespace npu::fw::host
