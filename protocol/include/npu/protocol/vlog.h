#pragma once
// The project's host-side logging facility: one stderr line per message when NPU_VLOG contains
// the tag or "all" (tags: protocol, driver, cache, execution, compilation, ...). It lives in
// protocol/ because that folder depends on nothing; the shim and the tools use it too.

#include <cstdarg>

namespace npu::proto {

bool vlogEnabled(const char* tag);
void vlog(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Errors always go to stderr.
void logError(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace npu::proto
