#pragma once
// Every execution mode on top of one device-specific synchronous execution, so the NPU shim and
// the CPU reference behave alike (docs/execution.md): asynchronous execution with a callback,
// fenced execution, bursts with cached memory tokens, reusable executions, and requests that
// use driver-managed buffers (memory domains) as inputs and outputs.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "npu/hal/device.h"

namespace npu::hal {

class ManagedBuffer;
class WorkerThreads;
class Burst;

// A device's own way for one burst's executions (the NPU's fast message queue to its firmware,
// docs/execution.md "Bursts"): the burst owns it and hands it to each of its executions.
class BurstChannel {
public:
    virtual ~BurstChannel() = default;
};

// The driver-managed buffers of one device, i.e. of one client: token -> buffer. A token is
// found only in the registry of the device that allocated it, and only while its IBuffer lives.
class BufferRegistry {
public:
    std::shared_ptr<ManagedBuffer> find(uint32_t token) const;
    size_t size() const;
    uint32_t add(const std::shared_ptr<ManagedBuffer>& buffer);
    void remove(uint32_t token);

private:
    mutable std::mutex mutex_;
    std::map<uint32_t, std::weak_ptr<ManagedBuffer>> buffers_;
    uint32_t next_ = 1;
};

// Where a driver-managed buffer's bytes live: host shared memory (the default) or the device's
// own memory (the NPU shim: firmware DRAM). The buffer (roles, dimensions, locks) is the HAL's;
// its storage only holds bytes. Called with the buffer's lock held.
class BufferStorage {
public:
    virtual ~BufferStorage() = default;
    // Room for a tensor of `bytes` (growing may drop the contents: only outputs grow).
    virtual Status reserve(uint64_t bytes) = 0;
    // copyFrom: `src` is the whole tensor, of dimensions `dims`.
    virtual Status write(const Memory& src, const std::vector<uint32_t>& dims) = 0;
    // copyTo: the tensor's first dst.size() bytes.
    virtual Status read(Memory& dst) = 0;
    // What an execution's resolved request names for the buffer: the shared memory that holds
    // it, or a token of the device's own (location {pool, 0, 0, 0}).
    virtual RequestMemoryPool pool() const = 0;
};
// Makes the storage of a buffer for `operand` (type, quantization, dimensions known at allocation).
using BufferStorageFactory = std::function<Result<std::unique_ptr<BufferStorage>>(const Operand& operand)>;

// IDevice::allocate for a device whose prepared models derive from PreparedModelBase and share
// `registry`: validates the roles (hal::validateBufferRoles) and that every prepared model is
// this device's, then returns a buffer and its token. The buffer is held in host shared memory
// (a memfd) unless `storage` makes it elsewhere.
Result<DeviceBuffer> allocateDeviceBuffer(const std::shared_ptr<BufferRegistry>& registry,
                                          const BufferDesc& desc,
                                          const std::vector<std::shared_ptr<IPreparedModel>>& preparedModels,
                                          const std::vector<BufferRole>& inputRoles,
                                          const std::vector<BufferRole>& outputRoles,
                                          const BufferStorageFactory& storage = {});

class PreparedModelBase : public IPreparedModel, public std::enable_shared_from_this<PreparedModelBase> {
public:
    // The longest a fenced execution waits for its fences when the caller gives no deadline.
    static constexpr std::chrono::seconds kMaxFenceWait{60};
    // Asynchronous and fenced executions in flight per prepared model; more: RESOURCE_EXHAUSTED.
    static constexpr size_t kMaxAsyncExecutions = 64;

    explicit PreparedModelBase(std::shared_ptr<BufferRegistry> buffers);
    ~PreparedModelBase() override;

    // Resolves driver-managed buffer tokens, then runs executeShared.
    Result<ExecutionResult> executeSynchronously(const Request& request, MeasureTiming measure,
                                                 const Deadline& deadline,
                                                 std::optional<std::chrono::nanoseconds> loopTimeout) final;
    Status execute(const Request& request, MeasureTiming measure, const Deadline& deadline,
                   std::optional<std::chrono::nanoseconds> loopTimeout,
                   std::shared_ptr<IExecutionCallback> callback) final;
    Result<FencedResult> executeFenced(const Request& request, const std::vector<int>& waitFor,
                                       MeasureTiming measure, const Deadline& deadline,
                                       std::optional<std::chrono::nanoseconds> loopTimeout,
                                       std::optional<std::chrono::nanoseconds> timeoutAfterFence) final;
    Result<std::shared_ptr<IBurst>> configureExecutionBurst() final;
    Result<std::shared_ptr<IExecution>> createReusableExecution(
        const Request& request, MeasureTiming measure,
        std::optional<std::chrono::nanoseconds> loopTimeout) final;

    // The model whose main subgraph's inputs and outputs requests are validated against.
    virtual const Model& ioModel() const = 0;
    uint64_t id() const { return id_; }
    const BufferRegistry* buffers() const { return buffers_.get(); }

protected:
    // The device's execution of a request whose pools are all shared memory.
    virtual Result<ExecutionResult> executeShared(const Request& request, MeasureTiming measure,
                                                  const Deadline& deadline,
                                                  std::optional<std::chrono::nanoseconds> loopTimeout) = 0;
    // A channel for one new burst (configureExecutionBurst); null, the default: the burst's
    // executions take executeShared's way.
    virtual std::unique_ptr<BurstChannel> openBurstChannel() { return nullptr; }
    // An execution of a burst that has `channel`: executeShared over it.
    virtual Result<ExecutionResult> executeSharedInBurst(
        BurstChannel& channel, const Request& request, MeasureTiming measure, const Deadline& deadline,
        std::optional<std::chrono::nanoseconds> loopTimeout) {
        (void)channel;
        return executeShared(request, measure, deadline, loopTimeout);
    }
    // Ends fence waits and joins the threads of asynchronous executions (those running finish
    // first). A derived destructor calls it before releasing anything executeShared uses.
    void stopAsyncExecutions();

private:
    friend class Burst;
    // executeSynchronously, over `channel` when a burst runs it (null: none).
    Result<ExecutionResult> run(const Request& request, MeasureTiming measure, const Deadline& deadline,
                                std::optional<std::chrono::nanoseconds> loopTimeout, BurstChannel* channel);
    Result<ExecutionResult> shared(const Request& request, MeasureTiming measure, const Deadline& deadline,
                                   std::optional<std::chrono::nanoseconds> loopTimeout,
                                   BurstChannel* channel) {
        return channel != nullptr ? executeSharedInBurst(*channel, request, measure, deadline, loopTimeout)
                                  : executeShared(request, measure, deadline, loopTimeout);
    }
    Result<ExecutionResult> executeWithBuffers(const Request& request, MeasureTiming measure,
                                               const Deadline& deadline,
                                               std::optional<std::chrono::nanoseconds> loopTimeout,
                                               BurstChannel* channel);
    Status validateForLaunch(const Request& request, const char* what) const;

    const uint64_t id_;
    std::shared_ptr<BufferRegistry> buffers_;
    std::unique_ptr<WorkerThreads> workers_;
};

}  // namespace npu::hal
