// GATHER, SPLIT, TILE, FILL, RANK: every vendored CTS vector that contains them passes.
#include <catch2/catch.hpp>

#include "cts_family.h"

using namespace npu;
using hal::OperationType;

TEST_CASE("gather / split / tile / fill / rank pass their vendored CTS vectors", "[conformance][reference]") {
    const auto summary = test::runCtsFamily({OperationType::GATHER, OperationType::SPLIT, OperationType::TILE,
                                             OperationType::FILL, OperationType::RANK});
    CHECK(summary.failures.empty());
    CHECK(summary.passed >= 204);
}
