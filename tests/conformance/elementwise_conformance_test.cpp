// Comparisons, logical operations, CAST, SELECT, unary math, POW, PRELU, ELU and
// INSTANCE_NORMALIZATION: every vendored CTS vector that contains them passes.
#include <catch2/catch.hpp>

#include "cts_family.h"

using namespace npu;
using hal::OperationType;

TEST_CASE("comparison, logical, CAST and SELECT pass their vendored CTS vectors",
          "[conformance][reference]") {
    const auto summary = test::runCtsFamily(
        {OperationType::EQUAL, OperationType::NOT_EQUAL, OperationType::LESS, OperationType::LESS_EQUAL,
         OperationType::GREATER, OperationType::GREATER_EQUAL, OperationType::LOGICAL_AND,
         OperationType::LOGICAL_OR, OperationType::LOGICAL_NOT, OperationType::CAST, OperationType::SELECT});
    CHECK(summary.failures.empty());
    CHECK(summary.passed > 0);
}

TEST_CASE("unary math, POW, PRELU, ELU and INSTANCE_NORMALIZATION pass their vendored CTS vectors",
          "[conformance][reference]") {
    const auto summary = test::runCtsFamily(
        {OperationType::ABS, OperationType::NEG, OperationType::EXP, OperationType::LOG, OperationType::RSQRT,
         OperationType::SIN, OperationType::SQRT, OperationType::FLOOR, OperationType::POW,
         OperationType::PRELU, OperationType::ELU, OperationType::INSTANCE_NORMALIZATION});
    CHECK(summary.failures.empty());
    CHECK(summary.passed > 0);
}
