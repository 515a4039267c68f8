// IF and WHILE: every vendored CTS vector that contains them passes, or is rejected where it must
// be; the `while_infinite_loop*` models end in the loop-timeout error (MISSED_DEADLINE_TRANSIENT).
#include <catch2/catch.hpp>
#include <chrono>

#include "cts_family.h"

using namespace npu;

TEST_CASE("IF and WHILE pass their vendored CTS vectors", "[conformance][reference]") {
    // The five infinite loops run with the default loop timeout (2 s each), as the CTS does.
    const auto summary = test::runCtsFamily({hal::OperationType::IF, hal::OperationType::WHILE});
    CHECK(summary.failures.empty());
    CHECK(summary.passed > 0);
}

TEST_CASE("while_infinite_loop vectors end in MISSED_DEADLINE_TRANSIENT", "[conformance][reference]") {
    ref::ReferenceDevice device;
    int checked = 0, unsupported = 0;
    for (const char* file : {"V1_3.jsonl.gz", "V1_3_cts_only.jsonl.gz"}) {
        auto reader = framework::CtsReader::open(framework::ctsDataDir() + "/" + file);
        REQUIRE(reader.has_value());
        while (true) {
            auto next = (*reader)->next();
            REQUIRE(next.has_value());
            if (!*next) break;
            const framework::TestCase& tc = **next;
            if (tc.spec != "while_infinite_loop") continue;
            INFO(tc.name);
            auto supported = device.getSupportedOperations(tc.model);
            REQUIRE(supported.has_value());
            if (std::find(supported->begin(), supported->end(), false) != supported->end()) {
                ++unsupported;  // the condition's comparison is not implemented in this tree
                continue;
            }
            auto prepared = device.prepareModel(tc.model);
            REQUIRE(prepared.has_value());
            auto request = framework::makeRequest(tc);
            REQUIRE(request.has_value());
            // A short timeout keeps this fast; the first test case runs them with the default.
            auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO,
                                                            std::nullopt, std::chrono::milliseconds(20));
            REQUIRE_FALSE(result.has_value());
            CHECK(result.error().status == hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT);
            ++checked;
        }
    }
    std::cout << "while_infinite_loop: " << checked << " timed out, " << unsupported << " unsupported\n";
    CHECK(checked + unsupported == 5);
}
