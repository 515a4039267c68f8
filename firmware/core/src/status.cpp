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

}  // namespace npu::fw
