#include "npu/hwsim/device.h"

#include <optional>
#include <utility>

#include "command_processor.h"
#include "int8_kernels.h"

namespace npu::sim {

namespace {

uint32_t lo32(uint64_t v) {
    return static_cast<uint32_t>(v);
}
uint32_t hi32(uint64_t v) {
    return static_cast<uint32_t>(v >> 32);
}
uint64_t setLo(uint64_t v, uint32_t lo) {
    return (v & ~uint64_t{0xFFFFFFFF}) | lo;
}
uint64_t setHi(uint64_t v, uint32_t hi) {
    return (v & uint64_t{0xFFFFFFFF}) | (uint64_t{hi} << 32);
}

}  // namespace

const char* hostKernelName() {
    return kernels::gemmKernelName();
}
bool selectHostKernel(std::string_view name) {
    return kernels::selectGemmKernel(name);
}

Device::Device(const HwConfig& config, uint8_t* dram, uint64_t dramSize)
    : state_(std::make_unique<DeviceState>()) {
    DeviceState& s = *state_;
    if (auto ok = validate(config); !ok) configError_ = ok.error();
    s.config = configError_.empty() ? config : HwConfig{};
    s.dram = dram;
    s.dramSize = dram != nullptr ? dramSize : 0;
    s.scratchpad.assign(s.config.scratchpadBytes, 0);
    s.accumulator.assign(s.config.accumulatorBytes / 4, 0);
    s.faults = s.config.faults;
    processor_ = std::make_unique<CommandProcessor>(s);
}

Device::~Device() = default;

Result<std::unique_ptr<Device>> Device::create(const HwConfig& config, uint8_t* dram, uint64_t dramSize) {
    if (auto ok = validate(config); !ok) return std::unexpected("hwsim: invalid config: " + ok.error());
    return std::make_unique<Device>(config, dram, dramSize);
}

const HwConfig& Device::config() const {
    return state_->config;
}
uint64_t Device::cycles() const {
    return processor_->now();
}
UnitStats Device::unitStats() const {
    return processor_->stats();
}
void Device::setHostProfiling(bool on) {
    processor_->setHostProfiling(on);
}
uint8_t* Device::scratchpad() {
    return state_->scratchpad.data();
}
int32_t* Device::accumulator() {
    return state_->accumulator.data();
}

void Device::pollDelayedIrq() const {
    DeviceState& s = *state_;
    if (s.delayedIrq == 0) return;
    if (s.irqPollsLeft > 0) --s.irqPollsLeft;
    if (s.irqPollsLeft == 0) {
        s.irqStatus |= s.delayedIrq;
        s.delayedIrq = 0;
    }
}

void Device::injectFaults(const FaultConfig& faults) {
    state_->faults = faults;
    state_->commandsSinceReset = 0;
    state_->dmaSinceReset = 0;
}

bool Device::irqPending() const {
    pollDelayedIrq();
    const DeviceState& s = *state_;
    return (s.ctrl & isa::kCtrlIrqEnable) != 0 && (s.irqStatus & s.irqMask) != 0;
}

namespace {

// ID, VERSION and HW_CONFIG0..5: what the NPU is (read-only, from its configuration).
std::optional<uint32_t> readIdentityReg(const HwConfig& c, uint32_t offset) {
    switch (offset) {
        case isa::kRegId:
            return isa::kNpuId;
        case isa::kRegVersion:
            return isa::kVersion;
        case isa::kRegHwConfig0:
            return (c.arrayRows << isa::kHwConfig0RowsShift) | (c.arrayCols << isa::kHwConfig0ColsShift);
        case isa::kRegHwConfig1:
            return (c.vectorLanes << isa::kHwConfig1LanesShift) |
                   (static_cast<uint32_t>(c.dataflow) << isa::kHwConfig1DataflowShift) |
                   (c.fp16Mac ? isa::kHwConfig1Fp16Mac : 0u) |
                   (c.tokenQueueDepth << isa::kHwConfig1QueueDepthShift);
        case isa::kRegHwConfig2:
            return c.scratchpadBytes / 1024;
        case isa::kRegHwConfig3:
            return c.accumulatorBytes / 1024;
        case isa::kRegHwConfig4:
            return c.clockMhz;
        case isa::kRegHwConfig5:
            return (c.dramLatencyCycles << isa::kHwConfig5LatencyShift) |
                   (c.dmaBytesPerCycle << isa::kHwConfig5DmaBytesShift);
        default:
            return std::nullopt;
    }
}

// The PMU's 64-bit counters: reading a counter's LO half latches its HI half (one consistent
// 64-bit read); every HI register reads the latched half.
std::optional<uint32_t> readPmuCounterReg(Pmu& pmu, uint32_t offset) {
    const std::pair<uint32_t, uint64_t> counters[] = {
        {isa::kRegPmuCyclesLo, pmu.cycles},
        {isa::kRegPmuMacsLo, pmu.macs},
        {isa::kRegPmuDmaReadLo, pmu.dmaReadBytes},
        {isa::kRegPmuDmaWriteLo, pmu.dmaWriteBytes},
        {isa::kRegPmuStallLo, pmu.stallCycles},
        {isa::kRegPmuCommandsLo, pmu.commands},
        {isa::kRegPmuStallDmaLo, pmu.stallDmaCycles},
        {isa::kRegPmuLoadActiveLo, pmu.loadActive},
        {isa::kRegPmuComputeActiveLo, pmu.computeActive},
        {isa::kRegPmuStoreActiveLo, pmu.storeActive},
        {isa::kRegPmuDmaTransactionsLo, pmu.dmaTransactions},
    };
    const uint32_t highs[] = {
        isa::kRegPmuCyclesHi,      isa::kRegPmuMacsHi,           isa::kRegPmuDmaReadHi,
        isa::kRegPmuDmaWriteHi,    isa::kRegPmuStallHi,          isa::kRegPmuCommandsHi,
        isa::kRegPmuStallDmaHi,    isa::kRegPmuLoadActiveHi,     isa::kRegPmuComputeActiveHi,
        isa::kRegPmuStoreActiveHi, isa::kRegPmuDmaTransactionsHi};
    for (const auto& [lo, value] : counters) {
        if (offset == lo) {
            pmu.latchedHi = hi32(value);
            return lo32(value);
        }
    }
    for (uint32_t hi : highs) {
        if (offset == hi) return pmu.latchedHi;
    }
    return std::nullopt;
}

}  // namespace

uint32_t Device::readReg(uint32_t offset) {
    DeviceState& s = *state_;
    if (offset >= isa::kRegRegionBase && offset < isa::kRegRegionBase + 8 * isa::kRegionCount) {
        const uint32_t i = (offset - isa::kRegRegionBase) / 8;
        return (offset % 8) == 0 ? lo32(s.regionBase[i]) : hi32(s.regionBase[i]);
    }
    if (auto v = readIdentityReg(s.config, offset)) return *v;
    if (auto v = readPmuCounterReg(s.pmu, offset)) return *v;
    switch (offset) {
        case isa::kRegCtrl:
            return s.ctrl;
        case isa::kRegStatus:
            return s.status;
        case isa::kRegCmdqBaseLo:
            return lo32(s.cmdqBase);
        case isa::kRegCmdqBaseHi:
            return hi32(s.cmdqBase);
        case isa::kRegCmdqSize:
            return s.cmdqSize;
        case isa::kRegCmdqHead:
            return s.cmdqHead;
        case isa::kRegCmdqTail:
            return s.cmdqTail;
        case isa::kRegIrqStatus:
            pollDelayedIrq();
            return s.irqStatus;
        case isa::kRegIrqMask:
            return s.irqMask;
        case isa::kRegErrorCode:
            return s.errorCode;
        case isa::kRegErrorOffset:
            return s.errorOffset;
        case isa::kRegPmuCtrl:
            return s.pmu.ctrl;
        default:
            return 0;  // unmapped and write-only registers read as zero
    }
}

void Device::writeReg(uint32_t offset, uint32_t value) {
    DeviceState& s = *state_;
    if (offset >= isa::kRegRegionBase && offset < isa::kRegRegionBase + 8 * isa::kRegionCount) {
        const uint32_t i = (offset - isa::kRegRegionBase) / 8;
        s.regionBase[i] = (offset % 8) == 0 ? setLo(s.regionBase[i], value) : setHi(s.regionBase[i], value);
        return;
    }
    switch (offset) {
        case isa::kRegCtrl:
            s.ctrl = value & (isa::kCtrlEnable | isa::kCtrlIrqEnable);
            if ((value & isa::kCtrlSoftReset) != 0) {
                s.status = isa::kStatusIdle;
                s.cmdqHead = s.cmdqTail = 0;
                s.irqStatus = 0;
                s.errorCode = s.errorOffset = 0;
                s.pmu = Pmu{};
                s.hung = false;
                s.commandsSinceReset = s.dmaSinceReset = 0;
                s.delayedIrq = s.irqPollsLeft = 0;
                processor_->reset();
            }
            return;
        case isa::kRegCmdqBaseLo:
            s.cmdqBase = setLo(s.cmdqBase, value);
            return;
        case isa::kRegCmdqBaseHi:
            s.cmdqBase = setHi(s.cmdqBase, value);
            return;
        case isa::kRegCmdqSize:
            s.cmdqSize = value;
            s.cmdqHead = s.cmdqTail = 0;
            return;
        case isa::kRegCmdqTail:
            s.cmdqTail = value;
            return;
        case isa::kRegDoorbell: {
            processor_->countDoorbell();
            const uint32_t before = s.irqStatus;
            processor_->process();
            const uint32_t completion = (s.irqStatus & ~before) & (isa::kIrqDone | isa::kIrqError);
            if (s.faults.irqDelayPolls != 0 && completion != 0) {
                // The injected late interrupt: DONE / ERROR appear only after N polls.
                s.irqStatus &= ~completion;
                s.delayedIrq |= completion;
                s.irqPollsLeft = s.faults.irqDelayPolls;
            }
            return;
        }
        case isa::kRegIrqMask:
            s.irqMask = value & isa::kIrqAll;
            return;
        case isa::kRegIrqClear:
            s.irqStatus &= ~value;
            return;
        case isa::kRegPmuCtrl:
            if ((value & isa::kPmuCtrlReset) != 0) {
                const uint32_t keep = s.pmu.ctrl;
                s.pmu = Pmu{};
                s.pmu.ctrl = keep;
            }
            s.pmu.ctrl = value & isa::kPmuCtrlFreeze;
            return;
        default:
            return;  // read-only and unmapped registers ignore writes
    }
}

}  // namespace npu::sim
