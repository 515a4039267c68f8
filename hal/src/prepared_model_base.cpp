#include "npu/hal/prepared_model_base.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "managed_buffer.h"
#include "npu/hal/sync_fence.h"
#include "npu/hal/validation.h"
#include "worker_threads.h"

namespace npu::hal {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<uint64_t> nextPreparedModelId{1};

uint64_t microsBetween(Clock::time_point from, Clock::time_point to) {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(to - from).count());
}

// fds owned by a fenced execution (its fence and dups of the caller's waitFor fds).
struct OwnedFds {
    std::vector<int> fds;
    OwnedFds() = default;
    OwnedFds(const OwnedFds&) = delete;
    OwnedFds& operator=(const OwnedFds&) = delete;
    ~OwnedFds() {
        for (int fd : fds) close(fd);
    }
};

Result<int> dupFd(int fd, const char* what) {
    const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) {
        return fail(ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
                    std::string(what) + ": cannot duplicate fd " + std::to_string(fd));
    }
    return copy;
}

bool hasBufferPool(const Request& request) {
    return std::any_of(request.pools.begin(), request.pools.end(),
                       [](const RequestMemoryPool& p) { return std::holds_alternative<uint32_t>(p); });
}

// The buffers a request uses, locked for the execution (readers shared, writers alone).
class BufferLocks {
public:
    BufferLocks() = default;
    BufferLocks(const BufferLocks&) = delete;
    BufferLocks& operator=(const BufferLocks&) = delete;
    ~BufferLocks() {
        for (auto& [buffer, write] : held_) buffer->unlock(write);
    }
    Status lock(const std::shared_ptr<ManagedBuffer>& buffer, bool write) {
        NPU_TRY(buffer->lock(write));
        held_.emplace_back(buffer, write);
        return {};
    }

private:
    std::vector<std::pair<std::shared_ptr<ManagedBuffer>, bool>> held_;
};

class FencedCallback final : public IFencedExecutionCallback {
public:
    Result<FencedExecutionInfo> getExecutionInfo() override {
        std::lock_guard lock(mutex_);
        if (!done_) {
            return generalFailure(
                "getExecutionInfo: the execution has not finished (wait for its sync fence)");
        }
        return info_;
    }
    void finish(const Result<ExecutionResult>& result, MeasureTiming measure, Clock::time_point launched,
                Clock::time_point fenced) {
        const auto end = Clock::now();
        std::lock_guard lock(mutex_);
        if (!result) {
            info_.status = result.error().status;
            info_.message = result.error().message;
        } else if (measure == MeasureTiming::YES) {
            // The device's time is inside both intervals; the driver's is never reported as less.
            const uint64_t device = result->timing.timeOnDeviceUs;
            auto driver = [&](Clock::time_point from) {
                const uint64_t us = microsBetween(from, end);
                return device == kNoTiming ? us : std::max(us, device);
            };
            info_.timingLaunched = {device, driver(launched)};
            info_.timingFenced = {device, driver(fenced)};
        }
        done_ = true;
    }

private:
    std::mutex mutex_;
    bool done_ = false;
    FencedExecutionInfo info_;
};

class ReusableExecution final : public IExecution {
public:
    ReusableExecution(std::shared_ptr<PreparedModelBase> model, Request request, MeasureTiming measure,
                      std::optional<std::chrono::nanoseconds> loopTimeout)
        : model_(std::move(model)),
          request_(std::move(request)),
          measure_(measure),
          loopTimeout_(loopTimeout) {}

    Result<ExecutionResult> executeSynchronously(const Deadline& deadline) override {
        if (running_.exchange(true)) {
            return invalidArgument("reusable execution: started again while it is still running");
        }
        auto result = model_->executeSynchronously(request_, measure_, deadline, loopTimeout_);
        running_ = false;
        return result;
    }
    Result<FencedResult> executeFenced(const std::vector<int>& waitFor, const Deadline& deadline,
                                       std::optional<std::chrono::nanoseconds> timeoutAfterFence) override {
        return model_->executeFenced(request_, waitFor, measure_, deadline, loopTimeout_, timeoutAfterFence);
    }

private:
    std::shared_ptr<PreparedModelBase> model_;
    const Request request_;
    const MeasureTiming measure_;
    const std::optional<std::chrono::nanoseconds> loopTimeout_;
    std::atomic<bool> running_{false};
};

}  // namespace

// Not in the anonymous namespace: PreparedModelBase befriends it (run with its channel).
class Burst final : public IBurst {
public:
    Burst(std::shared_ptr<PreparedModelBase> model, std::unique_ptr<BurstChannel> channel)
        : model_(std::move(model)), channel_(std::move(channel)) {}

    Result<ExecutionResult> executeSynchronously(
        const Request& request, const std::vector<int64_t>& tokens, MeasureTiming measure,
        const Deadline& deadline, std::optional<std::chrono::nanoseconds> loopTimeout) override {
        // The request with its cached pools filled in, built in the burst's own request when no
        // other thread uses it: its vectors keep their capacity, so a call allocates nothing.
        std::unique_lock scratchLock(scratchMutex_, std::try_to_lock);
        Request local;
        Request& resolved = scratchLock.owns_lock() ? scratch_ : local;
        resolved = request;
        struct DropPools {  // after the call: only the cache keeps memory alive
            Request& r;
            ~DropPools() { r.pools.clear(); }
        } dropPools{resolved};
        NPU_TRY(resolvePools(resolved, tokens));
        return model_->run(resolved, measure, deadline, loopTimeout, channel_.get());
    }

    Status releaseMemoryResource(int64_t token) override {
        std::lock_guard lock(mutex_);
        if (cache_.erase(token) == 0) {
            return invalidArgument("releaseMemoryResource: memory identifier token " + std::to_string(token) +
                                   " is not cached in this burst (never used, or released already)");
        }
        return {};
    }

private:
    // A pool with a token is cached under it the first time; afterwards the request may pass a
    // null pool for it, and the memory mapped the first time is used again.
    Status resolvePools(Request& request, const std::vector<int64_t>& tokens) {
        if (tokens.size() != request.pools.size()) {
            return invalidArgument("burst: " + std::to_string(tokens.size()) +
                                   " memory identifier tokens for " + std::to_string(request.pools.size()) +
                                   " pools");
        }
        std::lock_guard lock(mutex_);
        for (size_t i = 0; i < tokens.size(); ++i) {
            const int64_t token = tokens[i];
            if (token == -1) continue;
            // Built only for an error: not on every execution's way.
            auto where = [&] {
                return "burst: pool " + std::to_string(i) + " (token " + std::to_string(token) + ")";
            };
            if (token < -1) return invalidArgument(where() + ": a token is -1 (not cached) or >= 0");
            auto* memory = std::get_if<std::shared_ptr<Memory>>(&request.pools[i]);
            if (memory == nullptr) {
                return invalidArgument(where() + ": a driver-managed buffer is not cached; pass -1");
            }
            auto cached = cache_.find(token);
            if (cached == cache_.end()) {
                if (!*memory)
                    return invalidArgument(where() + ": the pool is null and the token is not cached");
                cache_.emplace(token, *memory);
            } else if (*memory && *memory != cached->second) {
                return invalidArgument(where() +
                                       ": the token is cached for another memory (release it first)");
            } else {
                *memory = cached->second;
            }
        }
        return {};
    }

    std::shared_ptr<PreparedModelBase> model_;
    std::unique_ptr<BurstChannel> channel_;  // the device's (null: none); it serialises its own use
    std::mutex mutex_;
    std::map<int64_t, std::shared_ptr<Memory>> cache_;
    std::mutex scratchMutex_;  // held by the call using scratch_
    Request scratch_;
};

PreparedModelBase::PreparedModelBase(std::shared_ptr<BufferRegistry> buffers)
    : id_(nextPreparedModelId++),
      buffers_(buffers ? std::move(buffers) : std::make_shared<BufferRegistry>()),
      workers_(std::make_unique<WorkerThreads>(kMaxAsyncExecutions)) {}

PreparedModelBase::~PreparedModelBase() {
    stopAsyncExecutions();
}

void PreparedModelBase::stopAsyncExecutions() {
    workers_->stop();
}

Status PreparedModelBase::validateForLaunch(const Request& request, const char* what) const {
    if (!hasBufferPool(request)) return withContext(validateRequest(request, ioModel()), what);
    // An input held in a driver-managed buffer takes the buffer's dimensions.
    Request view = request;
    for (auto& arg : view.inputs) {
        if (arg.hasNoValue || !arg.dimensions.empty() || arg.location.poolIndex >= view.pools.size())
            continue;
        const uint32_t* token = std::get_if<uint32_t>(&view.pools[arg.location.poolIndex]);
        if (token == nullptr) continue;
        if (auto buffer = buffers_->find(*token)) arg.dimensions = buffer->currentDimensions();
    }
    return withContext(validateRequest(view, ioModel()), what);
}

Result<ExecutionResult> PreparedModelBase::executeSynchronously(
    const Request& request, MeasureTiming measure, const Deadline& deadline,
    std::optional<std::chrono::nanoseconds> loopTimeout) {
    return run(request, measure, deadline, loopTimeout, nullptr);
}

Result<ExecutionResult> PreparedModelBase::run(const Request& request, MeasureTiming measure,
                                               const Deadline& deadline,
                                               std::optional<std::chrono::nanoseconds> loopTimeout,
                                               BurstChannel* channel) {
    if (measure != MeasureTiming::NO && measure != MeasureTiming::YES) {
        return invalidArgument("execution: MeasureTiming " + std::to_string(static_cast<int32_t>(measure)) +
                               " is neither NO (0) nor YES (1)");
    }
    if (!hasBufferPool(request)) return shared(request, measure, deadline, loopTimeout, channel);
    return executeWithBuffers(request, measure, deadline, loopTimeout, channel);
}

// Requests naming driver-managed buffers: each buffer is checked against its roles, locked,
// and passed to the device as the shared memory that holds it. An output buffer whose shape
// turns out larger than known grows, and the execution runs once more.
namespace {

// Per request pool: the driver-managed buffer its token names (null for shared memory).
using PoolBuffers = std::vector<std::shared_ptr<ManagedBuffer>>;

Result<PoolBuffers> findPoolBuffers(const Request& request, const BufferRegistry& registry) {
    PoolBuffers poolBuffer(request.pools.size());
    for (size_t p = 0; p < request.pools.size(); ++p) {
        const uint32_t* token = std::get_if<uint32_t>(&request.pools[p]);
        if (token == nullptr) continue;
        poolBuffer[p] = registry.find(*token);
        if (!poolBuffer[p]) {
            return invalidArgument("execution: request pool " + std::to_string(p) + ": buffer token " +
                                   std::to_string(*token) +
                                   " is unknown to this device (never allocated here, or released)");
        }
    }
    return poolBuffer;
}

// Checks every use of a buffer against its roles for prepared model `modelId`, then locks each
// buffer once: shared when only read, alone when written; one buffer as input and output of one
// execution is INVALID_ARGUMENT.
Status lockPoolBuffers(const Request& request, const PoolBuffers& poolBuffer, uint64_t modelId,
                       BufferLocks& locks) {
    std::map<ManagedBuffer*, int> use;  // per buffer (several pools may name one): 1 read, 2 written
    for (const bool isInput : {true, false}) {
        const auto& args = isInput ? request.inputs : request.outputs;
        for (uint32_t k = 0; k < args.size(); ++k) {
            const uint32_t p = args[k].location.poolIndex;
            if (args[k].hasNoValue || !poolBuffer[p]) continue;
            if (!poolBuffer[p]->hasRole({modelId, isInput, k})) {
                return invalidArgument("execution: request " + std::string(isInput ? "input " : "output ") +
                                       std::to_string(k) + " uses buffer token " +
                                       std::to_string(poolBuffer[p]->token()) +
                                       ", which was not allocated with that role of this prepared model");
            }
            use[poolBuffer[p].get()] |= isInput ? 1 : 2;
        }
    }
    for (const auto& buffer : poolBuffer) {
        if (!buffer || use.count(buffer.get()) == 0) continue;
        const int how = use[buffer.get()];
        if (how == 3) {
            return invalidArgument("execution: buffer token " + std::to_string(buffer->token()) +
                                   " is both an input and an output of one execution");
        }
        use.erase(buffer.get());  // locked once, however many pools name it
        NPU_TRY(locks.lock(buffer, how == 2));
    }
    return {};
}

// Points `arg` (of `resolved`) at its buffer's storage: the pool the device sees and the
// buffer's dimensions. Shared-memory arguments are left as they are.
Status bindPoolBuffer(const PoolBuffers& poolBuffer, RequestArgument& arg, bool isInput, Request& resolved) {
    const uint32_t p = arg.location.poolIndex;
    if (arg.hasNoValue || !poolBuffer[p]) return {};
    std::vector<uint32_t> dims;
    auto pool = NPU_TRY(isInput ? poolBuffer[p]->input(arg.dimensions, dims)
                                : poolBuffer[p]->output(arg.dimensions, dims));
    const auto bytes = tensorByteSize(poolBuffer[p]->operandType(), dims);
    arg.location = {p, 0, 0, 0};  // a device token's location
    if (const auto* memory = std::get_if<std::shared_ptr<Memory>>(&pool)) {
        arg.location.length = static_cast<uint32_t>(isInput ? bytes.value_or(0) : (*memory)->size());
    }
    resolved.pools[p] = std::move(pool);
    arg.dimensions = bytes ? dims : std::vector<uint32_t>{};
    return {};
}

// After OUTPUT_INSUFFICIENT_SIZE: grows the output buffers whose needed shape is now known and
// rebinds them; false when nothing could grow (the error stays the caller's).
Result<bool> growOutputBuffers(const Request& request, const PoolBuffers& poolBuffer,
                               const std::vector<Error::Shape>& shapes, Request& resolved) {
    bool grown = false;
    for (size_t k = 0; k < resolved.outputs.size() && k < shapes.size(); ++k) {
        if (shapes[k].isSufficient) continue;
        const uint32_t p = request.outputs[k].location.poolIndex;
        if (!poolBuffer[p]) return false;
        const auto needed = tensorByteSize(poolBuffer[p]->operandType(), shapes[k].dimensions);
        if (!needed) return false;
        NPU_TRY(poolBuffer[p]->reserve(*needed));
        resolved.outputs[k] = request.outputs[k];
        NPU_TRY(bindPoolBuffer(poolBuffer, resolved.outputs[k], false, resolved));
        grown = true;
    }
    return grown;
}

}  // namespace

Result<ExecutionResult> PreparedModelBase::executeWithBuffers(
    const Request& request, MeasureTiming measure, const Deadline& deadline,
    std::optional<std::chrono::nanoseconds> loopTimeout, BurstChannel* channel) {
    NPU_TRY(validateForLaunch(request, "execution"));
    const PoolBuffers poolBuffer = NPU_TRY(findPoolBuffers(request, *buffers_));
    BufferLocks locks;
    NPU_TRY(lockPoolBuffers(request, poolBuffer, id_, locks));
    Request resolved = request;
    for (auto& arg : resolved.inputs) NPU_TRY(bindPoolBuffer(poolBuffer, arg, true, resolved));
    for (auto& arg : resolved.outputs) NPU_TRY(bindPoolBuffer(poolBuffer, arg, false, resolved));

    auto result = shared(resolved, measure, deadline, loopTimeout, channel);
    if (!result && result.error().status == ErrorStatus::OUTPUT_INSUFFICIENT_SIZE) {
        const auto shapes = result.error().outputShapes;
        const bool grown = NPU_TRY(growOutputBuffers(request, poolBuffer, shapes, resolved));
        if (grown) result = shared(resolved, measure, deadline, loopTimeout, channel);
    }
    if (!result) return result;
    for (size_t k = 0; k < request.outputs.size(); ++k) {
        const uint32_t p = request.outputs[k].location.poolIndex;
        if (request.outputs[k].hasNoValue || !poolBuffer[p]) continue;
        poolBuffer[p]->written(k < result->outputShapes.size() ? result->outputShapes[k].dimensions
                                                               : resolved.outputs[k].dimensions);
    }
    return result;
}

Status PreparedModelBase::execute(const Request& request, MeasureTiming measure, const Deadline& deadline,
                                  std::optional<std::chrono::nanoseconds> loopTimeout,
                                  std::shared_ptr<IExecutionCallback> callback) {
    if (!callback) return invalidArgument("execute: the callback is null");
    // NN HAL 1.3 execute_1_3: a launch that fails notifies the callback with its error at once,
    // and returns the same error.
    auto refused = [&](Status s) {
        callback->notify(std::unexpected(s.error()));
        return s;
    };
    if (Status valid = validateForLaunch(request, "execute"); !valid) return refused(std::move(valid));
    // The driver-managed buffers the request names are held from the launch on: the client may
    // drop its IBuffer once the execution is launched (the task resolves the tokens again).
    Result<PoolBuffers> held = findPoolBuffers(request, *buffers_);
    if (!held) return refused(std::unexpected(std::move(held).error()));
    auto task = [this, request, measure, deadline, loopTimeout, callback, held = std::move(*held)] {
        callback->notify(executeSynchronously(request, measure, deadline, loopTimeout));
    };
    Status submitted = withContext(workers_->submit(std::move(task)), "execute");
    return submitted ? submitted : refused(std::move(submitted));
}

Result<FencedResult> PreparedModelBase::executeFenced(
    const Request& request, const std::vector<int>& waitFor, MeasureTiming measure, const Deadline& deadline,
    std::optional<std::chrono::nanoseconds> loopTimeout,
    std::optional<std::chrono::nanoseconds> timeoutAfterFence) {
    const auto launched = Clock::now();
    NPU_TRY(withContext(validateSyncFences(waitFor), "executeFenced"));
    if (timeoutAfterFence && timeoutAfterFence->count() < 0) {
        return invalidArgument("executeFenced: timeoutAfterFence " +
                               std::to_string(timeoutAfterFence->count()) + " ns is negative");
    }
    NPU_TRY(validateForLaunch(request, "executeFenced"));
    PoolBuffers held = NPU_TRY(findPoolBuffers(request, *buffers_));  // as execute: held from the launch
    if (deadline && launched >= *deadline) {
        return fail(ErrorStatus::MISSED_DEADLINE_TRANSIENT, "executeFenced: the deadline had passed already");
    }
    auto owned = std::make_shared<OwnedFds>();  // [0] = our fence, then the waitFor dups
    owned->fds.push_back(NPU_TRY(createSyncFence()));
    const int callerFence = NPU_TRY(dupFd(owned->fds[0], "executeFenced"));
    for (int fd : waitFor) {
        auto copy = dupFd(fd, "executeFenced");
        if (!copy) close(callerFence);
        owned->fds.push_back(NPU_TRY(std::move(copy)));
    }
    auto callback = std::make_shared<FencedCallback>();
    const int cancelFd = workers_->cancelFd();
    auto task = [this, request, measure, deadline, loopTimeout, timeoutAfterFence, launched, owned, callback,
                 cancelFd, held = std::move(held)] {
        const std::vector<int> fences(owned->fds.begin() + 1, owned->fds.end());
        const auto until = deadline ? *deadline : launched + kMaxFenceWait;
        const auto onTimeout =
            deadline ? ErrorStatus::MISSED_DEADLINE_TRANSIENT : ErrorStatus::GENERAL_FAILURE;
        Status waited = withContext(waitForSyncFences(fences, until, onTimeout, cancelFd), "executeFenced");
        const auto fenced = Clock::now();
        Result<ExecutionResult> result = std::unexpected(waited ? Error{} : waited.error());
        if (waited) {
            Deadline runDeadline = deadline;
            if (timeoutAfterFence) {
                const auto after = fenced + std::chrono::duration_cast<Clock::duration>(*timeoutAfterFence);
                runDeadline = deadline ? std::min(*deadline, after) : after;
            }
            result = executeSynchronously(request, measure, runDeadline, loopTimeout);
        }
        callback->finish(result, measure, launched, fenced);
        (void)signalSyncFence(owned->fds[0]);
    };
    Status submitted = workers_->submit(std::move(task));
    if (!submitted) {
        close(callerFence);
        return std::unexpected(withContext(std::move(submitted), "executeFenced").error());
    }
    return FencedResult{callerFence, callback};
}

Result<std::shared_ptr<IBurst>> PreparedModelBase::configureExecutionBurst() {
    auto self = weak_from_this().lock();
    if (!self)
        return generalFailure("configureExecutionBurst: the prepared model is not held by a shared_ptr");
    auto channel = openBurstChannel();
    return std::shared_ptr<IBurst>(std::make_shared<Burst>(std::move(self), std::move(channel)));
}

Result<std::shared_ptr<IExecution>> PreparedModelBase::createReusableExecution(
    const Request& request, MeasureTiming measure, std::optional<std::chrono::nanoseconds> loopTimeout) {
    NPU_TRY(validateForLaunch(request, "createReusableExecution"));
    auto self = weak_from_this().lock();
    if (!self) {
        return generalFailure("createReusableExecution: the prepared model is not held by a shared_ptr");
    }
    return std::shared_ptr<IExecution>(
        std::make_shared<ReusableExecution>(std::move(self), request, measure, loopTimeout));
}

}  // namespace npu::hal
