#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "npu/hal/types.h"

namespace npu::hal {

Memory::Memory(int fd, uint8_t* data, size_t size, size_t offset, void* mapBase, size_t mapLen, bool writable)
    : fd_(fd),
      data_(data),
      size_(size),
      offset_(offset),
      mapBase_(mapBase),
      mapLen_(mapLen),
      writable_(writable) {}

Memory::~Memory() {
    if (mapBase_ != nullptr && mapLen_ > 0) munmap(mapBase_, mapLen_);
    if (fd_ >= 0) close(fd_);
}

std::unique_ptr<Memory> Memory::create(size_t size, std::string_view name) {
    std::string n(name);
    int fd = memfd_create(n.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return nullptr;
    const size_t len = size == 0 ? 1 : size;  // mmap of 0 bytes is an error; keep one byte
    if (ftruncate(fd, static_cast<off_t>(len)) != 0) {
        close(fd);
        return nullptr;
    }
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        close(fd);
        return nullptr;
    }
    return std::unique_ptr<Memory>(new Memory(fd, static_cast<uint8_t*>(p), size, 0, p, len, true));
}

std::unique_ptr<Memory> Memory::mapFd(int fd, size_t offset, size_t size, int prot) {
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return nullptr;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t base = offset - offset % page;
    const size_t len = (offset - base) + (size == 0 ? 1 : size);
    void* p = mmap(nullptr, len, prot, MAP_SHARED, own, static_cast<off_t>(base));
    if (p == MAP_FAILED) {
        close(own);
        return nullptr;
    }
    return std::unique_ptr<Memory>(new Memory(own, static_cast<uint8_t*>(p) + (offset - base), size, offset,
                                              p, len, (prot & PROT_WRITE) != 0));
}

}  // namespace npu::hal
