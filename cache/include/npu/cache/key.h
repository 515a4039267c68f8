#pragma once
// The cache key: a keyed BLAKE2b of the driver and firmware version strings under a
// per-installation random secret. A driver or firmware update changes the key, so every hash
// recorded under the old key stops validating: old caches are invalidated by construction.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "npu/cache/error.h"

namespace npu::cache {

inline constexpr size_t kSecretBytes = 32;  // crypto_kdf_KEYBYTES
inline constexpr size_t kKeyBytes = 32;     // a crypto_generichash key
inline constexpr size_t kMaxVersionBytes = 256;
inline constexpr const char* kSecretFileName = "secret.key";

// Makes libsodium usable; every public entry point of cache/ calls it (idempotent, thread-safe).
Result<void> initSodium();

// $XDG_STATE_HOME/npu-stack if XDG_STATE_HOME is an absolute path, else $HOME/.local/state/npu-stack
// (HOME from the environment, else from the password database).
Result<std::string> defaultStateDirectory();

// Creates `path` and its missing parents, each new one with `mode`. An existing path must be a
// directory.
Result<void> ensureDirectory(const std::string& path, unsigned mode = 0700);

// Reads `<stateDirectory>/secret.key`, creating it first if it does not exist (random bytes,
// mode 0600, fsynced, published with link() so a concurrent creator's secret wins and is read).
// Rejects a file that is not a regular file owned by this user, has group/other permission bits,
// or is not exactly kSecretBytes long.
Result<std::array<uint8_t, kSecretBytes>> loadOrCreateSecret(const std::string& stateDirectory);

class CacheKey {
public:
    // Derives the key from a secret and the two versions (each non-empty, <= kMaxVersionBytes).
    static Result<CacheKey> derive(std::span<const uint8_t, kSecretBytes> secret,
                                   std::string_view driverVersion, std::string_view firmwareVersion);
    // loadOrCreateSecret(stateDirectory, or defaultStateDirectory() when empty) + derive().
    static Result<CacheKey> load(const std::string& stateDirectory, std::string_view driverVersion,
                                 std::string_view firmwareVersion);

    CacheKey(const CacheKey&) = default;
    CacheKey& operator=(const CacheKey&) = default;
    ~CacheKey();

    std::span<const uint8_t, kKeyBytes> bytes() const { return bytes_; }
    const std::string& driverVersion() const { return driverVersion_; }
    const std::string& firmwareVersion() const { return firmwareVersion_; }

private:
    CacheKey() = default;
    std::array<uint8_t, kKeyBytes> bytes_{};
    std::string driverVersion_;
    std::string firmwareVersion_;
};

}  // namespace npu::cache
