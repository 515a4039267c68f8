// Fuzz target: models through the whole driver, as the NNAPI DriverFuzzTest does. A model built
// from the input (driver_model.h) goes through the NPU's HAL shim, over the loopback transport,
// to the firmware (validation, planning, compilation) and the simulated NPU (execution), and
// through the CPU reference. Findings (traps):
//  - an invalid model (hal::validateModel) that a device does not refuse with INVALID_ARGUMENT
//    in getSupportedOperations or prepareModel;
//  - a valid model whose supported-operations answer is missing or of the wrong length;
//  - a model the NPU claims whole that it then fails to prepare or to run while the reference
//    runs it, or whose quant8 outputs differ from the reference's by any bit.
#include <algorithm>

#include "driver_model.h"
#include "npu/fw/platform/host/firmware_host.h"
#include "npu/hal/validation.h"
#include "npu/ref/reference_device.h"
#include "npu/shim/npu_device.h"

namespace {

using namespace npu;

struct Devices {
    std::unique_ptr<fw::host::FirmwareHost> firmware;
    std::shared_ptr<hal::IDevice> npu;
    ref::ReferenceDevice reference;
};

Devices& devices() {
    static Devices* d = [] {
        auto* all = new Devices;
        auto loop = fw::host::startLoopbackFirmware();
        fuzz::require(loop.has_value());
        all->firmware = std::move(loop->firmware);
        shim::ShimOptions options;
        options.autotune = false;  // tilings are bit-identical (tests/unit); keep inputs fast
        auto npuDevice = shim::createNpuDevice(std::move(loop->hostEnd), options);
        fuzz::require(npuDevice.has_value());
        all->npu = *npuDevice;
        return all;
    }();
    return *d;
}

Result<std::vector<std::vector<uint8_t>>> run(hal::IPreparedModel& prepared, const framework::TestCase& tc) {
    auto request = NPU_TRY(framework::makeRequest(tc));
    NPU_TRY(
        prepared.executeSynchronously(request.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt));
    return framework::readOutputs(request);
}

template <class T>
bool refused(const Result<T>& r) {
    return !r && r.error().status == hal::ErrorStatus::INVALID_ARGUMENT && !r.error().message.empty();
}

bool isQuant8(hal::OperandType t) {
    return t == hal::OperandType::TENSOR_QUANT8_ASYMM || t == hal::OperandType::TENSOR_QUANT8_ASYMM_SIGNED;
}

// The NPU's run of a model it claims whole, against the reference's.
void compare(hal::IDevice& npuDevice, const framework::TestCase& tc,
             const Result<std::vector<std::vector<uint8_t>>>& expected) {
    auto prepared = npuDevice.prepareModel(tc.model);
    if (!prepared) {
        const auto s = prepared.error().status;
        // Claimed but not compiled: a dishonest claim, unless the device ran out of room.
        fuzz::require(s == hal::ErrorStatus::RESOURCE_EXHAUSTED_PERSISTENT ||
                      s == hal::ErrorStatus::RESOURCE_EXHAUSTED_TRANSIENT || !expected);
        return;
    }
    auto actual = run(**prepared, tc);
    if (!expected) return;  // nothing to compare with (the reference could not run it)
    fuzz::require(actual.has_value());
    fuzz::require(actual->size() == expected->size());
    const auto& g = tc.model.main;
    for (size_t o = 0; o < expected->size(); ++o) {
        if (isQuant8(g.operands[g.outputIndexes[o]].type)) fuzz::require((*actual)[o] == (*expected)[o]);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    fuzz::InputReader in(data, size);
    const fuzz::DriverModel dm = fuzz::buildDriverModel(in);
    const framework::TestCase& tc = dm.testCase;
    Devices& d = devices();
    const auto valid = hal::validateModel(tc.model);
    auto npuSupported = d.npu->getSupportedOperations(tc.model);
    auto refSupported = d.reference.getSupportedOperations(tc.model);
    if (!valid) {
        fuzz::require(!valid.error().message.empty());
        fuzz::require(refused(npuSupported));
        fuzz::require(refused(refSupported));
        fuzz::require(refused(d.npu->prepareModel(tc.model)));
        return 0;
    }
    const size_t ops = tc.model.main.operations.size();
    fuzz::require(npuSupported.has_value() && npuSupported->size() == ops);
    fuzz::require(refSupported.has_value() && refSupported->size() == ops);
    Result<std::vector<std::vector<uint8_t>>> expected = generalFailure("the reference does not take it");
    if (std::find(refSupported->begin(), refSupported->end(), false) == refSupported->end()) {
        auto prepared = d.reference.prepareModel(tc.model);
        if (prepared) expected = run(**prepared, tc);
    }
    if (std::find(npuSupported->begin(), npuSupported->end(), false) == npuSupported->end()) {
        compare(*d.npu, tc, expected);
    } else {
        (void)d.npu->prepareModel(tc.model);  // refused or not, never a crash
    }
    return 0;
}
