#include "pool_maps.h"

#include <fcntl.h>

#include <string>
#include <vector>

#include "connection.h"
#include "npu/protocol/vlog.h"

namespace npu::shim {

void PoolMaps::forget() {
    std::lock_guard lock(mutex_);
    entries_.clear();
    unsupported_ = false;
}

size_t PoolMaps::mapped() const {
    std::lock_guard lock(mutex_);
    size_t n = 0;
    for (const auto& [key, e] : entries_) n += e.addr ? 1 : 0;
    return n;
}

void PoolMaps::sweep(Attempt& attempt) {
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (!it->second.memory.expired()) {
            ++it;
            continue;
        }
        if (it->second.addr) {
            proto::UnmapPoolRequest request;
            request.set_pool_id(it->second.poolId);
            proto::UnmapPoolReply reply;
            (void)connection_.call(attempt, proto::METHOD_UNMAP_POOL, request, reply,
                                   connection_.options().callTimeout, "unmap a released pool");
        }
        it = entries_.erase(it);
    }
}

Result<PoolMaps::Entry> PoolMaps::map(Attempt& attempt, const std::shared_ptr<hal::Memory>& memory) {
    Entry e{memory};
    proto::MapPoolRequest request;
    request.set_offset(memory->fdOffset());
    request.set_length(memory->size());
    proto::MapPoolReply reply;
    const int fds[1] = {memory->fd()};
    NPU_TRY(connection_.call(attempt, proto::METHOD_MAP_POOL, request, reply,
                             connection_.options().callTimeout, "map a pool", fds));
    if (reply.status().code() != 0) {
        // Refused (a platform without fds, a file it cannot map, no room): staged from now on.
        proto::vlog("driver", "pool of %zu bytes staged through the window: %s", memory->size(),
                    reply.status().message().c_str());
        if (reply.status().message().find("maps no client memory") != std::string::npos) unsupported_ = true;
        return e;
    }
    e.poolId = reply.pool_id();
    e.addr = reply.addr();
    e.writable = reply.writable();
    proto::vlog("driver", "pool of %zu bytes mapped by the firmware at 0x%llx (pool %u%s)", memory->size(),
                static_cast<unsigned long long>(reply.addr()), reply.pool_id(),
                reply.sealed() ? ", sealed" : "");
    return e;
}

Result<std::optional<uint64_t>> PoolMaps::address(Attempt& attempt,
                                                  const std::shared_ptr<hal::Memory>& memory, bool write) {
    if (!connection_.windowShared() || !connection_.hello().window_fd_is_window() || memory->fd() < 0 ||
        memory->size() < kZeroCopyMinBytes) {
        return std::nullopt;
    }
    std::lock_guard lock(mutex_);
    if (unsupported_) return std::nullopt;
    auto it = entries_.find(memory.get());
    // The same memory (not a new one at a reused address): mapped already.
    const bool known = it != entries_.end() && !it->second.memory.owner_before(memory) &&
                       !memory.owner_before(it->second.memory);
    if (!known) {
        // Checked here only (a syscall): a pool mapped already is held by the firmware's own fd.
        if (fcntl(memory->fd(), F_GETFD) < 0) {
            return invalidArgument("pool of " + std::to_string(memory->size()) + " bytes: its fd " +
                                   std::to_string(memory->fd()) + " is closed");
        }
        sweep(attempt);
        entries_[memory.get()] = NPU_TRY(map(attempt, memory));
        it = entries_.find(memory.get());
    }
    if (!it->second.addr || (write && !it->second.writable)) return std::nullopt;
    return it->second.addr;
}

Result<std::vector<std::optional<uint64_t>>> PoolMaps::modelPools(Attempt& attempt, const hal::Model& model) {
    std::vector<std::optional<uint64_t>> addresses;
    for (const auto& pool : model.pools) addresses.push_back(NPU_TRY(address(attempt, pool, false)));
    return addresses;
}

}  // namespace npu::shim
