#pragma once
// Import of the NNAPI CTS test vectors (the JSON Lines format of tests/cts/README.md) into HAL
// models, the CTS pass/fail rules, and the request plumbing a conformance run needs.
// No exceptions leave this module: a malformed file is an npu::Error naming the file, the line
// and the field.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::framework {

struct TestCase {
    std::string name, spec, hal, source, minSupportedVersion;
    bool expectFailure = false, isRelaxed = false;
    double multinomialTolerance = 0.0;
    hal::Model model;  // CONSTANT_COPY data in operandValues; CONSTANT_REFERENCE in a hal::Memory pool
    std::vector<std::vector<uint8_t>> inputs;           // one per main input; empty = omitted (hasNoValue)
    std::vector<std::vector<uint8_t>> expectedOutputs;  // one per main output
    std::vector<std::vector<uint32_t>> expectedOutputDims;
    std::vector<bool> outputIgnored;
    bool nanMatchesNan = false;  // an expected NaN takes a NaN (ONNX backend tests: numpy's equal_nan)
};

// Streams a .jsonl or .jsonl.gz file line by line (zlib reads both).
class CtsReader {
public:
    static Result<std::unique_ptr<CtsReader>> open(const std::string& path);
    ~CtsReader();
    CtsReader(const CtsReader&) = delete;
    CtsReader& operator=(const CtsReader&) = delete;

    // The next test case; nullopt at the end of the file. Blank lines are skipped.
    Result<std::optional<TestCase>> next();
    // The next non-blank line, unparsed; false at the end of the file. A caller picking a few
    // vectors out of a large file parses only those (parseCtsLine(line, where())).
    Result<bool> nextLine(std::string& line);
    // 1-based number of the line last returned by next() or nextLine() (0 before the first call).
    size_t lineNumber() const { return lineNumber_; }
    // "PATH:LINE" of that line, for error messages.
    std::string where() const { return path_ + ":" + std::to_string(lineNumber_); }

private:
    CtsReader(std::string path, void* gz) : path_(std::move(path)), gz_(gz) {}
    Result<bool> readLine(std::string& line);

    std::string path_;
    void* gz_ = nullptr;  // gzFile
    std::vector<char> buffer_;
    size_t bufferPos_ = 0;
    size_t bufferEnd_ = 0;
    bool eof_ = false;
    size_t lineNumber_ = 0;
};

// Parses one line of the format. `where` prefixes every error message (e.g. "V1_0.jsonl.gz:3").
Result<TestCase> parseCtsLine(const std::string& line, const std::string& where);

// All test cases of one file.
Result<std::vector<TestCase>> loadCtsFile(const std::string& path);
// The vector named `name` in the file at `path`; INVALID_ARGUMENT naming both when absent, with
// the closest names of the file as suggestions.
Result<TestCase> findTestCase(const std::string& path, const std::string& name);
// Up to `limit` of `names` closest to `name` (containing it, or a small edit distance away),
// closest first.
std::vector<std::string> closestNames(const std::string& name, const std::vector<std::string>& names,
                                      size_t limit);

// Absolute path of the vendored tests/cts folder; the environment variable NPU_CTS_DIR
// overrides the path compiled in by meson.
std::string ctsDataDir();

// The CTS comparison (see docs/conformance.md): float32 atol 1e-5 rtol 5 ULP, float16 and relaxed
// models 5 ULP of fp16, int32 and quant16 atol 1, quant8 atol 1 (3 for "mobilenet" tests), bool
// exact, ignored outputs skipped, RANDOM_MULTINOMIAL by class frequency. The first mismatch found.
struct Mismatch {
    uint32_t output = 0;
    size_t element = 0;
    double expected = 0, actual = 0, tolerance = 0;
    std::string message;
};
std::optional<Mismatch> compareOutputs(const TestCase& tc,
                                       const std::vector<std::vector<uint8_t>>& actualOutputs,
                                       const std::vector<hal::OutputShape>& actualShapes);

// A hal::Request whose inputs and outputs live in one hal::Memory pool: inputs copied in,
// outputs sized as the expected outputs. readOutputs copies the outputs back out.
struct PreparedRequest {
    hal::Request request;
    std::shared_ptr<hal::Memory> pool;
    std::vector<hal::DataLocation> outputLocations;
};
Result<PreparedRequest> makeRequest(const TestCase& tc);
std::vector<std::vector<uint8_t>> readOutputs(const PreparedRequest& pr);

}  // namespace npu::framework
