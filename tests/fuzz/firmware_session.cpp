#include "firmware_session.h"

#include <cstring>
#include <map>
#include <memory>

#include "fuzz_target.h"
#include "npu/fw/arena.h"
#include "npu/fw/rpc_server.h"
#include "npu/fw/runtime.h"
#include "npu/protocol/frame.h"
#include "sim_platform.h"

namespace npu::fuzz {
namespace {

using namespace npu::fw;

// Checks and collects what the server sends.
struct Sink final : FrameSink, proto::FrameListener {
    std::vector<uint8_t> buffer =
        std::vector<uint8_t>(proto::FrameDecoder::bufferSizeFor(kSessionMaxPayload));
    proto::FrameDecoder decoder{buffer.data(), buffer.size(), kSessionMaxPayload};
    const std::function<void(const SessionReply&)>* onReply = nullptr;

    bool writeFrame(const uint8_t* bytes, size_t length, uint32_t, uint16_t) override {
        require(length >= proto::kFrameHeaderSize);
        decoder.feed(bytes, length, *this);
        require(decoder.buffered() == 0);  // the server sends whole frames
        return true;
    }
    void onFrameEvent(const proto::FrameEvent& e) override {
        require(e.kind == proto::FrameEventKind::kFrame);  // never garbage, never a bad CRC
        require((e.header.flags & proto::kFlagResponse) != 0);
        if (onReply != nullptr && *onReply) {
            (*onReply)({e.header.type, e.header.flags, e.header.callId,
                        std::string(reinterpret_cast<const char*>(e.payload), e.header.length)});
        }
    }
};

// The fds bound to calls (fw::RequestFds): every call that binds releases what it bound once it
// is answered or refused; only a message still being reassembled may hold its fds.
struct BoundFds : RequestFds {
    std::map<uint64_t, uint32_t> bound;
    void bind(uint64_t callId, uint32_t count) override {
        require(count == 1 || count == 2);
        bound[callId] += count;
    }
    void release(uint64_t callId) override { bound.erase(callId); }
};

struct Memory {
    std::unique_ptr<uint8_t[]> dram{new uint8_t[kSessionDramBytes]};
    std::unique_ptr<uint8_t[]> runtimeArena{new uint8_t[8u << 20]};
    size_t serverBytes = 0;
    std::unique_ptr<uint8_t[]> serverArena;
};

Memory& memory(const RpcServerConfig& config) {
    static Memory m;
    if (!m.serverArena) {
        m.serverBytes = RpcServer::memoryNeeded(config) + (16u << 20);
        m.serverArena.reset(new uint8_t[m.serverBytes]);
    }
    return m;
}

}  // namespace

void appendRecord(std::vector<uint8_t>& script, RecordKind kind, uint8_t method, uint16_t flags,
                  const std::string& bytes) {
    uint8_t header[8];
    header[0] = kind;
    header[1] = method;
    proto::storeLe16(header + 2, flags);
    proto::storeLe32(header + 4, static_cast<uint32_t>(bytes.size()));
    script.insert(script.end(), header, header + 8);
    script.insert(script.end(), bytes.begin(), bytes.end());
}

void runFirmwareSession(const uint8_t* data, size_t size,
                        const std::function<void(const SessionReply&)>& onReply) {
    RpcServerConfig sc;
    sc.maxPayloadBytes = kSessionMaxPayload;
    sc.maxMessageBytes = 1u << 20;
    sc.queueDepth = 4;
    sc.queueBytes = 1u << 20;
    sc.deviceMemoryBytes = kSessionDramBytes;
    sc.hostWindowAddr = kSessionFirmwareBytes;
    sc.hostWindowBytes = kSessionDramBytes - kSessionFirmwareBytes;
    Memory& mem = memory(sc);
    std::memset(mem.dram.get(), 0, kSessionDramBytes);  // every input starts from the same device

    sim::HwConfig hw;
    host::SimPlatform platform(hw, mem.dram.get(), kSessionDramBytes);
    Arena runtimeArena(mem.runtimeArena.get(), 8u << 20);
    RuntimeConfig rc;
    rc.firmwareDramBytes = kSessionFirmwareBytes;
    Runtime runtime(platform, runtimeArena, rc);
    require(runtime.init().ok());
    const HardwareInfo info = runtime.hardwareInfo();
    sc.hwId = info.id;
    sc.hwVersion = info.version;
    BoundFds fds;
    sc.requestFds = &fds;
    Arena serverArena(mem.serverArena.get(), mem.serverBytes);
    Sink sink;
    sink.onReply = &onReply;
    RpcServer server(runtime, platform, serverArena, sink, sc);
    require(server.ok());

    InputReader in(data, size);
    uint64_t callId = 0;
    uint16_t lastFlags = 0;  // a fragment (kFlagMore) is continued under the same call id
    std::vector<uint8_t> frame;
    while (!in.empty()) {
        const uint8_t kind = in.u8() % 4;
        const uint8_t method = in.u8();
        const uint16_t flags = in.u16();
        size_t length = 0;
        const uint8_t* bytes = in.bytes(in.u32() % (kSessionMaxPayload + 64), &length);
        switch (kind) {
            case kRecordFrame: {
                frame.assign(proto::kFrameHeaderSize + length, 0);
                if (length != 0) std::memcpy(frame.data() + proto::kFrameHeaderSize, bytes, length);
                proto::FrameHeader h;
                h.type = method;
                h.flags = flags;
                if ((lastFlags & proto::kFlagMore) == 0) ++callId;
                lastFlags = flags;
                h.callId = callId;
                h.length = static_cast<uint32_t>(length);
                proto::encodeFrameHeader(h, frame.data() + proto::kFrameHeaderSize, frame.data());
                server.onBytes(frame.data(), frame.size());
                break;
            }
            case kRecordRaw:
                server.onBytes(bytes, length);
                break;
            case kRecordWindowWrite: {
                if (length < 4) break;
                const uint64_t windowBytes = kSessionDramBytes - kSessionFirmwareBytes;
                const uint64_t offset = proto::loadLe32(bytes) % windowBytes;
                const uint64_t n = std::min<uint64_t>(length - 4, windowBytes - offset);
                std::memcpy(mem.dram.get() + kSessionFirmwareBytes + offset, bytes + 4, n);
                break;
            }
            default:
                server.onDisconnect();
                break;
        }
        for (int guard = 0; server.poll(); ++guard) require(guard < 64);  // the queue is bounded
        require(fds.bound.size() <= 1);  // at most the call being reassembled
    }
    server.onDisconnect();
    while (server.poll()) {
    }
    require(fds.bound.empty());
}

}  // namespace npu::fuzz
