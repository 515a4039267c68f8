#pragma once
// The part of device DRAM the firmware lets this client stage data in (HelloReply's host window),
// mapped into this process from the window fd the firmware passed at the handshake. A first-fit
// allocator hands out blocks for constants (during prepare) and for execution arguments.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::shim {

class HostWindow {
public:
    // The fd the firmware passed at the handshake: this client's own window (fdIsWindow, the
    // firmware of one NPU shared by many clients: device address windowAddr is the fd's offset 0)
    // or, from an older firmware, all device DRAM ([windowAddr, + windowBytes) of it is ours).
    static Result<std::unique_ptr<HostWindow>> map(int dramFd, uint64_t windowAddr, uint64_t windowBytes,
                                                   bool fdIsWindow = false);
    // A window in this process's own memory (a sparse memfd) for transports that share nothing
    // with the device (USB): its bytes travel with Connection::pushWindow / pullWindow.
    static Result<std::unique_ptr<HostWindow>> local(uint64_t windowAddr, uint64_t windowBytes);

    // Returns a device address; RESOURCE_EXHAUSTED_TRANSIENT when the window is full.
    Result<uint64_t> allocate(uint64_t bytes);
    void free(uint64_t addr);

    uint8_t* hostPointer(uint64_t addr) { return memory_->data() + (addr - base_); }
    uint64_t base() const { return base_; }
    uint64_t size() const { return size_; }
    uint64_t bytesInUse() const;
    // Takes the memory of `fresh` (the window of a restarted firmware), keeping every allocation:
    // blocks held across the restart stay valid at the same device addresses. Refused when the
    // new window has another size, or another address while blocks are held (with none held the
    // window moves to the new address). The caller makes sure nobody touches the window
    // meanwhile.
    Status adoptMemory(HostWindow& fresh);

    // The largest window accepted from a peer (a bound on what a hostile reply makes us map).
    static constexpr uint64_t kMaxWindowBytes = uint64_t{16} << 30;

private:
    HostWindow(std::unique_ptr<hal::Memory> memory, uint64_t base, uint64_t size);
    static constexpr uint64_t kAlign = 64;
    std::unique_ptr<hal::Memory> memory_;
    uint64_t base_;
    uint64_t size_;
    mutable std::mutex mutex_;
    std::map<uint64_t, uint64_t> freeBlocks_;  // offset -> length, coalesced
    std::map<uint64_t, uint64_t> usedBlocks_;  // offset -> length
    // A map node of either map kept for the next one needed: an execution's allocate and free of
    // its blocks move nodes between the maps instead of allocating and freeing them.
    std::map<uint64_t, uint64_t>::node_type spare_;
};

// A window block released when it goes out of scope.
class WindowBlock {
public:
    WindowBlock() = default;
    WindowBlock(HostWindow* window, uint64_t addr, uint64_t bytes)
        : window_(window), addr_(addr), bytes_(bytes) {}
    WindowBlock(WindowBlock&& o) noexcept { *this = std::move(o); }
    WindowBlock& operator=(WindowBlock&& o) noexcept {
        if (this != &o) {
            reset();
            window_ = o.window_;
            addr_ = o.addr_;
            bytes_ = o.bytes_;
            o.window_ = nullptr;
        }
        return *this;
    }
    ~WindowBlock() { reset(); }
    void reset() {
        if (window_ != nullptr) window_->free(addr_);
        window_ = nullptr;
    }
    uint64_t addr() const { return addr_; }
    uint64_t bytes() const { return bytes_; }
    uint8_t* data() { return window_->hostPointer(addr_); }

private:
    HostWindow* window_ = nullptr;
    uint64_t addr_ = 0;
    uint64_t bytes_ = 0;
};

}  // namespace npu::shim
