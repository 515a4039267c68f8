#include "cache_harness.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "driver_model.h"
#include "fuzz_target.h"
#include "npu/cache/fd_io.h"
#include "npu/shim/npu_device.h"

namespace npu::fuzz {

int memoryFile(const std::vector<uint8_t>& bytes) {
    const int fd = ::memfd_create("fuzz-cache", MFD_CLOEXEC);
    require(fd >= 0);
    require(cache::writeWholeFd(fd, bytes).has_value());
    return fd;
}

std::vector<uint8_t> readMemoryFile(int fd) {
    auto bytes = cache::readWholeFd(fd);
    require(bytes.has_value());
    return std::move(*bytes);
}

namespace {
std::string& stateDirectoryToRemove() {
    static std::string path;
    return path;
}
}  // namespace

CacheHarness& CacheHarness::instance() {
    static CacheHarness* h = new CacheHarness;
    return *h;
}

CacheHarness::CacheHarness() {
    // A private state directory on tmpfs when there is one: signing fsyncs the token map.
    const std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = base + "/npu-fuzz-cache-XXXXXX";
    require(::mkdtemp(tmpl.data()) != nullptr);
    stateDirectory_ = tmpl;
    stateDirectoryToRemove() = tmpl;
    std::atexit([] {
        std::error_code ignored;
        std::filesystem::remove_all(stateDirectoryToRemove(), ignored);
    });
    auto loop = fw::host::startLoopbackFirmware();
    require(loop.has_value());
    firmware_ = std::move(loop->firmware);
    shim::ShimOptions options;
    options.autotune = false;
    options.cacheStateDirectory = stateDirectory_;
    auto device = shim::createNpuDevice(std::move(loop->hostEnd), options);
    require(device.has_value());
    device_ = *device;
    auto info = shim::queryNpuInfo(*device_);
    require(info.has_value());
    auto signer = shim::CompilationCache::open(
        stateDirectory_, "", std::string("npu-shim ") + shim::kShimVersion, info->firmwareVersion);
    require(signer.has_value());
    signer_ = std::move(*signer);
    static const uint8_t choices[] = {0, 0, 5, 4, 2, 60, 9, 3, 1, 4, 1, 0, 0, 1, 2, 1, 0, 0, 1, 1, 2};
    InputReader in(choices, sizeof choices);
    model_ = buildDriverModel(in).testCase;
    auto victim = device_->prepareModel(model_.model);
    require(victim.has_value());
    victim_ = *victim;
    auto out = run(*victim_);
    require(out.has_value());
    victimOutput_ = std::move(*out);
}

Result<std::vector<std::vector<uint8_t>>> CacheHarness::run(hal::IPreparedModel& prepared) {
    auto request = NPU_TRY(framework::makeRequest(model_));
    NPU_TRY(
        prepared.executeSynchronously(request.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt));
    return framework::readOutputs(request);
}

bool CacheHarness::victimStillRuns() {
    auto out = run(*victim_);
    return out.has_value() && *out == victimOutput_;
}

shim::CacheImages CacheHarness::savedImages(const hal::CacheToken& token) {
    const int modelFd = memoryFile({}), dataFd = memoryFile({});
    auto prepared = device_->prepareModel(model_.model, hal::ExecutionPreference::FAST_SINGLE_ANSWER,
                                          hal::Priority::MEDIUM, std::nullopt, {modelFd}, {dataFd}, token);
    require(prepared.has_value());
    shim::CacheImages images{readMemoryFile(modelFd), readMemoryFile(dataFd)};
    ::close(modelFd);
    ::close(dataFd);
    return images;
}

}  // namespace npu::fuzz
