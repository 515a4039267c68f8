#pragma once
// One firmware as the daemon runs it (Runtime + RpcServer over a simulated NPU), small enough to
// build afresh for every fuzz input, driven by a script of records:
//
//   record := kind u8 | method u8 | flags u16 | length u32 | length bytes
//   kind 0: a request frame (header and CRC made here, call ids 1, 2, ...) of `method`, `flags`
//   kind 1: raw bytes straight into the server's byte stream (framing layer)
//   kind 2: bytes written into the host window at offset u32 (the record's first 4 bytes)
//   kind 3: the peer disconnects (onDisconnect)
//
// After each record the server runs until its queue is empty. Every frame the server sends is
// decoded and checked (magic, CRC, payload within limits).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace npu::fuzz {

inline constexpr uint64_t kSessionDramBytes = 24ull << 20;
inline constexpr uint64_t kSessionFirmwareBytes = 16ull << 20;  // host window: the rest
inline constexpr uint32_t kSessionMaxPayload = 256u << 10;

enum RecordKind : uint8_t { kRecordFrame = 0, kRecordRaw = 1, kRecordWindowWrite = 2, kRecordDisconnect = 3 };

struct SessionReply {
    uint8_t method = 0;
    uint16_t flags = 0;
    uint64_t callId = 0;
    std::string payload;
};

// Runs one script; `onReply` (optional) sees every frame the server sent.
void runFirmwareSession(const uint8_t* data, size_t size,
                        const std::function<void(const SessionReply&)>& onReply = {});

// Script building, for seeds and tests.
void appendRecord(std::vector<uint8_t>& script, RecordKind kind, uint8_t method, uint16_t flags,
                  const std::string& bytes);

}  // namespace npu::fuzz
