// npu run --builtin and npu bench model: whole networks through the stack, checked against the
// CPU reference, with their per-operation profiles (CSV, trace, JSON). Reduced input sizes keep
// each case to seconds; the full 224x224 run is the benchmark's (docs/benchmarks.md).
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

struct Run {
    int exitCode = -1;
    std::string out;  // stdout only (JSON)
    std::string all;  // stdout and stderr
};

Run npu(const std::string& args) {
    const std::string err = "/tmp/npu-builtin-test-" + std::to_string(getpid()) + ".err";
    const std::string cmd = std::string(NPU_CLI_PATH) + " " + args + " 2>" + err;
    Run r;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream e(err);
    std::stringstream ss;
    ss << e.rdbuf();
    r.all = r.out + ss.str();
    std::filesystem::remove(err);
    return r;
}

nlohmann::json parse(const Run& r) {
    INFO(r.all);
    REQUIRE(r.exitCode == 0);
    return nlohmann::json::parse(r.out);
}

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace

TEST_CASE("npu run --builtin mobilenet_v2 matches the reference and writes its profile", "[cli][builtin]") {
    const auto dir = std::filesystem::temp_directory_path() / ("npu-builtin-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string csv = dir / "layers.csv", trace = dir / "trace.json";
    const auto j = parse(npu("run --builtin mobilenet_v2 --input-size 96 --no-autotune --json --csv " + csv +
                             " --trace " + trace));
    CHECK(j["match"] == true);
    CHECK(j["input"] == "96x96x3");
    // The stem, 17 blocks (50 convolutions and 10 residual ADDs), the head convolution, pool, FC
    // and softmax.
    REQUIRE(j["ops_total"] == 65);
    const auto& ops = j["operations"];
    REQUIRE(ops.size() == 65);
    CHECK(ops[0]["name"] == "stem/conv3x3");
    CHECK(ops[0]["type"] == "CONV_2D");
    CHECK(ops[64]["name"] == "head/softmax");
    CHECK(ops[64]["type"] == "SOFTMAX");
    size_t onNpu = 0;
    for (size_t i = 0; i < ops.size(); ++i) {
        const auto& op = ops[i];
        if (op["device"] != "npu") continue;
        ++onNpu;
        CHECK(op.contains("cycles"));
        // A residual ADD runs inside the projecting CONV_2D before it (the compiler fuses it
        // into that convolution's store): no commands, no DRAM traffic of its own.
        const bool fused =
            op["type"] == "ADD" && i > 0 && ops[i - 1]["type"] == "CONV_2D" &&
            op["dram_read_bytes"].get<uint64_t>() + op["dram_write_bytes"].get<uint64_t>() == 0;
        if (fused) CHECK(op["cycles"].get<uint64_t>() == 0);
        CHECK((fused || op["dram_read_bytes"].get<uint64_t>() + op["dram_write_bytes"].get<uint64_t>() > 0));
    }
    CHECK(j["ops_on_npu"] == onNpu);
    CHECK(onNpu >= 64);  // everything but (until the NPU takes it) SOFTMAX
    CHECK(j["operations_on_cpu"].size() == 65 - onNpu);
    // 48x48 outputs of 3x3x3 taps; SAME pads only the bottom row and right column, which the PMU
    // does not count: 143 taps per axis.
    CHECK(ops[0]["macs"].get<uint64_t>() == 143ull * 143 * 3 * 32);

    // The CSV: a header and one row per operation, named.
    std::istringstream lines(slurp(csv));
    std::string line;
    REQUIRE(std::getline(lines, line));
    CHECK(line.rfind("index,name,type,device,start_cycle,cycles,", 0) == 0);
    size_t rows = 0;
    while (std::getline(lines, line)) {
        if (rows == 1) CHECK(line.rfind("1,block0/depthwise3x3,DEPTHWISE_CONV_2D,npu,", 0) == 0);
        ++rows;
    }
    CHECK(rows == 65);

    // The trace: Trace Event Format, one span per NPU operation labelled "index name".
    const auto t = nlohmann::json::parse(slurp(trace));
    size_t spans = 0;
    bool stemFound = false;
    for (const auto& e : t["traceEvents"]) {
        if (e["ph"] != "X") continue;
        ++spans;
        if (e["name"] == "0 stem/conv3x3")
            stemFound = e["args"]["type"] == "CONV_2D" && e["dur"].get<double>() > 0;
    }
    CHECK(spans == onNpu);
    CHECK(stemFound);
    std::filesystem::remove_all(dir);
}

TEST_CASE("npu run --builtin ssd_mobilenet_v1 runs the post-processing on the CPU reference",
          "[cli][builtin]") {
    const auto j = parse(npu("run --builtin ssd_mobilenet_v1 --input-size 64 --no-autotune --json"));
    CHECK(j["match"] == true);
    bool postprocessOnCpu = false;
    for (const auto& op : j["operations"]) {
        if (op["type"] == "DETECTION_POSTPROCESSING") postprocessOnCpu = op["device"] == "reference";
        if (op["type"] == "CONCATENATION" || op["type"] == "LOGISTIC") CHECK(op["device"] == "npu");
    }
    CHECK(postprocessOnCpu);
    CHECK(j["partitions"].get<int>() >= 2);
    REQUIRE(j["outputs"].size() == 4);  // scores, boxes, classes, detection count
}

TEST_CASE("npu bench model --json gives per-layer and total figures", "[cli][builtin]") {
    const auto j = parse(npu("bench model --builtin mobilenet_v2 --input-size 64 --no-autotune --json"));
    for (const char* key : {"total_cycles", "roofline_cycles", "compile_ms", "fw_peak_bytes", "ops_on_npu",
                            "ops_total", "layers", "match"}) {
        CHECK(j.contains(key));
    }
    CHECK(j["match"] == true);
    CHECK(j["ops_total"] == 65);
    CHECK(j["layers"].size() == 65);
    // Per layer: the roofline is at least the array's bound (MACs / 1024 on the default 32x32) and
    // the DRAM bound (bytes / 16); the layers add up to the totals. (Not cycles >= roofline: the
    // device's read and write channels each move 16 B/cycle, so a layer can beat the bound.)
    const auto total = j["total_cycles"].get<uint64_t>(), roofline = j["roofline_cycles"].get<uint64_t>();
    uint64_t cycles = 0, bounds = 0;
    for (const auto& l : j["layers"]) {
        if (l["device"] != "npu") continue;
        const auto macs = l["macs"].get<uint64_t>(), minBytes = l["min_bytes"].get<uint64_t>();
        const auto bound = l["roofline_cycles"].get<uint64_t>();
        CHECK(bound >= (macs + 1023) / 1024);
        CHECK(bound >= (minBytes + 15) / 16);
        // Every layer runs, but a residual ADD fused into its convolution's store (0 cycles).
        CHECK((l["cycles"].get<uint64_t>() > 0 || l["type"] == "ADD"));
        CHECK(l["utilization"].get<double>() <= 1.0);
        cycles += l["cycles"].get<uint64_t>();
        bounds += bound;
    }
    CHECK(cycles == total);
    CHECK(bounds == roofline);
    CHECK(roofline > 0);
    CHECK(j["compile_ms"].get<double>() > 0);
    CHECK(j["fw_peak_bytes"].get<uint64_t>() > 0);
}

TEST_CASE("npu run --builtin refuses an unknown network and a run without a model", "[cli][builtin]") {
    auto r = npu("run --builtin alexnet");
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.all, Catch::Contains("mobilenet_v2"));
    r = npu("run");
    CHECK(r.exitCode == 2);
    CHECK_THAT(r.all, Catch::Contains("--builtin"));
    r = npu("run --builtin mobilenet_v2 --input-size 8");
    CHECK(r.exitCode == 2);
}

TEST_CASE("npu run of a test vector writes its profile too", "[cli][builtin]") {
    const std::string csv = "/tmp/npu-builtin-vector-" + std::to_string(getpid()) + ".csv";
    const auto r = npu("run " + std::string(NPU_CTS_DIR) + "/V1_0.jsonl.gz --name conv_quant8 --csv " + csv);
    INFO(r.all);
    REQUIRE(r.exitCode == 0);
    std::istringstream lines(slurp(csv));
    std::string header, row, extra;
    REQUIRE(std::getline(lines, header));
    REQUIRE(std::getline(lines, row));
    CHECK(row.rfind("0,op0,CONV_2D,npu,0,", 0) == 0);
    CHECK_FALSE(std::getline(lines, extra));
    std::filesystem::remove(csv);
}
