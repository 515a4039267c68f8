#pragma once
// The ONNX backend node tests (Debian's libonnx-testdata: DIR/model.onnx and
// DIR/test_data_set_*/input_N.pb, output_N.pb) run on one hal::IDevice.

#include <string>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/hal/device.h"

namespace npu::framework {

enum class NodeTestVerdict { kPass, kFail, kUnsupported, kError };
std::string_view toString(NodeTestVerdict verdict);

struct NodeTestOutcome {
    std::string name;  // the test directory's name
    NodeTestVerdict verdict = NodeTestVerdict::kError;
    std::string message;  // why it failed, is unsupported or errored; empty on pass
};

// The node-test root: $NPU_ONNX_NODE_TESTS, else /usr/share/libonnx-testdata/data/node.
std::string onnxNodeTestDir();
// The test directories under `root` (those holding a model.onnx), sorted by name.
std::vector<std::string> listOnnxNodeTests(const std::string& root);

// Imports DIR/model.onnx with the shapes of the first data set's inputs (inputs of a type the HAL
// does not carry, e.g. int64 shapes, are fixed at import), runs every data set on `device` and
// compares with rtol 1e-3, atol 1e-7. Unsupported: the import or the device does not take it.
NodeTestOutcome runOnnxNodeTest(hal::IDevice& device, const std::string& dir);

// The data sets of the test in DIR as CTS test cases (named "DIR_NAME/test_data_set_N"), for
// `npu conformance DIR`: each is DIR/model.onnx imported with that set's input shapes (as
// above), its run-time inputs as HAL buffers and its expected outputs in the HAL output types,
// so the CTS runner and tolerances apply. kOnnxUnsupported: the importer does not take the
// model, or an expected output's type or shape is not the imported model's; INVALID_ARGUMENT:
// the test directory is malformed (no data set, input files that do not match the graph).
Result<std::vector<TestCase>> loadOnnxTestCases(const std::string& dir);

// The row of the conformance table for the test in DIR: its operators in node order, distinct,
// joined by '+' ("QLinearConv", "Conv+Relu"), and its first graph input's element type.
Result<std::pair<std::string, std::string>> onnxTestRow(const std::string& dir);

}  // namespace npu::framework
