#pragma once
// The frame layer shared by host and firmware (docs/protocol.md). Freestanding: no OS headers,
// no exceptions, no heap; the streaming decoder works in a buffer its owner provides.
//
//   offset size field
//   0      4    magic   0x3155504E ("NPU1" on the wire, little-endian)
//   4      1    version 1
//   5      1    type    a Method value of npu.proto
//   6      2    flags   kFlagResponse | kFlagError | kFlagMore
//   8      8    call_id
//   16     4    length  payload bytes
//   20     4    crc32c  over bytes [0, 20) and the payload
//   24     length payload

#include <cstddef>
#include <cstdint>

namespace npu::proto {

inline constexpr uint32_t kFrameMagic = 0x3155504Eu;
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderSize = 24;
inline constexpr uint32_t kDefaultMaxPayload = 1u << 20;

inline constexpr uint16_t kFlagResponse = 1u << 0;  // a reply to the call with the same call_id
inline constexpr uint16_t kFlagError = 1u << 1;     // payload is ErrorReply
inline constexpr uint16_t kFlagMore = 1u << 2;      // more fragments of the same message follow

inline constexpr uint8_t kMethodError = 255;  // Method.METHOD_ERROR

struct FrameHeader {
    uint8_t version = kFrameVersion;
    uint8_t type = 0;
    uint16_t flags = 0;
    uint64_t callId = 0;
    uint32_t length = 0;
    uint32_t crc = 0;
};

// Writes the 24 header bytes for `header` (its version/length as given) with the CRC computed
// over them and `payload` (header.length bytes).
void encodeFrameHeader(const FrameHeader& header, const uint8_t* payload, uint8_t out[kFrameHeaderSize]);
// The same for a payload in two pieces, `first` (firstLength bytes) then `second` (the rest of
// header.length): a frame sent gathered from where its parts lie (USB's WINDOW_READ replies).
void encodeFrameHeaderGather(const FrameHeader& header, const uint8_t* first, size_t firstLength,
                             const uint8_t* second, uint8_t out[kFrameHeaderSize]);

// Parses 24 header bytes; false if the magic is wrong. Checks nothing else (see FrameDecoder).
bool parseFrameHeader(const uint8_t in[kFrameHeaderSize], FrameHeader* header);

// CRC of a frame whose header bytes are `header` (the CRC field itself is not covered).
uint32_t frameCrc(const uint8_t header[kFrameHeaderSize], const uint8_t* payload, size_t length);

enum class FrameEventKind : uint8_t {
    kFrame,        // a valid frame: header + payload
    kGarbage,      // skippedBytes bytes that were not a frame were dropped before a magic
    kBadVersion,   // header.version is not kFrameVersion; the header is dropped
    kOversize,     // header.length > the decoder's max payload; header.callId says whose
    kCrcMismatch,  // the frame's CRC does not match; header.callId may be corrupt too
    kTruncated,    // finish() with a partial frame buffered (header valid iff haveHeader)
};

const char* frameEventName(FrameEventKind kind);

struct FrameEvent {
    FrameEventKind kind = FrameEventKind::kFrame;
    FrameHeader header;
    bool haveHeader = false;
    const uint8_t* payload = nullptr;  // kFrame: header.length bytes, valid during the callback
    size_t skippedBytes = 0;           // kGarbage; kTruncated: bytes buffered
};

class FrameListener {
public:
    virtual void onFrameEvent(const FrameEvent& event) = 0;

protected:
    ~FrameListener() = default;
};

// A streaming frame decoder over a caller-provided buffer of at least
// kFrameHeaderSize + maxPayload bytes. Feed it bytes as they arrive, in any chunking; it reports
// each frame and each problem to the listener and resynchronises on the next magic.
class FrameDecoder {
public:
    static constexpr size_t bufferSizeFor(uint32_t maxPayload) { return kFrameHeaderSize + maxPayload; }

    // A buffer smaller than bufferSizeFor(maxPayload) lowers maxPayload to fit.
    FrameDecoder(uint8_t* buffer, size_t capacity, uint32_t maxPayload = kDefaultMaxPayload);

    void feed(const uint8_t* data, size_t length, FrameListener& listener);
    // Reports the whole, valid frames at the start of [data, data + length) where they lie (their
    // payloads point into `data`, no copy), when nothing is buffered; returns the bytes used. It
    // stops at the first thing that is not a whole valid frame: feed() the rest, which handles it.
    size_t feedInPlace(const uint8_t* data, size_t length, FrameListener& listener);
    // End of stream: reports a buffered partial frame (kTruncated) or trailing garbage, then
    // resets.
    void finish(FrameListener& listener);
    void reset();

    uint32_t maxPayload() const { return maxPayload_; }
    size_t buffered() const { return end_ - start_; }

private:
    void process(FrameListener& listener);
    void drop(size_t n) { start_ += n; }
    void reportGarbage(FrameListener& listener);

    uint8_t* buffer_;
    size_t capacity_;
    uint32_t maxPayload_;
    size_t start_ = 0;  // first unconsumed byte
    size_t end_ = 0;    // one past the last buffered byte
    size_t skipped_ = 0;
};

// Little-endian helpers (the wire is little-endian whatever the CPU).
inline void storeLe16(uint8_t* p, uint16_t v) {
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
}
inline void storeLe32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline void storeLe64(uint8_t* p, uint64_t v) {
    for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}
inline uint16_t loadLe16(const uint8_t* p) {
    return uint16_t(p[0] | p[1] << 8);
}
inline uint32_t loadLe32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint64_t loadLe64(const uint8_t* p) {
    return uint64_t(loadLe32(p)) | uint64_t(loadLe32(p + 4)) << 32;
}

}  // namespace npu::proto
