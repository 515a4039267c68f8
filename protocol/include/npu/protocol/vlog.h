#pragma once
// The project's host-side logging facility: one stderr line per message when NPU_VLOG (a list
// separated by commas, spaces or semicolons) contains the tag, "all" or "1". Tags: `driver`
// (the shim's HAL calls), `protocol` (RPC calls and frames), `firmware` (the firmware's requests,
// through its LogSink on the host platform), `sim` (the simulated NPU's doorbells and
// interrupts), `cache` (compilation cache), `compile` (autotuning). It lives in protocol/ because
// that folder depends on nothing; the shim, the firmware's host platform and the tools use it.

#include <cstdarg>

namespace npu::proto {

bool vlogEnabled(const char* tag);
void vlog(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Errors always go to stderr.
void logError(const char* tag, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace npu::proto
