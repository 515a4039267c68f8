#pragma once
// The qemu transport: the firmware image runs on an emulated Cortex-M55 (QEMU's mps3-an547)
// and a host bridge (npu-qemu-bridge, hwsim) serves it the simulated NPU's registers. This
// transport starts both, owns them (each in its own process group, killed with the transport
// or when this process dies) and carries the RPC byte stream:
//   host -> firmware: through a byte ring in the emulated DDR, one doorbell byte on UART0
//                     per write (npu/protocol/ddr_ring.h);
//   firmware -> host: UART0 itself (a chardev socket).
// The emulated DDR is a memfd (QEMU's memory-backend-file); the transport attaches it to the
// first bytes it reads (the Hello reply's), as the firmware on the host platforms attaches its
// device-DRAM memfd to that reply, so the shim maps its host window in the same way.

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "npu/protocol/transport.h"

namespace npu::proto {

struct QemuOptions {
    std::string qemuBinary;  // empty: $NPU_QEMU, else qemu-system-arm on PATH
    // Empty: $NPU_QEMU_IMAGE, else the image relative to the running program (an installed
    // bin/npu finds ../share/npu-stack/firmware/npu-fw-m55.elf, a program in the build tree's
    // tools/ or tests/ ../firmware/npu-fw-m55.elf), else where `meson install` puts it.
    std::string imagePath;
    // Empty: $NPU_QEMU_BRIDGE, else npu-qemu-bridge beside the running program (installed), or
    // the build tree's ../hwsim/npu-qemu-bridge, else where `meson install` puts it.
    std::string bridgePath;
    std::string hwConfigPath;  // the simulated NPU's config (the bridge's --hw-config); empty = defaults
    std::chrono::milliseconds startTimeout{10'000};  // QEMU and the bridge connect within this
    std::chrono::milliseconds writeTimeout{10'000};  // a full request ring that stays full this long fails
    // Fault injection for tests: sees every chunk read from UART0 (the firmware's replies, in
    // order) before the RPC layer does and may change its bytes: a corrupt frame from the guest.
    std::function<void(std::span<uint8_t>)> replyTap;
};

// What startQemu would run (resolved paths), or why it cannot: the check behind a test's skip.
struct QemuPaths {
    std::string qemuBinary;
    std::string imagePath;
    std::string bridgePath;
};
Result<QemuPaths> resolveQemuPaths(const QemuOptions& options);

// Starts the bridge and QEMU and connects to the firmware's UART0. The firmware then boots;
// the first call (Hello) waits for it like any call waits for its reply. Call it from a thread
// that outlives the transport: the children get SIGKILL when the thread that started them
// exits (PR_SET_PDEATHSIG), so that they never outlive a crashed host process.
Result<std::unique_ptr<Transport>> startQemu(const QemuOptions& options);

// The process ids of the emulator and the bridge behind a transport startQemu returned, for
// tests that kill one mid-call; {-1, -1} for any other transport.
struct QemuProcesses {
    int qemuPid = -1;
    int bridgePid = -1;
};
QemuProcesses qemuProcesses(const Transport& transport);

// The last 2000 bytes of the firmware's console (UART2: boot lines, a fault report) behind a
// transport startQemu returned, on one line; empty for any other transport.
std::string qemuConsole(const Transport& transport);

// Sends `count` bare doorbell bytes on UART0 (the ring gets no request bytes): what tests flood
// the firmware's UART receive ring with. kInvalidArgument for any other transport.
Result<void> qemuSendDoorbells(Transport& transport, size_t count);

}  // namespace npu::proto
