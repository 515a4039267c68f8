// npu cache list|verify|clear [DIR].
#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "npu/cache/cache_directory.h"
#include "npu/cache/key.h"
#include "npu/cache/token_map.h"
#include "npu/shim/npu_device.h"

namespace npu::tools {
namespace {

std::string driverVersion() {
    return std::string("npu-shim ") + shim::kShimVersion;
}

// The firmware version is part of the cache key: ask the firmware.
std::optional<std::string> firmwareVersion() {
    auto opened = openDevice({});
    if (!opened) return std::nullopt;
    auto info = shim::queryNpuInfo(*opened->device);
    if (!info) return std::nullopt;
    return info->firmwareVersion;
}

std::string age(uint64_t ns) {
    const uint64_t now = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   std::chrono::system_clock::now().time_since_epoch())
                                                   .count());
    const uint64_t s = now > ns ? (now - ns) / 1'000'000'000ull : 0;
    if (s < 120) return fmt::format("{}s", s);
    if (s < 7200) return fmt::format("{}m", s / 60);
    if (s < 172800) return fmt::format("{}h", s / 3600);
    return fmt::format("{}d", s / 86400);
}

nlohmann::json entryJson(const cache::TokenMapEntry& e, const std::string& name = {}) {
    nlohmann::json j = {{"token", cache::toHex(e.token)},    {"model_bytes", e.modelBytes},
                        {"data_bytes", e.dataBytes},         {"age", age(e.lastUsedNs)},
                        {"driver_version", e.driverVersion}, {"firmware_version", e.firmwareVersion}};
    if (!name.empty()) j["entry"] = name;
    return j;
}

void printEntries(const std::vector<cache::TokenMapEntry>& entries) {
    fmt::print("{:<18} {:>12} {:>12} {:>6}  {}\n", "token", "model bytes", "data bytes", "used", "versions");
    for (const auto& e : entries) {
        fmt::print("{:<18} {:>12} {:>12} {:>6}  {} / {}\n", cache::toHex(e.token).substr(0, 16) + "..",
                   e.modelBytes, e.dataBytes, age(e.lastUsedNs), e.driverVersion, e.firmwareVersion);
    }
}

// `npu cache ACTION` without a directory: the token map of the HAL path.
int tokenMapCommand(const std::string& action, const std::string& stateDir, bool json) {
    cache::TokenMapOptions options;
    options.stateDirectory = stateDir;
    auto map = cache::TokenMap::open(options);
    if (!map) return commandFailed("cache", map.error().message);
    if (action == "clear") {
        if (auto c = (*map)->clear(); !c) return commandFailed("cache clear", c.error().message);
        fmt::print("cleared the token map {}\n", (*map)->path());
        return 0;
    }
    auto entries = (*map)->entries();
    if (!entries) return commandFailed("cache", entries.error().message);
    if (json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& e : *entries) list.push_back(entryJson(e));
        fmt::print(
            "{}\n",
            nlohmann::json{{"map", (*map)->path()}, {"entries", list}, {"recoveries", (*map)->recoveries()}}
                .dump(2));
    } else {
        fmt::print("token map {} ({} entries; the cache files themselves belong to their callers)\n",
                   (*map)->path(), entries->size());
        printEntries(*entries);
        if (action == "verify") {
            fmt::print("map integrity: {}\n",
                       (*map)->recoveries() == 0 ? "ok" : "was corrupt and has been reset");
        }
    }
    return action == "verify" && (*map)->recoveries() != 0 ? 1 : 0;
}

void printDirectoryJson(const std::string& dir, const std::vector<cache::DirectoryEntry>& entries,
                        const std::optional<cache::VerifyReport>& report, bool otherKey) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& e : entries) list.push_back(entryJson(e.record, e.name));
    nlohmann::json j = {{"directory", dir}, {"entries", list}};
    if (report) {
        nlohmann::json bad = nlohmann::json::array();
        for (const auto& b : report->bad) bad.push_back({{"entry", b.name}, {"reason", b.reason}});
        j["verify"] = {{"good", report->good}, {"bad", bad}};
        j["written_under_another_key"] = otherKey;
    }
    fmt::print("{}\n", j.dump(2));
}

void printDirectory(const std::string& dir, const std::vector<cache::DirectoryEntry>& entries,
                    const std::optional<cache::VerifyReport>& report, bool otherKey) {
    fmt::print("cache directory {} ({} entries)\n", dir, entries.size());
    std::vector<cache::TokenMapEntry> records;
    for (const auto& e : entries) records.push_back(e.record);
    printEntries(records);
    if (otherKey) {
        fmt::print(
            "note: {} was written under another cache key (another --state-dir, or another driver "
            "or firmware version); its entries are not usable with this one\n",
            dir);
    }
    if (report) {
        fmt::print("verify: {} good, {} bad\n", report->good, report->bad.size());
        for (const auto& b : report->bad) fmt::print("  {}: {}\n", b.name, b.reason);
    }
}

// `npu cache ACTION DIR`: a cache directory (ShimOptions::cacheDirectory, npu run --cache-dir).
int directoryCommand(const std::string& action, const std::string& dir, const std::string& stateDir,
                     bool json) {
    if (action != "clear") {
        // list and verify only read: a missing directory is an error, never created.
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) {
            return commandFailed("cache " + action,
                                 dir + ": no such cache directory (nothing to " + action + ")");
        }
    }
    auto fwVersion = firmwareVersion();
    if (!fwVersion)
        return commandFailed("cache",
                             "cannot start the firmware to learn its version (part of the cache key)");
    auto key = cache::CacheKey::load(stateDir, driverVersion(), *fwVersion);
    if (!key) return commandFailed("cache", key.error().message);
    cache::CacheDirectoryOptions options;
    options.root = dir;
    options.stateDirectory = stateDir;
    auto directory = cache::CacheDirectory::open(*key, options);
    if (!directory) return commandFailed("cache", directory.error().message);
    if (action == "clear") {
        if (auto c = (*directory)->clear(); !c) return commandFailed("cache clear", c.error().message);
        fmt::print("cleared {}\n", dir);
        return 0;
    }
    auto entries = (*directory)->list();
    if (!entries) return commandFailed("cache", entries.error().message);
    std::optional<cache::VerifyReport> report;
    if (action == "verify") {
        auto r = (*directory)->verify(false);
        if (!r) return commandFailed("cache verify", r.error().message);
        report = std::move(*r);
    }
    const bool otherKey = (*directory)->writtenUnderAnotherKey();
    if (json) {
        printDirectoryJson(dir, *entries, report, otherKey);
    } else {
        printDirectory(dir, *entries, report, otherKey);
    }
    return report && !report->bad.empty() ? 1 : 0;
}

}  // namespace

int cmdCache(const std::string& action, const std::string& dir, const std::string& stateDirArg, bool json) {
    std::string stateDir = stateDirArg;
    if (stateDir.empty()) {
        auto d = cache::defaultStateDirectory();
        if (!d) return commandFailed("cache", d.error().message);
        stateDir = *d;
    }
    return dir.empty() ? tokenMapCommand(action, stateDir, json)
                       : directoryCommand(action, dir, stateDir, json);
}

}  // namespace npu::tools
