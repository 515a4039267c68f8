#include "blob_store.h"

#include <cinttypes>
#include <cstring>

namespace npu::fw {

namespace {
constexpr uint32_t kSlotBits = 8;  // handle = generation << 8 | slot; generation >= 1 => handle != 0
}

bool BlobStore::init(Arena& arena) {
    slots_ = arena.allocateArray<Slot>(kMaxBlobs);
    return slots_ != nullptr;
}

BlobStore::Slot* BlobStore::slotFor(uint32_t handle) const {
    const uint32_t index = handle & ((1u << kSlotBits) - 1);
    if (slots_ == nullptr || index >= kMaxBlobs) return nullptr;
    Slot* s = &slots_[index];
    if (!s->used || s->generation != (handle >> kSlotBits)) return nullptr;
    return s;
}

FwStatus BlobStore::load(Platform& platform, DramAllocator& dram, const uint8_t* bytes, uint64_t size,
                         const BlobLimits& limits, uint32_t* handle) {
    uint32_t index = kMaxBlobs;
    for (uint32_t i = 0; i < kMaxBlobs; ++i) {
        if (!slots_[i].used) {
            index = i;
            break;
        }
    }
    if (index == kMaxBlobs) {
        return FwStatus::make(Code::kResourceExhaustedPersistent,
                              "blob store full: %" PRIu32 " models loaded (limit %" PRIu32 ")", kMaxBlobs,
                              kMaxBlobs);
    }
    if (bytes == nullptr || size == 0) {
        return FwStatus::make(Code::kInvalidArgument, "blob load: no bytes given");
    }
    uint64_t addr = 0;
    if (!dram.allocate(size, &addr)) {
        return FwStatus::make(
            Code::kResourceExhaustedPersistent, "blob load: no firmware DRAM for %llu bytes (in use %llu)",
            static_cast<unsigned long long>(size), static_cast<unsigned long long>(dram.bytesInUse()));
    }
    uint8_t* copy = platform.dram() + addr;
    std::memmove(copy, bytes, size);
    BlobView view;
    FwStatus st = validateBlob(copy, size, limits, &view);
    if (!st.ok()) {
        dram.free(addr);
        return st;
    }
    Slot& s = slots_[index];
    s.used = true;
    s.generation = (s.generation + 1) & ((1u << (32 - kSlotBits)) - 1);
    if (s.generation == 0) s.generation = 1;
    s.refs = 1;
    s.blob = {view, addr, size};
    *handle = (s.generation << kSlotBits) | index;
    return FwStatus::okStatus();
}

FwStatus BlobStore::retain(uint32_t handle) {
    Slot* s = slotFor(handle);
    if (s == nullptr)
        return FwStatus::make(Code::kInvalidArgument, "unknown model handle 0x%" PRIx32 "", handle);
    if (s->refs == UINT32_MAX)
        return FwStatus::make(Code::kResourceExhaustedPersistent,
                              "model handle 0x%" PRIx32 ": reference count saturated", handle);
    ++s->refs;
    return FwStatus::okStatus();
}

FwStatus BlobStore::release(uint32_t handle, DramAllocator& dram) {
    Slot* s = slotFor(handle);
    if (s == nullptr)
        return FwStatus::make(Code::kInvalidArgument, "unknown model handle 0x%" PRIx32 "", handle);
    if (--s->refs == 0) {
        dram.free(s->blob.dramAddr);
        s->used = false;
        s->blob = {};
    }
    return FwStatus::okStatus();
}

const LoadedBlob* BlobStore::find(uint32_t handle) const {
    Slot* s = slotFor(handle);
    return s != nullptr ? &s->blob : nullptr;
}

uint32_t BlobStore::refCount(uint32_t handle) const {
    Slot* s = slotFor(handle);
    return s != nullptr ? s->refs : 0;
}

uint32_t BlobStore::count() const {
    uint32_t n = 0;
    for (uint32_t i = 0; slots_ != nullptr && i < kMaxBlobs; ++i) n += slots_[i].used ? 1 : 0;
    return n;
}

void BlobStore::clear(DramAllocator& dram) {
    for (uint32_t i = 0; slots_ != nullptr && i < kMaxBlobs; ++i) {
        if (slots_[i].used) dram.free(slots_[i].blob.dramAddr);
        slots_[i].used = false;
        slots_[i].refs = 0;
        slots_[i].blob = {};
    }
}

}  // namespace npu::fw
