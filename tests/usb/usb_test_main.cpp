// main of the USB test binary: Catch2, plus the busy probe (a second host process that tries to
// open the device the first one holds). Outside the test VM (no NPU_USB_DEVICE) it exits 77,
// meson's "skipped", with the reason.
#define CATCH_CONFIG_RUNNER
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "npu/protocol/usb_transport.h"
#include "usb_test_env.h"

std::string usbtest::selfPath() {
    char path[4096];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string();
}

std::string usbtest::runCapture(const std::vector<std::string>& argv) {
    std::string command = "timeout -k 2 60";
    for (const std::string& a : argv) command += " '" + a + "'";
    std::string out;
    if (FILE* p = popen(command.c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
    }
    return out;
}

namespace {

int busyProbe() {
    auto id = npu::proto::parseUsbDeviceId(usbtest::env("NPU_USB_DEVICE"));
    if (!id) return 5;
    auto t = npu::proto::openUsb(*id);
    if (t) {
        std::fprintf(stderr, "busy probe: opened a device another process holds\n");
        return 4;
    }
    std::fprintf(stderr, "busy probe: %s\n", t.error().message.c_str());
    const bool busy = t.error().kind == npu::proto::Error::Kind::kResourceExhausted &&
                      t.error().message.find("busy") != std::string::npos;
    return busy ? usbtest::kBusyProbeSawBusy : 4;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && std::string(argv[1]) == "--busy-probe") return busyProbe();
    if (usbtest::env("NPU_USB_DEVICE").empty()) {
        std::printf(
            "skipped: NPU_USB_DEVICE is not set; these tests need the USB test VM "
            "(scripts/usb-vm.sh test %s)\n",
            argv[0]);
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
