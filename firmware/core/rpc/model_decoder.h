#pragma once
// Decodes the Model of a PrepareModelRequest / GetSupportedOperationsRequest into a ModelDesc in
// arena memory, without a heap: nanopb callbacks count every list in a first pass, the arrays
// are allocated once, a second pass fills them. Every index is then checked against its table.

#include <cstddef>
#include <cstdint>

#include "npu.npb.h"
#include "npu/fw/arena.h"
#include "npu/fw/runtime.h"

namespace npu::fw {

// CONSTANT_COPY values inside the message (Operand.value) are copied into `arena` (16-byte
// aligned, OperandDesc::value) after these checks, each refused with INVALID_ARGUMENT naming the
// operand and the sizes: at most proto::kMaxInlineValueBytes each and kMaxInlineModelBytes in
// all (npu/protocol/constant_values.h); only for a CONSTANT_COPY operand; never together with a
// device address; exactly the operand's bytes when its type and dimensions say how many.
//
// `fields` is npu_proto_PrepareModelRequest_fields or npu_proto_GetSupportedOperationsRequest_fields
// and `request` the matching struct, whose .model is decoded into `model`. On failure the
// status names the list, the index and the limit; the arena may hold partial allocations
// (callers release to a mark).
FwStatus decodeModelRequest(const uint8_t* payload, size_t length, const pb_msgdesc_t* fields, void* request,
                            npu_proto_Model* wireModel, Arena& arena, ModelDesc* model);

// The bytes of an operand of HAL type `type` and dimensions dims[0..rank), when they are known:
// a scalar type (its element), or a tensor type of known rank without an unknown (0) dimension.
// False for an OEM type, unknown dimensions, an unknown type or a size beyond 64 bits; these are
// the cases hal::validateModel cannot check a constant's length in either.
bool operandBytes(uint32_t type, const uint32_t* dims, uint32_t rank, uint64_t* bytes);

}  // namespace npu::fw
