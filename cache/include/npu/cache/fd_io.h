#pragma once
// Whole-file I/O on caller-given file descriptors (the HAL path: the NNAPI runtime hands the
// driver open cache files). Reads and writes always start at offset 0 with pread/pwrite, so the
// fd's current offset (which a client may have moved) does not matter and is left unchanged.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "npu/cache/error.h"
#include "npu/cache/hash.h"

namespace npu::cache {

inline constexpr size_t kDefaultMaxCacheFileBytes = size_t{1} << 30;  // 1 GiB

enum class FdAccess { kRead, kWrite };

// Fails with kBadAccessMode when `fd` (F_GETFL) was not opened for `access`
// (O_WRONLY for kRead, O_RDONLY for kWrite), with kIo when `fd` is not an open fd.
Result<void> checkFdAccess(int fd, FdAccess access);

// "fd 7 (/path/to/file)" from /proc/self/fd, or "fd 7" when that is unavailable.
std::string describeFd(int fd);

// The whole content of the regular file behind `fd`, read from offset 0 whatever the fd's
// offset. kTooLarge beyond `maxBytes`.
Result<std::vector<uint8_t>> readWholeFd(int fd, size_t maxBytes = kDefaultMaxCacheFileBytes);

// Replaces the content of the file behind `fd` with `data`: truncates to 0, writes from offset 0,
// fsyncs. Works whatever the fd's offset, on a non-empty file and with O_APPEND.
Result<void> writeWholeFd(int fd, std::span<const uint8_t> data);

// One buffer per fd, in order.
Result<std::vector<std::vector<uint8_t>>> readWholeFds(std::span<const int> fds,
                                                       size_t maxBytesEach = kDefaultMaxCacheFileBytes);
// kInvalidArgument if the counts differ; otherwise writeWholeFd for each pair.
Result<void> writeWholeFds(std::span<const int> fds, std::span<const ByteSpan> buffers);

}  // namespace npu::cache
