// Running work stops at its checkpoints (Platform::stopRequested): an execution between two NPU
// operations, a prepare between two operations it plans and between two tuning rounds. The
// platform's answer is scripted here (SimPlatform::setStopCheck), so where the work stops does not
// depend on time: a Cancel gives GENERAL_FAILURE "cancelled", a passed deadline the
// MISSED_DEADLINE_* code it carries; nothing taken is kept (firmware DRAM, blobs) and the same
// work then runs to its end. docs/execution.md "Deadlines of running work".
#include <functional>
#include <string>
#include <vector>

#include "model_fixture.h"

using namespace fwtest;

namespace {

constexpr uint32_t kAdd = 0, kConv = 3;  // HAL OperationType

// Stops (with `reason`) from the first checkpoint of `phase` whose progress reached `at` on, at
// every later checkpoint too (as a platform must: a Cancel or a passed deadline stays); records
// every checkpoint's progress. rearm() starts over.
struct Script {
    std::vector<WorkProgress> seen;
    WorkPhase phase = WorkPhase::kExecute;
    uint32_t at = UINT32_MAX;
    StopReason reason = StopReason::kNone;
    bool stopping = false;

    void install(Harness& h) {
        h.platform.setStopCheck([this](const WorkProgress& p) {
            seen.push_back(p);
            stopping = stopping || (p.phase == phase && p.done >= at);
            return stopping ? reason : StopReason::kNone;
        });
    }
    void rearm(WorkPhase newPhase, StopReason newReason) {
        phase = newPhase;
        reason = newReason;
        stopping = false;
    }
};

// A chain of `ops` ADDs: t1 = x + x, t2 = t1 + x, ... over `n` bytes.
const ModelDesc& addChain(ModelBuilder& mb, uint32_t ops, uint32_t n) {
    const Quant q{1.0f, 0};
    const uint32_t x = mb.input({1, n}, q);
    uint32_t previous = x;
    for (uint32_t k = 0; k < ops; ++k) {
        const uint32_t y = k + 1 == ops ? mb.output({1, n}, q) : mb.temp({1, n}, q);
        mb.op(kAdd, {previous, x, mb.i32(0)}, {y});
        previous = y;
    }
    return mb.build();
}

// Two 3x3 CONV_2D (several tilings each: the prepare autotunes).
const ModelDesc& convPair(ModelBuilder& mb, std::mt19937& rng, std::vector<std::vector<uint8_t>>& keep) {
    const Quant q{0.05f, 128}, qw{0.01f, 120};
    uint32_t x = mb.input({1, 24, 24, 16}, q);
    uint32_t c = 16;
    for (uint32_t cout : {32u, 64u}) {
        keep.push_back(randomBytes(rng, size_t(cout) * 9 * c));
        const uint32_t f =
            mb.constant(5, {cout, 3, 3, c}, qw.scale, qw.zp, keep.back().data(), keep.back().size());
        std::vector<int32_t> bias = randomBias(rng, cout, 2000);
        keep.emplace_back(reinterpret_cast<uint8_t*>(bias.data()),
                          reinterpret_cast<uint8_t*>(bias.data()) + bias.size() * 4);
        const uint32_t b =
            mb.constant(4, {cout}, q.scale * qw.scale, 0, keep.back().data(), keep.back().size());
        const uint32_t y = cout == 64 ? mb.output({1, 24, 24, cout}, q) : mb.temp({1, 24, 24, cout}, q);
        mb.op(kConv, {x, f, b, mb.i32(1), mb.i32(1), mb.i32(1), mb.i32(0)}, {y});
        x = y;
        c = cout;
    }
    return mb.build();
}

}  // namespace

TEST_CASE("a running execution stops at an operation boundary: deadline or Cancel, then runs again",
          "[firmware][deadline]") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    constexpr uint32_t kOps = 40, kN = 256;
    ModelBuilder mb(h);
    const BlobInfo info = prepareClaimed(h, addChain(mb, kOps, kN));
    const std::vector<uint8_t> input(kN, 1);
    const Run full = execute(h, info, {input}, {kN});
    REQUIRE(full.status.ok());
    CHECK(full.outputs[0][0] == kOps + 1);  // x + x + ... : kOps additions of 1 to 1
    const uint64_t dramBefore = h.runtime.dramBytesInUse();

    Script script;
    script.at = 10;
    std::string stopWord;
    Code expected = Code::kNone;
    SECTION("a transient deadline") {
        script.reason = StopReason::kDeadlineTransient;
        expected = Code::kMissedDeadlineTransient;
        stopWord = "missed deadline: the execution was stopped before operation 10 (10 of 40 ran)";
    }
    SECTION("a persistent deadline") {
        script.reason = StopReason::kDeadlinePersistent;
        expected = Code::kMissedDeadlinePersistent;
        stopWord = "missed deadline";
    }
    SECTION("a Cancel") {
        script.reason = StopReason::kCancelled;
        expected = Code::kGeneralFailure;
        stopWord = "cancelled: the execution was stopped before operation 10";
    }
    script.install(h);
    const Run stopped = execute(h, info, {input}, {kN});
    INFO(stopped.status.message);
    CHECK(stopped.status.code == expected);
    CHECK_THAT(stopped.status.message, Catch::Contains(stopWord));
    CHECK(stopped.result.profileCount == 11);  // operations 0..9 ran, 10 was reached
    // Every checkpoint said where the execution was: operation boundaries 1..10 of 40.
    REQUIRE(script.seen.size() == 10);
    CHECK(script.seen.front().done == 1);
    CHECK(script.seen.back().done == 10);
    CHECK(script.seen.back().total == kOps);
    CHECK(script.seen.back().phase == WorkPhase::kExecute);
    CHECK(h.runtime.dramBytesInUse() == dramBefore);  // the queue and activations went back

    // The firmware is ready for the next execution: the same one runs to its end.
    script.rearm(WorkPhase::kExecute, StopReason::kNone);
    const Run again = execute(h, info, {input}, {kN});
    REQUIRE(again.status.ok());
    CHECK(again.outputs == full.outputs);
}

TEST_CASE("a running prepare stops between the operations it plans and keeps nothing",
          "[firmware][deadline]") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    ModelBuilder mb(h);
    const ModelDesc& model = addChain(mb, 200, 64);
    const uint64_t dramBefore = h.runtime.dramBytesInUse();
    const uint32_t modelsBefore = h.runtime.loadedModels();

    Script script;
    script.phase = WorkPhase::kCompile;
    script.at = 120;
    script.reason = GENERATE(StopReason::kDeadlinePersistent, StopReason::kCancelled);
    script.install(h);
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    const FwStatus st = h.runtime.prepare(model, scratch, &info);
    INFO(st.message);
    if (script.reason == StopReason::kCancelled) {
        CHECK(st.code == Code::kGeneralFailure);
        CHECK_THAT(st.message,
                   Catch::Contains("cancelled: the prepare was stopped before planning operation 120"));
    } else {
        CHECK(st.code == Code::kMissedDeadlinePersistent);
        CHECK_THAT(st.message, Catch::Contains("missed deadline: the prepare was stopped before planning "
                                               "operation 120 (120 of 200 planned)"));
    }
    CHECK(h.runtime.dramBytesInUse() == dramBefore);
    CHECK(h.runtime.loadedModels() == modelsBefore);

    // Without a stop the same model prepares.
    script.rearm(WorkPhase::kCompile, StopReason::kNone);
    Arena again(h.scratchMem.data(), h.scratchMem.size());
    REQUIRE(h.runtime.prepare(model, again, &info).ok());
    CHECK(h.runtime.loadedModels() == modelsBefore + 1);
}

TEST_CASE("an autotuning prepare stops between tuning rounds and keeps nothing", "[firmware][deadline]") {
    Harness h;
    REQUIRE(h.runtime.init().ok());
    std::mt19937 rng(5);
    std::vector<std::vector<uint8_t>> keep;
    ModelBuilder mb(h);
    const ModelDesc& model = convPair(mb, rng, keep);
    const uint64_t dramBefore = h.runtime.dramBytesInUse();

    Script script;
    script.phase = WorkPhase::kTune;
    script.at = 1;  // after the first (greedy) round
    script.reason = StopReason::kDeadlineTransient;
    script.install(h);
    Arena scratch(h.scratchMem.data(), h.scratchMem.size());
    BlobInfo info;
    const FwStatus st = h.runtime.prepare(model, scratch, &info);
    INFO(st.message);
    CHECK(st.code == Code::kMissedDeadlineTransient);
    CHECK_THAT(st.message, Catch::Contains("the prepare was stopped before tuning round 1"));
    CHECK(h.runtime.dramBytesInUse() == dramBefore);  // trial blobs and scratch io went back
    CHECK(h.runtime.loadedModels() == 0);

    // A trial run stopped inside (its execution's checkpoint) stops the prepare the same way.
    script.rearm(WorkPhase::kExecute, StopReason::kDeadlineTransient);
    Arena scratch2(h.scratchMem.data(), h.scratchMem.size());
    const FwStatus st2 = h.runtime.prepare(model, scratch2, &info);
    INFO(st2.message);
    CHECK(st2.code == Code::kMissedDeadlineTransient);
    CHECK_THAT(st2.message, Catch::Contains("the prepare was stopped before tuning round 0"));
    CHECK(h.runtime.dramBytesInUse() == dramBefore);

    script.rearm(WorkPhase::kTune, StopReason::kNone);
    Arena scratch3(h.scratchMem.data(), h.scratchMem.size());
    REQUIRE(h.runtime.prepare(model, scratch3, &info).ok());
    CHECK(info.tuningTrials > 1);
}
