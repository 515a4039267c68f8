// MEAN, REDUCE_*, ARGMAX/ARGMIN, LOG_SOFTMAX: every vendored CTS vector that contains them passes.
#include <catch2/catch.hpp>

#include "cts_family.h"

using namespace npu;
using hal::OperationType;

TEST_CASE("reductions pass their vendored CTS vectors", "[conformance][reference]") {
    const auto summary =
        test::runCtsFamily({OperationType::MEAN, OperationType::REDUCE_SUM, OperationType::REDUCE_PROD,
                            OperationType::REDUCE_MIN, OperationType::REDUCE_MAX, OperationType::REDUCE_ANY,
                            OperationType::REDUCE_ALL, OperationType::ARGMAX, OperationType::ARGMIN,
                            OperationType::LOG_SOFTMAX});
    CHECK(summary.failures.empty());
    CHECK(summary.passed >= 210);
}
