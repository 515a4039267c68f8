#include "npu/base/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace npu::base {

namespace {
void emit(const char* tag, const char* fmt, va_list args) {
    char line[1024];
    int n = std::snprintf(line, sizeof(line), "npu[%s] ", tag);
    std::vsnprintf(line + n, sizeof(line) - size_t(n) - 1, fmt, args);
    std::strcat(line, "\n");
    std::fputs(line, stderr);  // one call: lines of concurrent threads do not interleave
}
}  // namespace

bool vlogEnabled(const char* tag) {
    // Read once: the environment is fixed for the life of the process in practice.
    static const std::string s = [] {
        const char* env = std::getenv("NPU_VLOG");
        std::string v = std::string(",") + (env ? env : "") + ",";
        for (char& c : v)
            if (c == ' ' || c == ';') c = ',';
        return v;
    }();
    return s.find(",all,") != std::string::npos || s.find(std::string(",") + tag + ",") != std::string::npos;
}

void vlog(const char* tag, const char* fmt, ...) {
    if (!vlogEnabled(tag)) return;
    va_list args;
    va_start(args, fmt);
    emit(tag, fmt, args);
    va_end(args);
}

void logError(const char* tag, const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    emit(tag, fmt, args);
    va_end(args);
}

}  // namespace npu::base
