#include "hostile_firmware.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "driver_model.h"
#include "fuzz_target.h"
#include "npu/protocol/frame.h"
#include "npu/shim/npu_device.h"

namespace npu::fuzz {
namespace {

constexpr uint32_t kMaxRecordBytes = 4u << 20;
constexpr uint64_t kMaxFdBytes = 1ull << 30;  // memfds are sparse: a large one costs nothing

struct Chunk {
    uint8_t kind = kHostileRaw;
    uint8_t method = 0;
    uint16_t flags = 0;
    int8_t callIdDelta = 0;
    std::vector<uint8_t> bytes;  // the payload, or the raw bytes
    bool withFd = false;
    uint8_t fdKind = 0;
    uint64_t fdBytes = 0;
};

proto::UniqueFd makeFd(uint8_t kind, uint64_t bytes) {
    switch (kind % 4) {
        case kFdSealedMemfd:
        case kFdUnsealedMemfd: {
            proto::UniqueFd fd(::memfd_create("hostile-dram", MFD_CLOEXEC | MFD_ALLOW_SEALING));
            require(fd.valid() && ::ftruncate(fd.get(), off_t(bytes)) == 0);
            if (kind % 4 == kFdSealedMemfd)
                require(::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0);
            return fd;
        }
        case kFdPipe: {
            int p[2];
            require(::pipe2(p, O_CLOEXEC) == 0);
            ::close(p[1]);
            return proto::UniqueFd(p[0]);
        }
        default:
            return proto::UniqueFd(::open("/dev/zero", O_RDONLY | O_CLOEXEC));
    }
}

class HostileFirmware final : public proto::Transport {
public:
    HostileFirmware(const uint8_t* data, size_t size) {
        InputReader in(data, size);
        segments_.emplace_back();
        while (!in.empty()) {
            Chunk c;
            c.kind = in.u8() % 4;
            if (c.kind == kHostileNext) {
                segments_.emplace_back();
                continue;
            }
            if (c.kind != kHostileRaw) {
                c.method = in.u8();
                c.flags = in.u16();
                c.callIdDelta = int8_t(in.u8());
            }
            size_t n = 0;
            const uint8_t* p = in.bytes(in.u32() % kMaxRecordBytes, &n);
            c.bytes.assign(p, p + n);
            if (c.kind == kHostileFdFrame) {
                c.withFd = true;
                c.fdKind = in.u8();
                c.fdBytes = (uint64_t{in.u32()} << 10) % kMaxFdBytes;
            }
            segments_.back().push_back(std::move(c));
        }
    }

    proto::Result<void> write(std::span<const uint8_t> bytes, std::span<const int>) override {
        if (down_) return proto::fail(proto::Error::Kind::kDisconnected, "hostile firmware: shut down");
        proto::FrameHeader h;
        if (bytes.size() >= proto::kFrameHeaderSize && proto::parseFrameHeader(bytes.data(), &h) &&
            (requests_ == 0 || h.callId != lastCallId_)) {
            ++requests_;
            lastCallId_ = h.callId;
        }
        return {};
    }

    proto::Result<size_t> read(std::span<uint8_t> buffer, std::vector<proto::UniqueFd>* fds,
                               std::chrono::milliseconds) override {
        if (down_) return proto::fail(proto::Error::Kind::kDisconnected, "hostile firmware: shut down");
        while (sent_ == current_.size()) {
            if (!nextChunk(fds))
                return proto::fail(proto::Error::Kind::kDisconnected, "hostile firmware hung up");
        }
        const size_t n = std::min(buffer.size(), current_.size() - sent_);
        std::memcpy(buffer.data(), current_.data() + sent_, n);
        sent_ += n;
        return n;
    }

    void shutdown() override { down_ = true; }
    std::string describe() const override { return "hostile firmware"; }

private:
    // Moves to the next record the driver may read (segment s after its (s+1)-th request).
    bool nextChunk(std::vector<proto::UniqueFd>* fds) {
        while (segment_ < segments_.size() && chunk_ == segments_[segment_].size()) {
            if (segment_ + 1 >= requests_) return false;
            ++segment_;
            chunk_ = 0;
        }
        if (segment_ >= segments_.size() || segment_ >= requests_) return false;
        const Chunk& c = segments_[segment_][chunk_++];
        sent_ = 0;
        if (c.kind == kHostileRaw) {
            current_ = c.bytes;
        } else {
            proto::FrameHeader h;
            h.type = c.method;
            h.flags = c.flags;
            h.callId = lastCallId_ + uint64_t(int64_t(c.callIdDelta));
            h.length = uint32_t(c.bytes.size());
            current_.assign(proto::kFrameHeaderSize + c.bytes.size(), 0);
            if (!c.bytes.empty())
                std::memcpy(current_.data() + proto::kFrameHeaderSize, c.bytes.data(), c.bytes.size());
            proto::encodeFrameHeader(h, current_.data() + proto::kFrameHeaderSize, current_.data());
        }
        if (c.withFd && fds != nullptr) fds->push_back(makeFd(c.fdKind, c.fdBytes));
        return true;
    }

    std::vector<std::vector<Chunk>> segments_;
    size_t segment_ = 0, chunk_ = 0;
    std::vector<uint8_t> current_;
    size_t sent_ = 0;
    uint64_t requests_ = 0, lastCallId_ = 0;
    bool down_ = false;
};

void header(std::vector<uint8_t>& s, uint8_t kind, uint8_t method, uint16_t flags, int8_t delta,
            size_t length) {
    uint8_t h[9] = {kind, method};
    proto::storeLe16(h + 2, flags);
    h[4] = uint8_t(delta);
    proto::storeLe32(h + 5, uint32_t(length));
    s.insert(s.end(), h, h + 9);
}

// A small quant8 CONV_2D (driver_model.h), claimed by the NPU.
const framework::TestCase& smallModel() {
    static const framework::TestCase tc = [] {
        static const uint8_t choices[] = {0, 0, 3, 3, 2, 40, 7, 1, 2, 3, 4, 0, 0, 2, 2, 0, 0, 1, 1, 9, 0, 1};
        InputReader in(choices, sizeof choices);
        return buildDriverModel(in).testCase;
    }();
    return tc;
}

template <class T>
bool succeeded(const Result<T>& r) {
    require(r.has_value() || !r.error().message.empty());
    return r.has_value();
}

}  // namespace

int exerciseDriver(std::unique_ptr<proto::Transport> transport) {
    using namespace std::chrono_literals;
    shim::ShimOptions options;
    options.callTimeout = options.prepareTimeout = options.executeTimeout = 2000ms;
    options.autotune = false;
    auto device = shim::createNpuDevice(std::move(transport), options);
    if (!succeeded(device)) return 0;
    int ok = 1;
    const framework::TestCase& tc = smallModel();
    ok += succeeded((*device)->getCapabilities()) ? 1 : 0;
    ok += succeeded((*device)->getSupportedOperations(tc.model)) ? 1 : 0;
    auto prepared = (*device)->prepareModel(tc.model);
    if (!succeeded(prepared)) return ok;
    ++ok;
    auto request = framework::makeRequest(tc);
    require(request.has_value());
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::YES, std::nullopt,
                                                    std::nullopt);
    ok += succeeded(result) ? 1 : 0;
    return ok;
}

std::unique_ptr<proto::Transport> makeHostileFirmware(const uint8_t* data, size_t size) {
    return std::make_unique<HostileFirmware>(data, size);
}

void HostileScript::frame(uint8_t method, uint16_t flags, int8_t callIdDelta, const std::string& payload) {
    header(bytes, kHostileFrame, method, flags, callIdDelta, payload.size());
    bytes.insert(bytes.end(), payload.begin(), payload.end());
}

void HostileScript::fdFrame(uint8_t method, uint16_t flags, int8_t callIdDelta, const std::string& payload,
                            HostileFd fd, uint32_t sizeKib) {
    header(bytes, kHostileFdFrame, method, flags, callIdDelta, payload.size());
    bytes.insert(bytes.end(), payload.begin(), payload.end());
    uint8_t tail[5] = {fd};
    proto::storeLe32(tail + 1, sizeKib);
    bytes.insert(bytes.end(), tail, tail + 5);
}

void HostileScript::raw(const std::string& data) {
    uint8_t h[5] = {kHostileRaw};
    proto::storeLe32(h + 1, uint32_t(data.size()));
    bytes.insert(bytes.end(), h, h + 5);
    bytes.insert(bytes.end(), data.begin(), data.end());
}

void HostileScript::next() {
    bytes.push_back(kHostileNext);
}

}  // namespace npu::fuzz
