#include "driver_model.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "random_model.h"

namespace npu::fuzz {
namespace {

using hal::OperandLifeTime;
using hal::OperandType;
using hal::OperationType;

constexpr size_t kMaxRequestBytes = 1u << 20;  // an edited dimension must not make a huge request

// The generator's choices from the fuzz input: each structure choice is one byte (four when
// its range is wider than a byte), each real one byte spread over [lo, hi]; data (weights,
// biases, request inputs) comes from a std::mt19937 seeded by the input, so that a mutated byte
// changes one property of the model, not all of its data.
class FuzzChoices final : public testing::Choices {
public:
    explicit FuzzChoices(InputReader& in) : in_(in) {}
    void seedData(uint32_t seed) { data_.seed(seed); }

    int uniform(int lo, int hi) override {
        const uint32_t range = uint32_t(int64_t(hi) - lo + 1);
        return lo + int((range > 256 ? in_.u32() : in_.u8()) % range);
    }
    float uniformReal(float lo, float hi) override { return lo + (hi - lo) * float(in_.u8()) / 255.0f; }
    uint8_t dataByte() override { return uint8_t(data_()); }
    int dataInt(int lo, int hi) override { return std::uniform_int_distribution<int>(lo, hi)(data_); }
    void shuffle(std::vector<int32_t>& v) override {
        for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[size_t(uniform(0, int(i) - 1))]);
    }

private:
    InputReader& in_;
    std::mt19937 data_;
};

// One operation of the kinds the NPU claims, on `x`.
uint32_t addOperation(testing::RandomModel& m, uint32_t x, bool nchw) {
    const bool spatial = m.at(x).dimensions.size() == 4;
    int kind = m.uniform(0, 9);
    if (!spatial && (kind <= 1 || kind == 3)) kind = 4;
    switch (kind) {
        case 0:
        case 1:
            return testing::addConvolution(m, x, nchw, kind == 1);
        case 2:
            return testing::addFullyConnected(m, x);
        case 3:
            return testing::addPool(m, x, nchw);
        case 4:
            return testing::addUnary(m, x);
        case 5:
            return testing::addAdd(m, x);
        case 6:
            return testing::addBinary(m, x);
        case 7:
            return testing::addConcat(m, x);
        case 8:
            return testing::addReshape(m, x);
        default:
            return testing::addPad(m, x);
    }
}

// One edit that may make the model invalid (or valid in another way): what validation must catch.
void applyEdit(framework::TestCase& tc, uint8_t kind, uint8_t index, uint32_t value) {
    auto& g = tc.model.main;
    if (g.operands.empty() || g.operations.empty()) return;
    hal::Operand& o = g.operands[index % g.operands.size()];
    hal::Operation& op = g.operations[index % g.operations.size()];
    switch (kind % 12) {
        case 0:
            o.type = OperandType(int32_t(value % 24));
            break;
        case 1:
            if (!o.dimensions.empty()) o.dimensions[value % o.dimensions.size()] = value >> 8;
            break;
        case 2:
            std::memcpy(&o.scale, &value, 4);  // NaN, infinity, negative, denormal
            break;
        case 3:
            o.zeroPoint = int32_t(value);
            break;
        case 4:
            o.lifetime = OperandLifeTime(int32_t(value % 8));
            break;
        case 5:
            if (!op.inputs.empty())
                op.inputs[value % op.inputs.size()] = (value >> 8) % (g.operands.size() + 2);
            break;
        case 6:
            op.outputs[0] = value % (g.operands.size() + 2);
            break;
        case 7:
            op.type = OperationType(int32_t(value % 110));
            break;
        case 8:
            if (!op.inputs.empty()) op.inputs.erase(op.inputs.begin() + long(value % op.inputs.size()));
            break;
        case 9:
            (value & 1 ? g.outputIndexes : g.inputIndexes).push_back((value >> 1) % (g.operands.size() + 1));
            break;
        case 10:
            (value & 1 ? o.location.offset : o.location.length) = value >> 1;
            break;
        default:
            if (value & 1) {
                o.dimensions.push_back(value >> 24);
            } else if (!o.dimensions.empty()) {
                o.dimensions.pop_back();
            }
            break;
    }
}

// Request buffers sized from the model as it is now: inputs of random bytes, outputs of the
// outputs' sizes (capped, so an edited dimension asks for a wrong size rather than a huge one).
void sizeRequest(testing::RandomModel& m) {
    auto& tc = m.testCase();
    tc.inputs.clear();  // the generator's inputs are sized again, after the edits
    const auto& g = tc.model.main;
    auto bytesOf = [&](uint32_t index) -> size_t {
        if (index >= g.operands.size()) return 1;
        const auto& o = g.operands[index];
        size_t n = hal::elementSize(o.type);
        for (uint32_t d : o.dimensions) {
            if (d != 0 && n > kMaxRequestBytes / d) return kMaxRequestBytes;
            n *= d == 0 ? 1 : d;
        }
        return std::max<size_t>(n, 1);
    };
    for (uint32_t i : g.inputIndexes) tc.inputs.push_back(m.randomBytes(bytesOf(i)));
    for (uint32_t i : g.outputIndexes) {
        tc.expectedOutputs.emplace_back(bytesOf(i));
        tc.expectedOutputDims.push_back(i < g.operands.size() ? g.operands[i].dimensions
                                                              : std::vector<uint32_t>{});
        tc.outputIgnored.push_back(false);
    }
}

}  // namespace

DriverModel buildDriverModel(InputReader& in) {
    FuzzChoices choices(in);
    const uint8_t flags = in.u8();
    choices.seedData(in.u32());
    testing::RandomModel m(choices);
    const OperandType type =
        (flags & 1) ? OperandType::TENSOR_QUANT8_ASYMM_SIGNED : OperandType::TENSOR_QUANT8_ASYMM;
    const bool nchw = (flags & 2) != 0;
    uint32_t x = testing::addImageInputOf(m, type, nchw);
    const int ops = m.uniform(1, int(kDriverModelMaxOperations));
    for (int i = 0; i < ops; ++i) x = addOperation(m, x, nchw);
    auto& g = m.testCase().model.main;
    g.operands[x].lifetime = OperandLifeTime::SUBGRAPH_OUTPUT;
    g.outputIndexes.push_back(x);
    DriverModel result;
    for (int e = 0; e < (flags >> 6); ++e) {
        const uint8_t kind = in.u8(), index = in.u8();
        applyEdit(m.testCase(), kind, index, in.u32());
        result.edited = true;
    }
    sizeRequest(m);
    m.testCase().name = "driver_model";
    result.testCase = std::move(m.testCase());
    return result;
}

}  // namespace npu::fuzz
