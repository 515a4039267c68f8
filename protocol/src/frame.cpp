#include "npu/protocol/frame.h"

#include <cstring>

#include "npu/protocol/crc32c.h"

namespace npu::proto {

namespace {
constexpr size_t kCrcOffset = 20;
constexpr uint8_t kMagicBytes[4] = {0x4E, 0x50, 0x55, 0x31};  // "NPU1"
}  // namespace

uint32_t frameCrc(const uint8_t header[kFrameHeaderSize], const uint8_t* payload, size_t length) {
    uint32_t crc = crc32c(header, kCrcOffset);
    return length == 0 ? crc : crc32cExtend(crc, payload, length);
}

namespace {
void storeHeaderFields(const FrameHeader& header, uint8_t out[kFrameHeaderSize]) {
    storeLe32(out, kFrameMagic);
    out[4] = header.version;
    out[5] = header.type;
    storeLe16(out + 6, header.flags);
    storeLe64(out + 8, header.callId);
    storeLe32(out + 16, header.length);
}
}  // namespace

void encodeFrameHeader(const FrameHeader& header, const uint8_t* payload, uint8_t out[kFrameHeaderSize]) {
    storeHeaderFields(header, out);
    storeLe32(out + kCrcOffset, frameCrc(out, payload, header.length));
}

void encodeFrameHeaderGather(const FrameHeader& header, const uint8_t* first, size_t firstLength,
                             const uint8_t* second, uint8_t out[kFrameHeaderSize]) {
    storeHeaderFields(header, out);
    const uint32_t crc = frameCrc(out, first, firstLength);
    const size_t rest = header.length - firstLength;
    storeLe32(out + kCrcOffset, rest == 0 ? crc : crc32cExtend(crc, second, rest));
}

bool parseFrameHeader(const uint8_t in[kFrameHeaderSize], FrameHeader* header) {
    if (loadLe32(in) != kFrameMagic) return false;
    header->version = in[4];
    header->type = in[5];
    header->flags = loadLe16(in + 6);
    header->callId = loadLe64(in + 8);
    header->length = loadLe32(in + 16);
    header->crc = loadLe32(in + kCrcOffset);
    return true;
}

const char* frameEventName(FrameEventKind kind) {
    switch (kind) {
        case FrameEventKind::kFrame:
            return "frame";
        case FrameEventKind::kGarbage:
            return "garbage before a frame";
        case FrameEventKind::kBadVersion:
            return "unsupported frame version";
        case FrameEventKind::kOversize:
            return "frame payload larger than the maximum";
        case FrameEventKind::kCrcMismatch:
            return "frame CRC32C mismatch";
        case FrameEventKind::kTruncated:
            return "truncated frame at end of stream";
    }
    return "unknown frame event";
}

FrameDecoder::FrameDecoder(uint8_t* buffer, size_t capacity, uint32_t maxPayload)
    : buffer_(buffer), capacity_(capacity), maxPayload_(maxPayload) {
    if (capacity_ < kFrameHeaderSize) {
        capacity_ = 0;  // unusable: every frame will be reported oversize
        maxPayload_ = 0;
    } else if (capacity_ - kFrameHeaderSize < maxPayload_) {
        maxPayload_ = static_cast<uint32_t>(capacity_ - kFrameHeaderSize);
    }
}

void FrameDecoder::reset() {
    start_ = end_ = 0;
    skipped_ = 0;
}

void FrameDecoder::reportGarbage(FrameListener& listener) {
    if (skipped_ == 0) return;
    FrameEvent e;
    e.kind = FrameEventKind::kGarbage;
    e.skippedBytes = skipped_;
    skipped_ = 0;
    listener.onFrameEvent(e);
}

void FrameDecoder::feed(const uint8_t* data, size_t length, FrameListener& listener) {
    if (capacity_ == 0) {
        skipped_ += length;
        reportGarbage(listener);
        return;
    }
    while (length > 0) {
        if (end_ == capacity_ && start_ > 0) {  // compact: keep the partial frame at the front
            std::memmove(buffer_, buffer_ + start_, end_ - start_);
            end_ -= start_;
            start_ = 0;
        }
        size_t n = capacity_ - end_;
        if (n > length) n = length;
        std::memcpy(buffer_ + end_, data, n);
        end_ += n;
        data += n;
        length -= n;
        process(listener);
    }
}

size_t FrameDecoder::feedInPlace(const uint8_t* data, size_t length, FrameListener& listener) {
    if (capacity_ == 0 || end_ != start_) return 0;  // bytes already buffered come first
    size_t used = 0;
    while (length - used >= kFrameHeaderSize) {
        const uint8_t* p = data + used;
        FrameEvent e;
        if (!parseFrameHeader(p, &e.header) || e.header.version != kFrameVersion ||
            e.header.length > maxPayload_ || length - used - kFrameHeaderSize < e.header.length ||
            frameCrc(p, p + kFrameHeaderSize, e.header.length) != e.header.crc) {
            break;
        }
        reportGarbage(listener);
        e.kind = FrameEventKind::kFrame;
        e.haveHeader = true;
        e.payload = p + kFrameHeaderSize;
        listener.onFrameEvent(e);
        used += kFrameHeaderSize + e.header.length;
    }
    return used;
}

void FrameDecoder::process(FrameListener& listener) {
    for (;;) {
        // Find the magic. A frame never starts inside a magic ("NPU1" does not overlap itself),
        // so scanning byte by byte finds the first possible frame start.
        size_t avail = end_ - start_;
        const uint8_t* p = buffer_ + start_;
        size_t i = 0;
        while (i + 4 <= avail && std::memcmp(p + i, kMagicBytes, 4) != 0) ++i;
        if (i + 4 > avail) {
            // Keep up to 3 trailing bytes that may be the start of a magic.
            size_t keep = 0;
            for (size_t k = (avail < 3 ? avail : 3); k > 0; --k) {
                if (std::memcmp(p + avail - k, kMagicBytes, k) == 0) {
                    keep = k;
                    break;
                }
            }
            skipped_ += avail - keep;
            drop(avail - keep);
            if (start_ == end_) start_ = end_ = 0;
            return;
        }
        if (i > 0) {
            skipped_ += i;
            drop(i);
            p += i;
            avail -= i;
        }
        if (avail < kFrameHeaderSize) return;  // wait for the rest of the header

        FrameEvent e;
        parseFrameHeader(p, &e.header);
        e.haveHeader = true;
        if (e.header.version != kFrameVersion || e.header.length > maxPayload_) {
            reportGarbage(listener);
            e.kind =
                e.header.version != kFrameVersion ? FrameEventKind::kBadVersion : FrameEventKind::kOversize;
            // Drop the header only: scanning for the next magic resynchronises whether or not
            // the sender really sent `length` bytes after it.
            drop(kFrameHeaderSize);
            listener.onFrameEvent(e);
            continue;
        }
        size_t total = kFrameHeaderSize + e.header.length;
        if (avail < total) {
            if (start_ > 0 && capacity_ - start_ < total) {  // make room for the whole frame
                std::memmove(buffer_, p, avail);
                start_ = 0;
                end_ = avail;
            }
            return;
        }
        if (frameCrc(p, p + kFrameHeaderSize, e.header.length) != e.header.crc) {
            reportGarbage(listener);
            e.kind = FrameEventKind::kCrcMismatch;
            // The length may be what was corrupted: rescan just after this magic.
            drop(4);
            listener.onFrameEvent(e);
            continue;
        }
        reportGarbage(listener);
        e.kind = FrameEventKind::kFrame;
        e.payload = p + kFrameHeaderSize;
        listener.onFrameEvent(e);
        drop(total);
        if (start_ == end_) start_ = end_ = 0;
    }
}

void FrameDecoder::finish(FrameListener& listener) {
    size_t avail = end_ - start_;
    const uint8_t* p = buffer_ + start_;
    if (avail >= 4 && std::memcmp(p, kMagicBytes, 4) == 0) {
        reportGarbage(listener);
        FrameEvent e;
        e.kind = FrameEventKind::kTruncated;
        e.skippedBytes = avail;
        if (avail >= kFrameHeaderSize) e.haveHeader = parseFrameHeader(p, &e.header);
        listener.onFrameEvent(e);
    } else {
        skipped_ += avail;
        reportGarbage(listener);
    }
    reset();
}

}  // namespace npu::proto
