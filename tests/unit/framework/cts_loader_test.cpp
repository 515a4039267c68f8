// Tests of framework/cts_loader: parsing, error messages, all vendored files, comparison rules.
#include "npu/framework/cts_loader.h"

#include <zlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "npu/framework/cts_writer.h"

using namespace npu;
using framework::TestCase;

namespace {

// V1_0 "add" (float32 [2] + [2], activation NONE), in the file format.
const std::string kAddLine =
    R"({"name":"add","hal":"V1_0","spec":"add","source":"spec_V1_0/add.example.cpp","expect_failure":false,)"
    R"("is_relaxed":false,"multinomial_tolerance":0.0,"min_supported_version":"V1_0","main":{"operands":[)"
    R"({"type":"TENSOR_FLOAT32","dims":[2],"scale":0.0,"zero_point":0,"lifetime":"SUBGRAPH_INPUT","channel_quant":null,"is_ignored":false,"number_of_consumers":1,"data":"AACAPwAAAEA="},)"
    R"({"type":"TENSOR_FLOAT32","dims":[2],"scale":0.0,"zero_point":0,"lifetime":"SUBGRAPH_INPUT","channel_quant":null,"is_ignored":false,"number_of_consumers":1,"data":"AABAQAAAgEA="},)"
    R"({"type":"INT32","dims":[],"scale":0.0,"zero_point":0,"lifetime":"CONSTANT_COPY","channel_quant":null,"is_ignored":false,"number_of_consumers":1,"data":"AAAAAA=="},)"
    R"({"type":"TENSOR_FLOAT32","dims":[2],"scale":0.0,"zero_point":0,"lifetime":"SUBGRAPH_OUTPUT","channel_quant":null,"is_ignored":false,"number_of_consumers":0,"data":"AACAQAAAwEA="}],)"
    R"("operations":[{"type":"ADD","inputs":[0,1,2],"outputs":[3]}],"input_indexes":[0,1],"output_indexes":[3]},"referenced":[]})";

std::string replaceOnce(std::string s, const std::string& from, const std::string& to) {
    auto pos = s.find(from);
    REQUIRE(pos != std::string::npos);
    return s.replace(pos, from.size(), to);
}

std::string tempPath(const char* name) {
    return (std::filesystem::temp_directory_path() /
            (std::string("npu_cts_test_") + name + "_" + std::to_string(::getpid())))
        .string();
}

float floatAt(const std::vector<uint8_t>& bytes, size_t i) {
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
}

std::vector<uint8_t> floats(std::initializer_list<float> v) {
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), std::data(v), out.size());
    return out;
}

}  // namespace

TEST_CASE("a good line parses into the right model", "[framework]") {
    auto tc = framework::parseCtsLine(kAddLine, "mem:1");
    REQUIRE(tc.has_value());
    CHECK(tc->name == "add");
    CHECK(tc->spec == "add");
    CHECK(tc->hal == "V1_0");
    CHECK(tc->minSupportedVersion == "V1_0");
    CHECK_FALSE(tc->expectFailure);
    const auto& sg = tc->model.main;
    REQUIRE(sg.operands.size() == 4);
    REQUIRE(sg.operations.size() == 1);
    CHECK(sg.operations[0].type == hal::OperationType::ADD);
    CHECK(sg.operations[0].inputs == std::vector<uint32_t>{0, 1, 2});
    CHECK(sg.operations[0].outputs == std::vector<uint32_t>{3});
    CHECK(sg.inputIndexes == std::vector<uint32_t>{0, 1});
    CHECK(sg.outputIndexes == std::vector<uint32_t>{3});
    CHECK(sg.operands[0].lifetime == hal::OperandLifeTime::SUBGRAPH_INPUT);
    CHECK(sg.operands[0].dimensions == std::vector<uint32_t>{2});
    CHECK(sg.operands[2].type == hal::OperandType::INT32);
    CHECK(sg.operands[2].lifetime == hal::OperandLifeTime::CONSTANT_COPY);
    CHECK(sg.operands[2].location.length == 4);
    REQUIRE(tc->model.operandValues.size() >= sg.operands[2].location.offset + 4);
    int32_t act = -1;
    std::memcpy(&act, tc->model.operandValues.data() + sg.operands[2].location.offset, 4);
    CHECK(act == 0);
    REQUIRE(tc->inputs.size() == 2);
    CHECK(floatAt(tc->inputs[0], 0) == 1.0f);
    CHECK(floatAt(tc->inputs[0], 1) == 2.0f);
    CHECK(floatAt(tc->inputs[1], 0) == 3.0f);
    REQUIRE(tc->expectedOutputs.size() == 1);
    CHECK(floatAt(tc->expectedOutputs[0], 0) == 4.0f);
    CHECK(floatAt(tc->expectedOutputs[0], 1) == 6.0f);
    CHECK(tc->expectedOutputDims == std::vector<std::vector<uint32_t>>{{2}});
    CHECK(tc->outputIgnored == std::vector<bool>{false});
}

TEST_CASE("CONSTANT_REFERENCE data goes to a memory pool, scales are float32, channel quant is kept",
          "[framework]") {
    std::string line =
        replaceOnce(kAddLine, R"("lifetime":"CONSTANT_COPY")", R"("lifetime":"CONSTANT_REFERENCE")");
    line = replaceOnce(line, R"("scale":0.0,"zero_point":0,"lifetime":"SUBGRAPH_INPUT")",
                       R"("scale":0.1,"zero_point":0,"lifetime":"SUBGRAPH_INPUT")");
    line = replaceOnce(line, R"("channel_quant":null)",
                       R"("channel_quant":{"channel_dim":0,"scales":[0.5,0.25]})");
    auto tc = framework::parseCtsLine(line, "mem:1");
    REQUIRE(tc.has_value());
    const auto& op = tc->model.main.operands[2];
    CHECK(op.lifetime == hal::OperandLifeTime::CONSTANT_REFERENCE);
    REQUIRE(tc->model.pools.size() == 1);
    CHECK(op.location.poolIndex == 0);
    CHECK(op.location.length == 4);
    CHECK(tc->model.main.operands[0].scale == 0.1f);
    REQUIRE(tc->model.main.operands[0].channelQuant.has_value());
    CHECK(tc->model.main.operands[0].channelQuant->scales == std::vector<float>{0.5f, 0.25f});
}

TEST_CASE("malformed lines give errors naming the line and the field", "[framework]") {
    struct Case {
        std::string from, to, expect;
    };
    const Case cases[] = {
        {R"("dims":[2],"scale":0.0,"zero_point":0,"lifetime":"SUBGRAPH_OUTPUT")",
         R"("dims":[2,"x"],"scale":0.0,"zero_point":0,"lifetime":"SUBGRAPH_OUTPUT")",
         R"(mem:17: operand 3: field "dims": expected an array of integers)"},
        {R"("dims":[2],)", R"("dims":[-2],)", R"(operand 0: field "dims")"},
        {R"("type":"INT32")", R"("type":"INT33")",
         R"(operand 2: field "type": unknown operand type "INT33")"},
        {R"("type":"ADD")", R"("type":"ADDD")", R"(operation 0: field "type")"},
        {R"("inputs":[0,1,2])", R"("inputs":[0,1,9])", R"(operation 0: field "inputs": operand index 9)"},
        {R"("data":"AAAAAA==")", R"("data":"AAA*AA==")", R"(operand 2: field "data": invalid base64)"},
        {R"("data":"AAAAAA==")", R"("data":"AAAAAAAA")",
         R"(operand 2: field "data": 6 bytes, but dims and type need 4)"},
        {R"("lifetime":"CONSTANT_COPY")", R"("lifetime":"FOREVER")", R"(operand 2: field "lifetime")"},
        {R"("name":"add",)", "", R"(field "name": missing)"},
        {R"("is_relaxed":false)", R"("is_relaxed":"no")", R"(field "is_relaxed": expected true or false)"},
        {R"("zero_point":0,"lifetime":"CONSTANT_COPY")", R"("zero_point":1e40,"lifetime":"CONSTANT_COPY")",
         R"(operand 2: field "zero_point")"},
        {R"("output_indexes":[3])", R"("output_indexes":[4])", R"(field "output_indexes")"},
        {R"("referenced":[])", R"("referenced":{})", R"(field "referenced": expected an array)"},
        {R"("channel_quant":null)", R"("channel_quant":{"channel_dim":0,"scales":["a"]})",
         R"(channel_quant: field "scales")"},
    };
    for (const auto& c : cases) {
        INFO(c.to);
        auto tc = framework::parseCtsLine(replaceOnce(kAddLine, c.from, c.to), "mem:17");
        REQUIRE_FALSE(tc.has_value());
        CHECK(tc.error().status == hal::ErrorStatus::INVALID_ARGUMENT);
        CHECK_THAT(tc.error().message, Catch::Contains(c.expect) && Catch::StartsWith("mem:17: "));
    }
}

TEST_CASE("truncated and garbled lines never crash the loader", "[framework]") {
    // Every prefix of a good line, and random byte flips.
    for (size_t n = 0; n < kAddLine.size(); n += 7) {
        auto tc = framework::parseCtsLine(kAddLine.substr(0, n), "mem:2");
        CHECK_FALSE(tc.has_value());
        if (!tc) CHECK_THAT(tc.error().message, Catch::StartsWith("mem:2: "));
    }
    std::mt19937 rng(42);
    for (int i = 0; i < 2000; ++i) {
        std::string line = kAddLine;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) line[rng() % line.size()] = static_cast<char>(rng() % 256);
        auto tc = framework::parseCtsLine(line, "mem:3");  // must return, either way
        if (!tc) CHECK_FALSE(tc.error().message.empty());
    }
    for (const char* junk : {"", "null", "[]", "42", "{}", R"({"main":[]})", "\xff\xfe"}) {
        CHECK_FALSE(framework::parseCtsLine(junk, "mem:4").has_value());
    }
}

TEST_CASE("the reader reports file and line of a bad line, and skips blank lines", "[framework]") {
    const std::string path = tempPath("bad.jsonl");
    {
        std::ofstream f(path);
        f << kAddLine << "\n\n"
          << kAddLine << "\n"
          << replaceOnce(kAddLine, R"("dims":[2],)", R"("dims":2,)") << "\n";
    }
    auto reader = framework::CtsReader::open(path);
    REQUIRE(reader.has_value());
    auto a = (*reader)->next();
    REQUIRE(a.has_value());
    REQUIRE(a->has_value());
    CHECK((*reader)->lineNumber() == 1);
    auto b = (*reader)->next();
    REQUIRE(b.has_value());
    REQUIRE(b->has_value());
    CHECK((*reader)->lineNumber() == 3);
    auto c = (*reader)->next();
    REQUIRE_FALSE(c.has_value());
    CHECK_THAT(c.error().message,
               Catch::Contains(path + ":4: operand 0: field \"dims\": expected an array of integers"));
    auto all = framework::loadCtsFile(path);
    CHECK_FALSE(all.has_value());
    std::remove(path.c_str());

    auto missing = framework::CtsReader::open("/nonexistent/file.jsonl.gz");
    REQUIRE_FALSE(missing.has_value());
    CHECK_THAT(missing.error().message, Catch::Contains("/nonexistent/file.jsonl.gz"));
}

TEST_CASE("a truncated gzip file gives an error, not a crash", "[framework]") {
    const std::string path = tempPath("trunc.jsonl.gz");
    {
        gzFile gz = gzopen(path.c_str(), "wb");
        REQUIRE(gz != nullptr);
        for (int i = 0; i < 200; ++i) {
            gzputs(gz, kAddLine.c_str());
            gzputs(gz, "\n");
        }
        gzclose(gz);
    }
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
    auto all = framework::loadCtsFile(path);
    REQUIRE_FALSE(all.has_value());
    CHECK_THAT(all.error().message, Catch::Contains(path + ":"));
    std::remove(path.c_str());
}

TEST_CASE("all vendored files load, quickly, with the counts of the corpus", "[framework]") {
    const std::pair<const char*, size_t> files[] = {{"V1_0.jsonl.gz", 266},
                                                    {"V1_1.jsonl.gz", 439},
                                                    {"V1_2.jsonl.gz", 4048},
                                                    {"V1_3.jsonl.gz", 2210},
                                                    {"V1_3_cts_only.jsonl.gz", 170}};
    const auto start = std::chrono::steady_clock::now();
    size_t total = 0, expectFailure = 0;
    for (const auto& [file, count] : files) {
        auto all = framework::loadCtsFile(framework::ctsDataDir() + "/" + file);
        INFO(file);
        REQUIRE(all.has_value());
        CHECK(all->size() == count);
        total += all->size();
        for (const auto& tc : *all) {
            expectFailure += tc.expectFailure;
            REQUIRE(tc.inputs.size() == tc.model.main.inputIndexes.size());
            REQUIRE(tc.expectedOutputs.size() == tc.model.main.outputIndexes.size());
        }
    }
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(total == 7133);
    CHECK(expectFailure == 61);
    WARN("loaded " << total << " vectors in " << seconds << " s");
    CHECK(seconds < 20.0);  // generous for a loaded debug machine; a few seconds normally
}

TEST_CASE("compareOutputs applies the CTS tolerances", "[framework]") {
    auto tc = *framework::parseCtsLine(kAddLine, "mem:1");  // float32 output {4, 6}
    const std::vector<hal::OutputShape> shapes = {{{2}, true}};
    CHECK_FALSE(framework::compareOutputs(tc, {floats({4.0f, 6.0f})}, shapes).has_value());
    CHECK_FALSE(framework::compareOutputs(tc, {floats({4.0f + 5e-6f, 6.0f})}, shapes).has_value());
    auto m = framework::compareOutputs(tc, {floats({4.0f, 6.001f})}, shapes);
    REQUIRE(m.has_value());
    CHECK(m->element == 1);
    CHECK(m->expected == 6.0);
    CHECK_THAT(m->message, Catch::Contains("output 0 element 1"));
    // Relaxed: 5 ULP of fp16 (atol + rtol*|e| = 0.0048828125 * 7 for e=6).
    tc.isRelaxed = true;
    CHECK_FALSE(framework::compareOutputs(tc, {floats({4.0f, 6.02f})}, shapes).has_value());
    CHECK(framework::compareOutputs(tc, {floats({4.0f, 6.05f})}, shapes).has_value());
    tc.isRelaxed = false;
    // Wrong dims, wrong count, ignored outputs, NaN.
    CHECK(framework::compareOutputs(tc, {floats({4.0f, 6.0f})}, {{{1, 2}, true}}).has_value());
    CHECK(framework::compareOutputs(tc, {}, {}).has_value());
    CHECK(framework::compareOutputs(tc, {floats({4.0f, NAN})}, shapes).has_value());
    tc.outputIgnored = {true};
    CHECK_FALSE(framework::compareOutputs(tc, {floats({0.0f, 0.0f})}, shapes).has_value());

    // Quant8: atol 1, 3 for mobilenet.
    tc.outputIgnored = {false};
    auto& out = tc.model.main.operands[3];
    out.type = hal::OperandType::TENSOR_QUANT8_ASYMM;
    tc.expectedOutputs = {{10, 20}};
    CHECK_FALSE(framework::compareOutputs(tc, {{11, 19}}, shapes).has_value());
    CHECK(framework::compareOutputs(tc, {{12, 20}}, shapes).has_value());
    tc.name = "mobilenet_quantized";
    CHECK_FALSE(framework::compareOutputs(tc, {{13, 17}}, shapes).has_value());
    // Bool: exact.
    out.type = hal::OperandType::TENSOR_BOOL8;
    tc.expectedOutputs = {{1, 0}};
    CHECK(framework::compareOutputs(tc, {{1, 1}}, shapes).has_value());
}

TEST_CASE("makeRequest places inputs and outputs in one pool and readOutputs reads them back",
          "[framework]") {
    auto tc = *framework::parseCtsLine(kAddLine, "mem:1");
    tc.inputs[1].clear();  // omitted
    auto pr = framework::makeRequest(tc);
    REQUIRE(pr.has_value());
    REQUIRE(pr->request.inputs.size() == 2);
    REQUIRE(pr->request.outputs.size() == 1);
    REQUIRE(pr->request.pools.size() == 1);
    CHECK_FALSE(pr->request.inputs[0].hasNoValue);
    CHECK(pr->request.inputs[1].hasNoValue);
    const auto& loc = pr->request.inputs[0].location;
    CHECK(loc.length == 8);
    CHECK(std::memcmp(pr->pool->data() + loc.offset, tc.inputs[0].data(), 8) == 0);
    const auto& outLoc = pr->request.outputs[0].location;
    CHECK(outLoc.length == 8);
    std::memcpy(pr->pool->data() + outLoc.offset, tc.expectedOutputs[0].data(), 8);
    auto outputs = framework::readOutputs(*pr);
    CHECK(outputs == tc.expectedOutputs);
}

TEST_CASE("the example vector of docs/vector-format.md parses, with every documented field", "[framework]") {
    std::ifstream doc("docs/vector-format.md");  // tests run from the source root
    REQUIRE(doc.good());
    const std::string text((std::istreambuf_iterator<char>(doc)), std::istreambuf_iterator<char>());
    const size_t begin = text.find("```json\n");
    REQUIRE(begin != std::string::npos);
    const size_t end = text.find("```", begin + 8);
    REQUIRE(end != std::string::npos);
    std::string line = text.substr(begin + 8, end - begin - 8);
    for (char& c : line) c = (c == '\n') ? ' ' : c;  // the doc wraps the one line for reading

    auto tc = framework::parseCtsLine(line, "docs/vector-format.md");
    REQUIRE(tc);
    CHECK(tc->name == "my_add_quant8");
    REQUIRE(tc->inputs.size() == 1);
    CHECK(tc->inputs[0] == std::vector<uint8_t>{10, 20, 30, 40});
    REQUIRE(tc->expectedOutputs.size() == 1);
    CHECK(tc->expectedOutputs[0] == std::vector<uint8_t>{11, 22, 33, 44});
    CHECK(tc->model.main.operations.size() == 1);
}

TEST_CASE("closestNames suggests names containing the query or a few edits away", "[framework][cts]") {
    const std::vector<std::string> names = {"conv_quant8", "conv_quant8_2", "conv_float", "add_quant8",
                                            "depthwise_conv2d_quant8"};
    using npu::framework::closestNames;
    CHECK(closestNames("conv_qant8", names, 3) == std::vector<std::string>{"conv_quant8", "conv_quant8_2"});
    CHECK(closestNames("conv_quant8", names, 1) == std::vector<std::string>{"conv_quant8"});
    CHECK(closestNames("zzzzzzzz", names, 3).empty());
    CHECK(closestNames("quant8", names, 2).size() == 2);  // contained in several
}

namespace {

// The bytes of constant operand `o` of `model` (CONSTANT_COPY or CONSTANT_REFERENCE).
std::vector<uint8_t> constantOf(const hal::Model& model, const hal::Operand& o) {
    const uint8_t* base = o.lifetime == hal::OperandLifeTime::CONSTANT_REFERENCE
                              ? model.pools.at(o.location.poolIndex)->data()
                              : model.operandValues.data();
    return {base + o.location.offset, base + o.location.offset + o.location.length};
}

void checkSameSubgraph(const hal::Model& ma, const hal::Subgraph& a, const hal::Model& mb,
                       const hal::Subgraph& b) {
    REQUIRE(a.operands.size() == b.operands.size());
    for (size_t i = 0; i < a.operands.size(); ++i) {
        INFO("operand " << i);
        const hal::Operand &x = a.operands[i], &y = b.operands[i];
        CHECK(x.type == y.type);
        CHECK(x.dimensions == y.dimensions);
        CHECK(x.scale == y.scale);
        CHECK(x.zeroPoint == y.zeroPoint);
        CHECK(x.lifetime == y.lifetime);
        CHECK(x.channelQuant.has_value() == y.channelQuant.has_value());
        if (x.channelQuant && y.channelQuant) {
            CHECK(x.channelQuant->channelDim == y.channelQuant->channelDim);
            CHECK(x.channelQuant->scales == y.channelQuant->scales);
        }
        if (x.lifetime == hal::OperandLifeTime::CONSTANT_COPY ||
            x.lifetime == hal::OperandLifeTime::CONSTANT_REFERENCE)
            CHECK(constantOf(ma, x) == constantOf(mb, y));
        if (x.lifetime == hal::OperandLifeTime::SUBGRAPH) CHECK(x.location.offset == y.location.offset);
    }
    REQUIRE(a.operations.size() == b.operations.size());
    for (size_t i = 0; i < a.operations.size(); ++i) {
        CHECK(a.operations[i].type == b.operations[i].type);
        CHECK(a.operations[i].inputs == b.operations[i].inputs);
        CHECK(a.operations[i].outputs == b.operations[i].outputs);
    }
    CHECK(a.inputIndexes == b.inputIndexes);
    CHECK(a.outputIndexes == b.outputIndexes);
}

}  // namespace

// The writer (used by the differential test to save a failing random model for `npu run FILE`)
// is the reader's inverse on every vendored vector: every field the reader fills comes back.
TEST_CASE("every vendored vector written by ctsLine reads back into the same test case", "[framework]") {
    size_t checked = 0;
    for (const char* file :
         {"V1_0.jsonl.gz", "V1_1.jsonl.gz", "V1_2.jsonl.gz", "V1_3.jsonl.gz", "V1_3_cts_only.jsonl.gz"}) {
        auto all = framework::loadCtsFile(framework::ctsDataDir() + "/" + file);
        REQUIRE(all.has_value());
        for (const TestCase& tc : *all) {
            INFO(file << " " << tc.name);
            auto line = framework::ctsLine(tc);
            REQUIRE(line.has_value());
            auto back = framework::parseCtsLine(*line, "written");
            REQUIRE(back.has_value());
            CHECK(back->name == tc.name);
            CHECK(back->spec == tc.spec);
            CHECK(back->hal == tc.hal);
            CHECK(back->source == tc.source);
            CHECK(back->minSupportedVersion == tc.minSupportedVersion);
            CHECK(back->expectFailure == tc.expectFailure);
            CHECK(back->isRelaxed == tc.isRelaxed);
            CHECK(back->multinomialTolerance == tc.multinomialTolerance);
            CHECK(back->inputs == tc.inputs);
            CHECK(back->expectedOutputs == tc.expectedOutputs);
            CHECK(back->expectedOutputDims == tc.expectedOutputDims);
            CHECK(back->outputIgnored == tc.outputIgnored);
            checkSameSubgraph(tc.model, tc.model.main, back->model, back->model.main);
            REQUIRE(back->model.referenced.size() == tc.model.referenced.size());
            for (size_t r = 0; r < tc.model.referenced.size(); ++r)
                checkSameSubgraph(tc.model, tc.model.referenced[r], back->model, back->model.referenced[r]);
            ++checked;
        }
    }
    CHECK(checked == 7133);
}

TEST_CASE("appendCtsLine appends one line per test case; a bad test case is refused", "[framework]") {
    auto tc = framework::parseCtsLine(kAddLine, "add");
    REQUIRE(tc.has_value());
    const std::string path = tempPath("append");
    std::remove(path.c_str());
    REQUIRE(framework::appendCtsLine(path, *tc).has_value());
    tc->name = "add_again";
    REQUIRE(framework::appendCtsLine(path, *tc).has_value());
    auto all = framework::loadCtsFile(path);
    std::remove(path.c_str());
    REQUIRE(all.has_value());
    REQUIRE(all->size() == 2);
    CHECK((*all)[0].name == "add");
    CHECK((*all)[1].name == "add_again");
    CHECK((*all)[1].inputs == tc->inputs);

    tc->inputs.pop_back();  // one input short of the model's two
    auto bad = framework::ctsLine(*tc);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error().message, Catch::Contains("1 inputs") && Catch::Contains("add_again"));
}
