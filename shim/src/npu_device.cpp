#include "npu/shim/npu_device.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>

#include "burst_channel.h"
#include "compilation_cache.h"
#include "connection.h"
#include "firmware_buffer.h"
#include "marshal.h"
#include "npu/hal/device_base.h"
#include "npu/hal/prepared_model_base.h"
#include "npu/hal/validation.h"
#include "npu/protocol/vlog.h"

namespace npu::shim {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::nanoseconds kDefaultLoopTimeout = std::chrono::seconds(2);
constexpr std::chrono::nanoseconds kMaxLoopTimeout = std::chrono::seconds(15);

uint64_t budgetNs(const hal::Deadline& deadline) {
    if (!deadline) return 0;
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(*deadline - Clock::now()).count();
    return left <= 0 ? 1 : static_cast<uint64_t>(left);
}

Status checkDeadline(const hal::Deadline& deadline, const char* what) {
    if (deadline && Clock::now() >= *deadline) {
        return fail(hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT,
                    std::string(what) + ": the deadline has already passed");
    }
    return {};
}

// The time the shim waits for a reply: the call class's timeout, shortened by a deadline
// (plus a margin for the firmware to report MISSED_DEADLINE itself).
std::chrono::milliseconds waitFor(std::chrono::milliseconds classTimeout, const hal::Deadline& deadline) {
    if (!deadline) return classTimeout;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()) +
                std::chrono::milliseconds(500);
    return std::min(classTimeout, std::max(left, std::chrono::milliseconds(1)));
}

// An operation that failed as unavailable after the caller's deadline passed missed its
// deadline: the device is not unavailable for that (QoS, docs/execution.md).
Status missedIfLate(Status status, const hal::Deadline& deadline) {
    if (status || !deadline || status.error().status != hal::ErrorStatus::DEVICE_UNAVAILABLE ||
        Clock::now() < *deadline) {
        return status;
    }
    return fail(hal::ErrorStatus::MISSED_DEADLINE_TRANSIENT,
                "the deadline passed before the firmware answered (" + status.error().message + ")");
}

// Compiles `model` on the firmware as it is now; the staged constants go to `keep`.
Result<proto::PrepareModelReply> compileOnFirmware(Connection& c, Attempt& a, const hal::Model& model,
                                                   hal::ExecutionPreference preference,
                                                   hal::Priority priority, const hal::Deadline& deadline,
                                                   std::vector<WindowBlock>& keep) {
    proto::PrepareModelRequest request;
    const PoolAddresses pools = NPU_TRY(c.pools().modelPools(a, model));
    keep.push_back(
        NPU_TRY(marshalModel(model, c.window(), request.mutable_model(), pools, inlineRuleFor(c.hello()))));
    NPU_TRY(c.pushWindow(a, keep.back().addr(), keep.back().bytes(), "prepareModel: send constants"));
    request.set_preference(static_cast<uint32_t>(preference));
    request.set_priority(static_cast<uint32_t>(priority));
    request.set_deadline_ns(budgetNs(deadline));
    request.set_no_autotune(!c.options().autotune);
    proto::PrepareModelReply reply;
    // A prepare that times out is cancelled (the firmware stops compiling at its next checkpoint),
    // and its constants stay put until the firmware let go of them.
    NPU_TRY(c.callCancellable(a, proto::METHOD_PREPARE_MODEL, request, reply,
                              waitFor(c.options().prepareTimeout, deadline), "prepareModel", keep));
    NPU_TRY(checkStatus(reply.status(), "prepareModel"));
    return reply;
}

struct LoadedModel {
    uint32_t handle = 0;
    hal::Model ioModel;
};

// Hands a verified cached blob to the firmware (which validates it fully) without compiling.
Result<LoadedModel> loadOnFirmware(Connection& c, Attempt& a, const CacheImages& images,
                                   hal::Priority priority, const hal::Deadline& deadline,
                                   std::vector<WindowBlock>& keep) {
    auto decoded = NPU_TRY(decodeModelCache(images.model));
    HostWindow& window = c.window();
    const uint64_t modelBytes = decoded.firmwareModelBlob.size();
    const uint64_t dataBytes = images.data.size();
    keep.emplace_back(&window, NPU_TRY(window.allocate(modelBytes)), modelBytes);
    WindowBlock& modelBlock = keep.back();
    if (modelBytes > 0) std::memcpy(modelBlock.data(), decoded.firmwareModelBlob.data(), modelBytes);
    NPU_TRY(c.pushWindow(a, modelBlock.addr(), modelBytes, "prepareModelFromCache: model blob"));
    const uint64_t modelAddr = modelBlock.addr();
    keep.emplace_back(&window, NPU_TRY(window.allocate(dataBytes)), dataBytes);
    WindowBlock& dataBlock = keep.back();
    if (dataBytes > 0) std::memcpy(dataBlock.data(), images.data.data(), dataBytes);
    NPU_TRY(c.pushWindow(a, dataBlock.addr(), dataBytes, "prepareModelFromCache: data blob"));
    proto::PrepareFromCacheRequest request;
    request.set_model_blob_addr(modelAddr);
    request.set_model_blob_bytes(modelBytes);
    request.set_data_blob_addr(dataBlock.addr());
    request.set_data_blob_bytes(dataBytes);
    request.set_deadline_ns(budgetNs(deadline));
    request.set_priority(static_cast<uint32_t>(priority));
    proto::PrepareModelReply reply;
    NPU_TRY(c.callCancellable(a, proto::METHOD_PREPARE_FROM_CACHE, request, reply,
                              waitFor(c.options().prepareTimeout, deadline), "prepareModelFromCache", keep));
    if (reply.status().code() != 0) {
        // Whatever the firmware found wrong with a cached blob, the caller's answer is: no
        // usable cache, compile again.
        return generalFailure("prepareModelFromCache: firmware rejected the cached blob: " +
                              reply.status().message());
    }
    if (reply.num_inputs() != decoded.ioModel.main.inputIndexes.size() ||
        reply.num_outputs() != decoded.ioModel.main.outputIndexes.size()) {
        proto::ReleaseModelRequest release;
        release.set_model_handle(reply.model_handle());
        proto::ReleaseModelReply released;
        (void)c.call(a, proto::METHOD_RELEASE_MODEL, release, released, c.options().callTimeout,
                     "releaseModel");
        return generalFailure(
            "prepareModelFromCache: the cached blob's I/O counts do not match its model cache");
    }
    return LoadedModel{reply.model_handle(), std::move(decoded.ioModel)};
}

// Every execution mode comes from hal::PreparedModelBase (docs/execution.md); this class runs
// one request whose pools are shared memory, staged through the host window, as a recovering
// operation (watchdog, reset, replay: docs/reliability.md), so every mode gets recovery.
class NpuPreparedModel final : public hal::PreparedModelBase {
public:
    // `id`: the model in the connection's registry, which knows its handle on the firmware as it
    // is now (a reset or restart gives it a new one).
    NpuPreparedModel(std::shared_ptr<Connection> connection, std::shared_ptr<hal::BufferRegistry> buffers,
                     std::shared_ptr<FirmwareBuffers> firmwareBuffers, uint64_t id,
                     std::shared_ptr<const hal::Model> ioModel, NpuCompileInfo compileInfo = {})
        : PreparedModelBase(std::move(buffers)),
          connection_(std::move(connection)),
          firmwareBuffers_(std::move(firmwareBuffers)),
          id_(id),
          model_(std::move(ioModel)),
          compileInfo_(compileInfo) {}

    const NpuCompileInfo& compileInfo() const { return compileInfo_; }
    // The model's id in the connection's registry (its firmware handle changes with a reset).
    uint64_t connectionModelId() const { return id_; }

    const hal::Model& ioModel() const override { return *model_; }

    ~NpuPreparedModel() override {
        stopAsyncExecutions();  // before the firmware lets go of the model
        connection_->releaseModel(id_);
    }

protected:
    Result<hal::ExecutionResult> executeShared(const hal::Request& request, hal::MeasureTiming measure,
                                               const hal::Deadline& deadline,
                                               std::optional<std::chrono::nanoseconds> loopTimeout) override {
        return runExecution(nullptr, request, measure, deadline, loopTimeout);
    }
    std::unique_ptr<hal::BurstChannel> openBurstChannel() override {
        return std::make_unique<NpuBurstChannel>(connection_);
    }
    // A burst's execution: on its channel while no other execution of the burst uses it.
    Result<hal::ExecutionResult> executeSharedInBurst(
        hal::BurstChannel& channel, const hal::Request& request, hal::MeasureTiming measure,
        const hal::Deadline& deadline, std::optional<std::chrono::nanoseconds> loopTimeout) override {
        auto& burst = static_cast<NpuBurstChannel&>(channel);
        std::unique_lock lock(burst.inUse(), std::try_to_lock);
        return runExecution(lock.owns_lock() ? &burst : nullptr, request, measure, deadline, loopTimeout);
    }

private:
    Result<hal::ExecutionResult> runExecution(NpuBurstChannel* burst, const hal::Request& request,
                                              hal::MeasureTiming measure, const hal::Deadline& deadline,
                                              std::optional<std::chrono::nanoseconds> loopTimeout) {
        const auto start = Clock::now();
        NPU_TRY(hal::validateRequest(request, *model_));
        if (loopTimeout && loopTimeout->count() < 0) {
            return invalidArgument("executeSynchronously: loop timeout " +
                                   std::to_string(loopTimeout->count()) + " ns is negative");
        }
        // Above the HAL's maximum it is clamped, as the reference does (the firmware clamps too).
        if (loopTimeout && *loopTimeout > kMaxLoopTimeout) loopTimeout = kMaxLoopTimeout;
        // The blocks outlive every attempt and the recovery between them (the firmware may
        // still write outputs into them until it is confirmed done, reset or restarted).
        std::vector<WindowBlock> blocks;
        hal::ExecutionResult result;
        const Status ran = connection_->runRecovering("execute", blocks, [&](Attempt& a) -> Status {
            blocks.clear();
            NPU_TRY(checkDeadline(deadline, "executeSynchronously"));
            result = NPU_TRY(executeOnce(a, burst, request, measure, deadline, loopTimeout, blocks));
            return {};
        });
        proto::vlog("driver", "execute: model %llu, %zu inputs, %zu outputs: %s",
                    static_cast<unsigned long long>(id_), request.inputs.size(), request.outputs.size(),
                    ran ? "done" : ran.error().message.c_str());
        NPU_TRY(missedIfLate(ran, deadline));
        if (measure == hal::MeasureTiming::YES) {
            result.timing.timeInDriverUs = static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
            // The HAL requires timeInDriver >= timeOnDevice when both are reported. Simulated
            // device time is not host time, so report the larger as the driver's time.
            if (result.timing.timeOnDeviceUs != hal::kNoTiming &&
                result.timing.timeInDriverUs < result.timing.timeOnDeviceUs) {
                result.timing.timeInDriverUs = result.timing.timeOnDeviceUs;
            }
        }
        return result;
    }

    // One execution on the firmware as it is now: stage the inputs, execute (on the burst's
    // channel when there is one), fetch the outputs.
    Result<hal::ExecutionResult> executeOnce(Attempt& a, NpuBurstChannel* burst, const hal::Request& request,
                                             hal::MeasureTiming measure, const hal::Deadline& deadline,
                                             std::optional<std::chrono::nanoseconds> loopTimeout,
                                             std::vector<WindowBlock>& blocks) {
        std::shared_ptr<proto::RpcClient> via;
        if (burst != nullptr) via = NPU_TRY(burst->client(a));
        proto::ExecuteRequest wire;
        wire.set_model_handle(NPU_TRY(connection_->modelHandle(a, id_)));
        wire.set_measure_timing(measure == hal::MeasureTiming::YES);
        wire.set_deadline_ns(budgetNs(deadline));
        wire.set_loop_timeout_ns(
            static_cast<uint64_t>((loopTimeout ? *loopTimeout : kDefaultLoopTimeout).count()));
        const std::vector<int> outputBlock = NPU_TRY(stageRequest(a, request, wire, blocks));
        proto::ExecuteReply reply;
        NPU_TRY(connection_->callCancellable(a, proto::METHOD_EXECUTE, wire, reply,
                                             waitFor(connection_->options().executeTimeout, deadline),
                                             "execute", blocks, via));
        NPU_TRY(checkDeviceFault(a, reply));
        NPU_TRY(checkExecuteStatus(reply));
        NPU_TRY(fetchOutputs(a, request, outputBlock, blocks));
        return resultFromReply(reply, measure);
    }

    // Fills the arguments of `wire` and stages the pools that are copied: inputs are written into
    // their window blocks (and pushed, where the window is not shared). Returns, per output, the
    // index of its window block in `blocks` (-1: nothing to fetch, the NPU wrote it in place).
    Result<std::vector<int>> stageRequest(Attempt& a, const hal::Request& request,
                                          proto::ExecuteRequest& wire, std::vector<WindowBlock>& blocks) {
        blocks.reserve(request.inputs.size() + request.outputs.size());
        for (size_t i = 0; i < request.inputs.size(); ++i)
            NPU_TRY(stageArgument(a, request, request.inputs[i], wire.add_inputs(), true, i, blocks));
        const size_t inputBlocks = blocks.size();
        std::vector<int> outputBlock(request.outputs.size(), -1);
        for (size_t i = 0; i < request.outputs.size(); ++i) {
            const size_t before = blocks.size();
            NPU_TRY(stageArgument(a, request, request.outputs[i], wire.add_outputs(), false, i, blocks));
            if (blocks.size() > before) outputBlock[i] = static_cast<int>(blocks.size() - 1);
        }
        for (size_t b = 0; b < inputBlocks; ++b) {
            NPU_TRY(connection_->pushWindow(a, blocks[b].addr(), blocks[b].bytes(), "execute: send inputs"));
        }
        return outputBlock;
    }

    // One argument: a driver-managed buffer (its firmware token), a pool the firmware mapped
    // (its device address: zero copy) or a window block (a copy).
    Status stageArgument(Attempt& a, const hal::Request& request, const hal::RequestArgument& arg,
                         proto::Argument* out, bool isInput, size_t index, std::vector<WindowBlock>& blocks) {
        for (uint32_t d : arg.dimensions) out->add_dimensions(d);
        if (arg.hasNoValue) {
            out->set_has_no_value(true);
            return {};
        }
        // Built only for an error (or a buffer token): not on every execution's way.
        auto where = [&] {
            return std::string(isInput ? "execute: input " : "execute: output ") + std::to_string(index);
        };
        // PreparedModelBase resolved driver-managed buffers to their firmware buffers: the
        // firmware reads and writes them in place.
        const auto& pool = request.pools[arg.location.poolIndex];
        if (const auto* id = std::get_if<uint32_t>(&pool)) {
            out->set_buffer_token(NPU_TRY(firmwareBuffers_->token(*id, a.epoch, where())));
            return {};
        }
        const auto& memory = std::get<std::shared_ptr<hal::Memory>>(pool);
        auto mapped = connection_->pools().address(a, memory, !isInput);
        if (!mapped) return fail(mapped.error().status, where() + ": " + mapped.error().message);
        out->set_length(arg.location.length);
        if (*mapped) {
            out->set_addr(**mapped + arg.location.offset);
            return {};
        }
        HostWindow& window = connection_->window();
        auto addr = window.allocate(arg.location.length);
        if (!addr) return fail(addr.error().status, where() + ": " + addr.error().message);
        blocks.emplace_back(&window, *addr, arg.location.length);
        if (isInput && arg.location.length > 0) {
            std::memcpy(blocks.back().data(), memory->data() + arg.location.offset, arg.location.length);
        }
        out->set_addr(*addr);
        return {};
    }

    // OUTPUT_INSUFFICIENT_SIZE carries every output's needed shape; any other failure its status.
    static Status checkExecuteStatus(const proto::ExecuteReply& reply) {
        if (reply.status().code() == static_cast<uint32_t>(hal::ErrorStatus::OUTPUT_INSUFFICIENT_SIZE)) {
            Error e{hal::ErrorStatus::OUTPUT_INSUFFICIENT_SIZE, "execute: " + reply.status().message(), {}};
            for (const auto& s : reply.output_shapes()) {
                e.outputShapes.push_back({{s.dimensions().begin(), s.dimensions().end()}, s.is_sufficient()});
            }
            return std::unexpected(std::move(e));
        }
        return checkStatus(reply.status(), "execute");
    }

    // Copies the outputs staged in the window back into their pools.
    Status fetchOutputs(Attempt& a, const hal::Request& request, const std::vector<int>& outputBlock,
                        std::vector<WindowBlock>& blocks) {
        for (size_t i = 0; i < request.outputs.size(); ++i) {
            if (outputBlock[i] < 0) continue;
            const auto& arg = request.outputs[i];
            auto& memory = std::get<std::shared_ptr<hal::Memory>>(request.pools[arg.location.poolIndex]);
            NPU_TRY(connection_->pullWindow(a, blocks[outputBlock[i]].addr(), arg.location.length,
                                            "execute: fetch outputs"));
            std::memcpy(memory->data() + arg.location.offset, blocks[outputBlock[i]].data(),
                        arg.location.length);
        }
        return {};
    }

    static hal::ExecutionResult resultFromReply(const proto::ExecuteReply& reply,
                                                hal::MeasureTiming measure) {
        hal::ExecutionResult result;
        for (const auto& s : reply.output_shapes()) {
            result.outputShapes.push_back(
                {{s.dimensions().begin(), s.dimensions().end()}, s.is_sufficient()});
        }
        result.deviceCycles = reply.device_cycles();
        for (const auto& p : reply.profile()) {
            result.profile.push_back({p.operation_index(), static_cast<hal::OperationType>(p.type()),
                                      p.cycles(), p.macs(), p.stall_cycles(), p.dram_read_bytes(),
                                      p.dram_write_bytes(), p.stall_dma_cycles(), p.load_active_cycles(),
                                      p.compute_active_cycles(), p.store_active_cycles()});
        }
        if (measure == hal::MeasureTiming::YES && reply.clock_hz() > 0) {
            result.timing.timeOnDeviceUs = static_cast<uint64_t>(static_cast<double>(reply.device_cycles()) *
                                                                 1e6 / static_cast<double>(reply.clock_hz()));
        }
        return result;
    }

    // A hung NPU (reset by the firmware, nothing completed) makes the attempt replayable; a data
    // fault fails the request: its outputs may be corrupt and are never returned.
    Status checkDeviceFault(Attempt& a, const proto::ExecuteReply& reply) {
        if (reply.status().code() == 0) return {};
        if (reply.device_fault() == 1) {
            a.lost = Attempt::Loss::kNpuHang;
            return generalFailure("execute: the NPU hung: " + reply.status().message());
        }
        if (reply.device_fault() == 2) {
            a.lost = Attempt::Loss::kDataFault;
            connection_->countDataFault();
            return generalFailure("execute: the NPU reported a data fault (" + reply.status().message() +
                                  "); the outputs may be corrupt and were not returned; the request may be "
                                  "submitted again");
        }
        return {};
    }

    std::shared_ptr<Connection> connection_;
    std::shared_ptr<FirmwareBuffers> firmwareBuffers_;
    uint64_t id_;
    std::shared_ptr<const hal::Model> model_;  // the model's I/O description, for request validation
    NpuCompileInfo compileInfo_;
};

// Asynchronous preparation comes from hal::DeviceBase: prepareModel on a thread of the device.
class NpuDevice final : public hal::DeviceBase {
public:
    explicit NpuDevice(std::shared_ptr<Connection> connection) : connection_(std::move(connection)) {}
    // Preparations in flight finish first: they use the connection, the buffers and the cache.
    ~NpuDevice() override { stopAsyncPrepares(); }

    std::string getVersionString() const override {
        return std::string("npu-shim ") + kShimVersion + " / " + connection_->hello().firmware_version();
    }
    hal::DeviceType getType() const override { return hal::DeviceType::ACCELERATOR; }

    Result<hal::Capabilities> getCapabilities() override {
        proto::CapabilitiesReply reply = NPU_TRY(capabilities());
        return capabilitiesFromWire(reply);
    }

    Result<std::vector<bool>> getSupportedOperations(const hal::Model& model) override {
        return NPU_TRY(supportedOperations(model)).supported;
    }

    // The firmware's verdict per operation and its reason for each it does not take (logged
    // under NPU_VLOG=driver).
    Result<NpuSupport> supportedOperations(const hal::Model& model) {
        NPU_TRY(hal::validateModel(model));
        std::vector<WindowBlock> keep;
        proto::SupportedOperationsReply reply;
        NPU_TRY(connection_->runRecovering("getSupportedOperations", keep, [&](Attempt& a) -> Status {
            keep.clear();
            proto::GetSupportedOperationsRequest request;
            const PoolAddresses pools = NPU_TRY(connection_->pools().modelPools(a, model));
            keep.push_back(NPU_TRY(marshalModel(model, connection_->window(), request.mutable_model(), pools,
                                                inlineRuleFor(connection_->hello()))));
            NPU_TRY(connection_->pushWindow(a, keep.back().addr(), keep.back().bytes(),
                                            "getSupportedOperations: send constants"));
            return connection_->call(a, proto::METHOD_GET_SUPPORTED_OPERATIONS, request, reply,
                                     connection_->options().callTimeout, "getSupportedOperations");
        }));
        NPU_TRY(checkStatus(reply.status(), "getSupportedOperations"));
        if (static_cast<size_t>(reply.supported_size()) != model.main.operations.size()) {
            return generalFailure("getSupportedOperations: firmware answered for " +
                                  std::to_string(reply.supported_size()) + " operations, the model has " +
                                  std::to_string(model.main.operations.size()));
        }
        NpuSupport support;
        support.supported.assign(reply.supported().begin(), reply.supported().end());
        support.reasons.resize(support.supported.size());
        for (const proto::UnsupportedOperation& u : reply.unsupported()) {
            if (u.index() >= support.supported.size() || support.supported[u.index()]) {
                return generalFailure("getSupportedOperations: the firmware gave a reason for operation " +
                                      std::to_string(u.index()) +
                                      ", which is not an unsupported operation of " + "the " +
                                      std::to_string(support.supported.size()) + " of the model");
            }
            support.reasons[u.index()] = u.reason();
            proto::vlog("driver", "getSupportedOperations: operation %u (%s) not supported: %s", u.index(),
                        std::string(hal::toString(model.main.operations[u.index()].type)).c_str(),
                        u.reason().c_str());
        }
        return support;
    }

    Result<hal::NumberOfCacheFiles> getNumberOfCacheFilesNeeded() override {
        return hal::NumberOfCacheFiles{kNumModelCacheFiles, kNumDataCacheFiles};
    }

    Result<std::shared_ptr<hal::IPreparedModel>> prepareModel(
        const hal::Model& model, hal::ExecutionPreference preference, hal::Priority priority,
        const hal::Deadline& deadline, const std::vector<int>& modelCache, const std::vector<int>& dataCache,
        const hal::CacheToken& token) override {
        NPU_TRY(hal::validateModel(model));
        NPU_TRY(hal::validateExecutionPreference(preference));
        NPU_TRY(hal::validatePriority(priority));
        NPU_TRY(checkDeadline(deadline, "prepareModel"));
        const bool halCaching = !modelCache.empty() || !dataCache.empty();
        const bool directoryCaching = !halCaching && !connection_->options().cacheDirectory.empty();
        CompilationCache* cache = nullptr;
        if (halCaching || directoryCaching) {
            auto c = compilationCache();
            if (c) {
                cache = *c;
            } else {
                proto::logError("cache", "prepareModel: compilation caching unavailable: %s",
                                c.error().message.c_str());
            }
        }
        if (directoryCaching && cache != nullptr && cache->hasDirectory()) {
            auto hit = cache->lookup(model, preference);
            if (hit && *hit) {
                auto prepared = prepareFromImages(**hit, priority, deadline);
                proto::vlog("cache", "prepareModel: cache directory hit (%zu + %zu bytes)%s",
                            (*hit)->model.size(), (*hit)->data.size(), prepared ? "" : ", not loadable");
                if (prepared) return prepared;
                proto::vlog("cache", "cache directory hit could not be loaded (%s); compiling",
                            prepared.error().message.c_str());
            } else if (!hit) {
                proto::vlog("cache", "cache directory lookup failed (%s); compiling",
                            hit.error().message.c_str());
            }
        }

        // The prepared model and its restore after a reset share the one copy of the model.
        auto kept = std::make_shared<const hal::Model>(model);
        Connection::RestoreFn restore = [kept, preference, priority](Connection& c,
                                                                     Attempt& a) -> Result<uint32_t> {
            std::vector<WindowBlock> staged;
            return NPU_TRY(compileOnFirmware(c, a, *kept, preference, priority, {}, staged)).model_handle();
        };
        std::vector<WindowBlock> keep;
        std::shared_ptr<NpuPreparedModel> prepared;
        const Status ran = connection_->runRecovering("prepareModel", keep, [&](Attempt& a) -> Status {
            keep.clear();
            auto reply =
                NPU_TRY(compileOnFirmware(*connection_, a, model, preference, priority, deadline, keep));
            const NpuCompileInfo compiled{reply.tuning_trials(), reply.greedy_cycles(), reply.tuned_cycles(),
                                          reply.model_blob_bytes(), reply.data_blob_bytes()};
            if (compiled.tuningTrials > 0) {
                proto::vlog("compile", "autotuned in %u trials: %llu -> %llu device cycles",
                            compiled.tuningTrials, static_cast<unsigned long long>(compiled.greedyCycles),
                            static_cast<unsigned long long>(compiled.tunedCycles));
            }
            if (cache != nullptr) {
                saveToCache(*cache, a, reply, model, preference, halCaching, token, modelCache, dataCache);
            }
            const uint64_t id = NPU_TRY(connection_->registerModel(a, reply.model_handle(), restore));
            proto::vlog("driver", "prepareModel: model %llu is firmware handle 0x%x (%llu + %llu blob bytes)",
                        static_cast<unsigned long long>(id), reply.model_handle(),
                        static_cast<unsigned long long>(reply.model_blob_bytes()),
                        static_cast<unsigned long long>(reply.data_blob_bytes()));
            prepared = std::make_shared<NpuPreparedModel>(connection_, buffers_, firmwareBuffers_, id, kept,
                                                          compiled);
            return {};
        });
        NPU_TRY(missedIfLate(ran, deadline));
        return prepared;
    }

    Result<std::shared_ptr<hal::IPreparedModel>> prepareModelFromCache(
        const hal::Deadline& deadline, const std::vector<int>& modelCache, const std::vector<int>& dataCache,
        const hal::CacheToken& token) override {
        NPU_TRY(checkDeadline(deadline, "prepareModelFromCache"));
        CompilationCache* cache = NPU_TRY(compilationCache());
        auto images = NPU_TRY(cache->load(token, modelCache, dataCache));
        proto::vlog("cache", "prepareModelFromCache: loaded %zu + %zu bytes", images.model.size(),
                    images.data.size());
        return prepareFromImages(images, hal::Priority::MEDIUM, deadline);  // the HAL gives none here
    }

    // Memory domains: the HAL checks the roles, the buffer's bytes live in firmware DRAM, where
    // executions read and write them in place (docs/execution.md).
    Result<hal::DeviceBuffer> allocate(
        const hal::BufferDesc& desc, const std::vector<std::shared_ptr<hal::IPreparedModel>>& preparedModels,
        const std::vector<hal::BufferRole>& inputRoles,
        const std::vector<hal::BufferRole>& outputRoles) override {
        auto storage = [&](const hal::Operand& operand) -> Result<std::unique_ptr<hal::BufferStorage>> {
            std::vector<FirmwareBufferRole> roles;
            for (const bool input : {true, false}) {
                for (const auto& role : input ? inputRoles : outputRoles) {
                    // allocateDeviceBuffer checked that every model is this device's.
                    const auto* model =
                        dynamic_cast<const NpuPreparedModel*>(preparedModels[role.modelIndex].get());
                    if (model == nullptr)
                        return invalidArgument("allocate: a prepared model is not this NPU's");
                    roles.push_back({model->connectionModelId(), input, role.ioIndex});
                }
            }
            return allocateFirmwareBuffer(connection_, firmwareBuffers_, operand, roles);
        };
        return hal::allocateDeviceBuffer(buffers_, desc, preparedModels, inputRoles, outputRoles, storage);
    }

    Result<NpuInfo> info() {
        proto::CapabilitiesReply reply = NPU_TRY(capabilities());
        const auto& hello = connection_->hello();
        const auto& hw = reply.hw();
        NpuInfo info;
        info.firmwareVersion = hello.firmware_version();
        info.protocolMajor = hello.major();
        info.protocolMinor = hello.minor();
        info.hwId = hello.hw_id();
        info.hwVersion = hello.hw_version();
        info.deviceMemoryBytes = hello.device_memory_bytes();
        info.hostWindowBytes = hello.host_window_bytes();
        info.clockHz = hw.clock_hz();
        info.arrayRows = hw.array_rows();
        info.arrayCols = hw.array_cols();
        info.dataflow = hw.dataflow();
        info.scratchpadBytes = hw.scratchpad_bytes();
        info.accumulatorBytes = hw.accumulator_bytes();
        info.vectorLanes = hw.vector_lanes();
        info.dramBytesPerCycle = hw.dram_bytes_per_cycle();
        info.dramLatencyCycles = hw.dram_latency_cycles();
        return info;
    }

    // The firmware's own counters (GetCounters), in the order it reports them.
    Result<std::vector<std::pair<std::string, uint64_t>>> firmwareCounters() {
        proto::GetCountersRequest request;
        proto::CountersReply reply;
        NPU_TRY(connection_->call(proto::METHOD_GET_COUNTERS, request, reply,
                                  connection_->options().callTimeout, "getCounters"));
        NPU_TRY(checkStatus(reply.status(), "getCounters"));
        std::vector<std::pair<std::string, uint64_t>> out;
        for (const auto& c : reply.counters()) out.emplace_back(c.name(), c.value());
        return out;
    }

    // The shim's recovery counters and, best effort, the firmware's: the shim's own matter most
    // when the firmware is unreachable.
    NpuCounters counters() {
        NpuCounters c = connection_->counters();
        if (auto firmware = firmwareCounters()) c.firmware = std::move(*firmware);
        return c;
    }
    Status injectFaults(const NpuFaultPlan& plan) {
        proto::InjectFaultsRequest request;
        request.set_hang_at_command(plan.hangAtCommand);
        request.set_dma_error_at_transfer(plan.dmaErrorAtTransfer);
        request.set_sram_flip_after_command(plan.sramFlipAfterCommand);
        request.set_sram_flip_address(plan.sramFlipAddress);
        request.set_sram_flip_bit(plan.sramFlipBit);
        request.set_sram_ecc(plan.sramEcc);
        request.set_crash_after_ms(plan.crashAfterMs);
        request.set_wedge(plan.wedge);
        proto::InjectFaultsReply reply;
        NPU_TRY(connection_->call(proto::METHOD_INJECT_FAULTS, request, reply,
                                  connection_->options().callTimeout, "injectFaults"));
        return checkStatus(reply.status(), "injectFaults");
    }

private:
    Result<proto::CapabilitiesReply> capabilities() {
        std::vector<WindowBlock> none;
        proto::CapabilitiesReply reply;
        NPU_TRY(connection_->runRecovering("getCapabilities", none, [&](Attempt& a) -> Status {
            proto::GetCapabilitiesRequest request;
            return connection_->call(a, proto::METHOD_GET_CAPABILITIES, request, reply,
                                     connection_->options().callTimeout, "getCapabilities");
        }));
        NPU_TRY(checkStatus(reply.status(), "getCapabilities"));
        return reply;
    }

    // Caching never fails the compilation (the VTS caching tests expect the prepared model even
    // when the files cannot be used); the caller's next load fails instead.
    void saveToCache(CompilationCache& cache, Attempt& a, const proto::PrepareModelReply& reply,
                     const hal::Model& model, hal::ExecutionPreference preference, bool halCaching,
                     const hal::CacheToken& token, const std::vector<int>& modelCache,
                     const std::vector<int>& dataCache) {
        auto images = fetchImages(a, reply, model);
        if (!images) {
            proto::logError("cache", "prepareModel: cannot fetch the compiled blob for caching: %s",
                            images.error().message.c_str());
        } else if (halCaching) {
            if (auto saved = cache.save(token, *images, modelCache, dataCache); !saved) {
                proto::logError("cache", "prepareModel: compilation not cached: %s",
                                saved.error().message.c_str());
            } else {
                proto::vlog("cache", "prepareModel: saved to the HAL cache files (%zu + %zu bytes)",
                            images->model.size(), images->data.size());
            }
        } else if (cache.hasDirectory()) {
            if (auto kept = cache.remember(model, preference, *images); !kept) {
                proto::logError("cache", "prepareModel: compilation not cached: %s",
                                kept.error().message.c_str());
            } else {
                proto::vlog("cache", "prepareModel: saved to the cache directory (%zu + %zu bytes)",
                            images->model.size(), images->data.size());
            }
        }
    }

    Result<CompilationCache*> compilationCache() {
        std::lock_guard lock(cacheMutex_);
        if (!cache_) {
            const auto& o = connection_->options();
            cache_ = NPU_TRY(CompilationCache::open(o.cacheStateDirectory, o.cacheDirectory,
                                                    std::string("npu-shim ") + kShimVersion,
                                                    connection_->hello().firmware_version()));
        }
        return cache_.get();
    }

    // The firmware's blob of a freshly compiled model, in internal buffers.
    Result<CacheImages> fetchImages(Attempt& a, const proto::PrepareModelReply& prepared,
                                    const hal::Model& model) {
        HostWindow& window = connection_->window();
        const uint64_t modelBytes = prepared.model_blob_bytes();
        const uint64_t dataBytes = prepared.data_blob_bytes();
        WindowBlock modelBlock(&window, NPU_TRY(window.allocate(modelBytes)), modelBytes);
        WindowBlock dataBlock(&window, NPU_TRY(window.allocate(dataBytes)), dataBytes);
        proto::FetchBlobRequest request;
        request.set_model_handle(prepared.model_handle());
        request.set_model_blob_addr(modelBlock.addr());
        request.set_model_blob_capacity(modelBytes);
        request.set_data_blob_addr(dataBlock.addr());
        request.set_data_blob_capacity(dataBytes);
        proto::FetchBlobReply reply;
        NPU_TRY(connection_->call(a, proto::METHOD_FETCH_BLOB, request, reply,
                                  connection_->options().callTimeout, "fetchBlob"));
        NPU_TRY(checkStatus(reply.status(), "fetchBlob"));
        if (reply.model_blob_bytes() > modelBytes || reply.data_blob_bytes() > dataBytes) {
            return generalFailure("fetchBlob: the firmware wrote more than it announced");
        }
        NPU_TRY(
            connection_->pullWindow(a, modelBlock.addr(), reply.model_blob_bytes(), "fetchBlob: model blob"));
        NPU_TRY(
            connection_->pullWindow(a, dataBlock.addr(), reply.data_blob_bytes(), "fetchBlob: data blob"));
        CacheImages images;
        images.model = encodeModelCache(model, {modelBlock.data(), reply.model_blob_bytes()});
        images.data.assign(dataBlock.data(), dataBlock.data() + reply.data_blob_bytes());
        return images;
    }

    // Loads a verified cached blob; a reset or restart loads it again from the same images.
    Result<std::shared_ptr<hal::IPreparedModel>> prepareFromImages(const CacheImages& images,
                                                                   hal::Priority priority,
                                                                   const hal::Deadline& deadline) {
        auto kept = std::make_shared<const CacheImages>(images);
        Connection::RestoreFn restore = [kept, priority](Connection& c, Attempt& a) -> Result<uint32_t> {
            std::vector<WindowBlock> staged;
            return NPU_TRY(loadOnFirmware(c, a, *kept, priority, {}, staged)).handle;
        };
        std::vector<WindowBlock> keep;
        std::shared_ptr<NpuPreparedModel> prepared;
        NPU_TRY(connection_->runRecovering("prepareModelFromCache", keep, [&](Attempt& a) -> Status {
            keep.clear();
            auto loaded = NPU_TRY(loadOnFirmware(*connection_, a, *kept, priority, deadline, keep));
            const uint64_t id = NPU_TRY(connection_->registerModel(a, loaded.handle, restore));
            prepared = std::make_shared<NpuPreparedModel>(
                connection_, buffers_, firmwareBuffers_, id,
                std::make_shared<const hal::Model>(std::move(loaded.ioModel)),
                NpuCompileInfo{.fromCache = true});
            return {};
        }));
        return prepared;
    }

    std::shared_ptr<Connection> connection_;
    std::shared_ptr<hal::BufferRegistry> buffers_ = std::make_shared<hal::BufferRegistry>();
    std::shared_ptr<FirmwareBuffers> firmwareBuffers_ = std::make_shared<FirmwareBuffers>();
    std::mutex cacheMutex_;
    std::unique_ptr<CompilationCache> cache_;
};

}  // namespace

Result<NpuInfo> queryNpuInfo(hal::IDevice& device) {
    auto* npu = dynamic_cast<NpuDevice*>(&device);
    if (npu == nullptr) return invalidArgument("queryNpuInfo: the device is not an NPU device of this shim");
    return npu->info();
}

bool isNpuDevice(const hal::IDevice& device) {
    return dynamic_cast<const NpuDevice*>(&device) != nullptr;
}

Result<NpuSupport> querySupportedOperations(hal::IDevice& device, const hal::Model& model) {
    auto* npu = dynamic_cast<NpuDevice*>(&device);
    if (npu == nullptr)
        return invalidArgument("querySupportedOperations: the device is not an NPU device of this shim");
    return npu->supportedOperations(model);
}

Result<std::vector<std::pair<std::string, uint64_t>>> queryCounters(hal::IDevice& device) {
    auto* npu = dynamic_cast<NpuDevice*>(&device);
    if (npu == nullptr) return invalidArgument("queryCounters: the device is not an NPU device of this shim");
    return npu->firmwareCounters();
}

Result<std::map<std::string, uint64_t>> queryFirmwareCounters(hal::IDevice& device) {
    auto ordered = NPU_TRY(queryCounters(device));
    return std::map<std::string, uint64_t>(ordered.begin(), ordered.end());
}

Result<NpuCompileInfo> queryCompileInfo(hal::IPreparedModel& prepared) {
    auto* npu = dynamic_cast<NpuPreparedModel*>(&prepared);
    if (npu == nullptr) return invalidArgument("queryCompileInfo: not a prepared model of the NPU shim");
    return npu->compileInfo();
}

Result<NpuCounters> queryNpuCounters(hal::IDevice& device) {
    auto* npu = dynamic_cast<NpuDevice*>(&device);
    if (npu == nullptr)
        return invalidArgument("queryNpuCounters: the device is not an NPU device of this shim");
    return npu->counters();
}

Status injectNpuFaults(hal::IDevice& device, const NpuFaultPlan& plan) {
    auto* npu = dynamic_cast<NpuDevice*>(&device);
    if (npu == nullptr)
        return invalidArgument("injectNpuFaults: the device is not an NPU device of this shim");
    return npu->injectFaults(plan);
}

Result<std::shared_ptr<hal::IDevice>> createNpuDevice(std::unique_ptr<proto::Transport> transport,
                                                      const ShimOptions& options) {
    auto connection = NPU_TRY(Connection::open(std::move(transport), {}, options));
    return std::make_shared<NpuDevice>(std::move(connection));
}

Result<std::shared_ptr<hal::IDevice>> createNpuDevice(TransportFactory factory, const ShimOptions& options) {
    auto first = factory();
    if (!first) {
        return fail(hal::ErrorStatus::DEVICE_UNAVAILABLE,
                    "cannot reach the firmware: " + first.error().message);
    }
    auto connection = NPU_TRY(Connection::open(std::move(*first), std::move(factory), options));
    return std::make_shared<NpuDevice>(std::move(connection));
}

std::shared_ptr<hal::IDevice> makeNpuDevice(std::shared_ptr<Connection> connection) {
    return std::make_shared<NpuDevice>(std::move(connection));
}

}  // namespace npu::shim
