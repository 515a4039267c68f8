#pragma once
// Test helper: the valid base models that the validation mutation tests start from, built with
// hal's SubgraphBuilder (npu/hal/model_builder.h).

#include <catch2/catch.hpp>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "npu/hal/model_builder.h"
#include "npu/hal/types.h"
#include "npu/hal/validation.h"

namespace npu::hal::test {

// main: t7 = CONV_2D(in0, filter1, bias2, implicit padding 3, strides 4 5, act 6); out9 = ADD(t7, in8, act 6)
//   operands: 0 input [1,3,3,1], 1 filter [1,2,2,1], 2 bias [1], 3..6 INT32, 7 temporary,
//   8 input [1,3,3,1], 9 output [1,3,3,1].
inline Model convAddModel() {
    Model m;
    SubgraphBuilder b(m, m.main);
    const auto F = OperandType::TENSOR_FLOAT32;
    const uint32_t in = b.input(F, {1, 3, 3, 1});         // 0
    const uint32_t filter = b.constant(F, {1, 2, 2, 1});  // 1
    const uint32_t bias = b.constant(F, {1});             // 2
    const uint32_t scheme = b.scalar(1);                  // 3
    const uint32_t sw = b.scalar(1);                      // 4
    const uint32_t sh = b.scalar(1);                      // 5
    const uint32_t act = b.scalar(0);                     // 6
    const uint32_t conv = b.temp(F, {1, 3, 3, 1});        // 7
    const uint32_t addend = b.input(F, {1, 3, 3, 1});     // 8
    const uint32_t out = b.output(F, {1, 3, 3, 1});       // 9
    b.operation(OperationType::CONV_2D, {in, filter, bias, scheme, sw, sh, act}, {conv});
    b.operation(OperationType::ADD, {conv, addend, act}, {out});
    return m;
}

// main: out = CONV_2D(quant8 input 0, per-channel filter 1 (2 output channels), int32 bias 2, ...)
//   operands: 0 input Q8A [1,3,3,1], 1 filter PER_CHANNEL [2,2,2,1], 2 bias TENSOR_INT32 [2]
//   (scale 0.25), 3..6 INT32, 7 output Q8A [1,2,2,2].
inline Model quantConvModel() {
    Model m;
    SubgraphBuilder b(m, m.main);
    const uint32_t in = b.input(OperandType::TENSOR_QUANT8_ASYMM, {1, 3, 3, 1}, 0.5f, 128);
    const uint32_t filter = b.constant(OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL, {2, 2, 2, 1});
    m.main.operands[filter].channelQuant = SymmPerChannelQuantParams{{0.5f, 0.25f}, 0};
    const uint32_t bias = b.constant(OperandType::TENSOR_INT32, {2}, 0.25f);
    const uint32_t scheme = b.scalar(2);
    const uint32_t sw = b.scalar(1);
    const uint32_t sh = b.scalar(1);
    const uint32_t act = b.scalar(0);
    const uint32_t out = b.output(OperandType::TENSOR_QUANT8_ASYMM, {1, 2, 2, 2}, 1.0f, 0);
    b.operation(OperationType::CONV_2D, {in, filter, bias, scheme, sw, sh, act}, {out});
    return m;
}

// main: out4 = IF(cond0, then=referenced 0 (op1), else=referenced 1 (op2), x3)
//   referenced 0: out2 = ADD(in0, in0, act1); referenced 1: out2 = MUL(in0, in0, act1).
inline Model ifModel() {
    Model m;
    m.referenced.resize(2);
    const auto F = OperandType::TENSOR_FLOAT32;
    SubgraphBuilder b(m, m.main);
    const uint32_t cond = b.input(OperandType::TENSOR_BOOL8, {1});  // 0
    const uint32_t thenOp = b.subgraph(0);                          // 1
    const uint32_t elseOp = b.subgraph(1);                          // 2
    const uint32_t x = b.input(F, {2});                             // 3
    const uint32_t out = b.output(F, {2});                          // 4
    b.operation(OperationType::IF, {cond, thenOp, elseOp, x}, {out});
    for (size_t i = 0; i < 2; ++i) {
        SubgraphBuilder r(m, m.referenced[i]);
        const uint32_t rin = r.input(F, {2});
        const uint32_t act = r.scalar(0);
        const uint32_t rout = r.output(F, {2});
        r.operation(i == 0 ? OperationType::ADD : OperationType::MUL, {rin, rin, act}, {rout});
    }
    return m;
}

// main: out3 = WHILE(cond=referenced 0 (op0), body=referenced 1 (op1), x2)
//   referenced 0: c = LESS(in0, limit1)  [TENSOR_BOOL8 [1]]; referenced 1: out = ADD(in0, in0, act).
inline Model whileModel() {
    Model m;
    m.referenced.resize(2);
    const auto F = OperandType::TENSOR_FLOAT32;
    SubgraphBuilder b(m, m.main);
    const uint32_t condOp = b.subgraph(0);  // 0
    const uint32_t bodyOp = b.subgraph(1);  // 1
    const uint32_t x = b.input(F, {1});     // 2
    const uint32_t out = b.output(F, {1});  // 3
    b.operation(OperationType::WHILE, {condOp, bodyOp, x}, {out});
    {
        SubgraphBuilder c(m, m.referenced[0]);
        const uint32_t cin = c.input(F, {1});
        const uint32_t limit = c.constant(F, {1});
        const uint32_t cout = c.output(OperandType::TENSOR_BOOL8, {1});
        c.operation(OperationType::LESS, {cin, limit}, {cout});
    }
    {
        SubgraphBuilder r(m, m.referenced[1]);
        const uint32_t rin = r.input(F, {1});
        const uint32_t act = r.scalar(0);
        const uint32_t rout = r.output(F, {1});
        r.operation(OperationType::ADD, {rin, rin, act}, {rout});
    }
    return m;
}

// Expects INVALID_ARGUMENT with a message that contains every one of `parts`.
inline void requireInvalid(const Status& status, std::initializer_list<std::string> parts) {
    REQUIRE_FALSE(status.has_value());
    CHECK(status.error().status == ErrorStatus::INVALID_ARGUMENT);
    INFO("message: " << status.error().message);
    for (const auto& part : parts) CHECK(status.error().message.find(part) != std::string::npos);
}

inline void requireValid(const Status& status) {
    INFO("message: " << (status ? std::string() : status.error().message));
    REQUIRE(status.has_value());
}

}  // namespace npu::hal::test
