#include "model_decoder.h"

#include <pb_decode.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "npu/fw/rpc_server.h"
#include "npu/protocol/constant_values.h"

namespace npu::fw {
namespace {

static_assert(kProtocolMinor >= proto::kInlineValuesMinor,
              "Hello must announce that Operand.value is decoded");

constexpr uint32_t kConstantCopy = 3;  // HAL OperandLifeTime::CONSTANT_COPY

struct Lists {
    uint32_t operands = 0;
    uint32_t operations = 0;
    uint32_t opInputs = 0;       // all operations' inputs
    uint32_t opOutputs = 0;      // all operations' outputs
    uint32_t channelScales = 0;  // all operands' per-channel scales
    uint32_t inputs = 0;
    uint32_t outputs = 0;
    uint32_t referenced = 0;
};

// One operation's inputs are contiguous in the input pool (and its outputs in the output pool)
// because nanopb finishes one Operation's callbacks before the next, even if the wire
// interleaves the two lists.
struct DecodeContext {
    bool fill = false;  // false: count pass; true: fill pass
    Lists count;        // counted in pass 1; the fill pass never writes past them
    Lists used;         // cursors of the fill pass
    OperandDesc* operands = nullptr;
    OperationDesc* operations = nullptr;
    uint32_t* opInputs = nullptr;
    uint32_t* opOutputs = nullptr;
    float* scales = nullptr;
    uint32_t* inputs = nullptr;
    uint32_t* outputs = nullptr;
    const char* overflow = nullptr;  // the list that outgrew its first-pass count
    // CONSTANT_COPY values inside the message (Operand.value): the operand being decoded, and
    // main's value bytes so far in this pass.
    Arena* arena = nullptr;
    bool hasValue = false;
    uint32_t valueLength = 0;
    const uint8_t* value = nullptr;  // fill pass: the copy in the arena
    uint64_t valueBytes = 0;
    // Why a callback refused (the decode's status instead of nanopb's error).
    bool refused = false;
    FwStatus refusal;
};

// The index the operand being decoded will get.
uint32_t operandIndex(const DecodeContext* c) {
    return c->fill ? c->used.operands : c->count.operands;
}

// Stops the decode with `status` as its outcome.
bool refuse(DecodeContext* c, const FwStatus& status) {
    c->refused = true;
    c->refusal = status;
    return false;
}

bool countOne(uint32_t& counter) {
    if (counter == UINT32_MAX) return false;
    ++counter;
    return true;
}

template <typename T>
bool store(DecodeContext* c, uint32_t count, uint32_t& cursor, T* array, T value, const char* what) {
    if (cursor >= count) {
        c->overflow = what;
        return false;
    }
    array[cursor++] = value;
    return true;
}

bool decodeIndex(pb_istream_t* s, DecodeContext* c, uint32_t Lists::*list, uint32_t* DecodeContext::*array,
                 const char* what) {
    uint32_t v = 0;
    if (!pb_decode_varint32(s, &v)) return false;
    if (!c->fill) return countOne(c->count.*list);
    return store(c, c->count.*list, c->used.*list, c->*array, v, what);
}

bool onInputIndex(pb_istream_t* s, const pb_field_t*, void** arg) {
    return decodeIndex(s, static_cast<DecodeContext*>(*arg), &Lists::inputs, &DecodeContext::inputs,
                       "input_indexes");
}
bool onOutputIndex(pb_istream_t* s, const pb_field_t*, void** arg) {
    return decodeIndex(s, static_cast<DecodeContext*>(*arg), &Lists::outputs, &DecodeContext::outputs,
                       "output_indexes");
}
bool onOperationInput(pb_istream_t* s, const pb_field_t*, void** arg) {
    return decodeIndex(s, static_cast<DecodeContext*>(*arg), &Lists::opInputs, &DecodeContext::opInputs,
                       "operation inputs");
}
bool onOperationOutput(pb_istream_t* s, const pb_field_t*, void** arg) {
    return decodeIndex(s, static_cast<DecodeContext*>(*arg), &Lists::opOutputs, &DecodeContext::opOutputs,
                       "operation outputs");
}

bool onChannelScale(pb_istream_t* s, const pb_field_t*, void** arg) {
    auto* c = static_cast<DecodeContext*>(*arg);
    float v = 0;
    if (!pb_decode_fixed32(s, &v)) return false;
    if (!c->fill) return countOne(c->count.channelScales);
    return store(c, c->count.channelScales, c->used.channelScales, c->scales, v, "channel_scales");
}

// Operand.value: its length is checked before a byte is read (the operand's other fields may
// come later on the wire, so they are checked in onOperand); the fill pass copies it into the
// arena. A second value for one operand replaces the first, as in libprotobuf (both count).
bool onValue(pb_istream_t* s, const pb_field_t*, void** arg) {
    auto* c = static_cast<DecodeContext*>(*arg);
    const size_t length = s->bytes_left;
    const uint32_t index = operandIndex(c);
    if (length > proto::kMaxInlineValueBytes) {
        return refuse(c, FwStatus::make(Code::kInvalidArgument,
                                        "model.main.operands[%" PRIu32
                                        "].value: %zu bytes inside the message; at most %" PRIu32
                                        " may ride there (stage a larger value in the host window)",
                                        index, length, proto::kMaxInlineValueBytes));
    }
    if (length > proto::kMaxInlineModelBytes - c->valueBytes) {
        return refuse(c,
                      FwStatus::make(Code::kInvalidArgument,
                                     "model.main.operands[%" PRIu32
                                     "].value: %zu bytes bring the model's values inside the message to "
                                     "%llu bytes; at most %" PRIu32 " may ride there",
                                     index, length, static_cast<unsigned long long>(c->valueBytes + length),
                                     proto::kMaxInlineModelBytes));
    }
    c->valueBytes += length;
    c->hasValue = true;
    c->valueLength = static_cast<uint32_t>(length);
    c->value = nullptr;
    if (!c->fill || length == 0) return pb_read(s, nullptr, length);
    auto* copy = static_cast<uint8_t*>(c->arena->allocate(length, 16));
    if (copy == nullptr) {
        return refuse(
            c, FwStatus::make(Code::kResourceExhaustedPersistent,
                              "model.main.operands[%" PRIu32
                              "].value: %zu bytes do not fit the firmware arena (%zu of %zu "
                              "bytes free)",
                              index, length, c->arena->capacity() - c->arena->used(), c->arena->capacity()));
    }
    if (!pb_read(s, copy, length)) return false;
    c->value = copy;
    return true;
}

// The checks of a value inside the message against its operand (the operand is `index`).
FwStatus checkValue(uint32_t index, const npu_proto_Operand& wire, uint32_t length) {
    if (wire.lifetime != kConstantCopy) {
        return FwStatus::make(Code::kInvalidArgument,
                              "model.main.operands[%" PRIu32 "]: a %" PRIu32
                              "-byte value inside the message for an operand of lifetime %" PRIu32
                              "; only CONSTANT_COPY (%" PRIu32 ") values ride there",
                              index, length, wire.lifetime, kConstantCopy);
    }
    if (wire.data_addr != 0 || wire.data_length != 0) {
        return FwStatus::make(
            Code::kInvalidArgument,
            "model.main.operands[%" PRIu32 "]: both a %" PRIu32 "-byte value inside the message and %" PRIu32
            " bytes at device address 0x%llx; a constant has one or the other",
            index, length, wire.data_length, static_cast<unsigned long long>(wire.data_addr));
    }
    uint64_t expected = 0;
    if (operandBytes(wire.type, wire.dimensions, wire.dimensions_count, &expected) && expected != length) {
        char dims[6 * 11 + 1] = {};
        size_t at = 0;
        for (uint32_t i = 0; i < wire.dimensions_count && at < sizeof(dims); ++i) {
            const int n =
                std::snprintf(dims + at, sizeof(dims) - at, "%s%" PRIu32, i ? "," : "", wire.dimensions[i]);
            if (n < 0) break;
            at += static_cast<size_t>(n);
        }
        return FwStatus::make(Code::kInvalidArgument,
                              "model.main.operands[%" PRIu32 "].value: %" PRIu32 " bytes, but type %" PRIu32
                              " of dimensions [%s] takes %llu bytes",
                              index, length, wire.type, dims, static_cast<unsigned long long>(expected));
    }
    return FwStatus::okStatus();
}

bool onOperand(pb_istream_t* s, const pb_field_t*, void** arg) {
    auto* c = static_cast<DecodeContext*>(*arg);
    npu_proto_Operand wire = npu_proto_Operand_init_zero;
    wire.channel_scales.funcs.decode = onChannelScale;
    wire.channel_scales.arg = c;
    wire.value.funcs.decode = onValue;
    wire.value.arg = c;
    c->hasValue = false;
    c->valueLength = 0;
    c->value = nullptr;
    const uint32_t scaleBegin = c->used.channelScales;
    if (!pb_decode(s, npu_proto_Operand_fields, &wire)) return false;
    if (c->hasValue) {
        if (FwStatus st = checkValue(operandIndex(c), wire, c->valueLength); !st.ok()) return refuse(c, st);
    }
    if (!c->fill) return countOne(c->count.operands);
    if (c->used.operands >= c->count.operands) {
        c->overflow = "operands";
        return false;
    }
    OperandDesc& o = c->operands[c->used.operands++];
    o.type = wire.type;
    o.rank = wire.dimensions_count;  // nanopb bounds it by max_count (kMaxRank)
    for (uint32_t i = 0; i < o.rank; ++i) o.dims[i] = wire.dimensions[i];
    o.scale = wire.scale;
    o.zeroPoint = wire.zero_point;
    o.lifetime = wire.lifetime;
    o.dataAddr = wire.data_addr;
    o.dataLength = c->hasValue ? c->valueLength : wire.data_length;
    o.value = c->value;
    o.channelScaleCount = c->used.channelScales - scaleBegin;
    o.channelScales = o.channelScaleCount > 0 ? c->scales + scaleBegin : nullptr;
    o.channelDim = wire.channel_dim;
    return true;
}

bool onOperation(pb_istream_t* s, const pb_field_t*, void** arg) {
    auto* c = static_cast<DecodeContext*>(*arg);
    npu_proto_Operation wire = npu_proto_Operation_init_zero;
    wire.inputs.funcs.decode = onOperationInput;
    wire.inputs.arg = c;
    wire.outputs.funcs.decode = onOperationOutput;
    wire.outputs.arg = c;
    const uint32_t inBegin = c->used.opInputs;
    const uint32_t outBegin = c->used.opOutputs;
    if (!pb_decode(s, npu_proto_Operation_fields, &wire)) return false;
    if (!c->fill) return countOne(c->count.operations);
    if (c->used.operations >= c->count.operations) {
        c->overflow = "operations";
        return false;
    }
    OperationDesc& op = c->operations[c->used.operations++];
    op.type = wire.type;
    op.inputCount = c->used.opInputs - inBegin;
    op.inputs = op.inputCount > 0 ? c->opInputs + inBegin : nullptr;
    op.outputCount = c->used.opOutputs - outBegin;
    op.outputs = op.outputCount > 0 ? c->opOutputs + outBegin : nullptr;
    return true;
}

bool onReferenced(pb_istream_t* s, const pb_field_t*, void** arg) {
    auto* c = static_cast<DecodeContext*>(*arg);
    // IF/WHILE bodies are not compiled yet: counted (so the runtime can refuse them), skipped.
    if (!c->fill && !countOne(c->count.referenced)) return false;
    if (c->fill) ++c->used.referenced;
    return pb_read(s, nullptr, s->bytes_left);
}

void attach(npu_proto_Model* m, DecodeContext* c) {
    m->main.operands.funcs.decode = onOperand;
    m->main.operands.arg = c;
    m->main.operations.funcs.decode = onOperation;
    m->main.operations.arg = c;
    m->main.input_indexes.funcs.decode = onInputIndex;
    m->main.input_indexes.arg = c;
    m->main.output_indexes.funcs.decode = onOutputIndex;
    m->main.output_indexes.arg = c;
    m->referenced.funcs.decode = onReferenced;
    m->referenced.arg = c;
}

template <typename T>
bool allocate(Arena& arena, uint32_t count, T** out) {
    *out = nullptr;
    if (count == 0) return true;
    *out = arena.allocateArray<T>(count);
    return *out != nullptr;
}

FwStatus checkIndexes(const char* what, uint32_t owner, const uint32_t* list, uint32_t count,
                      uint32_t operandCount) {
    for (uint32_t i = 0; i < count; ++i) {
        if (list[i] >= operandCount) {
            if (owner == UINT32_MAX) {
                return FwStatus::make(Code::kInvalidArgument,
                                      "model.main.%s[%" PRIu32 "] = %" PRIu32 ": out of range (%" PRIu32
                                      " operands)",
                                      what, i, list[i], operandCount);
            }
            return FwStatus::make(Code::kInvalidArgument,
                                  "model.main.operations[%" PRIu32 "].%s[%" PRIu32 "] = %" PRIu32
                                  ": out of range (%" PRIu32 " operands)",
                                  owner, what, i, list[i], operandCount);
        }
    }
    return FwStatus::okStatus();
}

}  // namespace

bool operandBytes(uint32_t type, const uint32_t* dims, uint32_t rank, uint64_t* bytes) {
    uint64_t element = 0;
    bool scalar = false;
    switch (type) {
        case 0:   // FLOAT32
        case 1:   // INT32
        case 2:   // UINT32
        case 15:  // SUBGRAPH
            element = 4, scalar = true;
            break;
        case 6:  // BOOL
            element = 1, scalar = true;
            break;
        case 10:  // FLOAT16
            element = 2, scalar = true;
            break;
        case 3:  // TENSOR_FLOAT32
        case 4:  // TENSOR_INT32
            element = 4;
            break;
        case 7:   // TENSOR_QUANT16_SYMM
        case 8:   // TENSOR_FLOAT16
        case 12:  // TENSOR_QUANT16_ASYMM
            element = 2;
            break;
        case 5:      // TENSOR_QUANT8_ASYMM
        case 9:      // TENSOR_BOOL8
        case 11:     // TENSOR_QUANT8_SYMM_PER_CHANNEL
        case 13:     // TENSOR_QUANT8_SYMM
        case 14:     // TENSOR_QUANT8_ASYMM_SIGNED
        case 10001:  // TENSOR_OEM_BYTE
            element = 1;
            break;
        default:  // OEM (10000) and unknown types: no size
            return false;
    }
    if (scalar) {
        *bytes = element;
        return true;
    }
    if (rank == 0 || dims == nullptr) return false;
    uint64_t n = element;
    for (uint32_t i = 0; i < rank; ++i) {
        if (dims[i] == 0 || __builtin_mul_overflow(n, uint64_t{dims[i]}, &n)) return false;
    }
    *bytes = n;
    return true;
}

FwStatus decodeModelRequest(const uint8_t* payload, size_t length, const pb_msgdesc_t* fields, void* request,
                            npu_proto_Model* wireModel, Arena& arena, ModelDesc* model) {
    DecodeContext ctx;
    ctx.arena = &arena;
    // Pass 1: count every list (and check every value inside the message, before any is copied).
    attach(wireModel, &ctx);
    pb_istream_t s1 = pb_istream_from_buffer(payload, length);
    if (!pb_decode(&s1, fields, request)) {
        if (ctx.refused) return ctx.refusal;
        return FwStatus::make(Code::kInvalidArgument, "cannot decode the model (%zu bytes): %s", length,
                              PB_GET_ERROR(&s1));
    }
    const Lists& n = ctx.count;
    if (!allocate(arena, n.operands, &ctx.operands) || !allocate(arena, n.operations, &ctx.operations) ||
        !allocate(arena, n.opInputs, &ctx.opInputs) || !allocate(arena, n.opOutputs, &ctx.opOutputs) ||
        !allocate(arena, n.channelScales, &ctx.scales) || !allocate(arena, n.inputs, &ctx.inputs) ||
        !allocate(arena, n.outputs, &ctx.outputs)) {
        return FwStatus::make(
            Code::kResourceExhaustedPersistent,
            "model too large for the firmware arena: %" PRIu32 " operands, %" PRIu32 " operations, %" PRIu32
            " operation "
            "inputs, %" PRIu32 " outputs, %" PRIu32 " channel scales (%zu of %zu arena bytes free)",
            n.operands, n.operations, n.opInputs, n.opOutputs, n.channelScales,
            arena.capacity() - arena.used(), arena.capacity());
    }
    // Pass 2: fill the arrays (the request struct is decoded again from scratch).
    ctx.fill = true;
    ctx.valueBytes = 0;
    attach(wireModel, &ctx);
    pb_istream_t s2 = pb_istream_from_buffer(payload, length);
    if (!pb_decode(&s2, fields, request)) {
        if (ctx.refused) return ctx.refusal;
        return FwStatus::make(Code::kInvalidArgument, "cannot decode the model (fill pass): %s%s",
                              ctx.overflow ? "list grew between passes: " : "",
                              ctx.overflow ? ctx.overflow : PB_GET_ERROR(&s2));
    }

    ModelDesc m;
    m.operands = ctx.operands;
    m.operandCount = ctx.used.operands;
    m.operations = ctx.operations;
    m.operationCount = ctx.used.operations;
    m.inputIndexes = ctx.inputs;
    m.inputCount = ctx.used.inputs;
    m.outputIndexes = ctx.outputs;
    m.outputCount = ctx.used.outputs;
    m.referencedSubgraphCount = ctx.count.referenced;
    m.relaxed = wireModel->relax_float32_to_float16;

    for (uint32_t i = 0; i < m.operationCount; ++i) {
        const OperationDesc& op = m.operations[i];
        FwStatus st = checkIndexes("inputs", i, op.inputs, op.inputCount, m.operandCount);
        if (!st.ok()) return st;
        st = checkIndexes("outputs", i, op.outputs, op.outputCount, m.operandCount);
        if (!st.ok()) return st;
    }
    FwStatus st = checkIndexes("input_indexes", UINT32_MAX, m.inputIndexes, m.inputCount, m.operandCount);
    if (!st.ok()) return st;
    st = checkIndexes("output_indexes", UINT32_MAX, m.outputIndexes, m.outputCount, m.operandCount);
    if (!st.ok()) return st;
    for (uint32_t i = 0; i < m.operandCount; ++i) {
        const OperandDesc& o = m.operands[i];
        if (o.channelScaleCount > 0 && o.rank > 0 && o.channelDim >= o.rank) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "model.main.operands[%" PRIu32 "].channel_dim = %" PRIu32
                                  ": out of range (rank %" PRIu32 ")",
                                  i, o.channelDim, o.rank);
        }
    }
    *model = m;
    return FwStatus::okStatus();
}

}  // namespace npu::fw
