#pragma once
// Runs the vendored CTS vectors that contain any of a family's operations through the reference
// device (prepare, request, execute, compare) and prints pass counts per operation and type.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "npu/framework/cts_loader.h"
#include "npu/ref/reference_device.h"

namespace npu::test {

struct FamilySummary {
    int passed = 0, rejected = 0, unsupported = 0;
    std::vector<std::string> failures;
};

inline std::string runOne(hal::IDevice& device, const framework::TestCase& tc, bool& pass,
                          bool& unsupported) {
    pass = false;
    unsupported = false;
    auto supported = device.getSupportedOperations(tc.model);
    if (!supported) return tc.expectFailure ? "" : "getSupportedOperations: " + supported.error().message;
    if (std::find(supported->begin(), supported->end(), false) != supported->end()) {
        unsupported = true;
        return "";
    }
    auto prepared = device.prepareModel(tc.model);
    if (!prepared) return tc.expectFailure ? "" : "prepare: " + prepared.error().message;
    auto request = framework::makeRequest(tc);
    if (!request) return "request: " + request.error().message;
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                    std::nullopt);
    if (!result) return tc.expectFailure ? "" : "execute: " + result.error().message;
    if (tc.expectFailure) return "expected a failure, got outputs";
    auto mismatch = framework::compareOutputs(tc, framework::readOutputs(*request), result->outputShapes);
    if (mismatch) return mismatch->message;
    pass = true;
    return "";
}

inline FamilySummary runCtsFamily(const std::set<hal::OperationType>& types) {
    FamilySummary summary;
    ref::ReferenceDevice device;
    std::map<std::string, std::pair<int, int>> rows;  // pass, fail
    for (const char* file :
         {"V1_0.jsonl.gz", "V1_1.jsonl.gz", "V1_2.jsonl.gz", "V1_3.jsonl.gz", "V1_3_cts_only.jsonl.gz"}) {
        auto reader = framework::CtsReader::open(framework::ctsDataDir() + "/" + file);
        if (!reader) {
            summary.failures.push_back(reader.error().message);
            continue;
        }
        while (true) {
            auto next = (*reader)->next();
            if (!next) {
                summary.failures.push_back(next.error().message);
                break;
            }
            if (!*next) break;
            const framework::TestCase& tc = **next;
            const hal::Operation* mine = nullptr;
            for (const auto& op : tc.model.main.operations) {
                if (types.count(op.type)) mine = &op;
            }
            if (mine == nullptr) continue;
            bool pass = false, unsupported = false;
            const std::string message = runOne(device, tc, pass, unsupported);
            std::string row = std::string(hal::toString(mine->type)) + " " +
                              std::string(hal::toString(tc.model.main.operands[mine->inputs[0]].type));
            if (tc.isRelaxed) row += " relaxed";
            if (unsupported) {
                ++summary.unsupported;
                continue;
            }
            if (!message.empty()) {
                summary.failures.push_back(tc.name + ": " + message);
                ++rows[row].second;
            } else {
                ++(pass ? summary.passed : summary.rejected);
                ++rows[row].first;
            }
        }
    }
    for (const auto& [row, counts] : rows) {
        std::cout << std::left << std::setw(60) << row << std::right << std::setw(5) << counts.first
                  << " pass" << std::setw(5) << counts.second << " fail\n";
    }
    for (const auto& f : summary.failures) std::cout << "FAIL " << f << "\n";
    std::cout << "unsupported (other operations): " << summary.unsupported << "\n";
    return summary;
}

}  // namespace npu::test
