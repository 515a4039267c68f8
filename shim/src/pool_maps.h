#pragma once
// Zero copy for request pools passed by fd: a pool of kZeroCopyMinBytes or more that is a memfd
// or a mappable file is passed to the firmware once (MapPool, the fd by SCM_RIGHTS on unix, a dup
// on loopback) and mapped by its host platform into this session's device addresses; executions
// then name pool address + offset and the NPU reads and writes the client's memory in place.
// Smaller pools, pools without an fd and firmware platforms that map nothing (QEMU, USB) are
// staged through the host window as before. docs/execution.md ("Memory model").

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::shim {

class Connection;
struct Attempt;

class PoolMaps {
public:
    // Below this a pool is copied through the window: a MapPool round trip and a mapping cost
    // more than copying a few pages (docs/execution.md).
    static constexpr size_t kZeroCopyMinBytes = 64 * 1024;

    explicit PoolMaps(Connection& connection) : connection_(connection) {}

    // The device address of `memory`'s byte 0 when the firmware maps it (mapping it on first
    // use), nullopt when the pool is to be staged through the window. `write`: the pool holds an
    // output. INVALID_ARGUMENT when the fd of a pool to be mapped is closed. Pools stay mapped across a Reset
    // of the firmware (like the window); a restarted firmware knows none (forget()).

    Result<std::optional<uint64_t>> address(Attempt& attempt, const std::shared_ptr<hal::Memory>& memory,
                                            bool write);
    // address() of each of the model's pools (constants, read only): one entry per pool.
    Result<std::vector<std::optional<uint64_t>>> modelPools(Attempt& attempt, const hal::Model& model);
    // The firmware was restarted (a new session): every mapping is gone with the old one.
    void forget();
    // Pools mapped now (for tests and counters).
    size_t mapped() const;

private:
    struct Entry {
        std::weak_ptr<hal::Memory> memory;
        uint32_t poolId = 0;
        std::optional<uint64_t> addr;  // nullopt: the firmware refused it; staged
        bool writable = false;
    };
    // Unmaps the pools whose memory is gone (a best-effort UnmapPool each).
    void sweep(Attempt& attempt);
    Result<Entry> map(Attempt& attempt, const std::shared_ptr<hal::Memory>& memory);

    Connection& connection_;
    mutable std::mutex mutex_;
    std::map<const hal::Memory*, Entry> entries_;
    bool unsupported_ = false;  // the firmware answered that it maps no client memory
};

}  // namespace npu::shim
