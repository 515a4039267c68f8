#include "compilation_cache.h"

#include <cstring>

#include "npu/cache/fd_io.h"
#include "npu/cache/hash.h"

namespace npu::shim {
namespace {

constexpr char kMagic[8] = {'N', 'P', 'U', 'S', 'H', 'I', 'M', 'C'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kMaxIo = 1024;
constexpr uint32_t kMaxRank = 16;
constexpr const char* kDeviceName = "npu";

class Writer {
public:
    void u32(uint32_t v) { raw(&v, 4); }
    void i32(int32_t v) { raw(&v, 4); }
    void f32(float v) { raw(&v, 4); }
    void raw(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        out.insert(out.end(), b, b + n);
    }
    std::vector<uint8_t> out;
};

class Reader {
public:
    explicit Reader(std::span<const uint8_t> in) : in_(in) {}
    bool raw(void* p, size_t n) {
        if (n > in_.size() - pos_) return false;
        std::memcpy(p, in_.data() + pos_, n);
        pos_ += n;
        return true;
    }
    bool u32(uint32_t* v) { return raw(v, 4); }
    size_t pos() const { return pos_; }

private:
    std::span<const uint8_t> in_;
    size_t pos_ = 0;
};

void writeOperand(Writer& w, const hal::Operand& o) {
    w.i32(static_cast<int32_t>(o.type));
    w.f32(o.scale);
    w.i32(o.zeroPoint);
    w.u32(static_cast<uint32_t>(o.dimensions.size()));
    for (uint32_t d : o.dimensions) w.u32(d);
}

Status corrupt(const std::string& what) {
    return generalFailure("model cache: " + what + " (the cache is corrupt; compile the model again)");
}

Error fromCache(const cache::CacheError& e, const std::string& what) {
    // Caller-argument problems are INVALID_ARGUMENT; everything else on these paths means "no
    // usable cache": GENERAL_FAILURE, and the caller compiles as usual.
    const bool argument = e.kind == cache::CacheError::Kind::kInvalidArgument;
    return Error{argument ? hal::ErrorStatus::INVALID_ARGUMENT : hal::ErrorStatus::GENERAL_FAILURE,
                 what + ": " + e.message,
                 {}};
}

}  // namespace

std::vector<uint8_t> encodeModelCache(const hal::Model& model, std::span<const uint8_t> firmwareModelBlob) {
    Writer w;
    w.raw(kMagic, sizeof kMagic);
    w.u32(kFormatVersion);
    w.u32(model.relaxComputationFloat32toFloat16 ? 1 : 0);
    w.u32(static_cast<uint32_t>(model.main.inputIndexes.size()));
    w.u32(static_cast<uint32_t>(model.main.outputIndexes.size()));
    for (uint32_t i : model.main.inputIndexes) writeOperand(w, model.main.operands[i]);
    for (uint32_t i : model.main.outputIndexes) writeOperand(w, model.main.operands[i]);
    w.u32(static_cast<uint32_t>(firmwareModelBlob.size()));
    w.raw(firmwareModelBlob.data(), firmwareModelBlob.size());
    return std::move(w.out);
}

Result<DecodedModelCache> decodeModelCache(std::span<const uint8_t> image) {
    Reader r(image);
    char magic[8];
    uint32_t version = 0, relaxed = 0, inputs = 0, outputs = 0;
    if (!r.raw(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) {
        return std::unexpected(corrupt("bad magic").error());
    }
    if (!r.u32(&version) || version != kFormatVersion) {
        return std::unexpected(corrupt("format version " + std::to_string(version) + ", expected " +
                                       std::to_string(kFormatVersion))
                                   .error());
    }
    if (!r.u32(&relaxed) || !r.u32(&inputs) || !r.u32(&outputs) || inputs > kMaxIo || outputs > kMaxIo) {
        return std::unexpected(corrupt("bad I/O counts").error());
    }
    DecodedModelCache out;
    out.ioModel.relaxComputationFloat32toFloat16 = relaxed != 0;
    for (uint32_t k = 0; k < inputs + outputs; ++k) {
        hal::Operand o;
        int32_t type = 0;
        uint32_t rank = 0;
        if (!r.raw(&type, 4) || !r.raw(&o.scale, 4) || !r.raw(&o.zeroPoint, 4) || !r.u32(&rank) ||
            rank > kMaxRank) {
            return std::unexpected(corrupt("operand " + std::to_string(k) + " is truncated").error());
        }
        o.type = static_cast<hal::OperandType>(type);
        o.dimensions.resize(rank);
        for (auto& d : o.dimensions) {
            if (!r.u32(&d))
                return std::unexpected(corrupt("operand " + std::to_string(k) + " dimensions").error());
        }
        const bool isInput = k < inputs;
        o.lifetime = isInput ? hal::OperandLifeTime::SUBGRAPH_INPUT : hal::OperandLifeTime::SUBGRAPH_OUTPUT;
        (isInput ? out.ioModel.main.inputIndexes : out.ioModel.main.outputIndexes).push_back(k);
        out.ioModel.main.operands.push_back(std::move(o));
    }
    uint32_t blobBytes = 0;
    if (!r.u32(&blobBytes) || blobBytes != image.size() - r.pos()) {
        return std::unexpected(corrupt("firmware blob length does not match the file").error());
    }
    out.firmwareModelBlob = image.subspan(r.pos());
    return out;
}

Result<std::unique_ptr<CompilationCache>> CompilationCache::open(const std::string& stateDirectory,
                                                                 const std::string& cacheDirectory,
                                                                 const std::string& driverVersion,
                                                                 const std::string& firmwareVersion) {
    std::string state = stateDirectory;
    if (state.empty()) {
        auto d = cache::defaultStateDirectory();
        if (!d) return std::unexpected(fromCache(d.error(), "compilation cache"));
        state = *d;
    }
    auto key = cache::CacheKey::load(state, driverVersion, firmwareVersion);
    if (!key) return std::unexpected(fromCache(key.error(), "compilation cache key"));
    cache::TokenMapOptions mapOptions;
    mapOptions.stateDirectory = state;
    mapOptions.currentDriverVersion = driverVersion;
    mapOptions.currentFirmwareVersion = firmwareVersion;
    auto map = cache::TokenMap::open(mapOptions);
    if (!map) return std::unexpected(fromCache(map.error(), "compilation cache map"));
    std::unique_ptr<cache::CacheDirectory> directory;
    if (!cacheDirectory.empty()) {
        cache::CacheDirectoryOptions dirOptions;
        dirOptions.root = cacheDirectory;
        dirOptions.stateDirectory = state;
        auto dir = cache::CacheDirectory::open(*key, dirOptions);
        if (!dir) return std::unexpected(fromCache(dir.error(), "cache directory " + cacheDirectory));
        directory = std::move(*dir);
    }
    return std::unique_ptr<CompilationCache>(
        new CompilationCache(std::move(*key), std::move(*map), std::move(directory)));
}

Status CompilationCache::save(const hal::CacheToken& token, const CacheImages& images,
                              const std::vector<int>& modelFds, const std::vector<int>& dataFds) {
    if (modelFds.size() != kNumModelCacheFiles || dataFds.size() != kNumDataCacheFiles) {
        return invalidArgument("save to cache: " + std::to_string(modelFds.size()) + " model and " +
                               std::to_string(dataFds.size()) + " data cache files given, the driver uses " +
                               std::to_string(kNumModelCacheFiles) + " and " +
                               std::to_string(kNumDataCacheFiles));
    }
    for (int fd : modelFds) {
        if (auto a = cache::checkFdAccess(fd, cache::FdAccess::kWrite); !a)
            return std::unexpected(fromCache(a.error(), "save to cache"));
    }
    for (int fd : dataFds) {
        if (auto a = cache::checkFdAccess(fd, cache::FdAccess::kWrite); !a)
            return std::unexpected(fromCache(a.error(), "save to cache"));
    }
    // Hash the internal buffers, record the hash, then write the files (never hash the files).
    const cache::ByteSpan model[] = {images.model};
    const cache::ByteSpan data[] = {images.data};
    const cache::Hash hash = cache::hashCacheBuffers(key_, model, data);
    cache::StoreInfo info{images.model.size(), images.data.size(), key_.driverVersion(),
                          key_.firmwareVersion()};
    if (auto s = map_->store(token, hash, info); !s)
        return std::unexpected(fromCache(s.error(), "save to cache"));
    if (auto w = cache::writeWholeFd(modelFds[0], images.model); !w)
        return std::unexpected(fromCache(w.error(), "save model cache"));
    if (auto w = cache::writeWholeFd(dataFds[0], images.data); !w)
        return std::unexpected(fromCache(w.error(), "save data cache"));
    return {};
}

Result<CacheImages> CompilationCache::load(const hal::CacheToken& token, const std::vector<int>& modelFds,
                                           const std::vector<int>& dataFds) {
    if (modelFds.size() != kNumModelCacheFiles || dataFds.size() != kNumDataCacheFiles) {
        return invalidArgument("prepareModelFromCache: " + std::to_string(modelFds.size()) + " model and " +
                               std::to_string(dataFds.size()) + " data cache files given, the driver uses " +
                               std::to_string(kNumModelCacheFiles) + " and " +
                               std::to_string(kNumDataCacheFiles));
    }
    for (int fd : modelFds) {
        if (auto a = cache::checkFdAccess(fd, cache::FdAccess::kRead); !a)
            return generalFailure("prepareModelFromCache: " + a.error().message);
    }
    for (int fd : dataFds) {
        if (auto a = cache::checkFdAccess(fd, cache::FdAccess::kRead); !a)
            return generalFailure("prepareModelFromCache: " + a.error().message);
    }
    CacheImages images;
    auto m = cache::readWholeFd(modelFds[0]);
    if (!m) return generalFailure("prepareModelFromCache: model cache: " + m.error().message);
    auto d = cache::readWholeFd(dataFds[0]);
    if (!d) return generalFailure("prepareModelFromCache: data cache: " + d.error().message);
    images.model = std::move(*m);
    images.data = std::move(*d);
    // Hash what we copied, not the files: they may change under us (TOCTOU).
    const cache::ByteSpan model[] = {images.model};
    const cache::ByteSpan data[] = {images.data};
    const cache::Hash hash = cache::hashCacheBuffers(key_, model, data);
    auto ok = map_->validate(token, hash);
    if (!ok) return generalFailure("prepareModelFromCache: " + ok.error().message);
    if (!*ok) {
        return generalFailure(
            "prepareModelFromCache: the cache files do not match what this driver saved for the "
            "token (unknown token, or the files were modified)");
    }
    return images;
}

cache::Hash CompilationCache::modelChecksum(const hal::Model& model) const {
    // A canonical serialization of everything that defines the compilation.
    Writer w;
    auto subgraph = [&](const hal::Subgraph& sg) {
        w.u32(static_cast<uint32_t>(sg.operands.size()));
        for (const auto& o : sg.operands) {
            writeOperand(w, o);
            w.i32(static_cast<int32_t>(o.lifetime));
            w.u32(o.location.poolIndex);
            w.u32(o.location.offset);
            w.u32(o.location.length);
            if (o.channelQuant) {
                w.u32(o.channelQuant->channelDim);
                w.u32(static_cast<uint32_t>(o.channelQuant->scales.size()));
                w.raw(o.channelQuant->scales.data(), o.channelQuant->scales.size() * sizeof(float));
            }
        }
        w.u32(static_cast<uint32_t>(sg.operations.size()));
        for (const auto& op : sg.operations) {
            w.i32(static_cast<int32_t>(op.type));
            w.u32(static_cast<uint32_t>(op.inputs.size()));
            for (uint32_t i : op.inputs) w.u32(i);
            w.u32(static_cast<uint32_t>(op.outputs.size()));
            for (uint32_t i : op.outputs) w.u32(i);
        }
        for (uint32_t i : sg.inputIndexes) w.u32(i);
        w.u32(0xffffffffu);
        for (uint32_t i : sg.outputIndexes) w.u32(i);
    };
    subgraph(model.main);
    for (const auto& sg : model.referenced) subgraph(sg);
    w.u32(model.relaxComputationFloat32toFloat16 ? 1 : 0);
    std::vector<cache::ByteSpan> parts = {w.out, model.operandValues};
    for (const auto& pool : model.pools) parts.emplace_back(pool->data(), pool->size());
    return cache::hashBuffers(key_, parts);
}

Result<std::optional<CacheImages>> CompilationCache::lookup(const hal::Model& model,
                                                            hal::ExecutionPreference preference) {
    const cache::Hash checksum = modelChecksum(model);
    cache::CompilationKey k{checksum, static_cast<int32_t>(preference), kDeviceName};
    auto got = directory_->get(k);
    if (!got) return std::unexpected(fromCache(got.error(), "cache directory"));
    if (!*got) return std::optional<CacheImages>{};
    return std::optional<CacheImages>{
        CacheImages{std::move((*got)->modelCache), std::move((*got)->dataCache)}};
}

Status CompilationCache::remember(const hal::Model& model, hal::ExecutionPreference preference,
                                  const CacheImages& images) {
    const cache::Hash checksum = modelChecksum(model);
    cache::CompilationKey k{checksum, static_cast<int32_t>(preference), kDeviceName};
    if (auto p = directory_->put(k, images.model, images.data); !p)
        return std::unexpected(fromCache(p.error(), "cache directory"));
    return {};
}

}  // namespace npu::shim
