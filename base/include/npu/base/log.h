#pragma once
// The host libraries' logging: one stderr line per message, "npu[TAG] message". Verbose messages
// are printed when the environment variable NPU_VLOG (a list separated by commas, spaces or
// semicolons) contains the tag, "all" or "1"; errors always are. Tags: `driver` (the shim's HAL
// calls), `protocol` (RPC calls and frames), `firmware` (the firmware's requests, through its
// LogSink on the host platform), `sim` (the simulated NPU's doorbells and interrupts), `cache`
// (compilation cache), `compile` (autotuning).

#include <cstdarg>

namespace npu::base {

bool vlogEnabled(const char* tag);
void vlog(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void logError(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace npu::base

// A verbose message, its arguments evaluated only when the tag is enabled.
#define NPU_VLOG(tag, ...)                                                      \
    do {                                                                        \
        if (::npu::base::vlogEnabled(tag)) ::npu::base::vlog(tag, __VA_ARGS__); \
    } while (0)
