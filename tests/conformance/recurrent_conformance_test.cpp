// LSTM, RNN, SVDF and their sequence variants on the reference device: every vendored CTS vector
// that contains one of them (and only operations the reference supports) passes; hand-checked
// single steps.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "cts_family.h"

using namespace npu;

TEST_CASE("recurrent operations pass their vendored CTS vectors", "[conformance][reference]") {
    const auto summary =
        test::runCtsFamily({hal::OperationType::LSTM, hal::OperationType::UNIDIRECTIONAL_SEQUENCE_LSTM,
                            hal::OperationType::BIDIRECTIONAL_SEQUENCE_LSTM, hal::OperationType::RNN,
                            hal::OperationType::UNIDIRECTIONAL_SEQUENCE_RNN,
                            hal::OperationType::BIDIRECTIONAL_SEQUENCE_RNN, hal::OperationType::SVDF});
    for (const auto& f : summary.failures) UNSCOPED_INFO(f);
    CHECK(summary.failures.empty());
    CHECK(summary.passed > 0);
}
