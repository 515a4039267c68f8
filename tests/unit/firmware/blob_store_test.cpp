// Blob store: handles, reference counts, release, bad handles, and loadBlob's validation of
// corrupted / truncated / extended / hostile images.
#include <catch2/catch.hpp>

#include "blob_format.h"
#include "model_fixture.h"

using namespace fwtest;
namespace isa = npu::isa;

namespace {

struct Prepared {
    Harness h;
    BlobInfo info;
    std::vector<uint8_t> image;
    Prepared() {
        REQUIRE(h.runtime.init().ok());
        ModelBuilder mb(h);
        std::vector<uint8_t> w(8 * 4, 3);
        std::vector<int32_t> bias(4, 7);
        Quant q{0.5f, 100};
        uint32_t x = mb.input({2, 8}, q);
        uint32_t wo = mb.constant(5, {4, 8}, 0.5f, 120, w.data(), w.size());
        uint32_t bo = mb.constant(4, {4}, 0.25f, 0, bias.data(), 16);
        uint32_t y = mb.output({2, 4}, q);
        mb.op(9, {x, wo, bo, mb.i32(0)}, {y});
        Arena scratch(h.scratchMem.data(), h.scratchMem.size());
        REQUIRE(h.runtime.prepare(mb.build(), scratch, &info).ok());
        const uint8_t* p = nullptr;
        uint64_t n = 0;
        REQUIRE(h.runtime.blobImage(info.handle, &p, &n).ok());
        image.assign(p, p + n);
    }
    FwStatus load(const std::vector<uint8_t>& bytes, BlobInfo* out) {
        return h.runtime.loadBlob(bytes.data(), bytes.size(), out);
    }
};

void put32(std::vector<uint8_t>& v, size_t at, uint32_t x) {
    writeU32(v.data() + at, x);
}
uint32_t get32(const std::vector<uint8_t>& v, size_t at) {
    return readU32(v.data() + at);
}

}  // namespace

TEST_CASE("handles, reference counts and release") {
    Prepared p;
    CHECK(p.info.handle != 0);
    CHECK(p.info.modelBlobBytes > 0);
    CHECK(p.info.dataBlobBytes >= 4 * 8 + 16);
    CHECK(p.h.runtime.loadedModels() == 1);
    CHECK(p.h.runtime.retain(p.info.handle).ok());
    CHECK(p.h.runtime.release(p.info.handle).ok());
    CHECK(p.h.runtime.loadedModels() == 1);
    CHECK(p.h.runtime.release(p.info.handle).ok());
    CHECK(p.h.runtime.loadedModels() == 0);
    // Stale and invented handles.
    CHECK(p.h.runtime.release(p.info.handle).code == Code::kInvalidArgument);
    CHECK(p.h.runtime.retain(p.info.handle).code == Code::kInvalidArgument);
    CHECK(p.h.runtime.release(0).code == Code::kInvalidArgument);
    CHECK(p.h.runtime.release(0xFFFFFFFF).code == Code::kInvalidArgument);
    ExecResult r;
    IoArg io;
    CHECK(p.h.runtime.execute(p.info.handle, &io, 1, &io, 1, &r).code == Code::kInvalidArgument);
    // A reloaded image gets a new handle, never the stale one.
    BlobInfo again;
    REQUIRE(p.load(p.image, &again).ok());
    CHECK(again.handle != p.info.handle);
    CHECK(p.h.runtime.loadedModels() == 1);
    CHECK(p.h.runtime.reset().ok());
    CHECK(p.h.runtime.loadedModels() == 0);
    CHECK(p.h.runtime.release(again.handle).code == Code::kInvalidArgument);
}

TEST_CASE("a loaded image runs like the prepared one") {
    Prepared p;
    BlobInfo copy;
    REQUIRE(p.load(p.image, &copy).ok());
    std::vector<uint8_t> in(16, 110);
    IoArg i, o;
    i.addr = p.h.stage(in.data(), in.size());
    i.length = 16;
    o.addr = p.h.reserve(8);
    o.length = 8;
    ExecResult r1, r2;
    REQUIRE(p.h.runtime.execute(p.info.handle, &i, 1, &o, 1, &r1).ok());
    std::vector<uint8_t> first(p.h.dram.begin() + o.addr, p.h.dram.begin() + o.addr + 8);
    REQUIRE(p.h.runtime.execute(copy.handle, &i, 1, &o, 1, &r2).ok());
    CHECK(std::vector<uint8_t>(p.h.dram.begin() + o.addr, p.h.dram.begin() + o.addr + 8) == first);
    CHECK(r1.deviceCycles == r2.deviceCycles);
    // Request errors: short output, output outside the window, wrong counts.
    o.length = 7;
    CHECK(p.h.runtime.execute(copy.handle, &i, 1, &o, 1, &r1).code == Code::kOutputInsufficientSize);
    CHECK_FALSE(r1.outputs[0].sufficient);
    o.length = 8;
    o.addr = 64;  // firmware DRAM
    CHECK(p.h.runtime.execute(copy.handle, &i, 1, &o, 1, &r1).code == Code::kInvalidArgument);
    CHECK(p.h.runtime.execute(copy.handle, &i, 0, &o, 1, &r1).code == Code::kInvalidArgument);
}

TEST_CASE("loadBlob rejects corrupted images and never crashes") {
    Prepared p;
    BlobInfo info;
    auto rejected = [&](std::vector<uint8_t> bytes) {
        const uint32_t before = p.h.runtime.loadedModels();
        FwStatus st = p.load(bytes, &info);
        INFO(st.message);
        CHECK_FALSE(st.ok());
        CHECK(p.h.runtime.loadedModels() == before);
    };
    std::vector<uint8_t> img = p.image;
    rejected({});
    rejected(std::vector<uint8_t>(img.begin(), img.begin() + 40));  // truncated header
    rejected(std::vector<uint8_t>(img.begin(), img.end() - 1));     // truncated
    {
        auto v = img;
        v.push_back(0);
        rejected(v);
    }  // extended
    {
        auto v = img;
        v[0] ^= 1;
        rejected(v);
    }  // magic
    {
        auto v = img;
        put32(v, 4 * blob::kVersion, 99);
        rejected(v);
    }
    {
        auto v = img;
        put32(v, 4 * blob::kHwArray, 0x00100010);
        rejected(v);
    }
    {
        auto v = img;
        put32(v, 4 * blob::kNumOps, 0);
        rejected(v);
    }
    {
        auto v = img;
        put32(v, 4 * blob::kNumInputs, 65);
        rejected(v);
    }
    {
        auto v = img;
        put32(v, 4 * blob::kDataBytes, get32(v, 4 * blob::kDataBytes) + 64);
        rejected(v);
    }
    {
        auto v = img;
        put32(v, 4 * blob::kMetaOffset, 0xFFFFFFF0);
        rejected(v);
    }
    {
        auto v = img;
        put32(v, 4 * blob::kActivationBytes, 0xFFFFFFFF);
        rejected(v);
    }
    const uint32_t cmdOff = get32(img, 4 * blob::kCommandOffset);
    const uint32_t count = get32(img, 4 * blob::kCommandCount);
    // Each command: an unknown opcode, a STOP, and DMAs pointed outside their regions.
    for (uint32_t c = 0; c < count; ++c) {
        const size_t at = cmdOff + size_t(c) * isa::kCommandBytes;
        {
            auto v = img;
            put32(v, at, 0x77);
            rejected(v);
        }
        {
            auto v = img;
            put32(v, at, uint32_t(isa::Opcode::kStop));
            rejected(v);
        }
        const auto op = isa::Opcode(get32(img, at) & 0xFF);
        if (!isa::isDma(op)) continue;
        {
            auto v = img;
            put32(v, at + 4 * isa::dma::kDramOffsetLo, 0x10000000);
            rejected(v);
        }
        {
            auto v = img;
            put32(v, at + 4 * isa::dma::kRows, 0xFFFFFF);
            put32(v, at + 4 * isa::dma::kDramRowStride, 4096);
            rejected(v);
        }
        const uint32_t region = get32(img, at + 4 * isa::dma::kRegion);
        {
            auto v = img;
            put32(v, at + 4 * isa::dma::kRegion, region == kRegionIo ? kRegionData : kRegionIo);
            rejected(v);
        }
        {
            auto v = img;
            put32(v, at + 4 * isa::dma::kRegion, 5);
            rejected(v);
        }
    }
    // Random byte flips: either rejected or loads and then executes without crashing.
    std::mt19937 rng(9);
    for (int i = 0; i < 300; ++i) {
        auto v = img;
        v[rng() % v.size()] ^= uint8_t(1u << (rng() % 8));
        BlobInfo bi;
        if (p.load(v, &bi).ok()) {
            std::vector<uint8_t> in(16, 1);
            IoArg a, o;
            a.addr = p.h.stage(in.data(), 16);
            a.length = 16;
            o.addr = p.h.reserve(8);
            o.length = 8;
            ExecResult r;
            (void)p.h.runtime.execute(bi.handle, &a, 1, &o, 1, &r);
            CHECK(p.h.runtime.release(bi.handle).ok());
        }
        p.h.windowNext = Harness::kFirmware + (1 << 20);
    }
}

TEST_CASE("the blob store reports a full table as RESOURCE_EXHAUSTED") {
    Prepared p;
    BlobInfo info;
    uint32_t loaded = p.h.runtime.loadedModels();
    FwStatus st;
    while ((st = p.load(p.image, &info)).ok()) ++loaded;
    CHECK(st.code == Code::kResourceExhaustedPersistent);
    CHECK(p.h.runtime.loadedModels() == loaded);
    CHECK(loaded == 64);
}

namespace {

// A one-operation model whose blob holds commands of the kinds below.
std::vector<uint8_t> blobOf(Harness& h, uint32_t opType) {
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    static const std::vector<uint8_t> w(3 * 3 * 4 * 4, 3);
    static const std::vector<int32_t> bias(4, 7);
    const Quant q{0.5f, 100};
    const uint32_t x = mb.input({1, 6, 6, 4}, q);
    const uint32_t wo =
        mb.constant(5, opType == 4 ? std::vector<uint32_t>{1, 3, 3, 4} : std::vector<uint32_t>{4, 3, 3, 4},
                    0.5f, 120, w.data(), opType == 4 ? 36 : w.size());
    const uint32_t bo = mb.constant(4, {4}, 0.25f, 0, bias.data(), 16);
    switch (opType) {
        case 3:  // CONV_2D: CONV, REQUANT
            mb.op(3, {x, wo, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {mb.output({1, 6, 6, 4}, q)});
            break;
        case 4:  // DEPTHWISE_CONV_2D: DWCONV
            mb.op(4, {x, wo, bo, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)},
                  {mb.output({1, 6, 6, 4}, q)});
            break;
        case 9: {  // FULLY_CONNECTED: GEMM
            // Weights of their own: 4 x 144 bytes, w has 144 (ASan found the read past w).
            static const std::vector<uint8_t> fcWeights(4 * 144, 3);
            const uint32_t fw = mb.constant(5, {4, 144}, 0.5f, 120, fcWeights.data(), fcWeights.size());
            mb.op(9, {x, fw, bo, mb.i32(0)}, {mb.output({1, 4}, q)});
            break;
        }
        case 0:   // ADD
        case 18:  // MUL: VEC_OP
            mb.op(opType, {x, mb.input({1, 6, 6, 4}, q), mb.i32(0)}, {mb.output({1, 6, 6, 4}, {1.0f, 100})});
            break;
        case 1:  // AVERAGE_POOL_2D: POOL
            mb.op(1, {x, mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(2), mb.i32(0)},
                  {mb.output({1, 3, 3, 4}, q)});
            break;
        case 14:  // LOGISTIC: VEC_OP LUT
            mb.op(14, {x}, {mb.output({1, 6, 6, 4}, {1.0f / 256, 0})});
            break;
        case 71: {  // PRELU: VEC_OP PRELU, alpha broadcast over the pixels
            static const std::vector<uint8_t> alpha = {1, 2, 3, 4};
            mb.op(71, {x, mb.constant(5, {4}, 0.5f, 0, alpha.data(), 4)}, {mb.output({1, 6, 6, 4}, q)});
            break;
        }
        case 25: {  // SOFTMAX
            const float beta = 1.0f;
            mb.op(25, {x, mb.constant(0, {}, 0, 0, &beta, 4)}, {mb.output({1, 6, 6, 4}, {1.0f / 256, 0})});
            break;
        }
    }
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    const FwStatus st = h.runtime.prepare(mb.build(), scratch, &info, false);
    INFO(st.message);
    REQUIRE(st.ok());
    const uint8_t* p = nullptr;
    uint64_t n = 0;
    REQUIRE(h.runtime.blobImage(info.handle, &p, &n).ok());
    return std::vector<uint8_t>(p, p + n);
}

}  // namespace

TEST_CASE("loadBlob checks every compute command's fields and scratchpad and accumulator boxes") {
    struct Kind {
        uint32_t opType;
        isa::Opcode opcode;
        uint32_t word;  // an address word set past the memory
        const char* box;
    };
    const Kind kinds[] = {
        {9, isa::Opcode::kGemm, isa::gemm::kAAddr, "GEMM A matrix"},
        {9, isa::Opcode::kGemm, isa::gemm::kAccAddr, "GEMM accumulators"},
        {3, isa::Opcode::kConv, isa::conv::kIfmAddr, "CONV input tile"},
        {3, isa::Opcode::kConv, isa::conv::kWAddr, "CONV weights"},
        {4, isa::Opcode::kDwConv, isa::conv::kAccAddr, "CONV accumulators"},
        {3, isa::Opcode::kRequant, isa::requant::kAccAddr, "REQUANT accumulators"},
        {3, isa::Opcode::kRequant, isa::requant::kBiasAddr, "REQUANT bias"},
        {0, isa::Opcode::kAdd, isa::add::kOutAddr, "ADD boxes"},
        {18, isa::Opcode::kVecOp, isa::vecop::kBAddr, "VEC_OP boxes"},
        {1, isa::Opcode::kPool, isa::pool::kOutAddr, "POOL output"},
        {25, isa::Opcode::kSoftmax, isa::softmax::kInAddr, "SOFTMAX input"},
        {25, isa::Opcode::kSoftmax, isa::softmax::kRows, "SOFTMAX input"},  // rows 0: empty
        {9, isa::Opcode::kGemm, isa::gemm::kBAddr, "GEMM B matrix"},
        {3, isa::Opcode::kConv, isa::conv::kAccAddr, "CONV accumulators"},
        {3, isa::Opcode::kRequant, isa::requant::kOutAddr, "REQUANT output"},
        {18, isa::Opcode::kVecOp, isa::vecop::kFunction, "VEC_OP function"},
        {14, isa::Opcode::kVecOp, isa::vecop::kLutAddr, "VEC_OP table"},
        {71, isa::Opcode::kVecOp, isa::vecop::kBAddr, "VEC_OP boxes"},  // PRELU's alpha
        {1, isa::Opcode::kPool, isa::pool::kIfmAddr, "POOL input tile"},
        {25, isa::Opcode::kSoftmax, isa::softmax::kOutAddr, "SOFTMAX output"},
    };
    for (const Kind& k : kinds) {
        INFO(k.box);
        Harness h;
        const std::vector<uint8_t> image = blobOf(h, k.opType);
        BlobInfo info;
        REQUIRE(h.runtime.loadBlob(image.data(), image.size(), &info).ok());  // the image itself is fine
        const uint32_t cmdOffset = readU32(image.data() + 4 * blob::kCommandOffset),
                       count = readU32(image.data() + 4 * blob::kCommandCount);
        uint32_t at = count;
        for (uint32_t i = 0; i < count && at == count; ++i)
            if ((image[cmdOffset + i * isa::kCommandBytes] & 0xFF) == static_cast<uint8_t>(k.opcode)) at = i;
        REQUIRE(at < count);
        auto bad = image;
        writeU32(bad.data() + cmdOffset + at * isa::kCommandBytes + 4 * k.word,
                 k.word == isa::softmax::kRows && k.opcode == isa::Opcode::kSoftmax ? 0 : 0xFFFFFF00u);
        const uint32_t before = h.runtime.loadedModels();
        const FwStatus st = h.runtime.loadBlob(bad.data(), bad.size(), &info);
        INFO(st.message);
        CHECK_FALSE(st.ok());
        CHECK(std::string(st.message).find("command " + std::to_string(at)) != std::string::npos);
        CHECK(std::string(st.message).find(k.box) != std::string::npos);
        CHECK(h.runtime.loadedModels() == before);
    }
}
