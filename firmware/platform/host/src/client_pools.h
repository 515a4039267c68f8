#pragma once
// Client memory passed by fd (MapPool), mapped by the host platform into one session's range of
// device addresses: the NPU's DMA then reads and writes the client's pages in place, so no tensor
// byte is copied between client memory and device memory. docs/execution.md ("Memory model").
//
// Not thread-safe: the firmware host calls it under its firmware lock.

#include <cstdint>
#include <vector>

#include "npu/base/unique_fd.h"
#include "npu/fw/rpc_server.h"
#include "received_fds.h"

namespace npu::fw::host {

class ClientPools final : public PoolMapper {
public:
    // [rangeAddr, rangeAddr + rangeBytes) of the device address space, at `dram + rangeAddr` in
    // this process, reserved for this session (backed by anonymous zero pages while unused).
    // MapPool takes the fd its call bound in `fds`, the session's.
    ClientPools(ReceivedFds& fds, uint8_t* dram, uint64_t rangeAddr, uint64_t rangeBytes)
        : fds_(fds), dram_(dram), rangeAddr_(rangeAddr), rangeBytes_(rangeBytes) {}
    ~ClientPools() { unmapAll(); }
    ClientPools(const ClientPools&) = delete;
    ClientPools& operator=(const ClientPools&) = delete;

    static constexpr uint32_t kMaxPools = 64;  // per session

    // The session moved to another slot (Hello's window_addr) and its range with it. Only while
    // no pool is mapped (false otherwise: the range stays).
    bool moveRange(uint64_t rangeAddr) {
        if (!pools_.empty()) return false;
        rangeAddr_ = rangeAddr;
        return true;
    }

    FwStatus mapPool(uint64_t callId, const npu_proto_MapPoolRequest& request,
                     npu_proto_MapPoolReply* reply) override;
    FwStatus unmapPool(uint32_t poolId) override;
    FwStatus checkPoolRange(uint64_t addr, uint64_t length, bool write, bool* inPool) override;
    void unmapAll() override;
    uint32_t poolCount() const override { return static_cast<uint32_t>(pools_.size()); }
    uint64_t poolBytes() const override;
    FwStatus takeFault() override;

private:
    struct Pool {
        uint32_t id = 0;
        uint64_t mapAddr = 0;  // page-aligned device address of the mapping
        uint64_t mapBytes = 0;
        uint64_t addr = 0;  // device address of the pool's byte 0
        uint64_t length = 0;
        uint64_t fileEnd = 0;  // offset + length: the file must stay at least this long
        base::UniqueFd fd;
        bool writable = false;
        bool sealed = false;
        uint32_t guard = UINT32_MAX;  // SIGBUS guard of an unsealed pool (sigbus_guard.h)
        bool faultReported = false;
    };
    void release(Pool& pool);
    // A free page-aligned span of `bytes` in the range (first fit); false when none.
    bool findSpace(uint64_t bytes, uint64_t* addr) const;
    // Backs [addr, +bytes) with anonymous zero pages again.
    void clear(uint64_t addr, uint64_t bytes);

    ReceivedFds& fds_;
    uint8_t* dram_;
    uint64_t rangeAddr_;
    uint64_t rangeBytes_;
    std::vector<Pool> pools_;
    uint32_t nextId_ = 1;
};

}  // namespace npu::fw::host
