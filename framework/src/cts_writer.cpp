// Writing the test-vector format (docs/vector-format.md); the reader is cts_loader.cpp.
#include "npu/framework/cts_writer.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "base64.h"

namespace npu::framework {
namespace {

using nlohmann::json;

struct Bytes {
    const uint8_t* data = nullptr;
    size_t size = 0;
};

// The bytes a constant operand names (CONSTANT_COPY: the model's values; CONSTANT_REFERENCE: a pool).
Result<Bytes> constantBytes(const hal::Model& model, const hal::Operand& o, const std::string& where) {
    const hal::DataLocation& loc = o.location;
    const uint8_t* base = model.operandValues.data();
    size_t size = model.operandValues.size();
    if (o.lifetime == hal::OperandLifeTime::CONSTANT_REFERENCE) {
        if (loc.poolIndex >= model.pools.size() || model.pools[loc.poolIndex] == nullptr)
            return invalidArgument(where + ": pool " + std::to_string(loc.poolIndex) + " of " +
                                   std::to_string(model.pools.size()));
        base = model.pools[loc.poolIndex]->data();
        size = model.pools[loc.poolIndex]->size();
    }
    if (uint64_t{loc.offset} + loc.length > size)
        return invalidArgument(where + ": bytes [" + std::to_string(loc.offset) + ", +" +
                               std::to_string(loc.length) + ") outside its " + std::to_string(size) +
                               "-byte pool");
    return Bytes{base + loc.offset, loc.length};
}

// Where main operand `index` is the k-th input (or output), its data is tc's k-th input (output).
const std::vector<uint8_t>* ioData(const TestCase& tc, uint32_t index, bool output, size_t* k) {
    const auto& list = output ? tc.model.main.outputIndexes : tc.model.main.inputIndexes;
    const auto& data = output ? tc.expectedOutputs : tc.inputs;
    for (size_t i = 0; i < list.size() && i < data.size(); ++i) {
        if (list[i] == index) {
            *k = i;
            return &data[i];
        }
    }
    return nullptr;
}

Result<json> operandJson(const TestCase& tc, const hal::Subgraph& sg, uint32_t index, bool isMain,
                         const std::string& where) {
    const hal::Operand& o = sg.operands[index];
    json j;
    j["type"] = std::string(hal::toString(o.type));
    j["dims"] = o.dimensions;
    j["scale"] = static_cast<double>(o.scale);
    j["zero_point"] = o.zeroPoint;
    j["lifetime"] = std::string(hal::toString(o.lifetime));
    j["channel_quant"] = nullptr;
    if (o.channelQuant) {
        std::vector<double> scales(o.channelQuant->scales.begin(), o.channelQuant->scales.end());
        j["channel_quant"] = json{{"channel_dim", o.channelQuant->channelDim}, {"scales", scales}};
    }
    bool ignored = false;
    std::string data;
    switch (o.lifetime) {
        case hal::OperandLifeTime::CONSTANT_COPY:
        case hal::OperandLifeTime::CONSTANT_REFERENCE: {
            const Bytes b = NPU_TRY(constantBytes(tc.model, o, where));
            data = encodeBase64(b.data, b.size);
            break;
        }
        case hal::OperandLifeTime::SUBGRAPH: {
            uint8_t le[4];
            for (int i = 0; i < 4; ++i) le[i] = static_cast<uint8_t>(o.location.offset >> (8 * i));
            data = encodeBase64(le, 4);
            break;
        }
        case hal::OperandLifeTime::SUBGRAPH_INPUT:
        case hal::OperandLifeTime::SUBGRAPH_OUTPUT: {
            const bool output = o.lifetime == hal::OperandLifeTime::SUBGRAPH_OUTPUT;
            size_t k = 0;
            const std::vector<uint8_t>* bytes = isMain ? ioData(tc, index, output, &k) : nullptr;
            if (isMain && bytes == nullptr)
                return invalidArgument(where + ": a main " + (output ? "output" : "input") +
                                       " without data in the test case");
            if (bytes != nullptr) data = encodeBase64(bytes->data(), bytes->size());
            if (output && bytes != nullptr) {
                if (k < tc.expectedOutputDims.size()) j["dims"] = tc.expectedOutputDims[k];
                ignored = k < tc.outputIgnored.size() && tc.outputIgnored[k];
            }
            break;
        }
        default:
            break;
    }
    j["is_ignored"] = ignored;
    j["data"] = std::move(data);
    return j;
}

Result<json> subgraphJson(const TestCase& tc, const hal::Subgraph& sg, bool isMain,
                          const std::string& where) {
    json operands = json::array();
    for (uint32_t i = 0; i < sg.operands.size(); ++i)
        operands.push_back(NPU_TRY(operandJson(tc, sg, i, isMain, where + " operand " + std::to_string(i))));
    json operations = json::array();
    for (const hal::Operation& op : sg.operations)
        operations.push_back(json{
            {"type", std::string(hal::toString(op.type))}, {"inputs", op.inputs}, {"outputs", op.outputs}});
    return json{{"operands", std::move(operands)},
                {"operations", std::move(operations)},
                {"input_indexes", sg.inputIndexes},
                {"output_indexes", sg.outputIndexes}};
}

}  // namespace

Result<std::string> ctsLine(const TestCase& tc) {
    const hal::Subgraph& main = tc.model.main;
    if (tc.inputs.size() != main.inputIndexes.size() ||
        tc.expectedOutputs.size() != main.outputIndexes.size())
        return invalidArgument(
            "test case \"" + tc.name + "\": " + std::to_string(tc.inputs.size()) + " inputs and " +
            std::to_string(tc.expectedOutputs.size()) + " expected outputs for a model of " +
            std::to_string(main.inputIndexes.size()) + " and " + std::to_string(main.outputIndexes.size()));
    json j;
    j["name"] = tc.name;
    j["hal"] = tc.hal.empty() ? "V1_3" : tc.hal;
    j["spec"] = tc.spec.empty() ? tc.name : tc.spec;
    j["source"] = tc.source;
    j["expect_failure"] = tc.expectFailure;
    j["is_relaxed"] = tc.isRelaxed || tc.model.relaxComputationFloat32toFloat16;
    j["multinomial_tolerance"] = tc.multinomialTolerance;
    j["min_supported_version"] = tc.minSupportedVersion.empty() ? "UNKNOWN" : tc.minSupportedVersion;
    const std::string where = "test case \"" + tc.name + "\"";
    j["main"] = NPU_TRY(subgraphJson(tc, main, true, where + " main"));
    json referenced = json::array();
    for (size_t i = 0; i < tc.model.referenced.size(); ++i)
        referenced.push_back(NPU_TRY(
            subgraphJson(tc, tc.model.referenced[i], false, where + " referenced " + std::to_string(i))));
    j["referenced"] = std::move(referenced);
    return j.dump();
}

Result<void> appendCtsLine(const std::string& path, const TestCase& tc) {
    const std::string line = NPU_TRY(ctsLine(tc)) + "\n";
    std::FILE* f = std::fopen(path.c_str(), "ab");
    if (f == nullptr) return invalidArgument("cannot open " + path + " for appending");
    const bool written = std::fwrite(line.data(), 1, line.size(), f) == line.size();
    const bool closed = std::fclose(f) == 0;
    if (!written || !closed) return generalFailure("writing " + path + " failed");
    return {};
}

}  // namespace npu::framework
