// The execution preference reaches the compiler: FAST_SINGLE_ANSWER tunes each CONV_2D /
// FULLY_CONNECTED for the fewest cycles, SUSTAINED_SPEED and LOW_POWER for the least DRAM
// traffic (docs/firmware.md, "Autotune"). Different blobs, the same outputs.
#include <catch2/catch.hpp>
#include <memory>

#include "model_fixture.h"

using namespace fwtest;

namespace {

constexpr uint32_t kConv = 3, kFc = 9;

struct Prepared {
    BlobInfo info;
    std::vector<uint8_t> blob;
    std::vector<uint8_t> output;
    uint64_t cycles = 0, dramBytes = 0;
};

// CONV size x size x cin -> cout (3x3) then FC -> 32, on a small NPU (so that the tilings differ),
// prepared with `preference` and run once with the detailed profile. The default, CONV 24x24x16
// -> 64 (stride 2) on a 32 KiB scratchpad, is one where the fewest-cycles tiling of the CONV is
// not the one that moves the fewest DRAM bytes (found by trying a few shapes).
struct Shape {
    uint32_t size = 24, cin = 16, cout = 64, stride = 2, scratchKiB = 32, accKiB = 8;
};
Prepared prepareNetwork(uint32_t preference, Shape sh = {}) {
    npu::sim::HwConfig hw;
    hw.scratchpadBytes = sh.scratchKiB << 10;
    hw.accumulatorBytes = sh.accKiB << 10;
    Harness h(hw);
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(91);
    ModelBuilder mb(h);
    const Quant q{0.05f, 128}, qw{0.01f, 120};
    const uint32_t x = mb.input({1, sh.size, sh.size, sh.cin}, q);
    auto w = randomBytes(rng, size_t(sh.cout) * 9 * sh.cin);
    auto b = randomBias(rng, sh.cout, 2000);
    const uint32_t f = mb.constant(5, {sh.cout, 3, 3, sh.cin}, qw.scale, qw.zp, w.data(), w.size());
    const uint32_t bias = mb.constant(4, {sh.cout}, q.scale * qw.scale, 0, b.data(), b.size() * 4);
    const uint32_t o2 = (sh.size + sh.stride - 1) / sh.stride;
    const uint32_t y = mb.temp({1, o2, o2, sh.cout}, q);
    mb.op(kConv, {x, f, bias, mb.i32(1), mb.i32(int(sh.stride)), mb.i32(int(sh.stride)), mb.i32(1)}, {y});
    const uint32_t features = o2 * o2 * sh.cout;
    auto w2 = randomBytes(rng, size_t(32) * features);
    auto b2 = randomBias(rng, 32, 2000);
    const uint32_t f2 = mb.constant(5, {32, features}, qw.scale, qw.zp, w2.data(), w2.size());
    const uint32_t bias2 = mb.constant(4, {32}, q.scale * qw.scale, 0, b2.data(), b2.size() * 4);
    const uint32_t out = mb.output({1, 32}, q);
    mb.op(kFc, {y, f2, bias2, mb.i32(0)}, {out});
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    Prepared p;
    const FwStatus st = h.runtime.prepare(mb.build(), scratch, &p.info, true, preference);
    INFO(st.message);
    REQUIRE(st.ok());
    const uint8_t* bytes = nullptr;
    uint64_t size = 0;
    REQUIRE(h.runtime.blobImage(p.info.handle, &bytes, &size).ok());
    p.blob.assign(bytes, bytes + size);

    const auto input = randomBytes(rng, size_t(sh.size) * sh.size * sh.cin);
    IoArg in, o;
    in.addr = h.stage(input.data(), input.size());
    in.length = uint32_t(input.size());
    o.addr = h.reserve(32);
    o.length = 32;
    auto result = std::make_unique<ExecResult>();
    REQUIRE(h.runtime.execute(p.info.handle, &in, 1, &o, 1, result.get(), true).ok());
    p.output.assign(h.dram.begin() + o.addr, h.dram.begin() + o.addr + 32);
    p.cycles = result->deviceCycles;
    for (uint32_t i = 0; i < result->profileCount; ++i) {
        p.dramBytes += result->profile[i].dramReadBytes + result->profile[i].dramWriteBytes;
    }
    return p;
}

}  // namespace

TEST_CASE("the execution preference chooses the tiling: fewest cycles or least DRAM traffic") {
    const Prepared fast = prepareNetwork(kPreferFastSingleAnswer);
    const Prepared sustained = prepareNetwork(kPreferSustainedSpeed);
    const Prepared lowPower = prepareNetwork(kPreferLowPower);
    WARN("FAST_SINGLE_ANSWER: " << fast.cycles << " cycles, " << fast.dramBytes
                                << " DRAM bytes; SUSTAINED_SPEED: " << sustained.cycles << " cycles, "
                                << sustained.dramBytes << " DRAM bytes; greedy " << fast.info.greedyCycles
                                << " cycles");
    CHECK(fast.info.tuningTrials > 1);
    CHECK(sustained.info.tuningTrials > 1);
    CHECK(fast.blob != sustained.blob);      // another plan compiled
    CHECK(fast.output == sustained.output);  // tiling never changes arithmetic
    CHECK(fast.cycles <= sustained.cycles);  // each goal wins on its own measure
    CHECK(sustained.dramBytes < fast.dramBytes);
    CHECK(fast.cycles == fast.info.tunedCycles);  // the tuner's prediction, both ways
    CHECK(sustained.cycles == sustained.info.tunedCycles);
    CHECK(lowPower.blob == sustained.blob);  // LOW_POWER has the same goal
}
