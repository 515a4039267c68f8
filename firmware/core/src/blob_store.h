#pragma once
// The loaded blobs: a fixed table of slots, each holding one validated blob image in firmware
// DRAM, with a reference count. Handles carry a generation so a stale handle never reaches a
// reused slot.

#include <cstdint>

#include "blob_format.h"
#include "blob_validator.h"
#include "dram_allocator.h"
#include "npu/fw/runtime.h"

namespace npu::fw {

struct LoadedBlob {
    BlobView view;  // points into device DRAM at dramAddr
    uint64_t dramAddr = 0;
    uint64_t bytes = 0;
};

class BlobStore {
public:
    static constexpr uint32_t kMaxBlobs = 64;

    bool init(Arena& arena);
    // Copies `bytes` into firmware DRAM *first*, then validates the copy (the source may be
    // memory another party can still write).
    FwStatus load(Platform& platform, DramAllocator& dram, const uint8_t* bytes, uint64_t size,
                  const BlobLimits& limits, uint32_t* handle);
    FwStatus retain(uint32_t handle);
    // Drops one reference; the blob's DRAM is freed with the last one.
    FwStatus release(uint32_t handle, DramAllocator& dram);
    const LoadedBlob* find(uint32_t handle) const;
    uint32_t refCount(uint32_t handle) const;
    uint32_t count() const;
    void clear(DramAllocator& dram);

private:
    struct Slot {
        bool used = false;
        uint32_t generation = 0;
        uint32_t refs = 0;
        LoadedBlob blob;
    };
    Slot* slotFor(uint32_t handle) const;
    Slot* slots_ = nullptr;
};

}  // namespace npu::fw
