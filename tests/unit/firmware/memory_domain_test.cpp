// Memory domains in the firmware runtime: buffers in firmware DRAM, their roles, owner and
// dimensions checked at allocation, copy and execution; release frees the DRAM; tensor bytes
// staged through the host window are counted (Runtime::copiedBytes).
#include <catch2/catch.hpp>
#include <string>

#include "model_fixture.h"

using namespace fwtest;

namespace {

constexpr uint32_t kAdd = 0;

// out = a + b over [1, n] (scale 1, zero point 0).
BlobInfo prepareAdd(Harness& h, uint32_t n = 4) {
    ModelBuilder mb(h);
    const Quant q{1.0f, 0};
    const uint32_t a = mb.input({1, n}, q), b = mb.input({1, n}, q);
    const uint32_t out = mb.output({1, n}, q);
    mb.op(kAdd, {a, b, mb.i32(0)}, {out});
    return prepareClaimed(h, mb.build());
}

struct Fixture {
    Harness h;
    BlobInfo add;
    Fixture() {
        REQUIRE(h.runtime.init().ok());
        add = prepareAdd(h);
    }
    FwStatus allocate(std::vector<BufferRole> roles, uint32_t* token, uint32_t session = 0,
                      std::vector<uint32_t> dims = {}) {
        BufferSpec spec;
        spec.session = session;
        spec.type = 5;
        spec.rank = uint32_t(dims.size());
        for (size_t k = 0; k < dims.size(); ++k) spec.dims[k] = dims[k];
        spec.roles = roles.data();
        spec.roleCount = uint32_t(roles.size());
        return h.runtime.allocateBuffer(spec, token);
    }
    FwStatus write(uint32_t token, std::vector<uint8_t> bytes, uint32_t session = 0) {
        const uint64_t addr = h.stage(bytes.data(), bytes.size());
        return h.runtime.writeBuffer(session, token, addr, bytes.size(), 0, nullptr);
    }
    std::vector<uint8_t> read(uint32_t token, size_t n = 4) {
        const uint64_t addr = h.reserve(n);
        const FwStatus st = h.runtime.readBuffer(0, token, addr, n);
        INFO(st.message);
        REQUIRE(st.ok());
        return {h.dram.begin() + addr, h.dram.begin() + addr + n};
    }
    // Input 0 and the output from buffers (0 = staged in the window), input 1 = `b` in the window.
    FwStatus run(uint32_t in0, uint32_t out, std::vector<uint8_t> b, uint32_t session = 0) {
        IoArg in[2], o[1];
        std::vector<uint8_t> a(4, 1);
        in[0].bufferToken = in0;
        if (in0 == 0) in[0].addr = h.stage(a.data(), 4), in[0].length = 4;
        in[1].addr = h.stage(b.data(), b.size());
        in[1].length = uint32_t(b.size());
        o[0].bufferToken = out;
        if (out == 0) o[0].addr = h.reserve(4), o[0].length = 4;
        ExecResult result;
        FwStatus st = h.runtime.bindBuffers(session, add.handle, in, 2, o, 1);
        if (!st.ok()) return st;
        st = h.runtime.execute(add.handle, in, 2, o, 1, &result);
        if (st.ok()) h.runtime.buffersWritten(o, 1);
        return st;
    }
};

void expectStatus(const FwStatus& st, Code code, const std::string& words) {
    INFO(st.message);
    CHECK(st.code == code);
    CHECK(std::string(st.message).find(words) != std::string::npos);
}

}  // namespace

TEST_CASE("firmware memory domains: allocation checks the roles against the prepared models") {
    Fixture f;
    uint32_t token = 0;
    expectStatus(f.allocate({}, &token), Code::kInvalidArgument, "no input or output role");
    expectStatus(f.allocate({{f.add.handle + 1, true, 0}}, &token), Code::kInvalidArgument,
                 "unknown model handle");
    expectStatus(f.allocate({{f.add.handle, true, 2}}, &token), Code::kInvalidArgument, "input 2");
    expectStatus(f.allocate({{f.add.handle, false, 1}}, &token), Code::kInvalidArgument, "output 1");
    expectStatus(f.allocate({{f.add.handle, true, 0}, {f.add.handle, true, 0}}, &token),
                 Code::kInvalidArgument, "are the same");
    expectStatus(f.allocate({{f.add.handle, true, 0}}, &token, 0, {1, 5}), Code::kInvalidArgument,
                 "conflict with the roles'");
    const BlobInfo wide = prepareAdd(f.h, 8);
    expectStatus(f.allocate({{f.add.handle, true, 0}, {wide.handle, true, 0}}, &token),
                 Code::kInvalidArgument, "disagrees with role 0");
    REQUIRE(f.allocate({{f.add.handle, true, 0}, {f.add.handle, true, 1}, {f.add.handle, false, 0}}, &token,
                       0, {1, 0})
                .ok());
    CHECK(token != 0);
}

TEST_CASE("firmware memory domains: copies, ownership, release frees firmware DRAM") {
    Fixture f;
    const uint64_t before = f.h.runtime.dramBytesInUse();
    uint32_t token = 0;
    REQUIRE(f.allocate({{f.add.handle, true, 0}}, &token, 7).ok());
    CHECK(f.h.runtime.buffersInUse() == 1);
    CHECK(f.h.runtime.bufferBytes() == 4);
    CHECK(f.h.runtime.dramBytesInUse() > before);

    uint8_t* window = f.h.dram.data() + f.h.reserve(4);
    const uint64_t at = uint64_t(window - f.h.dram.data());
    expectStatus(f.h.runtime.readBuffer(7, token, at, 4), Code::kGeneralFailure, "holds no data yet");
    expectStatus(f.write(token, {1, 2, 3}, 7), Code::kInvalidArgument, "3 bytes given");
    const uint32_t wrongDims[] = {2, 2};
    expectStatus(f.h.runtime.writeBuffer(7, token, at, 4, 2, wrongDims), Code::kInvalidArgument,
                 "conflict with buffer token");
    expectStatus(f.h.runtime.writeBuffer(7, token, 64, 4, 0, nullptr), Code::kInvalidArgument,
                 "outside the host window");
    REQUIRE(f.write(token, {1, 2, 3, 4}, 7).ok());
    REQUIRE(f.h.runtime.readBuffer(7, token, at, 4).ok());
    CHECK(std::vector<uint8_t>(window, window + 4) == std::vector<uint8_t>{1, 2, 3, 4});
    expectStatus(f.h.runtime.readBuffer(7, token, at, 8), Code::kInvalidArgument, "has 8 bytes");

    // Another session does not find it, and cannot release it.
    expectStatus(f.h.runtime.readBuffer(8, token, at, 4), Code::kInvalidArgument, "unknown to this client");
    expectStatus(f.h.runtime.releaseBuffer(8, token), Code::kInvalidArgument, "unknown to this client");
    REQUIRE(f.h.runtime.releaseBuffer(7, token).ok());
    CHECK(f.h.runtime.buffersInUse() == 0);
    CHECK(f.h.runtime.dramBytesInUse() == before);
    expectStatus(f.h.runtime.releaseBuffer(7, token), Code::kInvalidArgument, "unknown to this client");

    // A client that goes away leaves nothing behind.
    uint32_t t1 = 0, t2 = 0, t3 = 0;
    REQUIRE(f.allocate({{f.add.handle, true, 0}}, &t1, 7).ok());
    REQUIRE(f.allocate({{f.add.handle, true, 0}}, &t2, 7).ok());
    REQUIRE(f.allocate({{f.add.handle, true, 0}}, &t3, 9).ok());
    CHECK(f.h.runtime.releaseSessionBuffers(7) == 2);
    CHECK(f.h.runtime.buffersInUse() == 1);
    // A reset drops the rest; tokens from before it are never valid again.
    REQUIRE(f.h.runtime.reset().ok());
    CHECK(f.h.runtime.buffersInUse() == 0);
    REQUIRE(f.h.runtime.init().ok());
    BlobInfo again = prepareAdd(f.h);
    BufferRole role{again.handle, true, 0};
    BufferSpec spec;
    spec.session = 9;
    spec.roles = &role;
    spec.roleCount = 1;
    uint32_t t4 = 0;
    REQUIRE(f.h.runtime.allocateBuffer(spec, &t4).ok());
    CHECK(t4 != t3);
}

TEST_CASE("firmware memory domains: execution reads and writes buffers, every use checked") {
    Fixture f;
    uint32_t a = 0, c = 0, inOnly = 0;
    REQUIRE(f.allocate({{f.add.handle, true, 0}, {f.add.handle, false, 0}}, &a).ok());
    REQUIRE(f.allocate({{f.add.handle, true, 0}, {f.add.handle, false, 0}}, &c).ok());
    REQUIRE(f.allocate({{f.add.handle, true, 1}}, &inOnly).ok());
    const std::vector<uint8_t> ones(4, 1);
    expectStatus(f.run(a, c, ones), Code::kGeneralFailure, "input 0: buffer token");

    REQUIRE(f.write(a, {10, 20, 30, 40}).ok());
    const uint64_t copied = f.h.runtime.copiedBytes();
    REQUIRE(f.run(a, c, ones).ok());
    // Only input 1 went through the window: the buffers moved nothing.
    CHECK(f.h.runtime.copiedBytes() - copied == 4);
    CHECK(f.read(c) == std::vector<uint8_t>{11, 21, 31, 41});
    REQUIRE(f.run(c, a, ones).ok());
    CHECK(f.read(a) == std::vector<uint8_t>{12, 22, 32, 42});

    expectStatus(f.run(a, a, ones), Code::kInvalidArgument, "is input 0 and output 0");
    expectStatus(f.run(0, inOnly, ones), Code::kInvalidArgument, "not allocated with that role");
    expectStatus(f.run(a, c, ones, 3), Code::kInvalidArgument, "unknown to this client");
    expectStatus(f.run(999, c, ones), Code::kInvalidArgument, "buffer token 999");
    const BlobInfo other = prepareAdd(f.h);
    IoArg in[2], out[1];
    in[0].bufferToken = a;
    in[1].bufferToken = inOnly;
    out[0].bufferToken = c;
    expectStatus(f.h.runtime.bindBuffers(0, other.handle, in, 2, out, 1), Code::kInvalidArgument,
                 "not allocated with that role");
    // Unbound tokens never reach the NPU.
    ExecResult result;
    expectStatus(f.h.runtime.execute(f.add.handle, in, 2, out, 1, &result), Code::kInvalidArgument,
                 "was not bound");
}

TEST_CASE("firmware counts the tensor bytes staged through the host window") {
    Fixture f;
    const uint64_t before = f.h.runtime.copiedBytes();
    REQUIRE(f.run(0, 0, std::vector<uint8_t>(4, 2)).ok());
    CHECK(f.h.runtime.copiedBytes() - before == 3 * 4);  // two inputs in, one output out
    uint32_t token = 0;
    REQUIRE(f.allocate({{f.add.handle, true, 0}}, &token).ok());
    REQUIRE(f.write(token, {1, 2, 3, 4}).ok());
    f.read(token);
    CHECK(f.h.runtime.copiedBytes() - before == 5 * 4);
}
