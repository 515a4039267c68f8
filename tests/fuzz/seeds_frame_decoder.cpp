// Seeds of fuzz_frame_decoder: well-formed frames, a fragmented message, garbage between frames,
// an oversize header and a truncated tail, each behind the two selector bytes.
#include <cstring>
#include <string>

#include "fuzz_target.h"
#include "npu/protocol/frame.h"

namespace npu::fuzz {
namespace {

void appendFrame(std::vector<uint8_t>& s, uint8_t type, uint16_t flags, uint64_t callId,
                 const std::string& payload) {
    uint8_t header[proto::kFrameHeaderSize];
    proto::FrameHeader h;
    h.type = type;
    h.flags = flags;
    h.callId = callId;
    h.length = static_cast<uint32_t>(payload.size());
    proto::encodeFrameHeader(h, reinterpret_cast<const uint8_t*>(payload.data()), header);
    s.insert(s.end(), header, header + sizeof header);
    s.insert(s.end(), payload.begin(), payload.end());
}

}  // namespace

std::vector<std::vector<uint8_t>> seeds() {
    std::vector<std::vector<uint8_t>> all;
    std::vector<uint8_t> s = {40, 7};  // max payload 16 + 8*40 = 336, chunking seed 7
    appendFrame(s, 12, 0, 1, "\x08\x2a");
    appendFrame(s, 4, proto::kFlagMore, 2, std::string(100, 'a'));
    appendFrame(s, 4, 0, 2, std::string(50, 'b'));
    all.push_back(s);
    s = {2, 200};  // max payload 32: the second frame is oversize
    appendFrame(s, 1, 0, 1, "hello");
    s.insert(s.end(), {'x', 'y', 'N', 'P'});
    appendFrame(s, 7, proto::kFlagResponse, 9, std::string(60, 'c'));
    appendFrame(s, 13, 0, 3, "");
    all.push_back(s);
    s = {255, 1};
    appendFrame(s, 2, 0, 5, std::string(300, 'd'));
    s.resize(s.size() - 20);  // truncated
    all.push_back(s);
    return all;
}

}  // namespace npu::fuzz
