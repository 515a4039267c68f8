#pragma once
// The firmware runtime's face to the RPC server: compile (prepare), hold blobs, execute.
// firmware/core rules apply: no OS headers, no exceptions, no RTTI, no global heap. Every
// table has a fixed capacity and reports overflow as RESOURCE_EXHAUSTED_*.

#include <cstddef>
#include <cstdint>

#include "npu/fw/arena.h"
#include "npu/fw/platform.h"

namespace npu::fw {

inline constexpr uint32_t kMaxRank = 6;
inline constexpr uint32_t kMaxOperations = 256;  // per model, for profiles
inline constexpr uint32_t kMaxIo = 64;           // model inputs / outputs

// Status codes are the HAL ErrorStatus values.
enum class Code : uint32_t {
    kNone = 0,
    kDeviceUnavailable = 1,
    kGeneralFailure = 2,
    kOutputInsufficientSize = 3,
    kInvalidArgument = 4,
    kMissedDeadlineTransient = 5,
    kMissedDeadlinePersistent = 6,
    kResourceExhaustedTransient = 7,
    kResourceExhaustedPersistent = 8,
};

// A status with a message that says what and where (formatted into a fixed buffer).
struct FwStatus {
    Code code = Code::kNone;
    char message[192] = {};
    bool ok() const { return code == Code::kNone; }
    static FwStatus okStatus() { return FwStatus{}; }
    // printf-style; truncates to the buffer.
    static FwStatus make(Code code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
};

// The status of work stopped at a checkpoint (Platform::stopRequested said `reason`): a Cancel
// is GENERAL_FAILURE "cancelled: the WORK was stopped before STEP INDEX (DONE of TOTAL VERB)", a
// passed deadline the MISSED_DEADLINE_* code its reason carries, "missed deadline: ...". OK for
// StopReason::kNone.
FwStatus stoppedStatus(StopReason reason, const char* work, const char* step, uint32_t index, uint32_t done,
                       uint32_t total, const char* verb);

// ---- The model as decoded from the wire (main subgraph), in arena memory ---------------------
struct OperandDesc {
    uint32_t type = 0;  // HAL OperandType
    uint32_t rank = 0;
    uint32_t dims[kMaxRank] = {};
    float scale = 0.0f;
    int32_t zeroPoint = 0;
    uint32_t lifetime = 0;  // HAL OperandLifeTime
    uint64_t dataAddr = 0;  // constants: device address of the value (host window or a mapped pool)
    uint32_t dataLength = 0;
    // A CONSTANT_COPY value that came inside the message (Operand.value): dataLength bytes in
    // firmware memory (the request's arena, alive as long as this descriptor); dataAddr is 0.
    const uint8_t* value = nullptr;
    const float* channelScales = nullptr;  // per-channel quantization
    uint32_t channelScaleCount = 0;
    uint32_t channelDim = 0;
};

struct OperationDesc {
    uint32_t type = 0;  // HAL OperationType
    const uint32_t* inputs = nullptr;
    uint32_t inputCount = 0;
    const uint32_t* outputs = nullptr;
    uint32_t outputCount = 0;
};

struct ModelDesc {
    const OperandDesc* operands = nullptr;
    uint32_t operandCount = 0;
    const OperationDesc* operations = nullptr;
    uint32_t operationCount = 0;
    const uint32_t* inputIndexes = nullptr;
    uint32_t inputCount = 0;
    const uint32_t* outputIndexes = nullptr;
    uint32_t outputCount = 0;
    uint32_t referencedSubgraphCount = 0;  // IF/WHILE bodies (not compiled yet)
    bool relaxed = false;
};

// ---- Execution ------------------------------------------------------------------------------
struct IoArg {
    bool hasNoValue = false;
    uint64_t addr = 0;    // DRAM address (host window)
    uint32_t length = 0;  // bytes available
    uint32_t rank = 0;    // 0 = the model's dimensions
    uint32_t dims[kMaxRank] = {};
    // Memory domains: non-zero names a driver-managed buffer instead of addr. Runtime::bindBuffers
    // checks it and points addr at the buffer's firmware memory (deviceBuffer), the only way an
    // argument may lie outside the host window.
    uint32_t bufferToken = 0;
    bool deviceBuffer = false;
    // The argument lies in client memory the platform mapped (a pool passed by fd): the NPU
    // reads or writes it in place, nothing was copied (not counted in copiedBytes).
    bool poolMapped = false;
};

// ---- Memory domains: driver-managed buffers in firmware DRAM ---------------------------------
inline constexpr uint32_t kMaxBuffers = 64;
inline constexpr uint32_t kMaxBufferRoles = 16;

// One use a buffer may serve: input or output `ioIndex` of the prepared model `modelHandle`.
struct BufferRole {
    uint32_t modelHandle = 0;
    bool input = true;
    uint32_t ioIndex = 0;
};

struct BufferSpec {
    uint32_t session = 0;  // the owner: only its calls can use, copy or release the buffer
    uint32_t type = 0;     // HAL OperandType, as the host says (the blob records bytes only)
    uint32_t rank = 0;     // 0 = the roles'
    uint32_t dims[kMaxRank] = {};
    uint64_t bytes = 0;  // 0 = the roles'
    const BufferRole* roles = nullptr;
    uint32_t roleCount = 0;
};

struct OpProfile {
    uint32_t operationIndex = 0;
    uint32_t type = 0;
    uint64_t cycles = 0;
    uint64_t macs = 0;
    uint64_t stallCycles = 0;
    // Only with a detailed profile (Runtime::execute): PMU DMA bytes, DMA stalls, unit busy cycles.
    uint64_t dramReadBytes = 0, dramWriteBytes = 0, stallDmaCycles = 0;
    uint64_t loadActiveCycles = 0, computeActiveCycles = 0, storeActiveCycles = 0;
};

struct OutputShapeInfo {
    uint32_t rank = 0;
    uint32_t dims[kMaxRank] = {};
    bool sufficient = true;
};

// ExecResult::deviceFault (ExecuteReply.device_fault): why an execution failed on the device.
inline constexpr uint32_t kDeviceFaultNone = 0;
inline constexpr uint32_t kDeviceFaultHang = 1;  // no interrupt: the NPU was reset, nothing completed
inline constexpr uint32_t kDeviceFaultData = 2;  // DMA error or SRAM ECC: the outputs may be corrupt

struct ExecResult {
    uint32_t deviceFault = kDeviceFaultNone;
    uint64_t deviceCycles = 0;
    uint64_t clockHz = 0;  // the NPU clock the cycles count, to turn them into device time
    uint32_t profileCount = 0;
    OpProfile profile[kMaxOperations];
    uint32_t outputCount = 0;
    OutputShapeInfo outputs[kMaxIo];
};

struct BlobInfo {
    uint32_t handle = 0;
    uint64_t modelBlobBytes = 0;  // command stream + metadata (the model cache)
    uint64_t dataBlobBytes = 0;   // transformed constants (the data cache)
    uint32_t numInputs = 0;
    uint32_t numOutputs = 0;
    // Autotuning at prepare (RuntimeConfig::autotune): trial executions run, device cycles of the
    // planner's greedy tilings and of the chosen ones (0 when no trial ran: nothing to choose,
    // tuning off, or a blob loaded from a cache).
    uint32_t tuningTrials = 0;
    uint64_t greedyCycles = 0;
    uint64_t tunedCycles = 0;
};

struct HardwareInfo {
    uint32_t id = 0;
    uint32_t version = 0;
    uint64_t clockHz = 0;
    uint32_t arrayRows = 0;
    uint32_t arrayCols = 0;
    uint32_t dataflow = 0;
    uint64_t scratchpadBytes = 0;
    uint64_t accumulatorBytes = 0;
    uint32_t vectorLanes = 0;
    uint32_t dramBytesPerCycle = 0;
    uint32_t dramLatencyCycles = 0;
};

struct RuntimeConfig {
    // DRAM [0, firmwareDramBytes) belongs to the firmware (blobs, activations);
    // [firmwareDramBytes, dramSize) is the host window.
    uint64_t firmwareDramBytes = 0;
    uint32_t irqTimeoutUs = 5'000'000;
    // Autotuning: prepare() runs the model on the NPU once per tiling candidate (at most
    // kMaxTilingCandidates runs, within tuneBudgetUs of device-clock time measured by nowUs) and
    // compiles each CONV_2D / FULLY_CONNECTED with the tiling that took the fewest cycles.
    // Results are bit-identical whatever the tiling; only time changes. docs/firmware.md.
    bool autotune = true;
    uint32_t tuneBudgetUs = 2'000'000;
};

// HAL ExecutionPreference (PrepareModelRequest.preference).
inline constexpr uint32_t kPreferLowPower = 0;
inline constexpr uint32_t kPreferFastSingleAnswer = 1;
inline constexpr uint32_t kPreferSustainedSpeed = 2;

// A Capabilities performance figure (NNAPI PerformanceInfo: relative to the CPU, lower is better).
struct PerformanceFigure {
    float execTime = 0;
    float powerUsage = 0;
};

struct MacTiling;  // compiler internals (core/src/compiler.h)

class Runtime {
public:
    // `arena` backs the runtime's own tables (blob store, compiler scratch).
    Runtime(Platform& platform, Arena& arena, const RuntimeConfig& config);

    FwStatus init();  // probes the NPU (ID/VERSION/HW_CONFIG), resets it
    HardwareInfo hardwareInfo() const;

    // supported[i] = true iff operation i compiles and runs (bit-exact for quantized types), and
    // the model made of the claimed operations prepares and runs: within kMaxOperations,
    // kMaxIo inputs/outputs, the firmware DRAM and, when given, `compileScratch` (the arena
    // prepare() will compile in): a verified prefix of the accepted operations (model_claim.h).
    FwStatus supportedOperations(const ModelDesc& model, bool* supported, Arena* compileScratch = nullptr);
    // Why operation `op` is not supported (`supported` as supportedOperations filled it, with the
    // same `compileScratch`): the compiler's message naming the operation, operand and rule, or
    // the whole-model limit that left it out. OK when it is supported.
    FwStatus unsupportedReason(const ModelDesc& model, const bool* supported, uint32_t op,
                               Arena* compileScratch = nullptr);
    // Compiles the model into a blob held in the blob store; `scratch` is for compile-time
    // temporaries and is released by the caller afterwards. Autotunes when the config and
    // `allowAutotune` both allow it, for the goal `preference` (HAL ExecutionPreference) sets:
    // FAST_SINGLE_ANSWER the fewest cycles, SUSTAINED_SPEED and LOW_POWER the least DRAM traffic.
    FwStatus prepare(const ModelDesc& model, Arena& scratch, BlobInfo* info, bool allowAutotune = true,
                     uint32_t preference = kPreferFastSingleAnswer);
    FwStatus release(uint32_t handle);
    // detailedProfile: also read the PMU's DMA and unit counters per operation (more register
    // reads, which cost a mailbox round trip each on the emulated SoC).
    FwStatus execute(uint32_t handle, const IoArg* inputs, uint32_t inputCount, const IoArg* outputs,
                     uint32_t outputCount, ExecResult* result, bool detailedProfile = false);
    // Drops every blob and buffer and resets the NPU.
    FwStatus reset();

    // Memory domains (docs/execution.md). A buffer is sized by its roles (every role must agree
    // on the dimensions, and the spec's with them), lives in firmware DRAM, and is found only by
    // its owner's calls. write/read copy between the host window [addr, +length) and the buffer
    // (copyFrom / copyTo); length must be the tensor's bytes. Errors name the token and the role
    // or argument.
    FwStatus allocateBuffer(const BufferSpec& spec, uint32_t* token);
    FwStatus releaseBuffer(uint32_t session, uint32_t token);
    FwStatus writeBuffer(uint32_t session, uint32_t token, uint64_t addr, uint64_t length, uint32_t rank,
                         const uint32_t* dims);
    FwStatus readBuffer(uint32_t session, uint32_t token, uint64_t addr, uint64_t length);
    // Frees every buffer of a session (its client went away); returns how many.
    uint32_t releaseSessionBuffers(uint32_t session);
    // Points each argument naming a buffer at its firmware memory, after checking the buffer's
    // owner, roles (this model, input or output, index), data (an input must hold some) and
    // dimensions; one buffer cannot be an input and an output of one execution.
    FwStatus bindBuffers(uint32_t session, uint32_t handle, IoArg* inputs, uint32_t inputCount,
                         IoArg* outputs, uint32_t outputCount);
    // After a successful execution: the output buffers hold data.
    void buffersWritten(const IoArg* outputs, uint32_t outputCount);
    uint32_t buffersInUse() const;
    uint64_t bufferBytes() const;
    uint64_t dramBytesInUse() const;
    // Tensor bytes copied between client memory and device memory: execution arguments staged
    // in the host window (inputs when run, outputs when they succeed) and buffer copies.
    // Arguments in pools mapped by fd (IoArg::poolMapped) and driver-managed buffers move nothing.
    uint64_t copiedBytes() const;
    // Constant bytes the prepares were given: values that came inside their messages
    // (OperandDesc::value), and values they read at a device address (staged by the host in its
    // window, or in a pool mapped by fd). docs/execution.md, "Memory model".
    uint64_t constantBytesInMessage() const;
    uint64_t constantBytesInMemory() const;

    // Blob store access beyond prepare/release (additions of the foundation issue):
    // loadBlob validates a blob image (e.g. from a cache file) completely and holds it;
    // blobImage exposes a held blob's bytes (valid until its last release) for saving to a cache;
    // retain adds a reference that release() drops.
    FwStatus loadBlob(const uint8_t* bytes, uint64_t size, BlobInfo* info);
    FwStatus blobImage(uint32_t handle, const uint8_t** bytes, uint64_t* size) const;
    FwStatus retain(uint32_t handle);

    uint32_t loadedModels() const;
    // The runtime arena's size and high-water mark (the firmware's own memory, GetCounters).
    size_t arenaBytes() const;
    size_t arenaPeakBytes() const;
    // The highest use of a compile's scratch arena just before the compiler placed its blob
    // image there (the working memory of compiling, autotuning included, without the blob).
    size_t compileScratchHighWater() const;
    // True iff some operation the compiler claims accepts operands of this HAL OperandType.
    static bool claimsOperandType(uint32_t type);
    // The measured figure for operands of `type` (docs/firmware.md, "Capabilities"): reference
    // workloads run once, at the first init(), on the NPU. TENSOR_QUANT8_ASYMM_SIGNED has its
    // own workload; every other claimed type is quoted from the TENSOR_QUANT8_ASYMM one (its
    // scalars, biases and filters are parts of such operations); a type the NPU runs nothing of
    // is FLT_MAX (the HAL's "unsupported"). Fails with why the workloads could not run.
    FwStatus performance(uint32_t type, PerformanceFigure* out) const;

private:
    struct Impl;
    struct TuningOutcome {
        uint32_t trials = 0;
        uint64_t greedyCycles = 0, tunedCycles = 0;
    };
    FwStatus tune(const ModelDesc& model, Arena& scratch, bool leastTraffic, MacTiling** tilings,
                  TuningOutcome* outcome);
    Impl* impl_;  // lives in the arena
};

}  // namespace npu::fw
