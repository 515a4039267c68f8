// The firmware image's main: brings up the UARTs, SysTick and the register mailbox, places the
// portable Runtime and RpcServer in DDR arenas, then serves RPC frames from UART0 forever,
// sleeping (WFI) whenever no byte is waiting.

#include <cinttypes>
#include <cstdio>
#include <new>

#include "board.h"
#include "cmsdk_uart.h"
#include "ddr_ring_reader.h"
#include "mailbox_platform.h"
#include "npu/fw/arena.h"
#include "npu/fw/rpc_server.h"
#include "npu/fw/runtime.h"
#include "soc.h"

extern "C" {
extern uint8_t __build_id_start[], __build_id_end[];
extern uint8_t __flash_used[], __ram_used[];
void Uart0Rx_Handler();
void Uart1Rx_Handler();
}

namespace npu::fw::qemu {

namespace {
constexpr uint32_t kMailboxAckTimeoutUs = 2'000'000;   // one register access, bridge included
constexpr uint64_t kRuntimeArenaBytes = 32ull << 20;   // as on the host platform
constexpr uint64_t kServerScratchBytes = 64ull << 20;  // per-request temporaries (model decoding)

// A UART receive ring between two guard words that nothing writes: a receive path that wrote
// past its ring would show in GetCounters as qemu.uart_ring_guard_errors.
constexpr uint32_t kGuard = 0x6A09E667u;
struct GuardedRing {
    uint32_t front = kGuard;
    alignas(8) uint8_t bytes[256] = {};
    uint32_t back = kGuard;
    uint32_t damagedGuards() const { return (front != kGuard ? 1u : 0u) + (back != kGuard ? 1u : 0u); }
};
GuardedRing g_uart0Ring;  // ring doorbells only: requests come through DDR
GuardedRing g_uart1Ring;  // mailbox acks
CmsdkUart g_uart0(kUart0Base, g_uart0Ring.bytes, sizeof(g_uart0Ring.bytes));
CmsdkUart g_uart1(kUart1Base, g_uart1Ring.bytes, sizeof(g_uart1Ring.bytes));
CmsdkUart g_uart2(kUart2Base, nullptr, 1);
char g_identity[160];

volatile uint32_t& reg(uintptr_t address) {
    return *reinterpret_cast<volatile uint32_t*>(address);
}

void enableIrq(uint32_t irq) {
    reg(0xE000E100u + 4 * (irq / 32)) = 1u << (irq % 32);
}

void diag(const char* text) {
    g_uart2.writeString(text);
}

// The GNU build id note (-Wl,--build-id): namesz, descsz, type, "GNU\0", then the id.
void formatBuildId(char* out, size_t capacity) {
    out[0] = '\0';
    const size_t noteBytes = static_cast<size_t>(__build_id_end - __build_id_start);
    if (noteBytes < 16) return;
    const uint32_t* words = reinterpret_cast<const uint32_t*>(__build_id_start);
    const uint32_t idBytes = words[1] < 8 ? words[1] : 8;
    const uint8_t* id = __build_id_start + 12 + ((words[0] + 3) & ~3u);
    for (uint32_t i = 0; i < idBytes && 2 * i + 2 < capacity; ++i)
        std::snprintf(out + 2 * i, 3, "%02x", id[i]);
}

// The firmware version the Hello reply carries: what it is, where it runs, how big it is.
const char* identity() {
    char buildId[20];
    formatBuildId(buildId, sizeof(buildId));
    std::snprintf(g_identity, sizeof(g_identity),
                  "npu-fw 0.1.0 on Cortex-M55 (qemu mps3-an547), build %s, image %" PRIuPTR
                  " B flash + %" PRIuPTR " B RAM",
                  buildId[0] != '\0' ? buildId : "none", reinterpret_cast<uintptr_t>(__flash_used),
                  reinterpret_cast<uintptr_t>(__ram_used));
    return g_identity;
}

class UartFrameSink final : public FrameSink {
public:
    explicit UartFrameSink(CmsdkUart& uart) : uart_(uart) {}
    // The device DRAM needs no fd here: the host maps the DDR file itself (qemu transport).
    bool writeFrame(const uint8_t* bytes, size_t length, uint32_t, uint16_t) override {
        uart_.write(bytes, length);
        return true;
    }

private:
    CmsdkUart& uart_;
};

// GetCounters entries of this platform: proof that the UART interrupts fire, the receive rings'
// back-pressure and integrity, the bridge's round trips, the clock, and the firmware's DDR memory.
class PlatformCounters final : public CounterSource {
public:
    PlatformCounters(const MailboxPlatform& platform, const DdrRingReader& ring, const Arena& ddr)
        : platform_(platform), ring_(ring), ddr_(ddr) {}
    void counters(npu_proto_CountersReply* reply) override {
        appendCounter(reply, "qemu.uart0_rx_interrupts", g_uart0.rxInterrupts());
        appendCounter(reply, "qemu.uart1_rx_interrupts", g_uart1.rxInterrupts());
        appendCounter(reply, "qemu.uart_overruns", g_uart0.overruns() + g_uart1.overruns());
        appendCounter(reply, "qemu.uart0_rx_bytes", g_uart0.rxBytes());
        appendCounter(reply, "qemu.uart_rx_ring_full", g_uart0.rxPauses() + g_uart1.rxPauses());
        appendCounter(reply, "qemu.uart_ring_guard_errors",
                      g_uart0Ring.damagedGuards() + g_uart1Ring.damagedGuards());
        appendCounter(reply, "qemu.mailbox_round_trips", platform_.roundTrips());
        appendCounter(reply, "qemu.mailbox_failures", platform_.failures());
        appendCounter(reply, "qemu.ring_bytes", ring_.bytesConsumed());
        appendCounter(reply, "qemu.ring_resyncs", ring_.resyncs());
        appendCounter(reply, "qemu.ddr_arena_bytes", ddr_.capacity());
        appendCounter(reply, "qemu.ddr_arena_used_bytes", ddr_.peak());
        appendCounter(reply, "qemu.clock_backsteps", uptimeBacksteps());
    }

private:
    const MailboxPlatform& platform_;
    const DdrRingReader& ring_;
    const Arena& ddr_;
};

// The firmware's log (RpcServer: a line per request and per error) on the console UART, when the
// host asked for it in the ring header (NPU_VLOG=firmware; the qemu transport forwards the lines).
class ConsoleLog final : public LogSink {
public:
    explicit ConsoleLog(const DdrRingReader& ring) : ring_(ring) {}
    bool enabled() override { return (ring_.flags() & proto::kDdrRingFlagFirmwareLog) != 0; }
    void write(const char* line) override {
        g_uart2.writeString(line);
        g_uart2.writeString("\r\n");
    }

private:
    const DdrRingReader& ring_;
};

// InjectFaults on the image: crash_after_ms only, as a real fault of the control core (an
// undefined instruction, escalated to HardFault, whose report the console shows). The NPU's
// faults (hang, DMA error, SRAM flip) and the wedge are the firmware host's simulated NPU's.
class CoreFaults final : public FaultInjector {
public:
    FwStatus injectFaults(const npu_proto_InjectFaultsRequest& r) override {
        if (r.hang_at_command != 0 || r.dma_error_at_transfer != 0 || r.sram_flip_after_command != 0 ||
            r.wedge != 0) {
            return FwStatus::make(Code::kInvalidArgument,
                                  "InjectFaults: the QEMU image injects crash_after_ms only (a fault of its "
                                  "control core); NPU faults and wedges are the firmware host's");
        }
        if (r.crash_after_ms != 0) crashAtUs_ = uptimeUs() + uint64_t{r.crash_after_ms} * 1000;
        return FwStatus::okStatus();
    }
    void crashIfDue() {
        if (crashAtUs_ != 0 && uptimeUs() >= crashAtUs_) __asm volatile("udf #0");
    }

private:
    uint64_t crashAtUs_ = 0;
};

template <typename T, typename... Args>
T* construct(Arena& arena, Args&&... args) {
    void* p = arena.allocate(sizeof(T), alignof(T));
    return p == nullptr ? nullptr : new (p) T(static_cast<Args&&>(args)...);
}

// An arena of `bytes` carved out of the DDR arena; halts if DDR cannot hold it (a build error:
// the sizes are constants of this image).
Arena& carveArena(Arena& ddr, size_t bytes) {
    void* memory = ddr.allocate(bytes, 64);
    Arena* arena = memory == nullptr ? nullptr : construct<Arena>(ddr, memory, bytes);
    if (arena == nullptr) onFault("the DDR arena is too small for the firmware's arenas");
    return *arena;
}

// Requests arrive through the DDR ring, announced by doorbell bytes on UART0 (whose value
// does not matter: the ring's head says how much there is).
[[noreturn]] void serve(RpcServer& server, DdrRingReader& ring, CoreFaults& faults) {
    for (;;) {
        faults.crashIfDue();
        uint8_t bells[64];
        while (g_uart0.read(bells, sizeof(bells)) > 0) {
        }
        const size_t n =
            ring.drain([&server](const uint8_t* bytes, size_t length) { server.onBytes(bytes, length); });
        bool worked = n > 0;
        while (server.poll()) worked = true;
        if (!worked) sleepUnless([&ring] { return g_uart0.readable() || ring.pending(); });
    }
}
}  // namespace

[[noreturn]] void firmwareMain() {
    g_uart2.init(false);
    g_uart0.init(true);
    g_uart1.init(true);
    enableIrq(kUart0RxIrq);
    enableIrq(kUart1RxIrq);
    startSysTick();
    __asm volatile("cpsie i" ::: "memory");
    diag(identity());
    diag("\r\n");

    uint8_t* ddr = reinterpret_cast<uint8_t*>(kDdrBase);
    auto* mailbox = reinterpret_cast<isa::RegMailbox*>(ddr + kMailboxOffset);
    Arena ddrArena(ddr + kArenaOffset, kArenaBytes);
    MailboxPlatform platform(g_uart1, mailbox, ddr, kDeviceDramBytes, kMailboxAckTimeoutUs);

    Arena& runtimeArena = carveArena(ddrArena, kRuntimeArenaBytes);
    RuntimeConfig rc;
    rc.firmwareDramBytes = kFirmwareDramBytes;
    auto* runtime = construct<Runtime>(ddrArena, platform, runtimeArena, rc);
    if (runtime == nullptr) onFault("the DDR arena cannot hold the runtime");
    if (FwStatus s = runtime->init(); !s.ok()) {
        diag("runtime init failed: ");
        diag(s.message);
        diag("\r\n");
    }

    DdrRingReader ring(reinterpret_cast<proto::DdrRingHeader*>(ddr + proto::kQemuRingHeaderOffset),
                       ddr + proto::kQemuRingDataOffset);
    static PlatformCounters counters(platform, ring, ddrArena);
    static ConsoleLog log(ring);
    static CoreFaults faults;
    RpcServerConfig sc;
    sc.platformCounters = &counters;
    sc.faultInjector = &faults;
    sc.log = &log;
    sc.firmwareVersion = identity();
    const HardwareInfo hw = runtime->hardwareInfo();
    sc.hwId = hw.id;
    sc.hwVersion = hw.version;
    sc.deviceMemoryBytes = kDeviceDramBytes;
    sc.hostWindowAddr = kFirmwareDramBytes;
    sc.hostWindowBytes = kDeviceDramBytes - kFirmwareDramBytes;
    const size_t serverBytes = RpcServer::memoryNeeded(sc) + kServerScratchBytes;
    Arena& serverArena = carveArena(ddrArena, serverBytes);
    static UartFrameSink sink(g_uart0);
    auto* server = construct<RpcServer>(ddrArena, *runtime, platform, serverArena, sink, sc);
    if (server == nullptr || !server->ok()) onFault("the DDR arena cannot hold the RPC server");
    if (!ring.valid()) diag("no request ring in DDR (the host sets it up before boot); waiting for it\r\n");
    diag("serving RPC: requests from the DDR ring, replies on UART0\r\n");
    serve(*server, ring, faults);
}

[[noreturn]] void onHardFault(const uint32_t* frame) {
    auto scb = [](uintptr_t address) { return *reinterpret_cast<volatile uint32_t*>(address); };
    const uint32_t cfsr = scb(kScbCfsr), hfsr = scb(kScbHfsr);
    char line[160];
    std::snprintf(line, sizeof(line),
                  "\r\nfirmware halted: hard fault at pc 0x%08" PRIx32 " (lr 0x%08" PRIx32
                  ", xpsr 0x%08" PRIx32 "); CFSR 0x%08" PRIx32 " HFSR 0x%08" PRIx32,
                  frame[6], frame[5], frame[7], cfsr, hfsr);
    diag(line);
    if ((cfsr & kCfsrMmarValid) != 0) {
        std::snprintf(line, sizeof(line), " MMFAR 0x%08" PRIx32, scb(kScbMmfar));
        diag(line);
    }
    if ((cfsr & kCfsrBfarValid) != 0) {
        std::snprintf(line, sizeof(line), " BFAR 0x%08" PRIx32, scb(kScbBfar));
        diag(line);
    }
    diag("\r\n");
    for (;;) __asm volatile("wfi");
}

[[noreturn]] void onFault(const char* what) {
    uint32_t ipsr = 0;
    __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
    char line[96];
    std::snprintf(line, sizeof(line), "\r\nfirmware halted: %s (exception %" PRIu32 ")\r\n", what, ipsr);
    diag(line);
    for (;;) __asm volatile("wfi");
}

}  // namespace npu::fw::qemu

extern "C" void Uart0Rx_Handler() {
    npu::fw::qemu::g_uart0.onRxInterrupt();
}
extern "C" void Uart1Rx_Handler() {
    npu::fw::qemu::g_uart1.onRxInterrupt();
}
