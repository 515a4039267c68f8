#pragma once
// The persistent {token -> hash} map of the compilation-caching document: one file in the state
// directory, replaced atomically (temp file, fsync, rename, fsync directory) under an exclusive
// file lock, re-read on every operation so several processes sharing it see each other's
// entries. Bounded, least-recently-used entries evicted first. Format: docs/caching.md.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "npu/cache/error.h"
#include "npu/cache/hash.h"

namespace npu::cache {

inline constexpr const char* kTokenMapFileName = "token_map.bin";
inline constexpr uint32_t kTokenMapFormatVersion = 1;
inline constexpr size_t kDefaultMaxEntries = 1024;
inline constexpr size_t kMaxMapEntriesLimit = 65536;  // upper bound of maxEntries and of a file

// What the caller records with a token.
struct StoreInfo {
    uint64_t modelBytes = 0;  // total size of the model-cache buffers
    uint64_t dataBytes = 0;   // total size of the data-cache buffers
    std::string driverVersion;
    std::string firmwareVersion;
};

struct TokenMapEntry {
    Token token{};
    Hash hash{};
    uint64_t modelBytes = 0;
    uint64_t dataBytes = 0;
    uint64_t createdNs = 0;   // CLOCK_REALTIME, ns since the epoch
    uint64_t lastUsedNs = 0;  // CLOCK_REALTIME, ns since the epoch
    uint64_t lastUseSeq = 0;  // LRU order: the map's use counter at the last store/validate
    std::string driverVersion;
    std::string firmwareVersion;
};

struct TokenMapOptions {
    // The map file. Empty: <stateDirectory>/token_map.bin, where an empty stateDirectory means
    // defaultStateDirectory(). The lock file is <path>.lock.
    std::string path;
    std::string stateDirectory;
    size_t maxEntries = kDefaultMaxEntries;  // 1 .. kMaxMapEntriesLimit
    std::chrono::milliseconds lockTimeout{5000};
    // A successful validate() makes the entry most recently used, which costs one map write
    // (skipped when it already is the most recent). false: validate() only reads.
    bool touchOnValidate = true;
    // When both are set, open() erases entries recorded under other versions (the map is
    // "reinitialized upon driver update"; their hashes could not validate anyway).
    std::string currentDriverVersion;
    std::string currentFirmwareVersion;
    // Called when a corrupt, truncated or wrong-version map file was found and replaced by an
    // empty map (the bad file is kept as <path>.corrupt). Default: one line on stderr.
    std::function<void(const CacheError&)> onRecovery;
};

class TokenMap {
public:
    static Result<std::unique_ptr<TokenMap>> open(TokenMapOptions options);

    // Records token -> hash (replacing an entry with the same token); evicts the least recently
    // used entries beyond maxEntries.
    Result<void> store(const Token& token, const Hash& hash, const StoreInfo& info);
    // true only when the token is present and its hash equals `hash` (constant-time compare).
    Result<bool> validate(const Token& token, const Hash& hash);
    // The entry of `token`, if any (no LRU update).
    Result<std::optional<TokenMapEntry>> find(const Token& token);
    // true if the token was present.
    Result<bool> erase(const Token& token);
    // Every entry, most recently used first.
    Result<std::vector<TokenMapEntry>> entries();
    Result<void> clear();
    // Erases entries whose versions differ from the given ones; returns how many.
    Result<size_t> purgeOtherVersions(const std::string& driverVersion, const std::string& firmwareVersion);

    const std::string& path() const { return path_; }
    // How many times this object found a bad map file and reset it.
    uint64_t recoveries() const { return recoveries_.load(); }

    // Parses a map file image; exposed for tests and the `npu cache` tool.
    struct Image {
        uint64_t useCounter = 0;
        std::vector<TokenMapEntry> entries;
    };
    static Result<Image> parse(std::span<const uint8_t> bytes, const std::string& where);
    static std::vector<uint8_t> serialize(const Image& image);

private:
    explicit TokenMap(TokenMapOptions options, std::string path);
    // Under the lock: reads the file (resetting a bad one), runs `body`, and writes the image
    // back when body set `dirty`.
    Result<void> transact(const std::function<Result<void>(Image& image, bool& dirty)>& body);
    Result<Image> readLocked();
    Result<void> writeLocked(const Image& image);

    TokenMapOptions options_;
    std::string path_;
    std::string lockPath_;
    std::atomic<uint64_t> recoveries_{0};
};

}  // namespace npu::cache
