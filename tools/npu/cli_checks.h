#pragma once
// Checks of numeric command-line values with readable bounds: CLI11's PositiveNumber and
// floating Range print the largest double in full (309 digits) and let "nan" through.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "device_factory.h"

namespace npu::tools {

// A whole number in [lo, hi] ("-1", "1.5", "1e3" and out-of-range values are refused).
inline CLI::Validator wholeNumberIn(uint64_t lo, uint64_t hi) {
    return CLI::Validator(
        [lo, hi](std::string& text) -> std::string {
            uint64_t v = 0;
            const char* end = text.data() + text.size();
            auto [ptr, ec] = std::from_chars(text.data(), end, v);
            if (ec == std::errc::result_out_of_range ||
                (ec == std::errc() && ptr == end && (v < lo || v > hi))) {
                return fmt::format("{} is out of range: expected a whole number from {} to {}", text, lo, hi);
            }
            if (ec != std::errc() || ptr != end) {
                return fmt::format("'{}' is not a whole number (expected {} to {})", text, lo, hi);
            }
            return {};
        },
        fmt::format("INT in [{} - {}]", lo, hi));
}

// A finite real number in [lo, hi]: "nan", "inf" and negative values outside the range are refused.
inline CLI::Validator finiteNumberIn(double lo, double hi, const char* unit = "") {
    return CLI::Validator(
        [lo, hi, unit](std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end == text.c_str() || *end != '\0') {
                return fmt::format("'{}' is not a number (expected {:g} to {:g}{})", text, lo, hi, unit);
            }
            if (!std::isfinite(v)) {
                return fmt::format("'{}' is not a finite number (expected {:g} to {:g}{})", text, lo, hi,
                                   unit);
            }
            if (v < lo || v > hi) {
                return fmt::format("{} is out of range: expected {:g} to {:g}{}", text, lo, hi, unit);
            }
            return {};
        },
        fmt::format("NUMBER in [{:g} - {:g}]{}", lo, hi, unit));
}

// --call-timeout, --prepare-timeout, --execute-timeout: the NPU's call timeouts per class;
// --watchdog: the idle ping period (docs/reliability.md).
inline void addTimeoutOptions(CLI::App* cmd, DeviceChoice& choice) {
    cmd->add_option("--call-timeout", choice.callTimeoutSeconds,
                    "npu: seconds a control call (hello, capabilities, supported operations) may take "
                    "(default 5)")
        ->check(finiteNumberIn(0.001, 86400, " s"));
    cmd->add_option("--prepare-timeout", choice.prepareTimeoutSeconds,
                    "npu: seconds compiling a model (prepare) may take (default 120)")
        ->check(finiteNumberIn(0.001, 86400, " s"));
    cmd->add_option("--execute-timeout", choice.executeTimeoutSeconds,
                    "npu: seconds one execution without a deadline may take (default 30)")
        ->check(finiteNumberIn(0.001, 86400, " s"));
    cmd->add_option("--watchdog", choice.watchdogSeconds,
                    "npu: seconds between the watchdog's pings of an idle firmware (default 1)")
        ->check(finiteNumberIn(0.01, 3600, " s"));
}

}  // namespace npu::tools
