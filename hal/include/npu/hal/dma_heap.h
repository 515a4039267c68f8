#pragma once
// dma-bufs from a dma-heap: the AHardwareBuffer BLOB analogue (docs/execution.md, "Pools passed
// by fd"). A dma-buf is passed to a driver like a memfd (its fd); where the host has no dma-heap
// that is reported, and nothing else is handed out in its place.

#include <cstddef>
#include <memory>
#include <string>

#include "npu/hal/types.h"

namespace npu::hal {

inline constexpr const char* kDmaHeapPath = "/dev/dma_heap/system";

// Whether this host can allocate dma-bufs: `available`, else `reason` says why not (e.g. the
// device node is absent). Shown by `npu info`.
struct DmaHeapStatus {
    bool available = false;
    std::string reason;
};
DmaHeapStatus dmaHeapStatus();

// A dma-buf of `size` bytes from the system dma-heap, mapped read-write. Null where there is no
// dma-heap or the allocation fails (dmaHeapStatus() says why); never a memfd in disguise.
std::unique_ptr<Memory> createHardwareBufferBlob(size_t size);

}  // namespace npu::hal
