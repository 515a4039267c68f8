// The npu command line over --transport qemu (the firmware image on an emulated Cortex-M55):
// the demo network bit-identical to loopback with the same cycles, info naming the image,
// `npu conformance` running the convolution vectors over it, and `npu bench rpc` measuring its
// figures. (A vector of every operation type the NPU claims, against loopback, is
// tests/unit/shim/npu_qemu_test.cpp's.) Skipped (exit 77, with the reason) when
// qemu-system-arm, the image or the bridge is missing.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "npu/protocol/qemu_transport.h"

namespace {

struct Run {
    int exitCode = -1;
    std::string output;
};

Run runNpu(const std::string& args, bool withStderr = true, const std::string& prefix = "") {
    if (auto paths = npu::proto::resolveQemuPaths({}); !paths) {
        std::printf("SKIP: %s\n", paths.error().message.c_str());
        std::exit(77);
    }
    const std::string cmd =
        prefix + std::string(NPU_CLI_PATH) + " " + args + (withStderr ? " 2>&1" : " 2>/dev/null");
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

nlohmann::json npuJson(const std::string& args) {
    auto r = runNpu(args, false);
    INFO(args << ": " << r.output);
    REQUIRE(r.exitCode == 0);
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    return j;
}

}  // namespace

TEST_CASE("npu demo --transport qemu gives loopback's outputs and cycles", "[cli][qemu]") {
    const auto qemu = npuJson("demo --transport qemu --json");
    const auto loopback = npuJson("demo --transport loopback --json");
    CHECK(qemu["device"] == "npu (qemu)");
    CHECK(qemu["match"] == true);
    CHECK(qemu["outputs"] == loopback["outputs"]);
    CHECK(qemu["device_cycles"].get<uint64_t>() > 0);
    CHECK(qemu["device_cycles"] == loopback["device_cycles"]);
    CHECK(qemu["operations"] == loopback["operations"]);
}

TEST_CASE("npu info --transport qemu names the image's core, build id and footprint", "[cli][qemu]") {
    auto r = runNpu("info --transport qemu");
    INFO(r.output);
    CHECK(r.exitCode == 0);
    CHECK_THAT(r.output, Catch::Contains("Cortex-M55 (qemu mps3-an547)"));
    CHECK_THAT(r.output, Catch::Contains(", build "));
    CHECK_THAT(r.output, Catch::Contains(" B flash + "));
    CHECK_THAT(r.output, Catch::Contains("transport qemu"));
}

// NPU_VLOG=firmware over QEMU: the image's RpcServer logs each request on its console UART
// (asked for in the DDR ring header) and the transport passes the lines on; silent without it.
TEST_CASE("NPU_VLOG=firmware logs the Cortex-M55 firmware's requests over qemu; unset, nothing",
          "[cli][qemu]") {
    auto logged = runNpu("info --transport qemu", true, "NPU_VLOG=firmware ");
    INFO(logged.output);
    CHECK(logged.exitCode == 0);
    CHECK_THAT(logged.output, Catch::Contains("npu[firmware] GetCapabilities call"));
    CHECK_THAT(logged.output, Catch::Contains("npu[firmware] serving RPC"));  // the image's boot line
    auto quiet = runNpu("info --transport qemu", true, "env -u NPU_VLOG ");
    INFO(quiet.output);
    CHECK(quiet.exitCode == 0);
    CHECK_THAT(quiet.output, !Catch::Contains("npu[firmware]"));
}

TEST_CASE(
    "npu conformance --transport qemu passes the CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED vectors",
    "[cli][qemu]") {
    const auto j = npuJson(
        "conformance --transport qemu --json -j 2 --filter conv_quant8 --filter conv_quant8_large "
        "--filter depthwise_conv2d_quant8 --filter depthwise_conv2d_quant8_large --filter "
        "fully_connected_quant8 "
        "--filter fully_connected_quant8_2 --filter conv2d_quant8_signed_nhwc_quant8_signed "
        "--filter conv2d_quant8_signed_nchw_quant8_signed --filter 'fully_connected_quant8_signed*'");
    INFO(j.dump(1));
    CHECK(j["failed"] == 0);
    CHECK(j["errors"] == 0);
    std::set<std::string> passed;
    for (const auto& op : j["operations"]) {
        if (op["passed"].get<int>() > 0)
            passed.insert(op["operation"].get<std::string>() + " " + op["type"].get<std::string>());
    }
    for (const char* claimed :
         {"CONV_2D TENSOR_QUANT8_ASYMM", "CONV_2D TENSOR_QUANT8_ASYMM_SIGNED",
          "DEPTHWISE_CONV_2D TENSOR_QUANT8_ASYMM", "FULLY_CONNECTED TENSOR_QUANT8_ASYMM",
          "FULLY_CONNECTED TENSOR_QUANT8_ASYMM_SIGNED"}) {
        INFO(claimed);
        CHECK(passed.count(claimed) == 1);
    }
}

TEST_CASE("npu bench rpc --json measures Ping and execution over qemu and the mailbox round trips",
          "[cli][qemu]") {
    // Two emulators one after the other in one process (Pings, then executions): the sequence
    // that once printed exec_qemu_us -1 when the firmware's clock stepped back. Any failed figure
    // makes the command exit 1 and say why on stderr.
    const auto j = npuJson("bench rpc --json --iterations 40");
    INFO(j.dump(1));
    CHECK(j["qemu_iterations"] == 40);
    CHECK(j["ping_qemu_us"].is_number());
    CHECK(j["exec_qemu_us"].is_number());
    REQUIRE(j["exec_qemu_mailbox_round_trips"].is_number());
    // Set-up, doorbell, interrupt poll, status and the PMU snapshots: a few dozen per execution.
    CHECK(j["exec_qemu_mailbox_round_trips"].get<double>() >= 10);
}
