#pragma once
// NPU register map: the contract between the silicon (hwsim) and the firmware. Headers only,
// constexpr only, freestanding (usable by arm-none-eabi-g++ without a hosted library).
// All registers are 32 bits wide, little endian, at byte offsets from the NPU's MMIO base.
// docs/registers.md is the readable form of this file; keep both in step.

#include <cstdint>

namespace npu::isa {

enum class Access : uint8_t { kRO, kRW, kWO, kW1C };

struct RegisterInfo {
    uint32_t offset;
    const char* name;
    Access access;
    uint32_t resetValue;
};

// ---- Identification ---------------------------------------------------------------------------
inline constexpr uint32_t kRegId = 0x000;       // RO: kNpuId
inline constexpr uint32_t kRegVersion = 0x004;  // RO: major[31:16] minor[15:8] patch[7:0]
inline constexpr uint32_t kNpuId = 0x4E505531;  // "NPU1"
inline constexpr uint32_t kVersionMajor = 1;
// 1.1: DWCONV, VEC_OP, POOL, DMA_ERROR, more PMU counters; 1.2: SOFTMAX, RESIZE, MEAN, VEC_OP PRELU;
// 1.3: CONVERT
inline constexpr uint32_t kVersionMinor = 3;
inline constexpr uint32_t kVersionPatch = 0;
inline constexpr uint32_t kVersion = (kVersionMajor << 16) | (kVersionMinor << 8) | kVersionPatch;

// ---- Hardware configuration (RO, reflect the instance's HwConfig) -------------------------------
inline constexpr uint32_t kRegHwConfig0 = 0x008;  // ARRAY_ROWS[15:0] ARRAY_COLS[31:16]
inline constexpr uint32_t kRegHwConfig1 =
    0x00C;  // VECTOR_LANES[15:0] DATAFLOW[17:16] FP16_MAC[18] CMD_QUEUE_DEPTH[31:24]
inline constexpr uint32_t kRegHwConfig2 = 0x010;  // SCRATCHPAD_KIB
inline constexpr uint32_t kRegHwConfig3 = 0x014;  // ACCUMULATOR_KIB
inline constexpr uint32_t kRegHwConfig4 = 0x018;  // CLOCK_MHZ
inline constexpr uint32_t kRegHwConfig5 = 0x01C;  // DRAM_LATENCY_CYCLES[15:0] DMA_BYTES_PER_CYCLE[31:16]

inline constexpr uint32_t kHwConfig0RowsShift = 0, kHwConfig0ColsShift = 16;
inline constexpr uint32_t kHwConfig1LanesShift = 0, kHwConfig1DataflowShift = 16,
                          kHwConfig1QueueDepthShift = 24;
inline constexpr uint32_t kHwConfig1Fp16Mac = 1u << 18;  // the array has fp16 MACs (config fp16_mac)
inline constexpr uint32_t kHwConfig5LatencyShift = 0, kHwConfig5DmaBytesShift = 16;

enum class Dataflow : uint32_t { kOutputStationary = 0, kWeightStationary = 1, kInputStationary = 2 };

// ---- Control and status -----------------------------------------------------------------------
inline constexpr uint32_t kRegCtrl = 0x020;          // RW
inline constexpr uint32_t kCtrlEnable = 1u << 0;     // command processor accepts doorbells
inline constexpr uint32_t kCtrlSoftReset = 1u << 1;  // self-clearing: resets queue, IRQs, error, PMU
inline constexpr uint32_t kCtrlIrqEnable = 1u << 2;  // global IRQ line enable (IRQ_MASK still applies)

inline constexpr uint32_t kRegStatus = 0x024;  // RO
inline constexpr uint32_t kStatusIdle = 1u << 0;
inline constexpr uint32_t kStatusBusy = 1u << 1;
inline constexpr uint32_t kStatusError = 1u << 2;   // stopped on a fault; ERROR_* hold the cause
inline constexpr uint32_t kStatusHalted = 1u << 3;  // stopped on STOP or fault; doorbell resumes (STOP only)

// ---- Command queue (a ring of 64-byte commands in DRAM) ------------------------------------------
inline constexpr uint32_t kRegCmdqBaseLo = 0x030;  // RW: DRAM address, 64-byte aligned
inline constexpr uint32_t kRegCmdqBaseHi = 0x034;  // RW
inline constexpr uint32_t kRegCmdqSize =
    0x038;  // RW: bytes, multiple of 64; writing resets HEAD and TAIL to 0
inline constexpr uint32_t kRegCmdqHead = 0x03C;  // RO: byte offset of the next command the NPU reads
inline constexpr uint32_t kRegCmdqTail = 0x040;  // RW: byte offset one past the last valid command
inline constexpr uint32_t kRegDoorbell = 0x044;  // WO: any value starts processing HEAD..TAIL

// ---- Interrupts ---------------------------------------------------------------------------------
inline constexpr uint32_t kRegIrqStatus = 0x050;  // RO: raw status
inline constexpr uint32_t kRegIrqMask = 0x054;    // RW: 1 = source enabled onto the IRQ line
inline constexpr uint32_t kRegIrqClear = 0x058;   // W1C: write 1 to clear the status bit
inline constexpr uint32_t kIrqDone = 1u << 0;     // queue drained (HEAD == TAIL) or STOP executed
inline constexpr uint32_t kIrqError = 1u << 1;    // fault: see ERROR_CODE / ERROR_OFFSET
inline constexpr uint32_t kIrqCommand = 1u << 2;  // an IRQ command executed
inline constexpr uint32_t kIrqAll = kIrqDone | kIrqError | kIrqCommand;

// ---- Error information -----------------------------------------------------------------------
inline constexpr uint32_t kRegErrorCode = 0x060;    // RO: ErrorCode (commands.h)
inline constexpr uint32_t kRegErrorOffset = 0x064;  // RO: byte offset of the faulting command from CMDQ_BASE

// ---- Address regions: DMA addresses are (region, offset); base registers relocate them ---------
inline constexpr uint32_t kRegionCount = 8;
inline constexpr uint32_t kRegRegionBase = 0x080;  // RW: REGION_BASE[i] LO at 0x080 + 8*i, HI at +4
constexpr uint32_t regRegionBaseLo(uint32_t i) {
    return kRegRegionBase + 8 * i;
}
constexpr uint32_t regRegionBaseHi(uint32_t i) {
    return kRegRegionBase + 8 * i + 4;
}

// ---- Performance monitor unit -----------------------------------------------------------------
inline constexpr uint32_t kRegPmuCtrl = 0x0F0;       // RW
inline constexpr uint32_t kPmuCtrlReset = 1u << 0;   // self-clearing: zero every counter
inline constexpr uint32_t kPmuCtrlFreeze = 1u << 1;  // counters hold while set
// 64-bit counters: reading LO latches HI, so LO then HI reads one consistent value.
inline constexpr uint32_t kRegPmuCyclesLo = 0x100;
inline constexpr uint32_t kRegPmuCyclesHi = 0x104;
inline constexpr uint32_t kRegPmuMacsLo = 0x108;
inline constexpr uint32_t kRegPmuMacsHi = 0x10C;
inline constexpr uint32_t kRegPmuDmaReadLo = 0x110;  // bytes DRAM -> SRAM
inline constexpr uint32_t kRegPmuDmaReadHi = 0x114;
inline constexpr uint32_t kRegPmuDmaWriteLo = 0x118;  // bytes SRAM -> DRAM
inline constexpr uint32_t kRegPmuDmaWriteHi = 0x11C;
inline constexpr uint32_t kRegPmuStallLo = 0x120;  // cycles units waited on dependency tokens
inline constexpr uint32_t kRegPmuStallHi = 0x124;
inline constexpr uint32_t kRegPmuCommandsLo = 0x128;  // commands executed
inline constexpr uint32_t kRegPmuCommandsHi = 0x12C;
// Appended in 1.1.
inline constexpr uint32_t kRegPmuStallDmaLo = 0x130;  // the part of PMU_STALL spent waiting for a DMA queue
inline constexpr uint32_t kRegPmuStallDmaHi = 0x134;
inline constexpr uint32_t kRegPmuLoadActiveLo = 0x138;  // cycles the DMA load channel was busy
inline constexpr uint32_t kRegPmuLoadActiveHi = 0x13C;
inline constexpr uint32_t kRegPmuComputeActiveLo = 0x140;  // cycles the array / vector unit was busy
inline constexpr uint32_t kRegPmuComputeActiveHi = 0x144;
inline constexpr uint32_t kRegPmuStoreActiveLo = 0x148;  // cycles the DMA store channel was busy
inline constexpr uint32_t kRegPmuStoreActiveHi = 0x14C;
inline constexpr uint32_t kRegPmuDmaTransactionsLo = 0x150;  // DMA commands completed
inline constexpr uint32_t kRegPmuDmaTransactionsHi = 0x154;

inline constexpr uint32_t kRegisterSpaceBytes = 0x200;

inline constexpr RegisterInfo kRegisters[] = {
    {kRegId, "ID", Access::kRO, kNpuId},
    {kRegVersion, "VERSION", Access::kRO, kVersion},
    {kRegHwConfig0, "HW_CONFIG0", Access::kRO, 0},
    {kRegHwConfig1, "HW_CONFIG1", Access::kRO, 0},
    {kRegHwConfig2, "HW_CONFIG2", Access::kRO, 0},
    {kRegHwConfig3, "HW_CONFIG3", Access::kRO, 0},
    {kRegHwConfig4, "HW_CONFIG4", Access::kRO, 0},
    {kRegHwConfig5, "HW_CONFIG5", Access::kRO, 0},
    {kRegCtrl, "CTRL", Access::kRW, 0},
    {kRegStatus, "STATUS", Access::kRO, kStatusIdle},
    {kRegCmdqBaseLo, "CMDQ_BASE_LO", Access::kRW, 0},
    {kRegCmdqBaseHi, "CMDQ_BASE_HI", Access::kRW, 0},
    {kRegCmdqSize, "CMDQ_SIZE", Access::kRW, 0},
    {kRegCmdqHead, "CMDQ_HEAD", Access::kRO, 0},
    {kRegCmdqTail, "CMDQ_TAIL", Access::kRW, 0},
    {kRegDoorbell, "DOORBELL", Access::kWO, 0},
    {kRegIrqStatus, "IRQ_STATUS", Access::kRO, 0},
    {kRegIrqMask, "IRQ_MASK", Access::kRW, 0},
    {kRegIrqClear, "IRQ_CLEAR", Access::kW1C, 0},
    {kRegErrorCode, "ERROR_CODE", Access::kRO, 0},
    {kRegErrorOffset, "ERROR_OFFSET", Access::kRO, 0},
    {kRegPmuCtrl, "PMU_CTRL", Access::kRW, 0},
    {kRegPmuCyclesLo, "PMU_CYCLES_LO", Access::kRO, 0},
    {kRegPmuCyclesHi, "PMU_CYCLES_HI", Access::kRO, 0},
    {kRegPmuMacsLo, "PMU_MACS_LO", Access::kRO, 0},
    {kRegPmuMacsHi, "PMU_MACS_HI", Access::kRO, 0},
    {kRegPmuDmaReadLo, "PMU_DMA_READ_LO", Access::kRO, 0},
    {kRegPmuDmaReadHi, "PMU_DMA_READ_HI", Access::kRO, 0},
    {kRegPmuDmaWriteLo, "PMU_DMA_WRITE_LO", Access::kRO, 0},
    {kRegPmuDmaWriteHi, "PMU_DMA_WRITE_HI", Access::kRO, 0},
    {kRegPmuStallLo, "PMU_STALL_LO", Access::kRO, 0},
    {kRegPmuStallHi, "PMU_STALL_HI", Access::kRO, 0},
    {kRegPmuCommandsLo, "PMU_COMMANDS_LO", Access::kRO, 0},
    {kRegPmuCommandsHi, "PMU_COMMANDS_HI", Access::kRO, 0},
    {kRegPmuStallDmaLo, "PMU_STALL_DMA_LO", Access::kRO, 0},
    {kRegPmuStallDmaHi, "PMU_STALL_DMA_HI", Access::kRO, 0},
    {kRegPmuLoadActiveLo, "PMU_LOAD_ACTIVE_LO", Access::kRO, 0},
    {kRegPmuLoadActiveHi, "PMU_LOAD_ACTIVE_HI", Access::kRO, 0},
    {kRegPmuComputeActiveLo, "PMU_COMPUTE_ACTIVE_LO", Access::kRO, 0},
    {kRegPmuComputeActiveHi, "PMU_COMPUTE_ACTIVE_HI", Access::kRO, 0},
    {kRegPmuStoreActiveLo, "PMU_STORE_ACTIVE_LO", Access::kRO, 0},
    {kRegPmuStoreActiveHi, "PMU_STORE_ACTIVE_HI", Access::kRO, 0},
    {kRegPmuDmaTransactionsLo, "PMU_DMA_TRANSACTIONS_LO", Access::kRO, 0},
    {kRegPmuDmaTransactionsHi, "PMU_DMA_TRANSACTIONS_HI", Access::kRO, 0},
};

}  // namespace npu::isa
