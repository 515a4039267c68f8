#pragma once
// A driver-managed buffer (memory domains): roles, dimensions and locks, the same for the CPU
// reference and the NPU shim; its bytes live in a BufferStorage (host shared memory, or the
// NPU's firmware DRAM; docs/execution.md).

#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <tuple>
#include <vector>

#include "npu/hal/device.h"
#include "npu/hal/prepared_model_base.h"

namespace npu::hal {

// `status`, its message prefixed with `what` ("what: message") when it is an error.
inline Status withContext(Status status, const std::string& what) {
    if (status) return status;
    Error e = std::move(status).error();
    e.message = what + ": " + e.message;
    return std::unexpected(std::move(e));
}

// (prepared model id, is input, input or output index)
using BufferRoleKey = std::tuple<uint64_t, bool, uint32_t>;

class ManagedBuffer final : public IBuffer {
public:
    // `operand`: type, quantization and the dimensions known at allocation (0 = unknown).
    ManagedBuffer(std::shared_ptr<BufferRegistry> registry, Operand operand, std::set<BufferRoleKey> roles,
                  std::unique_ptr<BufferStorage> storage);
    ~ManagedBuffer() override;
    void setToken(uint32_t token) { token_ = token; }
    uint32_t token() const { return token_; }

    Status copyTo(Memory& dst) override;
    Status copyFrom(const Memory& src, const std::vector<uint32_t>& dimensions) override;

    bool hasRole(const BufferRoleKey& role) const { return roles_.count(role) != 0; }
    OperandType operandType() const { return operand_.type; }
    const std::vector<uint32_t>& declaredDimensions() const { return operand_.dimensions; }

    // The dimensions of the data held (those known at allocation until data is written); empty
    // while another thread writes the buffer.
    std::vector<uint32_t> currentDimensions();

    // Execution access: readers share the buffer, a writer has it alone. Neither blocks for
    // long: a buffer in use elsewhere fails with GENERAL_FAILURE.
    Status lock(bool write);
    void unlock(bool write);
    // With the lock held. An input: the pool holding the contents and their dimensions
    // (GENERAL_FAILURE while uninitialized; INVALID_ARGUMENT when `requested` dimensions disagree).
    Result<RequestMemoryPool> input(const std::vector<uint32_t>& requested, std::vector<uint32_t>& dims);
    // An output: the pool to write (at least as large as the known shape needs) and the
    // dimensions known so far (the allocation's combined with `requested`).
    Result<RequestMemoryPool> output(const std::vector<uint32_t>& requested, std::vector<uint32_t>& dims);
    // Grows the memory to `bytes` (an output turned out larger than known).
    Status reserve(uint64_t bytes);
    // An execution wrote `dims` into the buffer.
    void written(const std::vector<uint32_t>& dims);

private:
    std::string name() const { return "device buffer " + std::to_string(token_); }

    std::shared_ptr<BufferRegistry> registry_;
    const Operand operand_;
    const std::set<BufferRoleKey> roles_;
    uint32_t token_ = 0;
    std::shared_timed_mutex mutex_;
    std::unique_ptr<BufferStorage> storage_;
    std::vector<uint32_t> dims_;
    bool initialized_ = false;
};

}  // namespace npu::hal
