#include "buffer_table.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace npu::fw {

namespace {
// token = generation << 8 | slot, generation >= 1 (so 0 is never a token); a reset keeps the
// generations, so a token from before it never names a buffer allocated after it.
constexpr uint32_t kSlotBits = 8;
static_assert(kMaxBuffers <= (1u << kSlotBits));

const char* ioName(bool input) {
    return input ? "input" : "output";
}

bool sameShape(const IoDesc& a, const IoDesc& b) {
    if (a.rank != b.rank) return false;
    for (uint32_t k = 0; k < a.rank && k < kMaxRank; ++k) {
        if (a.dims[k] != b.dims[k]) return false;
    }
    return true;
}

// A rank and dimensions given by the host (0 = unknown) that agree with `shape`.
bool agrees(uint32_t rank, const uint32_t* dims, const IoDesc& shape) {
    if (rank == 0) return true;
    if (rank != shape.rank) return false;
    for (uint32_t k = 0; k < rank && k < kMaxRank; ++k) {
        if (dims[k] != 0 && dims[k] != shape.dims[k]) return false;
    }
    return true;
}
}  // namespace

bool BufferTable::init(Arena& arena) {
    slots_ = arena.allocateArray<Slot>(kMaxBuffers);
    return slots_ != nullptr;
}

FwStatus BufferTable::find(uint32_t session, uint32_t token, const char* what, Slot** slot) const {
    const uint32_t index = token & ((1u << kSlotBits) - 1);
    Slot* s = index < kMaxBuffers ? &slots_[index] : nullptr;
    // Another session's buffer is reported exactly like one that does not exist.
    if (s == nullptr || !s->used || s->generation != (token >> kSlotBits) || s->session != session) {
        return FwStatus::make(Code::kInvalidArgument,
                              "%s: buffer token %" PRIu32
                              " is unknown to this client (never allocated, released, or lost in a reset)",
                              what, token);
    }
    *slot = s;
    return FwStatus::okStatus();
}

FwStatus BufferTable::checkRoles(const BufferSpec& spec, const BlobStore& store, IoDesc* shape) const {
    if (spec.roleCount == 0 || spec.roles == nullptr) {
        return FwStatus::make(Code::kInvalidArgument, "AllocateBuffer: no input or output role");
    }
    if (spec.roleCount > kMaxBufferRoles) {
        return FwStatus::make(Code::kInvalidArgument,
                              "AllocateBuffer: %" PRIu32 " roles; the firmware keeps at most %" PRIu32,
                              spec.roleCount, kMaxBufferRoles);
    }
    for (uint32_t r = 0; r < spec.roleCount; ++r) {
        const BufferRole& role = spec.roles[r];
        const LoadedBlob* blob = store.find(role.modelHandle);
        if (blob == nullptr) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "AllocateBuffer: role %" PRIu32 " names unknown model handle 0x%" PRIx32, r,
                                  role.modelHandle);
        }
        const uint32_t count = role.input ? blob->view.numInputs() : blob->view.numOutputs();
        if (role.ioIndex >= count) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "AllocateBuffer: role %" PRIu32 " names %s %" PRIu32 " of model 0x%" PRIx32
                                  ", which has %" PRIu32,
                                  r, ioName(role.input), role.ioIndex, role.modelHandle, count);
        }
        for (uint32_t q = 0; q < r; ++q) {
            const BufferRole& o = spec.roles[q];
            if (o.modelHandle == role.modelHandle && o.input == role.input && o.ioIndex == role.ioIndex) {
                return FwStatus::make(Code::kInvalidArgument,
                                      "AllocateBuffer: roles %" PRIu32 " and %" PRIu32 " are the same", q, r);
            }
        }
        const IoDesc d = blob->view.io(role.input ? role.ioIndex : blob->view.numInputs() + role.ioIndex);
        if (r == 0) {
            *shape = d;
        } else if (!sameShape(d, *shape)) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "AllocateBuffer: role %" PRIu32 " (rank %" PRIu32
                                  ") disagrees with role 0 (rank %" PRIu32 ") on the dimensions",
                                  r, d.rank, shape->rank);
        }
    }
    if (!agrees(spec.rank, spec.dims, *shape)) {
        return FwStatus::make(Code::kInvalidArgument,
                              "AllocateBuffer: the given dimensions (rank %" PRIu32
                              ") conflict with the roles' (rank %" PRIu32 ")",
                              spec.rank, shape->rank);
    }
    if (spec.bytes != 0 && spec.bytes != shape->bytes) {
        return FwStatus::make(Code::kInvalidArgument,
                              "AllocateBuffer: %llu bytes asked, the roles' tensor has %" PRIu32,
                              static_cast<unsigned long long>(spec.bytes), shape->bytes);
    }
    return FwStatus::okStatus();
}

FwStatus BufferTable::allocate(const BufferSpec& spec, const BlobStore& store, DramAllocator& dram,
                               uint32_t* token) {
    IoDesc shape;
    FwStatus st = checkRoles(spec, store, &shape);
    if (!st.ok()) return st;
    uint32_t index = kMaxBuffers;
    for (uint32_t i = 0; i < kMaxBuffers && index == kMaxBuffers; ++i) {
        if (!slots_[i].used) index = i;
    }
    if (index == kMaxBuffers) {
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "AllocateBuffer: %" PRIu32 " buffers allocated (the firmware's limit)",
                              kMaxBuffers);
    }
    uint64_t addr = 0;
    if (!dram.allocate(shape.bytes > 0 ? shape.bytes : 1, &addr)) {
        return FwStatus::make(Code::kResourceExhaustedTransient,
                              "AllocateBuffer: no firmware DRAM for %" PRIu32 " bytes (%llu in use)",
                              shape.bytes, static_cast<unsigned long long>(dram.bytesInUse()));
    }
    Slot& s = slots_[index];
    const uint32_t generation = (s.generation + 1) & ((1u << (32 - kSlotBits)) - 1);
    s = Slot{};
    s.generation = generation == 0 ? 1 : generation;
    s.used = true;
    s.session = spec.session;
    s.type = spec.type;
    s.addr = addr;
    s.capacity = shape.bytes;
    s.shape = shape;
    s.roleCount = spec.roleCount;
    for (uint32_t r = 0; r < spec.roleCount; ++r) s.roles[r] = spec.roles[r];
    *token = (s.generation << kSlotBits) | index;
    return FwStatus::okStatus();
}

FwStatus BufferTable::release(uint32_t session, uint32_t token, DramAllocator& dram) {
    Slot* s = nullptr;
    FwStatus st = find(session, token, "ReleaseBuffer", &s);
    if (!st.ok()) return st;
    dram.free(s->addr);
    s->used = false;
    return FwStatus::okStatus();
}

uint32_t BufferTable::releaseSession(uint32_t session, DramAllocator& dram) {
    uint32_t n = 0;
    for (uint32_t i = 0; slots_ != nullptr && i < kMaxBuffers; ++i) {
        if (!slots_[i].used || slots_[i].session != session) continue;
        dram.free(slots_[i].addr);
        slots_[i].used = false;
        ++n;
    }
    return n;
}

void BufferTable::clear() {
    for (uint32_t i = 0; slots_ != nullptr && i < kMaxBuffers; ++i) slots_[i].used = false;
}

FwStatus BufferTable::write(uint32_t session, uint32_t token, uint8_t* dram, uint64_t length, uint32_t rank,
                            const uint32_t* dims, const uint8_t* window) {
    Slot* s = nullptr;
    FwStatus st = find(session, token, "BufferCopy to the device", &s);
    if (!st.ok()) return st;
    if (!agrees(rank, dims, s->shape)) {
        return FwStatus::make(Code::kInvalidArgument,
                              "BufferCopy to the device: dimensions (rank %" PRIu32
                              ") conflict with buffer token %" PRIu32 "'s (rank %" PRIu32 ")",
                              rank, token, s->shape.rank);
    }
    if (length != s->shape.bytes) {
        return FwStatus::make(Code::kInvalidArgument,
                              "BufferCopy to the device: %llu bytes given, buffer token %" PRIu32
                              " holds a tensor of %" PRIu32,
                              static_cast<unsigned long long>(length), token, s->shape.bytes);
    }
    if (length > 0) std::memcpy(dram + s->addr, window, length);
    s->initialized = true;
    return FwStatus::okStatus();
}

FwStatus BufferTable::read(uint32_t session, uint32_t token, const uint8_t* dram, uint64_t length,
                           uint8_t* window) {
    Slot* s = nullptr;
    FwStatus st = find(session, token, "BufferCopy from the device", &s);
    if (!st.ok()) return st;
    if (!s->initialized) {
        return FwStatus::make(Code::kGeneralFailure,
                              "BufferCopy from the device: buffer token %" PRIu32 " holds no data yet",
                              token);
    }
    if (length != s->shape.bytes) {
        return FwStatus::make(
            Code::kInvalidArgument,
            "BufferCopy from the device: the destination has %llu bytes, buffer token %" PRIu32
            " holds %" PRIu32,
            static_cast<unsigned long long>(length), token, s->shape.bytes);
    }
    if (length > 0) std::memcpy(window, dram + s->addr, length);
    return FwStatus::okStatus();
}

bool BufferTable::hasRole(const Slot& s, uint32_t handle, bool input, uint32_t index) {
    for (uint32_t r = 0; r < s.roleCount; ++r) {
        const BufferRole& role = s.roles[r];
        if (role.modelHandle == handle && role.input == input && role.ioIndex == index) return true;
    }
    return false;
}

FwStatus BufferTable::bindOne(uint32_t session, uint32_t handle, bool input, uint32_t index, IoArg& arg) {
    char what[32];
    std::snprintf(what, sizeof(what), "execute: %s %" PRIu32, ioName(input), index);
    Slot* s = nullptr;
    FwStatus st = find(session, arg.bufferToken, what, &s);
    if (!st.ok()) return st;
    if (!hasRole(*s, handle, input, index)) {
        return FwStatus::make(Code::kInvalidArgument,
                              "%s: buffer token %" PRIu32
                              " was not allocated with that role of model 0x%" PRIx32,
                              what, arg.bufferToken, handle);
    }
    if (input && !s->initialized) {
        return FwStatus::make(Code::kGeneralFailure, "%s: buffer token %" PRIu32 " holds no data yet", what,
                              arg.bufferToken);
    }
    if (!agrees(arg.rank, arg.dims, s->shape)) {
        return FwStatus::make(Code::kInvalidArgument,
                              "%s: the request's dimensions (rank %" PRIu32
                              ") conflict with buffer token %" PRIu32 "'s (rank %" PRIu32 ")",
                              what, arg.rank, arg.bufferToken, s->shape.rank);
    }
    arg.addr = s->addr;
    arg.length = static_cast<uint32_t>(s->capacity);
    arg.rank = 0;  // the model's, which the buffer's equal
    arg.deviceBuffer = true;
    return FwStatus::okStatus();
}

FwStatus BufferTable::bind(uint32_t session, uint32_t handle, IoArg* inputs, uint32_t inputCount,
                           IoArg* outputs, uint32_t outputCount) {
    for (uint32_t o = 0; o < outputCount; ++o) {
        if (outputs[o].hasNoValue || outputs[o].bufferToken == 0) continue;
        for (uint32_t i = 0; i < inputCount; ++i) {
            if (!inputs[i].hasNoValue && inputs[i].bufferToken == outputs[o].bufferToken) {
                return FwStatus::make(Code::kInvalidArgument,
                                      "execute: buffer token %" PRIu32 " is input %" PRIu32
                                      " and output %" PRIu32 " of one execution",
                                      outputs[o].bufferToken, i, o);
            }
        }
    }
    for (uint32_t i = 0; i < inputCount + outputCount; ++i) {
        const bool input = i < inputCount;
        IoArg& arg = input ? inputs[i] : outputs[i - inputCount];
        if (arg.hasNoValue || arg.bufferToken == 0) continue;
        FwStatus st = bindOne(session, handle, input, input ? i : i - inputCount, arg);
        if (!st.ok()) return st;
    }
    return FwStatus::okStatus();
}

void BufferTable::written(const IoArg* outputs, uint32_t outputCount) {
    for (uint32_t o = 0; o < outputCount; ++o) {
        const uint32_t token = outputs[o].bufferToken;
        if (outputs[o].hasNoValue || token == 0 || !outputs[o].deviceBuffer) continue;
        const uint32_t index = token & ((1u << kSlotBits) - 1);
        Slot& s = slots_[index < kMaxBuffers ? index : 0];
        if (index < kMaxBuffers && s.used && s.generation == (token >> kSlotBits)) s.initialized = true;
    }
}

uint32_t BufferTable::count() const {
    uint32_t n = 0;
    for (uint32_t i = 0; slots_ != nullptr && i < kMaxBuffers; ++i) n += slots_[i].used ? 1 : 0;
    return n;
}

uint64_t BufferTable::bytes() const {
    uint64_t n = 0;
    for (uint32_t i = 0; slots_ != nullptr && i < kMaxBuffers; ++i)
        n += slots_[i].used ? slots_[i].capacity : 0;
    return n;
}

}  // namespace npu::fw
