#pragma once
// The driver with compilation caching on, kept for every input of fuzz_compilation_cache: the
// firmware on loopback, the NPU device with a private state directory, and the cache of that
// same state directory (shim/src/compilation_cache.h), with which the target signs fuzzed files
// (records their keyed hash under the token) so that they pass the integrity check and reach
// the model-cache decoder and the firmware's blob loader. A victim model, prepared normally at
// start, must give the same bytes after every input.
#include <memory>
#include <string>
#include <vector>

#include "compilation_cache.h"
#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/device.h"

namespace npu::fuzz {

class CacheHarness {
public:
    static CacheHarness& instance();
    hal::IDevice& device() { return *device_; }
    shim::CompilationCache& signer() { return *signer_; }
    const framework::TestCase& model() const { return model_; }
    // Runs `prepared` on the model's request; the outputs or an error.
    Result<std::vector<std::vector<uint8_t>>> run(hal::IPreparedModel& prepared);
    bool victimStillRuns();
    // The cache files the driver writes for model() (for seeds).
    shim::CacheImages savedImages(const hal::CacheToken& token);

private:
    CacheHarness();
    std::string stateDirectory_;
    std::unique_ptr<fw::host::FirmwareHost> firmware_;
    std::shared_ptr<hal::IDevice> device_;
    std::unique_ptr<shim::CompilationCache> signer_;
    framework::TestCase model_;
    std::shared_ptr<hal::IPreparedModel> victim_;
    std::vector<std::vector<uint8_t>> victimOutput_;
};

// A memfd holding `bytes` (the caller closes it).
int memoryFile(const std::vector<uint8_t>& bytes);
std::vector<uint8_t> readMemoryFile(int fd);

}  // namespace npu::fuzz
