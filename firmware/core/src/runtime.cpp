#include "npu/fw/runtime.h"

#include <cfloat>
#include <cinttypes>
#include <cstring>
#include <new>

#include "blob_store.h"
#include "buffer_table.h"
#include "compiler.h"
#include "dram_allocator.h"
#include "executor.h"
#include "hwsim/isa/registers.h"
#include "model_claim.h"
#include "op_plan.h"
#include "performance_probe.h"

namespace npu::fw {

struct Runtime::Impl {
    Impl(Platform& p, Arena& a, const RuntimeConfig& c) : platform(p), arena(a), config(c) {}
    Platform& platform;
    Arena& arena;
    RuntimeConfig config;
    bool initialized = false;
    size_t compileHighWater = 0;  // the compiler's scratch use before its blob images (GetCounters)
    HardwareInfo hw;
    DramAllocator dram;
    BlobStore store;
    BufferTable buffers;
    uint64_t copiedBytes = 0;             // GetCounters: tensor bytes staged in the host window
    uint64_t constantBytesInMessage = 0;  // GetCounters: constants that came inside PrepareModel
    uint64_t constantBytesInMemory = 0;   // ... and those read at a device address
    // Capabilities, measured at the first init(): [0] uint8 data, [1] int8 data.
    WorkloadFigures performance[2];
    FwStatus performanceStatus = FwStatus::make(Code::kDeviceUnavailable, "performance not measured yet");

    // The reference workloads, in the runtime arena's free part (released after) and firmware
    // DRAM (empty at the first init).
    void measurePerformance() {
        CompileTarget t = target();
        t.hostWindowBase = 0;
        const ProbeContext ctx{t, platform, dram, store, limits(), hw.clockHz, config.irqTimeoutUs};
        const size_t mark = arena.mark();
        const uint32_t types[] = {hal::kTensorQuant8Asymm, hal::kTensorQuant8AsymmSigned};
        performanceStatus = FwStatus::okStatus();
        for (uint32_t i = 0; i < 2 && performanceStatus.ok(); ++i) {
            performanceStatus = probeWorkload(ctx, types[i], arena, &performance[i]);
            arena.release(mark);
        }
    }

    // [addr, +length) inside the host window, where the host stages client memory.
    FwStatus checkWindow(const char* what, uint64_t addr, uint64_t length) const {
        const uint64_t size = platform.dramSize();
        if (addr < config.firmwareDramBytes || addr > size || length > size - addr) {
            return FwStatus::make(
                Code::kInvalidArgument, "%s: [0x%llx, +%llu) is outside the host window [0x%llx, 0x%llx)",
                what, static_cast<unsigned long long>(addr), static_cast<unsigned long long>(length),
                static_cast<unsigned long long>(config.firmwareDramBytes),
                static_cast<unsigned long long>(size));
        }
        return FwStatus::okStatus();
    }

    CompileTarget target() const {
        CompileTarget t;
        t.arrayRows = hw.arrayRows;
        t.arrayCols = hw.arrayCols;
        t.scratchpadBytes = static_cast<uint32_t>(hw.scratchpadBytes);
        t.accumulatorBytes = static_cast<uint32_t>(hw.accumulatorBytes);
        t.dram = platform.dram();
        t.dramSize = platform.dramSize();
        t.hostWindowBase = config.firmwareDramBytes;
        return t;
    }
    // The target of a prepare: its compiles stop at the platform's checkpoint (Cancel, deadline).
    CompileTarget prepareTarget() {
        CompileTarget t = target();
        t.checkpoint = &platform;
        return t;
    }
    BlobLimits limits() const {
        return {hw.arrayRows, hw.arrayCols, static_cast<uint32_t>(hw.scratchpadBytes / 1024),
                static_cast<uint32_t>(hw.accumulatorBytes / 1024), config.firmwareDramBytes};
    }
    BlobInfo info(uint32_t handle) const {
        BlobInfo i;
        const LoadedBlob* b = store.find(handle);
        i.handle = handle;
        i.modelBlobBytes = b->view.h(blob::kDataOffset);
        i.dataBlobBytes = b->view.h(blob::kDataBytes);
        i.numInputs = b->view.numInputs();
        i.numOutputs = b->view.numOutputs();
        return i;
    }
};

namespace {
FwStatus notReady() {
    return FwStatus::make(Code::kDeviceUnavailable,
                          "firmware runtime not initialised (init() failed or not called)");
}
}  // namespace

Runtime::Runtime(Platform& platform, Arena& arena, const RuntimeConfig& config) : impl_(nullptr) {
    void* mem = arena.allocate(sizeof(Impl), alignof(Impl));
    if (mem != nullptr) impl_ = new (mem) Impl(platform, arena, config);
}

FwStatus Runtime::init() {
    if (impl_ == nullptr)
        return FwStatus::make(Code::kResourceExhaustedPersistent,
                              "runtime: arena too small for the runtime's state");
    Impl& s = *impl_;
    Platform& p = s.platform;
    const uint32_t id = p.readReg(isa::kRegId);
    const uint32_t version = p.readReg(isa::kRegVersion);
    if (id != isa::kNpuId)
        return FwStatus::make(Code::kDeviceUnavailable,
                              "NPU ID register reads 0x%08" PRIx32 ", expected 0x%08" PRIx32 "", id,
                              isa::kNpuId);
    if ((version >> 16) != isa::kVersionMajor) {
        return FwStatus::make(Code::kDeviceUnavailable,
                              "NPU version %" PRIu32 ".%" PRIu32
                              "; this firmware drives major version %" PRIu32 "",
                              version >> 16, (version >> 8) & 0xFF, isa::kVersionMajor);
    }
    const uint32_t c0 = p.readReg(isa::kRegHwConfig0), c1 = p.readReg(isa::kRegHwConfig1);
    const uint32_t c5 = p.readReg(isa::kRegHwConfig5);
    HardwareInfo& hw = s.hw;
    hw.id = id;
    hw.version = version;
    hw.arrayRows = (c0 >> isa::kHwConfig0RowsShift) & 0xFFFF;
    hw.arrayCols = (c0 >> isa::kHwConfig0ColsShift) & 0xFFFF;
    hw.vectorLanes = (c1 >> isa::kHwConfig1LanesShift) & 0xFFFF;
    hw.dataflow = (c1 >> isa::kHwConfig1DataflowShift) & 0x3;
    hw.scratchpadBytes = uint64_t{p.readReg(isa::kRegHwConfig2)} * 1024;
    hw.accumulatorBytes = uint64_t{p.readReg(isa::kRegHwConfig3)} * 1024;
    hw.clockHz = uint64_t{p.readReg(isa::kRegHwConfig4)} * 1'000'000;
    hw.dramLatencyCycles = (c5 >> isa::kHwConfig5LatencyShift) & 0xFFFF;
    hw.dramBytesPerCycle = (c5 >> isa::kHwConfig5DmaBytesShift) & 0xFFFF;
    if (hw.arrayRows == 0 || hw.arrayCols == 0 || hw.scratchpadBytes < 4096 ||
        hw.scratchpadBytes > UINT32_MAX || hw.accumulatorBytes < 1024 || hw.accumulatorBytes > UINT32_MAX) {
        return FwStatus::make(
            Code::kDeviceUnavailable,
            "NPU reports an unusable configuration (array %" PRIu32 "x%" PRIu32 ", scratchpad %llu bytes)",
            hw.arrayRows, hw.arrayCols, static_cast<unsigned long long>(hw.scratchpadBytes));
    }
    const uint64_t fw = s.config.firmwareDramBytes;
    if (p.dram() == nullptr || fw == 0 || fw > p.dramSize()) {
        return FwStatus::make(
            Code::kDeviceUnavailable, "firmware DRAM of %llu bytes does not fit device DRAM of %llu bytes",
            static_cast<unsigned long long>(fw), static_cast<unsigned long long>(p.dramSize()));
    }
    if (!s.initialized) {
        if (!s.dram.init(s.arena, 0, fw) || !s.store.init(s.arena) || !s.buffers.init(s.arena)) {
            return FwStatus::make(Code::kResourceExhaustedPersistent,
                                  "runtime: arena too small for the blob store tables");
        }
    }
    resetNpu(p);
    if (!s.initialized) s.measurePerformance();
    s.initialized = true;
    return FwStatus::okStatus();
}

HardwareInfo Runtime::hardwareInfo() const {
    return impl_ != nullptr ? impl_->hw : HardwareInfo{};
}

FwStatus Runtime::supportedOperations(const ModelDesc& model, bool* supported, Arena* compileScratch) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    if (supported == nullptr || (model.operationCount > 0 && model.operations == nullptr)) {
        return FwStatus::make(Code::kInvalidArgument, "supportedOperations: missing arrays");
    }
    ClaimLimits limits;
    limits.firmwareDramBytes = impl_->config.firmwareDramBytes;
    limits.compileScratch = compileScratch;
    return claimOperations(impl_->target(), model, limits, impl_->arena, supported);
}

FwStatus Runtime::unsupportedReason(const ModelDesc& model, const bool* supported, uint32_t op,
                                    Arena* compileScratch) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    if (supported == nullptr || model.operations == nullptr) {
        return FwStatus::make(Code::kInvalidArgument, "unsupportedReason: missing arrays");
    }
    ClaimLimits limits;
    limits.firmwareDramBytes = impl_->config.firmwareDramBytes;
    limits.compileScratch = compileScratch;
    return explainUnclaimed(impl_->target(), model, limits, supported, op);
}

FwStatus Runtime::prepare(const ModelDesc& model, Arena& scratch, BlobInfo* info, bool allowAutotune,
                          uint32_t preference) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    if (info == nullptr) return FwStatus::make(Code::kInvalidArgument, "prepare: no BlobInfo");
    for (uint32_t i = 0; model.operands != nullptr && i < model.operandCount; ++i) {
        const OperandDesc& o = model.operands[i];
        (o.value != nullptr ? impl_->constantBytesInMessage : impl_->constantBytesInMemory) += o.dataLength;
    }
    MacTiling* tilings = nullptr;
    TuningOutcome tuning;
    if (impl_->config.autotune && allowAutotune) {
        // FAST_SINGLE_ANSWER: the fewest cycles. SUSTAINED_SPEED and LOW_POWER: the least DRAM
        // traffic (a sustained or battery-bound workload is limited by memory bandwidth and
        // energy, which DRAM transfers dominate), ties broken by cycles. docs/firmware.md.
        const bool leastTraffic = preference != kPreferFastSingleAnswer;
        FwStatus st = tune(model, scratch, leastTraffic, &tilings, &tuning);
        if (!st.ok()) return st;
    }
    const uint8_t* image = nullptr;
    uint64_t size = 0;
    size_t used = 0;
    FwStatus st = compileModel(impl_->prepareTarget(), model, scratch, &image, &size, tilings, &used);
    if (used > impl_->compileHighWater) impl_->compileHighWater = used;
    if (!st.ok()) return st;
    // The compiler's output goes through the same validation as a blob from a cache file.
    if (!(st = loadBlob(image, size, info)).ok()) return st;
    info->tuningTrials = tuning.trials;
    info->greedyCycles = tuning.greedyCycles;
    info->tunedCycles = tuning.tunedCycles;
    return FwStatus::okStatus();
}

namespace {

// One operation's tiling candidates (the planner's choice first) and the cycles measured.
struct OpTrials {
    MacTiling candidates[kMaxTilingCandidates];
    uint32_t count = 0;
    uint64_t bestCycles = UINT64_MAX;
    uint64_t bestCost = UINT64_MAX;      // cycles, or DRAM bytes (Tuner::leastTraffic)
    uint64_t greedyCycles = UINT64_MAX;  // in round 0, with the planner's tiling
    // The candidate of round k: the operation's last one once it has no more.
    const MacTiling& candidate(uint32_t k) const { return candidates[k < count ? k : count - 1]; }
};

// Autotuning (Runtime::tune): the tables it keeps in compiler scratch, and what its runs use.
struct Tuner {
    const ModelDesc& model;
    Arena& scratch;
    CompileTarget target;
    BlobLimits limits;
    Platform& platform;
    DramAllocator& dram;
    BlobStore& store;
    size_t& compileHighWater;
    uint32_t irqTimeoutUs;
    bool leastTraffic;  // the goal: least DRAM traffic (sustained speed, low power), else fewest cycles

    uint32_t ops = 0;
    OpTrials* trials = nullptr;
    MacTiling* best = nullptr;   // one tiling per operation, as the compiler takes them
    MacTiling* trial = nullptr;  // the tilings of the round being run
    ExecResult* result = nullptr;
    IoArg* io = nullptr;  // the model's inputs, then its outputs
    uint64_t ioBlock = 0;

    FwStatus allocate() {
        ops = model.operationCount;
        trials = scratch.allocateArray<OpTrials>(ops);
        best = scratch.allocateArray<MacTiling>(ops);
        trial = scratch.allocateArray<MacTiling>(ops);
        result = scratch.allocateArray<ExecResult>(1);
        io = scratch.allocateArray<IoArg>(kMaxIo * 2);
        if (trials == nullptr || best == nullptr || trial == nullptr || result == nullptr || io == nullptr) {
            return FwStatus::make(Code::kResourceExhaustedTransient,
                                  "compiler scratch exhausted (autotuning tables)");
        }
        return FwStatus::okStatus();
    }

    // Every operation's candidates; *rounds = the most any operation has.
    FwStatus collectCandidates(uint32_t* rounds) {
        *rounds = 0;
        for (uint32_t o = 0; o < ops; ++o) {
            FwStatus st = modelTilingCandidates(target, model, o, trials[o].candidates, &trials[o].count);
            if (!st.ok()) return st;  // the same message the compiler would give
            *rounds = trials[o].count > *rounds ? trials[o].count : *rounds;
        }
        return FwStatus::okStatus();
    }

    uint32_t ioOperand(uint32_t i) const {
        return i < model.inputCount ? model.inputIndexes[i] : model.outputIndexes[i - model.inputCount];
    }

    // Scratch inputs and outputs in firmware DRAM (zeros: cycles do not depend on values). False
    // when the model's io is malformed (the compiler reports it) or there is no room.
    bool stageIo() {
        if (model.inputCount > kMaxIo || model.outputCount > kMaxIo) return false;
        uint64_t ioBytes = 0;
        const uint32_t numIo = model.inputCount + model.outputCount;
        for (uint32_t i = 0; i < numIo; ++i) {
            if (ioOperand(i) >= model.operandCount) return false;
            ioBytes += (tensorBytes(model.operands[ioOperand(i)]) + 63) / 64 * 64;
        }
        if (ioBytes == 0 || ioBytes > UINT32_MAX || !dram.allocate(ioBytes, &ioBlock)) return false;
        std::memset(platform.dram() + ioBlock, 0, ioBytes);
        uint64_t at = ioBlock;
        for (uint32_t i = 0; i < numIo; ++i) {
            io[i] = IoArg{};
            io[i].addr = at;
            io[i].length = static_cast<uint32_t>(tensorBytes(model.operands[ioOperand(i)]));
            at += (uint64_t{io[i].length} + 63) / 64 * 64;
        }
        return true;
    }

    // Compiles and loads the model with round k's tilings.
    FwStatus compileRound(uint32_t k, uint32_t* handle) {
        for (uint32_t o = 0; o < ops; ++o)
            trial[o] = trials[o].count == 0 ? MacTiling{} : trials[o].candidate(k);
        const size_t mark = scratch.mark();
        const uint8_t* image = nullptr;
        uint64_t size = 0;
        size_t used = 0;
        FwStatus st = compileModel(target, model, scratch, &image, &size, trial, &used);
        if (used > compileHighWater) compileHighWater = used;
        if (st.ok()) st = store.load(platform, dram, image, size, limits, handle);
        scratch.release(mark);
        return st;
    }

    // Runs a loaded round once (into *result) and drops it.
    FwStatus runRound(uint32_t handle) {
        // DRAM traffic is read from the PMU's detailed per-operation counters.
        const ExecutionContext ctx{platform, dram, 0, irqTimeoutUs, leastTraffic};
        FwStatus st = executeBlob(ctx, *store.find(handle), io, model.inputCount, io + model.inputCount,
                                  model.outputCount, result);
        store.release(handle, dram);
        return st;
    }

    // Keeps, per operation, the tiling of the cheapest round (cycles, or DRAM bytes when
    // leastTraffic; ties go to fewer cycles); returns the round's total cycles.
    uint64_t record(uint32_t k) {
        uint64_t total = 0;
        for (uint32_t i = 0; i < result->profileCount && i < ops; ++i) {
            const OpProfile& p = result->profile[i];
            const uint32_t o = p.operationIndex;
            const uint64_t cost = leastTraffic ? p.dramReadBytes + p.dramWriteBytes : p.cycles;
            total += p.cycles;
            if (o >= ops) continue;
            OpTrials& t = trials[o];
            if (k == 0) t.greedyCycles = p.cycles;
            if (t.count > k && (cost < t.bestCost || (cost == t.bestCost && p.cycles < t.bestCycles))) {
                t.bestCost = cost;
                t.bestCycles = p.cycles;
                best[o] = trial[o];
            }
        }
        return total;
    }

    // The greedy run's total with each tuned operation's cycles in place of its greedy ones
    // (fewer for the fewest-cycles goal; possibly more for the least-traffic one).
    uint64_t tunedCycles(uint64_t greedyTotal) const {
        uint64_t tuned = greedyTotal;
        for (uint32_t o = 0; o < ops; ++o) {
            const OpTrials& t = trials[o];
            if (t.count > 0 && t.bestCycles != UINT64_MAX && t.greedyCycles != UINT64_MAX) {
                tuned = tuned - t.greedyCycles + t.bestCycles;
            }
        }
        return tuned;
    }
};

}  // namespace

// Runs the model once per tiling candidate index k (operation o uses its candidate
// min(k, count_o - 1)) on scratch inputs in firmware DRAM, and keeps, per operation, the tiling
// of the run in which that operation took the fewest cycles. Operations run one after another
// with a fence between them, so one operation's tiling does not change another's cycles.
FwStatus Runtime::tune(const ModelDesc& model, Arena& scratch, bool leastTraffic, MacTiling** tilings,
                       TuningOutcome* outcome) {
    Impl& s = *impl_;
    if (model.operationCount == 0 || model.operationCount > kMaxOperations || model.operations == nullptr)
        return FwStatus::okStatus();  // the compiler reports it
    Tuner t{model,
            scratch,
            s.prepareTarget(),
            s.limits(),
            s.platform,
            s.dram,
            s.store,
            s.compileHighWater,
            s.config.irqTimeoutUs,
            leastTraffic};
    if (FwStatus st = t.allocate(); !st.ok()) return st;
    uint32_t rounds = 0;
    if (FwStatus st = t.collectCandidates(&rounds); !st.ok()) return st;
    if (rounds <= 1 || !t.stageIo()) return FwStatus::okStatus();  // keep the greedy tilings

    const uint64_t start = s.platform.nowUs();
    FwStatus status = FwStatus::okStatus();
    for (uint32_t k = 0; k < rounds; ++k) {
        if (k > 0 && s.platform.nowUs() - start > s.config.tuneBudgetUs) break;
        // A round that failed or is about to start: stop here if the prepare was cancelled or
        // its deadline passed (a stopped compile or trial run fails its round that way).
        const auto stop = [&] { return s.platform.stopRequested({WorkPhase::kTune, k, rounds}); };
        if (StopReason r = k > 0 ? stop() : StopReason::kNone; r != StopReason::kNone) {
            status = stoppedStatus(r, "prepare", "tuning round", k, k, rounds, "run");
            break;
        }
        uint32_t handle = 0;
        const FwStatus compiled = t.compileRound(k, &handle);
        if (!compiled.ok() || !t.runRound(handle).ok()) {
            if (const StopReason r = stop(); r != StopReason::kNone) {
                status = stoppedStatus(r, "prepare", "tuning round", k, k, rounds, "run");
            } else if (k == 0 && !compiled.ok()) {
                status = compiled;  // the greedy compile itself fails: report it
            }
            break;  // else keep what the earlier rounds measured
        }
        ++outcome->trials;
        const uint64_t total = t.record(k);
        if (k == 0) outcome->greedyCycles = total;
    }
    s.dram.free(t.ioBlock);
    if (!status.ok()) return status;
    if (outcome->trials > 1) {
        outcome->tunedCycles = t.tunedCycles(outcome->greedyCycles);
        *tilings = t.best;
    }
    return FwStatus::okStatus();
}

FwStatus Runtime::loadBlob(const uint8_t* bytes, uint64_t size, BlobInfo* info) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    if (info == nullptr) return FwStatus::make(Code::kInvalidArgument, "loadBlob: no BlobInfo");
    uint32_t handle = 0;
    FwStatus st = impl_->store.load(impl_->platform, impl_->dram, bytes, size, impl_->limits(), &handle);
    if (!st.ok()) return st;
    *info = impl_->info(handle);
    return FwStatus::okStatus();
}

FwStatus Runtime::blobImage(uint32_t handle, const uint8_t** bytes, uint64_t* size) const {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    const LoadedBlob* b = impl_->store.find(handle);
    if (b == nullptr)
        return FwStatus::make(Code::kInvalidArgument, "unknown model handle 0x%" PRIx32 "", handle);
    *bytes = b->view.base;
    *size = b->bytes;
    return FwStatus::okStatus();
}

FwStatus Runtime::retain(uint32_t handle) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    return impl_->store.retain(handle);
}

FwStatus Runtime::release(uint32_t handle) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    return impl_->store.release(handle, impl_->dram);
}

FwStatus Runtime::execute(uint32_t handle, const IoArg* inputs, uint32_t inputCount, const IoArg* outputs,
                          uint32_t outputCount, ExecResult* result, bool detailedProfile) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    const LoadedBlob* b = impl_->store.find(handle);
    if (b == nullptr)
        return FwStatus::make(Code::kInvalidArgument, "execute: unknown model handle 0x%" PRIx32 "", handle);
    const ExecutionContext ctx{impl_->platform, impl_->dram, impl_->config.firmwareDramBytes,
                               impl_->config.irqTimeoutUs, detailedProfile};
    FwStatus status = executeBlob(ctx, *b, inputs, inputCount, outputs, outputCount, result);
    result->clockHz = hardwareInfo().clockHz;
    // The host copied the inputs staged in the window in, and copies the outputs out once they
    // are computed; a driver-managed buffer or a pool mapped by fd moves nothing.
    auto staged = [](const IoArg* args, uint32_t count) {
        uint64_t n = 0;
        for (uint32_t i = 0; args != nullptr && i < count; ++i) {
            if (!args[i].hasNoValue && !args[i].deviceBuffer && !args[i].poolMapped) n += args[i].length;
        }
        return n;
    };
    impl_->copiedBytes += staged(inputs, inputCount);
    if (status.ok()) impl_->copiedBytes += staged(outputs, outputCount);
    return status;
}

FwStatus Runtime::reset() {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    impl_->store.clear(impl_->dram);
    impl_->buffers.clear();
    impl_->dram.clear();
    resetNpu(impl_->platform);
    return FwStatus::okStatus();
}

// ---- memory domains ---------------------------------------------------------------------------

FwStatus Runtime::allocateBuffer(const BufferSpec& spec, uint32_t* token) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    return impl_->buffers.allocate(spec, impl_->store, impl_->dram, token);
}

FwStatus Runtime::releaseBuffer(uint32_t session, uint32_t token) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    return impl_->buffers.release(session, token, impl_->dram);
}

FwStatus Runtime::writeBuffer(uint32_t session, uint32_t token, uint64_t addr, uint64_t length, uint32_t rank,
                              const uint32_t* dims) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    FwStatus st = impl_->checkWindow("BufferCopy to the device", addr, length);
    if (!st.ok()) return st;
    uint8_t* dram = impl_->platform.dram();
    st = impl_->buffers.write(session, token, dram, length, rank, dims, dram + addr);
    if (st.ok()) impl_->copiedBytes += length;
    return st;
}

FwStatus Runtime::readBuffer(uint32_t session, uint32_t token, uint64_t addr, uint64_t length) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    FwStatus st = impl_->checkWindow("BufferCopy from the device", addr, length);
    if (!st.ok()) return st;
    uint8_t* dram = impl_->platform.dram();
    st = impl_->buffers.read(session, token, dram, length, dram + addr);
    if (st.ok()) impl_->copiedBytes += length;
    return st;
}

uint32_t Runtime::releaseSessionBuffers(uint32_t session) {
    if (impl_ == nullptr || !impl_->initialized) return 0;
    return impl_->buffers.releaseSession(session, impl_->dram);
}

FwStatus Runtime::bindBuffers(uint32_t session, uint32_t handle, IoArg* inputs, uint32_t inputCount,
                              IoArg* outputs, uint32_t outputCount) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    if (impl_->store.find(handle) == nullptr)
        return FwStatus::make(Code::kInvalidArgument, "execute: unknown model handle 0x%" PRIx32 "", handle);
    return impl_->buffers.bind(session, handle, inputs, inputCount, outputs, outputCount);
}

void Runtime::buffersWritten(const IoArg* outputs, uint32_t outputCount) {
    if (impl_ != nullptr) impl_->buffers.written(outputs, outputCount);
}

uint32_t Runtime::buffersInUse() const {
    return impl_ != nullptr && impl_->initialized ? impl_->buffers.count() : 0;
}
uint64_t Runtime::bufferBytes() const {
    return impl_ != nullptr && impl_->initialized ? impl_->buffers.bytes() : 0;
}
uint64_t Runtime::dramBytesInUse() const {
    return impl_ != nullptr && impl_->initialized ? impl_->dram.bytesInUse() : 0;
}
uint64_t Runtime::copiedBytes() const {
    return impl_ != nullptr ? impl_->copiedBytes : 0;
}
uint64_t Runtime::constantBytesInMessage() const {
    return impl_ != nullptr ? impl_->constantBytesInMessage : 0;
}
uint64_t Runtime::constantBytesInMemory() const {
    return impl_ != nullptr ? impl_->constantBytesInMemory : 0;
}

FwStatus Runtime::performance(uint32_t type, PerformanceFigure* out) const {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    if (!impl_->performanceStatus.ok()) return impl_->performanceStatus;
    if (!claimsOperandType(type)) {
        *out = {FLT_MAX, FLT_MAX};
        return FwStatus::okStatus();
    }
    const WorkloadFigures& w = impl_->performance[type == hal::kTensorQuant8AsymmSigned ? 1 : 0];
    *out = {w.execTime, w.powerUsage};
    return FwStatus::okStatus();
}

bool Runtime::claimsOperandType(uint32_t type) {
    for (uint32_t t : hal::kClaimedOperandTypes) {
        if (t == type) return true;
    }
    return false;
}

size_t Runtime::arenaBytes() const {
    return impl_ == nullptr ? 0 : impl_->arena.capacity();
}
size_t Runtime::arenaPeakBytes() const {
    return impl_ == nullptr ? 0 : impl_->arena.peak();
}
size_t Runtime::compileScratchHighWater() const {
    return impl_ == nullptr ? 0 : impl_->compileHighWater;
}

uint32_t Runtime::loadedModels() const {
    return impl_ != nullptr && impl_->initialized ? impl_->store.count() : 0;
}

}  // namespace npu::fw
