// base::UniqueFd: owns, moves, releases and closes exactly once.
#include "npu/base/unique_fd.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <utility>

using npu::base::UniqueFd;

namespace {
bool isOpen(int fd) {
    return ::fcntl(fd, F_GETFD) != -1;
}
}  // namespace

TEST_CASE("UniqueFd closes on destruction and on reset") {
    int raw = -1;
    {
        UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
        REQUIRE(fd.valid());
        raw = fd.get();
        CHECK(isOpen(raw));
    }
    CHECK_FALSE(isOpen(raw));

    UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw = fd.get();
    fd.reset();
    CHECK_FALSE(fd);
    CHECK_FALSE(isOpen(raw));
}

TEST_CASE("UniqueFd moves ownership and release gives it up") {
    UniqueFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int raw = a.get();
    UniqueFd b(std::move(a));
    CHECK_FALSE(a.valid());
    CHECK(b.get() == raw);
    UniqueFd c;
    c = std::move(b);
    CHECK(c.get() == raw);
    c = std::move(c);  // self-move keeps the descriptor
    CHECK(isOpen(raw));
    const int released = c.release();
    CHECK_FALSE(c.valid());
    CHECK(isOpen(released));
    ::close(released);
}

TEST_CASE("reset to the descriptor held keeps it open") {
    UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const int raw = fd.get();
    fd.reset(raw);
    CHECK(isOpen(raw));
}
