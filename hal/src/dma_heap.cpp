#include "npu/hal/dma_heap.h"

#include <fcntl.h>
#include <linux/dma-heap.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace npu::hal {

DmaHeapStatus dmaHeapStatus() {
    const int fd = open(kDmaHeapPath, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return {false,
                std::string(kDmaHeapPath) + ": " + std::strerror(errno) +
                    " (no dma-heap on this host: dma-buf pools, the AHardwareBuffer BLOB analogue, are "
                    "unavailable)"};
    }
    close(fd);
    return {true, std::string(kDmaHeapPath)};
}

std::unique_ptr<Memory> createHardwareBufferBlob(size_t size) {
    const int heap = open(kDmaHeapPath, O_RDONLY | O_CLOEXEC);
    if (heap < 0) return nullptr;
    dma_heap_allocation_data request{};
    request.len = size == 0 ? 1 : size;
    request.fd_flags = O_RDWR | O_CLOEXEC;
    const int r = ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &request);
    close(heap);
    if (r != 0) return nullptr;
    const int fd = static_cast<int>(request.fd);
    auto memory = Memory::mapFd(fd, 0, size, PROT_READ | PROT_WRITE);  // keeps a duplicate
    close(fd);
    return memory;
}

}  // namespace npu::hal
