#pragma once
// The parts of the MPS3 AN547 (Corstone-300, Cortex-M55) that the firmware image touches, as
// QEMU's mps3-an547 models them. docs/porting.md explains each choice.

#include <cstdint>

#include "hwsim/isa/reg_mailbox.h"
#include "irq_numbers.h"
#include "npu/protocol/ddr_ring.h"

namespace npu::fw::qemu {

// ---- DDR (0x60000000, 2 GiB, shared with the host as a memory-backend-file) ------------------
// Offsets from the start of DDR, which is also the start of the file the host maps.
inline constexpr uintptr_t kDdrBase = 0x60000000u;
inline constexpr uint64_t kDeviceDramBytes = isa::kQemuDeviceDramBytes;  // NPU device DRAM at DDR offset 0
inline constexpr uint64_t kFirmwareDramBytes = 128ull << 20;  // its firmware part; the rest: host window
inline constexpr uint64_t kMailboxOffset = isa::kQemuMailboxOffset;
// The firmware's arenas, after the mailbox and the host-to-firmware request ring (which the
// host writes all the time: an arena over it had its first bytes, the runtime's own state,
// overwritten by requests once ~1 MiB of them had passed).
inline constexpr uint32_t kArenaOffset = 264u << 20;
static_assert(kMailboxOffset + sizeof(isa::RegMailbox) <= proto::kQemuRingHeaderOffset);
static_assert(proto::kQemuRingHeaderOffset + sizeof(proto::DdrRingHeader) <= proto::kQemuRingDataOffset);
static_assert(proto::kQemuRingDataOffset + proto::kQemuRingBytes <= kArenaOffset);
inline constexpr uint32_t kArenaBytes = 248u << 20;  // up to 512 MiB

// ---- CMSDK APB UARTs (secure aliases) ---------------------------------------------------------
inline constexpr uintptr_t kUart0Base = 0x59303000u;  // RPC: replies out, ring doorbells in
inline constexpr uintptr_t kUart1Base = 0x59304000u;  // register-mailbox doorbell
inline constexpr uintptr_t kUart2Base = 0x59305000u;  // diagnostics (boot banner, faults)
inline constexpr uint32_t kUart0RxIrq = NPU_AN547_UART0_RX_IRQ;
inline constexpr uint32_t kUart1RxIrq = NPU_AN547_UART1_RX_IRQ;

// The core clock (QEMU's mps3-an547 SYSCLK), which SysTick counts with CLKSOURCE = processor.
inline constexpr uint32_t kCoreClockHz = 32'000'000;

// System control block fault status (Armv8-M): what the HardFault report prints.
inline constexpr uintptr_t kScbCfsr = 0xE000ED28u;   // configurable fault status (MMFSR, BFSR, UFSR)
inline constexpr uintptr_t kScbHfsr = 0xE000ED2Cu;   // hard fault status (FORCED: escalated)
inline constexpr uintptr_t kScbMmfar = 0xE000ED34u;  // memory-manage fault address
inline constexpr uintptr_t kScbBfar = 0xE000ED38u;   // bus fault address
inline constexpr uint32_t kCfsrMmarValid = 1u << 7;
inline constexpr uint32_t kCfsrBfarValid = 1u << 15;

}  // namespace npu::fw::qemu
