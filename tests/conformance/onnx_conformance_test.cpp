// The ONNX backend tests of Debian's libonnx-testdata (node tests, and the models converted from
// PyTorch modules and operators), imported and run on the CPU reference device: every test
// that imports must pass within the backend's tolerance (rtol 1e-3, atol 1e-7).
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "npu/framework/onnx_node_test.h"
#include "npu/ref/reference_device.h"

using namespace npu;
using framework::NodeTestVerdict;

namespace {

std::map<NodeTestVerdict, size_t> runAll(const std::string& root, size_t minimumTests) {
    const auto dirs = framework::listOnnxNodeTests(root);
    REQUIRE(dirs.size() >= minimumTests);
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
    std::printf("%s: %zu pass, %zu fail, %zu unsupported, %zu error (of %zu)\n", root.c_str(),
                counts[NodeTestVerdict::kPass], counts[NodeTestVerdict::kFail],
                counts[NodeTestVerdict::kUnsupported], counts[NodeTestVerdict::kError], dirs.size());
    return counts;
}

std::string sibling(const char* name) {
    return (std::filesystem::path(framework::onnxNodeTestDir()).parent_path() / name).string();
}

}  // namespace

// The pass counts only grow; a drop means an operator mapping was lost.
TEST_CASE("ONNX node tests on the reference device: every imported test passes") {
    auto counts = runAll(framework::onnxNodeTestDir(), 900);  // libonnx-testdata 1.12 ships 932
    CHECK(counts[NodeTestVerdict::kFail] == 0);
    CHECK(counts[NodeTestVerdict::kError] == 0);
    CHECK(counts[NodeTestVerdict::kPass] >= 252);
}

TEST_CASE("ONNX models converted from PyTorch (opset 6, upgraded at import) pass on the reference device") {
    auto converted = runAll(sibling("pytorch-converted"), 80);
    CHECK(converted[NodeTestVerdict::kFail] == 0);
    CHECK(converted[NodeTestVerdict::kError] == 0);
    CHECK(converted[NodeTestVerdict::kPass] >= 46);
    auto operators = runAll(sibling("pytorch-operator"), 35);
    CHECK(operators[NodeTestVerdict::kFail] == 0);
    CHECK(operators[NodeTestVerdict::kError] == 0);
    CHECK(operators[NodeTestVerdict::kPass] >= 20);
}
