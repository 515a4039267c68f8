// Burst channels (METHOD_OPEN_BURST_CHANNEL, docs/protocol.md "Burst channels"): a session's
// client passes a fast message queue (npu/protocol/fmq.h), and the host serves it as another
// endpoint of that session on a thread of its own: an RpcServer that serves Execute, Cancel and
// Ping only, over the session's service (its models, buffers, window and pools), with a queue of
// its own in the scheduler (its call ids are its own). A channel ends when its client closes its
// end, when a reply does not fit the queue (its client does not read), or with its session.
#include <cinttypes>
#include <cstdio>
#include <string>

#include "firmware_host_impl.h"
#include "npu/protocol/fmq.h"

namespace npu::fw::host {

namespace {
// A channel's server: one Execute's temporaries (the request, the reply, argument tables) and
// the reassembly of a fragmented request (an Execute is a few KiB; 64 inputs and outputs at most).
constexpr uint64_t kChannelScratchBytes = 1ull << 20;
constexpr uint32_t kChannelMaxMessageBytes = 256u << 10;
}  // namespace

FwStatus BurstChannels::openBurstChannel(uint64_t callId, npu_proto_OpenBurstChannelReply* reply) {
    // The call's two fds (closed on an error).
    proto::UniqueFd memfd = session.fds.take(callId);
    proto::UniqueFd doorbell = session.fds.take(callId);
    if (!memfd || !doorbell) {
        return FwStatus::make(Code::kInvalidArgument,
                              "OpenBurstChannel: the queue's memfd and its doorbell socket must come with "
                              "the request (%d of 2 came)",
                              int{memfd.valid()} + int{doorbell.valid()});
    }
    if (closing) return FwStatus::make(Code::kGeneralFailure, "OpenBurstChannel: the session is ending");
    reapEnded();
    if (open.size() >= kMaxOpen) {
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "OpenBurstChannel: this session has %" PRIu32
                              " burst channels open, the most; release a burst first",
                              kMaxOpen);
    }
    proto::FmqOptions options;
    options.pollWindow = std::chrono::microseconds(host.config.burstPollUs);
    options.writeTimeout = std::chrono::milliseconds(0);  // never wait under the firmware lock
    const std::string name = "burst channel of session " + std::to_string(session.id);
    auto transport = proto::attachFmq(std::move(memfd), std::move(doorbell), options, name);
    if (!transport) {
        return FwStatus::make(Code::kInvalidArgument, "OpenBurstChannel: %s",
                              transport.error().message.c_str());
    }
    auto channel = std::make_unique<BurstChannel>();
    channel->transport = std::move(*transport);
    auto endpoint = host.openChannel(session, *channel->transport);
    if (!endpoint) {
        return FwStatus::make(Code::kResourceExhaustedTransient, "OpenBurstChannel: %s",
                              endpoint.error().message.c_str());
    }
    channel->endpoint = std::move(*endpoint);
    reply->channel_id = channel->endpoint->id;
    reply->queue_depth = kQueueDepth;
    BurstChannel* raw = channel.get();
    const uint64_t epoch = host.crashEpoch.load();
    channel->thread = std::thread([h = &host, raw, epoch] { h->serveChannel(*raw, epoch); });
    open.push_back(std::move(channel));
    ++opened;
    proto::vlog("firmware", "session %" PRIu32 ": burst channel %" PRIu32 " open (%zu open)", session.id,
                reply->channel_id, open.size());
    return FwStatus::okStatus();
}

void BurstChannels::reapEnded() {
    for (auto it = open.begin(); it != open.end();) {
        if (!(*it)->ended.load()) {
            ++it;
            continue;
        }
        (*it)->thread.join();  // it set `ended` under the lock we hold, and only returns after
        requestsClosed += (*it)->endpoint->server->stats().requestsHandled;
        it = open.erase(it);
    }
}

void Session::counters(npu_proto_CountersReply* reply) {
    if (outbox) appendCounter(reply, "session.replies_deferred", outbox->deferredSends());
    if (!channels) return;
    uint64_t live = 0, requests = channels->requestsClosed;
    for (const auto& c : channels->open) {
        live += c->ended.load() ? 0 : 1;
        requests += c->endpoint->server->stats().requestsHandled;
    }
    appendCounter(reply, "burst.channels_open", live);
    appendCounter(reply, "burst.channels_opened", channels->opened);
    appendCounter(reply, "burst.requests", requests);
}

proto::Result<std::unique_ptr<Session>> FirmwareHost::Impl::openChannel(Session& parent,
                                                                        proto::Transport& transport) {
    auto s = std::make_unique<Session>();
    s->watch = [this](uint32_t session) { return workFor(session); };
    s->resetting = [this] { resetArrived = true; };
    s->place = [](uint64_t) { return false; };
    s->id = nextSessionId++;
    s->owner = parent.id;
    s->parent = &parent;
    s->slot = parent.slot;
    s->transport = &transport;
    s->service = parent.service;
    s->gate = std::make_unique<SessionGate>(*scheduler, *registry, *platform, s->id, parent.id);
    RpcServerConfig sc;
    sc.maxPayloadBytes = config.maxPayloadBytes;
    sc.maxMessageBytes = kChannelMaxMessageBytes;
    sc.queueDepth = BurstChannels::kQueueDepth;
    sc.queueBytes = kChannelMaxMessageBytes;
    sc.gate = s->gate.get();
    sc.monitor = s.get();
    sc.log = this;
    sc.burstChannel = true;
    const size_t bytes = RpcServer::memoryNeeded(sc) + kChannelScratchBytes;
    s->memory.reset(new uint8_t[bytes]);
    s->arena = std::make_unique<Arena>(s->memory.get(), bytes);
    s->server = std::make_unique<RpcServer>(*s->service, *s->arena, *s, sc);
    if (!s->server->ok()) {
        return proto::fail(proto::Error::Kind::kResourceExhausted,
                           std::string("burst channel server: ") + s->server->initStatus().message);
    }
    sessions[s->id] = s.get();
    return s;
}

void FirmwareHost::Impl::serveChannel(BurstChannel& channel, uint64_t epoch) {
    Session& endpoint = *channel.endpoint;
    readLoop(endpoint, nullptr, epoch);
    std::unique_lock lock(mutex);
    midItemDone.wait(lock, [&] { return !midItem; });  // never under a running item
    closeChannel(endpoint);
    channel.ended.store(true);
}

void FirmwareHost::Impl::closeChannel(Session& endpoint) {
    if (endpoint.server->ok()) endpoint.server->onDisconnect();
    WorkItem dropped[1];
    (void)scheduler->dropSession(endpoint.id, dropped, 0);  // never answered: the peer is gone
    sessions.erase(endpoint.id);
    proto::vlog("firmware", "session %" PRIu32 ": burst channel %" PRIu32 " closed", endpoint.owner,
                endpoint.id);
}

void FirmwareHost::Impl::stopChannels(Session& parent) {
    if (!parent.channels) return;
    std::vector<std::unique_ptr<BurstChannel>> ending;
    {
        std::lock_guard lock(mutex);
        parent.channels->closing = true;
        ending.swap(parent.channels->open);
    }
    for (auto& c : ending) c->transport->shutdown();
    for (auto& c : ending) c->thread.join();  // each closes its endpoint (under the lock) first
}

}  // namespace npu::fw::host
