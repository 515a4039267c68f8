#include <cinttypes>
#include "npu/fw/runtime.h"

#include <new>

#include "blob_store.h"
#include "compiler.h"
#include "dram_allocator.h"
#include "executor.h"
#include "op_plan.h"
#include "hwsim/isa/registers.h"

namespace npu::fw {

struct Runtime::Impl {
    Impl(Platform& p, Arena& a, const RuntimeConfig& c) : platform(p), arena(a), config(c) {}
    Platform& platform;
    Arena& arena;
    RuntimeConfig config;
    bool initialized = false;
    HardwareInfo hw;
    DramAllocator dram;
    BlobStore store;

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
    return FwStatus::make(Code::kDeviceUnavailable, "firmware runtime not initialised (init() failed or not called)");
}
}  // namespace

Runtime::Runtime(Platform& platform, Arena& arena, const RuntimeConfig& config) : impl_(nullptr) {
    void* mem = arena.allocate(sizeof(Impl), alignof(Impl));
    if (mem != nullptr) impl_ = new (mem) Impl(platform, arena, config);
}

FwStatus Runtime::init() {
    if (impl_ == nullptr) return FwStatus::make(Code::kResourceExhaustedPersistent, "runtime: arena too small for the runtime's state");
    Impl& s = *impl_;
    Platform& p = s.platform;
    const uint32_t id = p.readReg(isa::kRegId);
    const uint32_t version = p.readReg(isa::kRegVersion);
    if (id != isa::kNpuId) return FwStatus::make(Code::kDeviceUnavailable, "NPU ID register reads 0x%08" PRIx32 ", expected 0x%08" PRIx32 "", id, isa::kNpuId);
    if ((version >> 16) != isa::kVersionMajor) {
        return FwStatus::make(Code::kDeviceUnavailable, "NPU version %" PRIu32 ".%" PRIu32 "; this firmware drives major version %" PRIu32 "", version >> 16, (version >> 8) & 0xFF, isa::kVersionMajor);
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
    if (hw.arrayRows == 0 || hw.arrayCols == 0 || hw.scratchpadBytes < 4096 || hw.scratchpadBytes > UINT32_MAX ||
        hw.accumulatorBytes < 1024 || hw.accumulatorBytes > UINT32_MAX) {
        return FwStatus::make(Code::kDeviceUnavailable, "NPU reports an unusable configuration (array %" PRIu32 "x%" PRIu32 ", scratchpad %llu bytes)",
                              hw.arrayRows, hw.arrayCols, static_cast<unsigned long long>(hw.scratchpadBytes));
    }
    const uint64_t fw = s.config.firmwareDramBytes;
    if (p.dram() == nullptr || fw == 0 || fw > p.dramSize()) {
        return FwStatus::make(Code::kDeviceUnavailable, "firmware DRAM of %llu bytes does not fit device DRAM of %llu bytes",
                              static_cast<unsigned long long>(fw), static_cast<unsigned long long>(p.dramSize()));
    }
    if (!s.initialized) {
        if (!s.dram.init(s.arena, 0, fw) || !s.store.init(s.arena)) {
            return FwStatus::make(Code::kResourceExhaustedPersistent, "runtime: arena too small for the blob store tables");
        }
    }
    resetNpu(p);
    s.initialized = true;
    return FwStatus::okStatus();
}

HardwareInfo Runtime::hardwareInfo() const { return impl_ != nullptr ? impl_->hw : HardwareInfo{}; }

FwStatus Runtime::supportedOperations(const ModelDesc& model, bool* supported) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    if (supported == nullptr || (model.operationCount > 0 && model.operations == nullptr)) {
        return FwStatus::make(Code::kInvalidArgument, "supportedOperations: missing arrays");
    }
    const CompileTarget t = impl_->target();
    for (uint32_t i = 0; i < model.operationCount; ++i) supported[i] = checkOperation(t, model, i).ok();
    return FwStatus::okStatus();
}

FwStatus Runtime::prepare(const ModelDesc& model, Arena& scratch, BlobInfo* info) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    if (info == nullptr) return FwStatus::make(Code::kInvalidArgument, "prepare: no BlobInfo");
    const uint8_t* image = nullptr;
    uint64_t size = 0;
    FwStatus st = compileModel(impl_->target(), model, scratch, &image, &size);
    if (!st.ok()) return st;
    // The compiler's output goes through the same validation as a blob from a cache file.
    return loadBlob(image, size, info);
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
    if (b == nullptr) return FwStatus::make(Code::kInvalidArgument, "unknown model handle 0x%" PRIx32 "", handle);
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
                          uint32_t outputCount, ExecResult* result) {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    const LoadedBlob* b = impl_->store.find(handle);
    if (b == nullptr) return FwStatus::make(Code::kInvalidArgument, "execute: unknown model handle 0x%" PRIx32 "", handle);
    const ExecutionContext ctx{impl_->platform, impl_->dram, impl_->config.firmwareDramBytes, impl_->config.irqTimeoutUs};
    FwStatus status = executeBlob(ctx, *b, inputs, inputCount, outputs, outputCount, result);
    result->clockHz = hardwareInfo().clockHz;
    return status;
}

FwStatus Runtime::reset() {
    if (impl_ == nullptr || !impl_->initialized) return notReady();
    impl_->store.clear(impl_->dram);
    impl_->dram.clear();
    resetNpu(impl_->platform);
    return FwStatus::okStatus();
}

bool Runtime::claimsOperandType(uint32_t type) {
    for (uint32_t t : hal::kClaimedOperandTypes) {
        if (t == type) return true;
    }
    return false;
}

uint32_t Runtime::loadedModels() const {
    return impl_ != nullptr && impl_->initialized ? impl_->store.count() : 0;
}

}  // namespace npu::fw
