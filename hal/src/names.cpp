// Name tables for the HAL enums (generated once from types.h; keep in sync).
#include <cstddef>

#include "npu/hal/types.h"

namespace npu::hal {
namespace {
struct OperandTypeName {
    OperandType value;
    std::string_view name;
};
constexpr OperandTypeName kOperandTypeNames[] = {
    {OperandType::FLOAT32, "FLOAT32"},
    {OperandType::INT32, "INT32"},
    {OperandType::UINT32, "UINT32"},
    {OperandType::TENSOR_FLOAT32, "TENSOR_FLOAT32"},
    {OperandType::TENSOR_INT32, "TENSOR_INT32"},
    {OperandType::TENSOR_QUANT8_ASYMM, "TENSOR_QUANT8_ASYMM"},
    {OperandType::BOOL, "BOOL"},
    {OperandType::TENSOR_QUANT16_SYMM, "TENSOR_QUANT16_SYMM"},
    {OperandType::TENSOR_FLOAT16, "TENSOR_FLOAT16"},
    {OperandType::TENSOR_BOOL8, "TENSOR_BOOL8"},
    {OperandType::FLOAT16, "FLOAT16"},
    {OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL, "TENSOR_QUANT8_SYMM_PER_CHANNEL"},
    {OperandType::TENSOR_QUANT16_ASYMM, "TENSOR_QUANT16_ASYMM"},
    {OperandType::TENSOR_QUANT8_SYMM, "TENSOR_QUANT8_SYMM"},
    {OperandType::TENSOR_QUANT8_ASYMM_SIGNED, "TENSOR_QUANT8_ASYMM_SIGNED"},
    {OperandType::SUBGRAPH, "SUBGRAPH"},
    {OperandType::OEM, "OEM"},
    {OperandType::TENSOR_OEM_BYTE, "TENSOR_OEM_BYTE"},
};
struct OperationTypeName {
    OperationType value;
    std::string_view name;
};
constexpr OperationTypeName kOperationTypeNames[] = {
    {OperationType::ADD, "ADD"},
    {OperationType::AVERAGE_POOL_2D, "AVERAGE_POOL_2D"},
    {OperationType::CONCATENATION, "CONCATENATION"},
    {OperationType::CONV_2D, "CONV_2D"},
    {OperationType::DEPTHWISE_CONV_2D, "DEPTHWISE_CONV_2D"},
    {OperationType::DEPTH_TO_SPACE, "DEPTH_TO_SPACE"},
    {OperationType::DEQUANTIZE, "DEQUANTIZE"},
    {OperationType::EMBEDDING_LOOKUP, "EMBEDDING_LOOKUP"},
    {OperationType::FLOOR, "FLOOR"},
    {OperationType::FULLY_CONNECTED, "FULLY_CONNECTED"},
    {OperationType::HASHTABLE_LOOKUP, "HASHTABLE_LOOKUP"},
    {OperationType::L2_NORMALIZATION, "L2_NORMALIZATION"},
    {OperationType::L2_POOL_2D, "L2_POOL_2D"},
    {OperationType::LOCAL_RESPONSE_NORMALIZATION, "LOCAL_RESPONSE_NORMALIZATION"},
    {OperationType::LOGISTIC, "LOGISTIC"},
    {OperationType::LSH_PROJECTION, "LSH_PROJECTION"},
    {OperationType::LSTM, "LSTM"},
    {OperationType::MAX_POOL_2D, "MAX_POOL_2D"},
    {OperationType::MUL, "MUL"},
    {OperationType::RELU, "RELU"},
    {OperationType::RELU1, "RELU1"},
    {OperationType::RELU6, "RELU6"},
    {OperationType::RESHAPE, "RESHAPE"},
    {OperationType::RESIZE_BILINEAR, "RESIZE_BILINEAR"},
    {OperationType::RNN, "RNN"},
    {OperationType::SOFTMAX, "SOFTMAX"},
    {OperationType::SPACE_TO_DEPTH, "SPACE_TO_DEPTH"},
    {OperationType::SVDF, "SVDF"},
    {OperationType::TANH, "TANH"},
    {OperationType::BATCH_TO_SPACE_ND, "BATCH_TO_SPACE_ND"},
    {OperationType::DIV, "DIV"},
    {OperationType::MEAN, "MEAN"},
    {OperationType::PAD, "PAD"},
    {OperationType::SPACE_TO_BATCH_ND, "SPACE_TO_BATCH_ND"},
    {OperationType::SQUEEZE, "SQUEEZE"},
    {OperationType::STRIDED_SLICE, "STRIDED_SLICE"},
    {OperationType::SUB, "SUB"},
    {OperationType::TRANSPOSE, "TRANSPOSE"},
    {OperationType::ABS, "ABS"},
    {OperationType::ARGMAX, "ARGMAX"},
    {OperationType::ARGMIN, "ARGMIN"},
    {OperationType::AXIS_ALIGNED_BBOX_TRANSFORM, "AXIS_ALIGNED_BBOX_TRANSFORM"},
    {OperationType::BIDIRECTIONAL_SEQUENCE_LSTM, "BIDIRECTIONAL_SEQUENCE_LSTM"},
    {OperationType::BIDIRECTIONAL_SEQUENCE_RNN, "BIDIRECTIONAL_SEQUENCE_RNN"},
    {OperationType::BOX_WITH_NMS_LIMIT, "BOX_WITH_NMS_LIMIT"},
    {OperationType::CAST, "CAST"},
    {OperationType::CHANNEL_SHUFFLE, "CHANNEL_SHUFFLE"},
    {OperationType::DETECTION_POSTPROCESSING, "DETECTION_POSTPROCESSING"},
    {OperationType::EQUAL, "EQUAL"},
    {OperationType::EXP, "EXP"},
    {OperationType::EXPAND_DIMS, "EXPAND_DIMS"},
    {OperationType::GATHER, "GATHER"},
    {OperationType::GENERATE_PROPOSALS, "GENERATE_PROPOSALS"},
    {OperationType::GREATER, "GREATER"},
    {OperationType::GREATER_EQUAL, "GREATER_EQUAL"},
    {OperationType::GROUPED_CONV_2D, "GROUPED_CONV_2D"},
    {OperationType::HEATMAP_MAX_KEYPOINT, "HEATMAP_MAX_KEYPOINT"},
    {OperationType::INSTANCE_NORMALIZATION, "INSTANCE_NORMALIZATION"},
    {OperationType::LESS, "LESS"},
    {OperationType::LESS_EQUAL, "LESS_EQUAL"},
    {OperationType::LOG, "LOG"},
    {OperationType::LOGICAL_AND, "LOGICAL_AND"},
    {OperationType::LOGICAL_NOT, "LOGICAL_NOT"},
    {OperationType::LOGICAL_OR, "LOGICAL_OR"},
    {OperationType::LOG_SOFTMAX, "LOG_SOFTMAX"},
    {OperationType::MAXIMUM, "MAXIMUM"},
    {OperationType::MINIMUM, "MINIMUM"},
    {OperationType::NEG, "NEG"},
    {OperationType::NOT_EQUAL, "NOT_EQUAL"},
    {OperationType::PAD_V2, "PAD_V2"},
    {OperationType::POW, "POW"},
    {OperationType::PRELU, "PRELU"},
    {OperationType::QUANTIZE, "QUANTIZE"},
    {OperationType::QUANTIZED_16BIT_LSTM, "QUANTIZED_16BIT_LSTM"},
    {OperationType::RANDOM_MULTINOMIAL, "RANDOM_MULTINOMIAL"},
    {OperationType::REDUCE_ALL, "REDUCE_ALL"},
    {OperationType::REDUCE_ANY, "REDUCE_ANY"},
    {OperationType::REDUCE_MAX, "REDUCE_MAX"},
    {OperationType::REDUCE_MIN, "REDUCE_MIN"},
    {OperationType::REDUCE_PROD, "REDUCE_PROD"},
    {OperationType::REDUCE_SUM, "REDUCE_SUM"},
    {OperationType::ROI_ALIGN, "ROI_ALIGN"},
    {OperationType::ROI_POOLING, "ROI_POOLING"},
    {OperationType::RSQRT, "RSQRT"},
    {OperationType::SELECT, "SELECT"},
    {OperationType::SIN, "SIN"},
    {OperationType::SLICE, "SLICE"},
    {OperationType::SPLIT, "SPLIT"},
    {OperationType::SQRT, "SQRT"},
    {OperationType::TILE, "TILE"},
    {OperationType::TOPK_V2, "TOPK_V2"},
    {OperationType::TRANSPOSE_CONV_2D, "TRANSPOSE_CONV_2D"},
    {OperationType::UNIDIRECTIONAL_SEQUENCE_LSTM, "UNIDIRECTIONAL_SEQUENCE_LSTM"},
    {OperationType::UNIDIRECTIONAL_SEQUENCE_RNN, "UNIDIRECTIONAL_SEQUENCE_RNN"},
    {OperationType::RESIZE_NEAREST_NEIGHBOR, "RESIZE_NEAREST_NEIGHBOR"},
    {OperationType::QUANTIZED_LSTM, "QUANTIZED_LSTM"},
    {OperationType::IF, "IF"},
    {OperationType::WHILE, "WHILE"},
    {OperationType::ELU, "ELU"},
    {OperationType::HARD_SWISH, "HARD_SWISH"},
    {OperationType::FILL, "FILL"},
    {OperationType::RANK, "RANK"},
    {OperationType::OEM_OPERATION, "OEM_OPERATION"},
};
struct OperandLifeTimeName {
    OperandLifeTime value;
    std::string_view name;
};
constexpr OperandLifeTimeName kLifetimeNames[] = {
    {OperandLifeTime::TEMPORARY_VARIABLE, "TEMPORARY_VARIABLE"},
    {OperandLifeTime::SUBGRAPH_INPUT, "SUBGRAPH_INPUT"},
    {OperandLifeTime::SUBGRAPH_OUTPUT, "SUBGRAPH_OUTPUT"},
    {OperandLifeTime::CONSTANT_COPY, "CONSTANT_COPY"},
    {OperandLifeTime::CONSTANT_REFERENCE, "CONSTANT_REFERENCE"},
    {OperandLifeTime::NO_VALUE, "NO_VALUE"},
    {OperandLifeTime::SUBGRAPH, "SUBGRAPH"},
};
}  // namespace

#define NPU_NAME_LOOKUP(Enum, table)         \
    std::string_view toString(Enum v) {      \
        for (const auto& e : table)          \
            if (e.value == v) return e.name; \
        return "UNKNOWN";                    \
    }
NPU_NAME_LOOKUP(OperandType, kOperandTypeNames)
NPU_NAME_LOOKUP(OperationType, kOperationTypeNames)
NPU_NAME_LOOKUP(OperandLifeTime, kLifetimeNames)
#undef NPU_NAME_LOOKUP

namespace {
template <typename E, size_t N, typename T>
std::optional<E> lookup(const T (&table)[N], std::string_view name) {
    for (const auto& e : table)
        if (e.name == name) return e.value;
    return std::nullopt;
}
}  // namespace

std::optional<OperandType> operandTypeFromString(std::string_view n) {
    return lookup<OperandType>(kOperandTypeNames, n);
}
std::optional<OperationType> operationTypeFromString(std::string_view n) {
    return lookup<OperationType>(kOperationTypeNames, n);
}
std::optional<OperandLifeTime> lifetimeFromString(std::string_view n) {
    if (n == "MODEL_INPUT") return OperandLifeTime::SUBGRAPH_INPUT;  // HAL 1.0-1.2 aliases
    if (n == "MODEL_OUTPUT") return OperandLifeTime::SUBGRAPH_OUTPUT;
    return lookup<OperandLifeTime>(kLifetimeNames, n);
}

std::string_view toString(ErrorStatus s) {
    switch (s) {
        case ErrorStatus::NONE:
            return "NONE";
        case ErrorStatus::DEVICE_UNAVAILABLE:
            return "DEVICE_UNAVAILABLE";
        case ErrorStatus::GENERAL_FAILURE:
            return "GENERAL_FAILURE";
        case ErrorStatus::OUTPUT_INSUFFICIENT_SIZE:
            return "OUTPUT_INSUFFICIENT_SIZE";
        case ErrorStatus::INVALID_ARGUMENT:
            return "INVALID_ARGUMENT";
        case ErrorStatus::MISSED_DEADLINE_TRANSIENT:
            return "MISSED_DEADLINE_TRANSIENT";
        case ErrorStatus::MISSED_DEADLINE_PERSISTENT:
            return "MISSED_DEADLINE_PERSISTENT";
        case ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT:
            return "RESOURCE_EXHAUSTED_TRANSIENT";
        case ErrorStatus::RESOURCE_EXHAUSTED_PERSISTENT:
            return "RESOURCE_EXHAUSTED_PERSISTENT";
    }
    return "UNKNOWN";
}

bool isScalarType(OperandType t) {
    switch (t) {
        case OperandType::FLOAT32:
        case OperandType::INT32:
        case OperandType::UINT32:
        case OperandType::BOOL:
        case OperandType::FLOAT16:
        case OperandType::SUBGRAPH:
        case OperandType::OEM:
            return true;
        default:
            return false;
    }
}

bool isQuantizedType(OperandType t) {
    switch (t) {
        case OperandType::TENSOR_QUANT8_ASYMM:
        case OperandType::TENSOR_QUANT8_ASYMM_SIGNED:
        case OperandType::TENSOR_QUANT8_SYMM:
        case OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL:
        case OperandType::TENSOR_QUANT16_SYMM:
        case OperandType::TENSOR_QUANT16_ASYMM:
            return true;
        default:
            return false;
    }
}

size_t elementSize(OperandType t) {
    switch (t) {
        case OperandType::FLOAT32:
        case OperandType::INT32:
        case OperandType::UINT32:
        case OperandType::TENSOR_FLOAT32:
        case OperandType::TENSOR_INT32:
        case OperandType::SUBGRAPH:
            return 4;
        case OperandType::FLOAT16:
        case OperandType::TENSOR_FLOAT16:
        case OperandType::TENSOR_QUANT16_SYMM:
        case OperandType::TENSOR_QUANT16_ASYMM:
            return 2;
        case OperandType::TENSOR_QUANT8_ASYMM:
        case OperandType::BOOL:
        case OperandType::TENSOR_BOOL8:
        case OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL:
        case OperandType::TENSOR_QUANT8_SYMM:
        case OperandType::TENSOR_QUANT8_ASYMM_SIGNED:
        case OperandType::TENSOR_OEM_BYTE:
            return 1;
        case OperandType::OEM:
            return 0;
    }
    return 0;
}

}  // namespace npu::hal
