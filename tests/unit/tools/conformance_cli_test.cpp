// npu conformance as a user meets it: counts in --json, bad input, --filter, and a vector whose
// worker crashes or hangs (the NPU_CONFORMANCE_TEST_CRASH / _HANG hooks of the tool's worker).
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace {

using Json = nlohmann::json;

struct Run {
    int exitCode = -1;
    std::string out;  // stdout only
};

// Runs the CLI; stderr goes to `errFile` so that stdout stays parseable JSON.
Run npu(const std::string& args, const std::string& env = "", const std::string& errFile = "/dev/null") {
    std::string cmd = env + " " + std::string(NPU_CLI_PATH) + " " + args + " 2>" + errFile;
    Run r;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    int status = pclose(p);
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// The lines of a vendored file, by vector name.
std::map<std::string, std::string> vendoredLines(const std::string& file) {
    std::map<std::string, std::string> lines;
    FILE* p = popen(("gzip -dc " + std::string(NPU_CTS_DIR) + "/" + file).c_str(), "r");
    REQUIRE(p != nullptr);
    std::string all;
    std::array<char, 65536> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) all.append(buf.data(), n);
    REQUIRE(pclose(p) == 0);
    size_t start = 0;
    while (start < all.size()) {
        size_t end = all.find('\n', start);
        if (end == std::string::npos) end = all.size();
        std::string line = all.substr(start, end - start);
        if (!line.empty()) lines[Json::parse(line)["name"].get<std::string>()] = line;
        start = end + 1;
    }
    return lines;
}

// Five vectors: two pass, an expect_failure one the reference must reject (a pass), a wrong
// expected output (a failure), an OEM operation, which this driver's HAL validation rejects on
// every device (INVALID_ARGUMENT: a failure, not "unsupported", since issue 14).
std::string writeSmallFile() {
    const std::string path = "/tmp/npu-conformance-test-" + std::to_string(getpid()) + ".jsonl";
    auto v10 = vendoredLines("V1_0.jsonl.gz");
    auto v12 = vendoredLines("V1_2.jsonl.gz");
    std::ofstream out(path);
    out << v10.at("conv_quant8") << "\n";
    out << v10.at("conv_float") << "\n";
    out << v12.at("depthwise_conv2d_invalid_filter_dims_nhwc_quant8") << "\n";

    Json wrong = Json::parse(v10.at("conv_quant8"));
    wrong["name"] = "conv_quant8_wrong_expectation";
    const auto outIndex = wrong["main"]["output_indexes"][0].get<size_t>();
    std::string data = wrong["main"]["operands"][outIndex]["data"].get<std::string>();
    // Every byte of the expected output becomes 0x7f or 0xff: base64 "f39/" / "////".
    for (size_t i = 0; i + 4 <= data.size() && data[i + 3] != '='; i += 4)
        data.replace(i, 4, data[i] == '/' ? "f39/" : "////");
    wrong["main"]["operands"][outIndex]["data"] = data;
    out << "\n" << wrong.dump() << "\n";  // a blank line in between is allowed

    Json oem = Json::parse(v10.at("conv_quant8"));
    oem["name"] = "conv_quant8_as_oem_operation";
    oem["main"]["operations"][0]["type"] = "OEM_OPERATION";
    out << oem.dump() << "\n";
    return path;
}

}  // namespace

TEST_CASE("npu conformance --json counts passed, failed and unsupported vectors", "[cli][conformance]") {
    const std::string path = writeSmallFile();
    auto r = npu("conformance --device reference --json " + path);
    INFO(r.out);
    CHECK(r.exitCode == 1);  // two failures
    Json j = Json::parse(r.out);
    CHECK(j["passed"] == 3);
    CHECK(j["failed"] == 2);
    CHECK(j["unsupported"] == 0);
    CHECK(j["errors"] == 0);
    REQUIRE(j["failures"].size() == 2);
    CHECK(j["failures"][1]["name"] == "conv_quant8_as_oem_operation");
    CHECK_THAT(j["failures"][1]["message"].get<std::string>(),
               Catch::Contains("INVALID_ARGUMENT") && Catch::Contains("operation 0"));
    CHECK(j["failures"][0]["name"] == "conv_quant8_wrong_expectation");
    CHECK(j["failures"][0]["line"] == 5);
    CHECK(j["failures"][0]["mismatch"]["output"] == 0);
    CHECK(j["failures"][0]["mismatch"].contains("tolerance"));
    bool sawConv = false;
    for (const auto& row : j["operations"]) {
        if (row["operation"] == "CONV_2D" && row["type"] == "TENSOR_QUANT8_ASYMM") {
            sawConv = true;
            CHECK(row["passed"] == 1);
            CHECK(row["failed"] == 1);
        }
    }
    CHECK(sawConv);

    // The text table names the first mismatch.
    auto text = npu("conformance --device reference --jobs 1 " + path);
    CHECK(text.exitCode == 1);
    CHECK_THAT(text.out, Catch::Contains("FAIL  conv_quant8_wrong_expectation") &&
                             Catch::Contains("element 0") && Catch::Contains("tolerance"));
    std::remove(path.c_str());
}

TEST_CASE("npu conformance --filter selects vectors by name; exit 0 when all pass", "[cli][conformance]") {
    const std::string path = writeSmallFile();
    auto r = npu("conformance --device reference --json --filter 'conv_*' --filter 'depthwise*' " + path);
    INFO(r.out);
    Json j = Json::parse(r.out);
    CHECK(j["vectors"] == 5);
    auto ok =
        npu("conformance --device reference --json --filter 'conv_quant8' --filter 'conv_float' " + path);
    INFO(ok.out);
    CHECK(ok.exitCode == 0);
    Json k = Json::parse(ok.out);
    CHECK(k["passed"] == 2);
    CHECK(k["vectors"] == 2);
    auto none = npu("conformance --device reference --filter 'nothing_is_called_this' " + path);
    CHECK(none.exitCode == 2);
    std::remove(path.c_str());
}

TEST_CASE("npu conformance of a missing or malformed file exits 2 naming file and line",
          "[cli][conformance]") {
    const std::string err = "/tmp/npu-conformance-test-err-" + std::to_string(getpid());
    auto missing = npu("conformance --device reference /nonexistent/x.jsonl", "", err);
    CHECK(missing.exitCode == 2);
    CHECK_THAT(readFile(err), Catch::Contains("/nonexistent/x.jsonl"));

    const std::string path = writeSmallFile();
    {
        std::ofstream append(path, std::ios::app);
        append << "{\"name\": \"x\", \"main\": 17}\n";  // line 7
    }
    auto bad = npu("conformance --device reference " + path, "", err);
    CHECK(bad.exitCode == 2);
    CHECK_THAT(readFile(err), Catch::Contains(path + ":7"));
    std::remove(path.c_str());
    std::remove(err.c_str());
}

TEST_CASE("npu conformance reports a crashing or hanging worker as an error and goes on",
          "[cli][conformance]") {
    const std::string path = writeSmallFile();
    auto r = npu("conformance --device reference --json --jobs 2 --timeout 1 " + path,
                 "NPU_CONFORMANCE_TEST_CRASH=conv_quant8 NPU_CONFORMANCE_TEST_HANG=conv_float");
    INFO(r.out);
    CHECK(r.exitCode == 1);
    Json j = Json::parse(r.out);
    CHECK(j["errors"] == 2);
    CHECK(j["passed"] == 1);  // the expect_failure vector, run by a replacement worker
    CHECK(j["failed"] == 2);  // the wrong expectation and the OEM operation
    CHECK(j["unsupported"] == 0);
    std::map<std::string, std::string> messages;
    for (const auto& f : j["failures"]) messages[f["name"]] = f["message"];
    CHECK_THAT(messages["conv_quant8"], Catch::Contains("crash (signal 11"));
    CHECK_THAT(messages["conv_float"], Catch::Contains("hang"));
    std::remove(path.c_str());
}

TEST_CASE("npu conformance hides all-unsupported rows unless --all", "[cli][conformance]") {
    const std::string file = std::string(NPU_CTS_DIR) + "/V1_0.jsonl.gz";
    const std::string filters = " --filter conv_float --filter conv_quant8 --jobs 1";
    auto table = npu("conformance --device npu " + file + filters);
    INFO(table.out);
    CHECK(table.exitCode == 0);
    CHECK_THAT(table.out, Catch::Contains("TENSOR_QUANT8_ASYMM"));
    CHECK_THAT(table.out, !Catch::Contains("TENSOR_FLOAT32"));
    CHECK_THAT(table.out, Catch::Contains("1 rows with only unsupported vectors hidden; --all shows them"));
    auto all = npu("conformance --device npu --all " + file + filters);
    INFO(all.out);
    CHECK_THAT(all.out, Catch::Contains("TENSOR_FLOAT32"));
    CHECK_THAT(all.out, !Catch::Contains("hidden"));
    auto json = npu("conformance --device npu --json " + file + filters);
    CHECK(Json::parse(json.out)["operations"].size() == 2);  // JSON lists every row
}

TEST_CASE("npu conformance warns about transport flags with the reference device", "[cli][conformance]") {
    const std::string err = "/tmp/npu-conformance-warn-" + std::to_string(::getpid()) + ".txt";
    auto r = npu("conformance --device reference --transport unix " + std::string(NPU_CTS_DIR) +
                     "/V1_0.jsonl.gz --filter conv_quant8",
                 "", err);
    const std::string text = readFile(err);
    std::remove(err.c_str());
    CHECK(r.exitCode == 0);
    CHECK_THAT(text, Catch::Contains("--transport does not apply to --device reference; ignored"));
}

namespace {

namespace fs = std::filesystem;
const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

// A directory of ONNX backend tests in their layout, made from libonnx-testdata's: relu (passes),
// relu_wrong (relu's model, its input as the expected output: fails on the negative elements),
// erf (no HAL counterpart: unsupported), broken (model.onnx is not a model: an error) and
// qlinearconv (passes; on the NPU its convolution runs there).
fs::path writeOnnxTests() {
    const fs::path root = fs::temp_directory_path() / ("npu-conformance-onnx-" + std::to_string(::getpid()));
    fs::remove_all(root);
    auto copyTest = [&](const std::string& from, const std::string& to) {
        fs::create_directories(root / to);
        fs::copy(kNodeTests / from, root / to, fs::copy_options::recursive);
    };
    copyTest("test_relu", "relu");
    copyTest("test_relu", "relu_wrong");
    fs::copy_file(root / "relu_wrong/test_data_set_0/input_0.pb",
                  root / "relu_wrong/test_data_set_0/output_0.pb", fs::copy_options::overwrite_existing);
    copyTest("test_erf", "erf");
    copyTest("test_relu", "broken");
    std::ofstream(root / "broken/model.onnx") << "not a model";
    copyTest("test_qlinearconv", "qlinearconv");
    return root;
}

}  // namespace

TEST_CASE("npu conformance DIR runs ONNX backend tests with the CTS counts and tolerances",
          "[cli][conformance]") {
    INFO("libonnx-testdata (scripts/setup.sh) provides " << kNodeTests);
    REQUIRE(fs::is_directory(kNodeTests / "test_qlinearconv"));
    const fs::path root = writeOnnxTests();
    auto r = npu("conformance --device reference --json --jobs 2 " + root.string());
    INFO(r.out);
    CHECK(r.exitCode == 1);
    Json j = Json::parse(r.out);
    CHECK(j["vectors"] == 5);
    CHECK(j["passed"] == 2);
    CHECK(j["failed"] == 1);
    CHECK(j["unsupported"] == 1);
    CHECK(j["errors"] == 1);
    REQUIRE(j["failures"].size() == 2);
    CHECK(j["failures"][0]["name"] == "broken");
    CHECK(j["failures"][0]["verdict"] == "error");
    CHECK_THAT(j["failures"][0]["message"].get<std::string>(), Catch::Contains("model.onnx"));
    CHECK(j["failures"][1]["name"] == "relu_wrong");
    CHECK(j["failures"][1]["verdict"] == "failed");
    CHECK(j["failures"][1]["mismatch"]["expected"].get<double>() < 0);  // relu gave 0 there
    CHECK(j["failures"][1]["mismatch"]["actual"] == 0.0);
    bool reluRow = false;
    for (const auto& row : j["operations"])
        reluRow = reluRow || (row["operation"] == "onnx Relu" && row["type"] == "FLOAT" &&
                              row["passed"] == 1 && row["failed"] == 1);
    CHECK(reluRow);

    // On the NPU, partitioned: the quantized convolution runs there, the float tests on the reference.
    auto npuRun =
        npu("conformance --device npu --json --jobs 1 --filter qlinearconv --filter relu " + root.string());
    INFO(npuRun.out);
    CHECK(npuRun.exitCode == 0);
    Json k = Json::parse(npuRun.out);
    CHECK(k["passed"] == 2);
    CHECK(k["operations_on_npu"].get<int>() >= 1);
    CHECK(k["operations_partitioned"].get<int>() > k["operations_on_npu"].get<int>());
    // --no-fallback: the float relu is unsupported on the NPU alone; -v says why.
    auto alone =
        npu("conformance --device npu --no-fallback -v --jobs 1 --filter qlinearconv --filter relu " +
            root.string());
    INFO(alone.out);
    CHECK(alone.exitCode == 0);
    CHECK_THAT(alone.out, Catch::Contains("1 passed, 0 failed, 1 unsupported"));
    CHECK_THAT(alone.out, Catch::Contains("UNSUP relu"));

    // One test directory, a directory without tests.
    CHECK(npu("conformance --device reference " + (root / "relu").string()).exitCode == 0);
    fs::create_directories(root / "empty");
    const std::string err = (root / "err.txt").string();
    CHECK(npu("conformance " + (root / "empty").string(), "", err).exitCode == 2);
    CHECK_THAT(readFile(err), Catch::Contains("no ONNX test in it"));
    fs::remove_all(root);
}
