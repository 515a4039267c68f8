// The shim's host window (shim/src/host_window.h): blocks inside the window and aligned, a full
// window refused with its sizes, freed blocks coalesced, and a peer's DRAM fd checked before it is
// mapped (type, bounds, seals).
#include "host_window.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

namespace {

using npu::hal::ErrorStatus;
using npu::shim::HostWindow;
using npu::shim::WindowBlock;

constexpr uint64_t kBase = 1 << 20;
constexpr uint64_t kSize = 64 * 1024;

std::unique_ptr<HostWindow> localWindow() {
    auto w = HostWindow::local(kBase, kSize);
    REQUIRE(w);
    return std::move(*w);
}

int memfdOf(uint64_t bytes, bool seal) {
    const int fd = memfd_create("host-window-test", MFD_ALLOW_SEALING | MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(ftruncate(fd, static_cast<off_t>(bytes)) == 0);
    if (seal) REQUIRE(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
    return fd;
}

}  // namespace

TEST_CASE("HostWindow hands out aligned blocks inside the window", "[shim][window]") {
    auto w = localWindow();
    auto a = w->allocate(1);
    auto b = w->allocate(100);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(*a >= kBase);
    CHECK(*b + 100 <= kBase + kSize);
    CHECK(*a % 64 == 0);
    CHECK(*b % 64 == 0);
    CHECK(*b >= *a + 64);
    std::memset(w->hostPointer(*b), 0xAB, 100);
    CHECK(w->hostPointer(*b)[99] == 0xAB);
    CHECK(w->bytesInUse() == 64 + 128);
}

TEST_CASE("HostWindow refuses a request larger than what is free, naming the sizes", "[shim][window]") {
    auto w = localWindow();
    auto all = w->allocate(kSize);
    REQUIRE(all);
    auto more = w->allocate(1);
    REQUIRE_FALSE(more);
    CHECK(more.error().status == ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT);
    CHECK_THAT(more.error().message, Catch::Contains("1 bytes requested") && Catch::Contains("65536"));
    w->free(*all);
    CHECK(w->allocate(kSize));
}

TEST_CASE("HostWindow coalesces freed neighbours in any order", "[shim][window]") {
    auto w = localWindow();
    const uint64_t third = kSize / 4;
    auto a = w->allocate(third), b = w->allocate(third), c = w->allocate(third), d = w->allocate(third);
    REQUIRE((a && b && c && d));
    w->free(*b);
    w->free(*d);
    w->free(*a);  // merges with b
    w->free(*c);  // merges a+b with d
    CHECK(w->bytesInUse() == 0);
    CHECK(w->allocate(kSize));  // one block again
}

TEST_CASE("HostWindow ignores a free of an address it never handed out", "[shim][window]") {
    auto w = localWindow();
    auto a = w->allocate(64);
    REQUIRE(a);
    w->free(kBase + 4096);
    w->free(0);
    CHECK(w->bytesInUse() == 64);
}

TEST_CASE("WindowBlock frees its block when it goes out of scope or is moved over", "[shim][window]") {
    auto w = localWindow();
    {
        auto a = w->allocate(256);
        REQUIRE(a);
        WindowBlock block(w.get(), *a, 256);
        WindowBlock moved = std::move(block);
        CHECK(w->bytesInUse() == 256);
        auto b = w->allocate(64);
        REQUIRE(b);
        moved = WindowBlock(w.get(), *b, 64);  // the 256-byte block is freed here
        CHECK(w->bytesInUse() == 64);
    }
    CHECK(w->bytesInUse() == 0);
}

TEST_CASE("HostWindow::map checks the peer's DRAM fd before mapping it", "[shim][window]") {
    SECTION("a pipe is not a memory file") {
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        auto w = HostWindow::map(fds[0], 0, 4096);
        close(fds[0]);
        close(fds[1]);
        REQUIRE_FALSE(w);
        CHECK(w.error().status == ErrorStatus::DEVICE_UNAVAILABLE);
        CHECK_THAT(w.error().message, Catch::Contains("not a memory file"));
    }
    SECTION("a window past the end of the file") {
        const int fd = memfdOf(8192, true);
        auto w = HostWindow::map(fd, 4096, 8192);
        close(fd);
        REQUIRE_FALSE(w);
        CHECK_THAT(w.error().message, Catch::Contains("holds 8192 bytes"));
    }
    SECTION("an unsealed memfd could shrink under us") {
        const int fd = memfdOf(8192, false);
        auto w = HostWindow::map(fd, 0, 8192);
        close(fd);
        REQUIRE_FALSE(w);
        CHECK_THAT(w.error().message, Catch::Contains("F_SEAL_SHRINK"));
    }
    SECTION("an empty window") {
        const int fd = memfdOf(8192, true);
        auto w = HostWindow::map(fd, 0, 0);
        close(fd);
        REQUIRE_FALSE(w);
    }
    SECTION("a sealed memfd maps, and writes reach the file") {
        const int fd = memfdOf(3 * 4096, true);
        auto w = HostWindow::map(fd, 4096, 4096);
        REQUIRE(w);
        auto a = (*w)->allocate(16);
        REQUIRE(a);
        std::memcpy((*w)->hostPointer(*a), "device memory!!", 16);
        char back[16] = {};
        REQUIRE(pread(fd, back, 16, static_cast<off_t>(*a)) == 16);
        CHECK(std::memcmp(back, "device memory!!", 16) == 0);
        close(fd);
    }
}

TEST_CASE("HostWindow::adoptMemory moves to a restarted firmware's window only while no block is held",
          "[shim][window][recovery]") {
    auto w = localWindow();
    auto sameSize = HostWindow::local(kBase + 4 * kSize, kSize);
    REQUIRE(sameSize);
    auto held = w->allocate(128);
    REQUIRE(held);
    auto refused = w->adoptMemory(**sameSize);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().status == ErrorStatus::DEVICE_UNAVAILABLE);
    CHECK_THAT(refused.error().message, Catch::Contains("1 block(s) held"));
    CHECK(w->base() == kBase);

    w->free(*held);
    REQUIRE(w->adoptMemory(**sameSize));
    CHECK(w->base() == kBase + 4 * kSize);
    auto moved = w->allocate(64);
    REQUIRE(moved);
    CHECK(*moved >= kBase + 4 * kSize);
    *w->hostPointer(*moved) = 0x5a;  // inside the adopted memory

    auto otherSize = HostWindow::local(kBase, kSize * 2);
    REQUIRE(otherSize);
    CHECK_FALSE(w->adoptMemory(**otherSize));
}
