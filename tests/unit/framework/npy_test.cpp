// The .npy writer (framework/include/npu/framework/npy.h): the header NumPy expects, and a file
// that the .npy reader of the ONNX tools reads back to the same tensor.
#include "npu/framework/npy.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>

#include "npu/framework/onnx_import.h"

using npu::hal::OperandType;

TEST_CASE("encodeNpy writes a 1.0 header padded to 64 bytes", "[framework][npy]") {
    auto bytes = npu::framework::encodeNpy(OperandType::TENSOR_QUANT8_ASYMM, {2, 3}, {1, 2, 3, 4, 5, 6});
    REQUIRE(bytes);
    CHECK(bytes->compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
    const size_t headerLen = static_cast<uint8_t>((*bytes)[8]) | static_cast<uint8_t>((*bytes)[9]) << 8;
    CHECK((10 + headerLen) % 64 == 0);
    CHECK((*bytes)[10 + headerLen - 1] == '\n');
    CHECK_THAT(*bytes, Catch::Contains("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }"));
    CHECK(bytes->size() == 10 + headerLen + 6);
}

TEST_CASE("encodeNpy spells one-dimensional and scalar shapes as Python tuples", "[framework][npy]") {
    auto one = npu::framework::encodeNpy(OperandType::TENSOR_INT32, {2}, std::vector<uint8_t>(8));
    REQUIRE(one);
    CHECK_THAT(*one, Catch::Contains("'shape': (2,)") && Catch::Contains("'<i4'"));
    auto scalar = npu::framework::encodeNpy(OperandType::TENSOR_FLOAT32, {}, std::vector<uint8_t>(4));
    REQUIRE(scalar);
    CHECK_THAT(*scalar, Catch::Contains("'shape': ()"));
}

TEST_CASE("encodeNpy refuses a size mismatch and a type with no dtype", "[framework][npy]") {
    auto wrong = npu::framework::encodeNpy(OperandType::TENSOR_FLOAT32, {2, 2}, std::vector<uint8_t>(15));
    REQUIRE_FALSE(wrong);
    CHECK_THAT(wrong.error().message, Catch::Contains("15 bytes") && Catch::Contains("needs 16"));
    auto oem = npu::framework::encodeNpy(OperandType::TENSOR_OEM_BYTE, {1}, {0});
    REQUIRE_FALSE(oem);
}

TEST_CASE("a written .npy reads back to the same tensor", "[framework][npy]") {
    const std::string path = "/tmp/npy-test-" + std::to_string(getpid()) + ".npy";
    const std::vector<float> values = {1.5f, -2.0f, 0.25f, 8.0f, 0.0f, -0.5f};
    std::vector<uint8_t> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    REQUIRE(npu::framework::writeNpyFile(path, OperandType::TENSOR_FLOAT32, {1, 3, 2}, bytes));
    auto back = npu::framework::loadOnnxTensorFile(path);
    std::remove(path.c_str());
    REQUIRE(back);
    CHECK(back->dims == std::vector<int64_t>{1, 3, 2});
    CHECK(back->elementType == 1);  // FLOAT
    CHECK(back->data == bytes);
    CHECK_FALSE(npu::framework::writeNpyFile("/nonexistent/dir/x.npy", OperandType::TENSOR_FLOAT32, {1},
                                             std::vector<uint8_t>(4)));
}
