#pragma once
// Memory domains on the NPU: the bytes of a driver-managed buffer live in firmware DRAM
// (AllocateBuffer / BufferCopy / ReleaseBuffer); the firmware checks every use against the
// buffer's roles, dimensions and owner, as the HAL does before it. docs/execution.md.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "connection.h"
#include "npu/hal/prepared_model_base.h"

namespace npu::shim {

// The firmware buffers of one device, by the id a resolved request names them with: a shim-side
// id, since a restarted firmware starts its tokens again. Each remembers the firmware epoch it
// was allocated in: a reset or restart since then lost it.
class FirmwareBuffers {
public:
    uint32_t add(uint32_t token, uint64_t epoch);
    void remove(uint32_t id);
    // The firmware token of buffer `id` for an attempt at `epoch`; GENERAL_FAILURE when the
    // firmware lost it since, INVALID_ARGUMENT when there is no such buffer. `where` names the use.
    Result<uint32_t> token(uint32_t id, uint64_t epoch, const std::string& where) const;

private:
    struct Entry {
        uint32_t token = 0;
        uint64_t epoch = 0;
    };
    mutable std::mutex mutex_;
    std::map<uint32_t, Entry> entries_;
    uint32_t next_ = 1;
};

// One role of a buffer, its prepared model named by its id in the connection's registry.
struct FirmwareBufferRole {
    uint64_t modelId = 0;
    bool input = true;
    uint32_t ioIndex = 0;
};

// Allocates a buffer for `operand` (fully known dimensions: the NPU's tensors have fixed shapes)
// in firmware DRAM with `roles`; the storage releases it when destroyed.
Result<std::unique_ptr<hal::BufferStorage>> allocateFirmwareBuffer(
    std::shared_ptr<Connection> connection, std::shared_ptr<FirmwareBuffers> buffers,
    const hal::Operand& operand, const std::vector<FirmwareBufferRole>& roles);

}  // namespace npu::shim
