// npu cache list|verify|clear [DIR], and npu bench cache.
#include <fcntl.h>
#include <fmt/format.h>
#include <sodium.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "builtin_networks.h"
#include "commands.h"
#include "model_builder.h"
#include "npu/cache/cache_directory.h"
#include "npu/cache/fd_io.h"
#include "npu/cache/hash.h"
#include "npu/cache/key.h"
#include "npu/cache/token_map.h"
#include "npu/framework/cts_loader.h"
#include "npu/shim/npu_device.h"

namespace npu::tools {
namespace {

using Clock = std::chrono::steady_clock;

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

int fail(const std::string& what, const std::string& message) {
    fmt::print(stderr, "npu {}: {}\n", what, message);
    return 1;
}

}  // namespace

int cmdCache(const std::string& action, const std::string& dir, const std::string& stateDirArg, bool json) {
    std::string stateDir = stateDirArg;
    if (stateDir.empty()) {
        auto d = cache::defaultStateDirectory();
        if (!d) return fail("cache", d.error().message);
        stateDir = *d;
    }
    if (dir.empty()) {
        // The HAL-path token map.
        cache::TokenMapOptions options;
        options.stateDirectory = stateDir;
        auto map = cache::TokenMap::open(options);
        if (!map) return fail("cache", map.error().message);
        if (action == "clear") {
            if (auto c = (*map)->clear(); !c) return fail("cache clear", c.error().message);
            fmt::print("cleared the token map {}\n", (*map)->path());
            return 0;
        }
        auto entries = (*map)->entries();
        if (!entries) return fail("cache", entries.error().message);
        if (json) {
            nlohmann::json list = nlohmann::json::array();
            for (const auto& e : *entries) list.push_back(entryJson(e));
            fmt::print("{}\n",
                       nlohmann::json{
                           {"map", (*map)->path()}, {"entries", list}, {"recoveries", (*map)->recoveries()}}
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
    if (action != "clear") {
        // list and verify only read: a missing directory is an error, never created.
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) {
            return fail("cache " + action, dir + ": no such cache directory (nothing to " + action + ")");
        }
    }
    auto fwVersion = firmwareVersion();
    if (!fwVersion)
        return fail("cache", "cannot start the firmware to learn its version (part of the cache key)");
    auto key = cache::CacheKey::load(stateDir, driverVersion(), *fwVersion);
    if (!key) return fail("cache", key.error().message);
    cache::CacheDirectoryOptions options;
    options.root = dir;
    options.stateDirectory = stateDir;
    auto directory = cache::CacheDirectory::open(*key, options);
    if (!directory) return fail("cache", directory.error().message);
    if (action == "clear") {
        if (auto c = (*directory)->clear(); !c) return fail("cache clear", c.error().message);
        fmt::print("cleared {}\n", dir);
        return 0;
    }
    auto entries = (*directory)->list();
    if (!entries) return fail("cache", entries.error().message);
    std::optional<cache::VerifyReport> report;
    if (action == "verify") {
        auto r = (*directory)->verify(false);
        if (!r) return fail("cache verify", r.error().message);
        report = std::move(*r);
    }
    if (json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& e : *entries) list.push_back(entryJson(e.record, e.name));
        nlohmann::json j = {{"directory", dir}, {"entries", list}};
        if (report) {
            nlohmann::json bad = nlohmann::json::array();
            for (const auto& b : report->bad) bad.push_back({{"entry", b.name}, {"reason", b.reason}});
            j["verify"] = {{"good", report->good}, {"bad", bad}};
            j["written_under_another_key"] = (*directory)->writtenUnderAnotherKey();
        }
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("cache directory {} ({} entries)\n", dir, entries->size());
        std::vector<cache::TokenMapEntry> records;
        for (const auto& e : *entries) records.push_back(e.record);
        printEntries(records);
        if ((*directory)->writtenUnderAnotherKey()) {
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
    return report && !report->bad.empty() ? 1 : 0;
}

namespace {

// MobileNet-v2 at 224x224 without its pooling and classifier (builtin_networks.h): the stem,
// the 17 inverted-residual blocks and the final 1x1 convolution to 1280 channels: 62 operations,
// 2.26 MB of int8 weights.
framework::TestCase mobilenetV2Network() {
    return mobilenetV2(224, /*classifier=*/false).testCase;
}

// A ResNet-shaped plain CNN at 224x224 from CONV_2D, ADD and FULLY_CONNECTED only: 3x3
// convolutions down to 14x14x256 with a residual pair per stage, then a classifier layer.
framework::TestCase resnetShapedNetwork() {
    QuantNetBuilder n({1, 224, 224, 3}, 12345);
    QuantTensor x = n.conv(n.input(), 32, 3, 2, Activation::kRelu6, "stem");
    for (uint32_t out : {64u, 128u, 256u}) {
        const std::string s = "stage" + std::to_string(out) + "/";
        x = n.conv(x, out, 3, 2, Activation::kRelu6, s + "down");
        const QuantTensor skip = x;
        x = n.conv(x, out, 3, 1, Activation::kRelu6, s + "conv_a");
        x = n.conv(x, out, 3, 1, Activation::kNone, s + "conv_b");
        x = n.add(x, skip, s + "add");
    }
    x = n.conv(x, 256, 3, 2, Activation::kRelu6, "last");
    x = n.fullyConnected(x, 128, 4.0f, "fc");
    return n.finish("bench_resnet_shaped_224", {x.operand}).testCase;
}

// The first network of the benchmark: 5 CONV_2D, 4 FULLY_CONNECTED and an ADD on a 32x32x16
// input, about 1.3 MB of int8 weights (the FC 4096->256 alone is 1 MiB), mostly weights and little
// compute.
framework::TestCase smallNetwork() {
    using hal::OperandType;
    using hal::OperationType;
    const auto q8 = OperandType::TENSOR_QUANT8_ASYMM;
    ModelBuilder b;
    uint32_t state = 12345;
    auto byte = [&] {
        state = state * 1664525u + 1013904223u;
        return static_cast<uint8_t>(state >> 24);
    };
    float inScale = 0.5f;
    uint32_t x = b.addInput(q8, {1, 32, 32, 16}, inScale, 128);
    uint32_t h = 32, c = 16;
    struct Conv {
        uint32_t out, stride;
    };
    for (Conv conv : {Conv{32, 1}, Conv{64, 2}, Conv{64, 2}, Conv{64, 1}, Conv{64, 1}}) {
        std::vector<uint8_t> w(conv.out * 3 * 3 * c);
        for (auto& v : w) v = byte();
        std::vector<int32_t> bias(conv.out, 100);
        const float wScale = 0.01f, outScale = 0.2f;
        uint32_t f = b.addConstant<uint8_t>(q8, {conv.out, 3, 3, c}, w, wScale, 128);
        uint32_t bb =
            b.addConstant<int32_t>(OperandType::TENSOR_INT32, {conv.out}, bias, inScale * wScale, 0);
        h = (h + conv.stride - 1) / conv.stride;
        uint32_t y = b.addTemporary(q8, {1, h, h, conv.out}, outScale, 0);
        b.addOperation(OperationType::CONV_2D,
                       {x, f, bb, b.addInt32Scalar(1), b.addInt32Scalar(static_cast<int32_t>(conv.stride)),
                        b.addInt32Scalar(static_cast<int32_t>(conv.stride)), b.addInt32Scalar(1)},
                       {y});
        x = y;
        c = conv.out;
        inScale = outScale;
    }
    uint32_t features = h * h * c;  // 8*8*64 = 4096
    for (uint32_t units : {256u, 256u, 128u, 64u}) {
        std::vector<uint8_t> w(units * features);
        for (auto& v : w) v = byte();
        std::vector<int32_t> bias(units, 50);
        const float wScale = 0.002f, outScale = 0.3f;
        uint32_t f = b.addConstant<uint8_t>(q8, {units, features}, w, wScale, 128);
        uint32_t bb = b.addConstant<int32_t>(OperandType::TENSOR_INT32, {units}, bias, inScale * wScale, 0);
        uint32_t y = b.addTemporary(q8, {1, units}, outScale, 128);
        b.addOperation(OperationType::FULLY_CONNECTED, {x, f, bb, b.addInt32Scalar(1)}, {y});
        x = y;
        features = units;
        inScale = outScale;
    }
    std::vector<uint8_t> prior(features, 130);
    uint32_t p = b.addConstant<uint8_t>(q8, {1, features}, prior, 0.1f, 128);
    uint32_t out = b.addOutput(q8, {1, features}, 0.5f, 128);
    b.addOperation(OperationType::ADD, {x, p, b.addInt32Scalar(0)}, {out});
    framework::TestCase tc;
    tc.name = "bench_cache_network";
    tc.model = b.build();
    tc.inputs = {std::vector<uint8_t>(32 * 32 * 16)};
    for (auto& v : tc.inputs[0]) v = byte();
    tc.expectedOutputs = {std::vector<uint8_t>(features)};
    tc.expectedOutputDims = {{1, features}};
    tc.outputIgnored = {false};
    return tc;
}

double medianMs(int iterations, const std::function<bool()>& once) {
    std::vector<double> ms;
    for (int i = 0; i < iterations; ++i) {
        auto t0 = Clock::now();
        if (!once()) return -1.0;
        ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int cmdBenchCache(bool json, int iterations, const std::string& hwConfigPath) {
    const std::string dir =
        std::filesystem::temp_directory_path() / fmt::format("npu-bench-cache-{}", getpid());
    std::filesystem::create_directories(dir);
    struct Cleanup {
        std::string d;
        ~Cleanup() { std::filesystem::remove_all(d); }
    } cleanup{dir};
    DeviceChoice choice;
    choice.cacheStateDir = dir + "/state";
    choice.hwConfigPath = hwConfigPath;
    auto opened = openDevice(choice);
    if (!opened) return fail("bench cache", opened.error().message);
    hal::IDevice& device = *opened->device;
    // The largest network the NPU compiles: the first of these it claims whole.
    std::vector<std::string> skipped;
    framework::TestCase tc;
    bool found = false;
    for (auto build : {mobilenetV2Network, resnetShapedNetwork, smallNetwork}) {
        tc = build();
        auto supported = device.getSupportedOperations(tc.model);
        if (supported && std::count(supported->begin(), supported->end(), false) == 0) {
            found = true;
            break;
        }
        skipped.push_back(tc.name);
    }
    if (!found) return fail("bench cache", "the NPU does not compile any of the benchmark networks");
    size_t weightBytes = tc.model.operandValues.size();
    hal::CacheToken token{};
    token.fill(0x5a);
    int modelFd = ::open((dir + "/model.cache").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int dataFd = ::open((dir + "/data.cache").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (modelFd < 0 || dataFd < 0) return fail("bench cache", "cannot create cache files in " + dir);
    auto saved = device.prepareModel(tc.model, hal::ExecutionPreference::FAST_SINGLE_ANSWER,
                                     hal::Priority::MEDIUM, std::nullopt, {modelFd}, {dataFd}, token);
    if (!saved) return fail("bench cache", saved.error().message);

    const double compileMs = medianMs(iterations, [&] { return device.prepareModel(tc.model).has_value(); });
    // What the compile time buys: device cycles with the planner's tilings and with the tuned
    // ones, and the compile time without autotuning (a second device, autotune off).
    shim::NpuCompileInfo tuning;
    if (auto prepared = device.prepareModel(tc.model)) {
        if (auto info = shim::queryCompileInfo(**prepared)) tuning = *info;
    }
    DeviceChoice untunedChoice = choice;
    untunedChoice.autotune = false;
    auto untuned = openDevice(untunedChoice);
    if (!untuned) return fail("bench cache", untuned.error().message);
    const double compileUntunedMs =
        medianMs(iterations, [&] { return untuned->device->prepareModel(tc.model).has_value(); });
    const double fromCacheMs = medianMs(iterations, [&] {
        return device.prepareModelFromCache(std::nullopt, {modelFd}, {dataFd}, token).has_value();
    });

    // Hashing: the driver's keyed hash over the cache images, and plain BLAKE2b on the same bytes.
    auto modelImage = cache::readWholeFd(modelFd);
    auto dataImage = cache::readWholeFd(dataFd);
    ::close(modelFd);
    ::close(dataFd);
    if (!modelImage || !dataImage) return fail("bench cache", "cannot read back the cache files");
    auto key = cache::CacheKey::load(dir + "/state", "bench", "bench");
    if (!key) return fail("bench cache", key.error().message);
    std::vector<uint8_t> joined(*modelImage);
    joined.insert(joined.end(), dataImage->begin(), dataImage->end());
    const double mb = static_cast<double>(joined.size()) / 1e6;
    const int hashRounds = std::max(20, static_cast<int>(200 / std::max(mb, 0.01)));
    const cache::ByteSpan m[] = {*modelImage};
    const cache::ByteSpan d[] = {*dataImage};
    volatile uint8_t sink = 0;
    const double hashMs = medianMs(hashRounds, [&] {
        sink = sink ^ cache::hashCacheBuffers(*key, m, d)[0];
        return true;
    });
    const double rawMs = medianMs(hashRounds, [&] {
        uint8_t out[32];
        crypto_generichash(out, sizeof out, joined.data(), joined.size(), key->bytes().data(),
                           key->bytes().size());
        sink = sink ^ out[0];
        return true;
    });
    const double hashMbS = mb / (hashMs / 1e3), rawMbS = mb / (rawMs / 1e3);
    const double speedup = fromCacheMs > 0 ? compileMs / fromCacheMs : 0.0;
    const double speedupUntuned = fromCacheMs > 0 ? compileUntunedMs / fromCacheMs : 0.0;
    if (json) {
        nlohmann::json j = {{"model", tc.name},
                            {"larger_models_not_compiled", skipped},
                            {"layers", tc.model.main.operations.size()},
                            {"weight_bytes", weightBytes},
                            {"compile_ms", compileMs},
                            {"from_cache_ms", fromCacheMs},
                            {"speedup", speedup},
                            {"compile_untuned_ms", compileUntunedMs},
                            {"speedup_vs_untuned_compile", speedupUntuned},
                            {"tuning_trials", tuning.tuningTrials},
                            {"greedy_cycles", tuning.greedyCycles},
                            {"tuned_cycles", tuning.tunedCycles},
                            {"hash_mb_s", hashMbS},
                            {"raw_blake2b_mb_s", rawMbS},
                            {"model_cache_bytes", modelImage->size()},
                            {"data_cache_bytes", dataImage->size()},
                            {"iterations", iterations}};
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("network: {}, {} layers, {} bytes of constants\n", tc.name,
                   tc.model.main.operations.size(), weightBytes);
        for (const auto& name : skipped) fmt::print("  (larger, not compiled by the NPU: {})\n", name);
        fmt::print(
            "  compile_ms         {:>9.3f}\n  from_cache_ms      {:>9.3f}\n  speedup            {:>9.1f} "
            "(target >= 20)\n",
            compileMs, fromCacheMs, speedup);
        fmt::print("  compile_untuned_ms {:>9.3f}  (no autotuning; speedup {:.1f})\n", compileUntunedMs,
                   speedupUntuned);
        fmt::print("  device cycles      {:>9} greedy -> {} tuned ({} trials)\n", tuning.greedyCycles,
                   tuning.tunedCycles, tuning.tuningTrials);
        fmt::print(
            "  hash_mb_s          {:>9.1f}\n  raw_blake2b_mb_s   {:>9.1f}  (ratio {:.2f}, target >= 0.9)\n",
            hashMbS, rawMbS, hashMbS / rawMbS);
        fmt::print("  cache files        {} + {} bytes\n", modelImage->size(), dataImage->size());
    }
    return 0;
}

}  // namespace npu::tools
