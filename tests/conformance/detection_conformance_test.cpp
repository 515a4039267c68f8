// The detection family: every vendored CTS vector that contains one of its operations passes on
// the reference device (models that also contain an operation the reference does not implement
// yet are counted as unsupported, not run).
#include <catch2/catch.hpp>

#include "cts_family.h"

using namespace npu;

TEST_CASE("detection operations pass their vendored CTS vectors", "[conformance][reference]") {
    const auto summary = test::runCtsFamily(
        {hal::OperationType::ROI_ALIGN, hal::OperationType::ROI_POOLING,
         hal::OperationType::BOX_WITH_NMS_LIMIT, hal::OperationType::HEATMAP_MAX_KEYPOINT,
         hal::OperationType::GENERATE_PROPOSALS, hal::OperationType::AXIS_ALIGNED_BBOX_TRANSFORM,
         hal::OperationType::DETECTION_POSTPROCESSING});
    CHECK(summary.failures.empty());
    CHECK(summary.passed > 0);
}
