// The AHardwareBuffer BLOB analogue is a dma-buf from the system dma-heap: where the host has one
// it is allocated and mapped; where it has none, that is reported (dmaHeapStatus, `npu info`) and
// nothing else is handed out in its place.
#include "npu/hal/dma_heap.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

using namespace npu;

TEST_CASE("dma-heap: reported as it is, a dma-buf only where the heap exists", "[hal][memory]") {
    const hal::DmaHeapStatus status = hal::dmaHeapStatus();
    const bool present = access(hal::kDmaHeapPath, F_OK) == 0;
    auto blob = hal::createHardwareBufferBlob(64 * 1024);
    if (!present) {
        CHECK_FALSE(status.available);
        CHECK_THAT(status.reason, Catch::Contains(hal::kDmaHeapPath));
        CHECK_THAT(status.reason, Catch::Contains("unavailable"));
        CHECK(blob == nullptr);  // never a memfd in disguise
        return;
    }
    REQUIRE(status.available);
    REQUIRE(blob != nullptr);
    struct stat st {};
    REQUIRE(fstat(blob->fd(), &st) == 0);
    CHECK_FALSE(S_ISREG(st.st_mode));  // a dma-buf, not a memfd
    std::memset(blob->data(), 0x5a, blob->size());
    CHECK(blob->data()[blob->size() - 1] == 0x5a);
}
