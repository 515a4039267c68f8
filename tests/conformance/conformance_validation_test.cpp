// Every conformance vector that is expected to run (expect_failure false) must pass
// validateModel, and the request built from it must pass validateRequest. Each rejected vector is
// reported with its file, name and the validator's message.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/hal/validation.h"

using namespace npu;

namespace {

std::vector<std::string> vectorFiles() {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(framework::ctsDataDir(), ec)) {
        const std::string name = entry.path().filename().string();
        if (name.ends_with(".jsonl.gz") || name.ends_with(".jsonl")) files.push_back(entry.path().string());
    }
    std::ranges::sort(files);
    return files;
}

}  // namespace

TEST_CASE("every valid conformance vector validates", "[conformance][validation]") {
    const auto files = vectorFiles();
    if (files.empty()) {
        std::fprintf(stderr, "SKIP: no conformance vectors in %s (set NPU_CTS_DIR)\n",
                     framework::ctsDataDir().c_str());
        std::exit(77);
    }
    size_t valid = 0;
    size_t expectFailure = 0;
    size_t expectFailureRejected = 0;
    std::vector<std::string> rejected;
    for (const auto& file : files) {
        auto reader = framework::CtsReader::open(file);
        REQUIRE(reader.has_value());
        while (true) {
            auto next = (*reader)->next();
            if (!next) FAIL("reading " << file << ": " << next.error().message);
            if (!next->has_value()) break;
            const framework::TestCase& tc = **next;
            const std::string where = std::filesystem::path(file).filename().string() + ":" +
                                      std::to_string((*reader)->lineNumber()) + " " + tc.name;
            const auto modelStatus = hal::validateModel(tc.model);
            if (tc.expectFailure) {
                ++expectFailure;
                expectFailureRejected += modelStatus ? 0 : 1;
                continue;
            }
            if (!modelStatus) {
                rejected.push_back(where + ": model: " + modelStatus.error().message);
                continue;
            }
            auto request = framework::makeRequest(tc);
            if (!request) {
                rejected.push_back(where + ": makeRequest: " + request.error().message);
                continue;
            }
            const auto requestStatus = hal::validateRequest(request->request, tc.model);
            if (!requestStatus) {
                rejected.push_back(where + ": request: " + requestStatus.error().message);
                continue;
            }
            ++valid;
        }
    }
    for (const auto& r : rejected) UNSCOPED_INFO(r);
    std::printf(
        "conformance validation: %zu valid vectors validate, %zu rejected; %zu expect_failure "
        "vectors, %zu of them already rejected by validateModel\n",
        valid, rejected.size(), expectFailure, expectFailureRejected);
    CHECK(rejected.empty());
    CHECK(valid > 0);
}
