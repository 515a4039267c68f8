#include "marshal.h"

#include <cstring>
#include <string>

#include "npu/protocol/vlog.h"

namespace npu::shim {
namespace {

enum class Place : uint8_t { kNone, kInMessage, kInPlace, kStaged };

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

// Decides where every constant of the model goes, subgraph by subgraph (main first) in operand
// order: the order marshalSubgraph walks them in.
struct Plan {
    std::vector<Place> places;  // one per operand of main, then of each referenced subgraph
    ConstantPlacement placement;
    uint64_t stagingBytes = 0;  // the window block: staged values, each 16-byte aligned
};

Plan plan(const hal::Model& model, const PoolAddresses& pools, const InlineRule& rule) {
    Plan p;
    auto add = [&](const hal::Subgraph& sg) {
        for (const hal::Operand& operand : sg.operands) {
            const uint32_t len = operand.location.length;
            Place place = Place::kNone;
            if (len == 0 || operand.lifetime == hal::OperandLifeTime::SUBGRAPH) {
                place = Place::kNone;
            } else if (operand.lifetime == hal::OperandLifeTime::CONSTANT_COPY && len <= rule.maxValueBytes &&
                       len <= rule.maxModelBytes - p.placement.inMessageBytes) {
                place = Place::kInMessage;
                p.placement.inMessageCount++;
                p.placement.inMessageBytes += len;
            } else if (inPlace(operand, pools)) {
                place = Place::kInPlace;
                p.placement.inPlaceCount++;
                p.placement.inPlaceBytes += len;
            } else if (operand.lifetime == hal::OperandLifeTime::CONSTANT_COPY ||
                       operand.lifetime == hal::OperandLifeTime::CONSTANT_REFERENCE) {
                place = Place::kStaged;
                p.placement.stagedCount++;
                p.placement.stagedBytes += len;
                p.stagingBytes = alignUp(p.stagingBytes + len, 16);
            }
            p.places.push_back(place);
        }
    };
    add(model.main);
    for (const auto& sg : model.referenced) add(sg);
    return p;
}

void marshalSubgraph(const hal::Model& model, const hal::Subgraph& sg, const PoolAddresses& pools,
                     const Place* places, uint8_t* staging, uint64_t stagingAddr, uint64_t* cursor,
                     proto::Subgraph* out) {
    for (size_t i = 0; i < sg.operands.size(); ++i) {
        const hal::Operand& operand = sg.operands[i];
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
        }
        const uint32_t len = operand.location.length;
        switch (places[i]) {
            case Place::kNone:
                break;
            case Place::kInMessage:
                o->set_value(constantBytes(model, operand), len);
                break;
            case Place::kInPlace:
                o->set_data_addr(*inPlace(operand, pools));
                o->set_data_length(len);
                break;
            case Place::kStaged:
                std::memcpy(staging + *cursor, constantBytes(model, operand), len);
                o->set_data_addr(stagingAddr + *cursor);
                o->set_data_length(len);
                *cursor = alignUp(*cursor + len, 16);
                break;
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

hal::PerformanceInfo perf(const proto::PerformanceInfo& p) {
    return {p.exec_time(), p.power_usage()};
}

}  // namespace

InlineRule inlineRuleFor(const proto::HelloReply& hello) {
    return hello.minor() >= proto::kInlineValuesMinor ? InlineRule{} : InlineRule::none();
}

Result<WindowBlock> marshalModel(const hal::Model& model, HostWindow& window, proto::Model* out,
                                 const PoolAddresses& pools, const InlineRule& rule,
                                 ConstantPlacement* placement) {
    const Plan p = plan(model, pools, rule);
    WindowBlock block;
    uint8_t* staging = nullptr;
    uint64_t stagingAddr = 0;
    if (p.stagingBytes > 0) {
        auto addr = window.allocate(p.stagingBytes);
        if (!addr) return std::unexpected(addr.error());
        block = WindowBlock(&window, *addr, p.stagingBytes);
        staging = block.data();
        stagingAddr = *addr;
    }
    uint64_t cursor = 0;
    const Place* places = p.places.data();
    marshalSubgraph(model, model.main, pools, places, staging, stagingAddr, &cursor, out->mutable_main());
    places += model.main.operands.size();
    for (const auto& sg : model.referenced) {
        marshalSubgraph(model, sg, pools, places, staging, stagingAddr, &cursor, out->add_referenced());
        places += sg.operands.size();
    }
    out->set_relax_float32_to_float16(model.relaxComputationFloat32toFloat16);
    const ConstantPlacement& c = p.placement;
    proto::vlog(
        "driver",
        "model constants: %llu values (%llu bytes) inside the message, %llu (%llu bytes) staged in the "
        "host window, %llu (%llu bytes) in mapped pools",
        static_cast<unsigned long long>(c.inMessageCount), static_cast<unsigned long long>(c.inMessageBytes),
        static_cast<unsigned long long>(c.stagedCount), static_cast<unsigned long long>(c.stagedBytes),
        static_cast<unsigned long long>(c.inPlaceCount), static_cast<unsigned long long>(c.inPlaceBytes));
    if (placement != nullptr) *placement = c;
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
