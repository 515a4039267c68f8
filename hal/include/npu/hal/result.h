#pragma once
// Errors cross every host-side module boundary as values, never as exceptions:
// a fallible function returns npu::Result<T>; NPU_TRY (base/) propagates an error. npu::Error is
// the error that crosses the HAL: a HAL ErrorStatus + message (base::Error is the one below it).

#include <cstdint>
#include <expected>
#include <string>
#include <utility>
#include <vector>

#include "npu/base/try.h"
#include "npu/hal/error_status.h"

namespace npu {

struct Error {
    hal::ErrorStatus status = hal::ErrorStatus::GENERAL_FAILURE;
    std::string message;
    // OUTPUT_INSUFFICIENT_SIZE only: per output, the dimensions needed and whether the given
    // buffer sufficed (the HAL returns output shapes together with this status).
    struct Shape {
        std::vector<uint32_t> dimensions;
        bool isSufficient = true;
    };
    std::vector<Shape> outputShapes;
};

template <typename T>
using Result = std::expected<T, Error>;

// Result<void> helpers.
using Status = Result<void>;

inline std::unexpected<Error> fail(hal::ErrorStatus status, std::string message) {
    return std::unexpected(Error{status, std::move(message)});
}
inline std::unexpected<Error> invalidArgument(std::string message) {
    return fail(hal::ErrorStatus::INVALID_ARGUMENT, std::move(message));
}
inline std::unexpected<Error> generalFailure(std::string message) {
    return fail(hal::ErrorStatus::GENERAL_FAILURE, std::move(message));
}

}  // namespace npu
