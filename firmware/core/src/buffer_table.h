#pragma once
// Driver-managed buffers (memory domains): a fixed table of buffers in firmware DRAM, each with
// its owner (session), its roles (prepared model, input or output, index), its dimensions and
// whether it holds data. Tokens carry a generation, so a released token never names a reused
// slot. docs/execution.md, "Memory domains".

#include <cstdint>

#include "blob_store.h"
#include "dram_allocator.h"
#include "npu/fw/runtime.h"

namespace npu::fw {

class BufferTable {
public:
    bool init(Arena& arena);
    FwStatus allocate(const BufferSpec& spec, const BlobStore& store, DramAllocator& dram, uint32_t* token);
    FwStatus release(uint32_t session, uint32_t token, DramAllocator& dram);
    uint32_t releaseSession(uint32_t session, DramAllocator& dram);
    void clear();  // a reset: the DRAM goes with the allocator's clear()

    // Copies between the host window and a buffer (`window`: the host-window bytes at the
    // caller's address, already bounds-checked for `length`).
    FwStatus write(uint32_t session, uint32_t token, uint8_t* dram, uint64_t length, uint32_t rank,
                   const uint32_t* dims, const uint8_t* window);
    FwStatus read(uint32_t session, uint32_t token, const uint8_t* dram, uint64_t length, uint8_t* window);

    FwStatus bind(uint32_t session, uint32_t handle, IoArg* inputs, uint32_t inputCount, IoArg* outputs,
                  uint32_t outputCount);
    void written(const IoArg* outputs, uint32_t outputCount);

    uint32_t count() const;
    uint64_t bytes() const;

private:
    struct Slot {
        uint32_t generation = 0;
        bool used = false;
        bool initialized = false;
        uint32_t session = 0;
        uint32_t type = 0;
        uint64_t addr = 0;
        uint64_t capacity = 0;
        IoDesc shape;  // the roles' dimensions and tensor bytes
        uint32_t roleCount = 0;
        BufferRole roles[kMaxBufferRoles];
    };
    // The slot of `token` if it is live and `session`'s; otherwise INVALID_ARGUMENT naming `what`.
    FwStatus find(uint32_t session, uint32_t token, const char* what, Slot** slot) const;
    FwStatus checkRoles(const BufferSpec& spec, const BlobStore& store, IoDesc* shape) const;
    FwStatus bindOne(uint32_t session, uint32_t handle, bool input, uint32_t index, IoArg& arg);
    static bool hasRole(const Slot& s, uint32_t handle, bool input, uint32_t index);
    Slot* slots_ = nullptr;
};

}  // namespace npu::fw
