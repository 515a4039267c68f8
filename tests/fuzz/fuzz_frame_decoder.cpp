// Fuzz target: the streaming frame decoder (protocol/, shared by host and firmware) on any byte
// stream in any chunking. Invariants: every reported frame's payload fits the decoder's limit and
// its CRC matches; garbage is reported with a positive byte count; the decoder never holds more
// than its buffer.
//
// Input: [maxPayload selector u8][chunking seed u8] then the stream.
#include <cstring>

#include "fuzz_target.h"
#include "npu/protocol/frame.h"

namespace {

using namespace npu::proto;

struct Checker final : FrameListener {
    uint32_t maxPayload = 0;
    void onFrameEvent(const FrameEvent& e) override {
        switch (e.kind) {
            case FrameEventKind::kFrame: {
                npu::fuzz::require(e.haveHeader && e.header.length <= maxPayload && e.payload != nullptr);
                uint8_t header[kFrameHeaderSize];
                encodeFrameHeader(e.header, e.payload, header);
                FrameHeader parsed;
                npu::fuzz::require(parseFrameHeader(header, &parsed) && parsed.crc == e.header.crc);
                break;
            }
            case FrameEventKind::kGarbage:
                npu::fuzz::require(e.skippedBytes > 0);
                break;
            case FrameEventKind::kOversize:
                npu::fuzz::require(e.header.length > maxPayload);
                break;
            default:
                break;
        }
        npu::fuzz::require(frameEventName(e.kind) != nullptr);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    npu::fuzz::InputReader in(data, size);
    const uint32_t maxPayload = 16u + 8u * in.u8();
    uint32_t chunkSeed = in.u8() | 1u;
    static uint8_t buffer[FrameDecoder::bufferSizeFor(16 + 8 * 255)];
    FrameDecoder decoder(buffer, FrameDecoder::bufferSizeFor(maxPayload), maxPayload);
    Checker checker;
    checker.maxPayload = decoder.maxPayload();
    while (!in.empty()) {
        chunkSeed = chunkSeed * 1103515245u + 12345u;
        size_t got = 0;
        const uint8_t* chunk = in.bytes(1 + (chunkSeed >> 16) % 97, &got);
        decoder.feed(chunk, got, checker);
        npu::fuzz::require(decoder.buffered() <= FrameDecoder::bufferSizeFor(decoder.maxPayload()));
    }
    decoder.finish(checker);
    npu::fuzz::require(decoder.buffered() == 0);
    return 0;
}
