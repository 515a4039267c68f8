#pragma once
// One firmware runtime on a simulated NPU, kept for every input of fuzz_blob_loader, with a victim
// model loaded first (firmware_models.h: the ADD of two 1x4 uint8 tensors) whose output is known: after each
// fuzzed blob the victim must still give the same bytes (the firmware and the NPU are not corrupted).
//
// Device DRAM: [0, kFirmwareBytes) the firmware's (blobs, activations); then the host window: the
// victim's constants and I/O in its first MiB, the fuzzed blob's I/O in the kScratchWindowBytes
// after that.
#include <cstdint>
#include <memory>
#include <vector>

#include "blob_validator.h"
#include "npu/fw/runtime.h"
#include "sim_platform.h"

namespace npu::fuzz {

class BlobHarness {
public:
    static constexpr uint64_t kDramBytes = 48ull << 20;
    static constexpr uint64_t kFirmwareBytes = 16ull << 20;  // as tests/unit/firmware/model_fixture.h
    static constexpr uint64_t kScratchWindowBytes = 2ull << 20;

    static BlobHarness& instance();
    fw::Runtime& runtime() { return runtime_; }
    uint8_t* dram() { return dram_.data(); }
    uint64_t scratchWindow() const { return kFirmwareBytes + (1u << 20); }
    fw::BlobLimits limits() const;
    // Runs the victim and compares its output with the one it gave first.
    bool victimStillRuns();

private:
    BlobHarness();
    std::vector<uint8_t> run();

    std::vector<uint8_t> dram_ = std::vector<uint8_t>(kDramBytes, 0);
    std::vector<uint8_t> arenaMemory_ = std::vector<uint8_t>(2u << 20);
    std::vector<uint8_t> scratchMemory_ = std::vector<uint8_t>(24u << 20);
    fw::host::SimPlatform platform_;
    fw::Arena arena_;
    fw::Runtime runtime_;
    uint32_t victim_ = 0;
    std::vector<std::vector<uint8_t>> victimInputs_;
    std::vector<uint8_t> victimOutput_;
};

}  // namespace npu::fuzz
