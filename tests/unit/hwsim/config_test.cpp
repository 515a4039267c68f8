// The hardware configuration: defaults, JSON loading, validation messages.
#include "npu/hwsim/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "npu/hwsim/device.h"

using namespace npu;
using namespace npu::sim;

TEST_CASE("defaults are the architecture page's") {
    HwConfig c;
    CHECK(c.clockMhz == 1000);
    CHECK(c.arrayRows == 32);
    CHECK(c.arrayCols == 32);
    CHECK(c.scratchpadBytes == 1u << 20);
    CHECK(c.vectorLanes == 32);
    CHECK(c.dmaBytesPerCycle == 16);
    CHECK(c.dramBytesPerCycle == 16);
    CHECK(c.dramLatencyCycles == 200);
    CHECK(validate(c).has_value());
}

TEST_CASE("every field loads from JSON; the JSON round-trips") {
    auto c = parseHwConfig(R"({"clock_mhz": 800, "array_rows": 16, "array_cols": 64, "dataflow": "is",
        "scratchpad_bytes": 524288, "scratchpad_banks": 4, "accumulator_bytes": 65536,
        "accumulator_banks": 2, "vector_lanes": 16, "vector_pipeline_cycles": 6,
        "dma_bytes_per_cycle": 32, "dma_max_outstanding": 4, "dram_bytes_per_cycle": 8,
        "dram_latency_cycles": 150, "token_queue_depth": 8, "command_queue_depth": 64,
        "decode_cycles": 3, "fp16_mac": true,
        "faults": {"hang_at_command": 5, "dma_error_at_transfer": 2, "sram_flip_after_command": 1,
                   "sram_flip_address": 100, "sram_flip_bit": 3, "irq_delay_polls": 2}})");
    REQUIRE(c.has_value());
    CHECK(c->clockMhz == 800);
    CHECK(c->arrayRows == 16);
    CHECK(c->arrayCols == 64);
    CHECK(c->dataflow == isa::Dataflow::kInputStationary);
    CHECK(c->scratchpadBanks == 4);
    CHECK(c->vectorLatencyCycles == 6);
    CHECK(c->dmaMaxOutstanding == 4);
    CHECK(c->dramBytesPerCycle == 8);
    CHECK(c->commandQueueDepth == 64);
    CHECK(c->fp16Mac);
    CHECK(c->faults.hangAtCommand == 5);
    CHECK(c->faults.sramFlipBit == 3);
    CHECK(c->faults.irqDelayPolls == 2);
    auto again = parseHwConfig(toJson(*c));
    REQUIRE(again.has_value());
    CHECK(toJson(*again) == toJson(*c));
}

TEST_CASE("an invalid config is rejected with a message naming the field") {
    auto check = [](const char* json, const char* needle) {
        auto c = parseHwConfig(json, "test.json");
        INFO(json);
        REQUIRE_FALSE(c.has_value());
        INFO(c.error());
        CHECK(c.error().find(needle) != std::string::npos);
        CHECK(c.error().find("test.json") != std::string::npos);
    };
    check(R"({"array_rows": 0})", "array_rows = 0");
    check(R"({"array_colz": 8})", "unknown key \"array_colz\"");
    check(R"({"dataflow": "xs"})", "dataflow");
    check(R"({"clock_mhz": -1})", "clock_mhz");
    check(R"({"scratchpad_bytes": 1000})", "scratchpad_bytes");
    check(R"({"scratchpad_banks": 3})", "scratchpad_banks");
    check(R"({"fp16_mac": 1})", "fp16_mac");
    check(R"({"faults": {"sram_flip_after_command": 1, "sram_flip_address": 99999999}})",
          "sram_flip_address");
    check(R"([1, 2])", "object");
    check(R"({"array_rows": )", "not valid JSON");
    CHECK_FALSE(loadHwConfig("/nonexistent/hw.json").has_value());
}

TEST_CASE("Device::create rejects an invalid config; the constructor stays safe") {
    std::vector<uint8_t> dram(4096);
    HwConfig bad;
    bad.vectorLanes = 0;
    auto d = Device::create(bad, dram.data(), dram.size());
    REQUIRE_FALSE(d.has_value());
    CHECK(d.error().find("vector_lanes = 0") != std::string::npos);
    Device safe(bad, dram.data(), dram.size());
    CHECK(safe.config().vectorLanes == 32);
    CHECK(safe.configError().find("vector_lanes") != std::string::npos);
    auto ok = Device::create(HwConfig{}, dram.data(), dram.size());
    REQUIRE(ok.has_value());
    CHECK((*ok)->configError().empty());
}

TEST_CASE(
    "loadHwConfig refuses a FIFO, a device and an oversized file without hanging or reading without bound") {
    char dirTemplate[] = "/tmp/npu-hwcfg-XXXXXX";
    REQUIRE(::mkdtemp(dirTemplate) != nullptr);
    const std::string dir = dirTemplate;
    const std::string fifo = dir + "/fifo.json";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto r = loadHwConfig(fifo);  // a blocking open would wait here for a writer forever
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error(), Catch::Contains("regular file"));

    auto zero = loadHwConfig("/dev/zero");
    REQUIRE_FALSE(zero.has_value());
    CHECK_THAT(zero.error(), Catch::Contains("regular file"));

    const std::string big = dir + "/big.json";
    FILE* f = std::fopen(big.c_str(), "w");
    REQUIRE(f != nullptr);
    std::string pad(kMaxHwConfigBytes + 1, ' ');
    std::fputs(("{\"array_rows\": 16}" + pad).c_str(), f);
    std::fclose(f);
    auto large = loadHwConfig(big);
    REQUIRE_FALSE(large.has_value());
    CHECK_THAT(large.error(), Catch::Contains(std::to_string(kMaxHwConfigBytes)));

    const std::string good = dir + "/good.json";
    f = std::fopen(good.c_str(), "w");
    REQUIRE(f != nullptr);
    std::fputs("{\"array_rows\": 16}", f);
    std::fclose(f);
    auto ok = loadHwConfig(good);
    REQUIRE(ok.has_value());
    CHECK(ok->arrayRows == 16);
    for (const auto& p : {fifo, big, good}) std::remove(p.c_str());
    ::rmdir(dir.c_str());
}
