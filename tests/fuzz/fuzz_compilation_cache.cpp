// Fuzz target: cache files into the driver's compilation-cache load path (the shim's
// prepareModelFromCache: cache/ reads and hashes the files, shim/ decodes the model cache, the
// firmware validates and loads the blob). The input:
//
//   flags u8 | model-cache length u32 | model-cache bytes | data-cache bytes (the rest)
//
// flags bit 0: sign the files first (record their keyed hash under the token, as a save would),
// so that they pass the integrity check and reach the decoders; bit 1: load under another token
// than the one signed. Findings (traps): a crash; a refusal without a message or with another
// status than GENERAL_FAILURE / INVALID_ARGUMENT; unsigned or wrongly-tokened files accepted;
// an execution of what loaded that fails without a message; the victim model giving other bytes.
#include <unistd.h>

#include <optional>

#include "cache_harness.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace npu;
    fuzz::InputReader in(data, size);
    const uint8_t flags = in.u8();
    size_t n = 0;
    const uint8_t* model = in.bytes(in.u32(), &n);
    shim::CacheImages images{std::vector<uint8_t>(model, model + n), {}};
    const uint8_t* rest = in.bytes(in.remaining(), &n);
    images.data.assign(rest, rest + n);

    fuzz::CacheHarness& h = fuzz::CacheHarness::instance();
    hal::CacheToken token{};
    token.fill(0x5A);
    hal::CacheToken other = token;
    other[31] ^= 1;
    const bool signedFiles = (flags & 1) != 0, wrongToken = (flags & 2) != 0;
    const int modelFd = fuzz::memoryFile(signedFiles ? std::vector<uint8_t>{} : images.model);
    const int dataFd = fuzz::memoryFile(signedFiles ? std::vector<uint8_t>{} : images.data);
    static std::optional<shim::CacheImages> lastSigned;  // what the map holds for `token`
    if (signedFiles) {
        fuzz::require(h.signer().save(token, images, {modelFd}, {dataFd}).has_value());
        lastSigned = images;
    }
    auto prepared =
        h.device().prepareModelFromCache(std::nullopt, {modelFd}, {dataFd}, wrongToken ? other : token);
    ::close(modelFd);
    ::close(dataFd);
    if (!prepared) {
        const auto s = prepared.error().status;
        fuzz::require(!prepared.error().message.empty());
        fuzz::require(s == hal::ErrorStatus::GENERAL_FAILURE || s == hal::ErrorStatus::INVALID_ARGUMENT);
    } else {
        // Only what was signed under this token loads.
        fuzz::require(!wrongToken && lastSigned && lastSigned->model == images.model &&
                      lastSigned->data == images.data);
        auto out = h.run(**prepared);
        fuzz::require(out.has_value() || !out.error().message.empty());
    }
    fuzz::require(h.victimStillRuns());
    return 0;
}
