// TokenMap: store/validate/erase, persistence, bad files, LRU bound, threads, versions.
#include "npu/cache/token_map.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <thread>

#include "test_support.h"

using namespace npu::cache;
using test::hashOf;
using test::TempDir;
using test::tokenOf;

namespace {

struct Recorder {
    std::vector<CacheError> errors;
    std::function<void(const CacheError&)> callback() {
        return [this](const CacheError& e) { errors.push_back(e); };
    }
};

std::unique_ptr<TokenMap> openMap(const TempDir& dir, Recorder* rec = nullptr, size_t maxEntries = 1024,
                                  bool touch = true) {
    TokenMapOptions o;
    o.stateDirectory = dir.path();
    o.maxEntries = maxEntries;
    o.touchOnValidate = touch;
    if (rec) o.onRecovery = rec->callback();
    auto m = TokenMap::open(std::move(o));
    REQUIRE(m);
    return std::move(*m);
}

StoreInfo info(uint64_t model = 10, uint64_t data = 20) {
    return StoreInfo{model, data, "drv", "fw"};
}

size_t countEntries(TokenMap& m) {
    auto e = m.entries();
    REQUIRE(e);
    return e->size();
}

}  // namespace

TEST_CASE("store, validate, erase") {
    TempDir dir;
    auto map = openMap(dir);
    CHECK(map->path() == dir / kTokenMapFileName);
    REQUIRE(map->store(tokenOf(1), hashOf(1), info(100, 200)));
    CHECK(map->validate(tokenOf(1), hashOf(1)).value());
    CHECK_FALSE(map->validate(tokenOf(1), hashOf(2)).value());  // wrong hash
    CHECK_FALSE(map->validate(tokenOf(2), hashOf(1)).value());  // unknown token
    auto e = map->find(tokenOf(1)).value();
    REQUIRE(e);
    CHECK(e->modelBytes == 100);
    CHECK(e->dataBytes == 200);
    CHECK(e->driverVersion == "drv");
    CHECK(e->firmwareVersion == "fw");
    CHECK(e->createdNs > 0);
    // Storing the same token again replaces its hash.
    REQUIRE(map->store(tokenOf(1), hashOf(9), info()));
    CHECK_FALSE(map->validate(tokenOf(1), hashOf(1)).value());
    CHECK(map->validate(tokenOf(1), hashOf(9)).value());
    CHECK(countEntries(*map) == 1);
    CHECK(map->erase(tokenOf(1)).value());
    CHECK_FALSE(map->erase(tokenOf(1)).value());
    CHECK_FALSE(map->validate(tokenOf(1), hashOf(9)).value());
    REQUIRE(map->store(tokenOf(3), hashOf(3), info()));
    REQUIRE(map->clear());
    CHECK(countEntries(*map) == 0);
    struct stat st {};
    REQUIRE(::stat(map->path().c_str(), &st) == 0);
    CHECK((st.st_mode & 077) == 0);
}

TEST_CASE("entries persist across reopening, and two open maps see each other") {
    TempDir dir;
    {
        auto map = openMap(dir);
        for (uint32_t i = 0; i < 10; ++i) REQUIRE(map->store(tokenOf(i), hashOf(i), info(i, i)));
    }
    auto a = openMap(dir);
    auto b = openMap(dir);
    for (uint32_t i = 0; i < 10; ++i) CHECK(a->validate(tokenOf(i), hashOf(i)).value());
    REQUIRE(b->store(tokenOf(50), hashOf(50), info()));
    CHECK(a->validate(tokenOf(50), hashOf(50)).value());
    REQUIRE(a->erase(tokenOf(0)));
    CHECK_FALSE(b->validate(tokenOf(0), hashOf(0)).value());
}

TEST_CASE("the serialized image round-trips") {
    TokenMap::Image image;
    image.useCounter = 77;
    TokenMapEntry e;
    e.token = tokenOf(5);
    e.hash = hashOf(5);
    e.modelBytes = 1;
    e.dataBytes = 2;
    e.createdNs = 3;
    e.lastUsedNs = 4;
    e.lastUseSeq = 77;
    e.driverVersion = "driver";
    e.firmwareVersion = "";
    image.entries.push_back(e);
    const auto bytes = TokenMap::serialize(image);
    auto back = TokenMap::parse(bytes, "memory");
    REQUIRE(back);
    CHECK(back->useCounter == 77);
    REQUIRE(back->entries.size() == 1);
    CHECK(back->entries[0].token == e.token);
    CHECK(back->entries[0].hash == e.hash);
    CHECK(back->entries[0].lastUsedNs == 4);
    CHECK(back->entries[0].driverVersion == "driver");
    // Every truncation is detected, never partially trusted.
    for (size_t n = 0; n < bytes.size(); ++n) {
        auto cut = TokenMap::parse(std::span(bytes).first(n), "memory");
        REQUIRE_FALSE(cut);
        CHECK(cut.error().kind == CacheError::Kind::kCorrupt);
    }
    // Every single-bit flip is detected.
    for (size_t i = 0; i < bytes.size(); ++i) {
        auto flipped = bytes;
        flipped[i] ^= 0x10;
        CHECK_FALSE(TokenMap::parse(flipped, "memory"));
    }
}

TEST_CASE("a corrupt, truncated or wrong-version map file is reported and reset") {
    TempDir dir;
    {
        auto map = openMap(dir);
        for (uint32_t i = 0; i < 3; ++i) REQUIRE(map->store(tokenOf(i), hashOf(i), info()));
    }
    const std::string path = dir / kTokenMapFileName;
    auto good = test::readFile(path);
    std::string expect;
    SECTION("a flipped byte") {
        auto bad = good;
        bad[40] ^= 0xFF;
        test::writeFile(path, bad);
        expect = "integrity check failed";
    }
    SECTION("truncated") {
        test::writeFile(
            path, std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(good.size() / 2)));
        expect = "integrity check failed";
    }
    SECTION("empty") {
        test::writeFile(path, {});
        expect = "bad magic";
    }
    SECTION("not a map") {
        test::writeFile(path, std::vector<uint8_t>(300, 'x'));
        expect = "bad magic";
    }
    SECTION("extended") {
        auto bad = good;
        bad.push_back(0);
        test::writeFile(path, bad);
        expect = "integrity check failed";
    }
    SECTION("another format version, with a valid checksum") {
        auto image = TokenMap::parse(good, path);
        REQUIRE(image);
        auto bytes = TokenMap::serialize(*image);
        bytes[8] = 2;  // format version field (u32 LE at offset 8)
        Hash sum{};
        crypto_generichash(sum.data(), sum.size(), bytes.data(), bytes.size() - 32, nullptr, 0);
        std::copy(sum.begin(), sum.end(), bytes.end() - 32);
        test::writeFile(path, bytes);
        expect = "format version 2";
    }
    Recorder rec;
    auto map = openMap(dir, &rec);
    REQUIRE(rec.errors.size() == 1);
    CHECK(rec.errors[0].kind == CacheError::Kind::kCorrupt);
    CHECK(rec.errors[0].message.find(expect) != std::string::npos);
    CHECK(rec.errors[0].message.find(path) != std::string::npos);
    CHECK(map->recoveries() == 1);
    CHECK(countEntries(*map) == 0);
    CHECK_FALSE(map->validate(tokenOf(1), hashOf(1)).value());
    // Replaced by a valid empty map; the bad file is kept for diagnosis.
    CHECK(TokenMap::parse(test::readFile(path), path));
    CHECK(::access((path + ".corrupt").c_str(), F_OK) == 0);
    REQUIRE(map->store(tokenOf(7), hashOf(7), info()));
    CHECK(map->validate(tokenOf(7), hashOf(7)).value());
    CHECK(rec.errors.size() == 1);
}

TEST_CASE("the map is bounded; least recently used entries go first") {
    TempDir dir;
    SECTION("validate makes an entry recent") {
        auto map = openMap(dir, nullptr, 3, true);
        for (uint32_t i = 1; i <= 3; ++i) REQUIRE(map->store(tokenOf(i), hashOf(i), info()));
        CHECK(map->validate(tokenOf(1), hashOf(1)).value());
        REQUIRE(map->store(tokenOf(4), hashOf(4), info()));
        CHECK(countEntries(*map) == 3);
        CHECK(map->validate(tokenOf(1), hashOf(1)).value());
        CHECK_FALSE(map->validate(tokenOf(2), hashOf(2)).value());
        CHECK(map->validate(tokenOf(3), hashOf(3)).value());
        CHECK(map->validate(tokenOf(4), hashOf(4)).value());
        auto e = map->entries().value();  // most recent first
        CHECK(e.front().token == tokenOf(4));
        CHECK(e.back().token == tokenOf(1));
    }
    SECTION("without touchOnValidate, insertion order decides") {
        auto map = openMap(dir, nullptr, 3, false);
        for (uint32_t i = 1; i <= 3; ++i) REQUIRE(map->store(tokenOf(i), hashOf(i), info()));
        const auto before = test::readFile(dir / kTokenMapFileName);
        CHECK(map->validate(tokenOf(1), hashOf(1)).value());
        CHECK(test::readFile(dir / kTokenMapFileName) == before);  // validate did not write
        REQUIRE(map->store(tokenOf(4), hashOf(4), info()));
        CHECK_FALSE(map->validate(tokenOf(1), hashOf(1)).value());
        CHECK(map->validate(tokenOf(2), hashOf(2)).value());
    }
    SECTION("a failed validate does not make an entry recent") {
        auto map = openMap(dir, nullptr, 2, true);
        REQUIRE(map->store(tokenOf(1), hashOf(1), info()));
        REQUIRE(map->store(tokenOf(2), hashOf(2), info()));
        CHECK_FALSE(map->validate(tokenOf(1), hashOf(9)).value());
        REQUIRE(map->store(tokenOf(3), hashOf(3), info()));
        CHECK_FALSE(map->find(tokenOf(1)).value());
    }
}

TEST_CASE("bad options are rejected") {
    TempDir dir;
    TokenMapOptions o;
    o.stateDirectory = dir.path();
    o.maxEntries = 0;
    auto m = TokenMap::open(o);
    REQUIRE_FALSE(m);
    CHECK(m.error().kind == CacheError::Kind::kInvalidArgument);
    CHECK(m.error().message.find("maxEntries 0") != std::string::npos);
    o.maxEntries = 10;
    auto ok = TokenMap::open(o);
    REQUIRE(ok);
    auto tooLong =
        (*ok)->store(tokenOf(1), hashOf(1), StoreInfo{0, 0, std::string(kMaxVersionBytes + 1, 'v'), "f"});
    REQUIRE_FALSE(tooLong);
    CHECK(tooLong.error().kind == CacheError::Kind::kInvalidArgument);
}

TEST_CASE("threads storing concurrently lose no entry") {
    TempDir dir;
    auto shared = openMap(dir);
    constexpr int kThreads = 4;
    constexpr uint32_t kPerThread = 15;
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
            // Half the threads share one TokenMap object, half open their own.
            std::unique_ptr<TokenMap> own;
            TokenMap* map = shared.get();
            if (t % 2 == 1) {
                TokenMapOptions o;
                o.stateDirectory = dir.path();
                auto m = TokenMap::open(o);
                if (!m) {
                    ++failures;
                    return;
                }
                own = std::move(*m);
                map = own.get();
            }
            for (uint32_t i = 0; i < kPerThread; ++i) {
                if (!map->store(tokenOf(i, static_cast<uint8_t>(t)), hashOf(i), info())) ++failures;
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(failures == 0);
    CHECK(countEntries(*shared) == kThreads * kPerThread);
    for (int t = 0; t < kThreads; ++t) {
        for (uint32_t i = 0; i < kPerThread; ++i) {
            CHECK(shared->validate(tokenOf(i, static_cast<uint8_t>(t)), hashOf(i)).value());
        }
    }
}

TEST_CASE("an entry stored under one key does not validate under another version's key") {
    TempDir dir;
    const auto secret = test::fixedSecret(9);
    const CacheKey oldKey = CacheKey::derive(secret, "driver-1", "fw-1").value();
    const CacheKey newDriver = CacheKey::derive(secret, "driver-2", "fw-1").value();
    const CacheKey newFirmware = CacheKey::derive(secret, "driver-1", "fw-2").value();
    const std::vector<uint8_t> model = {1, 2, 3, 4}, data = {5, 6};
    const ByteSpan m[] = {model}, d[] = {data};
    {
        auto map = openMap(dir);
        REQUIRE(map->store(tokenOf(1), hashCacheBuffers(oldKey, m, d),
                           StoreInfo{4, 2, oldKey.driverVersion(), oldKey.firmwareVersion()}));
        CHECK(map->validate(tokenOf(1), hashCacheBuffers(oldKey, m, d)).value());
        CHECK_FALSE(map->validate(tokenOf(1), hashCacheBuffers(newDriver, m, d)).value());
        CHECK_FALSE(map->validate(tokenOf(1), hashCacheBuffers(newFirmware, m, d)).value());
    }
    // Opening the map as the new driver also drops the old version's entries.
    TokenMapOptions o;
    o.stateDirectory = dir.path();
    o.currentDriverVersion = newDriver.driverVersion();
    o.currentFirmwareVersion = newDriver.firmwareVersion();
    auto map = TokenMap::open(o).value();
    CHECK_FALSE(map->find(tokenOf(1)).value());
}

TEST_CASE("a lock held elsewhere makes operations fail after the timeout, not hang") {
    TempDir dir;
    auto map = openMap(dir);
    const std::string lockPath = map->path() + ".lock";
    const int fd = ::open(lockPath.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX) == 0);
    TokenMapOptions o;
    o.stateDirectory = dir.path();
    o.lockTimeout = std::chrono::milliseconds(50);
    auto blocked = TokenMap::open(o);
    REQUIRE_FALSE(blocked);
    CHECK(blocked.error().kind == CacheError::Kind::kTimeout);
    CHECK(blocked.error().message.find(lockPath) != std::string::npos);
    ::close(fd);
    CHECK(TokenMap::open(o));
}

TEST_CASE("a stale temp file from an interrupted write does not affect the map") {
    TempDir dir;
    {
        auto map = openMap(dir);
        REQUIRE(map->store(tokenOf(1), hashOf(1), info()));
    }
    // A writer died after writing part of its replacement: the old map must still be the map.
    test::writeFile(dir / (std::string(kTokenMapFileName) + ".tmp"), std::vector<uint8_t>(37, 0xEE));
    Recorder rec;
    auto map = openMap(dir, &rec);
    CHECK(rec.errors.empty());
    CHECK(map->validate(tokenOf(1), hashOf(1)).value());
    REQUIRE(map->store(tokenOf(2), hashOf(2), info()));
    CHECK(map->validate(tokenOf(1), hashOf(1)).value());
    CHECK(map->validate(tokenOf(2), hashOf(2)).value());
    CHECK_FALSE(std::filesystem::exists(dir / (std::string(kTokenMapFileName) + ".tmp")));
}
