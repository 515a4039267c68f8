// Cache-file I/O on caller-given fds: offsets, non-empty files, access modes.
#include "npu/cache/fd_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_support.h"

using namespace npu::cache;
using test::TempDir;

namespace {

struct Fd {
    int fd;
    explicit Fd(int f) : fd(f) { REQUIRE(fd >= 0); }
    ~Fd() { ::close(fd); }
};

const std::vector<uint8_t> kPayload = {'c', 'o', 'm', 'p', 'i', 'l', 'e', 'd'};

}  // namespace

TEST_CASE("writeWholeFd writes from offset 0 whatever the fd offset and old content") {
    TempDir dir;
    const std::string path = dir / "model.cache";
    test::writeFile(path, std::vector<uint8_t>(100, 'z'));  // non-empty, longer than the payload
    Fd f(::open(path.c_str(), O_RDWR));
    // As the VTS test does: write a byte first, leaving a non-zero offset.
    REQUIRE(::write(f.fd, "x", 1) == 1);
    REQUIRE(::lseek(f.fd, 0, SEEK_CUR) == 1);
    REQUIRE(writeWholeFd(f.fd, kPayload));
    CHECK(test::readFile(path) == kPayload);
    CHECK(::lseek(f.fd, 0, SEEK_CUR) == 1);  // the caller's offset is left alone
}

TEST_CASE("readWholeFd reads the whole file whatever the fd offset") {
    TempDir dir;
    const std::string path = dir / "data.cache";
    test::writeFile(path, kPayload);
    Fd f(::open(path.c_str(), O_RDWR));
    REQUIRE(::lseek(f.fd, 5, SEEK_SET) == 5);
    auto bytes = readWholeFd(f.fd);
    REQUIRE(bytes);
    CHECK(*bytes == kPayload);
    CHECK(::lseek(f.fd, 0, SEEK_CUR) == 5);
    test::writeFile(path, {});
    auto empty = readWholeFd(f.fd);
    REQUIRE(empty);
    CHECK(empty->empty());
}

TEST_CASE("an O_APPEND fd is written correctly") {
    TempDir dir;
    const std::string path = dir / "append.cache";
    test::writeFile(path, std::vector<uint8_t>(10, 'q'));
    Fd f(::open(path.c_str(), O_RDWR | O_APPEND));
    REQUIRE(writeWholeFd(f.fd, kPayload));
    REQUIRE(writeWholeFd(f.fd, kPayload));
    CHECK(test::readFile(path) == kPayload);
}

TEST_CASE("wrong access modes give a clear error") {
    TempDir dir;
    const std::string path = dir / "mode.cache";
    test::writeFile(path, kPayload);
    SECTION("read-only fd on save") {
        Fd f(::open(path.c_str(), O_RDONLY));
        auto r = writeWholeFd(f.fd, kPayload);
        REQUIRE_FALSE(r);
        CHECK(r.error().kind == CacheError::Kind::kBadAccessMode);
        CHECK(r.error().message.find("read-only") != std::string::npos);
        CHECK(r.error().message.find(path) != std::string::npos);
        CHECK(test::readFile(path) == kPayload);  // untouched
    }
    SECTION("write-only fd on load") {
        Fd f(::open(path.c_str(), O_WRONLY));
        auto r = readWholeFd(f.fd);
        REQUIRE_FALSE(r);
        CHECK(r.error().kind == CacheError::Kind::kBadAccessMode);
        CHECK(r.error().message.find("write-only") != std::string::npos);
    }
    SECTION("read-write is fine both ways") {
        Fd f(::open(path.c_str(), O_RDWR));
        CHECK(checkFdAccess(f.fd, FdAccess::kRead));
        CHECK(checkFdAccess(f.fd, FdAccess::kWrite));
    }
    SECTION("a closed fd") {
        int fd = ::open(path.c_str(), O_RDWR);
        ::close(fd);
        auto r = readWholeFd(fd);
        REQUIRE_FALSE(r);
        CHECK(r.error().kind == CacheError::Kind::kIo);
        CHECK(r.error().message.find("fcntl") != std::string::npos);
    }
}

TEST_CASE("size limit and several fds") {
    TempDir dir;
    test::writeFile(dir / "a", kPayload);
    test::writeFile(dir / "b", {});
    Fd a(::open((dir / "a").c_str(), O_RDWR));
    Fd b(::open((dir / "b").c_str(), O_RDWR));
    auto big = readWholeFd(a.fd, 4);
    REQUIRE_FALSE(big);
    CHECK(big.error().kind == CacheError::Kind::kTooLarge);

    const std::vector<uint8_t> second = {9, 9};
    const ByteSpan buffers[] = {second, kPayload};
    const int fds[] = {a.fd, b.fd};
    REQUIRE(writeWholeFds(fds, buffers));
    auto back = readWholeFds(fds);
    REQUIRE(back);
    REQUIRE(back->size() == 2);
    CHECK((*back)[0] == second);
    CHECK((*back)[1] == kPayload);
    auto mismatch = writeWholeFds(std::span<const int>(fds, 1), buffers);
    REQUIRE_FALSE(mismatch);
    CHECK(mismatch.error().kind == CacheError::Kind::kInvalidArgument);
    // One read-only fd among them: nothing is written.
    Fd ro(::open((dir / "a").c_str(), O_RDONLY));
    const int mixed[] = {b.fd, ro.fd};
    const ByteSpan other[] = {second, second};
    auto r = writeWholeFds(mixed, other);
    REQUIRE_FALSE(r);
    CHECK(r.error().kind == CacheError::Kind::kBadAccessMode);
    CHECK(test::readFile(dir / "b") == kPayload);
}
