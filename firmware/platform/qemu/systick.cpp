// SysTick as the firmware's time base: an interrupt every millisecond counts whole
// milliseconds; the counter's current value gives the microseconds in between.
#include "board.h"
#include "soc.h"

namespace npu::fw::qemu {

namespace {
constexpr uintptr_t kSysTickCtrl = 0xE000E010u;
constexpr uintptr_t kSysTickLoad = 0xE000E014u;
constexpr uintptr_t kSysTickValue = 0xE000E018u;
constexpr uint32_t kCtrlEnable = 1u << 0;
constexpr uint32_t kCtrlTickInterrupt = 1u << 1;
constexpr uint32_t kCtrlProcessorClock = 1u << 2;
constexpr uint32_t kTicksPerMs = kCoreClockHz / 1000;
constexpr uint32_t kTicksPerUs = kCoreClockHz / 1'000'000;

volatile uint32_t& reg(uintptr_t address) {
    return *reinterpret_cast<volatile uint32_t*>(address);
}
volatile uint64_t g_milliseconds = 0;
}  // namespace

void startSysTick() {
    reg(kSysTickLoad) = kTicksPerMs - 1;
    reg(kSysTickValue) = 0;
    reg(kSysTickCtrl) = kCtrlEnable | kCtrlTickInterrupt | kCtrlProcessorClock;
}

uint64_t uptimeUs() {
    // Read the millisecond count on both sides of the counter: equal means no tick in between.
    for (;;) {
        const uint64_t before = g_milliseconds;
        const uint32_t value = reg(kSysTickValue);
        const uint64_t after = g_milliseconds;
        if (before == after) return before * 1000 + (kTicksPerMs - 1 - value) / kTicksPerUs;
    }
}

}  // namespace npu::fw::qemu

extern "C" void SysTick_Handler() {
    npu::fw::qemu::g_milliseconds = npu::fw::qemu::g_milliseconds + 1;
}
