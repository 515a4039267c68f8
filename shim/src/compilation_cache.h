#pragma once
// Compilation caching as the NNAPI caching document requires, on top of cache/:
//  - save: the firmware compiles, the shim fetches the blob into internal buffers, hashes those
//    buffers (keyed BLAKE2b), records {token -> hash} in the persistent map, then writes files;
//  - load: the shim reads the files into internal buffers, hashes the buffers (never the files),
//    checks token and hash against the map, and only then hands the blob to the firmware.
// The model cache (one file) holds the shim's I/O description of the model followed by the
// firmware blob's command stream and metadata; the data cache (one file) holds the blob's
// transformed constants. Both are covered by the one hash.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "npu/cache/cache_directory.h"
#include "npu/cache/key.h"
#include "npu/cache/token_map.h"
#include "npu/hal/result.h"
#include "npu/hal/types.h"

namespace npu::shim {

inline constexpr uint32_t kNumModelCacheFiles = 1;
inline constexpr uint32_t kNumDataCacheFiles = 1;

struct CacheImages {
    std::vector<uint8_t> model;  // shim header + firmware model blob
    std::vector<uint8_t> data;   // firmware data blob
};

// The model cache's own part: enough of the model to validate requests (its I/O operands).
std::vector<uint8_t> encodeModelCache(const hal::Model& model, std::span<const uint8_t> firmwareModelBlob);
struct DecodedModelCache {
    hal::Model ioModel;                          // only the I/O operands, no operations
    std::span<const uint8_t> firmwareModelBlob;  // points into the decoded image
};
Result<DecodedModelCache> decodeModelCache(std::span<const uint8_t> image);

class CompilationCache {
public:
    // stateDirectory: empty = the XDG state directory. cacheDirectory: the driver-managed
    // directory for callers that pass no files (empty = none).
    static Result<std::unique_ptr<CompilationCache>> open(const std::string& stateDirectory,
                                                          const std::string& cacheDirectory,
                                                          const std::string& driverVersion,
                                                          const std::string& firmwareVersion);

    // The HAL path: caller-given files and token.
    Status save(const hal::CacheToken& token, const CacheImages& images, const std::vector<int>& modelFds,
                const std::vector<int>& dataFds);
    Result<CacheImages> load(const hal::CacheToken& token, const std::vector<int>& modelFds,
                             const std::vector<int>& dataFds);

    // The driver-managed directory (nnCache): keyed by model checksum, preference and device.
    bool hasDirectory() const { return directory_ != nullptr; }
    Result<std::optional<CacheImages>> lookup(const hal::Model& model, hal::ExecutionPreference preference);
    Status remember(const hal::Model& model, hal::ExecutionPreference preference, const CacheImages& images);

private:
    CompilationCache(cache::CacheKey key, std::unique_ptr<cache::TokenMap> map,
                     std::unique_ptr<cache::CacheDirectory> directory)
        : key_(std::move(key)), map_(std::move(map)), directory_(std::move(directory)) {}
    cache::Hash modelChecksum(const hal::Model& model) const;

    cache::CacheKey key_;
    std::unique_ptr<cache::TokenMap> map_;
    std::unique_ptr<cache::CacheDirectory> directory_;
};

}  // namespace npu::shim
