// npu bench cache: compile time against loading from the compilation cache, and the cache's
// hashing throughput.
#include <fcntl.h>
#include <fmt/format.h>
#include <sodium.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "bench_networks.h"
#include "commands.h"
#include "npu/base/unique_fd.h"
#include "npu/cache/fd_io.h"
#include "npu/cache/hash.h"
#include "npu/cache/key.h"
#include "npu/shim/npu_device.h"
#include "rpc_timing.h"

namespace npu::tools {
namespace {

// medianUs (rpc_timing.h: after a warm-up) in milliseconds; -1 when a call fails.
double medianMs(int iterations, const std::function<bool()>& once) {
    const double us = medianUs(iterations, once);
    return us < 0 ? -1.0 : us / 1000.0;
}

// The largest network the NPU compiles whole (cacheBenchNetworks() is largest first); the names
// of the larger ones it does not.
std::optional<framework::TestCase> pickNetwork(hal::IDevice& device, std::vector<std::string>* skipped) {
    for (auto build : cacheBenchNetworks()) {
        framework::TestCase tc = build();
        auto supported = device.getSupportedOperations(tc.model);
        if (supported && std::count(supported->begin(), supported->end(), false) == 0) return tc;
        skipped->push_back(tc.name);
    }
    return std::nullopt;
}

struct CacheFigures {
    std::string model;
    std::vector<std::string> skipped;
    size_t layers = 0, weightBytes = 0;
    double compileMs = 0, compileUntunedMs = 0, fromCacheMs = 0;
    shim::NpuCompileInfo tuning;
    double hashMbS = 0, rawMbS = 0;
    size_t modelCacheBytes = 0, dataCacheBytes = 0;
    int iterations = 0;
    double speedup() const { return fromCacheMs > 0 ? compileMs / fromCacheMs : 0.0; }
    double speedupUntuned() const { return fromCacheMs > 0 ? compileUntunedMs / fromCacheMs : 0.0; }
};

// The driver's keyed hash over the cache images, and plain BLAKE2b on the same bytes (MB/s).
void measureHashing(const cache::CacheKey& key, const std::vector<uint8_t>& modelImage,
                    const std::vector<uint8_t>& dataImage, CacheFigures* f) {
    std::vector<uint8_t> joined(modelImage);
    joined.insert(joined.end(), dataImage.begin(), dataImage.end());
    const double mb = static_cast<double>(joined.size()) / 1e6;
    const int hashRounds = std::max(20, static_cast<int>(200 / std::max(mb, 0.01)));
    const cache::ByteSpan m[] = {modelImage};
    const cache::ByteSpan d[] = {dataImage};
    volatile uint8_t sink = 0;
    const double hashMs = medianMs(hashRounds, [&] {
        sink = sink ^ cache::hashCacheBuffers(key, m, d)[0];
        return true;
    });
    const double rawMs = medianMs(hashRounds, [&] {
        uint8_t out[32];
        crypto_generichash(out, sizeof out, joined.data(), joined.size(), key.bytes().data(),
                           key.bytes().size());
        sink = sink ^ out[0];
        return true;
    });
    f->hashMbS = mb / (hashMs / 1e3);
    f->rawMbS = mb / (rawMs / 1e3);
}

void printFigures(const CacheFigures& f, bool json) {
    if (json) {
        nlohmann::json j = {{"model", f.model},
                            {"larger_models_not_compiled", f.skipped},
                            {"layers", f.layers},
                            {"weight_bytes", f.weightBytes},
                            {"compile_ms", f.compileMs},
                            {"from_cache_ms", f.fromCacheMs},
                            {"speedup", f.speedup()},
                            {"compile_untuned_ms", f.compileUntunedMs},
                            {"speedup_vs_untuned_compile", f.speedupUntuned()},
                            {"tuning_trials", f.tuning.tuningTrials},
                            {"greedy_cycles", f.tuning.greedyCycles},
                            {"tuned_cycles", f.tuning.tunedCycles},
                            {"hash_mb_s", f.hashMbS},
                            {"raw_blake2b_mb_s", f.rawMbS},
                            {"model_cache_bytes", f.modelCacheBytes},
                            {"data_cache_bytes", f.dataCacheBytes},
                            {"iterations", f.iterations}};
        fmt::print("{}\n", j.dump(2));
        return;
    }
    fmt::print("network: {}, {} layers, {} bytes of constants\n", f.model, f.layers, f.weightBytes);
    for (const auto& name : f.skipped) fmt::print("  (larger, not compiled by the NPU: {})\n", name);
    fmt::print(
        "  compile_ms         {:>9.3f}\n  from_cache_ms      {:>9.3f}\n  speedup            {:>9.1f} "
        "(target >= 20)\n",
        f.compileMs, f.fromCacheMs, f.speedup());
    fmt::print("  compile_untuned_ms {:>9.3f}  (no autotuning; speedup {:.1f})\n", f.compileUntunedMs,
               f.speedupUntuned());
    fmt::print("  device cycles      {:>9} greedy -> {} tuned ({} trials)\n", f.tuning.greedyCycles,
               f.tuning.tunedCycles, f.tuning.tuningTrials);
    fmt::print(
        "  hash_mb_s          {:>9.1f}\n  raw_blake2b_mb_s   {:>9.1f}  (ratio {:.2f}, target >= 0.9)\n",
        f.hashMbS, f.rawMbS, f.hashMbS / f.rawMbS);
    fmt::print("  cache files        {} + {} bytes\n", f.modelCacheBytes, f.dataCacheBytes);
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
    if (!opened) return commandFailed("bench cache", opened.error().message);
    hal::IDevice& device = *opened->device;
    CacheFigures f;
    f.iterations = iterations;
    auto picked = pickNetwork(device, &f.skipped);
    if (!picked)
        return commandFailed("bench cache", "the NPU does not compile any of the benchmark networks");
    const framework::TestCase& tc = *picked;
    f.model = tc.name;
    f.layers = tc.model.main.operations.size();
    f.weightBytes = tc.model.operandValues.size();
    hal::CacheToken token{};
    token.fill(0x5a);
    base::UniqueFd modelFd(::open((dir + "/model.cache").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    base::UniqueFd dataFd(::open((dir + "/data.cache").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!modelFd || !dataFd) return commandFailed("bench cache", "cannot create cache files in " + dir);
    auto saved =
        device.prepareModel(tc.model, hal::ExecutionPreference::FAST_SINGLE_ANSWER, hal::Priority::MEDIUM,
                            std::nullopt, {modelFd.get()}, {dataFd.get()}, token);
    if (!saved) return commandFailed("bench cache", saved.error().message);

    f.compileMs = medianMs(iterations, [&] { return device.prepareModel(tc.model).has_value(); });
    // What the compile time buys: device cycles with the planner's tilings and with the tuned
    // ones, and the compile time without autotuning (a second device, autotune off).
    if (auto prepared = device.prepareModel(tc.model)) {
        if (auto info = shim::queryCompileInfo(**prepared)) f.tuning = *info;
    }
    DeviceChoice untunedChoice = choice;
    untunedChoice.autotune = false;
    auto untuned = openDevice(untunedChoice);
    if (!untuned) return commandFailed("bench cache", untuned.error().message);
    f.compileUntunedMs =
        medianMs(iterations, [&] { return untuned->device->prepareModel(tc.model).has_value(); });
    f.fromCacheMs = medianMs(iterations, [&] {
        return device.prepareModelFromCache(std::nullopt, {modelFd.get()}, {dataFd.get()}, token).has_value();
    });

    auto modelImage = cache::readWholeFd(modelFd.get());
    auto dataImage = cache::readWholeFd(dataFd.get());
    if (!modelImage || !dataImage) return commandFailed("bench cache", "cannot read back the cache files");
    auto key = cache::CacheKey::load(dir + "/state", "bench", "bench");
    if (!key) return commandFailed("bench cache", key.error().message);
    f.modelCacheBytes = modelImage->size();
    f.dataCacheBytes = dataImage->size();
    measureHashing(*key, *modelImage, *dataImage, &f);
    printFigures(f, json);
    return 0;
}

}  // namespace npu::tools
