// Zero copy for pools passed by fd (docs/execution.md "Memory model"): a memfd or mappable file
// of 64 KiB or more is mapped by the firmware host, so the firmware counter runtime.copied_bytes
// does not grow, over loopback and unix; smaller pools are still staged. Hostile uses of MapPool
// (no fd, an fd that is no file, a range beyond the file, another client's pool) are
// INVALID_ARGUMENT and disturb nothing else.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "../hal/execution_suite.h"
#include "loopback_device.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/dma_heap.h"
#include "npu/shim/npu_device.h"
#include "raw_client.h"
#include "sigbus_guard.h"

using namespace npu;
using namespace npu::hal::test;
using namespace npu::shim::test;

namespace {

constexpr uint32_t kN = 64 * 1024;  // bytes of each of a, b and out: a 192 KiB pool

// Runs a + b on `prepared` with `r`, checks every output byte, returns the growth of
// runtime.copied_bytes.
uint64_t runAdd(hal::IDevice& device, hal::IPreparedModel& prepared, AddRequest& r, uint8_t a, uint8_t b) {
    r.setInputs(a, b);
    const uint64_t before = firmwareCounter(device, "runtime.copied_bytes");
    auto done = prepared.executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    INFO((done ? std::string() : done.error().message));
    REQUIRE(done.has_value());
    CHECK(r.output() == std::vector<uint8_t>(r.n, static_cast<uint8_t>(a + b)));
    return firmwareCounter(device, "runtime.copied_bytes") - before;
}

// a + b over kN bytes each, in one pool of `memory` (a, b, out one after the other).
AddRequest bigRequest(std::shared_ptr<hal::Memory> memory) {
    AddRequest r;
    r.n = kN;
    r.pool = std::move(memory);
    r.request.inputs = {{false, {0, 0, kN, 0}, {}}, {false, {0, kN, kN, 0}, {}}};
    r.request.outputs = {{false, {0, 2 * kN, kN, 0}, {}}};
    r.request.pools = {r.pool};
    return r;
}

void checkZeroCopy(hal::IDevice& device, std::shared_ptr<hal::Memory> pool = hal::Memory::create(3 * kN)) {
    auto prepared = prepare(device, addModel({1, kN}));
    auto r = bigRequest(std::move(pool));
    CHECK(runAdd(device, *prepared, r, 3, 4) == 0);
    CHECK(firmwareCounter(device, "session.pools") == 1);
    CHECK(runAdd(device, *prepared, r, 10, 20) == 0);  // mapped once, used again
    CHECK(firmwareCounter(device, "session.pools") == 1);
    // Under the threshold: staged through the window (a and b in, out back).
    auto small = addRequest(1, 2);
    auto smallPrepared = prepare(device);
    CHECK(runAdd(device, *smallPrepared, small, 1, 2) == 3 * 4);
    CHECK(firmwareCounter(device, "session.pools") == 1);
}

}  // namespace

TEST_CASE("zero copy: a memfd pool of 64 KiB or more is not copied (loopback)", "[shim][zero-copy]") {
    auto l = openLoopback();
    checkZeroCopy(*l.device);
}

namespace {

// Runs `check` on a device of a daemon (npu-fwd) this test starts on its own socket.
template <typename Check>
void onDaemon(const char* name, Check check) {
    const std::string socket = (std::filesystem::temp_directory_path() /
                                (std::string(name) + "-" + std::to_string(getpid()) + ".sock"))
                                   .string();
    shim::DaemonOptions options;
    options.socketPath = socket;
    options.daemonPath = NPU_FWD_TEST_PATH;
    {
        auto device = shim::connectNpuDaemon(options);
        INFO((device ? std::string() : device.error().message));
        REQUIRE(device.has_value());
        check(**device);
    }
    std::filesystem::remove(socket);
}

// A dma-buf of `bytes` from the system dma-heap; null (the case returns) where this host has none,
// unless NPU_REQUIRE_DMA_HEAP=1 (the test VM, whose kernel has one: then its absence fails).
std::shared_ptr<hal::Memory> dmaBufOrSkip(size_t bytes) {
    const hal::DmaHeapStatus heap = hal::dmaHeapStatus();
    const char* required = std::getenv("NPU_REQUIRE_DMA_HEAP");
    if (!heap.available) {
        if (required != nullptr && std::string(required) == "1") FAIL(heap.reason);
        WARN("skipped: " << heap.reason << " (the dma-buf cases run in the test VM: meson test dma_buf_vm)");
        return nullptr;
    }
    std::shared_ptr<hal::Memory> blob = hal::createHardwareBufferBlob(bytes);
    REQUIRE(blob != nullptr);
    struct stat st {};
    REQUIRE(fstat(blob->fd(), &st) == 0);
    REQUIRE_FALSE(S_ISREG(st.st_mode));  // a dma-buf, not a memfd
    return blob;
}

}  // namespace

TEST_CASE("zero copy: a memfd pool of 64 KiB or more is not copied (unix, SCM_RIGHTS)", "[shim][zero-copy]") {
    onDaemon("npu-zero-copy", [](hal::IDevice& device) { checkZeroCopy(device); });
}

TEST_CASE("zero copy: a dma-buf pool (the AHardwareBuffer BLOB analogue) is not copied (loopback)",
          "[.][shim][zero-copy][dma-buf]") {
    auto blob = dmaBufOrSkip(3 * kN);
    if (blob == nullptr) return;
    auto l = openLoopback();
    checkZeroCopy(*l.device, blob);
}

TEST_CASE("zero copy: a dma-buf pool is passed by SCM_RIGHTS and not copied (unix)",
          "[.][shim][zero-copy][dma-buf]") {
    auto blob = dmaBufOrSkip(3 * kN);
    if (blob == nullptr) return;
    onDaemon("npu-zero-copy-dmabuf", [&](hal::IDevice& device) { checkZeroCopy(device, blob); });
}

TEST_CASE("zero copy: a dma-buf range shorter than the request's locations is INVALID_ARGUMENT",
          "[.][shim][zero-copy][dma-buf]") {
    auto blob = dmaBufOrSkip(3 * kN);
    if (blob == nullptr) return;
    auto l = openLoopback();
    auto prepared = prepare(*l.device, addModel({1, kN}));
    auto r = bigRequest(blob);
    r.request.outputs = {{false, {0, 3 * kN - 16, kN, 0}, {}}};  // past the dma-buf's end
    auto done = prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    REQUIRE_FALSE(done.has_value());
    CHECK(done.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    auto good = bigRequest(blob);
    CHECK(runAdd(*l.device, *prepared, good, 9, 9) == 0);  // the device goes on
}

namespace {

// IBuffer::copyFrom and copyTo with a dma-buf: a driver with memory domains copies from and to the
// hardware buffer BLOB as well as shared memory and mappable files (seed 003, "Memory domains";
// the memfd and mappable-file copies are in execution_suite.h). The buffer then feeds an execution.
void checkDmaBufCopies(hal::IDevice& device, hal::Memory& blob) {
    REQUIRE(blob.size() == 4);
    auto prepared = prepare(device);
    auto allocated = device.allocate({}, {prepared}, {role(0)}, {});
    INFO((allocated ? std::string() : allocated.error().message));
    REQUIRE(allocated.has_value());
    hal::IBuffer& buffer = *allocated->buffer;
    const uint8_t in[4] = {9, 8, 7, 6};
    std::memcpy(blob.data(), in, 4);
    auto from = buffer.copyFrom(blob, {1, 4});
    INFO((from ? std::string() : from.error().message));
    REQUIRE(from.has_value());
    auto out = hal::Memory::create(4);
    REQUIRE(buffer.copyTo(*out).has_value());
    CHECK(contents(*out) == std::vector<uint8_t>{9, 8, 7, 6});

    REQUIRE(buffer.copyFrom(*bytes({1, 2, 3, 4}), {}).has_value());
    std::memset(blob.data(), 0, 4);
    auto to = buffer.copyTo(blob);
    INFO((to ? std::string() : to.error().message));
    REQUIRE(to.has_value());
    CHECK(contents(blob) == std::vector<uint8_t>{1, 2, 3, 4});

    std::shared_ptr<hal::Memory> sum = hal::Memory::create(4);
    hal::Request r = bufferRequest(allocated->token, 0, bytes({10, 10, 10, 10}));
    r.pools[2] = sum;
    r.outputs[0].location = {2, 0, 4, 0};
    auto ran = prepared->executeSynchronously(r, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    INFO((ran ? std::string() : ran.error().message));
    REQUIRE(ran.has_value());
    CHECK(contents(*sum) == std::vector<uint8_t>{11, 12, 13, 14});
}

}  // namespace

TEST_CASE("memory domain: copyFrom and copyTo with a dma-buf (loopback)",
          "[.][shim][zero-copy][dma-buf][memory-domain]") {
    auto blob = dmaBufOrSkip(4);
    if (blob == nullptr) return;
    auto l = openLoopback();
    checkDmaBufCopies(*l.device, *blob);
}

TEST_CASE("memory domain: copyFrom and copyTo with a dma-buf (unix)",
          "[.][shim][zero-copy][dma-buf][memory-domain]") {
    auto blob = dmaBufOrSkip(4);
    if (blob == nullptr) return;
    onDaemon("npu-dmabuf-copies", [&](hal::IDevice& device) { checkDmaBufCopies(device, *blob); });
}

TEST_CASE("zero copy: a mappable file (fd + offset + length) is not copied", "[shim][zero-copy]") {
    auto l = openLoopback();
    auto prepared = prepare(*l.device, addModel({1, kN}));
    char path[] = "/tmp/npu-zero-copy-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    unlink(path);
    constexpr size_t kOffset = 4096 + 100;  // not page-aligned: the firmware maps from the page
    REQUIRE(ftruncate(fd, kOffset + 3 * kN + 50) == 0);
    std::shared_ptr<hal::Memory> file = hal::Memory::mapFd(fd, kOffset, 3 * kN, PROT_READ | PROT_WRITE);
    close(fd);
    REQUIRE(file != nullptr);
    auto r = bigRequest(file);
    CHECK(runAdd(*l.device, *prepared, r, 5, 6) == 0);
    CHECK(firmwareCounter(*l.device, "session.pools") == 1);
}

TEST_CASE("zero copy: a released pool is unmapped when the next one is mapped", "[shim][zero-copy]") {
    auto l = openLoopback();
    auto prepared = prepare(*l.device, addModel({1, kN}));
    {
        auto first = bigRequest(hal::Memory::create(3 * kN));
        CHECK(runAdd(*l.device, *prepared, first, 1, 1) == 0);
        CHECK(firmwareCounter(*l.device, "session.pool_bytes") == 3 * kN);
    }
    auto second = bigRequest(hal::Memory::create(3 * kN));
    CHECK(runAdd(*l.device, *prepared, second, 2, 2) == 0);
    CHECK(firmwareCounter(*l.device, "session.pools") == 1);
}

TEST_CASE("zero copy: a pool whose fd is closed is INVALID_ARGUMENT; the device goes on",
          "[shim][zero-copy]") {
    auto l = openLoopback();
    auto prepared = prepare(*l.device, addModel({1, kN}));
    auto r = bigRequest(hal::Memory::create(3 * kN));
    const int fd = r.pool->fd();
    REQUIRE(close(fd) == 0);
    auto done = prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    REQUIRE_FALSE(done.has_value());
    CHECK(done.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
    CHECK_THAT(done.error().message, Catch::Contains("is closed"));
    // The Memory closes its fd number when it goes: give it one to close.
    const int placeholder = open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(dup2(placeholder, fd) == fd);
    close(placeholder);
    auto other = bigRequest(hal::Memory::create(3 * kN));
    CHECK(runAdd(*l.device, *prepared, other, 7, 8) == 0);
}

TEST_CASE("zero copy, hostile client: no fd, no file, too small, another client's pool",
          "[shim][zero-copy]") {
    auto fw = fw::host::FirmwareHost::create();
    REQUIRE(fw.has_value());
    RawClient a((*fw)->connectLoopback()), b((*fw)->connectLoopback());
    auto refused = [](const proto::MapPoolReply& reply, const char* why) {
        INFO(reply.status().message());
        CHECK(reply.status().code() == kInvalidArgument);
        CHECK_THAT(reply.status().message(), Catch::Contains(why));
    };
    refused(a.mapPool(-1, 0, 4096), "no file descriptor");
    const int dir = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(dir >= 0);
    refused(a.mapPool(dir, 0, 4096), "a directory");
    close(dir);
    int sockets[2], pipes[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) == 0);
    refused(a.mapPool(sockets[0], 0, 4096), "a socket");
    REQUIRE(pipe(pipes) == 0);
    refused(a.mapPool(pipes[0], 0, 4096), "a pipe");
    for (int fd : {sockets[0], sockets[1], pipes[0], pipes[1]}) close(fd);

    auto memory = hal::Memory::create(3 * kN);
    REQUIRE(memory != nullptr);
    refused(a.mapPool(memory->fd(), 0, 4 * kN), "does not fit");
    refused(a.mapPool(memory->fd(), 3 * kN, 1), "does not fit");
    const proto::MapPoolReply pool = a.mapPool(memory->fd(), 0, 3 * kN);
    REQUIRE(pool.status().code() == 0);
    CHECK(pool.writable());
    CHECK(pool.sealed());  // a memfd that allows sealing: it cannot shrink under the mapping

    uint32_t handleA = 0, handleB = 0;
    REQUIRE(a.prepare(addModel({1, kN}), hal::Priority::MEDIUM, &handleA) == 0);
    REQUIRE(b.prepare(addModel({1, kN}), hal::Priority::MEDIUM, &handleB) == 0);
    std::memset(memory->data(), 2, kN);
    std::memset(memory->data() + kN, 3, kN);
    const uint64_t copied = a.counters()["runtime.copied_bytes"];
    CHECK(a.execute(RawClient::addRequest(handleA, pool.addr(), kN)).status().code() == 0);
    CHECK(a.counters()["runtime.copied_bytes"] == copied);
    CHECK(memory->data()[2 * kN + kN - 1] == 5);

    // A location past the pool's end; another client naming this pool's addresses or its id.
    auto past = a.execute(RawClient::addRequest(handleA, pool.addr() + 16, kN));
    CHECK(past.status().code() == kInvalidArgument);
    CHECK_THAT(past.status().message(), Catch::Contains("runs past the end of pool"));
    auto foreign = b.execute(RawClient::addRequest(handleB, pool.addr(), kN));
    CHECK(foreign.status().code() == kInvalidArgument);
    proto::UnmapPoolRequest unmap;
    unmap.set_pool_id(pool.pool_id());
    proto::UnmapPoolReply unmapped;
    REQUIRE(b.rpc->call(proto::METHOD_UNMAP_POOL, unmap, unmapped, kCallTimeout).has_value());
    CHECK(unmapped.status().code() == kInvalidArgument);
    CHECK_THAT(unmapped.status().message(), Catch::Contains("unknown pool id"));

    // A pool passed read-only takes inputs, never an output.
    const std::string self = "/proc/self/fd/" + std::to_string(memory->fd());
    const int readOnly = open(self.c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(readOnly >= 0);
    const proto::MapPoolReply inputs = a.mapPool(readOnly, 0, 3 * kN);
    close(readOnly);
    REQUIRE(inputs.status().code() == 0);
    CHECK_FALSE(inputs.writable());
    auto written = a.execute(RawClient::addRequest(handleA, inputs.addr(), kN));
    CHECK(written.status().code() == kInvalidArgument);
    CHECK_THAT(written.status().message(), Catch::Contains("read-only"));

    // Nothing else was disturbed: the first pool still serves, and b's own window too.
    std::memset(memory->data() + 2 * kN, 0, kN);
    CHECK(a.execute(RawClient::addRequest(handleA, pool.addr(), kN)).status().code() == 0);
    CHECK(memory->data()[2 * kN] == 5);
    auto block = stageAdd(b, kN, 1, 1);
    CHECK(b.execute(RawClient::addRequest(handleB, block.addr(), kN)).status().code() == 0);
    CHECK(a.counters()["session.pools"] == 2);
    REQUIRE(a.rpc->call(proto::METHOD_UNMAP_POOL, unmap, unmapped, kCallTimeout).has_value());
    CHECK(unmapped.status().code() == 0);
    CHECK(a.counters()["session.pools"] == 1);
}

TEST_CASE("zero copy, hostile client: a MapPool refused before it ran takes its fd with it",
          "[shim][zero-copy]") {
    auto fw = fw::host::FirmwareHost::create();
    REQUIRE(fw.has_value());
    RawClient a((*fw)->connectLoopback());
    auto small = hal::Memory::create(4096);
    auto big = hal::Memory::create(3 * kN);
    REQUIRE((small != nullptr && big != nullptr));
    const proto::Status refused = a.undecodableMapPool(small->fd());
    CHECK(refused.code() == kInvalidArgument);
    CHECK_THAT(refused.message(), Catch::Contains("MapPool call"));
    CHECK_THAT(refused.message(), Catch::Contains("cannot decode"));
    // The next MapPool maps its own fd, not the refused one's (4 KiB: "does not fit").
    const proto::MapPoolReply pool = a.mapPool(big->fd(), 0, 3 * kN);
    INFO(pool.status().message());
    CHECK(pool.status().code() == 0);
    // And one sent without an fd finds none left over.
    const proto::MapPoolReply none = a.mapPool(-1, 0, 4096);
    CHECK(none.status().code() == kInvalidArgument);
    CHECK_THAT(none.status().message(), Catch::Contains("no file descriptor"));
}

TEST_CASE("zero copy: a constant in a model pool of 64 KiB or more is read in place", "[shim][zero-copy]") {
    auto l = openLoopback();
    hal::Model model = addModel({1, kN});
    std::shared_ptr<hal::Memory> weights = hal::Memory::create(kN);
    REQUIRE(weights != nullptr);
    std::memset(weights->data(), 3, kN);
    model.main.operands[1].lifetime = hal::OperandLifeTime::CONSTANT_REFERENCE;
    model.main.operands[1].location = {0, 0, kN, 0};
    model.main.inputIndexes = {0};
    model.pools = {weights};
    auto prepared = prepare(*l.device, model);
    CHECK(firmwareCounter(*l.device, "session.pools") == 1);  // the model's pool, mapped for the compile

    AddRequest r;
    r.n = kN;
    r.pool = hal::Memory::create(2 * kN);
    std::memset(r.pool->data(), 4, kN);
    r.request.inputs = {{false, {0, 0, kN, 0}, {}}};
    r.request.outputs = {{false, {0, kN, kN, 0}, {}}};
    r.request.pools = {r.pool};
    const uint64_t before = firmwareCounter(*l.device, "runtime.copied_bytes");
    auto done = prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
    INFO((done ? std::string() : done.error().message));
    REQUIRE(done.has_value());
    CHECK(firmwareCounter(*l.device, "runtime.copied_bytes") == before);
    CHECK(std::vector<uint8_t>(r.pool->data() + kN, r.pool->data() + 2 * kN) == std::vector<uint8_t>(kN, 7));
    CHECK(firmwareCounter(*l.device, "session.pools") == 2);
}

TEST_CASE("zero copy: an unsealed file truncated while mapped fails its client only", "[shim][zero-copy]") {
    auto fw = fw::host::FirmwareHost::create();
    REQUIRE(fw.has_value());
    RawClient a((*fw)->connectLoopback());
    uint32_t handle = 0;
    REQUIRE(a.prepare(addModel({1, kN}), hal::Priority::MEDIUM, &handle) == 0);
    char path[] = "/tmp/npu-zero-copy-trunc-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    unlink(path);
    REQUIRE(ftruncate(fd, 3 * kN) == 0);
    const proto::MapPoolReply pool = a.mapPool(fd, 0, 3 * kN);
    REQUIRE(pool.status().code() == 0);
    CHECK_FALSE(pool.sealed());  // a regular file: checked before each use
    CHECK(a.execute(RawClient::addRequest(handle, pool.addr(), kN)).status().code() == 0);
    REQUIRE(ftruncate(fd, kN) == 0);
    auto shrunk = a.execute(RawClient::addRequest(handle, pool.addr(), kN));
    CHECK(shrunk.status().code() == kInvalidArgument);
    CHECK_THAT(shrunk.status().message(), Catch::Contains("shrank"));
    close(fd);
    auto block = stageAdd(a, kN, 1, 2);  // the session goes on
    CHECK(a.execute(RawClient::addRequest(handle, block.addr(), kN)).status().code() == 0);
}

TEST_CASE("SIGBUS guard: a truncated mapping in a guarded range reads zeros and is marked hit",
          "[shim][zero-copy]") {
    char path[] = "/tmp/npu-sigbus-guard-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    unlink(path);
    const size_t bytes = 4 * 4096;
    REQUIRE(ftruncate(fd, bytes) == 0);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    REQUIRE(p != MAP_FAILED);
    auto* data = static_cast<volatile uint8_t*>(p);
    data[3 * 4096] = 7;
    const uint32_t guard = fw::host::guardRange(static_cast<uint8_t*>(p), bytes);
    REQUIRE(guard != fw::host::kNoGuard);
    CHECK_FALSE(fw::host::rangeHit(guard));
    REQUIRE(ftruncate(fd, 4096) == 0);  // the last three pages are gone: an access is a SIGBUS
    CHECK(data[3 * 4096] == 0);         // caught: zero pages over the range
    data[2 * 4096] = 1;                 // and writable
    CHECK(fw::host::rangeHit(guard));
    fw::host::unguardRange(guard);
    munmap(p, bytes);
    close(fd);
}
