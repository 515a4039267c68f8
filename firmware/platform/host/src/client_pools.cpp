#include "client_pools.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "sigbus_guard.h"

namespace npu::fw::host {

namespace {

uint64_t pageBytes() {
    static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    return page;
}

// A dma-buf (a dma-heap's allocation, the AHardwareBuffer BLOB analogue): its fdinfo names its
// exporter. Its size is fixed at allocation; lseek tells it.
bool isDmaBuf(int fd, uint64_t* size) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    FILE* f = std::fopen(path, "re");
    if (f == nullptr) return false;
    char line[256];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, f) != nullptr)
        found = std::strncmp(line, "exp_name:", 9) == 0;
    std::fclose(f);
    const off_t end = found ? lseek(fd, 0, SEEK_END) : -1;
    if (end < 0) return false;
    *size = static_cast<uint64_t>(end);
    return true;
}

// The file behind `fd` may be used as a pool of [offset, offset + length): a memfd or regular file,
// long enough, not opened write-only. Sets *writable and *sealed (it cannot shrink any more: the
// seal is added here when the memfd allows it).
FwStatus checkFile(int fd, uint64_t offset, uint64_t length, bool* writable, bool* sealed) {
    struct stat st {};
    if (fstat(fd, &st) != 0)
        return FwStatus::make(Code::kInvalidArgument, "MapPool: fstat of the fd failed: %s",
                              std::strerror(errno));
    uint64_t size = static_cast<uint64_t>(st.st_size);
    const bool dmaBuf = !S_ISREG(st.st_mode) && isDmaBuf(fd, &size);
    if (!S_ISREG(st.st_mode) && !dmaBuf) {
        return FwStatus::make(Code::kInvalidArgument,
                              "MapPool: the fd is %s, not a memfd, dma-buf or mappable file",
                              base::fileKind(st.st_mode));
    }
    uint64_t end = 0;
    if (length == 0 || __builtin_add_overflow(offset, length, &end) || end > size) {
        return FwStatus::make(Code::kInvalidArgument,
                              "MapPool: [%" PRIu64 ", +%" PRIu64
                              ") does not fit the file's %lld bytes (or is empty)",
                              offset, length, static_cast<long long>(size));
    }
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_WRONLY) {
        return FwStatus::make(Code::kInvalidArgument, "MapPool: the fd is not open for reading");
    }
    *writable = (flags & O_ACCMODE) == O_RDWR;
    // A file that shrinks under the mapping would make the NPU's access fault (SIGBUS): seal a
    // memfd against it (a dma-buf never changes size); other files are checked before each use
    // (checkPoolRange).
    const int seals = fcntl(fd, F_GET_SEALS);
    *sealed = dmaBuf ||
              (seals >= 0 && ((seals & F_SEAL_SHRINK) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0));
    return FwStatus::okStatus();
}

}  // namespace

bool ClientPools::findSpace(uint64_t bytes, uint64_t* addr) const {
    uint64_t candidate = rangeAddr_;
    // Pools sorted by address: the first gap that holds `bytes`.
    std::vector<const Pool*> sorted;
    for (const Pool& p : pools_) sorted.push_back(&p);
    std::sort(sorted.begin(), sorted.end(),
              [](const Pool* a, const Pool* b) { return a->mapAddr < b->mapAddr; });
    for (const Pool* p : sorted) {
        if (p->mapAddr - candidate >= bytes) break;
        candidate = p->mapAddr + p->mapBytes;
    }
    if (candidate - rangeAddr_ > rangeBytes_ || bytes > rangeBytes_ - (candidate - rangeAddr_)) return false;
    *addr = candidate;
    return true;
}

void ClientPools::clear(uint64_t addr, uint64_t bytes) {
    if (mmap(dram_ + addr, bytes, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
        std::fprintf(stderr, "npu firmware: cannot clear pool range [0x%" PRIx64 ", +%" PRIu64 "): %s\n",
                     addr, bytes, std::strerror(errno));
    }
}

FwStatus ClientPools::mapPool(uint64_t callId, const npu_proto_MapPoolRequest& r,
                              npu_proto_MapPoolReply* reply) {
    base::UniqueFd fd = fds_.take(callId);
    if (!fd) {
        return FwStatus::make(Code::kInvalidArgument,
                              "MapPool: no file descriptor came with the request (closed, or not sent)");
    }
    Pool pool;
    if (FwStatus st = checkFile(fd.get(), r.offset, r.length, &pool.writable, &pool.sealed); !st.ok())
        return st;
    if (pools_.size() >= kMaxPools) {
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "MapPool: this client has %" PRIu32 " pools mapped already (the most)",
                              kMaxPools);
    }
    const uint64_t page = pageBytes();
    const uint64_t fileBase = r.offset - r.offset % page;
    const uint64_t lead = r.offset - fileBase;
    const uint64_t mapBytes = (lead + r.length + page - 1) / page * page;
    uint64_t mapAddr = 0;
    if (!findSpace(mapBytes, &mapAddr)) {
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "MapPool: no room for %" PRIu64 " bytes in this client's %" PRIu64
                              "-byte pool range (%" PRIu64 " bytes mapped)",
                              r.length, rangeBytes_, poolBytes());
    }
    const int prot = PROT_READ | (pool.writable ? PROT_WRITE : 0);
    if (mmap(dram_ + mapAddr, mapBytes, prot, MAP_SHARED | MAP_FIXED, fd.get(),
             static_cast<off_t>(fileBase)) == MAP_FAILED) {
        const int e = errno;
        clear(mapAddr, mapBytes);
        return FwStatus::make(Code::kInvalidArgument,
                              "MapPool: mapping [%" PRIu64 ", +%" PRIu64 ") of the fd failed: %s", r.offset,
                              r.length, std::strerror(e));
    }
    if (!pool.sealed && (pool.guard = guardRange(dram_ + mapAddr, mapBytes)) == kNoGuard) {
        clear(mapAddr, mapBytes);
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "MapPool: no SIGBUS guard left for an unsealed pool (too many mapped in this "
                              "process)");
    }
    pool.id = nextId_++;
    pool.mapAddr = mapAddr;
    pool.mapBytes = mapBytes;
    pool.addr = mapAddr + lead;
    pool.length = r.length;
    pool.fileEnd = r.offset + r.length;
    pool.fd = std::move(fd);
    reply->pool_id = pool.id;
    reply->addr = pool.addr;
    reply->writable = pool.writable;
    reply->sealed = pool.sealed;
    pools_.push_back(std::move(pool));
    return FwStatus::okStatus();
}

FwStatus ClientPools::unmapPool(uint32_t poolId) {
    for (auto it = pools_.begin(); it != pools_.end(); ++it) {
        if (it->id != poolId) continue;
        release(*it);
        pools_.erase(it);
        return FwStatus::okStatus();
    }
    // Another client's pool id gets the same answer as one never issued.
    return FwStatus::make(Code::kInvalidArgument, "UnmapPool: unknown pool id %" PRIu32, poolId);
}

void ClientPools::release(Pool& pool) {
    unguardRange(pool.guard);
    clear(pool.mapAddr, pool.mapBytes);
}

void ClientPools::unmapAll() {
    for (Pool& p : pools_) release(p);
    pools_.clear();
}

FwStatus ClientPools::takeFault() {
    for (Pool& p : pools_) {
        if (p.faultReported || !rangeHit(p.guard)) continue;
        p.faultReported = true;
        return FwStatus::make(Code::kInvalidArgument,
                              "pool %" PRIu32
                              ": its file was truncated while the NPU used it; what was read "
                              "there is zeros, the results are void",
                              p.id);
    }
    return FwStatus::okStatus();
}

uint64_t ClientPools::poolBytes() const {
    uint64_t n = 0;
    for (const Pool& p : pools_) n += p.length;
    return n;
}

FwStatus ClientPools::checkPoolRange(uint64_t addr, uint64_t length, bool write, bool* inPool) {
    *inPool = false;
    if (addr < rangeAddr_ || addr - rangeAddr_ >= rangeBytes_) return FwStatus::okStatus();
    for (const Pool& p : pools_) {
        if (addr < p.addr || addr - p.addr >= p.length) continue;
        if (length > p.length - (addr - p.addr)) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "[0x%" PRIx64 ", +%" PRIu64 ") runs past the end of pool %" PRIu32
                                  " (%" PRIu64 " bytes)",
                                  addr, length, p.id, p.length);
        }
        if (write && !p.writable) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "pool %" PRIu32 " was passed read-only and cannot take an output", p.id);
        }
        if (rangeHit(p.guard)) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "pool %" PRIu32 ": its file was truncated while mapped; unmap it", p.id);
        }
        if (!p.sealed) {
            struct stat st {};
            if (fstat(p.fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < p.fileEnd) {
                return FwStatus::make(Code::kInvalidArgument,
                                      "pool %" PRIu32 ": its file shrank below the %" PRIu64 " bytes mapped",
                                      p.id, p.fileEnd);
            }
        }
        *inPool = true;
        return FwStatus::okStatus();
    }
    return FwStatus::make(Code::kInvalidArgument,
                          "[0x%" PRIx64 ", +%" PRIu64 ") lies in no pool of this client", addr, length);
}

}  // namespace npu::fw::host
