// SysTick as the firmware's time base: an interrupt every millisecond counts whole
// milliseconds; the counter's current value gives the microseconds in between. Monotonic.
#include "board.h"
#include "soc.h"

namespace npu::fw::qemu {

namespace {
constexpr uintptr_t kSysTickCtrl = 0xE000E010u;
constexpr uintptr_t kSysTickLoad = 0xE000E014u;
constexpr uintptr_t kSysTickValue = 0xE000E018u;
constexpr uintptr_t kIcsr = 0xE000ED04u;       // SCB interrupt control and state
constexpr uint32_t kIcsrPendStSet = 1u << 26;  // the SysTick exception is pending
constexpr uint32_t kCtrlEnable = 1u << 0;
constexpr uint32_t kCtrlTickInterrupt = 1u << 1;
constexpr uint32_t kCtrlProcessorClock = 1u << 2;
constexpr uint32_t kTicksPerMs = kCoreClockHz / 1000;
constexpr uint32_t kTicksPerUs = kCoreClockHz / 1'000'000;

volatile uint32_t& reg(uintptr_t address) {
    return *reinterpret_cast<volatile uint32_t*>(address);
}
volatile uint64_t g_milliseconds = 0;
uint64_t g_lastUs = 0;
volatile uint32_t g_backsteps = 0;

}  // namespace

void startSysTick() {
    reg(kSysTickLoad) = kTicksPerMs - 1;
    reg(kSysTickValue) = 0;
    reg(kSysTickCtrl) = kCtrlEnable | kCtrlTickInterrupt | kCtrlProcessorClock;
}

namespace {

// The counter reloads (a new millisecond begins) before the tick interrupt has run: in that
// window g_milliseconds is one behind the counter. Reading the counter on both sides of the
// tick's pending bit tells whether it reloaded after the last tick the handler counted. Without
// that, time stepped back by up to 1 ms there, and an `uptimeUs() - start` wrapped to a huge
// elapsed time: a register access reported as timed out (`npu bench rpc` failed that way).
uint64_t readUptimeUs() {
    for (;;) {
        const uint64_t before = g_milliseconds;
        const uint32_t first = reg(kSysTickValue);
        const bool tickPending = (reg(kIcsr) & kIcsrPendStSet) != 0;
        const uint32_t second = reg(kSysTickValue);
        const uint64_t after = g_milliseconds;
        if (before != after) continue;  // the handler ran in between: read again
        // Counting down: a second value above the first means it reloaded between the reads.
        const bool reloaded = tickPending || second > first;
        const uint64_t ms = before + (reloaded ? 1 : 0);
        const uint32_t value = reloaded ? second : first;
        return ms * 1000 + (kTicksPerMs - 1 - value) / kTicksPerUs;
    }
}

}  // namespace

// Called from the main context only (no interrupt handler reads the time), so the last value
// needs no lock. A reading below it would be a bug of readUptimeUs: counted, and never returned.
uint64_t uptimeUs() {
    const uint64_t now = readUptimeUs();
    if (now < g_lastUs) {
        g_backsteps = g_backsteps + 1;
        return g_lastUs;
    }
    g_lastUs = now;
    return now;
}

uint32_t uptimeBacksteps() {
    return g_backsteps;
}

}  // namespace npu::fw::qemu

extern "C" void SysTick_Handler() {
    npu::fw::qemu::g_milliseconds = npu::fw::qemu::g_milliseconds + 1;
}
