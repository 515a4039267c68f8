#pragma once
// A client that speaks the protocol directly (RpcClient + its window), to send what a
// well-behaved shim never sends: another client's handles, tokens and pools, locations outside
// its window, fds of the wrong kind. Shared by the multi-client and zero-copy tests.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "host_window.h"
#include "marshal.h"
#include "npu/hal/types.h"
#include "npu/protocol/rpc_client.h"

namespace npu::shim::test {

constexpr auto kCallTimeout = std::chrono::seconds(20);
constexpr uint32_t kInvalidArgument = 4;
constexpr uint32_t kGeneralFailure = 2;
constexpr uint32_t kMissedDeadlineTransient = 5;
constexpr uint32_t kMissedDeadlinePersistent = 6;

// A client that speaks the protocol directly: its handshake, its window, its calls.
struct RawClient {
    std::unique_ptr<proto::RpcClient> rpc;
    std::unique_ptr<shim::HostWindow> window;
    proto::HelloReply hello;
    uint64_t windowFdBytes = 0;  // the size of the fd Hello passed (fstat): what this client can map

    // `wantWindow`: HelloRequest.window_addr (0: wherever the firmware places it).
    explicit RawClient(std::unique_ptr<proto::Transport> transport, uint64_t wantWindow = 0) {
        auto r = proto::RpcClient::create(std::move(transport));
        REQUIRE(r.has_value());
        rpc = std::move(*r);
        proto::HelloRequest request;
        request.set_major(1);
        request.set_host_version("multi-client test");
        request.set_window_addr(wantWindow);
        std::vector<proto::UniqueFd> fds;
        REQUIRE(rpc->call(proto::METHOD_HELLO, request, hello, kCallTimeout, {}, &fds).has_value());
        REQUIRE(hello.status().code() == 0);
        REQUIRE(hello.window_fd_is_window());
        REQUIRE(fds.size() == 1);
        struct stat st {};
        REQUIRE(fstat(fds.front().get(), &st) == 0);
        windowFdBytes = static_cast<uint64_t>(st.st_size);
        auto w = shim::HostWindow::map(fds.front().get(), hello.host_window_addr(), hello.host_window_bytes(),
                                       true);
        REQUIRE(w.has_value());
        window = std::move(*w);
    }

    // Prepares `model` (small CONSTANT_COPY values inside the message, the other constants staged
    // in this client's window; or every constant staged and then named at `constantsAt` instead);
    // the reply's status code, the handle in *handle.
    uint32_t prepare(const hal::Model& model, hal::Priority priority, uint32_t* handle,
                     std::optional<uint64_t> constantsAt = std::nullopt) {
        const proto::PrepareModelReply reply = prepareReply(model, priority, constantsAt);
        *handle = reply.model_handle();
        return reply.status().code();
    }
    // The same, the whole reply; `deadlineNs`: PrepareModelRequest.deadline_ns (0: none).
    proto::PrepareModelReply prepareReply(const hal::Model& model, hal::Priority priority,
                                          std::optional<uint64_t> constantsAt = std::nullopt,
                                          uint64_t deadlineNs = 0) {
        proto::PrepareModelRequest request;
        // Constants moved elsewhere must all be staged ones (none inside the message).
        auto constants = shim::marshalModel(model, *window, request.mutable_model(), {},
                                            constantsAt ? shim::InlineRule::none() : shim::InlineRule{});
        REQUIRE(constants.has_value());
        if (constantsAt) {
            for (auto& o : *request.mutable_model()->mutable_main()->mutable_operands()) {
                if (o.data_length() > 0) o.set_data_addr(*constantsAt);
            }
        }
        request.set_priority(static_cast<uint32_t>(priority));
        request.set_no_autotune(true);
        request.set_deadline_ns(deadlineNs);
        proto::PrepareModelReply reply;
        REQUIRE(rpc->call(proto::METHOD_PREPARE_MODEL, request, reply, kCallTimeout).has_value());
        return reply;
    }

    // An ADD execution of `handle` whose tensors lie at `at` (a, b, out: n bytes each).
    static proto::ExecuteRequest addRequest(uint32_t handle, uint64_t at, uint32_t n) {
        proto::ExecuteRequest r;
        r.set_model_handle(handle);
        for (int i = 0; i < 2; ++i) {
            auto* a = r.add_inputs();
            a->set_addr(at + i * n);
            a->set_length(n);
        }
        auto* o = r.add_outputs();
        o->set_addr(at + 2 * n);
        o->set_length(n);
        return r;
    }

    proto::ExecuteReply execute(const proto::ExecuteRequest& request) {
        proto::ExecuteReply reply;
        auto r = rpc->call(proto::METHOD_EXECUTE, request, reply, kCallTimeout);
        if (!r) reply.mutable_status()->set_code(r.error().remoteCode);
        if (!r) reply.mutable_status()->set_message(r.error().message);
        return reply;
    }

    proto::Status release(proto::Method method, uint32_t handle) {
        proto::ReleaseModelRequest request;
        request.set_model_handle(handle);
        proto::ReleaseModelReply reply;
        REQUIRE(rpc->call(method, request, reply, kCallTimeout).has_value());
        return reply.status();
    }

    // MapPool of [offset, +length) of `fd` (-1: no fd sent).
    proto::MapPoolReply mapPool(int fd, uint64_t offset, uint64_t length) {
        proto::MapPoolRequest request;
        request.set_offset(offset);
        request.set_length(length);
        proto::MapPoolReply reply;
        const int fds[1] = {fd};
        auto sent = fd >= 0 ? std::span<const int>(fds, 1) : std::span<const int>();
        REQUIRE(rpc->call(proto::METHOD_MAP_POOL, request, reply, kCallTimeout, sent).has_value());
        return reply;
    }

    // MapPool with `fd` whose request does not decode (its offset sent as bytes): the error.
    proto::Status undecodableMapPool(int fd) {
        proto::MapPoolRequest request;
        proto::MapPoolReply reply;
        const int fds[1] = {fd};
        static const uint8_t kNotAVarint[] = {'a', 'b', 'c'};
        auto call = rpc->start(proto::METHOD_MAP_POOL, request, reply, std::span<const int>(fds, 1),
                               proto::BytesField{1, kNotAVarint});
        REQUIRE(call.has_value());
        auto done = rpc->finish(*call, kCallTimeout);
        REQUIRE_FALSE(done.has_value());
        proto::Status status;
        status.set_code(done.error().remoteCode);
        status.set_message(done.error().message);
        return status;
    }

    // AllocateBuffer of a TENSOR_QUANT8_ASYMM buffer of `dims` for one role of `handle`.
    proto::AllocateBufferReply allocateBuffer(uint32_t handle, bool input, uint32_t ioIndex,
                                              const std::vector<uint32_t>& dims) {
        proto::AllocateBufferRequest request;
        request.set_type(static_cast<uint32_t>(hal::OperandType::TENSOR_QUANT8_ASYMM));
        for (uint32_t d : dims) request.add_dimensions(d);
        auto* role = request.add_roles();
        role->set_model_handle(handle);
        role->set_input(input);
        role->set_io_index(ioIndex);
        proto::AllocateBufferReply reply;
        REQUIRE(rpc->call(proto::METHOD_ALLOCATE_BUFFER, request, reply, kCallTimeout).has_value());
        return reply;
    }

    // BufferCopy of `length` bytes between buffer `token` and [addr, + length) of the window.
    proto::Status bufferCopy(uint32_t token, bool toDevice, uint64_t addr, uint64_t length) {
        proto::BufferCopyRequest request;
        request.set_buffer_token(token);
        request.set_to_device(toDevice);
        request.set_addr(addr);
        request.set_length(length);
        proto::BufferCopyReply reply;
        REQUIRE(rpc->call(proto::METHOD_BUFFER_COPY, request, reply, kCallTimeout).has_value());
        return reply.status();
    }

    proto::Status unmapPool(uint32_t poolId) {
        proto::UnmapPoolRequest request;
        request.set_pool_id(poolId);
        proto::UnmapPoolReply reply;
        REQUIRE(rpc->call(proto::METHOD_UNMAP_POOL, request, reply, kCallTimeout).has_value());
        return reply.status();
    }

    std::map<std::string, uint64_t> counters() {
        proto::GetCountersRequest request;
        proto::CountersReply reply;
        REQUIRE(rpc->call(proto::METHOD_GET_COUNTERS, request, reply, kCallTimeout).has_value());
        std::map<std::string, uint64_t> m;
        for (const auto& c : reply.counters()) m[c.name()] = c.value();
        return m;
    }
};

// n bytes of a, b and room for a + b in the client's window.
inline shim::WindowBlock stageAdd(RawClient& c, uint32_t n, uint8_t a, uint8_t b) {
    auto addr = c.window->allocate(3 * n);
    REQUIRE(addr.has_value());
    shim::WindowBlock block(c.window.get(), *addr, 3 * n);
    std::memset(block.data(), a, n);
    std::memset(block.data() + n, b, n);
    std::memset(block.data() + 2 * n, 0, n);
    return block;
}

}  // namespace npu::shim::test
