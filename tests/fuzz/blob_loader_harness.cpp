#include "blob_loader_harness.h"

#include <cstring>

#include "firmware_models.h"
#include "fuzz_target.h"

namespace npu::fuzz {
namespace {

constexpr uint64_t kConstantsAddr = BlobHarness::kFirmwareBytes;
constexpr uint64_t kIoAddr = kConstantsAddr + kFirmwareModelConstantBytes;

}  // namespace

BlobHarness& BlobHarness::instance() {
    static BlobHarness* h = new BlobHarness;
    return *h;
}

BlobHarness::BlobHarness()
    : platform_(sim::HwConfig{}, dram_.data(), kDramBytes),
      arena_(arenaMemory_.data(), arenaMemory_.size()),
      runtime_(platform_, arena_, fw::RuntimeConfig{kFirmwareBytes, 1000, false}) {
    require(runtime_.init().ok());
    FirmwareModel model = addModel(dram_.data(), kConstantsAddr);
    fw::Arena scratch(scratchMemory_.data(), scratchMemory_.size());
    fw::BlobInfo info;
    require(runtime_.prepare(model.desc(), scratch, &info, false).ok());
    victim_ = info.handle;
    victimInputs_ = model.inputData;
    victimOutput_ = run();
    require(!victimOutput_.empty());
}

// The victim's two 4-byte inputs at kIoAddr, its output after them.
std::vector<uint8_t> BlobHarness::run() {
    fw::IoArg inputs[2], output;
    for (uint32_t i = 0; i < 2; ++i) {
        inputs[i].addr = kIoAddr + 64 * i;
        inputs[i].length = 4;
        std::memcpy(dram_.data() + inputs[i].addr, victimInputs_[i].data(), 4);
    }
    output.addr = kIoAddr + 128;
    output.length = 4;
    std::memset(dram_.data() + output.addr, 0, 4);
    fw::ExecResult result;
    if (!runtime_.execute(victim_, inputs, 2, &output, 1, &result).ok()) return {};
    return std::vector<uint8_t>(dram_.data() + output.addr, dram_.data() + output.addr + 4);
}

bool BlobHarness::victimStillRuns() {
    return run() == victimOutput_;
}

fw::BlobLimits BlobHarness::limits() const {
    const fw::HardwareInfo hw = runtime_.hardwareInfo();
    return {hw.arrayRows, hw.arrayCols, uint32_t(hw.scratchpadBytes / 1024),
            uint32_t(hw.accumulatorBytes / 1024), kFirmwareBytes};
}

}  // namespace npu::fuzz
