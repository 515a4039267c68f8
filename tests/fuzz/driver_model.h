#pragma once
// Models built from fuzz bytes, for the targets that drive the whole driver (tests/fuzz/README.md):
// the tests' random model generator (tests/support/random_model.h) with its choices read off the
// input, one byte each (FuzzChoices), so a mutated byte changes one property of a model that
// stays mostly valid, and the fuzzer explores the space the NPU claims (quant8 CONV_2D,
// GROUPED_CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, pooling, activations, element-wise,
// CONCATENATION, RESHAPE/SQUEEZE, PAD/PAD_V2). Edit records at the end then break the model on
// purpose (a type, a dimension, an index, a lifetime), which reaches validation in the shim, the
// firmware and the reference.
//
//   input := flags u8 | data seed u32 | the generator's choices (the input's shape, scale and
//            zero point, the operation count, each operation's kind and parameters)
//            | edits (flags >> 6 of them: kind u8, index u8, value u32)
//
// flags bit 0: int8 (else uint8); bit 1: NCHW (else NHWC). Past the end of the input every choice
// is its smallest value, so any prefix is a model.

#include <cstdint>
#include <vector>

#include "fuzz_target.h"
#include "npu/framework/cts_loader.h"

namespace npu::fuzz {

// A model with random request inputs (from the data seed) and outputs sized from the model's
// own output operands. `edited` says whether any edit record changed the model.
struct DriverModel {
    framework::TestCase testCase;
    bool edited = false;
};

DriverModel buildDriverModel(InputReader& in);

// The largest tensor (elements) and model (operations) the generator makes: small enough that a
// model prepares and runs in milliseconds on the simulated NPU.
inline constexpr uint32_t kDriverModelMaxOperations = 6;

}  // namespace npu::fuzz
