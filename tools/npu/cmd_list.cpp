// npu list FILE: the vectors of a JSON-lines file, so a user can find the --name to run.
#include <fmt/format.h>
#include <fnmatch.h>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "npu/framework/cts_loader.h"

namespace npu::tools {
namespace {

bool selected(const std::string& name, const std::vector<std::string>& filters) {
    if (filters.empty()) return true;
    for (const auto& glob : filters) {
        if (fnmatch(glob.c_str(), name.c_str(), 0) == 0) return true;
    }
    return false;
}

std::string operationList(const hal::Subgraph& main) {
    std::string ops;
    for (const auto& op : main.operations)
        ops += (ops.empty() ? "" : " ") + std::string(hal::toString(op.type));
    return ops;
}

}  // namespace

int cmdList(const std::string& file, const std::vector<std::string>& filters, bool json) {
    auto reader = framework::CtsReader::open(file);
    if (!reader) {
        fmt::print(stderr, "npu list: {}\n", reader.error().message);
        return 2;
    }
    nlohmann::json rows = nlohmann::json::array();
    size_t count = 0;
    while (true) {
        auto tc = (*reader)->next();
        if (!tc) {
            fmt::print(stderr, "npu list: {}\n", tc.error().message);
            return 2;
        }
        if (!*tc) break;
        const auto& t = **tc;
        if (!selected(t.name, filters)) continue;
        ++count;
        if (json) {
            nlohmann::json ops = nlohmann::json::array();
            for (const auto& op : t.model.main.operations) ops.push_back(hal::toString(op.type));
            rows.push_back({{"name", t.name},
                            {"line", (*reader)->lineNumber()},
                            {"operations", ops},
                            {"expect_failure", t.expectFailure}});
        } else {
            fmt::print("{:<64} {}{}\n", t.name, operationList(t.model.main),
                       t.expectFailure ? "  (expect_failure)" : "");
        }
    }
    if (json) {
        fmt::print("{}\n", nlohmann::json{{"file", file}, {"vectors", rows}}.dump(2));
    } else {
        fmt::print("{} vector(s)\n", count);
    }
    return 0;
}

}  // namespace npu::tools
