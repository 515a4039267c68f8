#pragma once
// One burst's fast message queue to the firmware (docs/execution.md, "Bursts"; the queue itself:
// npu/protocol/fmq.h). Opened on the burst's first execution over the connection
// (OpenBurstChannel with its two fds), opened again when the firmware was reset or restarted since
// or the channel broke; absent where the firmware offers none (QEMU, USB) or the options turn
// bursts' channels off: the burst's executions then take the connection like any other.

#include <cstdint>
#include <memory>
#include <mutex>

#include "connection.h"
#include "npu/hal/prepared_model_base.h"

namespace npu::shim {

class NpuBurstChannel final : public hal::BurstChannel {
public:
    explicit NpuBurstChannel(std::shared_ptr<Connection> connection) : connection_(std::move(connection)) {}
    ~NpuBurstChannel() override;

    // The RPC client for an execution in `attempt`: the channel's, opened now if it has none yet,
    // it broke, or the firmware was reset or restarted since it was opened; null: the execution
    // takes the connection (no channel offered, or it could not be opened: logged once per
    // firmware epoch). A lost connection marks `attempt` (recovered and replayed as any call).
    Result<std::shared_ptr<proto::RpcClient>> client(Attempt& attempt);
    // One execution at a time runs on the channel: a concurrent one of the same burst takes the
    // connection (try_lock fails).
    std::mutex& inUse() { return inUse_; }

private:
    std::shared_ptr<Connection> connection_;
    std::mutex inUse_;
    std::shared_ptr<proto::RpcClient> rpc_;  // under inUse_
    uint64_t epoch_ = 0;                     // the firmware epoch rpc_ was opened in, or refused in
    bool refused_ = false;                   // none could be opened in epoch_
};

}  // namespace npu::shim
