#pragma once
// Pools a client passes by fd are its files: one it truncates while the firmware has it mapped
// would make the next access of the NPU's DMA or the compiler a SIGBUS, and kill the firmware
// host with every other client's work. The guard (the approach of Wayland's shared-memory
// pools) catches a SIGBUS inside a guarded range, maps anonymous zero pages over the whole range
// so the access completes, and marks the range hit; the firmware then fails that client's use
// (ClientPools::takeFault). A SIGBUS anywhere else goes to the previous disposition.

#include <cstdint>

namespace npu::fw::host {

inline constexpr uint32_t kNoGuard = UINT32_MAX;

// Guards [begin, begin + bytes) of this process's memory; the handle, or kNoGuard when the
// table (1024 ranges for the process) is full. Installs the handler when it is not installed.
uint32_t guardRange(uint8_t* begin, uint64_t bytes);
void unguardRange(uint32_t handle);
// True once a SIGBUS hit the range (its contents are then zero pages, not the file's).
bool rangeHit(uint32_t handle);

}  // namespace npu::fw::host
