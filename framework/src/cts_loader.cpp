// Reading the CTS JSON Lines files into hal::Model + inputs + expected outputs.
#include "npu/framework/cts_loader.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "base64.h"

#ifndef NPU_CTS_DIR_DEFAULT
#define NPU_CTS_DIR_DEFAULT "tests/cts"
#endif

namespace npu::framework {
namespace {

using nlohmann::json;

constexpr size_t kReadChunk = 1 << 20;
constexpr size_t kMaxLineBytes = size_t{1} << 30;  // a line beyond 1 GiB is not a test vector
constexpr size_t kConstantAlignment = 8;

// Errors while reading one line: `where` is "file:line", `context` names the operand/operation.
class LineParser {
public:
    LineParser(const json& root, std::string where) : root_(root), where_(std::move(where)) {}

    Result<TestCase> run();

private:
    std::unexpected<Error> error(const std::string& context, const std::string& field,
                                 const std::string& what) const {
        std::string msg = where_ + ": ";
        if (!context.empty()) msg += context + ": ";
        msg += "field \"" + field + "\": " + what;
        return invalidArgument(std::move(msg));
    }
    Result<const json*> member(const json& obj, const std::string& context, const char* field) const;
    Result<std::string> getString(const json& obj, const std::string& context, const char* field) const;
    Result<bool> getBool(const json& obj, const std::string& context, const char* field) const;
    Result<double> getNumber(const json& obj, const std::string& context, const char* field) const;
    Result<int64_t> getInt(const json& obj, const std::string& context, const char* field, int64_t lo,
                           int64_t hi) const;
    Result<std::vector<uint32_t>> getIndexList(const json& obj, const std::string& context,
                                               const char* field) const;
    Result<hal::Subgraph> parseSubgraph(const json& sg, const std::string& context, bool isMain);
    Result<hal::Operand> parseOperand(const json& op, const std::string& context, bool isMain, uint32_t index,
                                      const hal::Subgraph& sg);
    Result<void> parseOperandType(const json& op, const std::string& ctx, hal::Operand& operand) const;
    Result<void> parseChannelQuant(const json& op, const std::string& ctx, hal::Operand& operand) const;
    Result<void> checkDataSize(const std::string& ctx, const hal::Operand& operand,
                               const std::vector<uint8_t>& data) const;
    Result<void> placeOperandData(const std::string& ctx, const std::vector<uint8_t>& data,
                                  hal::Operand& operand);

    const json& root_;
    std::string where_;
    TestCase tc_;
    std::vector<uint8_t> referencePool_;
    // Per main operand: its decoded data (inputs / outputs read it after the subgraph parse).
    std::vector<std::vector<uint8_t>> mainData_;
    std::vector<bool> mainIgnored_;
};

Result<const json*> LineParser::member(const json& obj, const std::string& context, const char* field) const {
    auto it = obj.find(field);
    if (it == obj.end()) return error(context, field, "missing");
    return &*it;
}

Result<std::string> LineParser::getString(const json& obj, const std::string& context,
                                          const char* field) const {
    const json* v = NPU_TRY(member(obj, context, field));
    if (!v->is_string()) return error(context, field, "expected a string");
    return v->get<std::string>();
}

Result<bool> LineParser::getBool(const json& obj, const std::string& context, const char* field) const {
    const json* v = NPU_TRY(member(obj, context, field));
    if (!v->is_boolean()) return error(context, field, "expected true or false");
    return v->get<bool>();
}

Result<double> LineParser::getNumber(const json& obj, const std::string& context, const char* field) const {
    const json* v = NPU_TRY(member(obj, context, field));
    if (!v->is_number()) return error(context, field, "expected a number");
    return v->get<double>();
}

Result<int64_t> LineParser::getInt(const json& obj, const std::string& context, const char* field, int64_t lo,
                                   int64_t hi) const {
    const json* v = NPU_TRY(member(obj, context, field));
    if (!v->is_number_integer()) return error(context, field, "expected an integer");
    const int64_t x =
        v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())
            ? std::numeric_limits<int64_t>::max()
            : v->get<int64_t>();
    if (x < lo || x > hi) {
        return error(context, field,
                     "value " + std::to_string(x) + " outside [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "]");
    }
    return x;
}

Result<std::vector<uint32_t>> LineParser::getIndexList(const json& obj, const std::string& context,
                                                       const char* field) const {
    const json* v = NPU_TRY(member(obj, context, field));
    if (!v->is_array()) return error(context, field, "expected an array of integers");
    std::vector<uint32_t> out;
    out.reserve(v->size());
    for (const auto& e : *v) {
        if (!e.is_number_integer() ||
            (e.is_number_integer() && !e.is_number_unsigned() && e.get<int64_t>() < 0) ||
            e.get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
            return error(context, field, "expected an array of integers (in [0, 2^32-1])");
        }
        out.push_back(static_cast<uint32_t>(e.get<uint64_t>()));
    }
    return out;
}

void appendAligned(std::vector<uint8_t>& dst, const std::vector<uint8_t>& data, hal::DataLocation& loc) {
    while (dst.size() % kConstantAlignment != 0) dst.push_back(0);
    loc.offset = static_cast<uint32_t>(dst.size());
    loc.length = static_cast<uint32_t>(data.size());
    dst.insert(dst.end(), data.begin(), data.end());
}

Result<hal::Operand> LineParser::parseOperand(const json& op, const std::string& ctx, bool isMain,
                                              uint32_t index, const hal::Subgraph&) {
    if (!op.is_object()) return invalidArgument(where_ + ": " + ctx + ": expected an object");
    hal::Operand operand;
    NPU_TRY(parseOperandType(op, ctx, operand));
    NPU_TRY(parseChannelQuant(op, ctx, operand));
    const bool ignored = NPU_TRY(getBool(op, ctx, "is_ignored"));
    const std::string b64 = NPU_TRY(getString(op, ctx, "data"));
    auto data = decodeBase64(b64);
    if (!data) return error(ctx, "data", "invalid base64: " + data.error());
    NPU_TRY(checkDataSize(ctx, operand, *data));
    NPU_TRY(placeOperandData(ctx, *data, operand));
    if (isMain) {
        if (mainData_.size() <= index) {
            mainData_.resize(index + 1);
            mainIgnored_.resize(index + 1);
        }
        mainData_[index] = std::move(*data);
        mainIgnored_[index] = ignored;
    }
    return operand;
}

// The operand's type, dims, scale, zero point and lifetime (MODEL_INPUT / MODEL_OUTPUT are the
// older names of SUBGRAPH_INPUT / SUBGRAPH_OUTPUT).
Result<void> LineParser::parseOperandType(const json& op, const std::string& ctx,
                                          hal::Operand& operand) const {
    const std::string typeName = NPU_TRY(getString(op, ctx, "type"));
    auto type = hal::operandTypeFromString(typeName);
    if (!type) return error(ctx, "type", "unknown operand type \"" + typeName + "\"");
    operand.type = *type;
    operand.dimensions = NPU_TRY(getIndexList(op, ctx, "dims"));
    operand.scale = static_cast<float>(NPU_TRY(getNumber(op, ctx, "scale")));
    operand.zeroPoint = static_cast<int32_t>(NPU_TRY(getInt(
        op, ctx, "zero_point", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max())));
    const std::string lifetimeName = NPU_TRY(getString(op, ctx, "lifetime"));
    auto lifetime = hal::lifetimeFromString(lifetimeName);
    if (lifetimeName == "MODEL_INPUT") lifetime = hal::OperandLifeTime::SUBGRAPH_INPUT;
    if (lifetimeName == "MODEL_OUTPUT") lifetime = hal::OperandLifeTime::SUBGRAPH_OUTPUT;
    if (!lifetime) return error(ctx, "lifetime", "unknown lifetime \"" + lifetimeName + "\"");
    operand.lifetime = *lifetime;
    return {};
}

// "channel_quant": null, or {channel_dim, scales} (TENSOR_QUANT8_SYMM_PER_CHANNEL).
Result<void> LineParser::parseChannelQuant(const json& op, const std::string& ctx,
                                           hal::Operand& operand) const {
    const json* cq = NPU_TRY(member(op, ctx, "channel_quant"));
    if (cq->is_null()) return {};
    if (!cq->is_object()) return error(ctx, "channel_quant", "expected null or an object");
    hal::SymmPerChannelQuantParams params;
    const std::string cqCtx = ctx + ": channel_quant";
    params.channelDim = static_cast<uint32_t>(NPU_TRY(getInt(*cq, cqCtx, "channel_dim", 0, 1 << 20)));
    const json* scales = NPU_TRY(member(*cq, cqCtx, "scales"));
    if (!scales->is_array()) return error(cqCtx, "scales", "expected an array of numbers");
    for (const auto& s : *scales) {
        if (!s.is_number()) return error(cqCtx, "scales", "expected an array of numbers");
        params.scales.push_back(static_cast<float>(s.get<double>()));
    }
    operand.channelQuant = std::move(params);
    return {};
}

// Element count agrees with dims whenever the shape is fully known and data is present.
Result<void> LineParser::checkDataSize(const std::string& ctx, const hal::Operand& operand,
                                       const std::vector<uint8_t>& data) const {
    const size_t elemSize = hal::elementSize(operand.type);
    if (data.empty() || elemSize == 0) return {};
    bool known = true;
    uint64_t count = 1;
    for (uint32_t d : operand.dimensions) {
        if (d == 0) known = false;
        count *= d;
        if (count > (uint64_t{1} << 40)) known = false;
    }
    if (operand.dimensions.empty() && !hal::isScalarType(operand.type)) known = false;
    if (known && count * elemSize != data.size()) {
        return error(ctx, "data",
                     std::to_string(data.size()) + " bytes, but dims and type need " +
                         std::to_string(count * elemSize));
    }
    if (!known && data.size() % elemSize != 0) {
        return error(ctx, "data",
                     std::to_string(data.size()) + " bytes is not a multiple of the element size " +
                         std::to_string(elemSize));
    }
    return {};
}

// Constants go to the model's pools; a SUBGRAPH operand's data is the referenced subgraph's index.
Result<void> LineParser::placeOperandData(const std::string& ctx, const std::vector<uint8_t>& data,
                                          hal::Operand& operand) {
    switch (operand.lifetime) {
        case hal::OperandLifeTime::CONSTANT_COPY:
            appendAligned(tc_.model.operandValues, data, operand.location);
            break;
        case hal::OperandLifeTime::CONSTANT_REFERENCE:
            appendAligned(referencePool_, data, operand.location);
            operand.location.poolIndex = 0;
            break;
        case hal::OperandLifeTime::SUBGRAPH: {
            if (data.size() != 4) return error(ctx, "data", "a SUBGRAPH operand needs a 4-byte index");
            uint32_t sub;
            std::memcpy(&sub, data.data(), 4);
            const size_t nRef = root_.contains("referenced") && root_["referenced"].is_array()
                                    ? root_["referenced"].size()
                                    : 0;
            if (sub >= nRef) {
                return error(ctx, "data",
                             "subgraph index " + std::to_string(sub) + " but only " + std::to_string(nRef) +
                                 " referenced subgraphs");
            }
            operand.location.offset = sub;  // HAL: a SUBGRAPH operand's offset is the subgraph index
            break;
        }
        default:
            break;
    }
    return {};
}

Result<hal::Subgraph> LineParser::parseSubgraph(const json& sg, const std::string& ctx, bool isMain) {
    if (!sg.is_object()) return invalidArgument(where_ + ": " + ctx + ": expected an object");
    hal::Subgraph out;
    const std::string prefix = isMain ? "" : ctx + " ";
    const json* operands = NPU_TRY(member(sg, ctx, "operands"));
    if (!operands->is_array()) return error(ctx, "operands", "expected an array");
    for (size_t i = 0; i < operands->size(); ++i) {
        out.operands.push_back(NPU_TRY(parseOperand((*operands)[i], prefix + "operand " + std::to_string(i),
                                                    isMain, static_cast<uint32_t>(i), out)));
    }
    const json* operations = NPU_TRY(member(sg, ctx, "operations"));
    if (!operations->is_array()) return error(ctx, "operations", "expected an array");
    for (size_t i = 0; i < operations->size(); ++i) {
        const json& o = (*operations)[i];
        const std::string octx = prefix + "operation " + std::to_string(i);
        if (!o.is_object()) return invalidArgument(where_ + ": " + octx + ": expected an object");
        hal::Operation operation;
        const std::string typeName = NPU_TRY(getString(o, octx, "type"));
        auto type = hal::operationTypeFromString(typeName);
        if (!type) return error(octx, "type", "unknown operation type \"" + typeName + "\"");
        operation.type = *type;
        operation.inputs = NPU_TRY(getIndexList(o, octx, "inputs"));
        operation.outputs = NPU_TRY(getIndexList(o, octx, "outputs"));
        for (uint32_t idx : operation.inputs) {
            if (idx >= out.operands.size()) {
                return error(octx, "inputs",
                             "operand index " + std::to_string(idx) +
                                 " >= " + std::to_string(out.operands.size()) + " operands");
            }
        }
        for (uint32_t idx : operation.outputs) {
            if (idx >= out.operands.size()) {
                return error(octx, "outputs",
                             "operand index " + std::to_string(idx) +
                                 " >= " + std::to_string(out.operands.size()) + " operands");
            }
        }
        out.operations.push_back(std::move(operation));
    }
    out.inputIndexes = NPU_TRY(getIndexList(sg, ctx, "input_indexes"));
    out.outputIndexes = NPU_TRY(getIndexList(sg, ctx, "output_indexes"));
    for (uint32_t idx : out.inputIndexes) {
        if (idx >= out.operands.size()) {
            return error(ctx, "input_indexes",
                         "operand index " + std::to_string(idx) +
                             " >= " + std::to_string(out.operands.size()) + " operands");
        }
    }
    for (uint32_t idx : out.outputIndexes) {
        if (idx >= out.operands.size()) {
            return error(ctx, "output_indexes",
                         "operand index " + std::to_string(idx) +
                             " >= " + std::to_string(out.operands.size()) + " operands");
        }
    }
    return out;
}

Result<TestCase> LineParser::run() {
    if (!root_.is_object()) return invalidArgument(where_ + ": expected a JSON object per line");
    tc_.name = NPU_TRY(getString(root_, "", "name"));
    tc_.hal = NPU_TRY(getString(root_, "", "hal"));
    tc_.spec = NPU_TRY(getString(root_, "", "spec"));
    tc_.source = NPU_TRY(getString(root_, "", "source"));
    tc_.expectFailure = NPU_TRY(getBool(root_, "", "expect_failure"));
    tc_.isRelaxed = NPU_TRY(getBool(root_, "", "is_relaxed"));
    tc_.multinomialTolerance = NPU_TRY(getNumber(root_, "", "multinomial_tolerance"));
    tc_.minSupportedVersion = NPU_TRY(getString(root_, "", "min_supported_version"));
    tc_.model.relaxComputationFloat32toFloat16 = tc_.isRelaxed;

    const json* main = NPU_TRY(member(root_, "", "main"));
    tc_.model.main = NPU_TRY(parseSubgraph(*main, "main", true));
    const json* referenced = NPU_TRY(member(root_, "", "referenced"));
    if (!referenced->is_array()) return error("", "referenced", "expected an array");
    for (size_t i = 0; i < referenced->size(); ++i) {
        tc_.model.referenced.push_back(
            NPU_TRY(parseSubgraph((*referenced)[i], "referenced " + std::to_string(i), false)));
    }

    if (!referencePool_.empty()) {
        std::shared_ptr<hal::Memory> pool = hal::Memory::create(referencePool_.size(), "cts-constants");
        if (!pool)
            return generalFailure(where_ + ": cannot create a shared memory pool of " +
                                  std::to_string(referencePool_.size()) +
                                  " bytes for CONSTANT_REFERENCE data");
        std::memcpy(pool->data(), referencePool_.data(), referencePool_.size());
        tc_.model.pools.push_back(std::move(pool));
    }

    const auto& sg = tc_.model.main;
    for (uint32_t idx : sg.inputIndexes) tc_.inputs.push_back(mainData_[idx]);
    for (uint32_t idx : sg.outputIndexes) {
        tc_.expectedOutputs.push_back(mainData_[idx]);
        tc_.expectedOutputDims.push_back(sg.operands[idx].dimensions);
        tc_.outputIgnored.push_back(mainIgnored_[idx]);
    }
    return std::move(tc_);
}

}  // namespace

Result<TestCase> parseCtsLine(const std::string& line, const std::string& where) {
    json root = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) {
        // Parse again with exceptions enabled only to get nlohmann's position message.
        try {
            json again = json::parse(line);
            (void)again;
        } catch (const json::exception& e) {
            return invalidArgument(where + ": not valid JSON: " + e.what());
        }
        return invalidArgument(where + ": not valid JSON");
    }
    try {
        return LineParser(root, where).run();
    } catch (const json::exception& e) {  // a type mismatch we did not foresee
        return invalidArgument(where + ": " + e.what());
    } catch (const std::bad_alloc&) {
        return fail(hal::ErrorStatus::RESOURCE_EXHAUSTED_PERSISTENT, where + ": out of memory");
    }
}

CtsReader::~CtsReader() {
    if (gz_ != nullptr) gzclose(static_cast<gzFile>(gz_));
}

Result<std::unique_ptr<CtsReader>> CtsReader::open(const std::string& path) {
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) {
        return invalidArgument("cannot open test-vector file " + path + ": " + std::strerror(errno));
    }
    gzbuffer(gz, 256 * 1024);
    return std::unique_ptr<CtsReader>(new CtsReader(path, gz));
}

// Reads the next line (without '\n') into `line`; false at end of file.
Result<bool> CtsReader::readLine(std::string& line) {
    line.clear();
    while (true) {
        if (bufferPos_ < bufferEnd_) {
            const char* start = buffer_.data() + bufferPos_;
            const void* nl = std::memchr(start, '\n', bufferEnd_ - bufferPos_);
            if (nl != nullptr) {
                const size_t n = static_cast<const char*>(nl) - start;
                line.append(start, n);
                bufferPos_ += n + 1;
                return true;
            }
            line.append(start, bufferEnd_ - bufferPos_);
            bufferPos_ = bufferEnd_;
            if (line.size() > kMaxLineBytes) {
                return invalidArgument(path_ + ":" + std::to_string(lineNumber_ + 1) + ": line longer than " +
                                       std::to_string(kMaxLineBytes) + " bytes");
            }
        }
        if (eof_) return !line.empty();
        buffer_.resize(kReadChunk);
        const int n = gzread(static_cast<gzFile>(gz_), buffer_.data(), static_cast<unsigned>(buffer_.size()));
        if (n < 0) {
            int code = 0;
            const char* msg = gzerror(static_cast<gzFile>(gz_), &code);
            return invalidArgument(path_ + ":" + std::to_string(lineNumber_ + 1) +
                                   ": read error: " + (msg != nullptr ? msg : "unknown"));
        }
        if (n == 0) {
            // gzread returns 0 at the end; a truncated gzip stream is reported by gzerror.
            int code = 0;
            const char* msg = gzerror(static_cast<gzFile>(gz_), &code);
            if (code != Z_OK && code != Z_STREAM_END) {
                return invalidArgument(path_ + ":" + std::to_string(lineNumber_ + 1) +
                                       ": read error: " + (msg != nullptr ? msg : "unknown"));
            }
            eof_ = true;
        }
        bufferPos_ = 0;
        bufferEnd_ = static_cast<size_t>(n);
    }
}

Result<bool> CtsReader::nextLine(std::string& line) {
    while (true) {
        const bool got = NPU_TRY(readLine(line));
        if (!got) return false;
        ++lineNumber_;
        if (line.find_first_not_of(" \t\r") != std::string::npos) return true;
    }
}

Result<std::optional<TestCase>> CtsReader::next() {
    std::string line;
    const bool got = NPU_TRY(nextLine(line));
    if (!got) return std::optional<TestCase>{};
    auto tc = parseCtsLine(line, where());
    if (!tc) return std::unexpected(std::move(tc).error());
    return std::optional<TestCase>(std::move(*tc));
}

Result<std::vector<TestCase>> loadCtsFile(const std::string& path) {
    auto reader = NPU_TRY(CtsReader::open(path));
    std::vector<TestCase> out;
    while (true) {
        auto tc = NPU_TRY(reader->next());
        if (!tc) break;
        out.push_back(std::move(*tc));
    }
    return out;
}

Result<TestCase> findTestCase(const std::string& path, const std::string& name) {
    auto reader = NPU_TRY(CtsReader::open(path));
    std::vector<std::string> names;
    while (true) {
        auto tc = NPU_TRY(reader->next());
        if (!tc) break;
        if (tc->name == name) return std::move(*tc);
        names.push_back(std::move(tc->name));
    }
    std::string message = "no vector named '" + name + "' in " + path;
    const auto close = closestNames(name, names, 3);
    for (size_t i = 0; i < close.size(); ++i) message += (i == 0 ? "; did you mean: " : ", ") + close[i];
    if (close.empty()) message += " (npu list FILE lists its vectors)";
    return invalidArgument(message);
}

std::vector<std::string> closestNames(const std::string& name, const std::vector<std::string>& names,
                                      size_t limit) {
    // Levenshtein distance, one row at a time.
    auto distance = [](const std::string& a, const std::string& b) {
        std::vector<size_t> row(b.size() + 1);
        for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
        for (size_t i = 1; i <= a.size(); ++i) {
            size_t diagonal = row[0];
            row[0] = i;
            for (size_t j = 1; j <= b.size(); ++j) {
                const size_t up = row[j];
                row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
                diagonal = up;
            }
        }
        return row[b.size()];
    };
    // A name that contains the query is as close as a one-letter typo; others must be within a
    // third of the query's length.
    const size_t cutoff = std::max<size_t>(2, name.size() / 3);
    std::vector<std::pair<size_t, std::string>> scored;
    for (const auto& candidate : names) {
        const size_t d = candidate.find(name) != std::string::npos ? 1 : distance(name, candidate);
        if (d <= cutoff) scored.emplace_back(d, candidate);
    }
    std::stable_sort(scored.begin(), scored.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> out;
    for (size_t i = 0; i < scored.size() && out.size() < limit; ++i) out.push_back(scored[i].second);
    return out;
}

// $NPU_CTS_DIR, else the vendored vectors of the source tree this was built from (a developer's
// build), else the copy an installed package put under its data directory.
std::string ctsDataDir() {
    const char* env = std::getenv("NPU_CTS_DIR");
    if (env != nullptr && *env != '\0') return env;
#ifdef NPU_CTS_DIR_INSTALLED
    if (access(NPU_CTS_DIR_DEFAULT, R_OK) != 0) return NPU_CTS_DIR_INSTALLED;
#endif
    return NPU_CTS_DIR_DEFAULT;
}

}  // namespace npu::framework
