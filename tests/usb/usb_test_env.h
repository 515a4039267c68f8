#pragma once
// Shared by the USB test binary's main and its test cases.

#include <cstdlib>
#include <string>
#include <vector>

namespace usbtest {

// Exit status of `test_usb --busy-probe` when openUsb failed with the clear "busy" error.
inline constexpr int kBusyProbeSawBusy = 3;

inline std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
}

std::string selfPath();
// Runs argv (bounded: killed after 60 s) and returns its standard output.
std::string runCapture(const std::vector<std::string>& argv);

}  // namespace usbtest
