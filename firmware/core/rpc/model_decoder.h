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

// `fields` is npu_proto_PrepareModelRequest_fields or npu_proto_GetSupportedOperationsRequest_fields
// and `request` the matching struct, whose .model is decoded into `model`. On failure the
// status names the list, the index and the limit; the arena may hold partial allocations
// (callers release to a mark).
FwStatus decodeModelRequest(const uint8_t* payload, size_t length, const pb_msgdesc_t* fields, void* request,
                            npu_proto_Model* wireModel, Arena& arena, ModelDesc* model);

}  // namespace npu::fw
