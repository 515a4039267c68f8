// The pass/fail rules of the NNAPI TestHarness (see docs/conformance.md).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "npu/framework/cts_loader.h"

namespace npu::framework {
namespace {

struct Tolerance {
    double atol = 0, rtol = 0;
};

bool usesFloat16(const TestCase& tc) {
    auto has = [](const hal::Subgraph& sg) {
        for (const auto& o : sg.operands) {
            if (o.type == hal::OperandType::TENSOR_FLOAT16 || o.type == hal::OperandType::FLOAT16)
                return true;
        }
        return false;
    };
    if (has(tc.model.main)) return true;
    for (const auto& sg : tc.model.referenced) {
        if (has(sg)) return true;
    }
    return false;
}

template <typename T>
double load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return static_cast<double>(v);
}

double elementAt(hal::OperandType type, const uint8_t* p) {
    using hal::OperandType;
    switch (type) {
        case OperandType::TENSOR_FLOAT32:
        case OperandType::FLOAT32:
            return load<float>(p);
        case OperandType::TENSOR_FLOAT16:
        case OperandType::FLOAT16:
            return load<_Float16>(p);
        case OperandType::TENSOR_INT32:
        case OperandType::INT32:
            return load<int32_t>(p);
        case OperandType::UINT32:
            return load<uint32_t>(p);
        case OperandType::TENSOR_QUANT16_SYMM:
            return load<int16_t>(p);
        case OperandType::TENSOR_QUANT16_ASYMM:
            return load<uint16_t>(p);
        case OperandType::TENSOR_QUANT8_ASYMM_SIGNED:
        case OperandType::TENSOR_QUANT8_SYMM:
        case OperandType::TENSOR_QUANT8_SYMM_PER_CHANNEL:
            return load<int8_t>(p);
        default:
            return load<uint8_t>(p);
    }
}

Tolerance toleranceFor(const TestCase& tc, hal::OperandType type) {
    using hal::OperandType;
    constexpr double kFp32Ulp = 1.0 / (1 << 23), kFp16Ulp = 1.0 / (1 << 10);
    switch (type) {
        case OperandType::TENSOR_FLOAT32:
        case OperandType::FLOAT32:
            if (tc.isRelaxed || usesFloat16(tc)) return {5 * kFp16Ulp, 5 * kFp16Ulp};
            return {1e-5, 5 * kFp32Ulp};
        case OperandType::TENSOR_FLOAT16:
        case OperandType::FLOAT16:
            return {5 * kFp16Ulp, 5 * kFp16Ulp};
        case OperandType::TENSOR_QUANT8_ASYMM:
        case OperandType::TENSOR_QUANT8_ASYMM_SIGNED:
        case OperandType::TENSOR_QUANT8_SYMM:
            return {tc.name.find("mobilenet") != std::string::npos ? 3.0 : 1.0, 0};
        case OperandType::TENSOR_BOOL8:
        case OperandType::BOOL:
            return {0, 0};
        default:
            return {1, 0};  // INT32, quant16
    }
}

std::string dimsToString(const std::vector<uint32_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
}

// RANDOM_MULTINOMIAL: per batch, the frequency of each class among the samples must be within
// the tolerance of softmax(logits).
std::optional<Mismatch> compareMultinomial(const TestCase& tc, const std::vector<uint8_t>& actual) {
    const auto& sg = tc.model.main;
    if (sg.inputIndexes.empty() || tc.inputs.empty())
        return Mismatch{0, 0, 0, 0, 0, "multinomial: model has no input"};
    const auto& logitsOperand = sg.operands[sg.inputIndexes[0]];
    if (logitsOperand.dimensions.size() != 2)
        return Mismatch{0, 0, 0, 0, 0, "multinomial: input 0 is not 2-D"};
    const size_t batches = logitsOperand.dimensions[0], classes = logitsOperand.dimensions[1];
    const size_t elemIn = hal::elementSize(logitsOperand.type);
    if (batches == 0 || tc.inputs[0].size() != batches * classes * elemIn ||
        actual.size() % (4 * batches) != 0) {
        return Mismatch{0, 0, 0, 0, 0, "multinomial: input or output size does not match the shapes"};
    }
    const size_t samples = actual.size() / 4 / batches;
    for (size_t b = 0; b < batches; ++b) {
        std::vector<double> prob(classes), freq(classes, 0.0);
        double maxLogit = -INFINITY, sum = 0;
        for (size_t c = 0; c < classes; ++c) {
            prob[c] = elementAt(logitsOperand.type, tc.inputs[0].data() + (b * classes + c) * elemIn);
            maxLogit = std::max(maxLogit, prob[c]);
        }
        for (auto& p : prob) sum += (p = std::exp(p - maxLogit));
        for (auto& p : prob) p /= sum;
        for (size_t s = 0; s < samples; ++s) {
            int32_t cls;
            std::memcpy(&cls, actual.data() + (b * samples + s) * 4, 4);
            if (cls < 0 || static_cast<size_t>(cls) >= classes) {
                return Mismatch{0,
                                b * samples + s,
                                0,
                                double(cls),
                                0,
                                "multinomial: batch " + std::to_string(b) + " sample " + std::to_string(s) +
                                    ": class " + std::to_string(cls) + " out of range"};
            }
            freq[cls] += 1.0 / static_cast<double>(samples);
        }
        for (size_t c = 0; c < classes; ++c) {
            if (std::fabs(freq[c] - prob[c]) > tc.multinomialTolerance) {
                return Mismatch{0,
                                b * classes + c,
                                prob[c],
                                freq[c],
                                tc.multinomialTolerance,
                                "multinomial: batch " + std::to_string(b) + " class " + std::to_string(c) +
                                    ": frequency " + std::to_string(freq[c]) + " vs probability " +
                                    std::to_string(prob[c])};
            }
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<Mismatch> compareOutputs(const TestCase& tc,
                                       const std::vector<std::vector<uint8_t>>& actualOutputs,
                                       const std::vector<hal::OutputShape>& actualShapes) {
    const auto& sg = tc.model.main;
    if (actualOutputs.size() != tc.expectedOutputs.size()) {
        return Mismatch{0,
                        0,
                        0,
                        0,
                        0,
                        "got " + std::to_string(actualOutputs.size()) + " outputs, expected " +
                            std::to_string(tc.expectedOutputs.size())};
    }
    if (!actualShapes.empty() && actualShapes.size() != tc.expectedOutputs.size()) {
        return Mismatch{0,
                        0,
                        0,
                        0,
                        0,
                        "got " + std::to_string(actualShapes.size()) + " output shapes, expected " +
                            std::to_string(tc.expectedOutputs.size())};
    }
    for (uint32_t i = 0; i < actualOutputs.size(); ++i) {
        if (i < tc.outputIgnored.size() && tc.outputIgnored[i]) continue;
        if (tc.multinomialTolerance > 0) {
            if (auto m = compareMultinomial(tc, actualOutputs[i])) {
                m->output = i;
                return m;
            }
            continue;
        }
        if (!actualShapes.empty() && i < tc.expectedOutputDims.size() &&
            actualShapes[i].dimensions != tc.expectedOutputDims[i]) {
            return Mismatch{i,
                            0,
                            0,
                            0,
                            0,
                            "output " + std::to_string(i) + ": dimensions " +
                                dimsToString(actualShapes[i].dimensions) + ", expected " +
                                dimsToString(tc.expectedOutputDims[i])};
        }
        const auto& expected = tc.expectedOutputs[i];
        const auto& actual = actualOutputs[i];
        if (actual.size() != expected.size()) {
            return Mismatch{i,
                            0,
                            0,
                            0,
                            0,
                            "output " + std::to_string(i) + ": " + std::to_string(actual.size()) +
                                " bytes, expected " + std::to_string(expected.size())};
        }
        const hal::OperandType type = i < sg.outputIndexes.size() && sg.outputIndexes[i] < sg.operands.size()
                                          ? sg.operands[sg.outputIndexes[i]].type
                                          : hal::OperandType::TENSOR_QUANT8_ASYMM;
        const size_t size = std::max<size_t>(hal::elementSize(type), 1);
        const Tolerance tol = toleranceFor(tc, type);
        for (size_t e = 0; e * size < expected.size(); ++e) {
            const double x = elementAt(type, expected.data() + e * size);
            const double a = elementAt(type, actual.data() + e * size);
            const double limit = tol.atol + tol.rtol * std::fabs(x);
            if (a == x || (tc.nanMatchesNan && std::isnan(a) && std::isnan(x))) continue;  // infinities too
            if (!(std::fabs(a - x) <= limit)) {                                            // NaN fails
                return Mismatch{i,
                                e,
                                x,
                                a,
                                limit,
                                "output " + std::to_string(i) + " element " + std::to_string(e) + ": got " +
                                    std::to_string(a) + ", expected " + std::to_string(x) + " (tolerance " +
                                    std::to_string(limit) + ")"};
            }
        }
    }
    return std::nullopt;
}

Result<PreparedRequest> makeRequest(const TestCase& tc) {
    constexpr size_t kAlign = 64;
    auto align = [](size_t x) { return (x + kAlign - 1) / kAlign * kAlign; };
    size_t total = 0;
    for (const auto& in : tc.inputs) total = align(total + in.size());
    for (const auto& out : tc.expectedOutputs) total = align(total + out.size());
    if (total > std::numeric_limits<uint32_t>::max()) {
        return invalidArgument("makeRequest(" + tc.name + "): " + std::to_string(total) +
                               " bytes exceed a 32-bit pool");
    }
    PreparedRequest pr;
    pr.pool = hal::Memory::create(total, "cts-request");
    if (!pr.pool) {
        return fail(
            hal::ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT,
            "makeRequest(" + tc.name + "): cannot create a " + std::to_string(total) + "-byte request pool");
    }
    size_t offset = 0;
    for (const auto& in : tc.inputs) {
        hal::RequestArgument arg;
        if (in.empty()) {
            arg.hasNoValue = true;
        } else {
            arg.location = {0, static_cast<uint32_t>(offset), static_cast<uint32_t>(in.size()), 0};
            std::memcpy(pr.pool->data() + offset, in.data(), in.size());
            offset = align(offset + in.size());
        }
        pr.request.inputs.push_back(std::move(arg));
    }
    for (const auto& out : tc.expectedOutputs) {
        hal::RequestArgument arg;
        arg.location = {0, static_cast<uint32_t>(offset), static_cast<uint32_t>(out.size()), 0};
        pr.outputLocations.push_back(arg.location);
        offset = align(offset + out.size());
        pr.request.outputs.push_back(std::move(arg));
    }
    pr.request.pools.push_back(pr.pool);
    return pr;
}

std::vector<std::vector<uint8_t>> readOutputs(const PreparedRequest& pr) {
    std::vector<std::vector<uint8_t>> outputs;
    for (const auto& loc : pr.outputLocations) {
        const uint8_t* p = pr.pool->data() + loc.offset;
        outputs.emplace_back(p, p + loc.length);
    }
    return outputs;
}

}  // namespace npu::framework
