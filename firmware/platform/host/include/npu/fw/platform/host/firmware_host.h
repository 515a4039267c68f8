#pragma once
// The host platform of the firmware: one simulated NPU (hwsim) with its device DRAM, the portable
// firmware runtime and scheduler, shared by every session (client transport) it serves: each
// session has its own RPC server and its own window, a memfd mapped into the NPU's address space
// at a session-specific device address and passed to that client alone. The loopback transport
// runs it on threads of the caller's process; npu-fwd serves every client of a Unix socket from
// one host. docs/execution.md ("Scheduler", "Memory model").

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "npu/hwsim/config.h"
#include "npu/protocol/transport.h"

namespace npu::fw::host {

struct BurstChannels;

struct FirmwareHostConfig {
    // The device address space: [0, firmwareDramBytes) is the firmware's DRAM (blobs,
    // activations); the rest is cut into session windows of sessionWindowBytes, one per session
    // served at once (so (dramBytes - firmwareDramBytes) / sessionWindowBytes sessions at most).
    uint64_t dramBytes = 640ull << 20;  // a sparse memfd: untouched pages cost nothing
    uint64_t firmwareDramBytes = 128ull << 20;
    uint64_t sessionWindowBytes = 128ull << 20;
    // After dramBytes, each session has this much device address space for the pools its client
    // passes by fd (MapPool; 0: none, pools are staged in the window). Only address space: the
    // pages are the client's.
    uint64_t sessionPoolBytes = 1ull << 30;
    uint64_t arenaBytes = 32ull << 20;  // the firmware's own memory (tables, compiler scratch)
    uint32_t queueDepth = 16;
    uint32_t maxPayloadBytes = 1u << 20;
    sim::HwConfig hw;
    // Progress frames (METHOD_PROGRESS): a running item's client gets at most one per this
    // interval, sent from the item's checkpoints (0: none, e.g. a test of a silent firmware).
    uint32_t progressIntervalMs = 200;
    // Tests: every checkpoint of running work first sleeps this long (a slow compile or NPU that
    // is still making progress); 0: none.
    uint32_t checkpointStallUs = 0;
    // Burst channels (docs/protocol.md): how long a channel's thread polls its queue for the next
    // request before it sleeps on the doorbell (the latency of back-to-back executions against the
    // CPU an idle burst burns); 0: sleep at once.
    uint32_t burstPollUs = 50;
    // A session's reader: how long it polls its transport for the client's next request before it
    // sleeps (Transport::setReadPollWindow: unix), so that a client executing in a loop finds the
    // reader awake; polling stops by itself where it does not pay (protocol/src/poll_window.h).
    // 0: sleep at once.
    uint32_t requestPollUs = 50;
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

    // Serves `transport` as a new session on a thread owned by this object until the peer
    // closes or stop(). Any number of transports may be started (up to the session windows).
    void start(std::unique_ptr<proto::Transport> transport);
    // Serves `transport` as a new session on the calling thread; returns when the peer closes,
    // stop() is called or *externalStop becomes true. Whatever the session left (prepared
    // models, buffers, queued work) is released then; other sessions are not disturbed.
    void serve(proto::Transport& transport, const std::atomic<bool>* externalStop = nullptr);
    void stop();
    // One more client of this firmware over loopback (a second session on the same NPU, for
    // tests): the host end of a new channel served by start().
    std::unique_ptr<proto::Transport> connectLoopback();
    // Tests: while held, NPU work (prepare, execute) is queued but does not run, so that what is
    // queued, and the order it then runs in, does not depend on timing; control calls (counters,
    // ping) and deadline expiry go on. Releasing it runs the queue.
    void holdWork(bool hold);

    // The firmware's own DRAM memfd (all device addresses; session windows of clients that share
    // memory are mapped over it in the firmware's view, so it does not hold their bytes): for
    // device sides that fill windows themselves (the USB gadget). Never given to a client.
    int dramFd() const;
    // Sessions served at once at most.
    uint32_t maxSessions() const;

private:
    struct Impl;                  // src/firmware_host_impl.h
    friend struct BurstChannels;  // src/burst_channels.cpp: a session's channels call into Impl
    explicit FirmwareHost(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
    std::mutex ownedMutex_;
    std::vector<std::unique_ptr<proto::Transport>> owned_;
    std::vector<std::thread> threads_;
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
