/* NVIC lines of the MPS3 AN547 UARTs' receive interrupts, as QEMU 7.2's mps3-an547 wires them
 * (UARTn RX = 33 + 2n, TX = RX + 1). A C header: vectors.c and the C++ side share it. The boot
 * test checks them: the firmware receives only through these interrupts. */
#pragma once
#define NPU_AN547_UART0_RX_IRQ 33
#define NPU_AN547_UART1_RX_IRQ 35
