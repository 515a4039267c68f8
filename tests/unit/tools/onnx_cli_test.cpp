// npu onnx run / npu onnx conformance, end to end through the command line.
#include <png.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

struct Run {
    int exitCode = -1;
    std::string output;
};

// stdout only (stderr appended when `withStderr`); `env`: VAR=VALUE assignments before it.
Run npu(const std::string& args, bool withStderr = false, const std::string& env = {}) {
    const std::string cmd =
        env + std::string(NPU_CLI_PATH) + " " + args + (withStderr ? " 2>&1" : " 2>/dev/null");
    Run r;
    FILE* p = popen(cmd.c_str(), "r");
    REQUIRE(p != nullptr);
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
    const int status = pclose(p);
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

const std::string kNode = "/usr/share/libonnx-testdata/data/node/";

// A w x h RGB PNG of one colour.
void writePng(const std::string& path, uint32_t w, uint32_t h, std::array<uint8_t, 3> rgb) {
    std::vector<uint8_t> pixels;
    for (uint32_t k = 0; k < w * h; ++k) pixels.insert(pixels.end(), rgb.begin(), rgb.end());
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    image.width = w;
    image.height = h;
    image.format = PNG_FORMAT_RGB;
    REQUIRE(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr));
}

}  // namespace

TEST_CASE("npu run MODEL.onnx --input image.png: resized and normalized; a damaged PNG exits 2", "[cli]") {
    // AveragePool of a [1, 3, 32, 32] input: a one-colour image gives each channel's value back.
    const std::string model = kNode + "test_averagepool_2d_default/model.onnx";
    const auto dir =
        std::filesystem::temp_directory_path() / ("npu_onnx_cli_png_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const std::string png = (dir / "img.png").string();
    writePng(png, 50, 20, {51, 102, 153});  // 0.2, 0.4, 0.6 after / 255; resized to 32 x 32
    Run r = npu("run " + model + " --device reference --json --input " + png);
    REQUIRE(r.exitCode == 0);
    auto values = nlohmann::json::parse(r.output)["outputs"][0]["values"];
    REQUIRE(values.size() == 3 * 31 * 31);
    CHECK(values[0].get<double>() == Approx(0.2));
    CHECK(values[31 * 31].get<double>() == Approx(0.4));
    CHECK(values[2 * 31 * 31 + 100].get<double>() == Approx(0.6));
    // (v - mean) / std, BGR order, nearest resize.
    r = npu("run " + model + " --device reference --json --input " + png +
            " --mean 0.5 --std 0.5,0.5,0.25 --bgr --resize nearest");
    REQUIRE(r.exitCode == 0);
    values = nlohmann::json::parse(r.output)["outputs"][0]["values"];
    CHECK(values[0].get<double>() == Approx((0.6 - 0.5) / 0.5));
    CHECK(values[2 * 31 * 31].get<double>() == Approx((0.2 - 0.5) / 0.25));

    // A truncated PNG and an input an image cannot feed: exit 2, naming the file and why.
    std::ifstream in(png, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir / "cut.png", std::ios::binary) << bytes.substr(0, bytes.size() - 20);
    r = npu("run " + model + " --device reference --input " + (dir / "cut.png").string(), true);
    CHECK(r.exitCode == 2);
    CHECK(r.output.find("cut.png: PNG data is damaged or truncated") != std::string::npos);
    r = npu("run " + kNode + "test_relu/model.onnx --device reference --input " + png, true);
    CHECK(r.exitCode == 2);
    CHECK(r.output.find("an image feeds a [N, C, H, W]") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("npu onnx run prints a node test's outputs on the reference and on the NPU with fallback",
          "[cli]") {
    const std::string t = kNode + "test_relu/";
    for (const char* device : {"reference", "npu"}) {
        const Run r = npu("onnx run " + t + "model.onnx --input " + t +
                          "test_data_set_0/input_0.pb --json --explain --device " + device);
        REQUIRE(r.exitCode == 0);
        const auto j = nlohmann::json::parse(r.output);
        CHECK(j["outputs"][0]["dims"] == nlohmann::json::array({3, 4, 5}));
        const auto& values = j["outputs"][0]["values"];
        REQUIRE(values.size() == 60);
        for (const auto& v : values) CHECK(v.get<double>() >= 0.0);
        CHECK(j["placement"][0]["type"] == "RELU");
        // A float RELU: the NPU takes quant8 only, so it runs on the reference either way.
        CHECK(j["placement"][0]["device"] == "reference");
        // On the NPU, --explain says why the NPU did not take it, in the firmware's words.
        if (std::string(device) == "npu")
            CHECK_THAT(j["placement"][0]["why"].get<std::string>(),
                       Catch::Contains("npu does not support it (operation 0 (RELU): "));
    }
}

TEST_CASE("npu onnx run: a QLinearConv runs on the NPU with its parameters fixed at import", "[cli]") {
    const std::string t = kNode + "test_qlinearconv/", s = t + "test_data_set_0/";
    const char* fixed[] = {"x_scale",      "x_zero_point", "w",           "w_scale",
                           "w_zero_point", "y_scale",      "y_zero_point"};
    std::string args =
        "onnx run " + t + "model.onnx --device npu --json --explain --input " + s + "input_0.pb";
    for (int i = 0; i < 7; ++i)
        args += std::string(" --fix ") + fixed[i] + "=" + s + "input_" + std::to_string(i + 1) + ".pb";
    const Run r = npu(args);
    REQUIRE(r.exitCode == 0);
    const auto j = nlohmann::json::parse(r.output);
    // NHWC: TRANSPOSE (quant8) in, the convolution, TRANSPOSE out, all on the NPU.
    CHECK(j["operations_on_npu"] == 3);
    CHECK(j["placement"][1]["type"] == "CONV_2D");
    CHECK(j["placement"][1]["device"] == "npu");
    // The first outputs of the test's output_0.pb.
    const std::vector<int> expected = {0, 81, 93, 230, 52, 87, 197, 240};
    for (size_t i = 0; i < expected.size(); ++i)
        CHECK(j["outputs"][0]["values"][i].get<int>() == expected[i]);
}

TEST_CASE("npu onnx: bad files exit 2, unmapped operators exit 3, both with the reason", "[cli]") {
    Run r = npu("onnx run /etc/hostname", true);
    CHECK(r.exitCode == 2);
    CHECK(r.output.find("not a serialized onnx.ModelProto") != std::string::npos);
    r = npu("onnx run " + kNode + "test_erf/model.onnx", true);
    CHECK(r.exitCode == 3);
    CHECK(r.output.find("(Erf): cannot map") != std::string::npos);
    r = npu("onnx run " + kNode + "test_relu/model.onnx --input-shape x=3x0x5", true);
    CHECK(r.exitCode == 2);
}

TEST_CASE("npu onnx conformance counts pass and unsupported", "[cli]") {
    const Run r = npu("onnx conformance --filter test_relu --filter test_erf --json");
    REQUIRE(r.exitCode == 0);
    const auto j = nlohmann::json::parse(r.output);
    CHECK(j["passed"] == 1);
    CHECK(j["unsupported"] == 1);
    CHECK(j["failed"] == 0);
    CHECK(j["errors"] == 0);
}

TEST_CASE("npu bench onnx prints the figures; ONNX Runtime's are null with a reason when it cannot run",
          "[cli]") {
    const std::string model =
        "/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d_depthwise_padded/model.onnx";
    const Run r = npu("bench onnx " + model + " --runs 2 --json");
    INFO(r.output);
    REQUIRE(r.exitCode == 0);
    const auto j = nlohmann::json::parse(r.output);
    for (const char* key : {"reference_ms", "sim_host_ms", "import_compile_ms"})
        CHECK(j[key].get<double>() > 0.0);
    for (const char* key : {"reference_ms_percentiles", "sim_host_ms_percentiles"}) {
        const auto& p = j[key];
        CHECK(p["min"].get<double>() <= p["p50"].get<double>());
        CHECK(p["p50"].get<double>() <= p["p90"].get<double>());
        CHECK(p["p90"].get<double>() <= p["p99"].get<double>());
        CHECK(p["p99"].get<double>() <= p["max"].get<double>());
        CHECK(p["min"].get<double>() > 0.0);
    }
    CHECK(j["ops_total"] == 1);
    CHECK(j["ops_on_npu"] == 0);  // float: the NPU takes quant8 only, the reference runs it
    CHECK(j["sim_device_ms"].is_null());
    CHECK(j["onnxruntime_ms"].is_null());
    CHECK(j["max_abs_diff_npu_vs_reference"] == 0.0);

    // Where tools/onnxruntime/run.js cannot be run, the ONNX Runtime fields are null with a reason.
    const Run noOrt = npu("bench onnx " + model + " --runs 1 --json --compare-onnxruntime", false,
                          "NPU_ONNXRUNTIME_SCRIPT=/nonexistent/run.js ");
    INFO(noOrt.output);
    REQUIRE(noOrt.exitCode == 0);
    const auto k = nlohmann::json::parse(noOrt.output);
    CHECK(k["onnxruntime_ms"].is_null());
    CHECK_FALSE(k["onnxruntime_reason"].get<std::string>().empty());
}

TEST_CASE("npu quantize, then npu run MODEL.onnx on the NPU with the per-layer table, dot and CSV", "[cli]") {
    const std::string p = "/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/";
    const auto dir = std::filesystem::temp_directory_path() / "npu_onnx_cli_quantize";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir / "calibration");
    std::filesystem::copy_file(p + "test_data_set_0/input_0.pb", dir / "calibration" / "input_0.pb");
    const std::string q = (dir / "q.onnx").string();
    Run r = npu("quantize " + p + "model.onnx --calibration " + (dir / "calibration").string() + " -o " + q +
                " --json");
    REQUIRE(r.exitCode == 0);
    auto j = nlohmann::json::parse(r.output);
    CHECK(j["qlinear_convs"] == 1);
    CHECK(j["samples"] == 1);
    CHECK(j["top1_agreement"].is_null());  // a 4-D output: not a classifier
    CHECK(j["max_abs_error"].get<double>() < 0.05);

    const std::string dot = (dir / "g.dot").string(), csv = (dir / "p.csv").string();
    r = npu("run " + q + " --device npu --json --explain --input " + p + "test_data_set_0/input_0.pb --dot " +
            dot + " --csv " + csv);
    REQUIRE(r.exitCode == 0);
    j = nlohmann::json::parse(r.output);
    // On the NPU: the input's QUANTIZE, the quant8 TRANSPOSE to NHWC, the CONV_2D and the output's
    // DEQUANTIZE (float model edges, ISA 1.3 CONVERT); on the CPU: the float TRANSPOSE back to NCHW.
    CHECK(j["ops_on_npu"] == 4);
    CHECK(j["ops_total"] == 5);
    CHECK(j["match"] == true);
    CHECK(j["sim_device_ms"].get<double>() > 0);
    CHECK(j["operations"][1]["type"] == "TRANSPOSE");
    CHECK(j["operations"][2]["type"] == "CONV_2D");
    CHECK(j["operations"][2]["device"] == "npu");
    CHECK(j["operations"][2]["cycles"].get<uint64_t>() > 0);
    CHECK(j["operations"][0]["device"] == "npu");
    CHECK(j["operations"][4]["type"] == "TRANSPOSE");
    CHECK(j["operations"][4]["why"].get<std::string>().find("fallback") != std::string::npos);
    std::ifstream dotFile(dot), csvFile(csv);
    const std::string dotText((std::istreambuf_iterator<char>(dotFile)), std::istreambuf_iterator<char>());
    CHECK(dotText.find("digraph") == 0);
    CHECK(dotText.find("#9be59b") != std::string::npos);  // an NPU operation
    CHECK(dotText.find("#ffc58a") != std::string::npos);  // a CPU fallback
    std::string header;
    std::getline(csvFile, header);
    CHECK(header.find("cycles") != std::string::npos);

    // The text form: the per-layer table of npu run --builtin.
    r = npu("run " + q + " --device npu");
    REQUIRE(r.exitCode == 0);
    CHECK(r.output.find("bit-exact with the CPU reference") != std::string::npos);
    CHECK(r.output.find("roofline") != std::string::npos);

    // npu bench model MODEL.onnx is npu bench onnx.
    r = npu("bench model " + q + " --json --runs 1");
    REQUIRE(r.exitCode == 0);
    j = nlohmann::json::parse(r.output);
    CHECK(j["ops_on_npu"] == 4);
    CHECK(j.contains("sim_host_ms"));
    CHECK(j.contains("import_compile_ms"));

    // Bad inputs: exit 2 with the reason.
    std::ofstream(dir / "x.png") << "png";
    r = npu("run " + q + " --input " + (dir / "x.png").string(), true);
    CHECK(r.exitCode == 2);
    CHECK(r.output.find("PNG") != std::string::npos);
    std::ofstream(dir / "x.raw") << "short";
    r = npu("run " + q + " --input " + (dir / "x.raw").string(), true);
    CHECK(r.exitCode == 2);
    CHECK(r.output.find("bytes") != std::string::npos);
    r = npu("quantize " + p + "model.onnx -o " + q, true);
    CHECK(r.exitCode == 2);
    std::filesystem::remove_all(dir);
}
