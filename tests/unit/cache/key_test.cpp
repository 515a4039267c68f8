// CacheKey: derivation from the installation secret and the versions; the secret file.
#include "npu/cache/key.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "test_support.h"

using namespace npu::cache;
using npu::cache::test::TempDir;

namespace {

std::array<uint8_t, kKeyBytes> keyBytes(const CacheKey& k) {
    std::array<uint8_t, kKeyBytes> out{};
    std::copy(k.bytes().begin(), k.bytes().end(), out.begin());
    return out;
}

}  // namespace

TEST_CASE("same secret and versions give the same key; other versions another key") {
    const auto secret = test::fixedSecret(1);
    auto a = CacheKey::derive(secret, "driver-1.0", "fw-2.0");
    auto b = CacheKey::derive(secret, "driver-1.0", "fw-2.0");
    auto otherDriver = CacheKey::derive(secret, "driver-1.1", "fw-2.0");
    auto otherFirmware = CacheKey::derive(secret, "driver-1.0", "fw-2.1");
    auto otherSecret = CacheKey::derive(test::fixedSecret(2), "driver-1.0", "fw-2.0");
    // Framing: moving a character between the two version strings changes the key.
    auto shifted = CacheKey::derive(secret, "driver-1.0f", "w-2.0");
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(otherDriver);
    REQUIRE(otherFirmware);
    REQUIRE(otherSecret);
    REQUIRE(shifted);
    CHECK(keyBytes(*a) == keyBytes(*b));
    CHECK(keyBytes(*a) != keyBytes(*otherDriver));
    CHECK(keyBytes(*a) != keyBytes(*otherFirmware));
    CHECK(keyBytes(*a) != keyBytes(*otherSecret));
    CHECK(keyBytes(*a) != keyBytes(*shifted));
    CHECK(a->driverVersion() == "driver-1.0");
    CHECK(a->firmwareVersion() == "fw-2.0");
}

TEST_CASE("empty or oversized versions are rejected") {
    const auto secret = test::fixedSecret(1);
    auto empty = CacheKey::derive(secret, "", "fw");
    REQUIRE_FALSE(empty);
    CHECK(empty.error().kind == CacheError::Kind::kInvalidArgument);
    CHECK(empty.error().message.find("driver version") != std::string::npos);
    auto huge = CacheKey::derive(secret, "d", std::string(kMaxVersionBytes + 1, 'x'));
    REQUIRE_FALSE(huge);
    CHECK(huge.error().message.find("firmware version") != std::string::npos);
}

TEST_CASE("the secret is created once with mode 0600 and reused") {
    TempDir dir;
    const std::string state = dir / "state/nested";
    auto k1 = CacheKey::load(state, "d", "f");
    REQUIRE(k1);
    struct stat st {};
    REQUIRE(::stat((state + "/" + kSecretFileName).c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_size == static_cast<off_t>(kSecretBytes));
    REQUIRE(::stat(state.c_str(), &st) == 0);
    CHECK((st.st_mode & 077) == 0);
    auto k2 = CacheKey::load(state, "d", "f");
    REQUIRE(k2);
    CHECK(keyBytes(*k1) == keyBytes(*k2));
    // Another installation (state directory) has another secret, hence another key.
    auto k3 = CacheKey::load(dir / "other", "d", "f");
    REQUIRE(k3);
    CHECK(keyBytes(*k1) != keyBytes(*k3));
}

TEST_CASE("the default state directory follows XDG_STATE_HOME, then HOME") {
    TempDir dir;
    const char* oldXdg = std::getenv("XDG_STATE_HOME");
    const std::string savedXdg = oldXdg ? oldXdg : "";
    ::setenv("XDG_STATE_HOME", dir.path().c_str(), 1);
    auto d = defaultStateDirectory();
    REQUIRE(d);
    CHECK(*d == dir.path() + "/npu-stack");
    auto k = CacheKey::load("", "d", "f");
    REQUIRE(k);
    CHECK(::access((dir.path() + "/npu-stack/" + kSecretFileName).c_str(), F_OK) == 0);
    ::setenv("XDG_STATE_HOME", "relative/ignored", 1);
    const char* oldHome = std::getenv("HOME");
    const std::string savedHome = oldHome ? oldHome : "";
    ::setenv("HOME", dir.path().c_str(), 1);
    d = defaultStateDirectory();
    REQUIRE(d);
    CHECK(*d == dir.path() + "/.local/state/npu-stack");
    if (oldXdg)
        ::setenv("XDG_STATE_HOME", savedXdg.c_str(), 1);
    else
        ::unsetenv("XDG_STATE_HOME");
    if (oldHome)
        ::setenv("HOME", savedHome.c_str(), 1);
    else
        ::unsetenv("HOME");
}

TEST_CASE("a secret file with the wrong size or permissions is rejected") {
    TempDir dir;
    const std::string path = dir / kSecretFileName;
    SECTION("too short") {
        test::writeFile(path, std::vector<uint8_t>(kSecretBytes - 1, 1));
        ::chmod(path.c_str(), 0600);
        auto k = CacheKey::load(dir.path(), "d", "f");
        REQUIRE_FALSE(k);
        CHECK(k.error().kind == CacheError::Kind::kBadSecret);
        CHECK(k.error().message.find(path) != std::string::npos);
        CHECK(k.error().message.find("31 bytes") != std::string::npos);
    }
    SECTION("group/other readable") {
        test::writeFile(path, std::vector<uint8_t>(kSecretBytes, 1));
        ::chmod(path.c_str(), 0644);
        auto k = CacheKey::load(dir.path(), "d", "f");
        REQUIRE_FALSE(k);
        CHECK(k.error().kind == CacheError::Kind::kBadSecret);
        CHECK(k.error().message.find("0644") != std::string::npos);
    }
    SECTION("a symbolic link") {
        test::writeFile(dir / "elsewhere", std::vector<uint8_t>(kSecretBytes, 1));
        ::chmod((dir / "elsewhere").c_str(), 0600);
        REQUIRE(::symlink((dir / "elsewhere").c_str(), path.c_str()) == 0);
        auto k = CacheKey::load(dir.path(), "d", "f");
        REQUIRE_FALSE(k);
        CHECK(k.error().kind == CacheError::Kind::kBadSecret);
    }
    SECTION("a directory") {
        REQUIRE(::mkdir(path.c_str(), 0700) == 0);
        auto k = CacheKey::load(dir.path(), "d", "f");
        REQUIRE_FALSE(k);
        CHECK(k.error().kind == CacheError::Kind::kBadSecret);
    }
}

TEST_CASE("concurrent first use in several processes agrees on one secret") {
    TempDir dir;
    constexpr int kChildren = 4;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::vector<pid_t> pids;
    for (int i = 0; i < kChildren; ++i) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            auto k = CacheKey::load(dir.path(), "d", "f");
            if (!k) ::_exit(1);
            const bool ok = ::write(fds[1], k->bytes().data(), kKeyBytes) == static_cast<ssize_t>(kKeyBytes);
            ::_exit(ok ? 0 : 2);
        }
        pids.push_back(pid);
    }
    ::close(fds[1]);
    for (pid_t pid : pids) {
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    std::vector<std::array<uint8_t, kKeyBytes>> keys(kChildren);
    for (auto& k : keys) REQUIRE(::read(fds[0], k.data(), k.size()) == static_cast<ssize_t>(k.size()));
    ::close(fds[0]);
    for (const auto& k : keys) CHECK(k == keys[0]);
    // No temp files of the losing creators are left behind.
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
        (void)e;
        ++files;
    }
    CHECK(files == 1);
}
