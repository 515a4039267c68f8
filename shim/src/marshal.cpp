#include "marshal.h"

#include <cstring>
#include <string>

namespace npu::shim {
namespace {

bool isConstant(hal::OperandLifeTime lifetime) {
    return lifetime == hal::OperandLifeTime::CONSTANT_COPY ||
           lifetime == hal::OperandLifeTime::CONSTANT_REFERENCE;
}

// Where the bytes of a constant operand are in host memory (the model is already validated,
// so locations are in range).
const uint8_t* constantBytes(const hal::Model& model, const hal::Operand& operand) {
    const auto& loc = operand.location;
    if (operand.lifetime == hal::OperandLifeTime::CONSTANT_COPY)
        return model.operandValues.data() + loc.offset;
    return model.pools[loc.poolIndex]->data() + loc.offset;
}

uint64_t alignUp(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

// The device address of a CONSTANT_REFERENCE the firmware reads in its mapped pool; nullopt when
// the constant is staged.
std::optional<uint64_t> inPlace(const hal::Operand& operand, const PoolAddresses& pools) {
    const auto& loc = operand.location;
    if (operand.lifetime != hal::OperandLifeTime::CONSTANT_REFERENCE || loc.poolIndex >= pools.size() ||
        !pools[loc.poolIndex] || loc.offset % 16 != 0) {
        return std::nullopt;
    }
    return *pools[loc.poolIndex] + loc.offset;
}

void marshalSubgraph(const hal::Model& model, const hal::Subgraph& sg, const PoolAddresses& pools,
                     uint8_t* staging, uint64_t stagingAddr, uint64_t* cursor, proto::Subgraph* out) {
    for (const hal::Operand& operand : sg.operands) {
        proto::Operand* o = out->add_operands();
        o->set_type(static_cast<uint32_t>(operand.type));
        for (uint32_t d : operand.dimensions) o->add_dimensions(d);
        o->set_scale(operand.scale);
        o->set_zero_point(operand.zeroPoint);
        o->set_lifetime(static_cast<uint32_t>(operand.lifetime));
        if (operand.channelQuant) {
            for (float s : operand.channelQuant->scales) o->add_channel_scales(s);
            o->set_channel_dim(operand.channelQuant->channelDim);
        }
        if (operand.lifetime == hal::OperandLifeTime::SUBGRAPH) {
            o->set_subgraph(operand.location.offset);  // HAL: the referenced subgraph's index
        } else if (auto addr = inPlace(operand, pools); addr && operand.location.length > 0) {
            o->set_data_addr(*addr);
            o->set_data_length(operand.location.length);
        } else if (isConstant(operand.lifetime) && operand.location.length > 0) {
            const uint32_t len = operand.location.length;
            std::memcpy(staging + *cursor, constantBytes(model, operand), len);
            o->set_data_addr(stagingAddr + *cursor);
            o->set_data_length(len);
            *cursor = alignUp(*cursor + len, 16);
        }
    }
    for (const hal::Operation& op : sg.operations) {
        proto::Operation* p = out->add_operations();
        p->set_type(static_cast<uint32_t>(op.type));
        for (uint32_t i : op.inputs) p->add_inputs(i);
        for (uint32_t i : op.outputs) p->add_outputs(i);
    }
    for (uint32_t i : sg.inputIndexes) out->add_input_indexes(i);
    for (uint32_t i : sg.outputIndexes) out->add_output_indexes(i);
}

uint64_t constantBytesNeeded(const hal::Subgraph& sg, const PoolAddresses& pools) {
    uint64_t total = 0;
    for (const hal::Operand& operand : sg.operands) {
        if (isConstant(operand.lifetime) && !inPlace(operand, pools)) {
            total = alignUp(total + operand.location.length, 16);
        }
    }
    return total;
}

hal::PerformanceInfo perf(const proto::PerformanceInfo& p) {
    return {p.exec_time(), p.power_usage()};
}

}  // namespace

Result<WindowBlock> marshalModel(const hal::Model& model, HostWindow& window, proto::Model* out,
                                 const PoolAddresses& pools) {
    uint64_t needed = constantBytesNeeded(model.main, pools);
    for (const auto& sg : model.referenced) needed += constantBytesNeeded(sg, pools);
    WindowBlock block;
    uint8_t* staging = nullptr;
    uint64_t stagingAddr = 0;
    if (needed > 0) {
        auto addr = window.allocate(needed);
        if (!addr) return std::unexpected(addr.error());
        block = WindowBlock(&window, *addr, needed);
        staging = block.data();
        stagingAddr = *addr;
    }
    uint64_t cursor = 0;
    marshalSubgraph(model, model.main, pools, staging, stagingAddr, &cursor, out->mutable_main());
    for (const auto& sg : model.referenced) {
        marshalSubgraph(model, sg, pools, staging, stagingAddr, &cursor, out->add_referenced());
    }
    out->set_relax_float32_to_float16(model.relaxComputationFloat32toFloat16);
    return block;
}

hal::Capabilities capabilitiesFromWire(const proto::CapabilitiesReply& reply) {
    hal::Capabilities caps;
    caps.relaxedFloat32toFloat16PerformanceScalar = perf(reply.relaxed_scalar());
    caps.relaxedFloat32toFloat16PerformanceTensor = perf(reply.relaxed_tensor());
    for (const auto& p : reply.operand_performance()) {
        caps.operandPerformance.push_back({static_cast<hal::OperandType>(p.type()), perf(p.info())});
    }
    caps.ifPerformance = perf(reply.if_performance());
    caps.whilePerformance = perf(reply.while_performance());
    return caps;
}

}  // namespace npu::shim
