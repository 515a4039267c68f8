#include "npu/hwsim/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

namespace npu::sim {

namespace {

// One numeric field: its JSON key, where it lives and its legal range. The table is the single
// place that says what a config file may contain.
struct U32Field {
    const char* key;
    uint32_t HwConfig::*member;
    uint64_t min;
    uint64_t max;
};

constexpr uint64_t k16 = 0xFFFF;
constexpr U32Field kFields[] = {
    {"clock_mhz", &HwConfig::clockMhz, 1, 100000},
    {"array_rows", &HwConfig::arrayRows, 1, 4096},
    {"array_cols", &HwConfig::arrayCols, 1, 4096},
    {"scratchpad_bytes", &HwConfig::scratchpadBytes, 1024, 1u << 30},
    {"scratchpad_banks", &HwConfig::scratchpadBanks, 1, 256},
    {"accumulator_bytes", &HwConfig::accumulatorBytes, 1024, 1u << 30},
    {"accumulator_banks", &HwConfig::accumulatorBanks, 1, 256},
    {"vector_lanes", &HwConfig::vectorLanes, 1, 4096},
    {"vector_pipeline_cycles", &HwConfig::vectorLatencyCycles, 0, 1024},
    {"dma_bytes_per_cycle", &HwConfig::dmaBytesPerCycle, 1, 4096},
    {"dma_max_outstanding", &HwConfig::dmaMaxOutstanding, 1, 1024},
    {"dram_bytes_per_cycle", &HwConfig::dramBytesPerCycle, 1, 4096},
    {"dram_latency_cycles", &HwConfig::dramLatencyCycles, 0, k16},
    {"token_queue_depth", &HwConfig::tokenQueueDepth, 1, 255},
    {"command_queue_depth", &HwConfig::commandQueueDepth, 1, 4096},
    {"decode_cycles", &HwConfig::decodeCycles, 0, 1024},
};

std::string rangeMessage(const char* key, uint64_t v, uint64_t lo, uint64_t hi) {
    std::ostringstream o;
    o << key << " = " << v << ": must be in [" << lo << ", " << hi << "]";
    return o.str();
}

}  // namespace

const char* dataflowName(isa::Dataflow d) {
    switch (d) {
        case isa::Dataflow::kOutputStationary:
            return "os";
        case isa::Dataflow::kWeightStationary:
            return "ws";
        case isa::Dataflow::kInputStationary:
            return "is";
    }
    return "unknown";
}

Result<isa::Dataflow> parseDataflow(std::string_view name) {
    if (name == "os") return isa::Dataflow::kOutputStationary;
    if (name == "ws") return isa::Dataflow::kWeightStationary;
    if (name == "is") return isa::Dataflow::kInputStationary;
    return std::unexpected("dataflow = \"" + std::string(name) + "\": must be os, ws or is");
}

Result<void> validate(const HwConfig& c) {
    for (const U32Field& f : kFields) {
        const uint64_t v = c.*f.member;
        if (v < f.min || v > f.max) return std::unexpected(rangeMessage(f.key, v, f.min, f.max));
    }
    if (c.scratchpadBytes % 1024 != 0) {
        return std::unexpected("scratchpad_bytes = " + std::to_string(c.scratchpadBytes) +
                               ": must be a multiple of 1024 (HW_CONFIG2 reports KiB)");
    }
    if (c.accumulatorBytes % 1024 != 0) {
        return std::unexpected("accumulator_bytes = " + std::to_string(c.accumulatorBytes) +
                               ": must be a multiple of 1024 (HW_CONFIG3 reports KiB)");
    }
    if (c.scratchpadBytes % c.scratchpadBanks != 0) {
        return std::unexpected("scratchpad_banks = " + std::to_string(c.scratchpadBanks) +
                               ": must divide scratchpad_bytes = " + std::to_string(c.scratchpadBytes));
    }
    if (c.accumulatorBytes % (4 * c.accumulatorBanks) != 0) {
        return std::unexpected(
            "accumulator_banks = " + std::to_string(c.accumulatorBanks) +
            ": must divide accumulator_bytes / 4 = " + std::to_string(c.accumulatorBytes / 4));
    }
    if (c.dataflow != isa::Dataflow::kOutputStationary && c.dataflow != isa::Dataflow::kWeightStationary &&
        c.dataflow != isa::Dataflow::kInputStationary) {
        return std::unexpected("dataflow = " + std::to_string(static_cast<uint32_t>(c.dataflow)) +
                               ": must be os (0), ws (1) or is (2)");
    }
    if (c.faults.sramFlipAfterCommand != 0) {
        if (c.faults.sramFlipAddress >= c.scratchpadBytes) {
            return std::unexpected(
                rangeMessage("faults.sram_flip_address", c.faults.sramFlipAddress, 0, c.scratchpadBytes - 1));
        }
        if (c.faults.sramFlipBit > 7) {
            return std::unexpected(rangeMessage("faults.sram_flip_bit", c.faults.sramFlipBit, 0, 7));
        }
    }
    return {};
}

Result<HwConfig> parseHwConfig(std::string_view text, std::string_view where) {
    const std::string src(where);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return std::unexpected(src + ": not valid JSON");
    if (!j.is_object()) return std::unexpected(src + ": the top level must be a JSON object");
    HwConfig c;
    auto readU64 = [&](const nlohmann::json& v, const std::string& key) -> Result<uint64_t> {
        if (!v.is_number_unsigned()) {
            return std::unexpected(src + ": " + key + " = " + v.dump() + ": must be a non-negative integer");
        }
        return v.get<uint64_t>();
    };
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& key = it.key();
        const nlohmann::json& v = it.value();
        if (key == "dataflow") {
            if (!v.is_string()) return std::unexpected(src + ": dataflow must be a string (os, ws, is)");
            auto d = parseDataflow(v.get<std::string>());
            if (!d) return std::unexpected(src + ": " + d.error());
            c.dataflow = *d;
            continue;
        }
        if (key == "fp16_mac") {
            if (!v.is_boolean())
                return std::unexpected(src + ": fp16_mac = " + v.dump() + ": must be true or false");
            c.fp16Mac = v.get<bool>();
            continue;
        }
        if (key == "faults") {
            if (!v.is_object()) return std::unexpected(src + ": faults must be an object");
            for (auto f = v.begin(); f != v.end(); ++f) {
                const std::string fk = "faults." + f.key();
                if (f.key() == "sram_ecc") {
                    if (!f.value().is_boolean())
                        return std::unexpected(src + ": " + fk + " = " + f.value().dump() +
                                               ": must be true or false");
                    c.faults.sramEcc = f.value().get<bool>();
                    continue;
                }
                auto n = readU64(f.value(), fk);
                if (!n) return std::unexpected(n.error());
                if (f.key() == "hang_at_command")
                    c.faults.hangAtCommand = *n;
                else if (f.key() == "dma_error_at_transfer")
                    c.faults.dmaErrorAtTransfer = *n;
                else if (f.key() == "sram_flip_after_command")
                    c.faults.sramFlipAfterCommand = *n;
                else if (f.key() == "sram_flip_address" && *n <= UINT32_MAX)
                    c.faults.sramFlipAddress = static_cast<uint32_t>(*n);
                else if (f.key() == "sram_flip_bit" && *n <= 7)
                    c.faults.sramFlipBit = static_cast<uint32_t>(*n);
                else if (f.key() == "irq_delay_polls" && *n <= UINT32_MAX)
                    c.faults.irqDelayPolls = static_cast<uint32_t>(*n);
                else if (f.key() == "sram_flip_address" || f.key() == "sram_flip_bit" ||
                         f.key() == "irq_delay_polls") {
                    return std::unexpected(src + ": " + fk + " = " + std::to_string(*n) + ": out of range");
                } else {
                    return std::unexpected(src + ": unknown key " + fk);
                }
            }
            continue;
        }
        const U32Field* field = nullptr;
        for (const U32Field& f : kFields) {
            if (key == f.key) field = &f;
        }
        if (field == nullptr) return std::unexpected(src + ": unknown key \"" + key + "\"");
        auto n = readU64(v, key);
        if (!n) return std::unexpected(n.error());
        if (*n < field->min || *n > field->max) {
            return std::unexpected(src + ": " + rangeMessage(field->key, *n, field->min, field->max));
        }
        c.*field->member = static_cast<uint32_t>(*n);
    }
    if (auto ok = validate(c); !ok) return std::unexpected(src + ": " + ok.error());
    return c;
}

Result<HwConfig> loadHwConfig(const std::string& path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read, and
    // at most kMaxHwConfigBytes of them, so /dev/zero or a FIFO is refused instead of hanging.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return std::unexpected(path + ": cannot open the hardware config file: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return std::unexpected(path +
                               ": the hardware config must be a regular file (this is a FIFO, a device "
                               "or a directory)");
    }
    if (static_cast<uint64_t>(st.st_size) > kMaxHwConfigBytes) {
        ::close(fd);
        return std::unexpected(path + ": the hardware config file is " + std::to_string(st.st_size) +
                               " bytes; the limit is " + std::to_string(kMaxHwConfigBytes) + " bytes");
    }
    std::string text(kMaxHwConfigBytes + 1, '\0');
    size_t have = 0;
    while (have < text.size()) {
        const ssize_t n = ::read(fd, text.data() + have, text.size() - have);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            return std::unexpected(path + ": cannot read the hardware config file: " + std::strerror(err));
        }
        if (n == 0) break;
        have += static_cast<size_t>(n);
    }
    ::close(fd);
    if (have > kMaxHwConfigBytes) {  // the file grew after fstat
        return std::unexpected(path + ": the hardware config file is larger than the limit of " +
                               std::to_string(kMaxHwConfigBytes) + " bytes");
    }
    text.resize(have);
    return parseHwConfig(text, path);
}

std::string toJson(const HwConfig& c) {
    nlohmann::ordered_json j;
    for (const U32Field& f : kFields) j[f.key] = c.*f.member;
    j["dataflow"] = dataflowName(c.dataflow);
    j["fp16_mac"] = c.fp16Mac;
    j["faults"] = {{"hang_at_command", c.faults.hangAtCommand},
                   {"dma_error_at_transfer", c.faults.dmaErrorAtTransfer},
                   {"sram_flip_after_command", c.faults.sramFlipAfterCommand},
                   {"sram_flip_address", c.faults.sramFlipAddress},
                   {"sram_flip_bit", c.faults.sramFlipBit},
                   {"irq_delay_polls", c.faults.irqDelayPolls}};
    return j.dump(2);
}

}  // namespace npu::sim
