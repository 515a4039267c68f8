#pragma once
// Two small models described as the firmware sees them (fw::ModelDesc, constants staged in device
// DRAM), for the fuzz targets that drive the firmware runtime without the RPC layer: an ADD of two
// 1x4 uint8 tensors, and a 3x3 SAME CONV_2D (1x6x5x3 -> 1x6x5x4, RELU) of uint8 tensors.
#include <cstdint>
#include <vector>

#include "../support/fw_model_builder.h"
#include "npu/fw/runtime.h"

namespace npu::fuzz {

struct FirmwareModel {
    fw::test::FwModelBuilder builder;
    std::vector<std::vector<uint8_t>> inputData;  // one per model input
    std::vector<uint32_t> outputBytes;            // one per model output
    fw::ModelDesc desc() { return builder.build(); }
};

// Constants are written into dram at constantsAddr (an address in the host window) and after it,
// below constantsAddr + kFirmwareModelConstantBytes.
inline constexpr uint64_t kFirmwareModelConstantBytes = 4096;
FirmwareModel addModel(uint8_t* dram, uint64_t constantsAddr);
FirmwareModel convModel(uint8_t* dram, uint64_t constantsAddr);

// Prepares `model` (no autotuning) and runs it with its input data staged at ioAddr (host window);
// fills *outputs. The handle is released before returning.
fw::FwStatus prepareAndRun(fw::Runtime& runtime, fw::Arena& scratch, uint8_t* dram, uint64_t ioAddr,
                           FirmwareModel& model, std::vector<std::vector<uint8_t>>* outputs);

}  // namespace npu::fuzz
