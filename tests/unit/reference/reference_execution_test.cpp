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
