#include "host_window.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace npu::shim {

HostWindow::HostWindow(std::unique_ptr<hal::Memory> memory, uint64_t base, uint64_t size)
    : memory_(std::move(memory)), base_(base), size_(size) {
    freeBlocks_[0] = size;
}

namespace {

// The peer's DRAM fd must hold the whole window, and must not be able to shrink under our
// mapping: a smaller file (or one shrunk later) would make every access past its end a SIGBUS.
Status checkDramFd(int dramFd, uint64_t windowAddr, uint64_t windowBytes) {
    struct stat st {};
    if (fstat(dramFd, &st) != 0) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    std::string("the firmware's DRAM fd cannot be examined: ") + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        return fail(
            hal::ErrorStatus::DEVICE_UNAVAILABLE,
            "the firmware's DRAM fd is not a memory file (mode " + std::to_string(st.st_mode & S_IFMT) + ")");
    }
    const auto fileBytes = static_cast<uint64_t>(st.st_size);
    if (windowBytes > HostWindow::kMaxWindowBytes || windowAddr > fileBytes ||
        windowBytes > fileBytes - windowAddr) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "the firmware announced a host window at " + std::to_string(windowAddr) + " of " +
                        std::to_string(windowBytes) + " bytes, but its DRAM fd holds " +
                        std::to_string(fileBytes) + " bytes (the window must lie inside it and be at most " +
                        std::to_string(HostWindow::kMaxWindowBytes) + " bytes)");
    }
    const int seals = fcntl(dramFd, F_GET_SEALS);
    if (seals >= 0 && (seals & F_SEAL_SHRINK) == 0) {
        return fail(
            hal::ErrorStatus::DEVICE_UNAVAILABLE,
            "the firmware's DRAM memfd is not sealed against shrinking (F_SEAL_SHRINK); refusing to map it");
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<HostWindow>> HostWindow::map(int dramFd, uint64_t windowAddr, uint64_t windowBytes,
                                                    bool fdIsWindow) {
    if (windowBytes == 0)
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, "firmware offered an empty host window");
    const uint64_t offset = fdIsWindow ? 0 : windowAddr;
    NPU_TRY(checkDramFd(dramFd, offset, windowBytes));
    auto memory = hal::Memory::mapFd(dramFd, offset, windowBytes, PROT_READ | PROT_WRITE);
    if (!memory) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "cannot map the device-memory window (addr " + std::to_string(windowAddr) + ", " +
                        std::to_string(windowBytes) + " bytes) from the fd at offset " +
                        std::to_string(offset));
    }
    return std::unique_ptr<HostWindow>(new HostWindow(std::move(memory), windowAddr, windowBytes));
}

Result<std::unique_ptr<HostWindow>> HostWindow::local(uint64_t windowAddr, uint64_t windowBytes) {
    if (windowBytes == 0)
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE, "firmware offered an empty host window");
    auto memory = hal::Memory::create(windowBytes, "npu-host-window");
    if (!memory) {
        return fail(hal::ErrorStatus::RESOURCE_EXHAUSTED_PERSISTENT,
                    "cannot create a local host window of " + std::to_string(windowBytes) + " bytes");
    }
    return std::unique_ptr<HostWindow>(new HostWindow(std::move(memory), windowAddr, windowBytes));
}

Result<uint64_t> HostWindow::allocate(uint64_t bytes) {
    const uint64_t len = ((bytes == 0 ? 1 : bytes) + kAlign - 1) / kAlign * kAlign;
    std::lock_guard lock(mutex_);
    for (auto it = freeBlocks_.begin(); it != freeBlocks_.end(); ++it) {
        if (it->second < len) continue;
        const uint64_t offset = it->first;
        const uint64_t rest = it->second - len;
        auto node = freeBlocks_.extract(it);
        if (rest > 0) {
            node.key() = offset + len;
            node.mapped() = rest;
            freeBlocks_.insert(std::move(node));
            node = std::move(spare_);
        }
        if (node.empty()) {
            usedBlocks_[offset] = len;
        } else {
            node.key() = offset;
            node.mapped() = len;
            usedBlocks_.insert(std::move(node));
        }
        return base_ + offset;
    }
    return fail(hal::ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
                "device-memory window full: " + std::to_string(bytes) + " bytes requested, window is " +
                    std::to_string(size_) + " bytes");
}

void HostWindow::free(uint64_t addr) {
    std::lock_guard lock(mutex_);
    auto used = usedBlocks_.find(addr - base_);
    if (used == usedBlocks_.end()) return;  // our own bug if it happens; never corrupt the lists
    auto node = usedBlocks_.extract(used);
    const uint64_t offset = node.key();
    uint64_t len = node.mapped();
    auto next = freeBlocks_.lower_bound(offset);
    if (next != freeBlocks_.end() && offset + len == next->first) {
        len += next->second;
        auto after = std::next(next);
        spare_ = freeBlocks_.extract(next);
        next = after;
    }
    if (next != freeBlocks_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == offset) {
            prev->second += len;
            if (spare_.empty()) spare_ = std::move(node);
            return;
        }
    }
    node.mapped() = len;
    freeBlocks_.insert(std::move(node));
}

Status HostWindow::adoptMemory(HostWindow& fresh) {
    std::lock_guard lock(mutex_);
    // A firmware of one NPU shared by many clients places each client's window in a slot of its
    // own, which a restarted one may choose differently: the window moves, which is safe only
    // while no block (a device address a request may still name) is held.
    const bool moved = fresh.base_ != base_;
    if (fresh.size_ != size_ || (moved && !usedBlocks_.empty())) {
        return fail(
            hal::ErrorStatus::DEVICE_UNAVAILABLE,
            "the restarted firmware offers a host window at " + std::to_string(fresh.base_) + " of " +
                std::to_string(fresh.size_) + " bytes, the lost one had " + std::to_string(base_) + " and " +
                std::to_string(size_) +
                (moved ? " (moved, with " + std::to_string(usedBlocks_.size()) + " block(s) held)" : ""));
    }
    memory_ = std::move(fresh.memory_);
    base_ = fresh.base_;
    return {};
}

uint64_t HostWindow::bytesInUse() const {
    std::lock_guard lock(mutex_);
    uint64_t total = 0;
    for (const auto& [offset, len] : usedBlocks_) total += len;
    return total;
}

}  // namespace npu::shim
