// The `npu bench sim` workload at a reduced size: the command stream runs on the device, every
// layer's output equals the scalar reference bit for bit (and XNNPACK's within its rounding rule),
// on every host kernel this machine can run.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <vector>

#include "cmd_bench_sim.h"
#include "npu/hwsim/device.h"
#include "npu/hwsim/mobilenet_workload.h"

using namespace npu;
namespace wl = sim::workload;

namespace {

struct Run {
    std::vector<uint8_t> dram = std::vector<uint8_t>(8u << 20, 0);
    wl::Workload w;
    wl::RunResult result;
};

Run runWorkload(uint32_t inputSize, uint32_t seed) {
    Run r;
    auto built = wl::buildWorkload(wl::mobilenetV2Layers(inputSize), sim::HwConfig{}, seed, r.dram);
    REQUIRE(built.has_value());
    r.w = *built;
    auto dev = sim::Device::create(sim::HwConfig{}, r.dram.data(), r.dram.size());
    REQUIRE(dev.has_value());
    auto ran = wl::runOnDevice(**dev, r.w);
    INFO((ran ? std::string() : ran.error()));
    REQUIRE(ran.has_value());
    r.result = *ran;
    return r;
}

}  // namespace

TEST_CASE("MobileNet-v2 layer list has the paper's shape and about 300 M MACs at 224") {
    const auto layers = wl::mobilenetV2Layers(224);
    REQUIRE(layers.size() == 52);  // stem + 17 blocks (16 with expansion) x 2-3 + final 1x1
    uint64_t macs = 0;
    for (const auto& l : layers) macs += l.macs();
    CHECK(macs > 290'000'000);
    CHECK(macs < 310'000'000);
    CHECK(layers.back().outH == 7);
    CHECK(layers.back().outC == 1280);
}

TEST_CASE("bench workload: simulator outputs equal the reference on every host kernel") {
    std::vector<std::string> kernels;
    for (const char* n : {"portable", "avx2", "avx512bw", "avx512vnni"}) {
        if (sim::selectHostKernel(n)) kernels.push_back(n);
    }
    REQUIRE(!kernels.empty());
    for (const auto& kernel : kernels) {
        REQUIRE(sim::selectHostKernel(kernel));
        INFO("kernel " << sim::hostKernelName());
        const Run r = runWorkload(32, 7);
        CHECK(r.result.macs == r.w.totalMacs);
        CHECK(r.result.cycles > 0);
        for (size_t i = 0; i < r.w.layers.size(); ++i) {
            const wl::Layer& l = r.w.layers[i];
            std::vector<int8_t> ref(l.outputBytes());
            wl::referenceLayer(l, r.dram.data(), ref.data());
            const auto* out = reinterpret_cast<const int8_t*>(r.dram.data() + l.output);
            uint64_t differ = 0;
            for (size_t j = 0; j < ref.size(); ++j) differ += out[j] != ref[j];
            INFO("layer " << i);
            CHECK(differ == 0);
        }
    }
    REQUIRE(sim::selectHostKernel(kernels.back()));  // the host's best again
}

TEST_CASE("bench workload: outputs are not degenerate (requantization keeps a spread)") {
    const Run r = runWorkload(32, 3);
    const wl::Layer& last = r.w.layers.back();
    const auto* out = reinterpret_cast<const int8_t*>(r.dram.data() + last.output);
    int lo = 127, hi = -128;
    for (uint64_t j = 0; j < last.outputBytes(); ++j) {
        lo = std::min<int>(lo, out[j]);
        hi = std::max<int>(hi, out[j]);
    }
    CHECK(hi - lo > 24);
}

TEST_CASE("bench workload: simulator outputs agree with XNNPACK's int8 convolutions") {
    const Run r = runWorkload(32, 11);
    std::vector<std::vector<int8_t>> cpu;
    double ms = 0;
    auto ok = tools::runXnnpackBaseline(r.w, r.dram, cpu, &ms);
    INFO((ok ? std::string() : ok.error()));
    REQUIRE(ok.has_value());
    uint64_t differ = 0, total = 0;
    for (size_t i = 0; i < r.w.layers.size(); ++i) {
        const auto* out = reinterpret_cast<const int8_t*>(r.dram.data() + r.w.layers[i].output);
        for (size_t j = 0; j < cpu[i].size(); ++j) {
            const int d = std::abs(int{out[j]} - int{cpu[i][j]});
            INFO("layer " << i << " element " << j);
            REQUIRE(d <= tools::kXnnpackTolerance);
            differ += d != 0;
        }
        total += cpu[i].size();
    }
    // The two roundings differ only near ties: a small fraction of the outputs.
    CHECK(differ * 100 < total);
}

TEST_CASE("bench workload: a config too small for its tiles is rejected with a message") {
    std::vector<uint8_t> dram(8u << 20, 0);
    sim::HwConfig hw;
    hw.scratchpadBytes = 512 << 10;
    auto built = wl::buildWorkload(wl::mobilenetV2Layers(32), hw, 1, dram);
    REQUIRE_FALSE(built.has_value());
    CHECK(built.error().find("scratchpadBytes") != std::string::npos);
    std::vector<uint8_t> tiny(4096, 0);
    auto small = wl::buildWorkload(wl::mobilenetV2Layers(32), sim::HwConfig{}, 1, tiny);
    REQUIRE_FALSE(small.has_value());
    CHECK(small.error().find("device memory") != std::string::npos);
}
