// FwStatus::make: picolibc and glibc both provide vsnprintf, which is freestanding enough for
// the firmware (no allocation, no OS call).
#include <cstdarg>
#include <cstdio>

#include "npu/fw/runtime.h"

namespace npu::fw {

FwStatus FwStatus::make(Code code, const char* fmt, ...) {
    FwStatus s;
    s.code = code;
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(s.message, sizeof(s.message), fmt, args);
    va_end(args);
    return s;
}

FwStatus stoppedStatus(StopReason reason, const char* work, const char* step, uint32_t index, uint32_t done,
                       uint32_t total, const char* verb) {
    Code code = Code::kGeneralFailure;
    const char* why = "cancelled";
    switch (reason) {
        case StopReason::kNone:
            return FwStatus::okStatus();
        case StopReason::kCancelled:
            break;
        case StopReason::kDeadlineTransient:
        case StopReason::kDeadlinePersistent:
            code = reason == StopReason::kDeadlineTransient ? Code::kMissedDeadlineTransient
                                                            : Code::kMissedDeadlinePersistent;
            why = "missed deadline";
            break;
    }
    return FwStatus::make(code, "%s: the %s was stopped before %s %u (%u of %u %s)", why, work, step,
                          static_cast<unsigned>(index), static_cast<unsigned>(done),
                          static_cast<unsigned>(total), verb);
}

}  // namespace npu::fw
