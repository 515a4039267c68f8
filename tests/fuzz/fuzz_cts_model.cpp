// Fuzz target: a model as a client could hand it to a driver. The input is one line of the CTS
// JSON format (framework/), which may be any bytes; a line that loads is validated (hal/) and,
// if valid, prepared and run on the reference device (reference/) when its tensors are small.
// Nothing may crash; an invalid model must be refused by validation or preparation with a
// message, never half-run.
#include <string>

#include "fuzz_target.h"
#include "npu/framework/cts_loader.h"
#include "npu/hal/validation.h"
#include "npu/ref/reference_device.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace npu;
    const std::string line(reinterpret_cast<const char*>(data), size);
    auto tc = framework::parseCtsLine(line, "fuzz input");
    if (!tc) {
        fuzz::require(!tc.error().message.empty());
        return 0;
    }
    auto valid = hal::validateModel(tc->model);
    static ref::ReferenceDevice device;
    auto supported = device.getSupportedOperations(tc->model);
    if (!valid) {
        fuzz::require(!valid.error().message.empty());
        return 0;
    }
    if (!supported) return 0;
    // Bound the work: skip models whose declared tensors are large (a fuzzer finds those fast).
    uint64_t total = 0;
    for (const auto& o : tc->model.main.operands) {
        uint64_t n = 1;
        for (uint32_t d : o.dimensions) n *= d == 0 ? 1 : d;
        total += n;
        if (n > (1u << 16) || total > (1u << 18)) return 0;
    }
    auto prepared = device.prepareModel(tc->model);
    if (!prepared) {
        fuzz::require(!prepared.error().message.empty());
        return 0;
    }
    auto request = framework::makeRequest(*tc);
    if (!request) return 0;
    auto result = (*prepared)->executeSynchronously(request->request, hal::MeasureTiming::NO, std::nullopt,
                                                    std::chrono::nanoseconds(50'000'000));
    if (!result) fuzz::require(!result.error().message.empty());
    return 0;
}
