#include "npu/cache/token_map.h"

#include <sodium.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "file_util.h"
#include "npu/base/log.h"

namespace npu::cache {

namespace {

constexpr uint8_t kMagic[8] = {'N', 'P', 'U', 'C', 'T', 'M', 'A', 'P'};
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8;        // magic, version, count, use counter
constexpr size_t kEntryFixedBytes = 32 + 32 + 8 * 5;  // token, hash, 5 x u64
constexpr size_t kChecksumBytes = 32;                 // BLAKE2b-256 of everything before it
constexpr size_t kMaxFileBytes =
    kHeaderBytes + kMaxMapEntriesLimit * (kEntryFixedBytes + 2 * (2 + kMaxVersionBytes)) + kChecksumBytes;

void putLe(std::vector<uint8_t>& out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// Bounds-checked little-endian reader over a map image.
class Reader {
public:
    Reader(std::span<const uint8_t> bytes, const std::string& where) : bytes_(bytes), where_(where) {}
    size_t offset() const { return offset_; }
    Result<uint64_t> le(int bytes, const char* field) {
        NPU_TRY(need(static_cast<size_t>(bytes), field));
        uint64_t v = 0;
        for (int i = 0; i < bytes; ++i) v |= uint64_t{bytes_[offset_ + static_cast<size_t>(i)]} << (8 * i);
        offset_ += static_cast<size_t>(bytes);
        return v;
    }
    Result<void> copy(uint8_t* out, size_t n, const char* field) {
        NPU_TRY(need(n, field));
        std::memcpy(out, bytes_.data() + offset_, n);
        offset_ += n;
        return {};
    }
    Result<std::string> string(const char* field) {
        const auto len = NPU_TRY(le(2, field));
        if (len > kMaxVersionBytes) {
            return corrupt(std::string(field) + " length " + std::to_string(len) + " exceeds " +
                           std::to_string(kMaxVersionBytes));
        }
        NPU_TRY(need(len, field));
        std::string s(reinterpret_cast<const char*>(bytes_.data() + offset_), len);
        offset_ += len;
        return s;
    }
    std::unexpected<CacheError> corrupt(const std::string& what) const {
        return cacheError(CacheError::Kind::kCorrupt,
                          "token map " + where_ + ": " + what + " at offset " + std::to_string(offset_));
    }

private:
    Result<void> need(size_t n, const char* field) const {
        if (bytes_.size() - offset_ < n) {
            return corrupt(std::string("truncated: ") + field + " needs " + std::to_string(n) + " bytes, " +
                           std::to_string(bytes_.size() - offset_) + " left");
        }
        return {};
    }
    std::span<const uint8_t> bytes_;
    const std::string& where_;
    size_t offset_ = 0;
};

void defaultRecoveryReport(const CacheError& e) {
    base::logError("cache", "%s", e.message.c_str());
}

}  // namespace

Result<TokenMap::Image> TokenMap::parse(std::span<const uint8_t> bytes, const std::string& where) {
    if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
        return cacheError(CacheError::Kind::kCorrupt,
                          "token map " + where + ": bad magic at offset 0 (not an npu-stack token map)");
    }
    Reader header(bytes, where);
    NPU_TRY(header.le(8, "magic"));
    const auto version = NPU_TRY(header.le(4, "format version"));
    if (version != kTokenMapFormatVersion) {
        return cacheError(CacheError::Kind::kCorrupt,
                          "token map " + where + ": format version " + std::to_string(version) +
                              " at offset 8 is not supported (this build reads version " +
                              std::to_string(kTokenMapFormatVersion) + ")");
    }
    if (bytes.size() < kHeaderBytes + kChecksumBytes) {
        return cacheError(CacheError::Kind::kCorrupt,
                          "token map " + where + ": truncated: " + std::to_string(bytes.size()) +
                              " bytes, the minimum is " + std::to_string(kHeaderBytes + kChecksumBytes));
    }
    const size_t bodyBytes = bytes.size() - kChecksumBytes;
    uint8_t digest[kChecksumBytes];
    ::crypto_generichash(digest, sizeof digest, bytes.data(), bodyBytes, nullptr, 0);
    if (std::memcmp(digest, bytes.data() + bodyBytes, kChecksumBytes) != 0) {
        return cacheError(CacheError::Kind::kCorrupt,
                          "token map " + where + ": integrity check failed (BLAKE2b at offset " +
                              std::to_string(bodyBytes) +
                              " does not match the content; truncated or modified)");
    }

    Reader r(bytes.first(bodyBytes), where);
    NPU_TRY(r.le(8, "magic"));
    NPU_TRY(r.le(4, "format version"));
    const auto count = NPU_TRY(r.le(4, "entry count"));
    if (count > kMaxMapEntriesLimit) {
        return r.corrupt("entry count " + std::to_string(count) + " exceeds " +
                         std::to_string(kMaxMapEntriesLimit));
    }
    Image image;
    image.useCounter = NPU_TRY(r.le(8, "use counter"));
    image.entries.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
        TokenMapEntry e;
        NPU_TRY(r.copy(e.token.data(), e.token.size(), "entry token"));
        NPU_TRY(r.copy(e.hash.data(), e.hash.size(), "entry hash"));
        e.modelBytes = NPU_TRY(r.le(8, "entry model bytes"));
        e.dataBytes = NPU_TRY(r.le(8, "entry data bytes"));
        e.createdNs = NPU_TRY(r.le(8, "entry created time"));
        e.lastUsedNs = NPU_TRY(r.le(8, "entry last-used time"));
        e.lastUseSeq = NPU_TRY(r.le(8, "entry last-use sequence"));
        e.driverVersion = NPU_TRY(r.string("entry driver version"));
        e.firmwareVersion = NPU_TRY(r.string("entry firmware version"));
        image.entries.push_back(std::move(e));
    }
    if (r.offset() != bodyBytes) {
        return r.corrupt(std::to_string(bodyBytes - r.offset()) + " unexpected bytes after entry " +
                         std::to_string(count));
    }
    std::vector<Token> tokens;
    tokens.reserve(image.entries.size());
    for (const auto& e : image.entries) tokens.push_back(e.token);
    std::sort(tokens.begin(), tokens.end());
    if (std::adjacent_find(tokens.begin(), tokens.end()) != tokens.end()) {
        return r.corrupt("duplicate token " + toHex(*std::adjacent_find(tokens.begin(), tokens.end())));
    }
    return image;
}

std::vector<uint8_t> TokenMap::serialize(const Image& image) {
    std::vector<uint8_t> out;
    out.reserve(kHeaderBytes + image.entries.size() * (kEntryFixedBytes + 16) + kChecksumBytes);
    out.insert(out.end(), std::begin(kMagic), std::end(kMagic));
    putLe(out, kTokenMapFormatVersion, 4);
    putLe(out, image.entries.size(), 4);
    putLe(out, image.useCounter, 8);
    for (const auto& e : image.entries) {
        out.insert(out.end(), e.token.begin(), e.token.end());
        out.insert(out.end(), e.hash.begin(), e.hash.end());
        putLe(out, e.modelBytes, 8);
        putLe(out, e.dataBytes, 8);
        putLe(out, e.createdNs, 8);
        putLe(out, e.lastUsedNs, 8);
        putLe(out, e.lastUseSeq, 8);
        for (const std::string* s : {&e.driverVersion, &e.firmwareVersion}) {
            const size_t len = std::min(s->size(), kMaxVersionBytes);  // store() rejects longer ones
            putLe(out, len, 2);
            out.insert(out.end(), s->begin(), s->begin() + static_cast<std::ptrdiff_t>(len));
        }
    }
    uint8_t digest[kChecksumBytes];
    ::crypto_generichash(digest, sizeof digest, out.data(), out.size(), nullptr, 0);
    out.insert(out.end(), std::begin(digest), std::end(digest));
    return out;
}

TokenMap::TokenMap(TokenMapOptions options, std::string path)
    : options_(std::move(options)), path_(std::move(path)), lockPath_(path_ + ".lock") {
    if (!options_.onRecovery) options_.onRecovery = defaultRecoveryReport;
}

Result<std::unique_ptr<TokenMap>> TokenMap::open(TokenMapOptions options) {
    NPU_TRY(initSodium());
    if (options.maxEntries == 0 || options.maxEntries > kMaxMapEntriesLimit) {
        return cacheError(CacheError::Kind::kInvalidArgument,
                          "token map maxEntries " + std::to_string(options.maxEntries) + " out of range 1.." +
                              std::to_string(kMaxMapEntriesLimit));
    }
    std::string path = options.path;
    if (path.empty()) {
        std::string dir = options.stateDirectory;
        if (dir.empty()) dir = NPU_TRY(defaultStateDirectory());
        path = dir + "/" + kTokenMapFileName;
    }
    NPU_TRY(ensureDirectory(detail::dirName(path), 0700));
    std::unique_ptr<TokenMap> map(new TokenMap(std::move(options), std::move(path)));
    if (!map->options_.currentDriverVersion.empty() && !map->options_.currentFirmwareVersion.empty()) {
        NPU_TRY(map->purgeOtherVersions(map->options_.currentDriverVersion,
                                        map->options_.currentFirmwareVersion));
    } else {
        // Read once so a bad file is found (and reset) now rather than at first use.
        NPU_TRY(map->transact([](Image&, bool&) -> Result<void> { return {}; }));
    }
    return map;
}

Result<TokenMap::Image> TokenMap::readLocked() {
    auto bytes = detail::readFileIfExists(path_, kMaxFileBytes);
    Result<Image> image = Image{};
    if (bytes) {
        if (!*bytes) return Image{};
        image = parse(**bytes, path_);
    } else if (bytes.error().kind == CacheError::Kind::kTooLarge ||
               bytes.error().kind == CacheError::Kind::kInvalidArgument) {
        // Too large or not a regular file: as unusable as a corrupt one.
        image = cacheError(CacheError::Kind::kCorrupt, "token map " + bytes.error().message);
    } else {
        return std::unexpected(bytes.error());
    }
    if (image) return image;
    // Never trust a bad map: keep it for diagnosis, report, and start from an empty one.
    CacheError report = image.error();
    const std::string kept = path_ + ".corrupt";
    if (::rename(path_.c_str(), kept.c_str()) == 0) {
        report.message += "; kept as " + kept + ", replaced by an empty map";
    } else {
        const int err = errno;
        report.message += "; replaced by an empty map (" + detail::sysError("rename", kept, err) + ")";
    }
    NPU_TRY(writeLocked(Image{}));
    ++recoveries_;
    options_.onRecovery(report);
    return Image{};
}

Result<void> TokenMap::writeLocked(const Image& image) {
    return detail::writeFileAtomically(path_, serialize(image));
}

Result<void> TokenMap::transact(const std::function<Result<void>(Image&, bool&)>& body) {
    auto lock = NPU_TRY(detail::FileLock::acquire(lockPath_, options_.lockTimeout));
    auto image = NPU_TRY(readLocked());
    bool dirty = false;
    NPU_TRY(body(image, dirty));
    if (dirty) NPU_TRY(writeLocked(image));
    return {};
}

Result<void> TokenMap::store(const Token& token, const Hash& hash, const StoreInfo& info) {
    for (const std::string* v : {&info.driverVersion, &info.firmwareVersion}) {
        if (v->size() > kMaxVersionBytes) {
            return cacheError(CacheError::Kind::kInvalidArgument,
                              "token map " + path_ + ": version string of " + std::to_string(v->size()) +
                                  " bytes exceeds " + std::to_string(kMaxVersionBytes));
        }
    }
    return transact([&](Image& image, bool& dirty) -> Result<void> {
        const uint64_t now = detail::realtimeNs();
        auto it = std::find_if(image.entries.begin(), image.entries.end(),
                               [&](const TokenMapEntry& e) { return e.token == token; });
        if (it == image.entries.end()) it = image.entries.insert(image.entries.end(), TokenMapEntry{});
        it->token = token;
        it->hash = hash;
        it->modelBytes = info.modelBytes;
        it->dataBytes = info.dataBytes;
        it->createdNs = now;
        it->lastUsedNs = now;
        it->lastUseSeq = ++image.useCounter;
        it->driverVersion = info.driverVersion;
        it->firmwareVersion = info.firmwareVersion;
        if (image.entries.size() > options_.maxEntries) {
            // Least recently used first out; the entry just stored has the highest sequence.
            std::sort(
                image.entries.begin(), image.entries.end(),
                [](const TokenMapEntry& a, const TokenMapEntry& b) { return a.lastUseSeq > b.lastUseSeq; });
            image.entries.resize(options_.maxEntries);
        }
        dirty = true;
        return {};
    });
}

Result<bool> TokenMap::validate(const Token& token, const Hash& hash) {
    bool match = false;
    auto body = [&](Image& image, bool& dirty) -> Result<void> {
        for (auto& e : image.entries) {
            if (e.token != token) continue;
            match = hashesEqual(e.hash, hash);
            if (match && options_.touchOnValidate && e.lastUseSeq != image.useCounter) {
                e.lastUseSeq = ++image.useCounter;
                e.lastUsedNs = detail::realtimeNs();
                dirty = true;
            }
            break;
        }
        return {};
    };
    NPU_TRY(transact(body));
    return match;
}

Result<std::optional<TokenMapEntry>> TokenMap::find(const Token& token) {
    std::optional<TokenMapEntry> found;
    NPU_TRY(transact([&](Image& image, bool&) -> Result<void> {
        for (auto& e : image.entries) {
            if (e.token == token) found = e;
        }
        return {};
    }));
    return found;
}

Result<bool> TokenMap::erase(const Token& token) {
    bool erased = false;
    NPU_TRY(transact([&](Image& image, bool& dirty) -> Result<void> {
        erased = std::erase_if(image.entries, [&](const TokenMapEntry& e) { return e.token == token; }) > 0;
        dirty = erased;
        return {};
    }));
    return erased;
}

Result<std::vector<TokenMapEntry>> TokenMap::entries() {
    std::vector<TokenMapEntry> out;
    NPU_TRY(transact([&](Image& image, bool&) -> Result<void> {
        out = std::move(image.entries);
        return {};
    }));
    std::sort(out.begin(), out.end(),
              [](const TokenMapEntry& a, const TokenMapEntry& b) { return a.lastUseSeq > b.lastUseSeq; });
    return out;
}

Result<void> TokenMap::clear() {
    return transact([](Image& image, bool& dirty) -> Result<void> {
        image.entries.clear();
        dirty = true;
        return {};
    });
}

Result<size_t> TokenMap::purgeOtherVersions(const std::string& driverVersion,
                                            const std::string& firmwareVersion) {
    size_t purged = 0;
    NPU_TRY(transact([&](Image& image, bool& dirty) -> Result<void> {
        purged = std::erase_if(image.entries, [&](const TokenMapEntry& e) {
            return e.driverVersion != driverVersion || e.firmwareVersion != firmwareVersion;
        });
        dirty = purged > 0;
        return {};
    }));
    return purged;
}

}  // namespace npu::cache
