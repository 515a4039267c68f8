// The shim's model marshalling (shim/src/marshal.h): which constants ride inside the message
// (Operand.value), which are staged in the host window, which are named in a mapped pool; and
// that a model whose values all ride inside takes no window byte.
#include "marshal.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "npu/hal/model_builder.h"

using namespace npu;
using hal::OperandLifeTime;
using hal::OperandType;
using shim::InlineRule;

namespace {

constexpr uint64_t kWindowAddr = 128ull << 20;

std::unique_ptr<shim::HostWindow> window() {
    auto w = shim::HostWindow::local(kWindowAddr, 1u << 20);
    REQUIRE(w);
    return std::move(*w);
}

std::vector<uint8_t> pattern(size_t n, uint8_t first) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(first + 3 * i);
    return v;
}

std::string str(const std::vector<uint8_t>& v) {
    return std::string(v.begin(), v.end());
}

// ADD of an input and a [1, n] constant (CONSTANT_COPY) with an activation scalar.
hal::Model addModel(uint32_t n) {
    hal::ModelBuilder b;
    const auto q8 = OperandType::TENSOR_QUANT8_ASYMM;
    const uint32_t in = b.input(q8, {1, n}, 0.5f, 0);
    const uint32_t c = b.constant<uint8_t>(q8, {1, n}, pattern(n, 1), 0.5f, 0);
    const uint32_t act = b.scalar(0);
    const uint32_t out = b.output(q8, {1, n}, 1.0f, 0);
    b.operation(hal::OperationType::ADD, {in, c, act}, {out});
    return b.build();
}

}  // namespace

TEST_CASE("values of at most 128 bytes ride inside the message and take no window byte", "[shim]") {
    auto w = window();
    const hal::Model model = addModel(proto::kMaxInlineValueBytes);
    proto::Model out;
    shim::ConstantPlacement placed;
    auto block = shim::marshalModel(model, *w, &out, {}, InlineRule{}, &placed);
    REQUIRE(block.has_value());
    CHECK(block->bytes() == 0);
    CHECK(w->bytesInUse() == 0);
    CHECK(placed.inMessageCount == 2);
    CHECK(placed.inMessageBytes == proto::kMaxInlineValueBytes + 4);
    CHECK(placed.stagedCount == 0);
    const auto& c = out.main().operands(1);
    CHECK(c.value() == str(pattern(proto::kMaxInlineValueBytes, 1)));
    CHECK(c.data_addr() == 0);
    CHECK(c.data_length() == 0);
    CHECK(out.main().operands(2).value() == std::string(4, '\0'));
    CHECK(out.main().operands(0).value().empty());
}

TEST_CASE("a larger value is staged in the host window, as every constant was before", "[shim]") {
    auto w = window();
    const uint32_t n = proto::kMaxInlineValueBytes + 1;
    const hal::Model model = addModel(n);
    proto::Model out;
    shim::ConstantPlacement placed;
    auto block = shim::marshalModel(model, *w, &out, {}, InlineRule{}, &placed);
    REQUIRE(block.has_value());
    CHECK(placed.inMessageCount == 1);  // the activation scalar
    CHECK(placed.stagedCount == 1);
    CHECK(placed.stagedBytes == n);
    const auto& c = out.main().operands(1);
    CHECK(c.value().empty());
    CHECK(c.data_length() == n);
    CHECK(c.data_addr() == block->addr());
    CHECK(std::memcmp(w->hostPointer(c.data_addr()), pattern(n, 1).data(), n) == 0);
    CHECK(w->bytesInUse() >= n);
    block->reset();
    CHECK(w->bytesInUse() == 0);
}

TEST_CASE("values go inside in operand order while the model's total allows, the rest are staged", "[shim]") {
    auto w = window();
    hal::ModelBuilder b;
    const uint32_t n = proto::kMaxInlineValueBytes;
    const uint32_t fit = proto::kMaxInlineModelBytes / n;
    for (uint32_t i = 0; i < fit + 3; ++i)
        b.constant<uint8_t>(OperandType::TENSOR_QUANT8_ASYMM, {n}, pattern(n, uint8_t(i)));
    // A referenced subgraph's value counts too: it comes after main's, so it is staged.
    const uint32_t sg = b.addReferenced();
    b.referenced(sg).scalar(7);
    const hal::Model model = b.build();
    proto::Model out;
    shim::ConstantPlacement placed;
    auto block = shim::marshalModel(model, *w, &out, {}, InlineRule{}, &placed);
    REQUIRE(block.has_value());
    CHECK(placed.inMessageCount == fit);
    CHECK(placed.inMessageBytes == proto::kMaxInlineModelBytes);
    CHECK(placed.stagedCount == 4);
    for (uint32_t i = 0; i < fit + 3; ++i) {
        INFO("operand " << i);
        const auto& o = out.main().operands(int(i));
        CHECK(o.value().empty() == (i >= fit));
        CHECK((o.data_length() == n) == (i >= fit));
    }
    CHECK(out.referenced(0).operands(0).value().empty());
    CHECK(out.referenced(0).operands(0).data_length() == 4);
    CHECK(std::memcmp(w->hostPointer(out.referenced(0).operands(0).data_addr()), "\x07\0\0\0", 4) == 0);
}

TEST_CASE("with no rule (a firmware before protocol 1.1) every constant is staged", "[shim]") {
    auto w = window();
    const hal::Model model = addModel(8);
    proto::Model out;
    shim::ConstantPlacement placed;
    auto block = shim::marshalModel(model, *w, &out, {}, InlineRule::none(), &placed);
    REQUIRE(block.has_value());
    CHECK(placed.inMessageCount == 0);
    CHECK(placed.stagedCount == 2);
    CHECK(out.main().operands(1).value().empty());
    CHECK(out.main().operands(1).data_length() == 8);

    proto::HelloReply hello;
    hello.set_major(1);
    hello.set_minor(0);
    CHECK(shim::inlineRuleFor(hello).maxValueBytes == 0);
    hello.set_minor(proto::kInlineValuesMinor);
    CHECK(shim::inlineRuleFor(hello).maxValueBytes == proto::kMaxInlineValueBytes);
    CHECK(shim::inlineRuleFor(hello).maxModelBytes == proto::kMaxInlineModelBytes);
}

TEST_CASE("CONSTANT_REFERENCE never rides inside: in place in a mapped pool, else staged", "[shim]") {
    auto w = window();
    hal::ModelBuilder b;
    hal::Model& m = b.model();
    m.pools.push_back(hal::Memory::create(4096));
    std::memcpy(m.pools[0]->data(), pattern(64, 5).data(), 64);
    for (uint32_t offset : {0u, 32u, 8u}) {  // 8: not 16-byte aligned, so staged even when mapped
        const uint32_t i =
            b.operand(OperandType::TENSOR_QUANT8_ASYMM, {16}, OperandLifeTime::CONSTANT_REFERENCE);
        m.main.operands[i].location = {0, offset, 16};
    }
    const hal::Model model = b.build();
    SECTION("pool mapped") {
        proto::Model out;
        shim::ConstantPlacement placed;
        auto block =
            shim::marshalModel(model, *w, &out, {std::optional<uint64_t>(0x40000000)}, InlineRule{}, &placed);
        REQUIRE(block.has_value());
        CHECK(placed.inMessageCount == 0);
        CHECK(placed.inPlaceCount == 2);
        CHECK(placed.stagedCount == 1);
        CHECK(out.main().operands(0).data_addr() == 0x40000000);
        CHECK(out.main().operands(1).data_addr() == 0x40000020);
        CHECK(out.main().operands(2).data_addr() == block->addr());
        for (const auto& o : out.main().operands()) CHECK(o.value().empty());
    }
    SECTION("pool not mapped") {
        proto::Model out;
        shim::ConstantPlacement placed;
        auto block = shim::marshalModel(model, *w, &out, {}, InlineRule{}, &placed);
        REQUIRE(block.has_value());
        CHECK(placed.inMessageCount == 0);
        CHECK(placed.stagedCount == 3);
        CHECK(std::memcmp(w->hostPointer(out.main().operands(1).data_addr()), pattern(64, 5).data() + 32,
                          16) == 0);
    }
}
