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
    // Read once: the environment is fixed for the life of the process in practice. Asked on
    // every RPC (the firmware logs each request), so the silent default answers at once.
    static const std::string s = [] {
        const char* env = std::getenv("NPU_VLOG");
        std::string v = std::string(",") + (env ? env : "") + ",";
        for (char& c : v)
            if (c == ' ' || c == ';') c = ',';
        return v;
    }();
    static const bool none = s.find_first_not_of(',') == std::string::npos;
    static const bool every = s.find(",all,") != std::string::npos || s.find(",1,") != std::string::npos;
    if (none || every) return every;
    const size_t n = std::strlen(tag);
    if (n == 0) return false;
    for (size_t at = s.find(tag); at != std::string::npos; at = s.find(tag, at + 1)) {
        if (s[at - 1] == ',' && s[at + n] == ',') return true;
    }
    return false;
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
