/* The vector table of the firmware image, placed at 0x0 (ITCM) by an547.ld: the core reads its
 * initial stack pointer and reset vector there. Every external interrupt goes to
 * Default_Handler (which reports it on the diagnostics UART) except those the firmware uses;
 * their numbers are in irq_numbers.h. */
#include <stdint.h>

#include "irq_numbers.h"

typedef void (*Vector)(void);
extern uint32_t __stack_top[];

void Reset_Handler(void);
void Default_Handler(void);
void HardFault_Handler(void);
void SysTick_Handler(void);
void Uart0Rx_Handler(void);
void Uart1Rx_Handler(void);

enum { kSystemVectors = 16, kIrqVectors = 96 };

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
__attribute__((section(".vectors"), used)) const Vector g_vectorTable[kSystemVectors + kIrqVectors] = {
    [0 ... kSystemVectors + kIrqVectors - 1] = Default_Handler,
    [0] = (Vector)__stack_top,
    [1] = Reset_Handler,
    [3] = HardFault_Handler,
    [8] = 0,
    [9] = 0,
    [10] = 0,
    [13] = 0,
    [15] = SysTick_Handler,
    [kSystemVectors + NPU_AN547_UART0_RX_IRQ] = Uart0Rx_Handler,
    [kSystemVectors + NPU_AN547_UART1_RX_IRQ] = Uart1Rx_Handler,
};
#pragma GCC diagnostic pop
