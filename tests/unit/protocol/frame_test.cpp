// Frame layer: CRC32C, header encoding, and the streaming decoder's resynchronisation.
#include "npu/protocol/frame.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "npu/protocol/crc32c.h"

using namespace npu::proto;

namespace {

std::vector<uint8_t> makeFrame(uint8_t type, uint16_t flags, uint64_t callId, const std::string& payload) {
    std::vector<uint8_t> f(kFrameHeaderSize + payload.size());
    std::memcpy(f.data() + kFrameHeaderSize, payload.data(), payload.size());
    FrameHeader h;
    h.type = type;
    h.flags = flags;
    h.callId = callId;
    h.length = static_cast<uint32_t>(payload.size());
    encodeFrameHeader(h, f.data() + kFrameHeaderSize, f.data());
    return f;
}

struct Recorded {
    FrameEventKind kind;
    FrameHeader header;
    bool haveHeader;
    std::string payload;
    size_t skipped;
};

struct Recorder : FrameListener {
    std::vector<Recorded> events;
    void onFrameEvent(const FrameEvent& e) override {
        events.push_back(
            {e.kind, e.header, e.haveHeader,
             e.payload ? std::string(reinterpret_cast<const char*>(e.payload), e.header.length) : "",
             e.skippedBytes});
    }
    std::vector<Recorded> frames() const {
        std::vector<Recorded> out;
        for (auto& e : events)
            if (e.kind == FrameEventKind::kFrame) out.push_back(e);
        return out;
    }
    size_t count(FrameEventKind k) const {
        size_t n = 0;
        for (auto& e : events) n += e.kind == k;
        return n;
    }
};

void append(std::vector<uint8_t>& to, const std::vector<uint8_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

uint32_t bitwiseCrc32c(const uint8_t* p, size_t n) {
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

}  // namespace

TEST_CASE("crc32c matches the Castagnoli check value and a bitwise reference") {
    REQUIRE(crc32c("123456789", 9) == 0xE3069283u);
    REQUIRE(crc32c("", 0) == 0u);
    std::vector<uint8_t> data(4099);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
    for (size_t offset : {0, 1, 3, 7}) {
        for (size_t len : {0, 1, 7, 8, 9, 15, 16, 17, 31, 63, 1000, 4092}) {
            REQUIRE(crc32c(data.data() + offset, len) == bitwiseCrc32c(data.data() + offset, len));
            // The table code, which a CPU without the crc32 instruction (or QEMU's TCG) runs.
            REQUIRE(crc32cExtendTables(0, data.data() + offset, len) ==
                    bitwiseCrc32c(data.data() + offset, len));
        }
    }
    // Extending equals one pass.
    REQUIRE(crc32cExtend(crc32c(data.data(), 1000), data.data() + 1000, 3000) == crc32c(data.data(), 4000));
    REQUIRE(crc32cExtendTables(crc32c(data.data(), 1001), data.data() + 1001, 2999) ==
            crc32c(data.data(), 4000));
}

TEST_CASE("frame header layout is little-endian with the documented offsets") {
    auto f = makeFrame(7, kFlagResponse | kFlagMore, 0x1122334455667788ull, "abc");
    REQUIRE(f.size() == 27);
    REQUIRE(std::memcmp(f.data(), "NPU1", 4) == 0);
    REQUIRE(f[4] == 1);
    REQUIRE(f[5] == 7);
    REQUIRE(f[6] == 5);
    REQUIRE(f[7] == 0);
    REQUIRE(f[8] == 0x88);
    REQUIRE(f[15] == 0x11);
    REQUIRE(loadLe32(f.data() + 16) == 3);
    REQUIRE(loadLe32(f.data() + 20) == frameCrc(f.data(), f.data() + 24, 3));
}

TEST_CASE("a header over a payload in two pieces matches the header over the payload whole") {
    const std::string payload = "head part|and the data that lies elsewhere";
    const auto whole = makeFrame(17, kFlagResponse, 42, payload);
    for (size_t first : {size_t(0), size_t(10), payload.size()}) {
        INFO("first piece " << first << " bytes");
        FrameHeader h;
        h.type = 17;
        h.flags = kFlagResponse;
        h.callId = 42;
        h.length = static_cast<uint32_t>(payload.size());
        const std::string rest = payload.substr(first);
        uint8_t header[kFrameHeaderSize];
        encodeFrameHeaderGather(h, reinterpret_cast<const uint8_t*>(payload.data()), first,
                                reinterpret_cast<const uint8_t*>(rest.data()), header);
        CHECK(std::memcmp(header, whole.data(), kFrameHeaderSize) == 0);
    }
}

TEST_CASE("decoder delivers frames whatever the chunking") {
    std::vector<uint8_t> stream;
    for (int i = 0; i < 5; ++i)
        append(stream, makeFrame(uint8_t(i + 1), 0, 100 + i, std::string(size_t(i * 37), char('a' + i))));
    for (size_t chunk : {size_t(1), size_t(3), size_t(24), size_t(25), stream.size()}) {
        std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(1024));
        FrameDecoder d(buffer.data(), buffer.size(), 1024);
        Recorder r;
        for (size_t off = 0; off < stream.size(); off += chunk)
            d.feed(stream.data() + off, std::min(chunk, stream.size() - off), r);
        auto frames = r.frames();
        REQUIRE(r.events.size() == 5);
        REQUIRE(frames.size() == 5);
        for (int i = 0; i < 5; ++i) {
            CHECK(frames[size_t(i)].header.type == i + 1);
            CHECK(frames[size_t(i)].header.callId == uint64_t(100 + i));
            CHECK(frames[size_t(i)].payload == std::string(size_t(i * 37), char('a' + i)));
        }
        REQUIRE(d.buffered() == 0);
    }
}

TEST_CASE("decoder resynchronises on garbage before, between and inside frames") {
    std::vector<uint8_t> stream = {'x', 'N', 'P', 'U', 0, 1, 2};  // includes a partial magic
    append(stream, makeFrame(1, 0, 1, "first"));
    for (int i = 0; i < 100; ++i) stream.push_back(uint8_t(i));
    stream.push_back('N');
    stream.push_back('P');
    append(stream, makeFrame(2, 0, 2, "second"));
    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(256));
    FrameDecoder d(buffer.data(), buffer.size(), 256);
    Recorder r;
    for (uint8_t b : stream) d.feed(&b, 1, r);
    auto frames = r.frames();
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].payload == "first");
    CHECK(frames[1].payload == "second");
    REQUIRE(r.count(FrameEventKind::kGarbage) == 2);
    CHECK(r.events[0].kind == FrameEventKind::kGarbage);
    CHECK(r.events[0].skipped == 7);
    CHECK(r.events[2].skipped == 102);
}

TEST_CASE("a CRC-corrupt frame is reported and the next frame still decodes") {
    auto bad = makeFrame(4, 0, 42, "payload to corrupt");
    bad[30] ^= 0x10;
    std::vector<uint8_t> stream = bad;
    append(stream, makeFrame(5, 0, 43, "good"));
    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(256));
    FrameDecoder d(buffer.data(), buffer.size(), 256);
    Recorder r;
    d.feed(stream.data(), stream.size(), r);
    REQUIRE(r.count(FrameEventKind::kCrcMismatch) == 1);
    CHECK(r.events[0].kind == FrameEventKind::kCrcMismatch);
    CHECK(r.events[0].header.callId == 42);
    auto frames = r.frames();
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].header.callId == 43);
}

TEST_CASE("an oversize frame is rejected with its call id and the decoder resyncs") {
    std::vector<uint8_t> stream = makeFrame(4, 0, 77, std::string(300, 'z'));
    append(stream, makeFrame(6, 0, 78, "after"));
    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(256));
    FrameDecoder d(buffer.data(), buffer.size(), 256);
    Recorder r;
    d.feed(stream.data(), stream.size(), r);
    REQUIRE(r.events.front().kind == FrameEventKind::kOversize);
    CHECK(r.events.front().header.callId == 77);
    CHECK(r.events.front().header.length == 300);
    auto frames = r.frames();
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].payload == "after");
}

TEST_CASE("a bad frame version is reported") {
    auto f = makeFrame(1, 0, 9, "v2");
    f[4] = 2;
    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(256));
    FrameDecoder d(buffer.data(), buffer.size(), 256);
    Recorder r;
    d.feed(f.data(), f.size(), r);
    REQUIRE(r.count(FrameEventKind::kBadVersion) == 1);
    CHECK(r.events[0].header.callId == 9);
    CHECK(r.frames().empty());
}

TEST_CASE("a truncated frame waits for more bytes and is reported at end of stream") {
    auto f = makeFrame(3, 0, 11, "0123456789");
    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(256));
    FrameDecoder d(buffer.data(), buffer.size(), 256);
    Recorder r;
    d.feed(f.data(), f.size() - 4, r);
    REQUIRE(r.events.empty());
    d.feed(f.data() + f.size() - 4, 4, r);
    REQUIRE(r.frames().size() == 1);

    Recorder r2;
    d.feed(f.data(), 30, r2);
    REQUIRE(r2.events.empty());
    d.finish(r2);
    REQUIRE(r2.events.size() == 1);
    CHECK(r2.events[0].kind == FrameEventKind::kTruncated);
    CHECK(r2.events[0].haveHeader);
    CHECK(r2.events[0].header.callId == 11);
    CHECK(r2.events[0].skipped == 30);
    REQUIRE(d.buffered() == 0);

    Recorder r3;  // a partial header: truncated without a header
    d.feed(f.data(), 10, r3);
    d.finish(r3);
    REQUIRE(r3.events.size() == 1);
    CHECK(r3.events[0].kind == FrameEventKind::kTruncated);
    CHECK_FALSE(r3.events[0].haveHeader);
}

TEST_CASE("fragments keep their MORE flag and call id, in order") {
    std::vector<uint8_t> stream;
    append(stream, makeFrame(4, kFlagMore, 5, "part1-"));
    append(stream, makeFrame(4, kFlagMore, 5, "part2-"));
    append(stream, makeFrame(4, 0, 5, "end"));
    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(64));
    FrameDecoder d(buffer.data(), buffer.size(), 64);
    Recorder r;
    d.feed(stream.data(), stream.size(), r);
    auto frames = r.frames();
    REQUIRE(frames.size() == 3);
    std::string whole;
    for (auto& f : frames) {
        CHECK(f.header.callId == 5);
        whole += f.payload;
    }
    CHECK((frames[0].header.flags & kFlagMore) != 0);
    CHECK((frames[2].header.flags & kFlagMore) == 0);
    CHECK(whole == "part1-part2-end");
}

TEST_CASE("a buffer smaller than header + max payload lowers the max payload") {
    std::vector<uint8_t> buffer(kFrameHeaderSize + 10);
    FrameDecoder d(buffer.data(), buffer.size(), 1000);
    REQUIRE(d.maxPayload() == 10);
    Recorder r;
    auto f = makeFrame(1, 0, 1, std::string(11, 'x'));
    d.feed(f.data(), f.size(), r);
    REQUIRE(r.count(FrameEventKind::kOversize) == 1);
}

TEST_CASE("feedInPlace reports whole frames where they lie and leaves the rest to feed") {
    std::vector<uint8_t> stream = makeFrame(4, 0, 1, "first");
    append(stream, makeFrame(5, 0, 2, "second"));
    const size_t whole = stream.size();
    auto bad = makeFrame(6, 0, 3, "corrupt");
    bad[kFrameHeaderSize] ^= 0x01;
    append(stream, bad);
    auto partial = makeFrame(7, 0, 4, "split across reads");
    append(stream, std::vector<uint8_t>(partial.begin(), partial.begin() + 30));
    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(256));
    FrameDecoder d(buffer.data(), buffer.size(), 256);
    Recorder r;
    const size_t used = d.feedInPlace(stream.data(), stream.size(), r);
    REQUIRE(used == whole);  // stops at the corrupt frame
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[1].payload == "second");
    d.feed(stream.data() + used, stream.size() - used, r);  // the corrupt one and a partial frame
    CHECK(r.count(FrameEventKind::kCrcMismatch) == 1);
    // With a partial frame buffered nothing is taken in place: its rest comes first.
    std::vector<uint8_t> rest(partial.begin() + 30, partial.end());
    CHECK(d.feedInPlace(rest.data(), rest.size(), r) == 0);
    d.feed(rest.data(), rest.size(), r);
    auto frames = r.frames();
    REQUIRE(frames.size() == 3);
    CHECK(frames[2].payload == "split across reads");
    CHECK(d.buffered() == 0);
}

TEST_CASE("feedInPlace reports garbage dropped before a frame it takes in place") {
    std::vector<uint8_t> buffer(FrameDecoder::bufferSizeFor(256));
    FrameDecoder d(buffer.data(), buffer.size(), 256);
    Recorder r;
    const std::string junk = "junk!!";
    d.feed(reinterpret_cast<const uint8_t*>(junk.data()), junk.size(), r);  // dropped, not yet reported
    auto f = makeFrame(4, 0, 9, "ok");
    REQUIRE(d.feedInPlace(f.data(), f.size(), r) == f.size());
    REQUIRE(r.events.size() == 2);
    CHECK(r.events[0].kind == FrameEventKind::kGarbage);
    CHECK(r.events[0].skipped == junk.size());
    CHECK(r.events[1].payload == "ok");
}
