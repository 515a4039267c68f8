#pragma once
// Test fixture for firmware/core on the simulator: device DRAM, SimPlatform, Runtime, a bump
// allocator for the host window, a small model builder, and TFLite-formula reference kernels
// written independently of the firmware (straight from the published formulas).

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../../support/fw_model_builder.h"
#include "blob_format.h"
#include "npu/fw/runtime.h"
#include "sim_platform.h"

namespace fwtest {

using namespace npu::fw;

// ---- Reference arithmetic (TFLite / gemmlowp formulas) ----------------------------------------
inline int32_t refSrdhm(int32_t a, int32_t b) {
    if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
    int64_t ab = int64_t(a) * int64_t(b);
    int64_t nudge = ab >= 0 ? (1ll << 30) : (1 - (1ll << 30));
    return int32_t((ab + nudge) / (1ll << 31));
}
inline int32_t refRdbpot(int32_t x, int e) {
    int32_t mask = int32_t((1ll << e) - 1), rem = x & mask, thr = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> e) + (rem > thr ? 1 : 0);
}
inline int32_t refMbqm(int32_t x, int32_t m, int s) {
    int ls = s > 0 ? s : 0, rs = s > 0 ? 0 : -s;
    return refRdbpot(refSrdhm(int32_t(uint32_t(x) << ls), m), rs);
}
inline void refQuantizeMultiplier(double d, int32_t* m, int* s) {
    if (d == 0) {
        *m = 0;
        *s = 0;
        return;
    }
    double q = std::frexp(d, s);
    int64_t f = int64_t(std::round(q * (1ll << 31)));
    if (f == (1ll << 31)) {
        f /= 2;
        ++*s;
    }
    *m = int32_t(f);
}
inline void refActRange(int act, float scale, int zp, int* lo, int* hi, bool isSigned = false) {
    auto q = [&](float f) { return zp + int(std::round(f / scale)); };
    const int qmin = isSigned ? -128 : 0, qmax = isSigned ? 127 : 255;
    *lo = qmin;
    *hi = qmax;
    if (act == 1) *lo = std::max(qmin, q(0.f));
    if (act == 2) {
        *lo = std::max(qmin, q(-1.f));
        *hi = std::min(qmax, q(1.f));
    }
    if (act == 3) {
        *lo = std::max(qmin, q(0.f));
        *hi = std::min(qmax, q(6.f));
    }
    *lo = std::min(std::max(*lo, qmin), qmax);
    *hi = std::min(std::max(*hi, qmin), qmax);
}

struct Quant {
    float scale;
    int zp;
};

// ---- Harness -------------------------------------------------------------------------------
struct Harness {
    static constexpr uint64_t kDram = 48ull << 20;
    static constexpr uint64_t kFirmware = 16ull << 20;
    std::vector<uint8_t> dram = std::vector<uint8_t>(kDram, 0);
    std::vector<uint8_t> arenaMem = std::vector<uint8_t>(2u << 20);
    std::vector<uint8_t> scratchMem = std::vector<uint8_t>(24u << 20);
    npu::fw::host::SimPlatform platform;
    Arena arena{arenaMem.data(), arenaMem.size()};
    Runtime runtime;
    uint64_t windowNext = kFirmware;

    explicit Harness(npu::sim::HwConfig hw = {}, bool autotune = true)
        : platform(hw, dram.data(), kDram),
          runtime(platform, arena, RuntimeConfig{kFirmware, 1000, autotune}) {}

    uint64_t stage(const void* data, size_t n) {
        uint64_t a = windowNext;
        if (n) std::memcpy(dram.data() + a, data, n);
        windowNext = (a + n + 63) / 64 * 64;
        return a;
    }
    uint64_t reserve(size_t n) {
        uint64_t a = windowNext;
        windowNext = (a + n + 63) / 64 * 64;
        return a;
    }
};

// ---- Model builder (tests/support/fw_model_builder.h), staging constants in the harness ---------
struct ModelBuilder : npu::fw::test::FwModelBuilder {
    Harness& h;

    explicit ModelBuilder(Harness& harness) : h(harness) {
        stage = [&harness](const void* data, size_t n) { return harness.stage(data, n); };
    }

    // type 5 TENSOR_QUANT8_ASYMM, 14 TENSOR_QUANT8_ASYMM_SIGNED.
    uint32_t input(std::vector<uint32_t> dims, Quant q, uint32_t type = 5) {
        return modelInput(type, std::move(dims), q.scale, q.zp);
    }
    uint32_t output(std::vector<uint32_t> dims, Quant q, uint32_t type = 5) {
        return modelOutput(type, std::move(dims), q.scale, q.zp);
    }
    uint32_t temp(std::vector<uint32_t> dims, Quant q, uint32_t type = 5) {
        return tensor(type, std::move(dims), q.scale, q.zp, kTemporary);
    }
};

inline std::vector<uint8_t> randomBytes(std::mt19937& rng, size_t n) {
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(rng() & 0xFF);
    return v;
}
inline std::vector<int32_t> randomBias(std::mt19937& rng, size_t n, int range) {
    std::vector<int32_t> v(n);
    for (auto& b : v) b = int32_t(rng() % (2 * range + 1)) - range;
    return v;
}

// ---- Running a model -----------------------------------------------------------------------
struct Run {
    FwStatus status;
    std::vector<std::vector<uint8_t>> outputs;
    ExecResult result;
};

inline Run execute(Harness& h, const BlobInfo& info, const std::vector<std::vector<uint8_t>>& ins,
                   const std::vector<size_t>& outSizes) {
    std::vector<IoArg> in(ins.size()), out(outSizes.size());
    for (size_t i = 0; i < ins.size(); ++i) {
        in[i].addr = h.stage(ins[i].data(), ins[i].size());
        in[i].length = uint32_t(ins[i].size());
    }
    for (size_t i = 0; i < outSizes.size(); ++i) {
        out[i].addr = h.reserve(outSizes[i]);
        out[i].length = uint32_t(outSizes[i]);
    }
    Run r;
    r.status = h.runtime.execute(info.handle, in.data(), uint32_t(in.size()), out.data(),
                                 uint32_t(out.size()), &r.result);
    for (size_t i = 0; i < outSizes.size(); ++i) {
        r.outputs.emplace_back(h.dram.begin() + out[i].addr, h.dram.begin() + out[i].addr + outSizes[i]);
    }
    return r;
}

// The model must be claimed and prepare; returns its blob.
inline BlobInfo prepareClaimed(Harness& h, const ModelDesc& model) {
    std::unique_ptr<bool[]> supported(new bool[model.operationCount]);  // one per operation
    REQUIRE(h.runtime.supportedOperations(model, supported.get()).ok());
    for (uint32_t i = 0; i < model.operationCount; ++i) REQUIRE(supported[i]);
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    FwStatus st = h.runtime.prepare(model, scratch, &info);
    INFO(st.message);
    REQUIRE(supported);
    REQUIRE(st.ok());
    return info;
}

// The model (one operation) must be refused by both supportedOperations and prepare, with a
// message naming operation 0, its type and `why`.
inline void expectRefused(Harness& h, ModelBuilder& mb, const std::string& opName, const std::string& why) {
    bool supported = true;
    REQUIRE(h.runtime.supportedOperations(mb.build(), &supported).ok());
    CHECK_FALSE(supported);
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    const FwStatus st = h.runtime.prepare(mb.build(), scratch, &info);
    INFO(st.message);
    CHECK(st.code == Code::kInvalidArgument);
    CHECK(std::string(st.message).find("operation 0 (" + opName + ")") != std::string::npos);
    CHECK(std::string(st.message).find(why) != std::string::npos);
}

// A prepared model's blob image (which loads as it is), to check that loadBlob refuses it with
// one word of one command changed.
struct BlobImage {
    Harness& h;
    std::vector<uint8_t> image;
    uint32_t cmdOff = 0, commands = 0;

    BlobImage(Harness& harness, const BlobInfo& info) : h(harness) {
        const uint8_t* bytes = nullptr;
        uint64_t size = 0;
        REQUIRE(h.runtime.blobImage(info.handle, &bytes, &size).ok());
        image.assign(bytes, bytes + size);
        BlobInfo loaded;
        REQUIRE(h.runtime.loadBlob(image.data(), image.size(), &loaded).ok());
        cmdOff = readU32(image.data() + 4 * blob::kCommandOffset);
        commands = readU32(image.data() + 4 * blob::kCommandCount);
    }
    uint32_t word(size_t command, uint32_t w) const {
        return readU32(image.data() + cmdOff + command * npu::isa::kCommandBytes + 4 * w);
    }
    // Word `w` of `command` set to `value`: refused, the message naming the command.
    void expectRefused(size_t command, uint32_t w, uint32_t value) const {
        std::vector<uint8_t> v = image;
        writeU32(v.data() + cmdOff + command * npu::isa::kCommandBytes + 4 * w, value);
        BlobInfo bi;
        const FwStatus st = h.runtime.loadBlob(v.data(), v.size(), &bi);
        INFO("command " << command << " word " << w << " = " << value << ": " << st.message);
        CHECK_FALSE(st.ok());
        CHECK(std::string(st.message).find("command " + std::to_string(command) + " ") != std::string::npos);
    }
};

// HAL 1.3: the int8 twin of uint8 data is every byte shifted by -128.
inline std::vector<uint8_t> toInt8(std::vector<uint8_t> v) {
    for (auto& b : v) b ^= 0x80;
    return v;
}

}  // namespace fwtest
