#pragma once
// The NN HAL 1.3 / AIDL types, with the HAL's numeric values. Host-side only: the firmware has
// its own view of these numbers through protocol/npu.proto (a test checks they agree).

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "npu/hal/error_status.h"

namespace npu::hal {

enum class OperandType : int32_t {
    FLOAT32 = 0,
    INT32 = 1,
    UINT32 = 2,
    TENSOR_FLOAT32 = 3,
    TENSOR_INT32 = 4,
    TENSOR_QUANT8_ASYMM = 5,
    BOOL = 6,
    TENSOR_QUANT16_SYMM = 7,
    TENSOR_FLOAT16 = 8,
    TENSOR_BOOL8 = 9,
    FLOAT16 = 10,
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11,
    TENSOR_QUANT16_ASYMM = 12,
    TENSOR_QUANT8_SYMM = 13,
    TENSOR_QUANT8_ASYMM_SIGNED = 14,
    SUBGRAPH = 15,
    OEM = 10000,
    TENSOR_OEM_BYTE = 10001,
};
inline constexpr int32_t kOperandTypeLast = 15;  // highest non-OEM value

enum class OperationType : int32_t {
    ADD = 0,
    AVERAGE_POOL_2D = 1,
    CONCATENATION = 2,
    CONV_2D = 3,
    DEPTHWISE_CONV_2D = 4,
    DEPTH_TO_SPACE = 5,
    DEQUANTIZE = 6,
    EMBEDDING_LOOKUP = 7,
    FLOOR = 8,
    FULLY_CONNECTED = 9,
    HASHTABLE_LOOKUP = 10,
    L2_NORMALIZATION = 11,
    L2_POOL_2D = 12,
    LOCAL_RESPONSE_NORMALIZATION = 13,
    LOGISTIC = 14,
    LSH_PROJECTION = 15,
    LSTM = 16,
    MAX_POOL_2D = 17,
    MUL = 18,
    RELU = 19,
    RELU1 = 20,
    RELU6 = 21,
    RESHAPE = 22,
    RESIZE_BILINEAR = 23,
    RNN = 24,
    SOFTMAX = 25,
    SPACE_TO_DEPTH = 26,
    SVDF = 27,
    TANH = 28,
    BATCH_TO_SPACE_ND = 29,
    DIV = 30,
    MEAN = 31,
    PAD = 32,
    SPACE_TO_BATCH_ND = 33,
    SQUEEZE = 34,
    STRIDED_SLICE = 35,
    SUB = 36,
    TRANSPOSE = 37,
    ABS = 38,
    ARGMAX = 39,
    ARGMIN = 40,
    AXIS_ALIGNED_BBOX_TRANSFORM = 41,
    BIDIRECTIONAL_SEQUENCE_LSTM = 42,
    BIDIRECTIONAL_SEQUENCE_RNN = 43,
    BOX_WITH_NMS_LIMIT = 44,
    CAST = 45,
    CHANNEL_SHUFFLE = 46,
    DETECTION_POSTPROCESSING = 47,
    EQUAL = 48,
    EXP = 49,
    EXPAND_DIMS = 50,
    GATHER = 51,
    GENERATE_PROPOSALS = 52,
    GREATER = 53,
    GREATER_EQUAL = 54,
    GROUPED_CONV_2D = 55,
    HEATMAP_MAX_KEYPOINT = 56,
    INSTANCE_NORMALIZATION = 57,
    LESS = 58,
    LESS_EQUAL = 59,
    LOG = 60,
    LOGICAL_AND = 61,
    LOGICAL_NOT = 62,
    LOGICAL_OR = 63,
    LOG_SOFTMAX = 64,
    MAXIMUM = 65,
    MINIMUM = 66,
    NEG = 67,
    NOT_EQUAL = 68,
    PAD_V2 = 69,
    POW = 70,
    PRELU = 71,
    QUANTIZE = 72,
    QUANTIZED_16BIT_LSTM = 73,
    RANDOM_MULTINOMIAL = 74,
    REDUCE_ALL = 75,
    REDUCE_ANY = 76,
    REDUCE_MAX = 77,
    REDUCE_MIN = 78,
    REDUCE_PROD = 79,
    REDUCE_SUM = 80,
    ROI_ALIGN = 81,
    ROI_POOLING = 82,
    RSQRT = 83,
    SELECT = 84,
    SIN = 85,
    SLICE = 86,
    SPLIT = 87,
    SQRT = 88,
    TILE = 89,
    TOPK_V2 = 90,
    TRANSPOSE_CONV_2D = 91,
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92,
    UNIDIRECTIONAL_SEQUENCE_RNN = 93,
    RESIZE_NEAREST_NEIGHBOR = 94,
    QUANTIZED_LSTM = 95,
    IF = 96,
    WHILE = 97,
    ELU = 98,
    HARD_SWISH = 99,
    FILL = 100,
    RANK = 101,
    OEM_OPERATION = 10000,
};
inline constexpr int32_t kOperationTypeLast = 101;  // highest non-OEM value

enum class OperandLifeTime : int32_t {
    TEMPORARY_VARIABLE = 0,
    SUBGRAPH_INPUT = 1,
    SUBGRAPH_OUTPUT = 2,
    CONSTANT_COPY = 3,
    CONSTANT_REFERENCE = 4,
    NO_VALUE = 5,
    SUBGRAPH = 6,
};

enum class FusedActivationFunc : int32_t { NONE = 0, RELU = 1, RELU1 = 2, RELU6 = 3 };
enum class Priority : int32_t { LOW = 0, MEDIUM = 1, HIGH = 2 };
enum class ExecutionPreference : int32_t { LOW_POWER = 0, FAST_SINGLE_ANSWER = 1, SUSTAINED_SPEED = 2 };
enum class DeviceType : int32_t { OTHER = 1, CPU = 2, GPU = 3, ACCELERATOR = 4 };
enum class MeasureTiming : int32_t { NO = 0, YES = 1 };

// Name <-> value (names exactly as in the HAL, e.g. "TENSOR_QUANT8_ASYMM", "CONV_2D").
std::string_view toString(OperandType type);
std::string_view toString(OperationType type);
std::string_view toString(OperandLifeTime lifetime);
std::optional<OperandType> operandTypeFromString(std::string_view name);
std::optional<OperationType> operationTypeFromString(std::string_view name);
std::optional<OperandLifeTime> lifetimeFromString(std::string_view name);

bool isScalarType(OperandType type);     // FLOAT32, INT32, UINT32, BOOL, FLOAT16, SUBGRAPH
bool isQuantizedType(OperandType type);  // the TENSOR_QUANT* types
size_t elementSize(OperandType type);    // bytes per element; 0 for OEM types

// ---- Model ------------------------------------------------------------------------------

// Where an operand's or argument's data lives: in Model::operandValues (CONSTANT_COPY), or in
// pool `poolIndex` (CONSTANT_REFERENCE and request arguments).
struct DataLocation {
    uint32_t poolIndex = 0;
    uint32_t offset = 0;
    uint32_t length = 0;
    uint32_t padding = 0;  // HAL 1.3 AIDL: bytes after `length` the caller allows us to touch
};

struct SymmPerChannelQuantParams {
    std::vector<float> scales;
    uint32_t channelDim = 0;
};

struct Operand {
    OperandType type = OperandType::TENSOR_FLOAT32;
    std::vector<uint32_t> dimensions;  // 0 = unknown dimension; empty = scalar or unknown rank
    float scale = 0.0f;
    int32_t zeroPoint = 0;
    OperandLifeTime lifetime = OperandLifeTime::TEMPORARY_VARIABLE;
    DataLocation location;
    std::optional<SymmPerChannelQuantParams> channelQuant;  // extraParams
};

struct Operation {
    OperationType type = OperationType::ADD;
    std::vector<uint32_t> inputs;
    std::vector<uint32_t> outputs;
};

struct Subgraph {
    std::vector<Operand> operands;
    std::vector<Operation> operations;  // in execution order
    std::vector<uint32_t> inputIndexes;
    std::vector<uint32_t> outputIndexes;
};

// A shared memory region: a memfd (the ashmem analogue), or an fd + offset + length mapping
// ("mappable file"). Owns its mapping; the fd is kept so the shim can pass it to a device.
class Memory {
public:
    // Creates a memfd of `size` bytes, mapped read-write.
    static std::unique_ptr<Memory> create(size_t size, std::string_view name = "npu-memory");
    // Maps an existing fd (dup'ed; the caller keeps its own fd). prot = PROT_READ[|PROT_WRITE].
    static std::unique_ptr<Memory> mapFd(int fd, size_t offset, size_t size, int prot);
    ~Memory();
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;

    uint8_t* data() { return data_; }
    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    int fd() const { return fd_; }
    size_t fdOffset() const { return offset_; }
    bool writable() const { return writable_; }

private:
    Memory(int fd, uint8_t* data, size_t size, size_t offset, void* mapBase, size_t mapLen, bool writable);
    int fd_ = -1;
    uint8_t* data_ = nullptr;
    size_t size_ = 0;
    size_t offset_ = 0;
    void* mapBase_ = nullptr;
    size_t mapLen_ = 0;
    bool writable_ = false;
};

struct Model {
    Subgraph main;
    std::vector<Subgraph> referenced;
    std::vector<uint8_t> operandValues;          // CONSTANT_COPY data
    std::vector<std::shared_ptr<Memory>> pools;  // CONSTANT_REFERENCE data
    bool relaxComputationFloat32toFloat16 = false;
};

// ---- Request ----------------------------------------------------------------------------

struct RequestArgument {
    bool hasNoValue = false;
    DataLocation location;
    std::vector<uint32_t> dimensions;  // empty = use the model's
};

// A request pool is either shared memory or a driver-managed buffer token (memory domains).
using RequestMemoryPool = std::variant<std::shared_ptr<Memory>, uint32_t /*IBuffer token*/>;

struct Request {
    std::vector<RequestArgument> inputs;
    std::vector<RequestArgument> outputs;
    std::vector<RequestMemoryPool> pools;
};

// ---- Execution results ------------------------------------------------------------------

inline constexpr uint64_t kNoTiming = std::numeric_limits<uint64_t>::max();

struct Timing {
    uint64_t timeOnDeviceUs = kNoTiming;  // "unavailable" = UINT64_MAX, as in the HAL
    uint64_t timeInDriverUs = kNoTiming;
};

struct OutputShape {
    std::vector<uint32_t> dimensions;
    bool isSufficient = true;
};

// Vendor extension beyond the HAL: what the device spent on each operation of the model.
struct OperationProfile {
    uint32_t operationIndex = 0;
    OperationType type = OperationType::ADD;
    uint64_t cycles = 0;
    uint64_t macs = 0;
    uint64_t stallCycles = 0;
    // With MeasureTiming::YES on the NPU: DMA bytes, DMA stalls and busy cycles per unit.
    uint64_t dramReadBytes = 0, dramWriteBytes = 0, stallDmaCycles = 0;
    uint64_t loadActiveCycles = 0, computeActiveCycles = 0, storeActiveCycles = 0;
};

struct ExecutionResult {
    std::vector<OutputShape> outputShapes;
    Timing timing;
    uint64_t deviceCycles = 0;              // 0 when the device does not count cycles
    std::vector<OperationProfile> profile;  // empty when the device does not profile
};

// ---- Capabilities -----------------------------------------------------------------------

struct PerformanceInfo {
    float execTime = 1.0f;  // relative to the CPU reference (lower is faster)
    float powerUsage = 1.0f;
};

struct OperandPerformance {
    OperandType type;
    PerformanceInfo info;
};

struct Capabilities {
    PerformanceInfo relaxedFloat32toFloat16PerformanceScalar;
    PerformanceInfo relaxedFloat32toFloat16PerformanceTensor;
    std::vector<OperandPerformance> operandPerformance;  // sorted by type
    PerformanceInfo ifPerformance;
    PerformanceInfo whilePerformance;
};

// Memory domains (IDevice::allocate).
struct BufferDesc {
    std::vector<uint32_t> dimensions;
};
struct BufferRole {
    uint32_t modelIndex = 0;  // index into the preparedModels argument
    uint32_t ioIndex = 0;
    float probability = 1.0f;
};

// A 32-byte compilation-caching token (Constant::BYTE_SIZE_OF_CACHE_TOKEN).
inline constexpr size_t kByteSizeOfCacheToken = 32;
using CacheToken = std::array<uint8_t, kByteSizeOfCacheToken>;

// Deadlines are absolute steady-clock times; nullopt = none.
using Deadline = std::optional<std::chrono::steady_clock::time_point>;

}  // namespace npu::hal
