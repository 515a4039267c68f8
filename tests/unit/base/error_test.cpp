// base::Error, base::Result, NPU_TRY and sysError.
#include "npu/base/error.h"

#include <catch2/catch.hpp>
#include <cerrno>

using npu::base::Error;
using npu::base::Result;

namespace {

Result<int> half(int x) {
    if (x % 2 != 0) return npu::base::fail(Error::Kind::kInvalidArgument, "odd value " + std::to_string(x));
    return x / 2;
}

Result<int> quarter(int x) {
    const int h = NPU_TRY(half(x));
    return NPU_TRY(half(h));
}

Result<void> check(int x) {
    NPU_TRY(quarter(x));
    return {};
}

}  // namespace

TEST_CASE("NPU_TRY yields the value or propagates the first error unchanged") {
    REQUIRE(quarter(12).value() == 3);
    auto bad = quarter(6);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().kind == Error::Kind::kInvalidArgument);
    CHECK(bad.error().message == "odd value 3");
    CHECK(check(8).has_value());
    CHECK_FALSE(check(2).has_value());
}

TEST_CASE("fail keeps the remote code; every kind has a name") {
    auto e = npu::base::fail(Error::Kind::kRemote, "firmware said no", 4).error();
    CHECK(e.remoteCode == 4);
    CHECK(std::string(npu::base::errorKindName(Error::Kind::kTimeout)) == "timeout");
    CHECK(std::string(npu::base::errorKindName(Error::Kind::kIo)) == "I/O error");
    for (int k = 0; k <= static_cast<int>(Error::Kind::kTooLarge); ++k) {
        CHECK(std::string(npu::base::errorKindName(static_cast<Error::Kind>(k))) != "unknown error");
    }
}

TEST_CASE("sysError names the call, the path and strerror") {
    CHECK(npu::base::sysError("open", "/a/b", ENOENT) == "open(/a/b): No such file or directory");
}
