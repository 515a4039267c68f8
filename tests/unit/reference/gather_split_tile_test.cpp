// GATHER, SPLIT, TILE, FILL, RANK: hand-checked cases beyond the vendored vectors.
#include <catch2/catch.hpp>

#include "single_op.h"

using namespace npu;
using hal::OperandType;
using hal::OperationType;
using test::bytesOf;
using test::SingleOp;
using test::valuesOf;

TEST_CASE("GATHER along axis 1 with 2-D indices", "[unit][reference]") {
    SingleOp op(OperandType::TENSOR_FLOAT32, {2, 3}, bytesOf<float>({0, 1, 2, 10, 11, 12}));
    op.constant<int32_t>(OperandType::INT32, {}, {-1})
        .constant<int32_t>(OperandType::TENSOR_INT32, {2, 2}, {2, 0, 1, 1});
    op.output(OperandType::TENSOR_FLOAT32, {2, 2, 2});
    auto out = op.run(OperationType::GATHER);
    REQUIRE(out.has_value());
    CHECK(valuesOf<float>((*out)[0]) == std::vector<float>{2, 0, 1, 1, 12, 10, 11, 11});
}

TEST_CASE("GATHER with an index out of range fails at execution, naming the element", "[unit][reference]") {
    SingleOp op(OperandType::TENSOR_INT32, {3}, bytesOf<int32_t>({7, 8, 9}));
    op.constant<int32_t>(OperandType::INT32, {}, {0})
        .constant<int32_t>(OperandType::TENSOR_INT32, {2}, {1, 3});
    op.output(OperandType::TENSOR_INT32, {2});
    auto out = op.run(OperationType::GATHER);
    REQUIRE_FALSE(out.has_value());
    CHECK_THAT(out.error().message, Catch::Contains("element 1 = 3"));
}

TEST_CASE("SPLIT into three along the last axis; an uneven split is refused", "[unit][reference]") {
    SingleOp op(OperandType::TENSOR_QUANT8_ASYMM, {2, 3}, {1, 2, 3, 4, 5, 6}, 1.0f, 0);
    op.constant<int32_t>(OperandType::INT32, {}, {1}).constant<int32_t>(OperandType::INT32, {}, {3});
    for (int i = 0; i < 3; ++i) op.output(OperandType::TENSOR_QUANT8_ASYMM, {2, 1}, 1.0f, 0);
    auto out = op.run(OperationType::SPLIT);
    REQUIRE(out.has_value());
    CHECK((*out)[0] == std::vector<uint8_t>{1, 4});
    CHECK((*out)[2] == std::vector<uint8_t>{3, 6});

    SingleOp uneven(OperandType::TENSOR_FLOAT32, {4}, bytesOf<float>({1, 2, 3, 4}));
    uneven.constant<int32_t>(OperandType::INT32, {}, {0}).constant<int32_t>(OperandType::INT32, {}, {3});
    for (int i = 0; i < 3; ++i) uneven.output(OperandType::TENSOR_FLOAT32, {0});
    auto bad = uneven.run(OperationType::SPLIT);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().message, Catch::Contains("not divisible by 3"));
}

TEST_CASE("TILE repeats each dimension", "[unit][reference]") {
    SingleOp op(OperandType::TENSOR_FLOAT16, {1, 2}, bytesOf<_Float16>({1, 2}));
    op.constant<int32_t>(OperandType::TENSOR_INT32, {2}, {2, 2});
    op.output(OperandType::TENSOR_FLOAT16, {2, 4});
    auto out = op.run(OperationType::TILE);
    REQUIRE(out.has_value());
    CHECK(valuesOf<_Float16>((*out)[0]) == std::vector<_Float16>{1, 2, 1, 2, 1, 2, 1, 2});
}

TEST_CASE("FILL makes a float tensor of the given shape; RANK counts dimensions", "[unit][reference]") {
    SingleOp fill(OperandType::TENSOR_INT32, {2}, bytesOf<int32_t>({2, 3}));
    fill.constant<float>(OperandType::FLOAT32, {}, {1.5f});
    fill.output(OperandType::TENSOR_FLOAT32, {2, 3});
    auto f = fill.run(OperationType::FILL);
    REQUIRE(f.has_value());
    CHECK(valuesOf<float>((*f)[0]) == std::vector<float>(6, 1.5f));

    SingleOp rank(OperandType::TENSOR_BOOL8, {1, 2, 1}, {1, 0});
    rank.output(OperandType::INT32, {});
    auto r = rank.run(OperationType::RANK);
    REQUIRE(r.has_value());
    CHECK(valuesOf<int32_t>((*r)[0]) == std::vector<int32_t>{3});
}
