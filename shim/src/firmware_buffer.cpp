#include "firmware_buffer.h"

#include <cstring>

#include "npu/hal/validation.h"
#include "npu/protocol/vlog.h"

namespace npu::shim {

uint32_t FirmwareBuffers::add(uint32_t token, uint64_t epoch) {
    std::lock_guard lock(mutex_);
    while (next_ == 0 || entries_.count(next_) != 0) ++next_;
    const uint32_t id = next_++;
    entries_[id] = {token, epoch};
    return id;
}

void FirmwareBuffers::remove(uint32_t id) {
    std::lock_guard lock(mutex_);
    entries_.erase(id);
}

Result<uint32_t> FirmwareBuffers::token(uint32_t id, uint64_t epoch, const std::string& where) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) {
        return invalidArgument(where + ": device buffer " + std::to_string(id) + " is not allocated");
    }
    if (it->second.epoch != epoch) {
        return generalFailure(where + ": device buffer " + std::to_string(id) + " (firmware token " +
                              std::to_string(it->second.token) +
                              ") was lost when the firmware was reset or restarted; its contents are gone");
    }
    return it->second.token;
}

namespace {

class FirmwareBuffer final : public hal::BufferStorage {
public:
    FirmwareBuffer(std::shared_ptr<Connection> connection, std::shared_ptr<FirmwareBuffers> buffers,
                   uint32_t token, uint64_t epoch, uint64_t bytes)
        : connection_(std::move(connection)),
          buffers_(std::move(buffers)),
          token_(token),
          id_(buffers_->add(token, epoch)),
          bytes_(bytes) {}

    ~FirmwareBuffer() override {
        buffers_->remove(id_);
        proto::ReleaseBufferRequest request;
        request.set_buffer_token(token_);
        proto::ReleaseBufferReply reply;
        // Best effort: a lost or reset firmware has freed it already.
        auto released = connection_->call(proto::METHOD_RELEASE_BUFFER, request, reply,
                                          connection_->options().callTimeout, "releaseBuffer");
        if (released) released = checkStatus(reply.status(), "releaseBuffer");
        if (!released) proto::vlog("driver", "%s", released.error().message.c_str());
    }

    Status reserve(uint64_t bytes) override {
        if (bytes <= bytes_) return {};
        return generalFailure("the firmware buffer holds " + std::to_string(bytes_) + " bytes, " +
                              std::to_string(bytes) + " asked: NPU tensors have fixed shapes");
    }

    Status write(const hal::Memory& src, const std::vector<uint32_t>& dims) override {
        std::vector<WindowBlock> keep;
        return connection_->runRecovering("copyFrom", keep, [&](Attempt& a) -> Status {
            keep.clear();
            const uint32_t token = NPU_TRY(buffers_->token(id_, a.epoch, "copyFrom"));
            HostWindow& window = connection_->window();
            keep.emplace_back(&window, NPU_TRY(window.allocate(src.size())), src.size());
            if (src.size() > 0) std::memcpy(keep.back().data(), src.data(), src.size());
            NPU_TRY(connection_->pushWindow(a, keep.back().addr(), src.size(), "copyFrom"));
            proto::BufferCopyRequest request;
            request.set_buffer_token(token);
            request.set_to_device(true);
            request.set_addr(keep.back().addr());
            request.set_length(src.size());
            for (uint32_t d : dims) request.add_dimensions(d);
            return copy(a, request, "copyFrom");
        });
    }

    Status read(hal::Memory& dst) override {
        std::vector<WindowBlock> keep;
        return connection_->runRecovering("copyTo", keep, [&](Attempt& a) -> Status {
            keep.clear();
            const uint32_t token = NPU_TRY(buffers_->token(id_, a.epoch, "copyTo"));
            HostWindow& window = connection_->window();
            keep.emplace_back(&window, NPU_TRY(window.allocate(dst.size())), dst.size());
            proto::BufferCopyRequest request;
            request.set_buffer_token(token);
            request.set_to_device(false);
            request.set_addr(keep.back().addr());
            request.set_length(dst.size());
            NPU_TRY(copy(a, request, "copyTo"));
            NPU_TRY(connection_->pullWindow(a, keep.back().addr(), dst.size(), "copyTo"));
            if (dst.size() > 0) std::memcpy(dst.data(), keep.back().data(), dst.size());
            return {};
        });
    }

    hal::RequestMemoryPool pool() const override { return id_; }

private:
    Status copy(Attempt& a, const proto::BufferCopyRequest& request, const char* what) {
        proto::BufferCopyReply reply;
        NPU_TRY(connection_->call(a, proto::METHOD_BUFFER_COPY, request, reply,
                                  connection_->options().callTimeout, what));
        return checkStatus(reply.status(), what);
    }

    std::shared_ptr<Connection> connection_;
    std::shared_ptr<FirmwareBuffers> buffers_;
    const uint32_t token_;
    const uint32_t id_;
    const uint64_t bytes_;
};

}  // namespace

Result<std::unique_ptr<hal::BufferStorage>> allocateFirmwareBuffer(
    std::shared_ptr<Connection> connection, std::shared_ptr<FirmwareBuffers> buffers,
    const hal::Operand& operand, const std::vector<FirmwareBufferRole>& roles) {
    const auto bytes = hal::tensorByteSize(operand.type, operand.dimensions);
    if (!bytes) {
        return generalFailure(
            "allocate: the buffer's dimensions are not all known; the NPU runs tensors of "
            "fixed shapes only");
    }
    proto::AllocateBufferRequest request;
    request.set_type(static_cast<uint32_t>(operand.type));
    for (uint32_t d : operand.dimensions) request.add_dimensions(d);
    request.set_bytes(*bytes);
    std::vector<WindowBlock> none;
    proto::AllocateBufferReply reply;
    uint64_t epoch = 0;
    NPU_TRY(connection->runRecovering("allocate", none, [&](Attempt& a) -> Status {
        request.clear_roles();
        for (const auto& role : roles) {
            auto* r = request.add_roles();
            r->set_model_handle(NPU_TRY(connection->modelHandle(a, role.modelId)));
            r->set_input(role.input);
            r->set_io_index(role.ioIndex);
        }
        epoch = a.epoch;
        return connection->call(a, proto::METHOD_ALLOCATE_BUFFER, request, reply,
                                connection->options().callTimeout, "allocate");
    }));
    NPU_TRY(checkStatus(reply.status(), "allocate"));
    proto::vlog("driver", "allocate: firmware buffer token %u, %llu bytes, %zu roles", reply.buffer_token(),
                static_cast<unsigned long long>(*bytes), roles.size());
    return std::make_unique<FirmwareBuffer>(std::move(connection), std::move(buffers), reply.buffer_token(),
                                            epoch, *bytes);
}

}  // namespace npu::shim
