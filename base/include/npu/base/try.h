#pragma once
// NPU_TRY: propagates the error of an expression returning std::expected (npu::Result,
// npu::base::Result, ...); evaluates to its value otherwise.
// Usage: auto x = NPU_TRY(f());   or   NPU_TRY(g());   (for Result<void>)

#include <expected>
#include <utility>

#define NPU_TRY(expr)                                                                 \
    ({                                                                                \
        auto&& npuTryResult_ = (expr);                                                \
        if (!npuTryResult_) return std::unexpected(std::move(npuTryResult_).error()); \
        std::move(npuTryResult_).value();                                             \
    })
