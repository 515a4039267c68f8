#include "managed_buffer.h"

#include <chrono>
#include <cstring>
#include <string>

#include "npu/hal/validation.h"

namespace npu::hal {
namespace {

// How long a copy or an execution waits for a buffer another thread uses: short, so that
// conflicting writers fail instead of queueing (concurrent writes are undefined in the HAL).
constexpr std::chrono::milliseconds kBufferLockWait{200};

std::string dimsText(const std::vector<uint32_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

// The default storage: host shared memory (a memfd), grown by replacing it.
class SharedMemoryStorage final : public BufferStorage {
public:
    Status reserve(uint64_t bytes) override {
        if (memory_ && memory_->size() >= bytes) return {};
        std::shared_ptr<Memory> grown = Memory::create(bytes, "npu-device-buffer");
        if (!grown) {
            return fail(ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
                        "cannot allocate " + std::to_string(bytes) + " bytes of shared memory");
        }
        memory_ = std::move(grown);  // executions still reading the old memory keep it alive
        return {};
    }
    Status write(const Memory& src, const std::vector<uint32_t>&) override {
        if (src.size() > 0) std::memcpy(memory_->data(), src.data(), src.size());
        return {};
    }
    Status read(Memory& dst) override {
        if (dst.size() > 0) std::memcpy(dst.data(), memory_->data(), dst.size());
        return {};
    }
    RequestMemoryPool pool() const override { return memory_; }

private:
    std::shared_ptr<Memory> memory_;
};

}  // namespace

// ---- BufferRegistry ---------------------------------------------------------------------------

std::shared_ptr<ManagedBuffer> BufferRegistry::find(uint32_t token) const {
    std::lock_guard lock(mutex_);
    auto it = buffers_.find(token);
    return it == buffers_.end() ? nullptr : it->second.lock();
}

size_t BufferRegistry::size() const {
    std::lock_guard lock(mutex_);
    return buffers_.size();
}

uint32_t BufferRegistry::add(const std::shared_ptr<ManagedBuffer>& buffer) {
    std::lock_guard lock(mutex_);
    while (next_ == 0 || buffers_.count(next_) != 0) ++next_;  // 0 is never a token
    const uint32_t token = next_++;
    buffers_[token] = buffer;
    return token;
}

void BufferRegistry::remove(uint32_t token) {
    std::lock_guard lock(mutex_);
    buffers_.erase(token);
}

Result<DeviceBuffer> allocateDeviceBuffer(const std::shared_ptr<BufferRegistry>& registry,
                                          const BufferDesc& desc,
                                          const std::vector<std::shared_ptr<IPreparedModel>>& preparedModels,
                                          const std::vector<BufferRole>& inputRoles,
                                          const std::vector<BufferRole>& outputRoles,
                                          const BufferStorageFactory& storage) {
    std::vector<const Model*> models;
    std::vector<uint64_t> ids;
    for (size_t i = 0; i < preparedModels.size(); ++i) {
        const auto* mine = dynamic_cast<const PreparedModelBase*>(preparedModels[i].get());
        if (mine == nullptr || mine->buffers() != registry.get()) {
            return invalidArgument("allocate: prepared model " + std::to_string(i) +
                                   (preparedModels[i] ? " was not prepared by this device" : " is null"));
        }
        models.push_back(&mine->ioModel());
        ids.push_back(mine->id());
    }
    Operand operand = NPU_TRY(validateBufferRoles(desc, models, inputRoles, outputRoles));
    std::set<BufferRoleKey> roles;
    for (const auto& r : inputRoles) roles.insert({ids[r.modelIndex], true, r.ioIndex});
    for (const auto& r : outputRoles) roles.insert({ids[r.modelIndex], false, r.ioIndex});
    std::unique_ptr<BufferStorage> bytes =
        storage ? NPU_TRY(storage(operand)) : std::make_unique<SharedMemoryStorage>();
    auto buffer =
        std::make_shared<ManagedBuffer>(registry, std::move(operand), std::move(roles), std::move(bytes));
    if (auto bytes = tensorByteSize(buffer->operandType(), buffer->declaredDimensions())) {
        NPU_TRY(buffer->reserve(*bytes));
    }
    buffer->setToken(registry->add(buffer));
    return DeviceBuffer{buffer, buffer->token()};
}

// ---- ManagedBuffer ----------------------------------------------------------------------------

ManagedBuffer::ManagedBuffer(std::shared_ptr<BufferRegistry> registry, Operand operand,
                             std::set<BufferRoleKey> roles, std::unique_ptr<BufferStorage> storage)
    : registry_(std::move(registry)),
      operand_(std::move(operand)),
      roles_(std::move(roles)),
      storage_(std::move(storage)) {
    dims_ = operand_.dimensions;
}

ManagedBuffer::~ManagedBuffer() {
    if (token_ != 0) registry_->remove(token_);
}

Status ManagedBuffer::lock(bool write) {
    const bool locked =
        write ? mutex_.try_lock_for(kBufferLockWait) : mutex_.try_lock_shared_for(kBufferLockWait);
    if (!locked) {
        return generalFailure(name() + " is in use by another execution or copy" +
                              (write ? " (concurrent writes are not supported)" : ""));
    }
    return {};
}

void ManagedBuffer::unlock(bool write) {
    if (write) {
        mutex_.unlock();
    } else {
        mutex_.unlock_shared();
    }
}

Status ManagedBuffer::reserve(uint64_t bytes) {
    return withContext(storage_->reserve(bytes), name());
}

std::vector<uint32_t> ManagedBuffer::currentDimensions() {
    if (!mutex_.try_lock_shared_for(kBufferLockWait)) return {};
    std::vector<uint32_t> dims = dims_;
    mutex_.unlock_shared();
    return dims;
}

void ManagedBuffer::written(const std::vector<uint32_t>& dims) {
    dims_ = dims;
    initialized_ = true;
}

Result<RequestMemoryPool> ManagedBuffer::input(const std::vector<uint32_t>& requested,
                                               std::vector<uint32_t>& dims) {
    if (!initialized_) return generalFailure(name() + " is used as an input but holds no data yet");
    if (!requested.empty() && requested != dims_) {
        return invalidArgument(name() + " holds dimensions " + dimsText(dims_) + ", the request gives " +
                               dimsText(requested));
    }
    dims = dims_;
    return storage_->pool();
}

Result<RequestMemoryPool> ManagedBuffer::output(const std::vector<uint32_t>& requested,
                                                std::vector<uint32_t>& dims) {
    auto combined = combineDimensions(operand_.dimensions, requested);
    if (!combined) {
        return invalidArgument(name() + " was allocated with dimensions " + dimsText(operand_.dimensions) +
                               ", the request gives " + dimsText(requested));
    }
    dims = std::move(*combined);
    NPU_TRY(reserve(tensorByteSize(operand_.type, dims).value_or(0)));
    return storage_->pool();
}

Status ManagedBuffer::copyTo(Memory& dst) {
    NPU_TRY(lock(false));
    Status status = [&]() -> Status {
        if (!initialized_) return generalFailure("copyTo: " + name() + " holds no data yet");
        const auto bytes = tensorByteSize(operand_.type, dims_).value_or(0);
        if (dst.size() != bytes) {
            return invalidArgument("copyTo: " + name() + " holds " + std::to_string(bytes) +
                                   " bytes (dimensions " + dimsText(dims_) + "), the destination has " +
                                   std::to_string(dst.size()));
        }
        if (!dst.writable()) return invalidArgument("copyTo: the destination memory is mapped read-only");
        return withContext(storage_->read(dst), "copyTo: " + name());
    }();
    unlock(false);
    return status;
}

Status ManagedBuffer::copyFrom(const Memory& src, const std::vector<uint32_t>& dimensions) {
    auto combined = combineDimensions(operand_.dimensions, dimensions);
    if (!combined) {
        return invalidArgument("copyFrom: dimensions " + dimsText(dimensions) + " conflict with " + name() +
                               "'s " + dimsText(operand_.dimensions));
    }
    const auto bytes = tensorByteSize(operand_.type, *combined);
    if (!bytes) {
        return invalidArgument("copyFrom: dimensions " + dimsText(*combined) + " of " + name() +
                               " are not fully specified");
    }
    if (src.size() != *bytes) {
        return invalidArgument("copyFrom: the source has " + std::to_string(src.size()) +
                               " bytes, dimensions " + dimsText(*combined) + " need " +
                               std::to_string(*bytes));
    }
    NPU_TRY(lock(true));
    Status status = reserve(*bytes);
    if (status) status = withContext(storage_->write(src, *combined), "copyFrom: " + name());
    if (status) written(*combined);
    unlock(true);
    return status;
}

}  // namespace npu::hal
