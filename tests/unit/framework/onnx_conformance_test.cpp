// The ONNX backend node tests of Debian's libonnx-testdata, imported and run on the CPU
// reference device: every test that imports must pass within the backend's tolerance.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "npu/framework/onnx_node_test.h"
#include "npu/ref/reference_device.h"

using namespace npu;
using framework::NodeTestVerdict;

TEST_CASE("ONNX node tests on the reference device: every imported test passes") {
    const std::string root = framework::onnxNodeTestDir();
    const auto dirs = framework::listOnnxNodeTests(root);
    REQUIRE(dirs.size() >= 900);  // libonnx-testdata 1.12 ships 932
    ref::ReferenceDevice device;
    std::map<NodeTestVerdict, size_t> counts;
    for (const auto& dir : dirs) {
        const auto outcome = framework::runOnnxNodeTest(device, dir);
        ++counts[outcome.verdict];
        if (outcome.verdict == NodeTestVerdict::kFail || outcome.verdict == NodeTestVerdict::kError) {
            std::printf("%s: %s: %s\n", outcome.name.c_str(),
                        std::string(framework::toString(outcome.verdict)).c_str(), outcome.message.c_str());
        }
    }
    std::printf("onnx node tests: %zu pass, %zu fail, %zu unsupported, %zu error (of %zu)\n",
                counts[NodeTestVerdict::kPass], counts[NodeTestVerdict::kFail],
                counts[NodeTestVerdict::kUnsupported], counts[NodeTestVerdict::kError], dirs.size());
    CHECK(counts[NodeTestVerdict::kFail] == 0);
    CHECK(counts[NodeTestVerdict::kError] == 0);
    // The count imported (= passed) only grows; a drop means an operator mapping was lost.
    CHECK(counts[NodeTestVerdict::kPass] >= NPU_ONNX_MIN_PASSING);
}
