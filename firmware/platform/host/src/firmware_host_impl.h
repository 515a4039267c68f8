#pragma once
// The firmware host's insides (firmware_host.cpp, burst_channels.cpp): a Session per client
// transport, and per burst channel an endpoint Session of that client served by its own thread;
// the Impl that owns the simulated NPU, the portable Runtime and the Scheduler they share.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "client_pools.h"
#include "npu/fw/arena.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/fw/rpc_server.h"
#include "npu/fw/runtime.h"
#include "npu/fw/scheduler.h"
#include "npu/fw/session_service.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/vlog.h"
#include "outbox.h"
#include "received_fds.h"
#include "sim_platform.h"

namespace npu::fw::host {

inline constexpr std::chrono::milliseconds kPollInterval{50};  // how often a waiting loop checks stop()

// The injected wedge (InjectFaultsRequest.wedge).
enum Wedge : uint32_t { kWedgeNone = 0, kWedgeUntilReset = 1, kWedgeUntilStop = 2, kWedgeCrawl = 3 };

struct Session;
struct BurstChannels;
struct BurstChannel;
// The session (or burst channel) whose reader this thread is, if any.
extern thread_local Session* tlsReader;

// One client's transport: its server, its window, its pools (served by FirmwareHost::serve); or
// one of its burst channels (`parent` set): a server of its own over the client's service, with
// no window, pools or fds of its own.
struct Session final : public FrameSink, public WindowPlacer, public WorkMonitor, public CounterSource {
    std::function<WorkState(uint32_t)> watch;  // FirmwareHost::Impl::workFor
    std::function<void()> resetting;           // a Reset arrived (frees an injected wedge)
    std::function<bool(uint64_t)> place;       // FirmwareHost::Impl::moveSession for this session
    uint32_t id = 0;                           // its queue in the scheduler (each burst channel has its own)
    uint32_t owner = 0;                        // the client: this id, or a burst channel's session's
    Session* parent = nullptr;                 // a burst channel's session
    uint32_t slot = 0;                         // which session window
    proto::Transport* transport = nullptr;
    bool shared = true;                  // the transport shares memory: the window is a memfd of its own
    int windowFd = -1;                   // shared sessions only
    ReceivedFds fds;                     // shared sessions only: fds that came with its bytes
    std::unique_ptr<ClientPools> pools;  // shared sessions only: client memory passed by fd
    std::vector<uint8_t> readBuffer = std::vector<uint8_t>(64 * 1024);  // its reader's
    std::vector<proto::UniqueFd> readFds;                               // fds ride with bytes
    std::unique_ptr<uint8_t[]> memory;
    std::unique_ptr<Arena> arena;
    std::unique_ptr<SessionService> ownService;  // a session's; a burst channel uses its parent's
    SessionService* service = nullptr;
    std::unique_ptr<SessionGate> gate;
    std::unique_ptr<RpcServer> server;
    std::unique_ptr<BurstChannels> channels;  // shared sessions only (OpenBurstChannel)
    // A session's replies (a burst channel writes to its queue, which never waits): what its
    // socket does not take at once waits here, not under the firmware lock.
    std::unique_ptr<Outbox> outbox;

    // Where its reads put the fds that come with bytes (a session that shares memory: MapPool's and
    // OpenBurstChannel's); null: they are closed.
    std::vector<proto::UniqueFd>* fdSink() { return parent == nullptr && shared ? &readFds : nullptr; }

    bool writeFrame(const uint8_t* bytes, size_t length, uint32_t method, uint16_t flags) override;
    bool placeWindow(uint64_t addr) override { return place(addr); }
    WorkState work() override { return watch(id); }
    void resetArriving() override { resetting(); }
    void counters(npu_proto_CountersReply* reply) override;  // its outbox's and burst channels'
};

// A session's burst channels (METHOD_OPEN_BURST_CHANNEL, docs/protocol.md): each a fast message
// queue (npu/protocol/fmq.h) served as another endpoint of the session by a thread of its own.
struct BurstChannel {
    std::unique_ptr<proto::Transport> transport;
    std::unique_ptr<Session> endpoint;
    std::thread thread;
    std::atomic<bool> ended{false};  // its loop is over and the endpoint closed (joinable at once)
};
struct BurstChannels final : public BurstChannelOpener {
    static constexpr uint32_t kMaxOpen = 8;     // per session
    static constexpr uint32_t kQueueDepth = 4;  // an execution, its Cancel, a Ping, one spare

    BurstChannels(FirmwareHost::Impl& host, Session& session) : host(host), session(session) {}
    FwStatus openBurstChannel(uint64_t callId, npu_proto_OpenBurstChannelReply* reply) override;
    void reapEnded();  // joins the channels whose loops are over (under the lock)

    FirmwareHost::Impl& host;
    Session& session;
    // Under the firmware lock.
    std::vector<std::unique_ptr<BurstChannel>> open;
    bool closing = false;         // the session ends: no new channel
    uint64_t opened = 0;          // channels opened so far
    uint64_t requestsClosed = 0;  // requests served by channels that have ended
};

struct FirmwareHost::Impl final : public FaultInjector, public LogSink {
    bool enabled() override { return proto::vlogEnabled("firmware"); }
    void write(const char* line) override { proto::vlog("firmware", "%s", line); }

    FirmwareHostConfig config;
    uint32_t slots = 0;  // session windows
    int dramFd = -1;
    uint8_t* dram = nullptr;
    uint64_t addressBytes = 0;  // dramBytes + the session pool ranges after it
    std::unique_ptr<SimPlatform> platform;
    std::unique_ptr<uint8_t[]> runtimeMemory;
    std::unique_ptr<Arena> runtimeArena;
    std::unique_ptr<Runtime> runtime;
    std::unique_ptr<RuntimeService> shared;
    std::unique_ptr<uint8_t[]> hostMemory;
    std::unique_ptr<Arena> hostArena;
    std::unique_ptr<SessionRegistry> registry;
    std::unique_ptr<Scheduler> scheduler;

    // Everything above is used under `mutex` only (the firmware is single-threaded).
    std::mutex mutex;
    std::condition_variable workReady;
    std::atomic<int> wantLock{0};           // readers waiting to feed bytes: the executor lets them in
    std::map<uint32_t, Session*> sessions;  // sessions and burst channels, by id (their queue)
    std::vector<bool> slotUsed;
    uint32_t nextSessionId = 1;
    std::atomic<bool> stop{false};
    bool held = false;                    // holdWork()
    std::atomic<uint64_t> crashEpoch{0};  // bumped by an injected crash: every session drops
    uint64_t crashAtUs = 0;               // an injected crash is due then (0: none)
    std::thread executor;
    // While an item runs: the lock its thread holds (stopRequested lets waiting readers in),
    // and whether it has let them in now (they then only queue, and nobody closes a session).
    std::unique_lock<std::mutex>* runningLock = nullptr;
    bool midItem = false;
    uint64_t lastStopCheckUs = 0;  // stopRequested's last look at the transports (0: none yet)
    uint64_t lastProgressUs = 0;   // the running item's start, then its last progress frame
    std::condition_variable midItemDone;
    // What Ping tells (WorkMonitor): operation boundaries and items passed, the running item's start.
    uint64_t progressCount = 0;
    uint64_t itemStartUs = 0;
    // The injected wedge: armed until the next operation boundary; a crawl lasts one item.
    uint32_t wedge = kWedgeNone;
    bool crawling = false;
    bool resetArrived = false;  // a Reset reached a session since the wedge was armed

    FwStatus injectFaults(const npu_proto_InjectFaultsRequest& r) override;
    ~Impl();

    uint64_t windowAddr(uint32_t slot) const {
        return config.firmwareDramBytes + uint64_t{slot} * config.sessionWindowBytes;
    }
    uint64_t poolRangeAddr(uint32_t slot) const {
        return config.dramBytes + uint64_t{slot} * config.sessionPoolBytes;
    }
    proto::Result<std::unique_ptr<Session>> openSession(proto::Transport& transport);
    bool mapWindow(const Session& s, uint64_t addr);
    void releaseSlotMemory(const Session& s);
    bool moveSession(Session& s, uint64_t addr);
    void closeSession(Session& session);
    void runExecutor();
    void drain(std::unique_lock<std::mutex>& lock);
    bool runOne(std::unique_lock<std::mutex>& lock);
    void crash();
    // At a checkpoint of the running item (between two NPU operations, or two operations it
    // compiles): counts the progress Ping reports, takes an injected wedge, reads what its session
    // sent meanwhile (a Cancel) and says why it must stop (cancelled, deadline passed) or kNone.
    StopReason stopRequested(const WorkProgress& progress);
    // A progress frame to the running item's client when one is due (FirmwareHostConfig).
    void reportProgress(const WorkProgress& progress, uint64_t now);
    // The injected wedge or crawl at an operation boundary of the running item.
    void injectedStall();
    // The running item's thread stops for up to `us` (until a Reset when `untilReset`, or the
    // host stops), looking at the transports every kWedgeSlice so that pings are answered.
    void pauseItem(uint64_t us, bool untilReset);
    // Reads what the running item's own session sent (when this thread is its reader) and lets
    // waiting readers feed theirs, once.
    void letReadersIn();
    WorkState workFor(uint32_t session);
    uint32_t ownerOf(uint32_t session) const;  // the client whose work a queue's items are

    // One session's reader loop (FirmwareHost::serve), or one burst channel's (its own thread):
    // moves what `s`'s transport brings into its server until the peer goes or the host stops.
    void readLoop(Session& s, const std::atomic<bool>* externalStop, uint64_t epoch);
    // Burst channels (burst_channels.cpp): a new one of `parent` over `transport`; its thread's
    // loop; its end (under the lock); and, when `parent` ends, every one of them stopped and
    // joined (without the lock).
    proto::Result<std::unique_ptr<Session>> openChannel(Session& parent, proto::Transport& transport);
    void serveChannel(BurstChannel& channel, uint64_t epoch);
    void closeChannel(Session& endpoint);
    void stopChannels(Session& parent);
    // `bytes` its reader read into s.readBuffer (and the fds that came with them) to the
    // session's server. Under the lock.
    void feed(Session& s, size_t bytes);
};

}  // namespace npu::fw::host
