// CONSTANT_COPY values inside the PrepareModel message, end to end (shim -> transport ->
// firmware -> simulated NPU), over loopback and over the unix socket to npu-fwd: a model whose
// constants are all small CONSTANT_COPY values runs bit-exact with the CPU reference and none of
// them in device memory; larger values are staged as before, CONSTANT_REFERENCE stays in its pool;
// a raw client's hostile values are refused without disturbing the firmware.
// (The rule: npu/protocol/constant_values.h; docs/execution.md, "Memory model".)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>

#include "npu/framework/cts_loader.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/model_builder.h"
#include "npu/protocol/constant_values.h"
#include "npu/ref/reference_device.h"
#include "npu/shim/npu_device.h"
#include "raw_client.h"

using namespace npu;
using Catch::Matchers::Contains;
using hal::OperandLifeTime;
using hal::OperandType;
using shim::test::RawClient;

namespace {

constexpr auto kQ8 = OperandType::TENSOR_QUANT8_ASYMM;

std::vector<uint8_t> pattern(size_t n, uint8_t first, uint8_t step) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(first + step * i);
    return v;
}

// A network whose every constant is a CONSTANT_COPY of at most 128 bytes:
// t = CONV_2D(in [1,4,4,2], filter [3,2,2,2], bias [3], VALID, stride 1, RELU); out = ADD(t, c [1,1,1,3]).
framework::TestCase smallConstantsCase() {
    hal::ModelBuilder b;
    const uint32_t in = b.input(kQ8, {1, 4, 4, 2}, 0.5f, 3);
    const uint32_t filter = b.constant<uint8_t>(kQ8, {3, 2, 2, 2}, pattern(24, 1, 7), 0.25f, 5);
    const uint32_t bias = b.constant<int32_t>(OperandType::TENSOR_INT32, {3}, {100, -50, 7}, 0.125f, 0);
    const uint32_t valid = b.scalar(2), stride = b.scalar(1), relu = b.scalar(1), none = b.scalar(0);
    const uint32_t t = b.temp(kQ8, {1, 3, 3, 3}, 2.0f, 10);
    const uint32_t c = b.constant<uint8_t>(kQ8, {1, 1, 1, 3}, {9, 200, 30}, 0.2f, 1);
    const uint32_t out = b.output(kQ8, {1, 3, 3, 3}, 2.5f, 2);
    b.operation(hal::OperationType::CONV_2D, {in, filter, bias, valid, stride, stride, relu}, {t});
    b.operation(hal::OperationType::ADD, {t, c, none}, {out});
    framework::TestCase tc;
    tc.name = "small_constants";
    tc.model = b.build();
    tc.inputs = {pattern(32, 2, 13)};
    tc.expectedOutputs = {std::vector<uint8_t>(27)};
    tc.expectedOutputDims = {{1, 3, 3, 3}};
    tc.outputIgnored = {false};
    return tc;
}

// FULLY_CONNECTED(in [1, inputs], weights [units, inputs] of `weights`, bias [units] CONSTANT_COPY).
framework::TestCase fullyConnectedCase(
    uint32_t units, uint32_t inputs,
    const std::function<uint32_t(hal::ModelBuilder&, std::vector<uint8_t>)>& weights) {
    hal::ModelBuilder b;
    const uint32_t in = b.input(kQ8, {1, inputs}, 0.5f, 128);
    const uint32_t w = weights(b, pattern(size_t(units) * inputs, 11, 37));
    const uint32_t bias = b.constant<int32_t>(OperandType::TENSOR_INT32, {units},
                                              std::vector<int32_t>(units, 3), 0.5f * 0.01f, 0);
    const uint32_t act = b.scalar(0);
    const uint32_t out = b.output(kQ8, {1, units}, 4.0f, 128);
    b.operation(hal::OperationType::FULLY_CONNECTED, {in, w, bias, act}, {out});
    framework::TestCase tc;
    tc.name = "fully_connected";
    tc.model = b.build();
    tc.inputs = {pattern(inputs, 5, 3)};
    tc.expectedOutputs = {std::vector<uint8_t>(units)};
    tc.expectedOutputDims = {{1, units}};
    tc.outputIgnored = {false};
    return tc;
}

uint64_t constantBytes(const hal::Model& m, OperandLifeTime lifetime) {
    uint64_t n = 0;
    for (const hal::Operand& o : m.main.operands)
        if (o.lifetime == lifetime) n += o.location.length;
    return n;
}

std::vector<std::vector<uint8_t>> run(hal::IDevice& device, const framework::TestCase& tc) {
    auto supported = device.getSupportedOperations(tc.model);
    REQUIRE(supported.has_value());
    for (bool s : *supported) REQUIRE(s);
    auto prepared = device.prepareModel(tc.model);
    INFO((prepared ? std::string() : prepared.error().message));
    REQUIRE(prepared.has_value());
    auto request = framework::makeRequest(tc);
    REQUIRE(request.has_value());
    auto r = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                               std::nullopt);
    INFO((r ? std::string() : r.error().message));
    REQUIRE(r.has_value());
    return framework::readOutputs(*request);
}

struct Constants {
    uint64_t inMessage = 0, inMemory = 0;
};
Constants constantCounters(hal::IDevice& device) {
    auto c = shim::queryFirmwareCounters(device);
    REQUIRE(c.has_value());
    return {c->at("runtime.constant_bytes_in_message"), c->at("runtime.constant_bytes_in_memory")};
}

// Runs `tc` on the NPU `device` and on the reference: the same bytes; the constant bytes the
// firmware's prepare got inside the message and from device memory.
Constants runBitExact(hal::IDevice& device, const framework::TestCase& tc) {
    ref::ReferenceDevice reference;
    const auto expected = run(reference, tc);
    const Constants before = constantCounters(device);
    const auto got = run(device, tc);
    const Constants after = constantCounters(device);
    CHECK(got == expected);
    return {after.inMessage - before.inMessage, after.inMemory - before.inMemory};
}

// The NPU over loopback, or over unix to an npu-fwd this test starts.
struct Npu {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::string socket;
    std::shared_ptr<hal::IDevice> device;
    ~Npu() {
        device.reset();
        if (!socket.empty()) std::filesystem::remove(socket);
    }
};

std::unique_ptr<Npu> openNpu(const std::string& transport) {
    auto n = std::make_unique<Npu>();
    if (transport == "loopback") {
        auto loop = fw::host::startLoopbackFirmware();
        REQUIRE(loop.has_value());
        n->firmware = std::move(loop->firmware);
        auto device = shim::createNpuDevice(std::move(loop->hostEnd));
        REQUIRE(device.has_value());
        n->device = *device;
    } else {
        n->socket = (std::filesystem::temp_directory_path() /
                     ("npu-constant-copy-" + std::to_string(getpid()) + ".sock"))
                        .string();
        shim::DaemonOptions options;
        options.socketPath = n->socket;
        options.daemonPath = NPU_FWD_TEST_PATH;
        auto device = shim::connectNpuDaemon(options);
        INFO((device ? std::string() : device.error().message));
        REQUIRE(device.has_value());
        n->device = *device;
    }
    return n;
}

// On loopback and unix: `tc` runs bit-exact, with `inMemory` constant bytes in device memory and
// `inMessage` inside the message.
void checkSplitOnBothTransports(const framework::TestCase& tc, uint64_t inMemory, uint64_t inMessage) {
    for (const char* transport : {"loopback", "unix"}) {
        INFO(transport);
        auto npu = openNpu(transport);
        const Constants c = runBitExact(*npu->device, tc);
        CHECK(c.inMemory == inMemory);
        CHECK(c.inMessage == inMessage);
    }
}

}  // namespace

TEST_CASE("a model of small CONSTANT_COPY values runs bit-exact with none of them in device memory",
          "[shim][constants]") {
    for (const char* transport : {"loopback", "unix"}) {
        INFO(transport);
        auto npu = openNpu(transport);
        const framework::TestCase tc = smallConstantsCase();
        REQUIRE(constantBytes(tc.model, OperandLifeTime::CONSTANT_REFERENCE) == 0);
        const Constants c = runBitExact(*npu->device, tc);
        CHECK(c.inMessage == constantBytes(tc.model, OperandLifeTime::CONSTANT_COPY));
        CHECK(c.inMemory == 0);
    }
}

TEST_CASE("a CONSTANT_COPY over 128 bytes is staged; the small ones still ride inside", "[shim][constants]") {
    const uint32_t units = 4, inputs = 64;  // 256 weight bytes: staged; 16 bias bytes and the scalar: inside
    const framework::TestCase tc =
        fullyConnectedCase(units, inputs, [](hal::ModelBuilder& b, std::vector<uint8_t> w) {
            const uint32_t n = uint32_t(w.size()) / 64;
            return b.constant<uint8_t>(kQ8, {n, 64}, w, 0.01f, 128);
        });
    checkSplitOnBothTransports(tc, units * inputs, units * 4 + 4);
}

TEST_CASE("CONSTANT_REFERENCE stays in its pool (mapped in place) beside small CONSTANT_COPY values",
          "[shim][constants]") {
    const uint32_t units = 16, inputs = 4096;  // a 64 KiB pool: mapped by the firmware host
    const framework::TestCase tc =
        fullyConnectedCase(units, inputs, [](hal::ModelBuilder& b, std::vector<uint8_t> w) {
            hal::Model& m = b.model();
            m.pools.push_back(hal::Memory::create(w.size()));
            std::memcpy(m.pools.back()->data(), w.data(), w.size());
            const uint32_t i = b.operand(kQ8, {uint32_t(w.size()) / 4096, 4096},
                                         OperandLifeTime::CONSTANT_REFERENCE, 0.01f, 128);
            m.main.operands[i].location = {uint32_t(m.pools.size() - 1), 0, uint32_t(w.size())};
            return i;
        });
    checkSplitOnBothTransports(tc, units * inputs, units * 4 + 4);
}

TEST_CASE("a raw client's hostile values are INVALID_ARGUMENT naming the operand; the firmware goes on",
          "[shim][constants]") {
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    RawClient client(std::move(loop->hostEnd));
    REQUIRE(client.hello.minor() >= proto::kInlineValuesMinor);
    // ADD(in [1,4], constant [1,4], activation) with both constants inside the message.
    hal::ModelBuilder b;
    const uint32_t in = b.input(kQ8, {1, 4}, 0.5f, 0);
    const uint32_t c = b.constant<uint8_t>(kQ8, {1, 4}, {1, 2, 3, 4}, 0.5f, 0);
    const uint32_t act = b.scalar(0);
    const uint32_t out = b.output(kQ8, {1, 4}, 1.0f, 0);
    b.operation(hal::OperationType::ADD, {in, c, act}, {out});
    const hal::Model model = b.build();
    proto::PrepareModelRequest good;
    auto staged = shim::marshalModel(model, *client.window, good.mutable_model());
    REQUIRE(staged.has_value());
    REQUIRE(staged->bytes() == 0);
    good.set_no_autotune(true);

    auto prepare = [&](const proto::PrepareModelRequest& request) {
        proto::PrepareModelReply reply;
        REQUIRE(client.rpc->call(proto::METHOD_PREPARE_MODEL, request, reply, shim::test::kCallTimeout)
                    .has_value());
        return reply;
    };
    struct Case {
        const char* what;
        std::function<void(proto::Subgraph*)> mutate;
        std::vector<std::string> parts;
    };
    const std::vector<Case> cases = {
        {"length against the dimensions",
         [](proto::Subgraph* g) { g->mutable_operands(1)->set_value("abcdef"); },
         {"operands[1]", "6 bytes", "takes 4 bytes"}},
        {"a value for an input",
         [](proto::Subgraph* g) { g->mutable_operands(0)->set_value("abcd"); },
         {"operands[0]", "4-byte value", "lifetime 1"}},
        {"a value and an address",
         [](proto::Subgraph* g) {
             g->mutable_operands(2)->set_data_addr(0x8000000);
             g->mutable_operands(2)->set_data_length(4);
         },
         {"operands[2]", "both a 4-byte value", "0x8000000"}},
        {"oversize",
         [](proto::Subgraph* g) {
             auto* o = g->mutable_operands(1);
             o->set_dimensions(1, 1000);
             o->set_value(std::string(4000, 'v'));
         },
         {"operands[1]", "4000 bytes", "at most 128"}},
    };
    for (const Case& k : cases) {
        INFO(k.what);
        proto::PrepareModelRequest bad = good;
        k.mutate(bad.mutable_model()->mutable_main());
        const proto::PrepareModelReply reply = prepare(bad);
        INFO(reply.status().message());
        CHECK(reply.status().code() == shim::test::kInvalidArgument);
        for (const std::string& part : k.parts) CHECK_THAT(reply.status().message(), Contains(part));
    }
    // Undisturbed: the well-formed request prepares and runs, as the reference does.
    const proto::PrepareModelReply reply = prepare(good);
    INFO(reply.status().message());
    REQUIRE(reply.status().code() == 0);
    shim::WindowBlock io = shim::test::stageAdd(client, 4, 5, 0);
    proto::ExecuteRequest e;
    e.set_model_handle(reply.model_handle());
    auto* a = e.add_inputs();
    a->set_addr(io.addr());
    a->set_length(4);
    auto* o = e.add_outputs();
    o->set_addr(io.addr() + 8);
    o->set_length(4);
    const proto::ExecuteReply executed = client.execute(e);
    INFO(executed.status().message());
    REQUIRE(executed.status().code() == 0);
    framework::TestCase tc;
    tc.model = model;
    tc.inputs = {std::vector<uint8_t>(4, 5)};
    tc.expectedOutputs = {std::vector<uint8_t>(4)};
    tc.expectedOutputDims = {{1, 4}};
    tc.outputIgnored = {false};
    ref::ReferenceDevice reference;
    CHECK(std::vector<uint8_t>(io.data() + 8, io.data() + 12) == run(reference, tc)[0]);
}
