// The stress suite: npu stress's engine for a bounded time on both host transports. It prints
// requests, faults injected, recoveries, lost, answered twice and wrong answers, and fails unless
// the last three are 0. The seed is printed; NPU_STRESS_SEED replays a run.
#include <catch2/catch.hpp>
#include <cstdlib>

#include "../../tools/npu/stress_engine.h"

namespace {

npu::tools::StressOptions boundedOptions(const char* transport) {
    npu::tools::StressOptions o;
    o.transport = transport;
    o.durationSeconds = 12;  // per transport; with start-up both stay within about a minute
    o.faultRate = 0.05;
    o.clients = 2;
    o.threads = 2;
    o.daemonPath = NPU_FWD_TEST_PATH;
    if (const char* seed = std::getenv("NPU_STRESS_SEED")) o.seed = std::strtoull(seed, nullptr, 10);
    return o;
}

void check(const npu::tools::StressReport& r) {
    npu::tools::printStressReport(r);
    CHECK(r.requests > 0);
    CHECK(r.faults > 0);
    CHECK(r.lost == 0);
    CHECK(r.answeredTwice == 0);
    CHECK(r.wrong == 0);
    CHECK(r.correct > 0);
}

}  // namespace

TEST_CASE("stress over loopback: 2 client processes x 2 threads, random faults, nothing lost or wrong") {
    auto report = npu::tools::runStress(boundedOptions("loopback"));
    REQUIRE(report.has_value());
    check(*report);
}

TEST_CASE("stress over unix: 2 client processes x 2 threads on one npu-fwd, random faults and crashes") {
    auto report = npu::tools::runStress(boundedOptions("unix"));
    REQUIRE(report.has_value());
    check(*report);
}
