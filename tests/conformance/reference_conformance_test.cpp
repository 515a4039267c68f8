// Every vendored CTS vector whose operations the reference device claims must pass (or, for
// expect_failure vectors, be rejected at preparation or execution). Prints a table of
// passed / failed / unsupported per operation and operand type.
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "npu/framework/cts_loader.h"
#include "npu/ref/reference_device.h"

using namespace npu;

namespace {

enum class Verdict { kPass, kRejected, kFail, kUnsupported };

struct Outcome {
    Verdict verdict = Verdict::kPass;
    std::string message;
};

Outcome runVector(hal::IDevice& device, const framework::TestCase& tc) {
    auto supported = device.getSupportedOperations(tc.model);
    if (!supported) {
        if (tc.expectFailure) return {Verdict::kRejected, ""};
        return {Verdict::kFail, "getSupportedOperations: " + supported.error().message};
    }
    for (bool s : *supported) {
        if (!s) return {Verdict::kUnsupported, ""};
    }
    auto prepared = device.prepareModel(tc.model);
    if (!prepared) {
        if (tc.expectFailure) return {Verdict::kRejected, ""};
        return {Verdict::kFail, "prepare: " + prepared.error().message};
    }
    auto request = framework::makeRequest(tc);
    if (!request) return {Verdict::kFail, "request: " + request.error().message};
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                    std::nullopt);
    if (!result) {
        if (tc.expectFailure) return {Verdict::kRejected, ""};
        return {Verdict::kFail, "execute: " + result.error().message};
    }
    if (tc.expectFailure) return {Verdict::kFail, "expected a failure, got outputs"};
    auto mismatch = framework::compareOutputs(tc, framework::readOutputs(*request), result->outputShapes);
    if (mismatch) return {Verdict::kFail, mismatch->message};
    return {Verdict::kPass, ""};
}

// The row a vector counts under: its last operation (the generator's "all inputs as internal"
// variants put helper ADDs first) and that operation's input type, "relaxed" when relaxed.
std::string rowOf(const framework::TestCase& tc) {
    const auto& sg = tc.model.main;
    if (sg.operations.empty()) return "(no operation)";
    const auto& op = sg.operations.back();
    std::string type = op.inputs.empty() ? "-" : std::string(hal::toString(sg.operands[op.inputs[0]].type));
    if (tc.isRelaxed && type == "TENSOR_FLOAT32") type = "relaxed";
    return std::string(hal::toString(op.type)) + " " + type;
}

struct Row {
    int pass = 0, rejected = 0, fail = 0, unsupported = 0;
};

}  // namespace

TEST_CASE("reference device passes every vendored vector it claims", "[conformance][reference]") {
    std::vector<framework::TestCase> all;
    for (const char* file :
         {"V1_0.jsonl.gz", "V1_1.jsonl.gz", "V1_2.jsonl.gz", "V1_3.jsonl.gz", "V1_3_cts_only.jsonl.gz"}) {
        auto cases = framework::loadCtsFile(framework::ctsDataDir() + "/" + file);
        REQUIRE(cases.has_value());
        for (auto& tc : *cases) all.push_back(std::move(tc));
    }
    REQUIRE(all.size() == 7133);

    ref::ReferenceDevice device;
    std::vector<Outcome> outcomes(all.size());
    std::atomic<size_t> nextIndex{0};
    auto worker = [&] {
        for (size_t i = nextIndex++; i < all.size(); i = nextIndex++) outcomes[i] = runVector(device, all[i]);
    };
    std::thread second(worker);  // two workers: the machine's two cores are shared
    worker();
    second.join();

    std::map<std::string, Row> rows;
    Row total;
    std::vector<std::string> failures;
    for (size_t i = 0; i < all.size(); ++i) {
        Row& r = rows[rowOf(all[i])];
        switch (outcomes[i].verdict) {
            case Verdict::kPass:
                ++r.pass;
                ++total.pass;
                break;
            case Verdict::kRejected:
                ++r.rejected;
                ++total.rejected;
                break;
            case Verdict::kUnsupported:
                ++r.unsupported;
                ++total.unsupported;
                break;
            case Verdict::kFail:
                ++r.fail;
                ++total.fail;
                failures.push_back(all[i].name + ": " + outcomes[i].message);
                break;
        }
    }
    std::ostringstream table;
    table << std::left << std::setw(52) << "operation / input type" << std::right << std::setw(7) << "pass"
          << std::setw(9) << "rejected" << std::setw(7) << "fail" << std::setw(13) << "unsupported"
          << "\n";
    for (const auto& [name, r] : rows) {
        if (r.pass + r.rejected + r.fail == 0) continue;  // only what the reference claims
        table << std::left << std::setw(52) << name << std::right << std::setw(7) << r.pass << std::setw(9)
              << r.rejected << std::setw(7) << r.fail << std::setw(13) << r.unsupported << "\n";
    }
    table << std::left << std::setw(52) << "total (all 7133 vectors)" << std::right << std::setw(7)
          << total.pass << std::setw(9) << total.rejected << std::setw(7) << total.fail << std::setw(13)
          << total.unsupported << "\n";
    std::cout << table.str();
    for (const auto& f : failures) std::cout << "FAIL " << f << "\n";
    std::cout.flush();

    CHECK(failures.empty());
    CHECK(total.pass > 0);
}
