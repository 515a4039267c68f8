#pragma once
#include <cstdint>
#include <string_view>

namespace npu::hal {

// NN HAL 1.3 ErrorStatus, with the HAL's numeric values.
enum class ErrorStatus : int32_t {
    NONE = 0,
    DEVICE_UNAVAILABLE = 1,
    GENERAL_FAILURE = 2,
    OUTPUT_INSUFFICIENT_SIZE = 3,
    INVALID_ARGUMENT = 4,
    MISSED_DEADLINE_TRANSIENT = 5,
    MISSED_DEADLINE_PERSISTENT = 6,
    RESOURCE_EXHAUSTED_TRANSIENT = 7,
    RESOURCE_EXHAUSTED_PERSISTENT = 8,
};

std::string_view toString(ErrorStatus status);

}  // namespace npu::hal
