#pragma once
// A driver-managed compilation cache for callers that pass no cache files (the nnCache case of
// the compilation-caching document): entries are keyed by the model checksum, the execution
// preference and the device name, stored under a root directory the driver owns, bounded in count
// and bytes with least-recently-used eviction, and verified against a TokenMap by hashing.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "npu/cache/error.h"
#include "npu/cache/hash.h"
#include "npu/cache/key.h"
#include "npu/cache/token_map.h"

namespace npu::cache {

// What identifies a compilation. executionPreference is the HAL ExecutionPreference value.
struct CompilationKey {
    std::span<const uint8_t> modelChecksum;
    int32_t executionPreference = 0;
    std::string_view deviceName;
};

struct CacheDirectoryOptions {
    // Empty: <stateDirectory>/compilations (empty stateDirectory: defaultStateDirectory()).
    std::string root;
    std::string stateDirectory;
    size_t maxEntries = 256;                     // 1 .. kMaxMapEntriesLimit
    uint64_t maxTotalBytes = uint64_t{1} << 30;  // model + data bytes of all entries
    std::chrono::milliseconds lockTimeout{5000};
    std::function<void(const CacheError&)> onRecovery;  // passed to the TokenMap
};

struct CachedCompilation {
    std::vector<uint8_t> modelCache;
    std::vector<uint8_t> dataCache;
};

struct DirectoryEntry {
    std::string name;  // hex of the entry token; files entries/<name>.model and .data
    TokenMapEntry record;
};

struct VerifyReport {
    size_t good = 0;
    struct Bad {
        std::string name;
        std::string reason;
    };
    std::vector<Bad> bad;
    size_t removed = 0;  // bad entries removed (verify(true))
};

class CacheDirectory {
public:
    static Result<std::unique_ptr<CacheDirectory>> open(const CacheKey& key, CacheDirectoryOptions options);

    // BLAKE2b-256 of the framed checksum, preference and device name: the entry's token and name.
    static Token entryToken(const CompilationKey& compilation);

    // Stores a compilation, replacing an older one with the same key, then evicts least recently
    // used entries beyond the limits and removes files no entry needs any more.
    Result<void> put(const CompilationKey& compilation, std::span<const uint8_t> modelCache,
                     std::span<const uint8_t> dataCache);
    // The cached compilation, or nullopt on a miss. An entry whose files are missing or do not
    // hash to the recorded value is removed and reported as a miss.
    Result<std::optional<CachedCompilation>> get(const CompilationKey& compilation);
    // Frees one entry; true if it existed.
    Result<bool> remove(const CompilationKey& compilation);
    // Every entry, most recently used first.
    Result<std::vector<DirectoryEntry>> list();
    // Re-hashes every entry's files and checks them against the map; removeBad removes failures.
    // Entries of a directory written under another key (another state directory's secret) are
    // reported as such, not as modified content.
    Result<VerifyReport> verify(bool removeBad);
    // True when the directory's entries were written under another key than ours.
    bool writtenUnderAnotherKey() const { return foreignKey_; }
    // Removes every entry.
    Result<void> clear();

    const std::string& root() const { return root_; }
    TokenMap& tokenMap() { return *map_; }

private:
    CacheDirectory(const CacheKey& key, CacheDirectoryOptions options, std::string root,
                   std::unique_ptr<TokenMap> map);
    std::string filePath(const Token& token, std::string_view suffix) const;
    Result<void> removeFiles(const Token& token);
    Result<std::optional<CachedCompilation>> readEntry(const Token& token);
    Result<void> enforceLimits(const Token& keep);
    Result<void> removeOrphans();
    Result<void> adoptKey();

    static constexpr std::string_view kKeyIdFileName = "key-id";

    CacheKey key_;
    CacheDirectoryOptions options_;
    std::string root_;
    std::string entriesDir_;
    std::string lockPath_;
    std::unique_ptr<TokenMap> map_;
    bool foreignKey_ = false;  // the key-id file names another key
};

}  // namespace npu::cache
