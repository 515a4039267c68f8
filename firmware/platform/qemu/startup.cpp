// Reset, vector table and exception handlers of the firmware image (Cortex-M55, Armv8.1-M).
// Reset_Handler copies .data from its load image, zeroes .bss, sets up picolibc's TLS block
// (errno, when picolibc is built with TLS), enables the FPU and MVE, runs static constructors and calls
// firmwareMain(). The vector table itself is in vectors.c (C, for its designated initialisers).

#include <picolibc.h>
extern "C" {
#include <picotls.h>  // declares _set_tls without C linkage
}

#include <cstdint>
#include <cstring>

#include "board.h"

extern "C" {
extern uint32_t __stack_top[];
extern uint8_t __data_start[], __data_end[], __data_source[];
extern uint8_t __bss_start[], __bss_end[];
extern uint8_t __tls_base[];
using InitFunction = void (*)();
extern InitFunction __preinit_array_start[], __preinit_array_end[];
extern InitFunction __init_array_start[], __init_array_end[];

[[noreturn]] void Reset_Handler();
void Default_Handler();
void HardFault_Handler();
[[noreturn]] void hardFaultReport(const uint32_t* frame);
}

namespace {
volatile uint32_t& scbReg(uintptr_t address) {
    return *reinterpret_cast<volatile uint32_t*>(address);
}
constexpr uintptr_t kCpacr = 0xE000ED88u;  // coprocessor access: CP10/CP11 = FPU and MVE

void runConstructors() {
    for (InitFunction* f = __preinit_array_start; f != __preinit_array_end; ++f) (*f)();
    for (InitFunction* f = __init_array_start; f != __init_array_end; ++f) (*f)();
}
}  // namespace

extern "C" [[noreturn]] void Reset_Handler() {
    scbReg(kCpacr) = scbReg(kCpacr) | (0xFu << 20);
    __asm volatile("dsb\n isb" ::: "memory");
    std::memcpy(__data_start, __data_source, static_cast<size_t>(__data_end - __data_start));
    std::memset(__bss_start, 0, static_cast<size_t>(__bss_end - __bss_start));
#ifdef PICOLIBC_TLS
    _set_tls(__tls_base);  // picolibc built with thread-local errno
#endif
    runConstructors();
    npu::fw::qemu::firmwareMain();
}

// The exception frame (r0-r3, r12, lr, pc, xPSR) is on the stack the faulting code ran on:
// EXC_RETURN bit 2 (in lr) says the process stack, else the main one.
extern "C" [[noreturn]] __attribute__((used)) void hardFaultReport(const uint32_t* frame) {
    npu::fw::qemu::onHardFault(frame);
}
extern "C" __attribute__((naked)) void HardFault_Handler() {
    __asm volatile(
        "tst lr, #4\n"
        "ite eq\n"
        "mrseq r0, msp\n"
        "mrsne r0, psp\n"
        "b hardFaultReport\n");
}
extern "C" void Default_Handler() {
    npu::fw::qemu::onFault("unexpected exception");
}
