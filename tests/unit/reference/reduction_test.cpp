// MEAN, REDUCE_*, ARGMAX/ARGMIN, LOG_SOFTMAX: hand-checked cases beyond the vendored vectors.
#include <catch2/catch.hpp>
#include <cmath>

#include "single_op.h"

using namespace npu;
using hal::OperandType;
using hal::OperationType;
using test::bytesOf;
using test::SingleOp;
using test::valuesOf;

TEST_CASE("MEAN over every axis without keep_dims gives shape [1]; repeated and negative axes count once",
          "[unit][reference]") {
    SingleOp op(OperandType::TENSOR_FLOAT32, {2, 3}, bytesOf<float>({1, 2, 3, 4, 5, 6}));
    op.constant<int32_t>(OperandType::TENSOR_INT32, {3}, {0, -1, 1})
        .constant<int32_t>(OperandType::INT32, {}, {0});
    op.output(OperandType::TENSOR_FLOAT32, {1});
    auto out = op.run(OperationType::MEAN);
    REQUIRE(out.has_value());
    CHECK(valuesOf<float>((*out)[0]) == std::vector<float>{3.5f});
}

TEST_CASE("REDUCE_MAX on quant8 with keep_dims keeps the quantized values", "[unit][reference]") {
    SingleOp op(OperandType::TENSOR_QUANT8_ASYMM, {2, 2}, {3, 200, 17, 9}, 0.5f, 10);
    op.constant<int32_t>(OperandType::TENSOR_INT32, {1}, {1}).constant<uint8_t>(OperandType::BOOL, {}, {1});
    op.output(OperandType::TENSOR_QUANT8_ASYMM, {2, 1}, 0.5f, 10);
    auto out = op.run(OperationType::REDUCE_MAX);
    REQUIRE(out.has_value());
    CHECK((*out)[0] == std::vector<uint8_t>{200, 17});
}

TEST_CASE("REDUCE_PROD and REDUCE_ANY", "[unit][reference]") {
    SingleOp prod(OperandType::TENSOR_FLOAT32, {3, 2}, bytesOf<float>({1, 2, 3, 4, 5, -6}));
    prod.constant<int32_t>(OperandType::TENSOR_INT32, {1}, {0}).constant<uint8_t>(OperandType::BOOL, {}, {0});
    prod.output(OperandType::TENSOR_FLOAT32, {2});
    auto p = prod.run(OperationType::REDUCE_PROD);
    REQUIRE(p.has_value());
    CHECK(valuesOf<float>((*p)[0]) == std::vector<float>{15, -48});

    SingleOp any(OperandType::TENSOR_BOOL8, {2, 2}, {0, 0, 0, 1});
    any.constant<int32_t>(OperandType::TENSOR_INT32, {1}, {-1}).constant<uint8_t>(OperandType::BOOL, {}, {0});
    any.output(OperandType::TENSOR_BOOL8, {2});
    auto a = any.run(OperationType::REDUCE_ANY);
    REQUIRE(a.has_value());
    CHECK((*a)[0] == std::vector<uint8_t>{0, 1});
}

TEST_CASE("REDUCE_SUM rejects an axis outside the rank, naming it", "[unit][reference]") {
    SingleOp op(OperandType::TENSOR_FLOAT32, {2, 2}, bytesOf<float>({1, 2, 3, 4}));
    op.constant<int32_t>(OperandType::TENSOR_INT32, {1}, {2}).constant<uint8_t>(OperandType::BOOL, {}, {0});
    op.output(OperandType::TENSOR_FLOAT32, {0});
    auto out = op.run(OperationType::REDUCE_SUM);
    REQUIRE_FALSE(out.has_value());
    CHECK_THAT(out.error().message, Catch::Contains("axis 2 out of range for rank 2"));
}

TEST_CASE("ARGMAX and ARGMIN pick the first index on ties", "[unit][reference]") {
    SingleOp max(OperandType::TENSOR_INT32, {2, 3}, bytesOf<int32_t>({5, 9, 9, -1, -1, -7}));
    max.constant<int32_t>(OperandType::INT32, {}, {1});
    max.output(OperandType::TENSOR_INT32, {2});
    auto a = max.run(OperationType::ARGMAX);
    REQUIRE(a.has_value());
    CHECK(valuesOf<int32_t>((*a)[0]) == std::vector<int32_t>{1, 0});

    SingleOp min(OperandType::TENSOR_QUANT8_ASYMM_SIGNED, {2, 2},
                 {static_cast<uint8_t>(-3), 4, static_cast<uint8_t>(-3), 2}, 0.25f, 0);
    min.constant<int32_t>(OperandType::INT32, {}, {0});
    min.output(OperandType::TENSOR_INT32, {2});
    auto b = min.run(OperationType::ARGMIN);
    REQUIRE(b.has_value());
    CHECK(valuesOf<int32_t>((*b)[0]) == std::vector<int32_t>{0, 1});
}

TEST_CASE("LOG_SOFTMAX along axis 0 with beta", "[unit][reference]") {
    SingleOp op(OperandType::TENSOR_FLOAT32, {2, 1}, bytesOf<float>({1, 3}));
    op.constant<float>(OperandType::FLOAT32, {}, {0.5f}).constant<int32_t>(OperandType::INT32, {}, {0});
    op.output(OperandType::TENSOR_FLOAT32, {2, 1});
    auto out = op.run(OperationType::LOG_SOFTMAX);
    REQUIRE(out.has_value());
    const auto v = valuesOf<float>((*out)[0]);
    const double logSum = std::log(std::exp(-1.0) + 1.0);  // beta * (x - max) = -1, 0
    CHECK(v[0] == Approx(-1.0 - logSum));
    CHECK(v[1] == Approx(-logSum));
}
