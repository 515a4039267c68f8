// TOPK_V2: every vendored CTS vector that contains it passes (none are vendored at present).
#include <catch2/catch.hpp>

#include "cts_family.h"

using namespace npu;

TEST_CASE("TOPK_V2 passes its vendored CTS vectors", "[conformance][reference]") {
    const auto summary = test::runCtsFamily({hal::OperationType::TOPK_V2});
    CHECK(summary.failures.empty());
}
