#pragma once
// Writing test cases in the test-vector format (docs/vector-format.md), the inverse of
// cts_loader.h: a failing random model is written as a vector that `npu run FILE` replays.
#include <string>

#include "npu/framework/cts_loader.h"

namespace npu::framework {

// One line (no newline) that parseCtsLine reads back into an equal test case: the main
// subgraph's inputs carry tc.inputs, its outputs tc.expectedOutputs (with expectedOutputDims and
// outputIgnored), constants their bytes (CONSTANT_REFERENCE from tc.model.pools). INVALID_ARGUMENT
// naming the operand when a location lies outside its pool or the counts disagree.
Result<std::string> ctsLine(const TestCase& tc);

// Appends ctsLine(tc) and a newline to the file at `path`, creating it if needed.
Result<void> appendCtsLine(const std::string& path, const TestCase& tc);

}  // namespace npu::framework
