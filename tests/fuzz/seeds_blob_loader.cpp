// Seeds of fuzz_blob_loader: blobs the firmware compiles itself (tests/unit/firmware's model
// builder): CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, AVERAGE_POOL_2D, MAX_POOL_2D and a
// FULLY_CONNECTED + ADD chain, so mutations start from real command streams, relocations and
// metadata. The test below checks that each seed loads and runs in the target's harness.
#include <catch2/catch.hpp>

#include "blob_format.h"
#include "blob_loader_harness.h"
#include "fuzz_target.h"
#include "model_fixture.h"

namespace npu::fuzz {
namespace {

constexpr uint32_t kConv = 3, kDepthwise = 4, kFc = 9, kAdd = 0, kAvgPool = 1, kMaxPool = 17;
constexpr uint32_t kInt32Tensor = 4;

std::vector<uint8_t> compile(fwtest::Harness& h, fwtest::ModelBuilder& mb) {
    const fw::ModelDesc& model = mb.build();
    bool supported[fw::kMaxOperations] = {};
    fw::FwStatus st = h.runtime.supportedOperations(model, supported);
    INFO(st.message);
    REQUIRE(st.ok());
    for (uint32_t i = 0; i < model.operationCount; ++i) REQUIRE(supported[i]);
    fw::Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    fw::BlobInfo info;
    st = h.runtime.prepare(model, scratch, &info, false);
    INFO(st.message);
    REQUIRE(st.ok());
    const uint8_t* bytes = nullptr;
    uint64_t size = 0;
    REQUIRE(h.runtime.blobImage(info.handle, &bytes, &size).ok());
    return std::vector<uint8_t>(bytes, bytes + size);
}

std::vector<uint8_t> convolution(fwtest::Harness& h, uint32_t type, bool depthwise) {
    fwtest::ModelBuilder mb(h);
    std::mt19937 rng(type);
    const uint32_t cin = 3, cout = depthwise ? 6 : 4;
    const uint32_t x = mb.input({1, 6, 5, cin}, {0.05f, 7});
    const std::vector<uint32_t> fdims =
        depthwise ? std::vector<uint32_t>{1, 3, 3, cout} : std::vector<uint32_t>{cout, 3, 3, cin};
    const auto filter = fwtest::randomBytes(rng, fdims[0] * 9 * fdims[3]);
    const uint32_t f = mb.constant(5, fdims, 0.02f, 120, filter.data(), filter.size());
    const auto bias = fwtest::randomBias(rng, cout, 2000);
    const uint32_t b = mb.constant(kInt32Tensor, {cout}, 0.001f, 0, bias.data(), bias.size() * 4);
    const uint32_t y = mb.output({1, 6, 5, cout}, {0.1f, 5});
    std::vector<uint32_t> args = {x, f, b, mb.i32(1), mb.i32(1), mb.i32(1)};  // SAME, stride 1
    if (depthwise) args.push_back(mb.i32(2));
    args.push_back(mb.i32(1));  // RELU
    mb.op(type, args, {y});
    return compile(h, mb);
}

std::vector<uint8_t> fullyConnected(fwtest::Harness& h, bool withAdd) {
    fwtest::ModelBuilder mb(h);
    std::mt19937 rng(9);
    const uint32_t x = mb.input({2, 8}, {0.05f, 100});
    const auto w = fwtest::randomBytes(rng, 5 * 8);
    const uint32_t wo = mb.constant(5, {5, 8}, 0.02f, 128, w.data(), w.size());
    const auto bias = fwtest::randomBias(rng, 5, 500);
    const uint32_t bo = mb.constant(kInt32Tensor, {5}, 0.001f, 0, bias.data(), bias.size() * 4);
    const uint32_t t = withAdd ? mb.temp({2, 5}, {0.1f, 10}) : mb.output({2, 5}, {0.1f, 10});
    mb.op(kFc, {x, wo, bo, mb.i32(0)}, {t});
    if (withAdd) {
        const uint32_t other = mb.input({2, 5}, {0.2f, 3});
        const uint32_t y = mb.output({2, 5}, {0.25f, 6});
        mb.op(kAdd, {t, other, mb.i32(3)}, {y});
    }
    return compile(h, mb);
}

std::vector<uint8_t> pool(fwtest::Harness& h, uint32_t type) {
    fwtest::ModelBuilder mb(h);
    const uint32_t x = mb.input({1, 7, 7, 4}, {0.1f, 20});
    const uint32_t y = mb.output({1, 3, 3, 4}, {0.1f, 20});
    // explicit padding 0, stride 2x2, filter 3x3, no activation
    mb.op(type,
          {x, mb.i32(0), mb.i32(0), mb.i32(0), mb.i32(0), mb.i32(2), mb.i32(2), mb.i32(3), mb.i32(3),
           mb.i32(0)},
          {y});
    return compile(h, mb);
}

std::vector<uint8_t> add(fwtest::Harness& h) {
    fwtest::ModelBuilder mb(h);
    const uint32_t a = mb.input({2, 3, 4}, {0.1f, 4});
    const uint32_t b = mb.input({1, 3, 4}, {0.2f, 1});
    const uint32_t y = mb.output({2, 3, 4}, {0.3f, 2});
    mb.op(kAdd, {a, b, mb.i32(0)}, {y});
    return compile(h, mb);
}

// `blob` with its first POP turned into a NOP: the PUSH before it leaves a token in the NPU's
// queue at every execution. Loaded, it filled the queue over eight runs until the next model
// (another client's) faulted with TOKEN_OVERFLOW; the validator now refuses it.
std::vector<uint8_t> leavesTokenBehind(std::vector<uint8_t> blob) {
    fw::BlobView view;
    REQUIRE(fw::validateBlob(blob.data(), blob.size(), BlobHarness::instance().limits(), &view).ok());
    const uint64_t commands = view.h(fw::blob::kCommandOffset);
    for (uint32_t k = 0; k < view.commandCount(); ++k) {
        if (isa::opcodeOf(view.command(k)) == isa::Opcode::kPop) {
            fw::writeCommand(blob.data() + commands + uint64_t{k} * isa::kCommandBytes, isa::makeNop());
            return blob;
        }
    }
    FAIL("the seed blob has no POP");
    return blob;
}

}  // namespace

std::vector<std::vector<uint8_t>> seeds() {
    static const std::vector<std::vector<uint8_t>> all = [] {
        fwtest::Harness h({}, false);  // one firmware compiles them all (the seeds are asked for twice)
        REQUIRE(h.runtime.init().ok());
        return std::vector<std::vector<uint8_t>>{convolution(h, kConv, false),
                                                 convolution(h, kDepthwise, true),
                                                 fullyConnected(h, false),
                                                 fullyConnected(h, true),
                                                 pool(h, kAvgPool),
                                                 pool(h, kMaxPool),
                                                 add(h),
                                                 leavesTokenBehind(convolution(h, kConv, false))};
    }();
    return all;
}

}  // namespace npu::fuzz

TEST_CASE("blob fuzz seeds load and run in the target's harness", "[fuzz]") {
    auto& h = npu::fuzz::BlobHarness::instance();
    auto all = npu::fuzz::seeds();
    const std::vector<uint8_t> leaky = all.back();
    all.pop_back();
    for (const auto& s : all) {
        npu::fw::BlobInfo info;
        const npu::fw::FwStatus st = h.runtime().loadBlob(s.data(), s.size(), &info);
        INFO(st.message);
        REQUIRE(st.ok());
        CHECK(h.runtime().release(info.handle).ok());
    }
    CHECK(h.victimStillRuns());
    npu::fw::BlobInfo info;
    const npu::fw::FwStatus st = h.runtime().loadBlob(leaky.data(), leaky.size(), &info);
    CHECK_THAT(st.message, Catch::Contains("token pushes and pops do not balance"));
}
