// TokenMap across processes: a writer SIGKILLed mid-write never leaves a corrupt map, and two
// processes storing concurrently into one map lose nothing.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <thread>

#include "npu/cache/token_map.h"
#include "test_support.h"

using namespace npu::cache;
using test::hashOf;
using test::TempDir;
using test::tokenOf;

namespace {

constexpr uint8_t kBaseTag = 1;
constexpr uint8_t kChildTag = 2;

TokenMapOptions options(const TempDir& dir, std::vector<CacheError>* recoveries = nullptr) {
    TokenMapOptions o;
    o.stateDirectory = dir.path();
    o.maxEntries = 4096;
    if (recoveries) o.onRecovery = [recoveries](const CacheError& e) { recoveries->push_back(e); };
    return o;
}

}  // namespace

TEST_CASE("a writer killed at a random point leaves the old or the new map, never a corrupt one") {
    TempDir dir;
    constexpr uint32_t kBaseEntries = 400;  // makes each write long enough to be interrupted
    {
        TokenMap::Image image;
        for (uint32_t i = 0; i < kBaseEntries; ++i) {
            TokenMapEntry e;
            e.token = tokenOf(i, kBaseTag);
            e.hash = hashOf(i);
            e.lastUseSeq = ++image.useCounter;
            e.driverVersion = std::string(40, 'd');
            e.firmwareVersion = std::string(40, 'f');
            image.entries.push_back(e);
        }
        test::writeFile(dir / kTokenMapFileName, TokenMap::serialize(image));
    }
    std::mt19937 rng(12345);
    uint32_t next = 0;  // the child's next token index; its tokens must always form a prefix
    for (int round = 0; round < 8; ++round) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            auto map = TokenMap::open(options(dir));
            if (!map) ::_exit(3);
            for (uint32_t i = next;; ++i) {
                if (!(*map)->store(tokenOf(i, kChildTag), hashOf(i), StoreInfo{1, 1, "drv", "fw"}))
                    ::_exit(4);
            }
        }
        std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 30000));
        REQUIRE(::kill(pid, SIGKILL) == 0);
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        REQUIRE(WIFSIGNALED(status));  // the child was still writing, not failing

        std::vector<CacheError> recoveries;
        auto map = TokenMap::open(options(dir, &recoveries));
        REQUIRE(map);
        CHECK(recoveries.empty());
        CHECK((*map)->recoveries() == 0);
        auto parsed = TokenMap::parse(test::readFile(dir / kTokenMapFileName), "map");
        REQUIRE(parsed);
        auto entries = (*map)->entries().value();
        uint32_t base = 0, child = 0;
        for (const auto& e : entries) (e.token[0] == kBaseTag ? base : child)++;
        CHECK(base == kBaseEntries);
        // Exactly tokens 0..child-1 of the child: each completed store is all there, in order.
        for (uint32_t i = 0; i < child; ++i)
            CHECK((*map)->validate(tokenOf(i, kChildTag), hashOf(i)).value());
        CHECK_FALSE((*map)->find(tokenOf(child, kChildTag)).value());
        CHECK(child >= next);
        next = child;
    }
}

TEST_CASE("two processes storing into one map concurrently see each other's entries") {
    TempDir dir;
    REQUIRE(TokenMap::open(options(dir)));
    constexpr uint32_t kPerProcess = 30;
    std::vector<pid_t> pids;
    for (uint8_t tag = 10; tag < 12; ++tag) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            auto map = TokenMap::open(options(dir));
            if (!map) ::_exit(3);
            for (uint32_t i = 0; i < kPerProcess; ++i) {
                if (!(*map)->store(tokenOf(i, tag), hashOf(i), StoreInfo{1, 1, "drv", "fw"})) ::_exit(4);
            }
            ::_exit(0);
        }
        pids.push_back(pid);
    }
    for (pid_t pid : pids) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    auto map = TokenMap::open(options(dir)).value();
    CHECK(map->entries().value().size() == 2 * kPerProcess);
    for (uint8_t tag = 10; tag < 12; ++tag) {
        for (uint32_t i = 0; i < kPerProcess; ++i) CHECK(map->validate(tokenOf(i, tag), hashOf(i)).value());
    }
}
