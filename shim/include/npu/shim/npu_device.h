#pragma once
// The NPU's HAL device: validates every call, marshals it over a protocol transport to the
// firmware and turns replies into HAL results. It never links the firmware or the simulator:
// whether the firmware runs on a thread of this process (loopback), in the npu-fwd daemon
// (unix) or elsewhere, it only sees a proto::Transport.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "npu/hal/device.h"
#include "npu/protocol/transport.h"

namespace npu::shim {

inline constexpr uint32_t kProtocolMajor = 1;
// Minor 1: Operand.value (CONSTANT_COPY values inside the model, npu/protocol/constant_values.h).
inline constexpr uint32_t kProtocolMinor = 1;
inline constexpr const char* kShimVersion = "0.1.0";

// The watchdog and recovery (docs/reliability.md, "Watchdog, reset, replay").
struct RecoveryOptions {
    // An idle connection (no call in flight, nothing heard for this long) is pinged this often;
    // 0 = no watchdog thread (a lost firmware is then found by the next call).
    std::chrono::milliseconds watchdogPeriod{1000};
    std::chrono::milliseconds pingTimeout{1000};   // a ping unanswered for this long escalates
    std::chrono::milliseconds resetTimeout{2000};  // the Reset call; then the host is restarted
    // After a call timed out and a firmware host answered the ping while an item ran: pings every
    // half of this; an item whose progress counter did not move across it is stuck (Reset).
    std::chrono::milliseconds stallWindow{2000};
    uint32_t maxReplays = 3;  // replays of one request before it fails
};

// Call timeouts per call class (docs/reliability.md). A HAL deadline, when given, shortens them.
struct ShimOptions {
    // Control calls: hello, capabilities, supported operations, release, fetch of a blob.
    std::chrono::milliseconds callTimeout{5000};
    // prepareModel and prepareModelFromCache: compiling (and autotuning) a large model takes
    // seconds. Progress frames from the firmware restart it (up to 10 times it in all), so it
    // bounds a silent firmware; it stays long for firmware that sends none (the QEMU image).
    std::chrono::milliseconds prepareTimeout{120000};
    std::chrono::milliseconds executeTimeout{30000};  // one execution without a deadline
    // The protocol major version this shim announces. Only tests change it, to check that a
    // firmware of another major version is refused.
    uint32_t protocolMajor = kProtocolMajor;
    // Compilation caching (docs/caching.md). The state directory holds the per-installation
    // secret and the {token -> hash} map; empty = $XDG_STATE_HOME/npu-stack.
    std::string cacheStateDirectory;
    // The driver-managed cache for callers that pass no cache files (nnCache): compilations
    // keyed by model checksum, preference and device. Empty = off.
    std::string cacheDirectory;
    // Let the firmware autotune tilings at prepareModel (docs/firmware.md): slower compiles,
    // fewer device cycles. Off: the planner's tilings.
    bool autotune = true;
    // Bursts (docs/execution.md, "Bursts"): each burst talks to the firmware over a fast message
    // queue of its own where the firmware offers one (the firmware host: loopback and unix). Off:
    // a burst's executions take the connection like any other.
    bool burstChannels = true;
    // How long a burst's execution polls its queue for the reply before it sleeps on the doorbell
    // (latency against the CPU a waiting caller burns; 0: sleep at once).
    std::chrono::microseconds burstPollWindow{50};
    // How long a caller waiting for its reply on the connection polls for it before it sleeps
    // (Transport::setReadPollWindow: unix; the policy that stops polling where it does not pay is
    // protocol/src/poll_window.h; 0: sleep at once).
    std::chrono::microseconds replyPollWindow{50};
    RecoveryOptions recovery;
};

// Makes a transport to a fresh firmware host (a new loopback firmware thread, a reconnection to
// npu-fwd that starts it again if it died, a new QEMU): how the shim restarts a lost firmware.
using TransportFactory = std::function<proto::Result<std::unique_ptr<proto::Transport>>()>;

// Performs the version handshake over `transport` and maps the device-memory window.
// Errors: DEVICE_UNAVAILABLE when the firmware does not answer, answers with another protocol
// major version, or closes the connection.
Result<std::shared_ptr<hal::IDevice>> createNpuDevice(std::unique_ptr<proto::Transport> transport,
                                                      const ShimOptions& options = {});
// The same over transports from `factory`: a lost firmware host is restarted with a new one.
Result<std::shared_ptr<hal::IDevice>> createNpuDevice(TransportFactory factory,
                                                      const ShimOptions& options = {});

struct DaemonOptions {
    // Empty: proto::defaultUnixSocketPath(), in the private 0700 directory $XDG_RUNTIME_DIR/npu,
    // else /tmp/npu-$UID.
    std::string socketPath;
    // Who may serve us (SO_PEERCRED): a daemon of our own uid, or of this group when set.
    std::optional<uint32_t> allowedPeerGroup;
    // A daemon the shim starts exits after this many seconds without a client, so one left
    // behind by a process that died (or _exit'ed) does not run forever.
    int idleExitSeconds = 10;
    // Start npu-fwd when nothing listens on socketPath. The daemon binary is taken from
    // $NPU_FWD, else beside the running program, else where the build tree puts it
    // relative to the program (build/tools, build/tests), else npu-fwd on PATH.
    bool spawnIfAbsent = true;
    std::string daemonPath;  // overrides the search above
    std::chrono::milliseconds startTimeout{5000};
    // A hardware config file for a daemon the shim starts (npu-fwd --hw-config). A daemon that
    // already listens keeps the config it was started with, so connecting to one with this set
    // is refused (INVALID_ARGUMENT) rather than silently running on another configuration.
    std::string hwConfigPath;
    // Start the daemon with --fault-injection (reliability tests: injectNpuFaults).
    bool faultInjection = false;
    ShimOptions shim;
};

// Connects to the firmware daemon over a Unix socket, starting it if asked. A daemon the shim
// started is stopped when the returned device is destroyed.
Result<std::shared_ptr<hal::IDevice>> connectNpuDaemon(const DaemonOptions& options = {});

std::string defaultSocketPath();

// Vendor information beyond the HAL, for `npu info`: versions and the hardware configuration.
struct NpuInfo {
    std::string firmwareVersion;
    uint32_t protocolMajor = 0;
    uint32_t protocolMinor = 0;
    uint32_t hwId = 0;
    uint32_t hwVersion = 0;
    uint64_t deviceMemoryBytes = 0;
    uint64_t hostWindowBytes = 0;
    uint64_t clockHz = 0;
    uint32_t arrayRows = 0;
    uint32_t arrayCols = 0;
    uint32_t dataflow = 0;
    uint64_t scratchpadBytes = 0;
    uint64_t accumulatorBytes = 0;
    uint32_t vectorLanes = 0;
    uint32_t dramBytesPerCycle = 0;
    uint32_t dramLatencyCycles = 0;
};
// INVALID_ARGUMENT when `device` is not an NPU device of this shim.
Result<NpuInfo> queryNpuInfo(hal::IDevice& device);

// getSupportedOperations with the firmware's reasons: reasons[i] says why operation i is not
// supported (the firmware compiler's check naming the operand, value and limit, or the
// whole-model limit); empty for a supported operation, or when the firmware gave none.
struct NpuSupport {
    std::vector<bool> supported;
    std::vector<std::string> reasons;
};
// INVALID_ARGUMENT when `device` is not an NPU device of this shim, or the model is invalid.
Result<NpuSupport> querySupportedOperations(hal::IDevice& device, const hal::Model& model);
// Whether `device` is an NPU device of this shim (the query functions here accept it).
bool isNpuDevice(const hal::IDevice& device);

// The firmware's counters (GetCounters: RPC statistics, arena sizes and high-water marks, platform
// counters such as qemu.mailbox_round_trips; docs/protocol.md), name and value in the firmware's
// order, or by name. INVALID_ARGUMENT for a device of another kind.
Result<std::vector<std::pair<std::string, uint64_t>>> queryCounters(hal::IDevice& device);
Result<std::map<std::string, uint64_t>> queryFirmwareCounters(hal::IDevice& device);

// What the firmware reported when it compiled a prepared model (all 0 for one loaded from a
// cache, which is never re-tuned).
struct NpuCompileInfo {
    uint32_t tuningTrials = 0;                       // trial executions run by the autotuner
    uint64_t greedyCycles = 0;                       // device cycles with the planner's tilings
    uint64_t tunedCycles = 0;                        // device cycles with the tilings chosen
    uint64_t modelBlobBytes = 0, dataBlobBytes = 0;  // the compiled blob (PrepareModelReply)
    bool fromCache = false;                          // loaded from a compilation cache, not compiled
};
// INVALID_ARGUMENT when `prepared` is not a prepared model of this shim.
Result<NpuCompileInfo> queryCompileInfo(hal::IPreparedModel& prepared);

// What the watchdog and recovery did (docs/reliability.md), and the firmware's own counters.
struct NpuCounters {
    uint64_t pings = 0;                 // watchdog and escalation pings sent
    uint64_t pingFailures = 0;          // pings unanswered in time (or on a dropped connection)
    uint64_t stalls = 0;                // pings answered while an item ran without progress for stallWindow
    uint64_t callTimeouts = 0;          // calls the firmware did not answer within their timeout
    uint64_t disconnects = 0;           // calls that met a dropped connection
    uint64_t resets = 0;                // Reset calls the firmware answered
    uint64_t restarts = 0;              // firmware hosts restarted (new transport and handshake)
    uint64_t modelsRestored = 0;        // prepared models prepared again after a reset or restart
    uint64_t modelsLost = 0;            // prepared models that could not be restored
    uint64_t requestsReplayed = 0;      // operations run again after a loss
    uint64_t requestsFailed = 0;        // operations failed because recovery failed or gave up
    uint64_t npuHangs = 0;              // executions the NPU hung on (reset by the firmware, replayed)
    uint64_t dataFaults = 0;            // executions failed for a data fault (DMA error, SRAM ECC)
    uint64_t cancels = 0;               // executions timed out on our side: Cancel sent for them
    uint64_t cancelsFailed = 0;         // ... unconfirmed by the firmware: their blocks quarantined
    uint64_t burstChannelsOpened = 0;   // burst channels opened (fast message queues, docs/execution.md)
    uint64_t burstChannelFailures = 0;  // burst executions whose channel broke (replayed)
    std::vector<std::pair<std::string, uint64_t>> firmware;  // GetCounters (empty if unreachable)
};
// INVALID_ARGUMENT when `device` is not an NPU device of this shim.
Result<NpuCounters> queryNpuCounters(hal::IDevice& device);

// Faults to arm in the firmware host's simulated NPU (proto InjectFaultsRequest, hw-config
// "faults"); each fires once. Refused unless the host runs with fault injection on.
struct NpuFaultPlan {
    uint64_t hangAtCommand = 0;
    uint64_t dmaErrorAtTransfer = 0;
    uint64_t sramFlipAfterCommand = 0;
    uint32_t sramFlipAddress = 0;
    uint32_t sramFlipBit = 0;
    bool sramEcc = true;
    uint32_t crashAfterMs = 0;  // the firmware host dies this long after the call
    // InjectFaultsRequest.wedge: 1 the item thread stops before its next operation until a
    // Reset; 2 until the host stops (only a restart helps); 3 it crawls (20 ms per operation).
    uint32_t wedge = 0;
};
Status injectNpuFaults(hal::IDevice& device, const NpuFaultPlan& plan);

}  // namespace npu::shim
