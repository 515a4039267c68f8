#include "burst_channel.h"

#include "npu/protocol/vlog.h"

namespace npu::shim {

NpuBurstChannel::~NpuBurstChannel() {
    // Our end of the queue goes with its client: the firmware sees the doorbell's stream end and
    // closes the channel.
    if (rpc_) rpc_->close();
}

Result<std::shared_ptr<proto::RpcClient>> NpuBurstChannel::client(Attempt& attempt) {
    if (attempt.epoch == epoch_ && refused_) return std::shared_ptr<proto::RpcClient>();
    if (attempt.epoch == epoch_ && rpc_ && rpc_->connected()) return rpc_;
    if (rpc_) rpc_->close();
    rpc_.reset();
    epoch_ = attempt.epoch;
    refused_ = false;
    auto opened = connection_->openBurstChannel(attempt);
    if (!opened) {
        if (attempt.lost != Attempt::Loss::kNone) return std::unexpected(opened.error());
        refused_ = true;
        proto::vlog("driver", "burst: no channel of its own, executions take the connection: %s",
                    opened.error().message.c_str());
        return std::shared_ptr<proto::RpcClient>();
    }
    rpc_ = std::move(*opened);
    refused_ = !rpc_;
    return rpc_;
}

}  // namespace npu::shim
