// Service over the firmware Runtime: translates wire structs to the runtime's API.
#include <cfloat>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "blob_format.h"
#include "npu/fw/rpc_server.h"

namespace npu::fw {

bool RuntimeService::inDram(uint64_t addr, uint64_t length) const {
    const uint64_t size = platform_.dramSize();
    return addr <= size && length <= size - addr;
}

void RuntimeService::capabilities(npu_proto_CapabilitiesReply* reply) {
    const HardwareInfo hw = runtime_.hardwareInfo();
    reply->has_status = true;
    // Relative figures (NNAPI: lower is better, 1.0 = the CPU), measured by the runtime on
    // reference workloads (docs/firmware.md, "Capabilities"). FLT_MAX (the HAL's "unsupported")
    // for what the NPU does not run: float (so no relaxed float) and control flow.
    const npu_proto_PerformanceInfo unsupported = {FLT_MAX, FLT_MAX};
    reply->has_relaxed_scalar = reply->has_relaxed_tensor = true;
    reply->relaxed_scalar = reply->relaxed_tensor = unsupported;
    reply->has_if_performance = reply->has_while_performance = true;
    reply->if_performance = reply->while_performance = unsupported;
    // Every HAL operand type, sorted (the HAL's nonExtensionOperandPerformance).
    constexpr uint32_t kLastOperandType = 15;  // SUBGRAPH
    for (uint32_t t = 0; t <= kLastOperandType; ++t) {
        PerformanceFigure figure;
        FwStatus st = runtime_.performance(t, &figure);
        if (!st.ok()) {
            reply->status.code = static_cast<uint32_t>(st.code);
            std::snprintf(reply->status.message, sizeof(reply->status.message), "%s", st.message);
            return;
        }
        npu_proto_OperandPerformance& p = reply->operand_performance[reply->operand_performance_count++];
        p.type = t;
        p.has_info = true;
        p.info = {figure.execTime, figure.powerUsage};
    }
    reply->has_hw = true;
    reply->hw.clock_hz = hw.clockHz;
    reply->hw.array_rows = hw.arrayRows;
    reply->hw.array_cols = hw.arrayCols;
    reply->hw.dataflow = hw.dataflow;
    reply->hw.scratchpad_bytes = hw.scratchpadBytes;
    reply->hw.accumulator_bytes = hw.accumulatorBytes;
    reply->hw.vector_lanes = hw.vectorLanes;
    reply->hw.dram_bytes_per_cycle = hw.dramBytesPerCycle;
    reply->hw.dram_latency_cycles = hw.dramLatencyCycles;
    // The blob is saved as two cache files: model (commands + metadata) and data (constants).
    reply->num_model_cache_files = 1;
    reply->num_data_cache_files = 1;
}

FwStatus RuntimeService::supportedOperations(const ModelDesc& model, bool* supported, Arena& scratch) {
    return runtime_.supportedOperations(model, supported, &scratch);
}

FwStatus RuntimeService::unsupportedReason(const ModelDesc& model, const bool* supported, uint32_t op,
                                           Arena& scratch) {
    return runtime_.unsupportedReason(model, supported, op, &scratch);
}

FwStatus RuntimeService::prepareModel(const ModelDesc& model, const npu_proto_PrepareModelRequest& request,
                                      Arena& scratch, BlobInfo* info) {
    return runtime_.prepare(model, scratch, info, !request.no_autotune, request.preference);
}

FwStatus RuntimeService::prepareFromCache(const npu_proto_PrepareFromCacheRequest& r, Arena& scratch,
                                          BlobInfo* info) {
    if (!inDram(r.model_blob_addr, r.model_blob_bytes) || !inDram(r.data_blob_addr, r.data_blob_bytes)) {
        return FwStatus::make(
            Code::kInvalidArgument,
            "PrepareFromCache: model blob [0x%llx, +%llu) or data blob [0x%llx, +%llu) is outside "
            "device DRAM (%llu bytes)",
            (unsigned long long)r.model_blob_addr, (unsigned long long)r.model_blob_bytes,
            (unsigned long long)r.data_blob_addr, (unsigned long long)r.data_blob_bytes,
            (unsigned long long)platform_.dramSize());
    }
    // The blob is one image [model part | data part]; the cache keeps the parts in two files.
    const uint64_t total = r.model_blob_bytes + r.data_blob_bytes;
    auto* image =
        static_cast<uint8_t*>(total <= SIZE_MAX ? scratch.allocate(total ? total : 1, 64) : nullptr);
    if (image == nullptr) {
        return FwStatus::make(Code::kResourceExhaustedPersistent,
                              "PrepareFromCache: a %llu-byte blob does not fit the firmware's scratch arena",
                              (unsigned long long)total);
    }
    std::memcpy(image, platform_.dram() + r.model_blob_addr, r.model_blob_bytes);
    std::memcpy(image + r.model_blob_bytes, platform_.dram() + r.data_blob_addr, r.data_blob_bytes);
    return runtime_.loadBlob(image, total, info);
}

FwStatus RuntimeService::fetchBlob(const npu_proto_FetchBlobRequest& r, npu_proto_FetchBlobReply* reply) {
    const uint8_t* bytes = nullptr;
    uint64_t size = 0;
    FwStatus st = runtime_.blobImage(r.model_handle, &bytes, &size);
    if (!st.ok()) return st;
    // The model part ends where the data section starts (what PrepareModelReply reported as
    // model_blob_bytes); blobImage() returns validated blobs only.
    const uint64_t modelBytes =
        size >= blob::kHeaderBytesValue ? readU32(bytes + 4 * blob::kDataOffset) : size;
    const uint64_t split = modelBytes <= size ? modelBytes : size;
    const uint64_t dataBytes = size - split;
    if (split > r.model_blob_capacity || dataBytes > r.data_blob_capacity) {
        return FwStatus::make(
            Code::kOutputInsufficientSize,
            "FetchBlob: model %" PRIu32 " needs %llu + %llu bytes, the host offered %llu + %llu",
            r.model_handle, (unsigned long long)split, (unsigned long long)dataBytes,
            (unsigned long long)r.model_blob_capacity, (unsigned long long)r.data_blob_capacity);
    }
    if (!inDram(r.model_blob_addr, split) || !inDram(r.data_blob_addr, dataBytes)) {
        return FwStatus::make(Code::kInvalidArgument,
                              "FetchBlob: destination outside device DRAM (%llu bytes)",
                              (unsigned long long)platform_.dramSize());
    }
    std::memcpy(platform_.dram() + r.model_blob_addr, bytes, split);
    std::memcpy(platform_.dram() + r.data_blob_addr, bytes + split, dataBytes);
    reply->model_blob_bytes = split;
    reply->data_blob_bytes = dataBytes;
    return FwStatus::okStatus();
}

FwStatus RuntimeService::releaseModel(uint32_t handle) {
    return runtime_.release(handle);
}

FwStatus RuntimeService::execute(const npu_proto_ExecuteRequest& r, IoArg* inputs, uint32_t inputCount,
                                 IoArg* outputs, uint32_t outputCount, ExecResult* result) {
    FwStatus st = runtime_.bindBuffers(session_, r.model_handle, inputs, inputCount, outputs, outputCount);
    if (!st.ok()) return st;
    st = runtime_.execute(r.model_handle, inputs, inputCount, outputs, outputCount, result, r.measure_timing);
    if (st.ok()) runtime_.buffersWritten(outputs, outputCount);
    return st;
}

FwStatus RuntimeService::allocateBuffer(const npu_proto_AllocateBufferRequest& r, uint32_t* token) {
    BufferRole roles[kMaxBufferRoles];
    BufferSpec spec;
    spec.session = session_;
    spec.type = r.type;
    spec.rank = r.dimensions_count;
    for (uint32_t k = 0; k < spec.rank && k < kMaxRank; ++k) spec.dims[k] = r.dimensions[k];
    spec.bytes = r.bytes;
    spec.roleCount = r.roles_count;
    for (uint32_t i = 0; i < r.roles_count && i < kMaxBufferRoles; ++i) {
        roles[i] = {r.roles[i].model_handle, r.roles[i].input, r.roles[i].io_index};
    }
    spec.roles = roles;
    return runtime_.allocateBuffer(spec, token);
}

FwStatus RuntimeService::releaseBuffer(uint32_t token) {
    return runtime_.releaseBuffer(session_, token);
}

FwStatus RuntimeService::bufferCopy(const npu_proto_BufferCopyRequest& r) {
    if (r.to_device) {
        return runtime_.writeBuffer(session_, r.buffer_token, r.addr, r.length, r.dimensions_count,
                                    r.dimensions);
    }
    return runtime_.readBuffer(session_, r.buffer_token, r.addr, r.length);
}

FwStatus RuntimeService::reset() {
    return runtime_.reset();
}

void RuntimeService::counters(npu_proto_CountersReply* reply) {
    appendCounter(reply, "runtime.loaded_models", runtime_.loadedModels());
    appendCounter(reply, "runtime.arena_bytes", runtime_.arenaBytes());
    appendCounter(reply, "runtime.arena_peak_bytes", runtime_.arenaPeakBytes());
    appendCounter(reply, "runtime.compile_scratch_high_water_bytes", runtime_.compileScratchHighWater());
    appendCounter(reply, "runtime.dram_bytes_in_use", runtime_.dramBytesInUse());
    appendCounter(reply, "runtime.buffers", runtime_.buffersInUse());
    appendCounter(reply, "runtime.buffer_bytes", runtime_.bufferBytes());
    appendCounter(reply, "runtime.copied_bytes", runtime_.copiedBytes());
    appendCounter(reply, "runtime.constant_bytes_in_message", runtime_.constantBytesInMessage());
    appendCounter(reply, "runtime.constant_bytes_in_memory", runtime_.constantBytesInMemory());
}

}  // namespace npu::fw
