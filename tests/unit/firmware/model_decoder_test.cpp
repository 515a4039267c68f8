// The firmware's model decoder (firmware/core/rpc/model_decoder.cpp) on CONSTANT_COPY values
// inside the message (Operand.value): what it copies where, and what it refuses from a hostile
// client, always with a status naming the operand and the sizes, never a crash.
#include "model_decoder.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "npu.pb.h"
#include "npu/hal/types.h"
#include "npu/protocol/constant_values.h"

using namespace npu;
using namespace npu::fw;
using Catch::Matchers::Contains;

namespace {

constexpr uint32_t kQuant8 = 5, kInt32 = 1, kTensorInt32 = 4;
constexpr uint32_t kInput = 1, kOutput = 2, kCopy = 3, kReference = 4;

struct Decoded {
    FwStatus status;
    ModelDesc model;
};

// Decodes `request` as the RpcServer does, into `arena`.
Decoded decode(const proto::PrepareModelRequest& request, Arena& arena, std::string* payload = nullptr) {
    std::string local;
    std::string& bytes = payload != nullptr ? *payload : local;
    bytes = request.SerializeAsString();
    npu_proto_PrepareModelRequest wire = npu_proto_PrepareModelRequest_init_zero;
    Decoded d;
    d.status = decodeModelRequest(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                  npu_proto_PrepareModelRequest_fields, &wire, &wire.model, arena, &d.model);
    return d;
}

struct TestArena {
    explicit TestArena(size_t bytes = 1u << 20)
        : memory(bytes / sizeof(std::max_align_t) + 1), arena(memory.data(), bytes) {}
    std::vector<std::max_align_t> memory;
    Arena arena;
};

proto::Operand* operand(proto::Subgraph* g, uint32_t type, std::vector<uint32_t> dims, uint32_t lifetime) {
    proto::Operand* o = g->add_operands();
    o->set_type(type);
    for (uint32_t d : dims) o->add_dimensions(d);
    o->set_scale(type == kQuant8 ? 0.5f : 0.0f);
    o->set_lifetime(lifetime);
    return o;
}

std::string bytesOf(size_t n, uint8_t first) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = char(first + i * 7);
    return s;
}

// ADD(input [1,4], constant b [1,4] inside the message, activation scalar inside the message)
// -> output [1,4]; a third constant, [1,4], staged at a device address.
proto::PrepareModelRequest addRequest() {
    proto::PrepareModelRequest r;
    proto::Subgraph* g = r.mutable_model()->mutable_main();
    operand(g, kQuant8, {1, 4}, kInput);
    operand(g, kQuant8, {1, 4}, kCopy)->set_value(bytesOf(4, 1));
    operand(g, kInt32, {}, kCopy)->set_value(std::string(4, '\0'));
    operand(g, kQuant8, {1, 4}, kOutput);
    proto::Operand* staged = operand(g, kQuant8, {1, 4}, kCopy);
    staged->set_data_addr(0x9000000);
    staged->set_data_length(4);
    proto::Operation* op = g->add_operations();
    op->set_type(0);
    for (uint32_t i : {0u, 1u, 2u}) op->add_inputs(i);
    op->add_outputs(3);
    g->add_input_indexes(0);
    g->add_output_indexes(3);
    return r;
}

// The status of decoding `request`, which must be refused with `code`.
std::string refusal(const proto::PrepareModelRequest& request, Code code = Code::kInvalidArgument) {
    TestArena a;
    const Decoded d = decode(request, a.arena);
    INFO(d.status.message);
    CHECK(d.status.code == code);
    return d.status.message;
}

}  // namespace

TEST_CASE("values inside the message are copied into the arena, aligned, apart from the payload",
          "[firmware]") {
    TestArena a;
    std::string payload;
    const Decoded d = decode(addRequest(), a.arena, &payload);
    INFO(d.status.message);
    REQUIRE(d.status.ok());
    REQUIRE(d.model.operandCount == 5);
    const OperandDesc& b = d.model.operands[1];
    REQUIRE(b.value != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(b.value) % 16 == 0);
    CHECK(b.dataLength == 4);
    CHECK(b.dataAddr == 0);
    const auto* base = reinterpret_cast<const uint8_t*>(a.memory.data());
    CHECK((b.value >= base && b.value + b.dataLength <= base + a.arena.capacity()));
    const OperandDesc& act = d.model.operands[2];
    REQUIRE(act.value != nullptr);
    CHECK(act.dataLength == 4);
    // The request's bytes may go (the server reuses its buffers): the copies stay.
    payload.assign(payload.size(), '\xEE');
    CHECK(std::string(reinterpret_cast<const char*>(b.value), 4) == bytesOf(4, 1));
    CHECK(std::string(reinterpret_cast<const char*>(act.value), 4) == std::string(4, '\0'));
    // Operands without a value are as before: a staged constant keeps its address.
    CHECK(d.model.operands[0].value == nullptr);
    CHECK(d.model.operands[0].dataLength == 0);
    CHECK(d.model.operands[4].value == nullptr);
    CHECK(d.model.operands[4].dataAddr == 0x9000000);
    CHECK(d.model.operands[4].dataLength == 4);
}

TEST_CASE("the largest value and the model-wide total are accepted, as the host sends them", "[firmware]") {
    proto::PrepareModelRequest r;
    proto::Subgraph* g = r.mutable_model()->mutable_main();
    const uint32_t n = proto::kMaxInlineValueBytes;
    const uint32_t count = proto::kMaxInlineModelBytes / n;
    for (uint32_t i = 0; i < count; ++i) operand(g, kQuant8, {n}, kCopy)->set_value(bytesOf(n, uint8_t(i)));
    TestArena a(4u << 20);
    const Decoded d = decode(r, a.arena);
    INFO(d.status.message);
    REQUIRE(d.status.ok());
    REQUIRE(d.model.operandCount == count);
    for (uint32_t i = 0; i < count; i += count / 7) {
        REQUIRE(d.model.operands[i].value != nullptr);
        CHECK(std::string(reinterpret_cast<const char*>(d.model.operands[i].value), n) ==
              bytesOf(n, uint8_t(i)));
    }
}

TEST_CASE("values of a size the operand cannot tell are taken as they come", "[firmware]") {
    for (auto [type, dims] : {std::pair<uint32_t, std::vector<uint32_t>>{10000, {}},  // OEM scalar
                              {10001, {3, 0}},                                        // an unknown dimension
                              {kQuant8, {}}}) {  // a tensor of unknown rank
        INFO("type " << type);
        proto::PrepareModelRequest r;
        operand(r.mutable_model()->mutable_main(), type, dims, kCopy)->set_value("12345");
        TestArena a;
        const Decoded d = decode(r, a.arena);
        INFO(d.status.message);
        REQUIRE(d.status.ok());
        CHECK(d.model.operands[0].dataLength == 5);
    }
}

TEST_CASE("a hostile value is INVALID_ARGUMENT naming the operand and the sizes", "[firmware]") {
    proto::PrepareModelRequest r = addRequest();
    proto::Subgraph* g = r.mutable_model()->mutable_main();
    SECTION("shorter than its type and dimensions") {
        g->mutable_operands(1)->set_value("abc");
        const std::string m = refusal(r);
        CHECK_THAT(
            m, Contains("operands[1]") && Contains("3 bytes") && Contains("[1,4]") && Contains("4 bytes"));
    }
    SECTION("a scalar of 8 bytes") {
        g->mutable_operands(2)->set_value(std::string(8, 'x'));
        CHECK_THAT(refusal(r), Contains("operands[2]") && Contains("8 bytes") && Contains("takes 4 bytes"));
    }
    SECTION("an empty value") {
        // libprotobuf never sends an empty bytes field, a hostile encoder may: tag 11, length 0.
        // PrepareModelRequest{1: Model{1: Subgraph{1: Operand{...}}}}: append "5A 00" to the operand.
        proto::Operand o;
        o.set_type(kInt32);
        o.set_lifetime(kCopy);
        std::string op = o.SerializeAsString() + std::string("\x5A\x00", 2);
        std::string sg = std::string("\x0A") + char(op.size()) + op;
        std::string model = std::string("\x0A") + char(sg.size()) + sg;
        std::string req = std::string("\x0A") + char(model.size()) + model;
        TestArena a;
        npu_proto_PrepareModelRequest wire = npu_proto_PrepareModelRequest_init_zero;
        ModelDesc m;
        FwStatus st =
            decodeModelRequest(reinterpret_cast<const uint8_t*>(req.data()), req.size(),
                               npu_proto_PrepareModelRequest_fields, &wire, &wire.model, a.arena, &m);
        INFO(st.message);
        CHECK(st.code == Code::kInvalidArgument);
        CHECK_THAT(std::string(st.message),
                   Contains("operands[0]") && Contains("0 bytes") && Contains("4 bytes"));
    }
    SECTION("for an operand that is not CONSTANT_COPY") {
        for (uint32_t lifetime : {kInput, kOutput, kReference, 0u, 5u}) {
            INFO("lifetime " << lifetime);
            proto::PrepareModelRequest bad = r;
            bad.mutable_model()->mutable_main()->mutable_operands(3)->set_lifetime(lifetime);
            bad.mutable_model()->mutable_main()->mutable_operands(3)->set_value(bytesOf(4, 9));
            CHECK_THAT(refusal(bad), Contains("operands[3]") && Contains("4-byte value") &&
                                         Contains("lifetime " + std::to_string(lifetime)));
        }
    }
    SECTION("both a value and a device address") {
        g->mutable_operands(1)->set_data_addr(0x8000040);
        g->mutable_operands(1)->set_data_length(4);
        CHECK_THAT(refusal(r),
                   Contains("operands[1]") && Contains("both a 4-byte value") && Contains("0x8000040"));
    }
    SECTION("a value and a length without an address") {
        g->mutable_operands(2)->set_data_length(4);
        CHECK_THAT(refusal(r), Contains("operands[2]") && Contains("both"));
    }
    SECTION("one byte over the largest value") {
        const uint32_t n = proto::kMaxInlineValueBytes + 1;
        operand(g, kQuant8, {n}, kCopy)->set_value(bytesOf(n, 0));
        CHECK_THAT(refusal(r), Contains("operands[5]") && Contains(std::to_string(n) + " bytes") &&
                                   Contains("at most " + std::to_string(proto::kMaxInlineValueBytes)));
    }
    SECTION("a megabyte, refused before it is copied anywhere") {
        const uint32_t n = 1u << 20;
        operand(g, kQuant8, {n}, kCopy)->set_value(std::string(n, 'w'));
        TestArena a(4u << 20);
        const Decoded d = decode(r, a.arena);
        CHECK(d.status.code == Code::kInvalidArgument);
        CHECK_THAT(std::string(d.status.message), Contains("operands[5]") && Contains("1048576 bytes"));
        CHECK(a.arena.peak() < 64u << 10);
    }
    SECTION("past the model's total") {
        const uint32_t n = proto::kMaxInlineValueBytes;
        // 8 bytes are inside already (operands 1 and 2).
        const uint32_t fit = (proto::kMaxInlineModelBytes - 8) / n;
        for (uint32_t i = 0; i < fit + 1; ++i)
            operand(g, kQuant8, {n}, kCopy)->set_value(bytesOf(n, uint8_t(i)));
        const uint64_t total = 8 + uint64_t(fit + 1) * n;
        CHECK_THAT(refusal(r), Contains("operands[" + std::to_string(5 + fit) + "]") &&
                                   Contains(std::to_string(total) + " bytes") &&
                                   Contains("at most " + std::to_string(proto::kMaxInlineModelBytes)));
    }
    SECTION("cut short by the end of the message") {
        std::string bytes = r.SerializeAsString();
        const size_t at = bytes.find(bytesOf(4, 1));
        REQUIRE(at != std::string::npos);
        bytes.resize(at + 2);
        TestArena a;
        npu_proto_PrepareModelRequest wire = npu_proto_PrepareModelRequest_init_zero;
        ModelDesc m;
        FwStatus st =
            decodeModelRequest(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                               npu_proto_PrepareModelRequest_fields, &wire, &wire.model, a.arena, &m);
        CHECK(st.code == Code::kInvalidArgument);
        CHECK_THAT(std::string(st.message), Contains("cannot decode"));
    }
}

TEST_CASE("a value the arena cannot hold is RESOURCE_EXHAUSTED naming it, at every arena size",
          "[firmware]") {
    proto::PrepareModelRequest r = addRequest();
    operand(r.mutable_model()->mutable_main(), kTensorInt32, {32}, kCopy)->set_value(bytesOf(128, 3));
    bool valueRefused = false;
    bool decoded = false;
    for (size_t bytes = 16; bytes <= 4096 && !decoded; bytes += 8) {
        TestArena a(bytes);
        const Decoded d = decode(r, a.arena);
        INFO("arena " << bytes << ": " << d.status.message);
        decoded = d.status.ok();
        if (decoded) break;
        REQUIRE(d.status.code == Code::kResourceExhaustedPersistent);
        CHECK(a.arena.used() <= bytes);
        if (std::string(d.status.message).find("operands[5].value: 128 bytes do not fit") !=
            std::string::npos)
            valueRefused = true;
    }
    CHECK(valueRefused);
    CHECK(decoded);
}

TEST_CASE("operandBytes agrees with the HAL's sizes for every operand type", "[firmware]") {
    using hal::OperandType;
    const uint32_t dims[] = {2, 3, 5};
    for (int t = 0; t <= 15; ++t) {
        const auto type = static_cast<OperandType>(t);
        INFO("type " << t);
        uint64_t bytes = 0;
        if (hal::isScalarType(type)) {
            REQUIRE(operandBytes(uint32_t(t), nullptr, 0, &bytes));
            CHECK(bytes == hal::elementSize(type));
        } else {
            REQUIRE(operandBytes(uint32_t(t), dims, 3, &bytes));
            CHECK(bytes == hal::elementSize(type) * 30);
            CHECK_FALSE(operandBytes(uint32_t(t), dims, 0, &bytes));  // unknown rank
            const uint32_t unknown[] = {2, 0, 5};
            CHECK_FALSE(operandBytes(uint32_t(t), unknown, 3, &bytes));
        }
    }
    uint64_t bytes = 0;
    REQUIRE(operandBytes(uint32_t(OperandType::TENSOR_OEM_BYTE), dims, 3, &bytes));
    CHECK(bytes == 30);
    CHECK_FALSE(operandBytes(uint32_t(OperandType::OEM), nullptr, 0, &bytes));
    CHECK_FALSE(operandBytes(77, dims, 3, &bytes));
    const uint32_t huge[] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
    CHECK_FALSE(operandBytes(uint32_t(OperandType::TENSOR_INT32), huge, 3, &bytes));
}
