// The firmware host platform: device DRAM in a memfd, the simulated NPU behind SimPlatform, the
// portable Runtime and Scheduler shared by every session, and per session an RpcServer, a
// window memfd mapped into the NPU's address space, and a loop that moves its transport's bytes
// into its server. The scheduled work runs one item at a time, on whichever thread holds the
// firmware lock: the reader that queued it (one item), or the executor thread (the rest).
#include "npu/fw/platform/host/firmware_host.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "firmware_host_impl.h"

namespace npu::fw::host {

namespace {
constexpr uint64_t kServerScratchBytes = 64ull
                                         << 20;   // per-request temporaries: model decoding, cached blobs
constexpr uint32_t kMaxHandles = 1024;            // prepared models + buffers of all sessions
constexpr uint64_t kStopCheckIntervalUs = 500;    // a running item looks for a Cancel this often
constexpr uint64_t kHostArenaBytes = 1ull << 20;  // the registry and the scheduler's queue
// The injected wedge (InjectFaultsRequest.wedge): its longest stop, the slice between two looks
// at the transports and the flags, and a crawl's pause before each operation.
constexpr uint64_t kWedgeMaxUs = 60'000'000;
constexpr std::chrono::milliseconds kWedgeSlice{5};
constexpr uint64_t kCrawlUs = 20'000;

proto::Error ioError(const std::string& what) {
    return proto::Error{proto::Error::Kind::kIo, what + ": " + std::strerror(errno)};
}

// A sealed memfd of `bytes` (the peer that gets it cannot shrink it under our mapping: SIGBUS).
proto::Result<int> sealedMemfd(const char* name, uint64_t bytes) {
    const int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return std::unexpected(ioError(std::string("memfd_create(") + name + ")"));
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        auto e =
            ioError(std::string("sizing and sealing ") + name + " (" + std::to_string(bytes) + " bytes)");
        close(fd);
        return std::unexpected(e);
    }
    return fd;
}
}  // namespace

thread_local Session* tlsReader = nullptr;

bool Session::writeFrame(const uint8_t* bytes, size_t length, uint32_t method, uint16_t flags) {
    // The handshake's reply carries the session's window (SCM_RIGHTS on unix, a dup in process).
    const bool hello = method == npu_proto_Method_METHOD_HELLO && (flags & proto::kFlagResponse) != 0 &&
                       (flags & proto::kFlagError) == 0;
    const int fds[1] = {windowFd};
    const auto sendFds = hello && windowFd >= 0 ? std::span<const int>(fds, 1) : std::span<const int>();
    if (outbox) return outbox->send(std::span<const uint8_t>(bytes, length), sendFds);
    auto r = transport->write(std::span<const uint8_t>(bytes, length), sendFds);
    // A burst channel's queue that has no room for a reply: its client does not read it. The
    // channel ends (its client then finds it closed) rather than lose frames in the middle.
    if (!r && parent != nullptr) transport->shutdown();
    return r.has_value();
}

FwStatus FirmwareHost::Impl::injectFaults(const npu_proto_InjectFaultsRequest& r) {
    sim::FaultConfig f;
    f.hangAtCommand = r.hang_at_command;
    f.dmaErrorAtTransfer = r.dma_error_at_transfer;
    f.sramFlipAfterCommand = r.sram_flip_after_command;
    f.sramFlipAddress = r.sram_flip_address;
    f.sramFlipBit = r.sram_flip_bit;
    f.sramEcc = r.sram_ecc;
    if (f.sramFlipAfterCommand != 0 &&
        (f.sramFlipAddress >= config.hw.scratchpadBytes || f.sramFlipBit > 7)) {
        return FwStatus::make(Code::kInvalidArgument,
                              "InjectFaults: SRAM flip at byte %u bit %u is outside the %llu-byte scratchpad",
                              f.sramFlipAddress, f.sramFlipBit,
                              static_cast<unsigned long long>(config.hw.scratchpadBytes));
    }
    if (r.wedge > kWedgeCrawl) {
        return FwStatus::make(Code::kInvalidArgument,
                              "InjectFaults: wedge %u is not one of 1 (until a Reset), 2 (until the "
                              "host stops), 3 (crawl)",
                              r.wedge);
    }
    platform->armFaultsOnce(f);
    if (r.wedge != kWedgeNone) {
        wedge = r.wedge;
        resetArrived = false;
    }
    if (r.crash_after_ms > 0) crashAtUs = platform->nowUs() + uint64_t{r.crash_after_ms} * 1000;
    return FwStatus::okStatus();
}

FirmwareHost::Impl::~Impl() {
    stop.store(true);
    workReady.notify_all();
    if (executor.joinable()) executor.join();
    scheduler.reset();
    registry.reset();
    shared.reset();
    runtime.reset();
    platform.reset();
    if (dram != nullptr) munmap(dram, addressBytes);
    if (dramFd >= 0) close(dramFd);
}

// A new session: a free window slot, the window's memfd mapped over the slot in the firmware's
// view of DRAM (so the NPU's DMA reaches it there), its server, service and gate.
proto::Result<std::unique_ptr<Session>> FirmwareHost::Impl::openSession(proto::Transport& transport) {
    auto s = std::make_unique<Session>();
    s->watch = [this](uint32_t session) { return workFor(session); };
    s->resetting = [this] { resetArrived = true; };
    s->place = [this, session = s.get()](uint64_t addr) { return moveSession(*session, addr); };
    s->transport = &transport;
    s->outbox = std::make_unique<Outbox>(transport);
    s->shared = transport.sharesMemory();
    uint32_t slot = 0;
    while (slot < slots && slotUsed[slot]) ++slot;
    if (slot == slots) {
        return proto::fail(proto::Error::Kind::kResourceExhausted,
                           "the firmware serves at most " + std::to_string(slots) +
                               " sessions at once (one window each); try again when one disconnects");
    }
    s->slot = slot;
    s->id = nextSessionId++;
    const uint64_t addr = windowAddr(slot);
    const uint64_t bytes = config.sessionWindowBytes;
    if (s->shared) {
        auto fd = sealedMemfd("npu-session-window", bytes);
        if (!fd) return std::unexpected(fd.error());
        s->windowFd = *fd;
        if (!mapWindow(*s, addr)) {
            auto e = ioError("mapping a session window into device DRAM");
            close(s->windowFd);
            return std::unexpected(e);
        }
    }
    RpcServerConfig sc;
    sc.maxPayloadBytes = config.maxPayloadBytes;
    sc.queueDepth = config.queueDepth;
    const HardwareInfo hw = runtime->hardwareInfo();
    sc.hwId = hw.id;
    sc.hwVersion = hw.version;
    sc.deviceMemoryBytes = config.dramBytes;
    sc.hostWindowAddr = addr;
    sc.hostWindowBytes = bytes;
    sc.windowFdIsWindow = s->shared;
    if (config.faultInjection) sc.faultInjector = this;
    sc.log = this;  // NPU_VLOG=firmware
    s->owner = s->id;
    s->ownService = std::make_unique<SessionService>(*runtime, *shared, *registry, *scheduler, s->id);
    s->service = s->ownService.get();
    if (s->shared && config.sessionPoolBytes > 0) {
        s->pools = std::make_unique<ClientPools>(s->fds, dram, poolRangeAddr(slot), config.sessionPoolBytes);
        s->service->setPools(s->pools.get());
        sc.pools = s->pools.get();
    }
    if (s->shared) {
        s->channels = std::make_unique<BurstChannels>(*this, *s);
        sc.burstChannels = s->channels.get();
        sc.requestFds = &s->fds;  // MapPool's and OpenBurstChannel's
        sc.platformCounters = s.get();
    }
    s->gate = std::make_unique<SessionGate>(*scheduler, *registry, *platform, s->id);
    sc.gate = s->gate.get();
    sc.windowPlacer = s.get();
    sc.monitor = s.get();
    const size_t serverBytes = RpcServer::memoryNeeded(sc) + kServerScratchBytes;
    s->memory.reset(new uint8_t[serverBytes]);
    s->arena = std::make_unique<Arena>(s->memory.get(), serverBytes);
    s->server = std::make_unique<RpcServer>(*s->service, *s->arena, *s, sc);
    FwStatus st = s->server->ok() ? registry->open(s->id, {addr, bytes}) : s->server->initStatus();
    if (!st.ok()) {
        closeSession(*s);
        return proto::fail(proto::Error::Kind::kResourceExhausted,
                           std::string("firmware session: ") + st.message);
    }
    slotUsed[slot] = true;
    sessions[s->id] = s.get();
    return s;
}

// The session's window memfd over the slot at `addr` in the firmware's view of DRAM.
bool FirmwareHost::Impl::mapWindow(const Session& s, uint64_t addr) {
    return mmap(dram + addr, config.sessionWindowBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                s.windowFd, 0) != MAP_FAILED;
}

// The session's slot gets the firmware's DRAM back; the next client in it reads none of this
// one's bytes (a memfd window simply goes; a window in DRAM itself, USB, is cleared).
void FirmwareHost::Impl::releaseSlotMemory(const Session& s) {
    const uint64_t addr = windowAddr(s.slot);
    if (s.windowFd >= 0) {
        if (mmap(dram + addr, config.sessionWindowBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                 dramFd, static_cast<off_t>(addr)) == MAP_FAILED) {
            std::fprintf(stderr, "npu firmware: cannot restore window slot %u: %s\n", s.slot,
                         std::strerror(errno));
        }
    } else if (!s.shared) {
        if (fallocate(dramFd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(addr),
                      static_cast<off_t>(config.sessionWindowBytes)) != 0) {
            std::fprintf(stderr, "npu firmware: cannot clear window slot %u: %s\n", s.slot,
                         std::strerror(errno));
        }
    }
}

// Hello's window_addr (the session's first call): the window moves to the free slot at `addr`, so
// a client back after a restart finds its device addresses where they were. False: it stays.
bool FirmwareHost::Impl::moveSession(Session& s, uint64_t addr) {
    const uint64_t base = config.firmwareDramBytes;
    const uint64_t bytes = config.sessionWindowBytes;
    if (addr < base || (addr - base) % bytes != 0 || (addr - base) / bytes >= slots) return false;
    const auto slot = static_cast<uint32_t>((addr - base) / bytes);
    if (slotUsed[slot] || (s.pools && s.pools->poolCount() != 0)) return false;
    if (!registry->moveWindow(s.id, {addr, bytes}).ok()) return false;
    if (s.windowFd >= 0 && !mapWindow(s, addr)) {
        (void)registry->moveWindow(s.id, {windowAddr(s.slot), bytes});
        return false;
    }
    if (s.pools) (void)s.pools->moveRange(poolRangeAddr(slot));  // none mapped: it moves
    releaseSlotMemory(s);
    slotUsed[s.slot] = false;
    slotUsed[slot] = true;
    s.slot = slot;
    return true;
}

// The session's leftovers go: queued work (never answered: the peer is gone), its prepared models
// and buffers, its window (the slot is backed by the firmware's DRAM memfd again).
void FirmwareHost::Impl::closeSession(Session& s) {
    if (s.server && s.server->ok()) s.server->onDisconnect();
    WorkItem dropped[1];
    (void)scheduler->dropSession(s.id, dropped, 0);
    if (s.service) s.service->releaseAll();
    if (s.pools) s.pools->unmapAll();
    registry->close(s.id);
    if (sessions.erase(s.id) > 0) slotUsed[s.slot] = false;
    releaseSlotMemory(s);
    if (s.windowFd >= 0) {
        close(s.windowFd);
        s.windowFd = -1;
    }
    if (sessions.empty()) (void)runtime->reset();  // nobody left: the next client meets a reset NPU
}

// An injected crash: queued requests are never answered, every connection just drops.
void FirmwareHost::Impl::crash() {
    crashAtUs = 0;
    if (config.onCrash) config.onCrash();
    for (auto& [id, s] : sessions) s->transport->shutdown();
    crashEpoch.fetch_add(1);
}

void FirmwareHost::Impl::feed(Session& s, size_t bytes) {
    if (!s.readFds.empty()) s.fds.received(s.readFds);
    s.server->onBytes(s.readBuffer.data(), bytes);
}

void FirmwareHost::Impl::reportProgress(const WorkProgress& progress, uint64_t now) {
    const uint64_t interval = uint64_t{config.progressIntervalMs} * 1000;
    if (interval == 0 || now - lastProgressUs < interval) return;
    lastProgressUs = now;
    const WorkItem& item = scheduler->runningItem();
    auto it = sessions.find(item.session);
    if (it != sessions.end()) it->second->server->sendProgress(item.callId, progress);
}

StopReason FirmwareHost::Impl::stopRequested(const WorkProgress& progress) {
    if (!scheduler || !scheduler->running())
        return StopReason::kNone;  // (the runtime measures itself at init)
    ++progressCount;               // an operation (or a compile step) is done
    if (config.checkpointStallUs != 0)
        std::this_thread::sleep_for(std::chrono::microseconds(config.checkpointStallUs));
    injectedStall();
    // One look at the transports per kStopCheckIntervalUs of the running item (the first operation
    // boundary always looks): reading them at every NPU operation cost more than simulating the
    // operations (a 211-operation model took 19 ms per execution instead of 5 ms).
    const uint64_t now = platform->nowUs();
    reportProgress(progress, now);
    if (lastStopCheckUs != 0 && now - lastStopCheckUs < kStopCheckIntervalUs)
        return scheduler->runningStop(now);
    lastStopCheckUs = now;
    letReadersIn();
    return scheduler->runningStop(platform->nowUs());
}

void FirmwareHost::Impl::letReadersIn() {
    const uint32_t owner = scheduler->runningItem().session;
    if (tlsReader != nullptr && tlsReader->id == owner) {
        // This thread is the owner's reader: nobody else reads its transport. Take what came.
        Session& s = *tlsReader;
        auto n = s.transport->read(s.readBuffer, s.fdSink(), std::chrono::milliseconds(0));
        if (n && *n > 0) feed(s, *n);
    } else if (runningLock != nullptr && wantLock.load() > 0) {
        // The owner's reader (or another) waits with bytes: let it queue them (or cancel).
        midItem = true;
        runningLock->unlock();
        while (wantLock.load() > 0 && !stop.load()) std::this_thread::yield();
        runningLock->lock();
        midItem = false;
        midItemDone.notify_all();
    }
}

void FirmwareHost::Impl::injectedStall() {
    if (wedge == kWedgeCrawl) {
        wedge = kWedgeNone;
        crawling = true;  // this item, until it ends (runOne)
    }
    if (crawling) return pauseItem(kCrawlUs, false);
    if (wedge != kWedgeUntilReset && wedge != kWedgeUntilStop) return;
    const bool untilReset = wedge == kWedgeUntilReset;
    wedge = kWedgeNone;  // fires once
    proto::vlog("firmware", "injected wedge: the item thread stops before its next operation");
    pauseItem(kWedgeMaxUs, untilReset);
}

void FirmwareHost::Impl::pauseItem(uint64_t us, bool untilReset) {
    const uint64_t end = platform->nowUs() + us;
    while (!stop.load() && !(untilReset && resetArrived) && platform->nowUs() < end) {
        if (tlsReader != nullptr && tlsReader->id == scheduler->runningItem().session) letReadersIn();
        if (runningLock == nullptr) {
            std::this_thread::sleep_for(kWedgeSlice);
            continue;
        }
        midItem = true;  // readers may feed (and pings be answered) while it waits
        runningLock->unlock();
        std::this_thread::sleep_for(kWedgeSlice);
        runningLock->lock();
        midItem = false;
        midItemDone.notify_all();
    }
}

// What Ping tells a session's (or a burst channel's) client: the running item is the client's
// whichever of its queues it came from, and its other queues' requests count as its own.
WorkState FirmwareHost::Impl::workFor(uint32_t session) {
    WorkState w;
    w.progress = progressCount;
    const uint32_t owner = ownerOf(session);
    if (scheduler->running()) {
        w.itemRunning = true;
        const uint64_t now = platform->nowUs();
        w.itemRunningUs = now > itemStartUs ? now - itemStartUs : 0;
        w.itemIsMine = ownerOf(scheduler->runningItem().session) == owner;
    }
    for (const auto& [id, s] : sessions) {
        if (id != session && s->owner == owner) w.otherQueued += s->server->queued();
    }
    return w;
}

uint32_t FirmwareHost::Impl::ownerOf(uint32_t session) const {
    auto it = sessions.find(session);
    return it != sessions.end() ? it->second->owner : session;
}

// Runs (or answers) the next scheduled item; false when there is none.
bool FirmwareHost::Impl::runOne(std::unique_lock<std::mutex>& lock) {
    if (midItem) return false;  // another thread's item runs; it let this reader in to queue only
    if (crashAtUs != 0 && platform->nowUs() >= crashAtUs) {
        crash();
        return false;
    }
    WorkItem item;
    const Scheduler::Pick pick = scheduler->next(platform->nowUs(), &item, held);
    if (pick == Scheduler::Pick::kNone) return false;
    auto it = sessions.find(item.session);
    Session* s = it != sessions.end() ? it->second : nullptr;
    if (pick == Scheduler::Pick::kExpired) {
        if (s != nullptr) {
            char why[160];
            std::snprintf(
                why, sizeof why,
                "missed deadline: call %llu waited in the NPU queue past its deadline and did not run",
                static_cast<unsigned long long>(item.callId));
            s->server->failSlot(item.slot, Scheduler::missedDeadlineCode(item, false), why);
        }
        return true;
    }
    runningLock = &lock;
    lastStopCheckUs = 0;
    lastProgressUs = platform->nowUs();
    itemStartUs = lastProgressUs;
    if (s != nullptr) s->server->runSlot(item.slot);
    runningLock = nullptr;
    scheduler->finish();
    ++progressCount;
    crawling = false;
    return true;
}

// Runs what is queued until nothing is runnable, letting waiting readers queue their requests
// between two items (so a HIGH request sent meanwhile is queued before the next pick).
void FirmwareHost::Impl::drain(std::unique_lock<std::mutex>& lock) {
    while (!stop.load() && runOne(lock)) {
        if (wantLock.load() > 0) {
            lock.unlock();
            while (wantLock.load() > 0 && !stop.load()) std::this_thread::yield();
            lock.lock();
        }
    }
}

// The reader that queued a request runs one item itself (no thread hand-off on the way to the
// NPU for a lone client); this thread runs the rest, work released by holdWork(false),
// deadlines expiring while every reader waits on its transport, an injected crash falling due.
void FirmwareHost::Impl::runExecutor() {
    std::unique_lock lock(mutex);
    while (!stop.load()) {
        // No predicate: with the work held, queued items must not keep it from sleeping.
        workReady.wait_for(lock, kPollInterval);
        drain(lock);
    }
}

FirmwareHost::FirmwareHost(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FirmwareHost::~FirmwareHost() {
    stop();
    for (auto& t : threads_) {
        if (t.joinable()) t.join();
    }
    impl_.reset();
}

int FirmwareHost::dramFd() const {
    return impl_->dramFd;
}

uint32_t FirmwareHost::maxSessions() const {
    return impl_->slots;
}

proto::Result<std::unique_ptr<FirmwareHost>> FirmwareHost::create(const FirmwareHostConfig& config) {
    using Kind = proto::Error::Kind;
    if (config.firmwareDramBytes == 0 || config.sessionWindowBytes == 0 ||
        config.firmwareDramBytes >= config.dramBytes ||
        (config.dramBytes - config.firmwareDramBytes) / config.sessionWindowBytes == 0 ||
        (config.dramBytes - config.firmwareDramBytes) / config.sessionWindowBytes > kMaxSessions ||
        config.sessionWindowBytes % 4096 != 0 || config.firmwareDramBytes % 4096 != 0) {
        return proto::fail(Kind::kInvalidArgument,
                           "device DRAM of " + std::to_string(config.dramBytes) +
                               " bytes must hold the firmware's " + std::to_string(config.firmwareDramBytes) +
                               " bytes and 1 to " + std::to_string(kMaxSessions) + " session windows of " +
                               std::to_string(config.sessionWindowBytes) + " bytes (both page multiples)");
    }
    auto impl = std::make_unique<Impl>();
    impl->config = config;
    impl->slots =
        static_cast<uint32_t>((config.dramBytes - config.firmwareDramBytes) / config.sessionWindowBytes);
    impl->slotUsed.assign(impl->slots, false);
    auto fd = sealedMemfd("npu-device-dram", config.dramBytes);
    if (!fd) return std::unexpected(fd.error());
    impl->dramFd = *fd;
    // One reservation for the whole device address space: DRAM (the memfd) and after it each
    // session's pool range (anonymous zero pages until a pool is mapped there).
    impl->addressBytes = config.dramBytes + uint64_t{impl->slots} * config.sessionPoolBytes;
    void* p = mmap(nullptr, impl->addressBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return std::unexpected(ioError("reserving the device address space"));
    impl->dram = static_cast<uint8_t*>(p);
    if (mmap(p, config.dramBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, impl->dramFd, 0) ==
        MAP_FAILED)
        return std::unexpected(ioError("mmap(device DRAM)"));

    impl->platform = std::make_unique<SimPlatform>(config.hw, impl->dram, impl->addressBytes);
    impl->platform->setStopCheck([raw = impl.get()](const WorkProgress& p) { return raw->stopRequested(p); });
    impl->runtimeMemory.reset(new uint8_t[config.arenaBytes]);
    impl->runtimeArena = std::make_unique<Arena>(impl->runtimeMemory.get(), config.arenaBytes);
    RuntimeConfig rc;
    rc.firmwareDramBytes = config.firmwareDramBytes;
    impl->runtime = std::make_unique<Runtime>(*impl->platform, *impl->runtimeArena, rc);
    if (FwStatus s = impl->runtime->init(); !s.ok()) {
        return proto::fail(Kind::kIo, std::string("firmware runtime init: ") + s.message);
    }
    impl->shared = std::make_unique<RuntimeService>(*impl->runtime, *impl->platform, 0, 0);
    impl->hostMemory.reset(new uint8_t[kHostArenaBytes]);
    impl->hostArena = std::make_unique<Arena>(impl->hostMemory.get(), kHostArenaBytes);
    impl->registry = std::make_unique<SessionRegistry>(*impl->hostArena, kMaxHandles);
    // Every session and burst channel may fill its server's queue: the shared queue holds them all.
    const uint32_t perSession = config.queueDepth + BurstChannels::kMaxOpen * BurstChannels::kQueueDepth;
    impl->scheduler = std::make_unique<Scheduler>(*impl->hostArena, impl->slots * perSession);
    if (!impl->registry->ok() || !impl->scheduler->ok()) {
        return proto::fail(Kind::kResourceExhausted, "firmware host: the session tables do not fit " +
                                                         std::to_string(kHostArenaBytes) + " bytes");
    }
    Impl* raw = impl.get();
    impl->executor = std::thread([raw] { raw->runExecutor(); });
    return std::unique_ptr<FirmwareHost>(new FirmwareHost(std::move(impl)));
}

void FirmwareHost::serve(proto::Transport& transport, const std::atomic<bool>* externalStop) {
    Impl& d = *impl_;
    std::unique_ptr<Session> session;
    uint64_t epoch = 0;
    transport.setReadPollWindow(std::chrono::microseconds(d.config.requestPollUs));
    {
        std::lock_guard lock(d.mutex);
        auto s = d.openSession(transport);
        if (!s) {
            std::fprintf(stderr, "npu firmware: refusing a session: %s\n", s.error().message.c_str());
            transport.shutdown();
            return;
        }
        session = std::move(*s);
        epoch = d.crashEpoch.load();
    }
    d.readLoop(*session, externalStop, epoch);
    d.stopChannels(*session);  // their threads end before the session they serve
    session->outbox->stop();   // (not under the lock) replies from now on are dropped
    std::unique_lock lock(d.mutex);
    d.midItemDone.wait(lock, [&] { return !d.midItem; });  // never under a running item
    d.closeSession(*session);
}

void FirmwareHost::Impl::readLoop(Session& s, const std::atomic<bool>* externalStop, uint64_t epoch) {
    tlsReader = &s;
    auto stopping = [&] {
        return stop.load() || (externalStop != nullptr && externalStop->load()) || crashEpoch.load() != epoch;
    };
    while (!stopping()) {
        auto n = s.transport->read(s.readBuffer, s.fdSink(), kPollInterval);
        if (!n && n.error().kind != proto::Error::Kind::kTimeout) break;  // peer gone or transport broken
        if (!n || *n == 0) continue;
        wantLock.fetch_add(1);
        std::unique_lock lock(mutex);
        wantLock.fetch_sub(1);
        feed(s, *n);
        // The fast path of a lone client: one item runs on this thread (no hand-off); the rest
        // is the executor's, while this thread goes back to queueing what its peer sends.
        if (runOne(lock) && scheduler->queued() > 0) workReady.notify_one();
    }
    tlsReader = nullptr;
}

void FirmwareHost::start(std::unique_ptr<proto::Transport> transport) {
    std::lock_guard lock(ownedMutex_);
    proto::Transport* t = transport.get();
    owned_.push_back(std::move(transport));
    threads_.emplace_back([this, t] { serve(*t); });
}

void FirmwareHost::stop() {
    impl_->stop.store(true);
    impl_->workReady.notify_all();
    std::lock_guard lock(ownedMutex_);
    for (auto& t : owned_) t->shutdown();
}

void FirmwareHost::holdWork(bool hold) {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->held = hold;
    }
    impl_->workReady.notify_all();
}

std::unique_ptr<proto::Transport> FirmwareHost::connectLoopback() {
    auto [hostEnd, firmwareEnd] = proto::makeLoopbackPair();
    start(std::move(firmwareEnd));
    return std::move(hostEnd);
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
