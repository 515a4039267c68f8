// The watchdog, reset, restart and replay of a Connection (docs/reliability.md, "Watchdog,
// reset, replay"). Escalation for a loss seen by an operation or by the watchdog:
//   1. a call timed out but the connection is up: Ping. A firmware host answers it on arrival,
//      ahead of queued work: an answer with no item running and nothing of ours queued (or one
//      served in order, by a bare firmware) means every earlier call was handled: the late reply
//      was dropped, the operation is replayed. While an item runs, the shim pings again until
//      the item's progress counter moves (working: replay) or stallWindow passed without it
//      (stuck: step 2).
//   2. no answer, or stuck: Reset (the firmware drops every model and resets the NPU), models
//      restored. A host serves Reset only once no item runs, so an answer proves the stuck item
//      ended.
//   3. no answer or no connection: restart the firmware host through the transport factory,
//      handshake again, adopt the new device memory, restore the models.
// A reset or restart bumps the epoch first, so an operation begun before it replays whatever
// it was told afterwards (a stale handle, a dropped connection) instead of passing it on.
#include <cstring>

#include "connection.h"
#include "npu/protocol/vlog.h"
#include "ping_verdict.h"

namespace npu::shim {
namespace {
constexpr std::chrono::milliseconds kDrainTimeout{10000};  // operations leave once their calls fail
constexpr int kRestartTries = 3;
constexpr std::chrono::milliseconds kRestartBackoff{200};
constexpr int kRestoreRounds = 3;
}  // namespace

Connection::~Connection() {
    {
        std::lock_guard lock(gateMutex_);
        stopWatchdog_ = true;
    }
    watchdogWake_.notify_all();
    if (watchdog_.joinable()) watchdog_.join();
    if (auto r = rpc()) r->close();
}

Attempt Connection::enter() {
    std::unique_lock lock(gateMutex_);
    gateChanged_.wait(lock, [&] { return !recovering_; });
    ++active_;
    return Attempt{epoch_, Attempt::Loss::kNone};
}

void Connection::leave() {
    std::lock_guard lock(gateMutex_);
    --active_;
    gateChanged_.notify_all();
}

void Connection::beginRecovery() {
    {
        std::lock_guard lock(gateMutex_);
        recovering_ = true;
        ++epoch_;
    }
    forgetHandles();
}

void Connection::forgetHandles() {
    // None is valid on the firmware that comes back; a handle kept from a lost firmware could
    // name another model on the new one (handles start again there).
    std::lock_guard lock(modelsMutex_);
    for (auto& [id, m] : models_) m.handle = 0;
}

void Connection::endRecovery() {
    std::lock_guard lock(gateMutex_);
    recovering_ = false;
    lastHeard_ = std::chrono::steady_clock::now();
    gateChanged_.notify_all();
}

void Connection::quarantine(std::vector<WindowBlock>& blocks) {
    std::lock_guard lock(modelsMutex_);
    for (auto& b : blocks) quarantined_.push_back(std::move(b));
    blocks.clear();
}

Status Connection::runRecovering(const char* what, std::vector<WindowBlock>& keep,
                                 const std::function<Status(Attempt&)>& attempt) {
    for (uint32_t tries = 0;; ++tries) {
        Attempt a = enter();
        Status s = attempt(a);
        leave();
        if (s) return s;
        uint64_t now = 0;
        {
            std::lock_guard lock(gateMutex_);
            now = epoch_;
        }
        if (a.lost == Attempt::Loss::kNone && now == a.epoch) return s;  // the request's own error
        if (a.lost == Attempt::Loss::kDataFault) return s;
        if (a.lost == Attempt::Loss::kNpuHang) npuHangs_++;
        if (a.lost == Attempt::Loss::kTimeout || a.lost == Attempt::Loss::kDisconnected) {
            if (Status r = recover(a.epoch, a.lost); !r) {
                failed_++;
                quarantine(keep);
                return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                            std::string(what) + ": the firmware was lost and could not be recovered (" +
                                r.error().message + "); first: " + s.error().message);
            }
        }
        if (tries >= options_.recovery.maxReplays) {
            failed_++;
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        std::string(what) + ": gave up after " + std::to_string(tries + 1) +
                            " attempts, each lost to a firmware fault; last: " + s.error().message);
        }
        replayed_++;
        proto::vlog("driver", "%s: replaying after: %s", what, s.error().message.c_str());
    }
}

std::optional<proto::PingReply> Connection::ping() {
    auto r = rpc();
    pings_++;
    proto::PingRequest request;
    request.set_nonce(pings_.load());
    proto::PingReply reply;
    auto result = r->call(proto::METHOD_PING, request, reply, options_.recovery.pingTimeout);
    if (result && reply.nonce() == request.nonce()) {
        std::lock_guard lock(gateMutex_);
        lastHeard_ = std::chrono::steady_clock::now();
        return reply;
    }
    pingFailures_++;
    return std::nullopt;
}

Connection::Liveness Connection::watchProgress() {
    const auto first = ping();
    if (!first) return Liveness::kSilent;
    if (servedEverything(*first)) return Liveness::kServed;
    if (!first->item_running()) return Liveness::kWorking;  // ours is queued: the host runs it next
    const auto window = options_.recovery.stallWindow;
    const auto deadline = std::chrono::steady_clock::now() + window;
    for (auto now = std::chrono::steady_clock::now(); now < deadline;
         now = std::chrono::steady_clock::now()) {
        std::this_thread::sleep_for(
            std::min<std::chrono::steady_clock::duration>(window / 2, deadline - now));
        const auto next = ping();
        if (!next) return Liveness::kSilent;
        if (progressed(*first, *next)) return Liveness::kWorking;
    }
    stalls_++;
    proto::logError("driver",
                    "the firmware answers pings but its running item (%s, %llu us so far) made no "
                    "progress in %lld ms (counter %llu): resetting it",
                    first->item_is_mine() ? "ours" : "another session's",
                    static_cast<unsigned long long>(first->item_running_us()),
                    static_cast<long long>(window.count()),
                    static_cast<unsigned long long>(first->progress()));
    return Liveness::kStuck;
}

Status Connection::resetFirmware() {
    proto::ResetRequest request;
    proto::ResetReply reply;
    auto result = rpc()->call(proto::METHOD_RESET, request, reply, options_.recovery.resetTimeout);
    if (!result) return mapRpcError(result.error(), options_.recovery.resetTimeout, "reset");
    NPU_TRY(checkStatus(reply.status(), "reset"));
    resets_++;
    return {};
}

Status Connection::restartFirmware() {
    if (!restart_) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "this device was opened on one transport and cannot restart its firmware host");
    }
    // Every call still waiting fails now; operations leave the gate once their calls fail.
    rpc()->close();
    {
        std::unique_lock lock(gateMutex_);
        if (!gateChanged_.wait_for(lock, kDrainTimeout, [&] { return active_ == 0; })) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, "operations did not leave within 10 s");
        }
    }
    std::string why;
    for (int i = 0; i < kRestartTries; ++i) {
        if (i > 0) std::this_thread::sleep_for(kRestartBackoff * i);
        auto transport = restart_();
        if (!transport) {
            why = transport.error().message;
            continue;
        }
        const std::string peer = (*transport)->describe();
        (*transport)->setReadPollWindow(options_.replyPollWindow);
        auto fresh = proto::RpcClient::create(std::move(*transport));
        if (!fresh) {
            why = fresh.error().message;
            continue;
        }
        std::unique_ptr<HostWindow> window;
        if (Status h = handshake(**fresh, &window, peer); !h) {
            why = h.error().message;
            continue;
        }
        NPU_TRY(window_->adoptMemory(*window));
        {
            std::lock_guard lock(rpcMutex_);
            rpc_ = std::move(*fresh);
        }
        pools_->forget();  // the new session has mapped none of them
        restarts_++;
        return {};
    }
    return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, "the firmware host could not be restarted in " +
                                                          std::to_string(kRestartTries) + " tries: " + why);
}

bool Connection::restoreModels() {
    std::vector<std::pair<uint64_t, RestoreFn>> todo;
    {
        std::lock_guard lock(modelsMutex_);
        for (auto& [id, m] : models_) {
            if (m.lost.empty() && m.handle == 0) todo.emplace_back(id, m.restore);
        }
    }
    for (auto& [id, restore] : todo) {
        Attempt a{0, Attempt::Loss::kNone};
        auto handle = restore(*this, a);
        if (!handle && (a.lost == Attempt::Loss::kTimeout || a.lost == Attempt::Loss::kDisconnected)) {
            return false;  // the firmware was lost again: the caller recovers it once more
        }
        std::unique_lock lock(modelsMutex_);
        auto it = models_.find(id);
        if (it == models_.end()) {  // released meanwhile: let the firmware drop it too
            lock.unlock();
            if (handle) {
                proto::ReleaseModelRequest request;
                request.set_model_handle(*handle);
                proto::ReleaseModelReply reply;
                (void)rpc()->call(proto::METHOD_RELEASE_MODEL, request, reply, options_.callTimeout);
            }
            continue;
        }
        if (handle) {
            it->second.handle = *handle;
            modelsRestored_++;
        } else {
            it->second.lost = handle.error().message;
            modelsLost_++;
            proto::logError("driver", "a prepared model could not be restored after a firmware reset: %s",
                            handle.error().message.c_str());
        }
    }
    return true;
}

Status Connection::recover(uint64_t epoch, Attempt::Loss loss) {
    std::lock_guard serial(recoverMutex_);
    {
        std::lock_guard lock(gateMutex_);
        if (epoch_ != epoch) return {};  // someone reset or restarted it meanwhile
    }
    if (loss == Attempt::Loss::kTimeout && rpc()->connected()) {
        const Liveness l = watchProgress();
        if (l == Liveness::kServed || l == Liveness::kWorking) return {};
    }
    beginRecovery();
    Status done;
    // A firmware lost again while the models are restored (another client's crash of a shared
    // daemon) is recovered again, a bounded number of times.
    for (int round = 0; round < kRestoreRounds; ++round) {
        const bool resetting = round == 0 && rpc()->connected();
        done = resetting ? resetFirmware() : Status(fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, ""));
        if (!done && resetting && rpc()->connected() && killHost_ && killHost_()) {
            // Alive (the connection is up) but deaf to Reset: a reconnection would wait behind
            // whatever holds it. It was ours to start, so it is ours to end.
            proto::logError("driver", "the firmware daemon answered no Reset (%s): killed it to restart it",
                            done.error().message.c_str());
        }
        if (!done) done = restartFirmware();
        if (!done) break;
        {
            std::lock_guard lock(modelsMutex_);
            quarantined_.clear();  // the firmware that could have used them is reset or gone
        }
        if (round > 0) forgetHandles();  // those restored on the firmware lost in the last round
        if (restoreModels()) break;
        if (round + 1 == kRestoreRounds) {
            done = fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "the firmware was lost " + std::to_string(kRestoreRounds) +
                            " times while the prepared models were restored");
        }
    }
    endRecovery();  // models left without a handle are restored by the next recovery
    return done;
}

void Connection::watchdog() {
    const auto period = options_.recovery.watchdogPeriod;
    bool reported = false;
    std::unique_lock lock(gateMutex_);
    while (!stopWatchdog_) {
        watchdogWake_.wait_for(lock, period);
        if (stopWatchdog_) break;
        const bool idle = active_ == 0 && !recovering_;
        if (!idle || std::chrono::steady_clock::now() - lastHeard_ < period) continue;
        const uint64_t epoch = epoch_;
        ++active_;  // the ping is an operation: a restart waits for it
        lock.unlock();
        const bool alive = ping().has_value();
        const bool connected = rpc()->connected();
        lock.lock();
        --active_;
        gateChanged_.notify_all();
        if (alive) {
            reported = false;
            continue;
        }
        lock.unlock();
        Status r = recover(epoch, connected ? Attempt::Loss::kTimeout : Attempt::Loss::kDisconnected);
        if (!r && !reported) {  // said once, not every period while the firmware stays lost
            proto::logError("driver", "watchdog: the firmware is lost: %s", r.error().message.c_str());
        }
        reported = !r;
        lock.lock();
    }
}

Result<uint64_t> Connection::registerModel(const Attempt& attempt, uint32_t handle, RestoreFn restore) {
    {
        std::lock_guard lock(gateMutex_);
        if (epoch_ != attempt.epoch) {
            return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                        "the firmware was reset while the model was prepared");
        }
    }
    std::lock_guard lock(modelsMutex_);
    const uint64_t id = nextModelId_++;
    models_[id] = ModelEntry{handle, std::move(restore), {}};
    return id;
}

Result<uint32_t> Connection::modelHandle(Attempt& attempt, uint64_t id) {
    std::lock_guard lock(modelsMutex_);
    auto it = models_.find(id);
    if (it == models_.end()) return generalFailure("the prepared model was released");
    if (!it->second.lost.empty()) {
        return fail(
            hal::ErrorStatus::DEVICE_UNAVAILABLE,
            "the prepared model was lost in a firmware reset and could not be restored: " + it->second.lost);
    }
    if (it->second.handle == 0) {  // a recovery failed before it restored this model: recover again
        attempt.lost = Attempt::Loss::kDisconnected;
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "the prepared model is not restored on the firmware yet");
    }
    return it->second.handle;
}

void Connection::releaseModel(uint64_t id) {
    uint32_t handle = 0;
    {
        std::lock_guard lock(modelsMutex_);
        auto it = models_.find(id);
        if (it == models_.end()) return;
        handle = it->second.handle;
        models_.erase(it);
    }
    if (handle == 0) return;  // never restored: nothing on the firmware
    proto::ReleaseModelRequest request;
    request.set_model_handle(handle);
    proto::ReleaseModelReply reply;
    // Best effort: a lost or reset firmware has released everything anyway.
    (void)call(proto::METHOD_RELEASE_MODEL, request, reply, options_.callTimeout, "releaseModel");
}

NpuCounters Connection::counters() const {
    NpuCounters c;
    c.pings = pings_;
    c.cancels = cancels_;
    c.cancelsFailed = cancelsFailed_;
    c.pingFailures = pingFailures_;
    c.stalls = stalls_;
    c.callTimeouts = callTimeouts_;
    c.disconnects = disconnects_;
    c.resets = resets_;
    c.restarts = restarts_;
    c.modelsRestored = modelsRestored_;
    c.modelsLost = modelsLost_;
    c.requestsReplayed = replayed_;
    c.requestsFailed = failed_;
    c.npuHangs = npuHangs_;
    c.dataFaults = dataFaults_;
    c.burstChannelsOpened = burstChannelsOpened_;
    c.burstChannelFailures = burstChannelFailures_;
    return c;
}

}  // namespace npu::shim
