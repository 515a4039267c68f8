// A vendor's own program built against the installed npu-shim and npu-hal (pkg-config), the way
// scripts/check-install.sh compiles it: it starts the installed npu-fwd, runs the handshake and
// prints what the firmware reports. Exit 0 when the NPU answered, 1 otherwise.
//
//   client NPU_FWD_PATH SOCKET_PATH
#include <cstdio>

#include "npu/hal/device.h"
#include "npu/shim/npu_device.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: client NPU_FWD_PATH SOCKET_PATH\n");
        return 2;
    }
    npu::shim::DaemonOptions options;
    options.daemonPath = argv[1];
    options.socketPath = argv[2];
    auto device = npu::shim::connectNpuDaemon(options);
    if (!device) {
        std::fprintf(stderr, "client: %s\n", device.error().message.c_str());
        return 1;
    }
    auto info = npu::shim::queryNpuInfo(**device);
    if (!info) {
        std::fprintf(stderr, "client: %s\n", info.error().message.c_str());
        return 1;
    }
    std::printf("client: firmware %s, protocol %u.%u, NPU %ux%u\n", info->firmwareVersion.c_str(),
                info->protocolMajor, info->protocolMinor, info->arrayRows, info->arrayCols);
    return 0;
}
