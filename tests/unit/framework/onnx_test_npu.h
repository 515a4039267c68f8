#pragma once
// An imported ONNX model partitioned over the NPU (loopback firmware + simulator) and the CPU
// reference, as `npu run --device npu` does (shared by the quantizer and PP-OCR model tests).
#include <catch2/catch.hpp>
#include <vector>

#include "npu/framework/onnx_run.h"
#include "npu/framework/partition.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/ref/reference_device.h"
#include "npu/shim/npu_device.h"

namespace onnx_test {

struct NpuRun {
    size_t onNpu = 0;                                    // operations the NPU claimed
    std::vector<std::vector<uint8_t>> firstOutputs;      // per sample: output 0, partitioned
    std::vector<std::vector<uint8_t>> referenceOutputs;  // per sample: output 0, the reference alone
};

inline NpuRun runOnLoopbackNpu(const npu::framework::OnnxImportedModel& m,
                               npu::ref::ReferenceDevice& reference,
                               const std::vector<std::vector<npu::framework::OnnxTensor>>& samples) {
    using namespace npu;
    auto loop = fw::host::startLoopbackFirmware();
    REQUIRE(loop.has_value());
    auto firmware = std::move(loop->firmware);
    auto npuDevice = shim::createNpuDevice(std::move(loop->hostEnd), {});
    REQUIRE(npuDevice.has_value());
    const std::vector<framework::PartitionDevice> devices = {{"npu", npuDevice->get()},
                                                             {"reference", &reference}};
    auto plan = framework::planPartitions(m.model, devices);
    REQUIRE(plan.has_value());
    NpuRun r;
    for (size_t d : plan->deviceOfOperation) r.onNpu += d == 0;
    for (const auto& sample : samples) {
        auto inputs = framework::onnxInputBuffers(m, sample);
        REQUIRE(inputs.has_value());
        auto run = framework::runPartitions(*plan, m.model, devices, *inputs);
        INFO((run ? std::string() : run.error().message));
        REQUIRE(run.has_value());
        auto whole = framework::runOnnxModel(reference, m, sample);
        REQUIRE(whole.has_value());
        r.firstOutputs.push_back(run->outputs[0]);
        r.referenceOutputs.push_back(whole->outputs[0].data);
    }
    npuDevice->reset();
    return r;
}

}  // namespace onnx_test
