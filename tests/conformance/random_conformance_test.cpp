// RANDOM_MULTINOMIAL: every vendored CTS vector passes (class frequencies against softmax of the input).
#include <catch2/catch.hpp>

#include "cts_family.h"

using namespace npu;

TEST_CASE("RANDOM_MULTINOMIAL passes its vendored CTS vectors", "[conformance][reference]") {
    const auto summary = test::runCtsFamily({hal::OperationType::RANDOM_MULTINOMIAL});
    CHECK(summary.failures.empty());
    CHECK(summary.passed > 0);
}
