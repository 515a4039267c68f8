// The firmware's first-fit allocator of device DRAM (firmware/core/src/dram_allocator.h): address
// 0 never handed out, 64-byte alignment, first fit into freed gaps, every limit refused cleanly.
#include "dram_allocator.h"

#include <catch2/catch.hpp>
#include <vector>

namespace {

using npu::fw::Arena;
using npu::fw::DramAllocator;

struct Fixture {
    std::vector<uint8_t> memory = std::vector<uint8_t>(64 * 1024);
    Arena arena{memory.data(), memory.size()};
    DramAllocator dram;
};

}  // namespace

TEST_CASE("DramAllocator never hands out address 0 and aligns every block", "[firmware][dram]") {
    Fixture f;
    REQUIRE(f.dram.init(f.arena, 0, 4096));
    uint64_t a = 0, b = 0;
    REQUIRE(f.dram.allocate(1, &a));
    REQUIRE(f.dram.allocate(65, &b));
    CHECK(a == DramAllocator::kAlign);
    CHECK(b == a + DramAllocator::kAlign);  // one byte takes one aligned unit
    CHECK(b % DramAllocator::kAlign == 0);
    CHECK(f.dram.bytesInUse() == 3 * DramAllocator::kAlign);
    CHECK(f.dram.blocksInUse() == 2);
}

TEST_CASE("DramAllocator rounds an unaligned base up", "[firmware][dram]") {
    Fixture f;
    REQUIRE(f.dram.init(f.arena, 1000, 8192));
    uint64_t a = 0;
    REQUIRE(f.dram.allocate(10, &a));
    CHECK(a == 1024);
}

TEST_CASE("DramAllocator reuses the first freed gap that fits", "[firmware][dram]") {
    Fixture f;
    REQUIRE(f.dram.init(f.arena, 0, 64 * 64));
    uint64_t a = 0, b = 0, c = 0, d = 0;
    REQUIRE(f.dram.allocate(64 * 4, &a));
    REQUIRE(f.dram.allocate(64 * 4, &b));
    REQUIRE(f.dram.allocate(64 * 4, &c));
    f.dram.free(b);
    REQUIRE(f.dram.allocate(64 * 2, &d));
    CHECK(d == b);  // into the gap, not after c
    uint64_t e = 0;
    REQUIRE(f.dram.allocate(64 * 3, &e));
    CHECK(e == c + 64 * 4);  // the rest of the gap (2 units) is too small
}

TEST_CASE("DramAllocator refuses zero, oversized and overflowing requests", "[firmware][dram]") {
    Fixture f;
    REQUIRE(f.dram.init(f.arena, 0, 4096));
    uint64_t a = 12345;
    CHECK_FALSE(f.dram.allocate(0, &a));
    CHECK_FALSE(f.dram.allocate(4096, &a));  // 4096 - 64 bytes are usable
    CHECK_FALSE(f.dram.allocate(UINT64_MAX, &a));
    CHECK_FALSE(f.dram.allocate(UINT64_MAX - DramAllocator::kAlign + 1, &a));
    CHECK(a == 12345);  // untouched on failure
    REQUIRE(f.dram.allocate(4096 - 64, &a));
    CHECK_FALSE(f.dram.allocate(1, &a));  // full
    CHECK(f.dram.blocksInUse() == 1);
}

TEST_CASE("DramAllocator's block table is bounded and a foreign free changes nothing", "[firmware][dram]") {
    Fixture f;
    REQUIRE(f.dram.init(f.arena, 0, uint64_t{1} << 30));
    uint64_t a = 0;
    for (uint32_t i = 0; i < DramAllocator::kMaxBlocks; ++i) REQUIRE(f.dram.allocate(64, &a));
    CHECK_FALSE(f.dram.allocate(64, &a));
    const uint64_t before = f.dram.bytesInUse();
    f.dram.free(7);                  // not a block
    f.dram.free(uint64_t{1} << 40);  // outside the range
    CHECK(f.dram.bytesInUse() == before);
    f.dram.free(a);
    CHECK(f.dram.allocate(64, &a));
    f.dram.clear();
    CHECK(f.dram.blocksInUse() == 0);
    CHECK(f.dram.bytesInUse() == 0);
}

TEST_CASE("DramAllocator::init fails when the arena cannot hold its table", "[firmware][dram]") {
    std::vector<uint8_t> tiny(64);
    Arena arena(tiny.data(), tiny.size());
    DramAllocator dram;
    CHECK_FALSE(dram.init(arena, 0, 4096));
}
