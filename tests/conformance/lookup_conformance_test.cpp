// EMBEDDING_LOOKUP, HASHTABLE_LOOKUP, LSH_PROJECTION: every vendored CTS vector that contains one of them
// passes.
#include <catch2/catch.hpp>

#include "cts_family.h"

using namespace npu;

TEST_CASE("lookup operations pass their vendored CTS vectors", "[conformance][reference]") {
    const auto summary =
        test::runCtsFamily({hal::OperationType::EMBEDDING_LOOKUP, hal::OperationType::HASHTABLE_LOOKUP,
                            hal::OperationType::LSH_PROJECTION});
    CHECK(summary.failures.empty());
    CHECK(summary.passed > 0);
}
