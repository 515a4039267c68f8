#pragma once
// Minimal tagged logging for protocol/: one stderr line per message when NPU_VLOG contains the
// tag or "all" (the project's logging convention, without a dependency on another folder).

#include <cstdarg>

namespace npu::proto {

bool vlogEnabled(const char* tag);
void vlog(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Errors always go to stderr.
void logError(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace npu::proto
