#pragma once
// The firmware image's board layer: entry point, fault report, time base, diagnostics console.

#include <cstdint>

namespace npu::fw::qemu {

// Called by Reset_Handler once memory and the C++ runtime are set up; never returns.
[[noreturn]] void firmwareMain();
// Reports `what` on the diagnostics UART (with the exception number) and halts.
[[noreturn]] void onFault(const char* what);
// The HardFault report: where the core faulted (the stacked pc, lr and xPSR of `frame`, the
// exception frame on the stack the faulting code ran on) and why (CFSR, HFSR, and MMFAR or BFAR
// when CFSR marks them valid); then halts. A bring-up lab reads it on the console UART.
[[noreturn]] void onHardFault(const uint32_t* frame);

// SysTick time base: a 1 kHz tick plus the counter's current value.
void startSysTick();
uint64_t uptimeUs();  // monotonic; main context only
// How often the SysTick reading fell below the previous one (never returned; 0 unless the
// reading logic is wrong): reported by GetCounters as qemu.clock_backsteps.
uint32_t uptimeBacksteps();

// Masks interrupts, sleeps until one is pending unless `ready()` already holds, unmasks (the
// pending interrupt then runs). Checking under the mask closes the race with a wake-up that
// arrives between the check and the WFI.
template <typename Ready>
void sleepUnless(Ready ready) {
    __asm volatile("cpsid i" ::: "memory");
    if (!ready()) __asm volatile("dsb\n wfi" ::: "memory");
    __asm volatile("cpsie i\n isb" ::: "memory");
}

}  // namespace npu::fw::qemu
