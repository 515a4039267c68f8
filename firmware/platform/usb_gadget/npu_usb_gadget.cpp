// npu-usb-gadget: the NPU as a USB device (docs/usb.md), the accelerator card's side. It writes
// the vendor interface's descriptors to a FunctionFS mount, then serves the firmware core with
// the simulated NPU behind it, one host session at a time: a session starts when the host sends
// the OPEN_SESSION vendor request and ends when the host opens another, the interface is disabled
// (unplug, unbind) or the program is stopped. Each session starts from a reset firmware.
//
//   npu-usb-gadget --ffs DIR [--hw-config FILE]
//
// The gadget itself (configfs, strings, binding to a UDC) is set up around it; see
// scripts/usb-vm.sh for a complete example.
#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "functionfs.h"
#include "gadget_session.h"
#include "npu.pb.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hwsim/config.h"
#include "npu/protocol/frame.h"
#include "npu/protocol/usb_transport.h"
#include "window_service.h"

namespace {

using namespace npu;

std::atomic<bool> gStop{false};
void onSignal(int) {
    gStop.store(true);
}

int usage(const char* message) {
    std::fprintf(stderr,
                 "npu-usb-gadget: %s\n"
                 "usage: npu-usb-gadget --ffs DIR [--hw-config FILE]\n"
                 "  --ffs DIR          a mounted FunctionFS instance (mount -t functionfs NAME DIR)\n"
                 "  --hw-config FILE   the simulated NPU's hardware config JSON (docs/hw-config.md)\n",
                 message);
    return 2;
}

// Announces a session on the event endpoint. Fire and forget: a host that is not listening
// must not hold up the session (the transfer is cancelled before the next one).
void announceSession(fw::usb::AioEndpoint& event, std::vector<uint8_t>& frame, uint64_t session) {
    event.cancel();
    proto::DeviceEvent e;
    e.set_kind(proto::kNpuUsbEventSessionOpened);
    e.set_session(session);
    e.set_message("session " + std::to_string(session) + " opened");
    const std::string payload = e.SerializeAsString();
    frame.assign(proto::kFrameHeaderSize + payload.size(), 0);
    std::memcpy(frame.data() + proto::kFrameHeaderSize, payload.data(), payload.size());
    proto::FrameHeader h;
    h.type = proto::METHOD_DEVICE_EVENT;
    h.length = static_cast<uint32_t>(payload.size());
    proto::encodeFrameHeader(h, frame.data() + proto::kFrameHeaderSize, frame.data());
    if (auto r = event.submit(frame.data(), frame.size(), true); !r) {
        std::fprintf(stderr, "npu-usb-gadget: event endpoint: %s\n", r.error().message.c_str());
    }
}

// Waits for an OPEN_SESSION not yet answered; 0 when stopping.
uint64_t waitForOpenRequest(fw::usb::GadgetState& state) {
    std::unique_lock lock(state.mutex);
    while (!gStop.load()) {
        if (state.openRequests > state.openedRequests) return state.openRequests;
        state.changed.wait_for(lock, std::chrono::milliseconds(100));
    }
    return 0;
}

int serveSessions(fw::host::FirmwareHost& firmware, fw::usb::FunctionFs& ffs,
                  fw::usb::WindowService& window) {
    fw::usb::GadgetState& state = ffs.state();
    std::vector<uint8_t> eventFrame;
    while (!gStop.load()) {
        const uint64_t request = waitForOpenRequest(state);
        if (request == 0) break;
        window.reset();
        uint64_t number;
        bool echo;
        {
            std::lock_guard lock(state.mutex);
            number = ++state.sessions;
            echo = state.echoRequested;
        }
        fw::usb::GadgetSession session(ffs, window, request, number);
        {
            std::lock_guard lock(state.mutex);
            state.openedRequests = request;
            state.changed.notify_all();
        }
        std::fprintf(stderr, "npu-usb-gadget: session %llu opened%s\n",
                     static_cast<unsigned long long>(number), echo ? " (raw echo)" : "");
        if (echo) {
            session.echo();
            continue;
        }
        announceSession(ffs.eventIn(), eventFrame, number);
        firmware.serve(session, &gStop);
        std::fprintf(
            stderr,
            "npu-usb-gadget: session %llu ended (host window so far: %llu bytes written, %llu read)\n",
            static_cast<unsigned long long>(number), static_cast<unsigned long long>(window.bytesWritten()),
            static_cast<unsigned long long>(window.bytesRead()));
    }
    ffs.eventIn().cancel();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string ffsDir;
    fw::host::FirmwareHostConfig config;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--ffs" && i + 1 < argc) {
            ffsDir = argv[++i];
        } else if (arg == "--hw-config" && i + 1 < argc) {
            auto hw = sim::loadHwConfig(argv[++i]);
            if (!hw) return usage(("--hw-config: " + hw.error()).c_str());
            config.hw = *hw;
        } else if (arg == "--help" || arg == "-h") {
            usage("the NPU's USB device side");
            return 0;
        } else {
            return usage(("unknown argument '" + arg + "'").c_str());
        }
    }
    if (ffsDir.empty()) return usage("--ffs DIR is required");
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);

    auto firmware = fw::host::FirmwareHost::create(config);
    if (!firmware) {
        std::fprintf(stderr, "npu-usb-gadget: cannot start the firmware: %s\n",
                     firmware.error().message.c_str());
        return 1;
    }
    void* dram =
        mmap(nullptr, config.dramBytes, PROT_READ | PROT_WRITE, MAP_SHARED, (*firmware)->dramFd(), 0);
    if (dram == MAP_FAILED) {
        std::fprintf(stderr, "npu-usb-gadget: cannot map device DRAM: %s\n", std::strerror(errno));
        return 1;
    }
    auto ffs = fw::usb::FunctionFs::open(ffsDir);
    if (!ffs) {
        std::fprintf(stderr, "npu-usb-gadget: %s\n", ffs.error().message.c_str());
        return 1;
    }
    fw::usb::WindowService window(static_cast<uint8_t*>(dram), config.firmwareDramBytes,
                                  config.dramBytes - config.firmwareDramBytes, config.maxPayloadBytes);
    std::fprintf(stderr, "npu-usb-gadget: descriptors written to %s; waiting for a host\n", ffsDir.c_str());
    const int status = serveSessions(**firmware, **ffs, window);
    ffs->reset();
    munmap(dram, config.dramBytes);
    return status;
}
