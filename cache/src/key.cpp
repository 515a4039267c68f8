#include "npu/cache/key.h"

#include <fcntl.h>
#include <pwd.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "file_util.h"

namespace npu::cache {

using base::UniqueFd;
using detail::ioError;

Result<void> initSodium() {
    if (::sodium_init() < 0) {
        return cacheError(CacheError::Kind::kIo, "sodium_init() failed: libsodium is unusable");
    }
    return {};
}

Result<std::string> defaultStateDirectory() {
    if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && xdg[0] == '/') {
        return std::string(xdg) + "/npu-stack";
    }
    std::string home;
    if (const char* h = std::getenv("HOME"); h != nullptr && h[0] == '/') {
        home = h;
    } else {
        passwd pw{};
        passwd* found = nullptr;
        char buf[4096];
        if (::getpwuid_r(::geteuid(), &pw, buf, sizeof buf, &found) != 0 || found == nullptr ||
            found->pw_dir == nullptr || found->pw_dir[0] != '/') {
            return cacheError(CacheError::Kind::kInvalidArgument,
                              "no state directory: XDG_STATE_HOME and HOME are unset or relative and "
                              "uid " +
                                  std::to_string(::geteuid()) + " has no home directory");
        }
        home = found->pw_dir;
    }
    return home + "/.local/state/npu-stack";
}

Result<void> ensureDirectory(const std::string& path, unsigned mode) {
    if (path.empty()) return cacheError(CacheError::Kind::kInvalidArgument, "empty directory path");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode)) {
            return cacheError(CacheError::Kind::kInvalidArgument, path + ": exists and is not a directory");
        }
        return {};
    }
    if (errno != ENOENT) return ioError("stat", path, errno);
    const std::string parent = detail::dirName(path);
    if (parent != path) NPU_TRY(ensureDirectory(parent, mode));
    if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) != 0) {
        if (errno == EEXIST) return {};  // a concurrent creator
        return ioError("mkdir", path, errno);
    }
    // Make the new directory's name durable, so files later fsynced in it survive power loss.
    return detail::fsyncDirectory(parent);
}

namespace {

using Secret = std::array<uint8_t, kSecretBytes>;

// Reads and checks an existing secret file. ENOENT is returned as nullopt.
Result<std::optional<Secret>> readSecret(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) {
        if (errno == ENOENT) return std::optional<Secret>{};
        if (errno == ELOOP) {
            return cacheError(CacheError::Kind::kBadSecret,
                              path + ": is a symbolic link; refusing it as the cache secret");
        }
        return ioError("open", path, errno);
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return ioError("fstat", path, errno);
    if (!S_ISREG(st.st_mode)) {
        return cacheError(CacheError::Kind::kBadSecret, path + ": not a regular file");
    }
    if (st.st_uid != ::geteuid()) {
        return cacheError(CacheError::Kind::kBadSecret, path + ": owned by uid " + std::to_string(st.st_uid) +
                                                            ", not by uid " + std::to_string(::geteuid()));
    }
    if ((st.st_mode & 077) != 0) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
        return cacheError(CacheError::Kind::kBadSecret,
                          path + ": mode " + mode + " gives group/other access; must be 0600 (or stricter)");
    }
    if (st.st_size != static_cast<off_t>(kSecretBytes)) {
        return cacheError(CacheError::Kind::kBadSecret, path + ": " + std::to_string(st.st_size) +
                                                            " bytes; a cache secret is exactly " +
                                                            std::to_string(kSecretBytes));
    }
    Secret secret{};
    size_t done = 0;
    while (done < secret.size()) {
        const ssize_t n =
            ::pread(fd.get(), secret.data() + done, secret.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return ioError("pread", path, errno);
        if (n == 0) {
            return cacheError(CacheError::Kind::kBadSecret, path + ": shrank while being read");
        }
        done += static_cast<size_t>(n);
    }
    return std::optional<Secret>(secret);
}

// Writes a fresh secret to a private temp file and publishes it with link(), which fails with
// EEXIST instead of replacing: of several concurrent creators exactly one wins, and nobody ever
// sees a partially written secret under the final name.
Result<void> createSecret(const std::string& path) {
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".tmp.%ld.%08x", static_cast<long>(::getpid()),
                  ::randombytes_random());
    const std::string tmp = path + suffix;
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) return ioError("open", tmp, errno);
    Secret secret{};
    ::crypto_kdf_keygen(secret.data());
    auto written = detail::pwriteAll(fd.get(), secret, 0, tmp);
    ::sodium_memzero(secret.data(), secret.size());
    Result<void> result;
    if (!written) {
        result = std::unexpected(written.error());
    } else if (::fchmod(fd.get(), 0600) != 0) {
        result = ioError("fchmod", tmp, errno);
    } else if (::fsync(fd.get()) != 0) {
        result = ioError("fsync", tmp, errno);
    } else if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
        result = ioError("link", tmp + " -> " + path, errno);
    }
    ::unlink(tmp.c_str());
    if (!result) return result;
    return detail::fsyncDirectory(detail::dirName(path));
}

}  // namespace

Result<std::array<uint8_t, kSecretBytes>> loadOrCreateSecret(const std::string& stateDirectory) {
    NPU_TRY(initSodium());
    NPU_TRY(ensureDirectory(stateDirectory, 0700));
    const std::string path = stateDirectory + "/" + kSecretFileName;
    for (int attempt = 0; attempt < 2; ++attempt) {
        auto existing = NPU_TRY(readSecret(path));
        if (existing) return *existing;
        NPU_TRY(createSecret(path));
    }
    return cacheError(CacheError::Kind::kBadSecret, path + ": created but vanished before it could be read");
}

Result<CacheKey> CacheKey::derive(std::span<const uint8_t, kSecretBytes> secret,
                                  std::string_view driverVersion, std::string_view firmwareVersion) {
    NPU_TRY(initSodium());
    auto checkVersion = [](std::string_view name, std::string_view v) -> Result<void> {
        if (v.empty() || v.size() > kMaxVersionBytes) {
            return cacheError(CacheError::Kind::kInvalidArgument,
                              std::string(name) + " '" + std::string(v.substr(0, 64)) + "' has " +
                                  std::to_string(v.size()) + " bytes; must be 1.." +
                                  std::to_string(kMaxVersionBytes));
        }
        return {};
    };
    NPU_TRY(checkVersion("driver version", driverVersion));
    NPU_TRY(checkVersion("firmware version", firmwareVersion));

    // key = BLAKE2b-256(key = secret, "npu-stack cache key v1\0" || u16le len || driver || u16le len || fw)
    static constexpr char kDomain[] = "npu-stack cache key v1";
    crypto_generichash_state st;
    ::crypto_generichash_init(&st, secret.data(), secret.size(), kKeyBytes);
    ::crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(kDomain), sizeof kDomain);
    for (std::string_view v : {driverVersion, firmwareVersion}) {
        const uint8_t len[2] = {static_cast<uint8_t>(v.size() & 0xff), static_cast<uint8_t>(v.size() >> 8)};
        ::crypto_generichash_update(&st, len, sizeof len);
        ::crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(v.data()), v.size());
    }
    CacheKey key;
    ::crypto_generichash_final(&st, key.bytes_.data(), key.bytes_.size());
    ::sodium_memzero(&st, sizeof st);
    key.driverVersion_ = driverVersion;
    key.firmwareVersion_ = firmwareVersion;
    return key;
}

Result<CacheKey> CacheKey::load(const std::string& stateDirectory, std::string_view driverVersion,
                                std::string_view firmwareVersion) {
    std::string dir = stateDirectory;
    if (dir.empty()) dir = NPU_TRY(defaultStateDirectory());
    auto secret = NPU_TRY(loadOrCreateSecret(dir));
    auto key = derive(secret, driverVersion, firmwareVersion);
    ::sodium_memzero(secret.data(), secret.size());
    return key;
}

CacheKey::~CacheKey() {
    ::sodium_memzero(bytes_.data(), bytes_.size());
}

}  // namespace npu::cache
