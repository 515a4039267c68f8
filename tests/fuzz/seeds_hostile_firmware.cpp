// Seeds of fuzz_hostile_firmware: what the real firmware (loopback) answers to exerciseDriver(),
// recorded as a script, and variants a hostile peer would try: an unsealed, too small or
// non-memory DRAM fd, a wrong call id, a response split into pieces, a huge length, an error frame,
// progress frames (valid, for another call, unparsable, inconsistent).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "fuzz_target.h"
#include "hostile_firmware.h"
#include "npu.pb.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/protocol/frame.h"

namespace npu::fuzz {
namespace {

// Forwards to the real firmware and writes what it sends as a HostileScript.
class Recorder final : public proto::Transport {
public:
    Recorder(std::unique_ptr<proto::Transport> inner, HostileScript& script)
        : inner_(std::move(inner)), script_(script) {}

    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int> fds) override {
        proto::FrameHeader h;
        if (bytes.size() >= proto::kFrameHeaderSize && proto::parseFrameHeader(bytes.data(), &h) &&
            (requests_ == 0 || h.callId != lastCallId_)) {
            if (requests_++ > 0) script_.next();
            lastCallId_ = h.callId;
        }
        return inner_->write(bytes, fds);
    }
    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>* fds,
                               std::chrono::milliseconds timeout) override {
        const size_t fdsBefore = fds != nullptr ? fds->size() : 0;
        auto n = inner_->read(buffer, fds, timeout);
        if (!n) return n;
        stream_.insert(stream_.end(), buffer.begin(), buffer.begin() + long(*n));
        uint32_t fdKib = 0;
        if (fds != nullptr && fds->size() > fdsBefore) {
            struct stat st {};
            REQUIRE(::fstat(fds->back().get(), &st) == 0);
            fdKib = uint32_t(st.st_size >> 10);
        }
        proto::FrameHeader h;
        while (stream_.size() >= proto::kFrameHeaderSize && proto::parseFrameHeader(stream_.data(), &h) &&
               stream_.size() >= proto::kFrameHeaderSize + h.length) {
            const std::string payload(reinterpret_cast<const char*>(stream_.data()) + proto::kFrameHeaderSize,
                                      h.length);
            const auto delta = int8_t(int64_t(h.callId) - int64_t(lastCallId_));
            if (fdKib != 0) {
                script_.fdFrame(h.type, h.flags, delta, payload, kFdSealedMemfd, fdKib);
                fdKib = 0;
            } else {
                script_.frame(h.type, h.flags, delta, payload);
            }
            stream_.erase(stream_.begin(), stream_.begin() + long(proto::kFrameHeaderSize + h.length));
        }
        return n;
    }
    void shutdown() override { inner_->shutdown(); }
    std::string describe() const override { return "recorder of " + inner_->describe(); }

private:
    std::unique_ptr<proto::Transport> inner_;
    HostileScript& script_;
    std::vector<uint8_t> stream_;
    uint64_t requests_ = 0, lastCallId_ = 0;
};

HostileScript recordRealFirmware() {
    HostileScript script;
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    CHECK(exerciseDriver(std::make_unique<Recorder>(std::move(loop->hostEnd), script)) == 5);
    return script;
}

std::string hello(uint64_t windowAddr, uint64_t windowBytes) {
    proto::HelloReply h;
    h.set_major(1);
    h.set_firmware_version("hostile");
    h.set_max_payload_bytes(1 << 20);
    h.set_device_memory_bytes(windowAddr + windowBytes);
    h.set_host_window_addr(windowAddr);
    h.set_host_window_bytes(windowBytes);
    return h.SerializeAsString();
}

}  // namespace

std::vector<std::vector<uint8_t>> seeds() {
    std::vector<std::vector<uint8_t>> all;
    const HostileScript real = recordRealFirmware();
    all.push_back(real.bytes);
    const uint16_t response = proto::kFlagResponse;
    const uint8_t helloMethod = proto::METHOD_HELLO;
    for (HostileFd fd : {kFdSealedMemfd, kFdUnsealedMemfd, kFdPipe, kFdDevZero}) {
        HostileScript s;  // a handshake only, with each kind of fd; a window larger than the fd
        s.fdFrame(helloMethod, response, 0, hello(4096, 1 << 20), fd, fd == kFdSealedMemfd ? 512 : 2048);
        all.push_back(s.bytes);
    }
    {
        HostileScript s;  // a response to another call id first, then a request, then the answer split
        s.frame(helloMethod, response, 1, hello(0, 1 << 20));
        s.frame(proto::METHOD_PING, 0, 0, "");
        const std::string h = hello(0, 1 << 20);
        s.fdFrame(helloMethod, response | proto::kFlagMore, 0, h.substr(0, 5), kFdSealedMemfd, 1024);
        s.frame(helloMethod, response, 0, h.substr(5));
        s.next();
        proto::ErrorReply e;
        e.mutable_status()->set_code(2);
        e.mutable_status()->set_message("hostile error");
        s.frame(proto::kMethodError, response | proto::kFlagError, 0, e.SerializeAsString());
        all.push_back(s.bytes);
    }
    {
        HostileScript
            s;  // progress frames before the answer: valid, another call's, unparsable, done > total
        auto progress = [](uint64_t callId, uint32_t done, uint32_t total) {
            proto::ProgressEvent p;
            p.set_call_id(callId);
            p.set_phase(2);
            p.set_done(done);
            p.set_total(total);
            return p.SerializeAsString();
        };
        s.frame(proto::METHOD_PROGRESS, 0, 0, progress(1, 1, 4));
        s.frame(proto::METHOD_PROGRESS, 0, 7, progress(8, 1, 4));
        s.frame(proto::METHOD_PROGRESS, 0, 0, std::string(40, '\xff'));
        s.frame(proto::METHOD_PROGRESS, 0, 0, progress(1, UINT32_MAX, 1));
        s.fdFrame(helloMethod, response, 0, hello(0, 1 << 20), kFdSealedMemfd, 1024);
        all.push_back(s.bytes);
    }
    {
        HostileScript s;  // a header announcing a huge payload, then garbage
        uint8_t header[proto::kFrameHeaderSize];
        proto::FrameHeader fh;
        fh.type = helloMethod;
        fh.flags = response;
        fh.callId = 1;
        fh.length = 0;
        proto::encodeFrameHeader(fh, nullptr, header);
        proto::storeLe32(header + 16, 0x7fffffff);  // the length field, after the CRC was made
        s.raw(std::string(reinterpret_cast<const char*>(header), sizeof header) + std::string(300, 'x'));
        all.push_back(s.bytes);
    }
    return all;
}

}  // namespace npu::fuzz
