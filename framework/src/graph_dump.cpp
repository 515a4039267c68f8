#include "npu/framework/graph_dump.h"

#include <string>

namespace npu::framework {
namespace {

std::string dims(const std::vector<uint32_t>& d) {
    std::string s = "[";
    for (size_t i = 0; i < d.size(); ++i)
        s += (i ? "," : "") + (d[i] == 0 ? std::string("?") : std::to_string(d[i]));
    return s + "]";
}

std::string operandLabel(const hal::Operand& o, uint32_t index) {
    std::string label = "#" + std::to_string(index) + " " + std::string(hal::toString(o.type));
    if (!hal::isScalarType(o.type)) label += " " + dims(o.dimensions);
    if (hal::isQuantizedType(o.type) && o.type != hal::OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL) {
        label += "\\nscale " + std::to_string(o.scale) + " zp " + std::to_string(o.zeroPoint);
    }
    return label;
}

void subgraph(const hal::Subgraph& sg, std::ostream& out, const std::string& prefix) {
    for (uint32_t i = 0; i < sg.operands.size(); ++i) {
        const auto& o = sg.operands[i];
        std::string style;
        switch (o.lifetime) {
            case hal::OperandLifeTime::SUBGRAPH_INPUT:
                style = "style=filled fillcolor=\"#cde4ff\"";
                break;
            case hal::OperandLifeTime::SUBGRAPH_OUTPUT:
                style = "style=filled fillcolor=\"#d5f5d5\"";
                break;
            case hal::OperandLifeTime::CONSTANT_COPY:
            case hal::OperandLifeTime::CONSTANT_REFERENCE:
                style = "style=dashed";
                break;
            case hal::OperandLifeTime::NO_VALUE:
                style = "style=dotted";
                break;
            default:
                break;
        }
        out << "  " << prefix << "d" << i << " [shape=ellipse label=\"" << operandLabel(o, i) << "\" "
            << style << "];\n";
    }
    for (uint32_t k = 0; k < sg.operations.size(); ++k) {
        const auto& op = sg.operations[k];
        out << "  " << prefix << "op" << k << " [shape=box style=bold label=\"" << k << ": "
            << hal::toString(op.type) << "\"];\n";
        for (size_t j = 0; j < op.inputs.size(); ++j) {
            out << "  " << prefix << "d" << op.inputs[j] << " -> " << prefix << "op" << k << " [label=\"" << j
                << "\"];\n";
        }
        for (size_t j = 0; j < op.outputs.size(); ++j) {
            out << "  " << prefix << "op" << k << " -> " << prefix << "d" << op.outputs[j] << ";\n";
        }
    }
}

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

}  // namespace

void graphDump(const hal::Model& model, std::ostream& out, const std::string& name) {
    out << "digraph \"" << escape(name)
        << "\" {\n  rankdir=TB;\n  node [fontname=\"monospace\" fontsize=10];\n";
    subgraph(model.main, out, "");
    for (size_t s = 0; s < model.referenced.size(); ++s) {
        const std::string prefix = "s" + std::to_string(s) + "_";
        out << "  subgraph cluster_" << s << " {\n  label=\"referenced subgraph " << s << "\";\n";
        subgraph(model.referenced[s], out, prefix);
        out << "  }\n";
    }
    out << "}\n";
}

}  // namespace npu::framework
