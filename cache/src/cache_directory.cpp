#include "npu/cache/cache_directory.h"

#include <dirent.h>
#include <sodium.h>
#include <sys/stat.h>

#include <cerrno>
#include <set>

#include "file_util.h"
#include "npu/cache/fd_io.h"

namespace npu::cache {

namespace {

constexpr std::string_view kModelSuffix = ".model";
constexpr std::string_view kDataSuffix = ".data";

void putLe(crypto_generichash_state& st, uint64_t v, int bytes) {
    uint8_t le[8];
    for (int i = 0; i < bytes; ++i) le[i] = static_cast<uint8_t>(v >> (8 * i));
    ::crypto_generichash_update(&st, le, static_cast<size_t>(bytes));
}

// A public fingerprint of the key (BLAKE2b keyed by it over a fixed text): tells "written under
// another key" from "modified" without revealing the key.
std::vector<uint8_t> keyId(const CacheKey& key) {
    static constexpr char kDomain[] = "npu-stack cache key id v1";
    std::vector<uint8_t> id(16);
    ::crypto_generichash(id.data(), id.size(), reinterpret_cast<const uint8_t*>(kDomain), sizeof kDomain,
                         key.bytes().data(), key.bytes().size());
    return id;
}

bool isRegularOrLink(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return true;  // gone or unreadable: let removeFile report it
    return S_ISREG(st.st_mode) || S_ISLNK(st.st_mode);
}

}  // namespace

Token CacheDirectory::entryToken(const CompilationKey& c) {
    (void)initSodium();
    static constexpr char kDomain[] = "npu-stack cache entry v1";
    crypto_generichash_state st;
    ::crypto_generichash_init(&st, nullptr, 0, kTokenBytes);
    ::crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(kDomain), sizeof kDomain);
    putLe(st, c.modelChecksum.size(), 8);
    ::crypto_generichash_update(&st, c.modelChecksum.data(), c.modelChecksum.size());
    putLe(st, static_cast<uint32_t>(c.executionPreference), 4);
    putLe(st, c.deviceName.size(), 8);
    ::crypto_generichash_update(&st, reinterpret_cast<const uint8_t*>(c.deviceName.data()),
                                c.deviceName.size());
    Token t{};
    ::crypto_generichash_final(&st, t.data(), t.size());
    return t;
}

CacheDirectory::CacheDirectory(const CacheKey& key, CacheDirectoryOptions options, std::string root,
                               std::unique_ptr<TokenMap> map)
    : key_(key),
      options_(std::move(options)),
      root_(std::move(root)),
      entriesDir_(root_ + "/entries"),
      lockPath_(root_ + "/directory.lock"),
      map_(std::move(map)) {}

Result<std::unique_ptr<CacheDirectory>> CacheDirectory::open(const CacheKey& key,
                                                             CacheDirectoryOptions options) {
    NPU_TRY(initSodium());
    if (options.maxEntries == 0 || options.maxEntries > kMaxMapEntriesLimit) {
        return cacheError(CacheError::Kind::kInvalidArgument,
                          "cache directory maxEntries " + std::to_string(options.maxEntries) +
                              " out of range 1.." + std::to_string(kMaxMapEntriesLimit));
    }
    std::string root = options.root;
    if (root.empty()) {
        std::string dir = options.stateDirectory;
        if (dir.empty()) dir = NPU_TRY(defaultStateDirectory());
        root = dir + "/compilations";
    }
    NPU_TRY(ensureDirectory(root + "/entries", 0700));
    TokenMapOptions mapOptions;
    mapOptions.path = root + "/" + kTokenMapFileName;
    mapOptions.maxEntries = options.maxEntries;
    mapOptions.lockTimeout = options.lockTimeout;
    // Entries of another driver or firmware version can never validate under this key: drop them.
    mapOptions.currentDriverVersion = key.driverVersion();
    mapOptions.currentFirmwareVersion = key.firmwareVersion();
    mapOptions.onRecovery = options.onRecovery;
    auto map = NPU_TRY(TokenMap::open(std::move(mapOptions)));
    std::unique_ptr<CacheDirectory> dir(
        new CacheDirectory(key, std::move(options), std::move(root), std::move(map)));
    auto recorded = NPU_TRY(detail::readFileIfExists(dir->root_ + "/" + std::string(kKeyIdFileName), 64));
    dir->foreignKey_ = recorded.has_value() && *recorded != keyId(key);
    {
        auto lock = NPU_TRY(detail::FileLock::acquire(dir->lockPath_, dir->options_.lockTimeout));
        NPU_TRY(dir->removeOrphans());
    }
    return dir;
}

std::string CacheDirectory::filePath(const Token& token, std::string_view suffix) const {
    std::string p = entriesDir_ + "/" + toHex(token);
    p += suffix;
    return p;
}

Result<void> CacheDirectory::removeFiles(const Token& token) {
    NPU_TRY(detail::removeFile(filePath(token, kModelSuffix)));
    NPU_TRY(detail::removeFile(filePath(token, kDataSuffix)));
    return {};
}

Result<void> CacheDirectory::put(const CompilationKey& compilation, std::span<const uint8_t> modelCache,
                                 std::span<const uint8_t> dataCache) {
    const uint64_t bytes = uint64_t{modelCache.size()} + dataCache.size();
    if (bytes > options_.maxTotalBytes) {
        return cacheError(CacheError::Kind::kTooLarge,
                          "cache directory " + root_ + ": an entry of " + std::to_string(bytes) +
                              " bytes exceeds the size limit of " + std::to_string(options_.maxTotalBytes));
    }
    const Token token = entryToken(compilation);
    auto lock = NPU_TRY(detail::FileLock::acquire(lockPath_, options_.lockTimeout));
    NPU_TRY(adoptKey());
    // The document's order: hash the internal buffers, record the hash, then write the files. A
    // crash in between leaves files that do not match the record: a miss, never a bad load.
    const ByteSpan model[] = {modelCache};
    const ByteSpan data[] = {dataCache};
    const Hash hash = hashCacheBuffers(key_, model, data);
    NPU_TRY(map_->store(
        token, hash,
        StoreInfo{modelCache.size(), dataCache.size(), key_.driverVersion(), key_.firmwareVersion()}));
    NPU_TRY(detail::writeFileAtomically(filePath(token, kModelSuffix), modelCache));
    NPU_TRY(detail::writeFileAtomically(filePath(token, kDataSuffix), dataCache));
    NPU_TRY(enforceLimits(token));
    return removeOrphans();
}

Result<std::optional<CachedCompilation>> CacheDirectory::readEntry(const Token& token) {
    CachedCompilation c;
    auto model = NPU_TRY(detail::readFileIfExists(filePath(token, kModelSuffix), options_.maxTotalBytes));
    auto data = NPU_TRY(detail::readFileIfExists(filePath(token, kDataSuffix), options_.maxTotalBytes));
    if (!model || !data) return std::optional<CachedCompilation>{};
    c.modelCache = std::move(*model);
    c.dataCache = std::move(*data);
    return std::optional<CachedCompilation>(std::move(c));
}

Result<std::optional<CachedCompilation>> CacheDirectory::get(const CompilationKey& compilation) {
    const Token token = entryToken(compilation);
    auto lock = NPU_TRY(detail::FileLock::acquire(lockPath_, options_.lockTimeout));
    // Copy the files into memory first, then hash that copy (never the files: TOCTOU).
    auto entry = NPU_TRY(readEntry(token));
    bool valid = false;
    if (entry) {
        const ByteSpan model[] = {entry->modelCache};
        const ByteSpan data[] = {entry->dataCache};
        valid = NPU_TRY(map_->validate(token, hashCacheBuffers(key_, model, data)));
    }
    if (valid) return entry;
    // Missing, modified or unrecorded: free what is left so the caller's recompilation replaces it.
    NPU_TRY(map_->erase(token));
    NPU_TRY(removeFiles(token));
    return std::optional<CachedCompilation>{};
}

Result<bool> CacheDirectory::remove(const CompilationKey& compilation) {
    const Token token = entryToken(compilation);
    auto lock = NPU_TRY(detail::FileLock::acquire(lockPath_, options_.lockTimeout));
    const bool erased = NPU_TRY(map_->erase(token));
    const bool hadModel = NPU_TRY(detail::removeFile(filePath(token, kModelSuffix)));
    const bool hadData = NPU_TRY(detail::removeFile(filePath(token, kDataSuffix)));
    return erased || hadModel || hadData;
}

Result<void> CacheDirectory::enforceLimits(const Token& keep) {
    auto entries = NPU_TRY(map_->entries());  // most recently used first
    uint64_t total = 0;
    for (const auto& e : entries) total += e.modelBytes + e.dataBytes;
    for (auto it = entries.rbegin(); it != entries.rend() && total > options_.maxTotalBytes; ++it) {
        if (it->token == keep) continue;
        NPU_TRY(map_->erase(it->token));
        NPU_TRY(removeFiles(it->token));
        total -= it->modelBytes + it->dataBytes;
    }
    return {};
}

Result<void> CacheDirectory::adoptKey() {
    const std::string path = root_ + "/" + std::string(kKeyIdFileName);
    auto recorded = NPU_TRY(detail::readFileIfExists(path, 64));
    const std::vector<uint8_t> ours = keyId(key_);
    if (recorded && *recorded == ours) return {};
    if (recorded) {
        // Entries written under another key can never validate under ours: drop them all.
        NPU_TRY(map_->clear());
        NPU_TRY(removeOrphans());
    }
    NPU_TRY(detail::writeFileAtomically(path, ours));
    foreignKey_ = false;
    return {};
}

Result<void> CacheDirectory::removeOrphans() {
    // Files of entries the map evicted or dropped, and temp files of interrupted writes.
    auto entries = NPU_TRY(map_->entries());
    std::set<std::string> keep;
    for (const auto& e : entries) {
        const std::string name = toHex(e.token);
        keep.insert(name + std::string(kModelSuffix));
        keep.insert(name + std::string(kDataSuffix));
    }
    DIR* d = ::opendir(entriesDir_.c_str());
    if (d == nullptr) return detail::ioError("opendir", entriesDir_, errno);
    std::vector<std::string> orphans;
    errno = 0;
    while (dirent* de = ::readdir(d)) {
        const std::string name = de->d_name;
        // Only files are ours to remove; a stray folder someone put here is left alone (and must
        // not make the whole cache unusable).
        if (name != "." && name != ".." && !keep.contains(name) &&
            isRegularOrLink(entriesDir_ + "/" + name)) {
            orphans.push_back(name);
        }
    }
    const int readErr = errno;
    ::closedir(d);
    if (readErr != 0) return detail::ioError("readdir", entriesDir_, readErr);
    for (const auto& name : orphans) NPU_TRY(detail::removeFile(entriesDir_ + "/" + name));
    return {};
}

Result<std::vector<DirectoryEntry>> CacheDirectory::list() {
    auto lock = NPU_TRY(detail::FileLock::acquire(lockPath_, options_.lockTimeout));
    auto entries = NPU_TRY(map_->entries());
    std::vector<DirectoryEntry> out;
    out.reserve(entries.size());
    for (auto& e : entries) out.push_back(DirectoryEntry{toHex(e.token), std::move(e)});
    return out;
}

Result<VerifyReport> CacheDirectory::verify(bool removeBad) {
    auto lock = NPU_TRY(detail::FileLock::acquire(lockPath_, options_.lockTimeout));
    auto entries = NPU_TRY(map_->entries());
    VerifyReport report;
    for (const auto& e : entries) {
        std::string reason;
        auto content = NPU_TRY(readEntry(e.token));
        if (!content) {
            reason = "a cache file is missing";
        } else {
            const ByteSpan model[] = {content->modelCache};
            const ByteSpan data[] = {content->dataCache};
            if (!hashesEqual(hashCacheBuffers(key_, model, data), e.hash) && foreignKey_) {
                reason =
                    "written under another cache key (another state directory's secret, or another "
                    "driver or firmware version): not usable with this one, not tampered with; "
                    "recompiling replaces it";
            } else if (!hashesEqual(hashCacheBuffers(key_, model, data), e.hash)) {
                reason = "content does not match the recorded hash (model " +
                         std::to_string(content->modelCache.size()) + " bytes, data " +
                         std::to_string(content->dataCache.size()) + " bytes; recorded " +
                         std::to_string(e.modelBytes) + " and " + std::to_string(e.dataBytes) + ")";
            }
        }
        if (reason.empty()) {
            ++report.good;
            continue;
        }
        report.bad.push_back({toHex(e.token), reason});
        if (removeBad) {
            NPU_TRY(map_->erase(e.token));
            NPU_TRY(removeFiles(e.token));
            ++report.removed;
        }
    }
    if (removeBad) NPU_TRY(removeOrphans());
    return report;
}

Result<void> CacheDirectory::clear() {
    auto lock = NPU_TRY(detail::FileLock::acquire(lockPath_, options_.lockTimeout));
    NPU_TRY(map_->clear());
    return removeOrphans();
}

}  // namespace npu::cache
