// Fuzz target: hardware-config files into hwsim's config parser (loadHwConfig, parseHwConfig),
// and every configuration that parses into the simulated NPU and the firmware. The input is the
// file's text. Findings (traps):
//  - the file and the same text parse differently, or a refusal has no message;
//  - a configuration that parses does not validate, or does not survive toJson -> parse;
//  - the firmware on an NPU of that configuration reads back other values from the HW_CONFIG
//    registers (the register map cannot describe it);
//  - a model it claims fails to run, or gives other bytes than on the default NPU (results must
//    not depend on the array, scratchpad or queue sizes: only cycles do).
// Configurations whose memories exceed 64 MiB are parsed and checked but not instantiated (the
// simulator allocates its SRAMs: up to 2 GiB for a legal config).
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "firmware_models.h"
#include "fuzz_target.h"
#include "npu/hwsim/config.h"
#include "sim_platform.h"

namespace {

using namespace npu;

constexpr uint64_t kDramBytes = 8ull << 20, kFirmwareBytes = 4ull << 20;
constexpr uint64_t kConstantsAddr = kFirmwareBytes, kIoAddr = kFirmwareBytes + (1u << 20);
constexpr uint64_t kMaxInstantiatedSramBytes = 64ull << 20;

struct Outcome {
    bool claimed = false;
    fw::FwStatus status;
    std::vector<std::vector<uint8_t>> outputs;
};

// Each model on an NPU of `hw`; requires that the registers describe `hw`.
std::vector<Outcome> runOn(const sim::HwConfig& hw) {
    static std::vector<uint8_t> dram(kDramBytes), arenaMemory(2u << 20), scratchMemory(8u << 20);
    std::memset(dram.data(), 0, dram.size());
    fw::host::SimPlatform platform(hw, dram.data(), kDramBytes);
    fw::Arena arena(arenaMemory.data(), arenaMemory.size());
    fw::Runtime runtime(platform, arena, fw::RuntimeConfig{kFirmwareBytes, 1000, false});
    fuzz::require(runtime.init().ok());
    const fw::HardwareInfo info = runtime.hardwareInfo();
    fuzz::require(info.arrayRows == hw.arrayRows && info.arrayCols == hw.arrayCols &&
                  info.scratchpadBytes == hw.scratchpadBytes &&
                  info.accumulatorBytes == hw.accumulatorBytes && info.vectorLanes == hw.vectorLanes &&
                  info.clockHz == uint64_t{hw.clockMhz} * 1000000u);
    std::vector<Outcome> outcomes;
    for (auto make : {fuzz::addModel, fuzz::convModel}) {
        fuzz::FirmwareModel model = make(dram.data(), kConstantsAddr);
        Outcome o;
        bool supported[1] = {false};
        fuzz::require(runtime.supportedOperations(model.desc(), supported).ok());
        o.claimed = supported[0];
        fw::Arena scratch(scratchMemory.data(), scratchMemory.size());
        if (o.claimed)
            o.status = fuzz::prepareAndRun(runtime, scratch, dram.data(), kIoAddr, model, &o.outputs);
        outcomes.push_back(std::move(o));
    }
    return outcomes;
}

bool noFaults(const sim::FaultConfig& f) {
    return f.hangAtCommand == 0 && f.dmaErrorAtTransfer == 0 && f.sramFlipAfterCommand == 0;
}

// The file as a user gives it: a memfd seen through /proc/self/fd.
sim::Result<sim::HwConfig> loadFromFile(const std::string& text) {
    const int fd = ::memfd_create("fuzz-hw-config", MFD_CLOEXEC);
    fuzz::require(fd >= 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size()));
    auto config = sim::loadHwConfig("/proc/self/fd/" + std::to_string(fd));
    ::close(fd);
    return config;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > sim::kMaxHwConfigBytes) return 0;  // refused by size before parsing (tests/unit/hwsim)
    const std::string text(reinterpret_cast<const char*>(data), size);
    auto parsed = sim::parseHwConfig(text, "fuzz input");
    auto loaded = loadFromFile(text);
    fuzz::require(parsed.has_value() == loaded.has_value());
    if (!parsed) {
        fuzz::require(!parsed.error().empty());
        return 0;
    }
    const sim::HwConfig& c = *parsed;
    fuzz::require(sim::validate(c).has_value());
    const std::string json = sim::toJson(c);
    fuzz::require(sim::toJson(*loaded) == json);
    auto again = sim::parseHwConfig(json, "toJson");
    fuzz::require(again.has_value() && sim::toJson(*again) == json);
    if (uint64_t{c.scratchpadBytes} + c.accumulatorBytes > kMaxInstantiatedSramBytes) return 0;
    static const std::vector<Outcome> reference = runOn(sim::HwConfig{});
    const std::vector<Outcome> outcomes = runOn(c);
    for (size_t m = 0; m < outcomes.size(); ++m) {
        const Outcome& o = outcomes[m];
        if (!o.claimed) continue;
        fuzz::require(o.status.ok() || o.status.message[0]);
        if (!noFaults(c.faults)) continue;  // an injected fault may fail the run, never crash it
        fuzz::require(o.status.ok());
        fuzz::require(reference[m].claimed && o.outputs == reference[m].outputs);
    }
    return 0;
}
