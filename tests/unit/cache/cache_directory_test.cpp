// CacheDirectory: the driver-managed cache (put/get/evict/verify/clear).
#include "npu/cache/cache_directory.h"

#include <catch2/catch.hpp>

#include "test_support.h"

using namespace npu::cache;
using test::TempDir;

namespace {

const std::vector<uint8_t> kChecksumA = {1, 2, 3, 4};
const std::vector<uint8_t> kChecksumB = {5, 6, 7, 8};

CompilationKey compilation(const std::vector<uint8_t>& checksum, int32_t preference = 1,
                           std::string_view device = "npu0") {
    return CompilationKey{checksum, preference, device};
}

CacheKey key(const char* driver = "drv-1") {
    return CacheKey::derive(test::fixedSecret(4), driver, "fw-1").value();
}

std::unique_ptr<CacheDirectory> openDir(const TempDir& dir, size_t maxEntries = 16,
                                        uint64_t maxBytes = 1 << 20, const char* driver = "drv-1") {
    CacheDirectoryOptions o;
    o.root = dir / "cache";
    o.maxEntries = maxEntries;
    o.maxTotalBytes = maxBytes;
    auto d = CacheDirectory::open(key(driver), o);
    REQUIRE(d);
    return std::move(*d);
}

std::vector<uint8_t> blob(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i);
    return v;
}

size_t filesIn(const std::string& dir) {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        (void)e;
        ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("put then get returns the same buffers; other keys miss") {
    TempDir dir;
    auto cache = openDir(dir);
    const auto model = blob(100, 1), data = blob(50, 2);
    REQUIRE(cache->put(compilation(kChecksumA), model, data));
    auto hit = cache->get(compilation(kChecksumA)).value();
    REQUIRE(hit);
    CHECK(hit->modelCache == model);
    CHECK(hit->dataCache == data);
    CHECK_FALSE(cache->get(compilation(kChecksumB)).value());
    CHECK_FALSE(cache->get(compilation(kChecksumA, 2)).value());          // other preference
    CHECK_FALSE(cache->get(compilation(kChecksumA, 1, "npu1")).value());  // other device
    // Replacing an entry.
    REQUIRE(cache->put(compilation(kChecksumA), data, model));
    CHECK(cache->get(compilation(kChecksumA)).value()->modelCache == data);
    auto entries = cache->list().value();
    REQUIRE(entries.size() == 1);
    CHECK(entries[0].name == toHex(CacheDirectory::entryToken(compilation(kChecksumA))));
    CHECK(entries[0].record.modelBytes == data.size());
    CHECK(filesIn(cache->root() + "/entries") == 2);
    // Empty buffers are a valid entry.
    REQUIRE(cache->put(compilation(kChecksumB), {}, {}));
    auto empty = cache->get(compilation(kChecksumB)).value();
    REQUIRE(empty);
    CHECK(empty->modelCache.empty());
}

TEST_CASE("a modified, swapped or missing cache file is a miss, and the entry is freed") {
    TempDir dir;
    auto cache = openDir(dir);
    REQUIRE(cache->put(compilation(kChecksumA), blob(64, 1), blob(32, 2)));
    REQUIRE(cache->put(compilation(kChecksumB), blob(64, 3), blob(32, 4)));
    const std::string a =
        cache->root() + "/entries/" + toHex(CacheDirectory::entryToken(compilation(kChecksumA)));
    const std::string b =
        cache->root() + "/entries/" + toHex(CacheDirectory::entryToken(compilation(kChecksumB)));
    SECTION("a flipped byte in the model cache") {
        auto bytes = test::readFile(a + ".model");
        bytes[10] ^= 1;
        test::writeFile(a + ".model", bytes);
    }
    SECTION("the data cache extended") {
        auto bytes = test::readFile(a + ".data");
        bytes.push_back(0);
        test::writeFile(a + ".data", bytes);
    }
    SECTION("files of another entry swapped in") {
        test::writeFile(a + ".model", test::readFile(b + ".model"));
        test::writeFile(a + ".data", test::readFile(b + ".data"));
    }
    SECTION("model and data swapped") {
        const auto model = test::readFile(a + ".model");
        test::writeFile(a + ".model", test::readFile(a + ".data"));
        test::writeFile(a + ".data", model);
    }
    SECTION("a file missing") {
        std::filesystem::remove(a + ".data");
    }
    auto report = cache->verify(false).value();
    CHECK(report.good == 1);
    REQUIRE(report.bad.size() == 1);
    CHECK(report.bad[0].name == toHex(CacheDirectory::entryToken(compilation(kChecksumA))));
    CHECK(report.removed == 0);
    CHECK_FALSE(cache->get(compilation(kChecksumA)).value());
    CHECK(cache->list().value().size() == 1);
    CHECK_FALSE(std::filesystem::exists(a + ".model"));
    CHECK(cache->get(compilation(kChecksumB)).value());
}

TEST_CASE("verify(true) removes bad entries") {
    TempDir dir;
    auto cache = openDir(dir);
    REQUIRE(cache->put(compilation(kChecksumA), blob(8, 1), blob(8, 2)));
    const std::string a =
        cache->root() + "/entries/" + toHex(CacheDirectory::entryToken(compilation(kChecksumA)));
    test::writeFile(a + ".model", blob(8, 9));
    auto report = cache->verify(true).value();
    CHECK(report.bad.size() == 1);
    CHECK(report.removed == 1);
    CHECK(cache->list().value().empty());
    CHECK(filesIn(cache->root() + "/entries") == 0);
}

TEST_CASE("the entry count and total size are bounded; least recently used go first") {
    TempDir dir;
    const std::vector<std::vector<uint8_t>> checksums = {{1}, {2}, {3}, {4}};
    SECTION("by count") {
        auto cache = openDir(dir, 3);
        for (int i = 0; i < 3; ++i) REQUIRE(cache->put(compilation(checksums[i]), blob(10, 1), blob(10, 2)));
        REQUIRE(cache->get(compilation(checksums[0])).value());  // 0 becomes most recent
        REQUIRE(cache->put(compilation(checksums[3]), blob(10, 1), blob(10, 2)));
        CHECK(cache->list().value().size() == 3);
        CHECK(cache->get(compilation(checksums[0])).value());
        CHECK_FALSE(cache->get(compilation(checksums[1])).value());
        CHECK(filesIn(cache->root() + "/entries") == 6);  // the evicted entry's files are freed
    }
    SECTION("by bytes") {
        auto cache = openDir(dir, 16, 100);
        for (int i = 0; i < 3; ++i) REQUIRE(cache->put(compilation(checksums[i]), blob(20, 1), blob(10, 2)));
        REQUIRE(cache->put(compilation(checksums[3]), blob(20, 1), blob(10, 2)));  // 120 > 100
        auto entries = cache->list().value();
        CHECK(entries.size() == 3);
        CHECK_FALSE(cache->get(compilation(checksums[0])).value());
        CHECK(filesIn(cache->root() + "/entries") == 6);
        auto tooBig = cache->put(compilation(checksums[0]), blob(101, 1), {});
        REQUIRE_FALSE(tooBig);
        CHECK(tooBig.error().kind == CacheError::Kind::kTooLarge);
    }
}

TEST_CASE("remove, clear, persistence and a driver update") {
    TempDir dir;
    {
        auto cache = openDir(dir);
        REQUIRE(cache->put(compilation(kChecksumA), blob(8, 1), blob(8, 2)));
        REQUIRE(cache->put(compilation(kChecksumB), blob(8, 3), blob(8, 4)));
        CHECK(cache->remove(compilation(kChecksumB)).value());
        CHECK_FALSE(cache->remove(compilation(kChecksumB)).value());
    }
    {
        auto cache = openDir(dir);  // same versions: the entry survived
        CHECK(cache->get(compilation(kChecksumA)).value());
        REQUIRE(cache->put(compilation(kChecksumB), blob(8, 3), blob(8, 4)));
        REQUIRE(cache->clear());
        CHECK(cache->list().value().empty());
        CHECK(filesIn(cache->root() + "/entries") == 0);
        REQUIRE(cache->put(compilation(kChecksumA), blob(8, 1), blob(8, 2)));
    }
    auto updated = openDir(dir, 16, 1 << 20, "drv-2");  // a driver update drops the old entries
    CHECK(updated->list().value().empty());
    CHECK(filesIn(updated->root() + "/entries") == 0);
    CHECK_FALSE(updated->get(compilation(kChecksumA)).value());
}

TEST_CASE(
    "a directory written under another key (another state dir's secret) is reported as such, not as "
    "tampering") {
    TempDir dir;
    CacheDirectoryOptions o;
    o.root = dir / "cache";
    {
        auto cache = CacheDirectory::open(key(), o).value();
        REQUIRE(cache->put(compilation(kChecksumA), blob(100, 1), blob(50, 2)));
        CHECK_FALSE(cache->writtenUnderAnotherKey());
    }
    const CacheKey other = CacheKey::derive(test::fixedSecret(9), "drv-1", "fw-1").value();
    auto foreign = CacheDirectory::open(other, o).value();
    CHECK(foreign->writtenUnderAnotherKey());
    auto report = foreign->verify(false).value();
    REQUIRE(report.bad.size() == 1);
    CHECK_THAT(report.bad[0].reason, Catch::Contains("another cache key") && Catch::Contains("not tampered"));

    // A modified file under our own key is still reported as modified content.
    auto own = CacheDirectory::open(key(), o).value();
    CHECK_FALSE(own->writtenUnderAnotherKey());
    {
        std::ofstream f(
            own->root() + "/entries/" + toHex(CacheDirectory::entryToken(compilation(kChecksumA))) + ".model",
            std::ios::binary | std::ios::trunc);
        f << "tampered";
    }
    auto tampered = own->verify(false).value();
    REQUIRE(tampered.bad.size() == 1);
    CHECK_THAT(tampered.bad[0].reason, Catch::Contains("does not match the recorded hash"));

    // Storing under the other key takes the directory over: the old entries go, the new one hits.
    REQUIRE(foreign->put(compilation(kChecksumB), blob(10, 3), blob(10, 4)));
    CHECK_FALSE(foreign->writtenUnderAnotherKey());
    CHECK(foreign->get(compilation(kChecksumB)).value().has_value());
    CHECK(foreign->list().value().size() == 1);
}

TEST_CASE("a stray folder in the cache directory does not disable caching") {
    TempDir dir;
    CacheDirectoryOptions o;
    o.root = dir / "cache";
    std::filesystem::create_directories(o.root + "/entries/stray-folder/inner");
    std::filesystem::create_directories(o.root + "/another-stray");
    auto cache = CacheDirectory::open(key(), o);
    REQUIRE(cache);
    REQUIRE((*cache)->put(compilation(kChecksumA), blob(100, 1), blob(50, 2)));
    CHECK((*cache)->get(compilation(kChecksumA)).value().has_value());
    CHECK((*cache)->clear());
    CHECK(std::filesystem::is_directory(o.root + "/entries/stray-folder"));
}
