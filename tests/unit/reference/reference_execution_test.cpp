// Every execution mode, QoS, memory domains and asynchronous preparation on the CPU reference
// device: the same suites the NPU runs (tests/unit/hal/execution_suite.h, prepare_suite.h).
#include <catch2/catch.hpp>

#include "../hal/execution_suite.h"
#include "../hal/prepare_suite.h"
#include "npu/ref/reference_device.h"

using namespace npu;

namespace {

struct Reference {
    std::shared_ptr<hal::IDevice> device = std::make_shared<ref::ReferenceDevice>();
};
Reference openReference() {
    return {};
}

}  // namespace

#define OPEN_DEVICE openReference
NPU_HAL_EXECUTION_SUITE("reference", "[reference][execution]")
NPU_HAL_PREPARE_SUITE("reference", "[reference][prepare]")

TEST_CASE("reference: MemoryDomain dynamic shapes", "[reference][memory-domain]") {
    ref::ReferenceDevice device;
    hal::test::checkDynamicBuffer(device);
}

// OUTPUT_INSUFFICIENT_SIZE for an output of unknown dimensions: the needed shape is the one the
// execution computed (the model declares [0, 4]). The reference runs the whole model before it
// checks the output buffers, so every needed dimension is known: it never answers 0 (unknown),
// and neither does the NPU, whose tensors have fixed shapes; 0 would come from a device that
// stops at the first output that does not fit.
TEST_CASE("reference: OUTPUT_INSUFFICIENT_SIZE names the computed shape of an output of unknown dimensions",
          "[reference][execution]") {
    ref::ReferenceDevice device;
    auto prepared = hal::test::prepare(device, hal::test::addModel({0, 4}));
    for (const uint32_t outLength : {4u, 12u}) {
        INFO("output buffer of " << outLength << " bytes");
        auto r = hal::test::addRequest(1, 2, 12, outLength);
        r.request.inputs[0].dimensions = {3, 4};
        r.request.inputs[1].dimensions = {3, 4};
        auto e =
            prepared->executeSynchronously(r.request, hal::MeasureTiming::NO, std::nullopt, std::nullopt);
        if (outLength < 12) {
            REQUIRE_FALSE(e.has_value());
            CHECK(e.error().status == hal::ErrorStatus::OUTPUT_INSUFFICIENT_SIZE);
            REQUIRE(e.error().outputShapes.size() == 1);
            CHECK(e.error().outputShapes[0].dimensions == std::vector<uint32_t>{3, 4});
            CHECK_FALSE(e.error().outputShapes[0].isSufficient);
        } else {
            INFO((e ? std::string() : e.error().message));
            REQUIRE(e.has_value());
            REQUIRE(e->outputShapes.size() == 1);
            CHECK(e->outputShapes[0].dimensions == std::vector<uint32_t>{3, 4});
            CHECK(e->outputShapes[0].isSufficient);
            CHECK(r.output() == std::vector<uint8_t>(12, 3));
        }
    }
}
